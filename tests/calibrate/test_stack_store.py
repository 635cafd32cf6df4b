"""The ``stack="auto"`` record, measured once per device and context and stored in the
study's database: reused without training, calibrated again when the device fingerprint
or the context changes or when asked, and skipped (stored nowhere) when over budget.

Whether a calibration ran is read from its progress lines (every line starts with
``"stack calibration:"``), never from timings.
"""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
import torch
from torch.utils.data import TensorDataset

from nasflow._logging import lines_to
from nasflow.calibrate._store import (
    TABLE,
    StackCalibrationTable,
    calibration_context,
    device_stack,
    usable,
)
from nasflow.cost import DeviceFingerprint
from nasflow.settings import RECALIBRATE_ENV, recalibration_requested
from nasflow.space import Arch
from nasflow.train import Batches
from nasflow.train.stack import Stack
from tests._busy import steady_machine  # noqa: F401 (a fixture)
from tests._spaces import tiny_mnist1d

# Stored and reused records: whether this machine is loaded meanwhile is not these tests'
# to control (a calibration under load is not stored: test_stack_load.py).
pytestmark = pytest.mark.usefixtures("steady_machine")


@pytest.fixture(autouse=True)
def _one_thread():
    """Two intra-op threads on a busy 2-core machine make tiny convolutions crawl (the
    budget probe would then skip the calibration); the thread count is part of the
    device fingerprint, so every calibration here runs with one."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _batches(batch_size: int) -> tuple[Batches, Batches]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(320, 1, 40, generator=g)
    y = (x[:, 0, :20].sum(1) > 0).long()
    train = Batches(TensorDataset(x[:256], y[:256]), batch_size, seed=0, drop_last=True)
    return train, Batches(TensorDataset(x[256:], y[256:]), 64, shuffle=False)


def _calibrate(url: str, batch_size: int = 32, **kw):
    lines: list[str] = []
    train, val = _batches(batch_size)
    with lines_to(lines.append):
        res = device_stack(tiny_mnist1d(), train, val, 3e-3, 1e-2, 10 * len(train), url, **kw)
    ran = [m for m in lines if m.startswith("stack calibration:")]
    return res, ran


def _rows(url: str) -> list[dict]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as c:
            return [dict(r._mapping) for r in c.execute(sa.text(f"SELECT * FROM {TABLE}"))]
    finally:
        engine.dispose()


@pytest.mark.slow
def test_measured_once_reused_without_training_and_recalibrated_on_change(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'study.db'}"
    first, ran = _calibrate(url, budget=600.0)
    assert ran and not first.reused and first.record["origin"]["kind"] == "calibrated"
    rows = _rows(url)
    assert len(rows) == 1
    assert rows[0]["device_key"] == DeviceFingerprint.current("cpu").key
    context = json.loads(rows[0]["context"])
    assert context["batch_size"] == 32 and context["space"] == "mnist1d"
    assert context["arch"] == first.record["calibration"]["arch"]  # the candidate trained
    assert {x["name"] for x in first.record["layers"]} == {
        "amp",
        "accumulation",
        "denormal",
        "threads",
    }
    # The same device and context: the stored record, and not one calibration step.
    again, ran = _calibrate(url, budget=600.0)
    assert ran == [] and again.reused and again.record["origin"]["kind"] == "reused"
    strip = lambda r: {k: v for k, v in r.items() if k != "origin"}  # noqa: E731
    assert strip(again.record) == strip(first.record) and again.stack == first.stack
    # Another batch size is another context: calibrated again, stored next to the first.
    other, ran = _calibrate(url, batch_size=16, budget=600.0)
    assert ran and not other.reused and len(_rows(url)) == 2
    # Another device fingerprint (here: the thread count) finds no record, so it calibrates.
    train, _ = _batches(32)
    space = tiny_mnist1d()
    arch = Arch.from_json(first.record["calibration"]["arch"])
    context = calibration_context(space, arch, train, 3e-3, 1e-2, 10 * len(train))
    assert context.key == first.record["origin"]["context_key"]
    with StackCalibrationTable(url) as table:
        assert table.load(DeviceFingerprint.current("cpu"), context) is not None
        torch.set_num_threads(2)
        assert table.load(DeviceFingerprint.current("cpu"), context) is None


@pytest.mark.slow
def test_a_refresh_calibrates_again_and_replaces_the_record(tmp_path, monkeypatch) -> None:
    url = f"sqlite:///{tmp_path / 'study.db'}"
    _calibrate(url, budget=600.0)
    before = _rows(url)
    monkeypatch.setenv(RECALIBRATE_ENV, "1")
    assert recalibration_requested()
    fresh, ran = _calibrate(url, budget=600.0, refresh=recalibration_requested())
    assert ran and not fresh.reused
    after = _rows(url)
    assert len(after) == 1 and after[0]["context_key"] == before[0]["context_key"]
    assert after[0]["measured_at"] > before[0]["measured_at"]
    assert json.loads(after[0]["record"])["calibration"]["seconds"] == pytest.approx(
        fresh.record["calibration"]["seconds"]
    )
    monkeypatch.setenv(RECALIBRATE_ENV, "0")
    assert not recalibration_requested()


def test_over_budget_nothing_is_calibrated_or_stored_and_the_reason_is_kept(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'study.db'}"
    res, ran = _calibrate(url, budget=1e-6)
    assert ran == [] and res.stack == Stack() and not res.reused
    rec = res.record
    assert (
        "exceeds the 1e-06s budget" in rec["skipped"] and "ms per baseline batch" in rec["skipped"]
    )
    assert rec["layers"] == [] and rec["chosen_multiplier"] is None
    assert rec["calibration"]["estimated_seconds"] > 1e-6
    assert not usable(rec)  # never reused as a measurement
    assert _rows(url) == []  # a later run with more time calibrates
    with StackCalibrationTable(url) as table:
        assert table.count() == 0


def test_a_record_of_another_schema_is_not_usable() -> None:
    assert not usable({"schema": 1, "stack": {}, "layers": []})
    assert not usable({"schema": 2, "stack": {"warp": 9}, "layers": []})
    assert usable({"schema": 2, "stack": Stack().to_dict(), "layers": []})


def test_a_journal_or_unknown_url_is_refused_naming_it(tmp_path) -> None:
    with pytest.raises(ValueError, match="redis"):
        StackCalibrationTable("redis://localhost/0")


@pytest.mark.slow
def test_on_postgresql_the_record_is_stored_and_reused_the_same_way(postgres_url) -> None:
    first, ran = _calibrate(postgres_url, budget=600.0)
    assert ran and not first.reused
    again, ran = _calibrate(postgres_url, budget=600.0)
    assert ran == [] and again.reused and again.record["layers"] == first.record["layers"]
    with StackCalibrationTable(postgres_url) as table:
        assert table.count() == 1


@pytest.mark.slow
def test_a_study_in_another_database_reuses_the_shared_record(tmp_path, monkeypatch) -> None:
    # The conftest gives every test its own shared table ($NASFLOW_COST_CACHE).
    first_url = f"sqlite:///{tmp_path / 'a.db'}"
    first, ran = _calibrate(first_url, budget=600.0)
    assert ran and first.record["origin"]["kind"] == "calibrated"
    # A second study, in a database of its own, trains nothing: the record of the first,
    # from the shared table, is copied into its database with its measurement time.
    second_url = f"sqlite:///{tmp_path / 'b.db'}"
    second, ran = _calibrate(second_url, budget=600.0)
    assert ran == [] and second.reused and second.stack == first.stack
    assert second.record["origin"]["source"] == "the table shared by this user's studies"
    (row,) = _rows(second_url)
    (first_row,) = _rows(first_url)
    assert row["record"] == first_row["record"] and row["measured_at"] == first_row["measured_at"]
    # With sharing off, a third database calibrates, and stores only in its own table.
    monkeypatch.setenv("NASFLOW_COST_CACHE", "off")
    third_url = f"sqlite:///{tmp_path / 'c.db'}"
    third, ran = _calibrate(third_url, budget=600.0)
    assert ran and not third.reused and len(_rows(third_url)) == 1
