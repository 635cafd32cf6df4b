"""A cost table that holds still: CPU time, best-of-rounds figures, a load flag from the
reference op, and one table shared by every study on a device fingerprint."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
import torch
from torch import nn

from nasflow.cost import CostModel, assess_reference, measure_ops
from nasflow.cost._measure import robust_seconds
from nasflow.cost._tables._table import LatencyTable
from nasflow.cost._units import make_instance
from nasflow.train.stack import device_clock
from tests.cost.test_model import ToyMLPSpace


class _Sleepy(nn.Module):
    """Waits 20 ms (wall time, no CPU) in every forward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(0.02)
        return x * 2


class _Flaky(nn.Module):
    """Burns 10 ms of CPU in three calls of every four: most rounds look loaded."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls % 4:
            end = time.thread_time() + 0.01
            while time.thread_time() < end:
                pass
        return x * 2


def _unit(module: nn.Module, name: str):
    with torch.device("meta"):
        meta = module.to("meta")
    return make_instance(name, "choice", meta, (8, 16), True, torch.float32)


def test_robust_statistic_ignores_outlier_rounds_even_a_majority() -> None:
    clean = [0.0010, 0.0011, 0.0010]
    loaded = [0.0042, 0.0051, 0.0047]
    samples = clean + loaded * 3  # one steady round, three loaded ones
    assert robust_seconds(samples) == pytest.approx(0.0010)
    assert robust_seconds([*clean, 9.0]) == pytest.approx(0.0010)  # one wild outlier
    for bad in ([], [0.001, float("nan")], [-0.001]):
        with pytest.raises(ValueError, match="sample"):
            robust_seconds(bad)


def test_cpu_device_is_timed_in_thread_cpu_time() -> None:
    name, clock = device_clock("cpu", cpu_time=True)
    assert clock is time.thread_time and "CPU" in name
    # 20 ms of sleeping per forward is wall time, not CPU time: it must not be counted.
    unit = _unit(_Sleepy(), "sleepy")
    run = measure_ops([unit], "cpu", rounds=2, iters=2, warmup=0)
    assert run.timings[unit.key].fwd_bwd < 0.01
    assert run.stability.clock == "thread CPU time"


def test_slow_rounds_do_not_move_an_ops_figure() -> None:
    unit = _unit(_Flaky(), "flaky")
    run = measure_ops([unit], "cpu", rounds=4, iters=3, warmup=0)
    # Three calls in four burn 10 ms; the figure is the undisturbed call's (a median of
    # these samples would be >= 10 ms).
    assert run.timings[unit.key].fwd_bwd < 0.005
    assert run.timings[unit.key].samples == 12


def test_loaded_flag_triggers_when_the_reference_rounds_disagree() -> None:
    steady = assess_reference("thread CPU time", [1.00e-3, 1.02e-3, 1.01e-3, 1.03e-3, 1.0e-3])
    assert not steady.loaded and steady.ratio == pytest.approx(1.01)
    assert steady.reference_seconds == pytest.approx(1.0e-3) and steady.rounds == 5
    loaded = assess_reference("thread CPU time", [1.0e-3, 2.9e-3, 3.1e-3, 1.1e-3, 2.5e-3])
    assert loaded.loaded and loaded.ratio == pytest.approx(2.5)
    assert loaded.reference_seconds == pytest.approx(1.0e-3)  # the best round still holds
    waited = assess_reference("thread CPU time", [1e-3] * 3, [3e-3] * 3)
    assert waited.wall_over_clock == pytest.approx(3.0)
    with pytest.raises(ValueError, match="threshold"):
        assess_reference("wall time", [1e-3], threshold=0.5)
    with pytest.raises(ValueError, match="got none"):
        assess_reference("wall time", [])


def test_measure_ops_times_the_reference_op_in_every_round() -> None:
    unit = _unit(nn.Linear(16, 16), "linear")
    run = measure_ops([unit], "cpu", rounds=3, iters=1, warmup=0)
    assert set(run.timings) == {unit.key}  # the reference op is not a row
    assert run.stability.rounds == 3 and run.stability.reference_seconds > 0
    assert run.stability.wall_over_clock is not None


def _model(study_db: Path, **kwargs) -> CostModel:
    return CostModel.for_space(
        ToyMLPSpace(), batch_size=8, storage_url=str(study_db), rounds=2, iters=1, **kwargs
    )


def _fit(model: CostModel, **kwargs) -> CostModel:
    return model.fit(n=3, rounds=1, iters=1, **kwargs)


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "shared" / "cost.db"
    monkeypatch.setenv("NASFLOW_COST_CACHE", str(path))
    return path


@pytest.mark.slow
def test_a_second_study_reuses_the_table_of_the_first(
    tmp_path: Path, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _fit(_model(tmp_path / "a" / "study.db"))
    assert first.stats.measured_ops > 0 and first.stats.measured_steps > 0
    assert first.stability["source"] == "measured now"
    assert first.stability["shared_table"] == f"sqlite:///{shared}"
    # Whether the machine looked loaded while the first table was measured is not this
    # test's to control (a table flagged loaded is measured again by design:
    # test_a_shared_table_flagged_loaded_is_measured_again); read it as steady.
    monkeypatch.setattr(CostModel, "_shared_was_loaded", lambda self: False)
    second = _fit(_model(tmp_path / "b" / "study.db"))  # a fresh study database
    assert second.stats.measured_ops == 0 and second.stats.measured_steps == 0
    assert second.stability["source"] == "shared table"
    assert second.stability["measured_at"] == first.stability["measured_at"]
    assert second.stability["ops_reused_from_shared"] > 0
    for arch in ({"l0": "big", "l1": "small"}, {"l0": "skip", "l1": "big"}):
        assert second.predict_step_seconds(arch) == first.predict_step_seconds(arch)
    # The reused rows and calibration were copied into the second study's own database.
    with LatencyTable(tmp_path / "b" / "study.db") as own:
        assert own.count(second.fingerprint) == first.table.count(first.fingerprint)
        assert own.load_calibration(second.fingerprint, second.context_key) is not None
        assert own.load_stability(second.fingerprint, second.context_key)["source"] == (
            "shared table"
        )
    # Resumed, it keeps the table in its database.
    again = _fit(_model(tmp_path / "b" / "study.db"))
    assert again.stats.measured_ops == 0 and again.stability["source"] == "study database"


@pytest.mark.slow
def test_another_fingerprint_measures_its_own_table(tmp_path: Path, shared: Path) -> None:
    first = _fit(_model(tmp_path / "a" / "study.db"))
    torch.set_num_threads(2)  # threads are part of the fingerprint (restored by conftest)
    other = _fit(_model(tmp_path / "b" / "study.db"))
    assert other.fingerprint.key != first.fingerprint.key
    assert other.stats.measured_ops > 0 and other.stability["source"] == "measured now"
    with LatencyTable(shared) as table:
        assert {d.key for d in table.devices()} == {first.fingerprint.key, other.fingerprint.key}


@pytest.mark.slow
def test_nothing_is_shared_when_switched_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NASFLOW_COST_CACHE", "off")
    _fit(_model(tmp_path / "a" / "study.db"))
    second = _fit(_model(tmp_path / "b" / "study.db"))
    assert second.stats.measured_ops > 0 and second.shared is None


@pytest.mark.slow
def test_remeasure_replaces_the_shared_table(
    tmp_path: Path, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _fit(_model(tmp_path / "a" / "study.db"))
    rows = first.table.count(first.fingerprint)
    started = datetime.now(timezone.utc)
    second = _fit(_model(tmp_path / "b" / "study.db"), remeasure=True)
    assert second.stats.measured_ops > 0 and second.stats.measured_steps > 0
    assert second.stability["source"] == "measured now"
    assert second.stability["remeasured"] == "on request"
    engine = sa.create_engine(f"sqlite:///{shared}")
    with engine.connect() as conn:
        oldest = conn.execute(sa.text("SELECT MIN(measured_at) FROM nasflow_cost_ops")).scalar()
        count = conn.execute(sa.text("SELECT COUNT(*) FROM nasflow_cost_ops")).scalar()
    engine.dispose()
    assert count == rows  # replaced, not duplicated
    assert datetime.fromisoformat(str(oldest)).replace(tzinfo=timezone.utc) >= started.replace(
        microsecond=0
    )
    # Read the re-measured table as steady (see the test above).
    monkeypatch.setattr(CostModel, "_shared_was_loaded", lambda self: False)
    third = _fit(_model(tmp_path / "c" / "study.db"))
    assert third.stability["source"] == "shared table"
    assert third.stability["measured_at"] == second.stability["measured_at"]


@pytest.mark.slow
def test_a_table_flagged_loaded_but_measured_while_this_fit_waited_is_reused(
    tmp_path: Path, shared: Path
) -> None:
    """The exception to the rule above: a fit that waited for the shared table's lock
    (another search, started together under the same load, was measuring) reuses what
    that one stored, flagged loaded or not, rather than measuring a second time."""
    import threading

    first = _fit(_model(tmp_path / "a" / "study.db"))
    assert first.shared is not None
    record = {**first.stability, "loaded": True, "ratio": 3.0}
    first.shared.store_stability(first.fingerprint, first.context_key, record)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # the other search, still measuring when this one starts its fit
        with first.shared.measuring() as waited:  # type: ignore[union-attr]
            assert not waited
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(60)
    threading.Timer(0.5, release.set).start()
    second = _fit(_model(tmp_path / "b" / "study.db"))
    holder.join(60)
    assert second.stats.measured_ops == 0 and second.stats.measured_steps == 0
    assert second.stability["source"] == "shared table" and second.stability["remeasured"] is None
    assert second.stability["loaded"]  # reused, and still said to be measured loaded
    # Not having waited, the same fit measures again (the rule above).
    third = _fit(_model(tmp_path / "c" / "study.db"))
    assert third.stats.measured_ops > 0 and "loaded" in third.stability["remeasured"]


def test_rows_timed_the_old_way_are_not_reused(tmp_path: Path, shared: Path) -> None:
    model = _model(tmp_path / "a" / "study.db")
    assert model.fingerprint.timer == "thread-cpu/min/v2"
    assert model.fingerprint.key != model.fingerprint.__class__.current("cpu").key


@pytest.mark.slow
def test_a_shared_table_flagged_loaded_is_measured_again(tmp_path: Path, shared: Path) -> None:
    first = _fit(_model(tmp_path / "a" / "study.db"))
    assert first.shared is not None
    record = {**first.stability, "loaded": True, "ratio": 3.0}
    first.shared.store_stability(first.fingerprint, first.context_key, record)
    second = _fit(_model(tmp_path / "b" / "study.db"))
    assert second.stats.measured_ops > 0 and second.stats.measured_steps > 0
    assert second.stability["source"] == "measured now"
    assert "loaded" in second.stability["remeasured"]
    stored = second.shared.load_stability(second.fingerprint, second.context_key)
    assert stored["measured_at"] == second.stability["measured_at"]  # replaced
    # A study that already has its own table keeps it, whatever the shared one says.
    second.shared.store_stability(second.fingerprint, second.context_key, record)
    again = _fit(_model(tmp_path / "b" / "study.db"))
    assert again.stats.measured_ops == 0 and again.stability["source"] == "study database"
