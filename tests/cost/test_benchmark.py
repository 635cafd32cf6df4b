"""Smoke run of ``benchmarks/cost_model.py --quick`` (a tiny space; no timing asserted)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_benchmark_writes_a_complete_report(tmp_path: Path) -> None:
    out = tmp_path / "cost.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "cost_model.py"),
            "--quick",
            "--json",
            str(out),
            "--storage",
            str(tmp_path / "cost.db"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "re-measurement B" in proc.stdout and "flops (calibrated)" in proc.stdout
    report = json.loads(out.read_text())
    n = report["meta"]["archs"]
    assert n >= 5 and len(report["measured_a"]) == len(report["predicted"]) == n
    assert all(v > 0 for v in report["measured_a"] + report["measured_b"] + report["predicted"])
    assert set(report["rows"]) == {
        "cost model",
        "flops (calibrated)",
        "flops (fit on A)",
        "re-measurement B",
    }
    for row in report["rows"].values():
        assert row["n"] == n and math.isfinite(row["mape"]) and 0 <= row["within"] <= 1
    calibration = report["meta"]["calibration"]
    assert calibration["points"] >= 2
    assert report["meta"]["table_rows"] > 0
    assert (tmp_path / "cost.db").is_file()
    # Distinct scored architectures, none of them used for the calibration.
    assert len(set(report["archs"])) == n
    assert not set(report["archs"]) & set(calibration["archs"])
