"""The latency table: persistence in a real SQLite file and in PostgreSQL, keyed by device."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import sqlalchemy as sa

from nasflow.cost import DeviceFingerprint
from nasflow.cost._measure import OpTiming
from nasflow.cost._tables._table import Calibration, LatencyTable


@pytest.fixture(params=["sqlite", "postgresql"])
def table_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sub' / 'cost.db'}"
    return request.getfixturevalue("postgres_url")


def _timing(seconds: float) -> OpTiming:
    return OpTiming(seconds, seconds / 10, 0.05, 15, 1234, 56, "an op")


def test_fingerprint_keys_every_field() -> None:
    fp = DeviceFingerprint.current("cpu", "fp32")
    assert fp.device_type == "cpu" and fp.threads >= 1 and fp.cpu
    assert DeviceFingerprint.current("cpu", "fp32").key == fp.key
    for change in (
        {"threads": fp.threads + 1},
        {"precision": "bf16"},
        {"torch_version": "0.0.0"},
        {"device_name": "another cpu"},
    ):
        assert dataclasses.replace(fp, **change).key != fp.key, change
    with pytest.raises(ValueError, match="'fp8'"):
        DeviceFingerprint.current("cpu", "fp8")


def test_rows_round_trip_through_a_new_connection(table_url: str) -> None:
    fp = DeviceFingerprint.current("cpu", "fp32")
    with LatencyTable(table_url) as table:
        assert table.store(fp, {"op-a": _timing(0.002), "op-b": _timing(0.004)}) == 2
    with LatencyTable(table_url) as table:  # what another process sees
        found = table.lookup(fp, ["op-a", "op-b", "op-missing"])
        assert found == {"op-a": _timing(0.002), "op-b": _timing(0.004)}
        assert table.lookup(fp) == found
        assert table.count(fp) == 2
        assert [d.key for d in table.devices()] == [fp.key]


def test_rows_of_another_device_are_never_used(table_url: str) -> None:
    here = DeviceFingerprint.current("cpu", "fp32")
    other_threads = dataclasses.replace(here, threads=here.threads + 7)
    other_precision = dataclasses.replace(here, precision="bf16")
    with LatencyTable(table_url) as table:
        table.store(here, {"op-a": _timing(0.002)})
        table.store(other_threads, {"op-a": _timing(0.009)})
        assert table.lookup(other_precision, ["op-a"]) == {}
        assert table.lookup(here, ["op-a"])["op-a"].fwd_bwd == 0.002
        assert table.lookup(other_threads, ["op-a"])["op-a"].fwd_bwd == 0.009
        assert table.count() == 2 and table.count(here) == 1


def test_a_stored_row_is_kept_and_duplicates_do_not_fail(table_url: str) -> None:
    fp = DeviceFingerprint.current("cpu", "fp32")
    first, second = LatencyTable(table_url), LatencyTable(table_url)  # two workers
    try:
        assert first.store(fp, {"op-a": _timing(0.002)}) == 1
        assert second.store(fp, {"op-a": _timing(0.5), "op-b": _timing(0.1)}) == 1
        assert first.lookup(fp, ["op-a"])["op-a"].fwd_bwd == 0.002
        assert first.count(fp) == 2
    finally:
        first.close()
        second.close()


def test_calibrations_are_stored_per_context_and_replaced(table_url: str) -> None:
    fp = DeviceFingerprint.current("cpu", "fp32")
    points = ({"arch": "{}", "ops": 0.01, "measured": 0.012},)
    with LatencyTable(table_url) as table:
        assert table.load_calibration(fp, "ctx") is None
        table.store_calibration(fp, "ctx", Calibration(1.1, 0.002, points))
        table.store_calibration(fp, "other", Calibration(3.0, 0.0))
    with LatencyTable(table_url) as table:
        assert table.load_calibration(fp, "ctx") == Calibration(1.1, 0.002, points)
        table.store_calibration(fp, "ctx", Calibration(0.9, 0.001))
        assert table.load_calibration(fp, "ctx") == Calibration(0.9, 0.001)
        assert table.load_calibration(fp, "other") == Calibration(3.0, 0.0)
        other = dataclasses.replace(fp, threads=fp.threads + 1)
        assert table.load_calibration(other, "ctx") is None


def test_tables_live_next_to_other_tables(tmp_path: Path) -> None:
    db = tmp_path / "study.db"
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE studies (id INTEGER PRIMARY KEY)"))
    engine.dispose()
    with LatencyTable(db) as table:  # a plain path is a SQLite file
        table.store(DeviceFingerprint.current(), {"op": _timing(0.001)})
    names = set(sa.inspect(sa.create_engine(f"sqlite:///{db}")).get_table_names())
    assert {"studies", "nasflow_cost_ops", "nasflow_cost_devices"} <= names


def test_default_location_is_the_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NASFLOW_CACHE", str(tmp_path / "cache"))
    with LatencyTable() as table:
        assert table.url == f"sqlite:///{tmp_path / 'cache' / 'cost.db'}"
    assert (tmp_path / "cache" / "cost.db").is_file()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("journal:///runs/x.log", "journal:///runs/x.log"),
        ("mysql://u:secret@h/db", "mysql://u:***@h/db"),
    ],
)
def test_non_database_urls_are_refused_without_the_password(url: str, shown: str) -> None:
    with pytest.raises(ValueError) as e:
        LatencyTable(url)
    assert shown in str(e.value) and "secret" not in str(e.value)


def test_unreachable_database_is_a_clear_error() -> None:
    url = "postgresql://nobody:secret@127.0.0.1:1/none"
    with pytest.raises(ValueError, match="cannot open cost table") as e:
        LatencyTable(url)
    assert "secret" not in str(e.value)
