from __future__ import annotations

import re
from dataclasses import asdict, fields

import pytest

from nasflow.calibrate import RunConfig
from nasflow.errors import NasflowError
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
    # Stored studies and supernet checkpoints are identified by SupernetConfig.identity():
    # without a split, the keys they had before the split existed (and likewise without
    # distillation).
    split = SupernetConfig(split="width", split_from=0.25)
    assert split.identity() == {k: v for k, v in asdict(split).items() if "distill" not in k}
    assert (split.identity()["split"], split.identity()["split_from"]) == ("width", 0.25)
    assert SupernetConfig(sampler="uniform", epochs=2).identity() == {
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
        (
            lambda: SupernetConfig(sampler="greedy"),
            r"sampler must be one of \['fair', 'fair-depth', 'uniform'\], got 'greedy'",
        ),
        (lambda: RunConfig(epochs=0), "epochs must be an int >= 1, got 0"),
        (lambda: RunConfig(chunk=0), "chunk must be an int >= 1, got 0"),
    ],
)
def test_bad_recipe_values_are_refused(make, message) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        make()


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: SupernetConfig(lr=-1.0), "lr must be a finite number > 0, got -1.0"),
        (lambda: SupernetConfig(lr=float("nan")), "lr must be a finite number > 0, got nan"),
        (lambda: TrainConfig(lr="0.1"), "lr must be a finite number > 0, got '0.1'"),
        (lambda: TrainConfig(weight_decay=-1), "weight_decay must be a finite number >= 0"),
        (lambda: TrainConfig(warmup_epochs=float("inf")), "warmup_epochs must be a finite"),
        (lambda: TrainConfig(seed=-3), "seed must be an int"),
        (lambda: TrainConfig(label_smoothing=1.0), "label_smoothing must be a number in"),
        (lambda: SupernetConfig(weight_decay=True), "weight_decay must be a finite number"),
    ],
)
def test_every_recipe_value_is_checked_at_construction(make, says) -> None:
    with pytest.raises(NasflowError, match=re.escape(says)):
        make()


def test_a_study_file_with_a_bad_recipe_fails_to_load_before_anything_is_written(
    tmp_path, capsys
) -> None:
    from nasflow.cli import main
    from tests._study_template import write_study

    extra = "study = study.replace(train=TrainConfig(epochs=2, weight_decay=-1))"
    study_file = write_study(tmp_path, n_trials=1, finetune=0, extra=extra)
    assert main(["search", str(study_file), "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "weight_decay must be" in err, err
    assert not (tmp_path / "runs").exists()
