"""Smoke run of the B4 storage-overhead benchmark (``benchmarks/scaling.py --quick``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_quick_scaling_benchmark_prints_a_row_per_configuration(postgres_url: str) -> None:
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
    assert [r.split("|")[1:3] for r in rows[1:]] == [
        [" sqlite ", " 1 "],
        [" postgresql ", " 1 "],
        [" postgresql ", " 2 "],
    ]
    for r in rows[1:]:
        trials, per_s = int(r.split("|")[3]), float(r.split("|")[5])
        assert trials >= 20 and per_s > 0
