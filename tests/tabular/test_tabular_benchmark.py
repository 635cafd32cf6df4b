"""Smoke test of ``benchmarks/tabular.py`` (the script behind the tabular results table)."""

from __future__ import annotations

import importlib.util
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from nasflow.search_spaces.nas_bench_201 import NASBench201Space
from nasflow.tabular import TabularBenchmark

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "tabular.py"


def _script_module():
    spec = importlib.util.spec_from_file_location("tabular_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_quick_run_prints_a_row_per_sampler(shared_data_file) -> None:
    csv_path = shared_data_file("nb201_cifar10.csv")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NASFLOW_NB201_CSV": str(csv_path)}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    rows = re.findall(
        r"^\| (tpe|random|nsga2) \| 20 \| 2 \| ([0-9.]+) ± ([0-9.]+) \| ([0-9.]+) ±",
        proc.stdout,
        re.M,
    )
    assert sorted({r[0] for r in rows}) == ["nsga2", "random", "tpe"]
    for _, regret, _, acc in rows:  # regret and best accuracy add up to the optimum
        assert 0.0 <= float(regret) < 94.3733
        assert float(regret) + float(acc) == pytest.approx(94.373, abs=2e-3)
    assert "| random, exact expectation (distinct) | 20 |" in proc.stdout


def test_exact_random_search_expectation(shared_data_file) -> None:
    table = TabularBenchmark(
        shared_data_file("nb201_cifar10.csv"), NASBench201Space(), metric="cifar10_test_acc_200ep"
    )
    expectation = _script_module().random_expectation
    for distinct in (True, False):  # one draw: the table's mean and spread
        mean, std = expectation(table, 1, distinct=distinct)
        assert mean == pytest.approx(statistics.fmean(table.values()), abs=1e-9)
        assert std == pytest.approx(statistics.pstdev(table.values()), abs=1e-9)
    means = [expectation(table, n, distinct=False)[0] for n in (10, 100, 1000, 100_000)]
    assert means == sorted(means) and means[-1] == pytest.approx(table.optimum, abs=1e-3)
    # Distinct draws (what a study screens): the best of two is the larger of a pair drawn
    # without replacement, and every architecture drawn holds the optimum for certain.
    values = sorted(table.values())
    n = len(values)
    pairs = sum(v * (2 * k) / (n * (n - 1)) for k, v in enumerate(values))  # P(max=k-th)
    assert expectation(table, 2)[0] == pytest.approx(pairs, abs=1e-9)
    assert expectation(table, n) == pytest.approx((table.optimum, 0.0), abs=1e-6)
    distinct = [expectation(table, k)[0] for k in (10, 100, 1000)]
    assert all(d > r for d, r in zip(distinct, means, strict=False))  # no draw is wasted
    with pytest.raises(ValueError, match="1 to 15625 distinct draws, got 15626"):
        expectation(table, n + 1)
