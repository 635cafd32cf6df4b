"""Smoke run of the B4 storage-overhead benchmark (``benchmarks/scaling.py --quick``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_scaling_benchmark_prints_the_curve_and_a_row_per_configuration(
    postgres_url: str,
) -> None:
    out = subprocess.run(
        [sys.executable, "benchmarks/scaling.py", "--quick", "--postgres", postgres_url],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [
        line for line in out.stdout.splitlines() if line.startswith("| ") and "---" not in line
    ]
    # --quick runs the search-loop curve (30 trials in 3 windows) and then the storage table.
    curve, storage = rows[:4], rows[4:]
    assert curve[0].startswith("| trials | wall ms per trial")
    assert [r.split("|")[1].strip() for r in curve[1:]] == ["1–10", "11–20", "21–30"]
    cumulative = [float(r.split("|")[4]) for r in curve[1:]]
    assert cumulative == sorted(cumulative) and cumulative[0] > 0
    assert [r.split("|")[1:3] for r in storage[1:]] == [
        [" sqlite ", " 1 "],
        [" postgresql ", " 1 "],
        [" postgresql ", " 2 "],
    ]
    for r in storage[1:]:
        trials, per_s = int(r.split("|")[3]), float(r.split("|")[5])
        assert trials >= 20 and per_s > 0
