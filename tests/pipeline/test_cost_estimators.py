"""A study's two ways to a candidate's training cost (``cost="model"``, ``"measure"``): one
interface, both for the study's speedup stack and its precision."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
import torch

from nasflow.errors import ConfigError
from nasflow.pipeline._cost import COST_ESTIMATORS, CostEstimator
from nasflow.pipeline._costtable import format_cost_table
from nasflow.record import COST_TABLE_KEY, study_cost_table
from nasflow.search_spaces.gpt2 import GPT2Space
from nasflow.search_spaces.mnist1d import MNIST1DSpace
from nasflow.train.stack import Stack

SPACE = MNIST1DSpace(base_channels=4, layers_per_stage=1, ops=("k3_e2", "skip"))


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _estimator(kind: str, tmp_path: Path, stack: Stack | None) -> CostEstimator:
    g = torch.Generator().manual_seed(0)
    batch = torch.randn(16, 1, 40, generator=g), torch.randint(0, 10, (16,), generator=g)
    return COST_ESTIMATORS[kind](
        SPACE, SPACE.supernet(), batch, "cpu", stack, storage=str(tmp_path / "cost.db")
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["model", "measure"])
def test_every_estimator_gives_a_step_time_and_the_parameter_count(
    kind: str, tmp_path: Path
) -> None:
    estimator = _estimator(kind, tmp_path, None)
    assert estimator.kind == kind
    arch = SPACE.path(SPACE.sample(0))
    estimator.prepare(optuna.create_study(), 8)
    seconds, params = estimator.step(arch, 8)
    assert 0 < seconds < 10
    assert params == sum(p.numel() for p in SPACE.build(arch).parameters())


@pytest.mark.slow
def test_the_cost_model_predicts_for_the_stacks_precision(tmp_path: Path) -> None:
    bf16 = _estimator("model", tmp_path, Stack(amp="bf16", accumulation=2))
    study = optuna.create_study()
    bf16.prepare(study, 8)
    assert bf16.model(8).precision == "bf16" and bf16.model(8).fingerprint.precision == "bf16"
    record = study.user_attrs[COST_TABLE_KEY]
    assert record["precision"] == "bf16" and "bf16" in record["device"]
    assert "predicts bf16 training steps" in format_cost_table(study_cost_table(study))[0]
    fp32 = _estimator("model", tmp_path, None)
    fp32.prepare(optuna.create_study(), 8)
    assert fp32.model(8).precision == "fp32"
    assert fp32.model(8).fingerprint.key != bf16.model(8).fingerprint.key
    arch = SPACE.path(SPACE.sample(1))
    assert bf16.step(arch, 8)[0] > 0 and fp32.step(arch, 8)[0] > 0


def test_the_cost_model_refuses_a_space_its_tracer_cannot_see_by_name(tmp_path: Path) -> None:
    # The GPT-2 space's supernet slices its weights: the op tracer finds no op, and the fit
    # failed on "a line fit needs distinct x values" before this one error.
    space = GPT2Space(vocab_size=13, block_size=8, n_layer=(1, 2), n_embd=(8, 16), n_head=(2,))
    g = torch.Generator().manual_seed(0)
    batch = torch.randint(0, 13, (4, 8), generator=g), torch.randint(0, 13, (4, 8), generator=g)
    estimator = COST_ESTIMATORS["model"](
        space, space.supernet(), batch, "cpu", None, storage=str(tmp_path / "cost.db")
    )
    with pytest.raises(ConfigError, match=r"space 'gpt2'.*use cost='measure'"):
        estimator.prepare(optuna.create_study(), 4)
