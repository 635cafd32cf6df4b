from __future__ import annotations

from dataclasses import asdict, fields

import pytest

from nasflow.calibrate import RunConfig
from nasflow.train import Recipe, SupernetConfig, TrainConfig


def test_every_training_config_is_the_one_recipe_with_its_own_defaults() -> None:
    shared = {f.name for f in fields(Recipe)}
    assert shared == {"epochs", "lr", "weight_decay", "warmup_epochs", "seed"}
    for config in (TrainConfig(), SupernetConfig(), RunConfig()):
        assert isinstance(config, Recipe) and shared <= {f.name for f in fields(config)}
    assert (TrainConfig().epochs, TrainConfig().warmup_epochs) == (20, 1.0)
    assert (SupernetConfig().epochs, SupernetConfig().warmup_epochs) == (10, 0.5)
    assert (RunConfig().epochs, RunConfig().warmup_epochs) == (3, 0.5)


def test_the_supernet_record_keeps_its_keys() -> None:
    # Stored studies and supernet checkpoints are identified by asdict(SupernetConfig).
    assert asdict(SupernetConfig(sampler="uniform", epochs=2)) == {
        "sampler": "uniform",
        "epochs": 2,
        "batch_size": 64,
        "lr": 3e-3,
        "weight_decay": 1e-2,
        "warmup_epochs": 0.5,
        "seed": 0,
    }


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: TrainConfig(epochs=0), "epochs must be an int >= 1, got 0"),
        (lambda: TrainConfig(batch_size=True), "batch_size must be an int >= 1, got True"),
        (lambda: SupernetConfig(epochs=1.5), "epochs must be an int >= 1, got 1.5"),
        (lambda: SupernetConfig(sampler="greedy"), "sampler must be 'fair' or 'uniform'"),
        (lambda: RunConfig(epochs=0), "epochs must be an int >= 1, got 0"),
        (lambda: RunConfig(chunk=0), "chunk must be an int >= 1, got 0"),
    ],
)
def test_bad_recipe_values_are_refused(make, message) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        make()
