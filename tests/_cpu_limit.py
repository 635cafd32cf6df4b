"""A pytest plugin: under ``NASFLOW_TEST_CPU_LIMIT=SECONDS`` (set by ``.ci/run``), a test not
marked ``slow`` that uses more CPU than that fails, naming its figure and the marker.

What is counted: the CPU-seconds (user and system, every thread) of the test process and
of the child processes it waited for (a CLI run, a worker, a notebook kernel), from the
start of the test's setup to the end of its call, less the setup of fixtures shared by
several tests (scope ``module``, ``package`` or ``session``: whichever test happens to
run first would pay for all of them). CPU time, not wall time: on a shared machine a
test's wall time grows with the other jobs, its CPU time hardly does.

``tests/conftest.py`` imports the hooks; a test of this plugin loads it with
``-p tests._cpu_limit``.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Generator
from typing import Any

import pytest

#: The environment variable holding the limit in CPU-seconds (unset or empty: no check).
LIMIT_ENV = "NASFLOW_TEST_CPU_LIMIT"

#: CPU-seconds when the test's setup began, and those its shared fixtures' setup took.
_START_KEY = pytest.StashKey[float]()
_SHARED_KEY = pytest.StashKey[float]()
#: The session's limit, read once when pytest starts (``None``: no check).
_LIMIT_KEY = pytest.StashKey["float | None"]()
#: The test whose setup is running (fixture set-up hooks do not get it directly).
_current: list[pytest.Item] = []


def cpu_seconds() -> float:
    """CPU-seconds of this process (all threads) and of its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def cpu_limit() -> float | None:
    """The limit from ``$NASFLOW_TEST_CPU_LIMIT`` (``None``: unset).

    Raises:
        pytest.UsageError: A value that is not a positive number.
    """
    raw = os.environ.get(LIMIT_ENV, "").strip()
    if not raw:
        return None
    try:
        limit = float(raw)
    except ValueError:
        limit = -1.0
    if not limit > 0:
        raise pytest.UsageError(f"{LIMIT_ENV} must be a positive number of seconds, got {raw!r}")
    return limit


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_LIMIT_KEY] = cpu_limit()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, None]:
    item.stash[_START_KEY] = cpu_seconds()
    item.stash[_SHARED_KEY] = 0.0
    _current.append(item)
    try:
        yield
    finally:
        _current.pop()


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Generator[None, Any, None]:
    start = cpu_seconds()
    yield
    if fixturedef.scope != "function" and _current:
        item = _current[-1]
        item.stash[_SHARED_KEY] = item.stash.get(_SHARED_KEY, 0.0) + cpu_seconds() - start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if call.when != "call" or not report.passed:
        return
    limit = item.config.stash.get(_LIMIT_KEY, None)
    start = item.stash.get(_START_KEY, None)
    if limit is None or start is None or item.get_closest_marker("slow") is not None:
        return
    used = cpu_seconds() - start - item.stash.get(_SHARED_KEY, 0.0)
    if used > limit:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} used {used:.1f} CPU-seconds (setup and call, this process and "
            f"the processes it waited for; shared fixtures excluded), over the "
            f"{limit:g} s that {LIMIT_ENV} allows a test not marked slow: mark it "
            "@pytest.mark.slow or make it cheaper"
        )
