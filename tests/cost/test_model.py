"""CostModel: path decomposition, incremental measuring, persistence, monotone predictions."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch
from torch import nn

from nasflow.cost import CostModel, count_flops, count_params, evaluate_accuracy
from nasflow.cost._cover import covering_archs
from nasflow.cost._model import MissingLatencyError
from nasflow.cost._tables._table import LatencyTable
from nasflow.cost._trace import PathTracer
from nasflow.space import Arch, SearchSpace, op_choice
from nasflow.supernet import LayerChoice, Supernet, SuperSequential
from tests._spaces import CellSpace, tiny_mnist1d

TOY_OPS = ("skip", "small", "big")


class ToyMLPSpace(SearchSpace):
    """Two layers on 32 features, each skip, a small MLP or a 16x wider one."""

    def __init__(self) -> None:
        super().__init__(
            [op_choice("l0", TOY_OPS), op_choice("l1", TOY_OPS)],
            name="toy-mlp",
            config={"input_shape": [32]},
        )

    def supernet(self) -> Supernet:
        def ops() -> dict[str, nn.Module]:
            return {
                "skip": nn.Identity(),
                "small": nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 32)),
                "big": nn.Sequential(nn.Linear(32, 4096), nn.ReLU(), nn.Linear(4096, 32)),
            }

        body = SuperSequential(
            nn.Linear(32, 32),
            LayerChoice("l0", ops()),
            LayerChoice("l1", ops()),
            nn.Linear(32, 10),
        )
        return Supernet(self, body)


def _toy(url: str, batch_size: int = 64) -> CostModel:
    return CostModel.for_space(
        ToyMLPSpace(), batch_size=batch_size, storage_url=url, rounds=5, iters=3
    )


@pytest.fixture
def toy_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cost.db'}"


@pytest.mark.slow
def test_units_cover_every_parameter_and_flop_of_the_path(tmp_path: Path) -> None:
    for space in (tiny_mnist1d(), CellSpace(channels=4, with_hypers=False)):
        model = CostModel(space, (1, 40), 8, LatencyTable(tmp_path / f"{space.name}.db"))
        for seed in range(5):
            arch = space.path(space.sample(seed))
            units = model.units(arch)
            params = count_params(space.build(arch))
            assert sum(count_params(u.module) for u in units) == model.params(arch) == params
            unit_flops = sum(
                count_flops(
                    u.module, u.input_shape, input_requires_grad=u.input_requires_grad
                ).total
                for u in units
            )
            network = count_flops(space.build(arch), (8, 1, 40))
            assert unit_flops == model.flops(arch).total == network.total
            assert model.flops(arch) == network
            choices = [u for u in units if u.kind == "choice"]
            assert len(choices) == len(space.path_choices) - (space.name == "mnist1d")
            assert units[0].input_shape == (8, 1, 40) and not units[0].input_requires_grad
            assert all(u.input_requires_grad for u in units[1:])


def test_same_op_at_same_shape_shares_a_row_and_width_changes_it(tmp_path: Path) -> None:
    space = tiny_mnist1d()
    model = CostModel(space, (1, 40), 8, LatencyTable(tmp_path / "c.db"))
    base = {"s1/l0": "k3_e2", "s1/l1": "k3_e2", "s2/l0": "skip", "s2/l1": "k5_e2", "width": 1.0}
    units = model.units(Arch(base))
    assert units[1].key == units[2].key  # s1/l0 and s1/l1 both k3_e2 at 8 channels
    assert units[1].name != units[2].name
    narrow = model.units(Arch({**base, "width": 0.5}))
    assert narrow[1].key != units[1].key
    assert narrow[1].input_shape == (8, 4, 40) and units[1].input_shape == (8, 8, 40)


@pytest.mark.slow
def test_memoised_shape_pass_equals_a_fresh_one(tmp_path: Path) -> None:
    space = tiny_mnist1d()
    model = CostModel(space, (1, 40), 4, LatencyTable(tmp_path / "c.db"))
    archs = list(space.enumerate())[::7]
    memo = [[u.key for u in model.units(a)] for a in archs]
    for arch, keys in zip(archs, memo, strict=True):
        with torch.device("meta"):
            fresh = PathTracer(space.supernet())
        fresh_keys = [u.key for u in fresh.units(arch, (4, 1, 40), torch.float32)]
        assert keys == fresh_keys


def test_covering_archs_cover_every_pair_with_few_paths() -> None:
    space = tiny_mnist1d()
    archs = covering_archs(space, seed=3)
    choices = space.path_choices
    for a, b in itertools.combinations(choices, 2):
        seen = {(arch[a.label], arch[b.label]) for arch in archs}
        assert seen == set(itertools.product(a.values, b.values)), (a.label, b.label)
    assert len(archs) < space.num_paths / 10
    assert covering_archs(space, seed=3) == archs


def test_predictions_are_monotone_in_the_work_of_the_path(toy_url: str) -> None:
    # Work differs 16x between "small" and "big": far beyond any timing noise.
    model = _toy(toy_url).fit(n=3, rounds=2, iters=2)
    assert model.calibration is not None and model.calibration.slope > 0
    assert model.calibration.intercept >= 0

    def p(l0: str, l1: str) -> float:
        return model.predict_step_seconds({"l0": l0, "l1": l1})

    assert 0 <= p("skip", "skip") <= p("small", "skip") < p("big", "skip") < p("big", "big")
    assert p("skip", "skip") <= p("skip", "small") < p("skip", "big") < p("big", "big")
    assert model.predict_train_seconds({"l0": "big", "l1": "big"}, 100) == pytest.approx(
        100 * p("big", "big")
    )
    assert model.predict_train_seconds({"l0": "big", "l1": "big"}, 0) == 0.0


def test_after_fit_predictions_measure_nothing(toy_url: str) -> None:
    model = _toy(toy_url, batch_size=8).fit(n=3, rounds=1, iters=1)
    spent = (model.stats.measured_ops, model.stats.measured_steps)
    assert spent[0] > 0 and spent[1] > 0
    for arch in ToyMLPSpace().enumerate():
        model.predict_step_seconds(arch)
    assert (model.stats.measured_ops, model.stats.measured_steps) == spent


def _check_reuse(url: str) -> None:
    first = _toy(url, batch_size=8).fit(n=3, rounds=2, iters=2)
    archs = list(ToyMLPSpace().enumerate())
    expected = [first.predict_step_seconds(a) for a in archs]
    rows = first.table.count(first.fingerprint)
    first.table.close()
    second = _toy(url, batch_size=8).fit()  # another process, same database and device
    assert second.stats.measured_ops == 0 and second.stats.measured_steps == 0
    assert [second.predict_step_seconds(a) for a in archs] == expected
    second.table.close()
    # Another batch size means other input shapes: new rows and a new calibration.
    other = _toy(url, batch_size=4).fit(n=3, rounds=2, iters=2)
    assert other.stats.measured_ops > 0 and other.stats.measured_steps > 0
    assert other.table.count(other.fingerprint) == rows + other.stats.measured_ops
    other.table.close()


@pytest.mark.slow
def test_table_and_calibration_are_reused_from_sqlite(toy_url: str) -> None:
    _check_reuse(toy_url)


@pytest.mark.slow
def test_table_and_calibration_are_reused_from_postgresql(postgres_url: str) -> None:
    _check_reuse(postgres_url)


def test_missing_rows_raise_when_measuring_is_off(toy_url: str) -> None:
    model = CostModel.for_space(ToyMLPSpace(), storage_url=toy_url, measure_missing=False)
    with pytest.raises(RuntimeError, match="no calibration"):
        model.predict_step_seconds({"l0": "big", "l1": "skip"})
    with pytest.raises(MissingLatencyError, match="no latency stored"):
        model.op_seconds({"l0": "big", "l1": "skip"})


def test_bad_arguments_are_refused_naming_them(toy_url: str) -> None:
    with pytest.raises(ValueError, match="batch_size must be an int >= 1, got 0"):
        CostModel.for_space(ToyMLPSpace(), batch_size=0, storage_url=toy_url)
    with pytest.raises(ValueError, match="'fp8'"):
        CostModel.for_space(ToyMLPSpace(), storage_url=toy_url, precision="fp8")
    model = CostModel.for_space(ToyMLPSpace(), storage_url=toy_url)
    with pytest.raises(ValueError, match="'huge'"):
        model.units({"l0": "huge", "l1": "skip"})
    with pytest.raises(ValueError, match="steps must be an int >= 0, got -1"):
        model.predict_train_seconds({"l0": "big", "l1": "skip"}, -1)
    no_shape = CellSpace(with_hypers=False)
    with pytest.raises(ValueError, match="input_shape"):
        CostModel.for_space(no_shape, storage_url=toy_url)


def test_memory_estimate_grows_with_width(tmp_path: Path) -> None:
    space = tiny_mnist1d()
    model = CostModel(space, (1, 40), 32, LatencyTable(tmp_path / "c.db"))
    base = {"s1/l0": "k5_e2", "s1/l1": "skip", "s2/l0": "k3_e2", "s2/l1": "k5_e2"}
    small, large = Arch({**base, "width": 0.5}), Arch({**base, "width": 1.0})
    assert 0 < model.activation_bytes(small) < model.activation_bytes(large)
    assert model.memory_bytes(large) == model.activation_bytes(large) + 16 * model.params(large)
    assert model.params(large) == count_params(space.build(large))


@pytest.mark.slow
def test_bf16_rows_are_kept_apart_from_fp32(toy_url: str) -> None:
    fp32 = _toy(toy_url, batch_size=8).fit(n=2, rounds=1, iters=1)
    bf16 = CostModel.for_space(
        ToyMLPSpace(), batch_size=8, storage_url=toy_url, precision="bf16", rounds=1, iters=1
    )
    assert bf16.fingerprint.key != fp32.fingerprint.key and bf16.calibration is None
    bf16.fit(n=2, rounds=1, iters=1)
    assert bf16.stats.measured_ops == fp32.stats.measured_ops  # nothing shared
    assert bf16.table.count(bf16.fingerprint) == fp32.table.count(fp32.fingerprint)
    assert bf16.predict_step_seconds({"l0": "big", "l1": "skip"}) > 0
    assert bf16.stability["precision"] == "bf16" and fp32.stability["precision"] == "fp32"


def test_accuracy_refuses_calibration_paths(toy_url: str) -> None:
    model = _toy(toy_url, batch_size=8).fit(n=2, rounds=1, iters=1)
    used = [Arch.from_json(p["arch"]) for p in model.calibration.points]
    with pytest.raises(ValueError, match="calibration paths"):
        evaluate_accuracy(model, used)
