"""``benchmarks/anytime_bound.py``: the best hypervolume any set of trainings within a budget
reaches, against an exhaustive search."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from tests.benchmarks._load import ROOT, load_benchmark


@pytest.fixture(scope="module")
def ab():  # type: ignore[no-untyped-def]
    return load_benchmark("anytime_bound.py")


def _exhaustive(b1, acc, cost, ref, budget):  # type: ignore[no-untyped-def]
    best = 0.0
    for k in range(1, len(acc) + 1):
        for pick in itertools.combinations(range(len(acc)), k):
            if cost[list(pick)].sum() <= budget:
                pts = np.stack([acc[list(pick)], cost[list(pick)]], 1)
                best = max(best, b1.hypervolume_2d(pts, ref))
    return best


def test_the_dynamic_programme_finds_the_exhaustive_best_set(ab) -> None:
    b1 = load_benchmark("_b1_tables.py")
    rng = np.random.default_rng(0)
    for _ in range(20):
        acc = rng.uniform(0.5, 0.9, 8).round(3)
        cost = rng.integers(1, 40, 8).astype(float)  # whole seconds: no rounding
        ref = (0.5, 45.0)
        budgets = [0.0, 5.0, 20.0, 45.0, 400.0]
        got = ab.best_hypervolume(acc, cost, ref, budgets, step=1.0)
        want = [_exhaustive(b1, acc, cost, ref, b) for b in budgets]
        assert got == pytest.approx(want)
    assert got[-1] == pytest.approx(b1.hypervolume_2d(np.stack([acc, cost], 1), ref))


def test_costs_round_down_so_the_bound_is_never_below_the_exact_best(ab) -> None:
    acc, cost = np.array([0.7, 0.8]), np.array([1.04, 2.04])
    exact = ab.best_hypervolume(acc, cost, (0.5, 10.0), [3.0], step=0.01)[0]
    coarse = ab.best_hypervolume(acc, cost, (0.5, 10.0), [3.0], step=0.5)[0]
    assert exact == pytest.approx(0.3 * (10 - 2.04))  # 3.08 s for both: one fits
    # Rounded down to 1.0 + 2.0, both fit: the bound rises, never falls.
    assert coarse == pytest.approx(0.2 * (10 - 1.04) + 0.1 * (10 - 2.04)) and coarse > exact
    assert ab.best_hypervolume(acc, cost, (0.5, 10.0), [-1.0], step=0.5) == [0.0]


def test_paired_rows_of_one_configuration_become_runs_at_their_ready_times(ab, tmp_path) -> None:
    def row(config: str, name: str) -> dict:
        trained = [
            {"ready_cpu": 12.0, "test": 0.7, "cost": 3.0, "kind": "anchor", "arch": '{"a": 1}'}
        ]
        return {"config": config, "name": name, "seed": 3, "trained": trained,
                "phase_seconds": {"supernet": 30.0}}  # fmt: skip

    path = tmp_path / "paired.jsonl"
    rows = [{"kind": "header"}, row("a", "g"), row("b", "g"), row("b", "other")]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (run,) = ab.nasflow_runs([path], "g", "b")
    # (the architecture and its kind: what the table's clock is read from)
    assert run["events"] == [
        {"cpu": 12.0, "test": 0.7, "train_cpu": 3.0, "arch": '{"a": 1}', "note": "anchor"}
    ]
    assert run["phases"]["supernet"] == 30.0 and run["seed"] == 3
    assert ab.nasflow_runs([path], "g", "c") == []


def test_the_envelope_is_never_below_the_shipped_rule_and_grows_with_the_budget(ab) -> None:
    from nasflow.search import load_study_file

    b1 = load_benchmark("_b1_tables.py")
    spec = load_study_file(ROOT / "benchmarks" / "suite" / "hard.py")
    gt = b1.load_ground_truth([Path(p) for p in spec.baseline])
    budgets = [0.0, 5.0, 30.0, 400.0]
    shipped, best, which = ab.envelope(spec, gt, budgets)
    assert shipped[0] == best[0] == 0.0 and which[0] == "—"  # nothing is trained at 0
    assert all(b >= s for b, s in zip(best, shipped, strict=True))
    assert best == sorted(best) and best[-1] > shipped[-1] > 0
    n, q = which[-1].split("/")
    assert int(n) in ab.ENVELOPE_N and float(q) in ab.ENVELOPE_Q


def test_the_table_clock_moves_a_fast_machines_runs_and_says_so(ab, capsys) -> None:
    """On this session's committed `hard` runs (a machine about twice the table's speed),
    ``--table-clock`` prints each run's ratio and lowers nasflow's curve from above the
    table's whole front; ``--without-finetuning`` relabels the row as a replay and keeps
    the study's own end; paired rows refuse the replay before any work."""
    common = [
        "--study", str(ROOT / "benchmarks/suite/hard.py"),
        "--runs", str(ROOT / "benchmarks/data/b1_front41_hard.json"),
        "--budgets", "120", "300", "--replays", "3", "--step", "0.5",
    ]  # fmt: skip

    def nasflow_row() -> tuple[str, list[float]]:
        out = capsys.readouterr().out
        row = next(r for r in out.splitlines() if r.startswith("| nasflow"))
        return out, [float(c) for c in row.strip("|").split("|")[1:]]

    assert ab.main(common) == 0
    _, own = nasflow_row()
    assert ab.main([*common, "--table-clock"]) == 0
    out, table = nasflow_row()
    assert "nasflow seed 0: clock x0.5" in out and "the study's own end" in out
    assert own[-1] > 1.0 > table[-1]  # the fast clock had put it above the whole front
    assert ab.main([*common, "--table-clock", "--without-finetuning"]) == 0
    out, _ = nasflow_row()
    assert "without fine-tuning (replayed" in out and "the study's own end 215" in out
    with pytest.raises(SystemExit):
        ab.main([*common, "--without-finetuning", "--config", "shipped", "--threshold", "0.7"])
    assert "not paired rows" in capsys.readouterr().err
