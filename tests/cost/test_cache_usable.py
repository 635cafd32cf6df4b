"""A shared cost cache that cannot be written (read-only, a folder left by a ``sudo`` run)
or holds tables of another schema is found out before anything trains: the run keeps its
measurements in memory and says so in one line with the fix; the cache is left as it was.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

import pytest

from nasflow._logging import lines_to
from nasflow.cost import check_cache
from nasflow.cost._tables._store import MEMORY_URL, cache_problem, resolve_url
from nasflow.cost._tables._table import LatencyTable
from nasflow.pipeline import StudyRunner
from nasflow.search import load_study_file
from tests._study_template import write_study

WARNING = "nasflow: warning: the cost cache "


def _search(tmp_path: Path) -> list[str]:
    """A tiny search (no retrain); its log lines."""
    lines: list[str] = []
    spec = load_study_file(write_study(tmp_path, n_trials=4, finetune=0))
    StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lines.append).run(
        retrain=False
    )
    return lines


def _one_warning_before_training(lines: list[str]) -> str:
    warnings = [line for line in lines if line.startswith(WARNING)]
    assert len(warnings) == 1, lines
    trained = next(i for i, line in enumerate(lines) if line.startswith("supernet epoch"))
    assert lines.index(warnings[0]) < trained  # said before anything trained
    return warnings[0]


def _rows(path: Path, table: str) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


@pytest.mark.slow
def test_a_read_only_shared_cache_is_kept_in_memory_for_the_run(tmp_path, monkeypatch) -> None:
    cache = tmp_path / "cache" / "cost.db"
    with LatencyTable(cache):  # an empty cache of this schema, that this run must fill ...
        pass
    # ... opened read-only, as a team's shared file is (SQLite: "attempt to write a
    # readonly database" at the first op latency it stores, after the supernet).
    monkeypatch.setenv("NASFLOW_COST_CACHE", f"sqlite:///file:{cache}?mode=ro&uri=true")
    line = _one_warning_before_training(_search(tmp_path))
    assert "cannot be written (attempt to write a readonly database)" in line
    assert "in memory" in line and "NASFLOW_COST_CACHE" in line
    assert _rows(cache, "nasflow_cost_ops") == 0  # left as it was


@pytest.mark.slow
def test_a_cache_of_another_schema_is_kept_in_memory_for_the_run(tmp_path, monkeypatch) -> None:
    cache = tmp_path / "cost.db"
    with sqlite3.connect(cache) as conn:  # an op table some other version wrote
        conn.execute("CREATE TABLE nasflow_cost_ops (id INTEGER PRIMARY KEY, seconds REAL)")
        conn.execute("INSERT INTO nasflow_cost_ops (seconds) VALUES (0.5)")
    monkeypatch.setenv("NASFLOW_COST_CACHE", str(cache))
    line = _one_warning_before_training(_search(tmp_path))
    assert "holds tables of another schema (no such column:" in line and "delete it" in line
    assert _rows(cache, "nasflow_cost_ops") == 1  # not touched: the user decides


def _problem_as_nobody(url: str) -> str:
    """``cache_problem(url)`` in a child process running as user ``nobody`` (root may
    write anywhere): what the probe finds, or "usable"."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, probe, report, exit
        try:
            os.setgid(65534)
            os.setuid(65534)
            found = cache_problem(url)
            os.write(write, ("usable" if found is None else found[0]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        text = f.read()
    os.waitpid(pid, 0)
    return text


def test_a_cache_in_a_folder_another_user_owns_cannot_be_written() -> None:
    # A folder this user cannot write (after one `sudo nasflow search`, ~/.cache/nasflow
    # and its cost.db belong to root), holding a cache it can read.
    folder = Path(tempfile.mkdtemp(prefix="nasflow-sudo-"))
    try:
        cache = folder / "cost.db"
        with LatencyTable(cache):
            pass
        os.chmod(cache, 0o644)
        os.chmod(folder, 0o755)
        url = f"sqlite:///{cache}"
        if os.geteuid() == 0:
            found = _problem_as_nobody(url)
        else:
            os.chmod(cache, 0o444)
            os.chmod(folder, 0o555)
            found = (cache_problem(url) or ("usable",))[0]
        assert found.startswith("cannot be written ("), found
    finally:
        os.chmod(folder, 0o755)
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()


def test_an_unusable_cache_is_replaced_by_memory_once(tmp_path, monkeypatch) -> None:
    cache = tmp_path / "cost.db"
    with sqlite3.connect(cache) as conn:
        conn.execute("CREATE TABLE nasflow_cost_devices (key TEXT PRIMARY KEY)")
    url = resolve_url(cache)
    lines: list[str] = []
    with lines_to(lines.append):
        assert not check_cache(url) and not check_cache(url)
    assert len(lines) == 1 and "another schema" in lines[0]  # said once
    assert resolve_url(cache) == MEMORY_URL
    with LatencyTable(cache) as table:  # works, in memory, from any thread
        assert table.url == MEMORY_URL and table.count() == 0
