"""Other processes keeping every core busy: the load a shared machine puts on a
measurement, made certain for the tests that check it is noticed."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def busy_cores(per_core: int = 2) -> Iterator[None]:
    """``per_core`` spinning processes per core while the block runs (each stopped, by its
    own id, on the way out): a thread of this process then gets at most about
    ``1 / (per_core + 1)`` of a core, whatever else the machine runs."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(per_core * (os.cpu_count() or 1))
    ]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(timeout=30)


@pytest.fixture
def steady_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read every measurement as taken on a steady machine (a core-share threshold of 0):
    whether the machine a test runs on is loaded is not that test's to control (a
    measurement under load is refused storage by design, tested with ``busy_cores``)."""
    monkeypatch.setattr("nasflow.cost._measure.LOADED_SHARE", 0.0)
