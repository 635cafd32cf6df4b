"""optuna-dashboard: figures pushed to real storages and read back over its HTTP API."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from importlib.util import find_spec
from pathlib import Path

import optuna
import pytest

from nasflow.cli import main
from nasflow.report import DashboardUnavailable
from nasflow.report._dashboard import (
    dashboard_server,
    is_loopback,
    push_figures,
    require_dashboard,
)
from nasflow.storage import SQLiteLock, StorageError, open_storage, resolve_storage
from tests.conftest import require_or_skip
from tests.report._studies import FIGURE_KEYS

REPO = Path(__file__).resolve().parents[2]
KEYS = (*FIGURE_KEYS, "table")
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(autouse=True)
def _needs_dashboard() -> None:
    require_or_skip(
        find_spec("optuna_dashboard") is not None,
        "optuna-dashboard is not installed (pip install 'nasflow[dashboard]')",
    )


def _get(url: str) -> tuple[int, bytes]:
    with _DIRECT.open(url, timeout=30) as r:
        return r.status, r.read()


def _graphs(base: str, study_id: int) -> dict[str, dict]:
    status, body = _get(f"{base}/api/studies/{study_id}")
    assert status == 200
    detail = json.loads(body)
    return {g["id"]: json.loads(g["graph_object"]) for g in detail["plotly_graph_objects"]}


def _read_line(proc: subprocess.Popen, timeout: float) -> str:
    """The first stdout line of ``proc`` (bounded wait: importing torch can be slow)."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sel.select(timeout=1.0):
            return proc.stdout.readline()
        if proc.poll() is not None:
            break
    raise AssertionError(f"no URL from nasflow dashboard: {proc.stderr.read()}")


@pytest.mark.slow
def test_cli_pushes_the_figures_and_serves_them_on_loopback(study_copy) -> None:
    copy = study_copy()
    cmd = [sys.executable, "-m", "nasflow.cli", "dashboard", copy.name]
    cmd += ["--runs", str(copy.out), "--port", "0"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = _read_line(proc, timeout=180)
        url = line.split(": ", 1)[1].split()[0]
        assert url.startswith("http://127.0.0.1:") and "/dashboard/studies/" in url
        base, study_id = url.split("/dashboard/")[0], int(url.rsplit("/", 1)[1])
        status, page = _get(base + "/")  # redirects to the dashboard's page
        assert status == 200 and b"<html" in page.lower()
        graphs = _graphs(base, study_id)
        assert set(graphs) == {f"nasflow-{k}" for k in KEYS}
        names = [t.get("name") for t in graphs["nasflow-pareto"]["data"]]
        assert "retrained from scratch (phase 3)" in names  # the trained models' front
        # The SQLite file is held while the dashboard runs: a search would be refused.
        with pytest.raises(StorageError):
            SQLiteLock(copy.db).acquire()
        proc.send_signal(signal.SIGINT)  # Ctrl-C stops it cleanly
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    lock = SQLiteLock(copy.db)
    lock.acquire()  # released on the way out
    lock.release()


@pytest.mark.slow
def test_push_to_postgresql_replaces_and_reads_back(tiny_study, postgres_url) -> None:
    optuna.copy_study(
        from_study_name=tiny_study.name, from_storage=tiny_study.url, to_storage=postgres_url
    )
    storage = open_storage(resolve_storage(postgres_url, "unused"))
    study = optuna.load_study(study_name=tiny_study.name, storage=storage)
    push_figures(study)
    push_figures(study)  # a second push replaces, it does not add
    server = dashboard_server(storage, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        graphs = _graphs(base, storage.get_study_id_from_name(tiny_study.name))
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)
    assert set(graphs) == {f"nasflow-{k}" for k in KEYS}
    stack = graphs["nasflow-stack"]
    assert stack["data"] == [] and "not measured" in json.dumps(stack["layout"])


def test_dashboard_is_refused_while_a_search_holds_the_sqlite_file(study_copy, capsys) -> None:
    copy = study_copy()
    with SQLiteLock(copy.db):  # what a running `nasflow search` holds
        assert main(["dashboard", copy.name, "--runs", str(copy.out), "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "in use by another nasflow worker (process " in err[0]
    assert f"nasflow report {copy.name}" in err[0]


def test_without_the_extra_the_error_names_it(monkeypatch, study_copy, capsys) -> None:
    monkeypatch.setitem(sys.modules, "optuna_dashboard", None)  # as if not installed
    with pytest.raises(DashboardUnavailable, match=r"nasflow\[dashboard\]"):
        require_dashboard()
    copy = study_copy()
    assert main(["dashboard", copy.name, "--runs", str(copy.out)]) == 2
    assert "pip install 'nasflow[dashboard]'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("localhost", True), ("::1", True), ("0.0.0.0", False)],
)
def test_loopback_addresses(host, loopback) -> None:
    assert is_loopback(host) is loopback
