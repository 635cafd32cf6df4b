"""``benchmarks/proposals.py``: the report of constructed rows (known answers) and one
``--quick`` run through the study runner on the NAS-Bench-201 table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.benchmarks.test_benchmark_scripts import _bench, _load

proposals = _load("proposals.py")


def _row(fallback: str, seed: int, regret: float, mutated: int, random: int) -> dict:
    return {
        "fallback": fallback, "queries": 100, "seed": seed, "best": 94.0, "regret": regret,
        "optimum_found": regret == 0, "scored": 100, "mutated": mutated, "random": random,
        "cpu_s": 1.0,
    }  # fmt: skip


def test_the_report_pairs_the_fallbacks_by_seed() -> None:
    rows = [
        _row("random", 0, 0.5, 0, 40), _row("mutate", 0, 0.2, 40, 0),
        _row("random", 1, 0.3, 0, 60), _row("mutate", 1, 0.0, 55, 5),
        _row("random", 2, 0.0, 0, 50), _row("mutate", 2, 0.1, 50, 0),
    ]  # fmt: skip
    lines = proposals.report(rows)
    assert "| 100 | random | 3 | 0.267 | 1/3 | 50% / 0% / 50% | 1.0 |" in lines
    assert "| 100 | mutate | 3 | 0.100 | 1/3 | 50% / 50% / 0% | 1.0 |" in lines
    diff = next(x for x in lines if x.startswith("- 100 distinct cells"))
    # Differences -0.3, -0.3, +0.1: mean -0.167; two lower, one higher.
    assert "mutate - random -0.167 points" in diff
    assert "mutate lower in 2, equal in 0, higher in 1" in diff


def test_every_variant_is_paired_against_random() -> None:
    rows = [
        _row("random", 0, 0.5, 0, 40), _row("random-noreask", 0, 0.5, 0, 40),
        _row("random", 1, 0.3, 0, 60), _row("random-noreask", 1, 0.4, 0, 61),
    ]  # fmt: skip
    lines = proposals.report(rows)
    # Medians of 60% and 39% sampler-proposed, 40% and 61% random: 50% each.
    assert "| 100 | random-noreask | 2 | 0.450 | 0/2 | 50% / 0% / 50% | 1.0 |" in lines
    diff = next(x for x in lines if x.startswith("- 100 distinct cells"))
    # Differences 0.0 and +0.1: mean +0.05; one equal, one higher; no mutate rows, no pair.
    assert "regret random-noreask - random +0.050 points" in diff
    assert "random-noreask lower in 0, equal in 1, higher in 1" in diff
    assert not any("mutate - random" in x for x in lines)


@pytest.mark.slow  # ~15 CPU-s: four tabular studies in a subprocess
def test_quick_runs_both_fallbacks_through_the_study_runner(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    proc = _bench("proposals", "--quick", "--json", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert sorted((r["fallback"], r["seed"]) for r in rows) == [
        ("mutate", 0),
        ("mutate", 1),
        ("random", 0),
        ("random", 1),
    ]
    for r in rows:
        assert r["scored"] == 30 and 0 <= r["regret"] < 10
    assert "Paired by seed" in proc.stdout
