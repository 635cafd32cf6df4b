"""The CPU limit for tests not marked slow (``tests/_cpu_limit.py``): a test over it fails
under ``NASFLOW_TEST_CPU_LIMIT`` (CI), a slow-marked one or a run without it passes."""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)

#: A test that burns about 0.3 CPU-seconds, unmarked and marked slow; and one whose
#: shared (module-scoped) fixture burns them.
BUSY = """
import time

import pytest


def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


@pytest.fixture(scope="module")
def shared():
    burn(0.3)


def test_unmarked():
    burn(0.3)


@pytest.mark.slow
def test_marked():
    burn(0.3)


def test_cheap_after_a_shared_fixture(shared):
    pass
"""


def _run(pytester: pytest.Pytester, limit: str | None) -> pytest.RunResult:
    pytester.makeini("[pytest]\nmarkers =\n    slow: slow")
    pytester.makepyfile(test_busy=BUSY)
    if limit is None:
        pytester._monkeypatch.delenv("NASFLOW_TEST_CPU_LIMIT", raising=False)
    else:
        pytester._monkeypatch.setenv("NASFLOW_TEST_CPU_LIMIT", limit)
    # (in process: the plugin module is imported already, hence no assertion rewriting)
    return pytester.runpytest(
        "-p", "tests._cpu_limit", "-q", "-W", "ignore::pytest.PytestAssertRewriteWarning"
    )


def test_an_unmarked_test_over_the_limit_fails_naming_its_cpu_seconds(
    pytester: pytest.Pytester,
) -> None:
    result = _run(pytester, "0.15")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_busy.py::test_unmarked used 0.* CPU-seconds*over the 0.15 s that "
            "NASFLOW_TEST_CPU_LIMIT allows a test not marked slow*@pytest.mark.slow*"
        ]
    )
    assert "test_marked used" not in result.stdout.str()
    assert "test_cheap_after_a_shared_fixture used" not in result.stdout.str()


def test_without_the_limit_nothing_is_checked(pytester: pytest.Pytester) -> None:
    _run(pytester, None).assert_outcomes(passed=3)


def test_a_bad_limit_is_one_usage_error(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "ten")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*NASFLOW_TEST_CPU_LIMIT must be a positive number of seconds, got 'ten'*"]
    )
