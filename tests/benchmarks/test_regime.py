"""The scaled replay (``benchmarks/regime.py``) on a tiny synthetic table and hand-made
study runs: scaling multiplies the baselines' event times, the overtaking budget where the
answer is known, a ground without study runs, and a run's one-shot cost and clock read from
its record."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from tests.benchmarks.test_benchmark_scripts import _load

regime = _load("regime.py")

FIELDS = ["index", "arch", "val_accuracy", "test_accuracy", "params", "train_cpu_seconds",
          "val_curve", "cpu_curve"]  # fmt: skip


def _arch(i: int) -> str:
    return json.dumps({"a": i % 3, "b": i // 3})


def _write_table(path: Path, rows: list[dict], partial_tail: bool = False) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        w.writerows(rows)
        if partial_tail:  # a row being written when the file was read
            f.write('99,"{""a"": 1')
    return path


def _row(i: int, curve: list[float], costs: list[float], test: float) -> dict:
    return {
        "index": i,
        "arch": _arch(i),
        "val_accuracy": curve[-1],
        "test_accuracy": test,
        "params": 1000 * (i + 1),
        "train_cpu_seconds": sum(costs),
        "val_curve": json.dumps(curve),
        "cpu_curve": json.dumps(costs),
    }


@pytest.fixture
def varied(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Nine architectures, three epochs, two training seeds with different curves."""
    rng = np.random.default_rng(0)
    paths = []
    for seed in range(2):
        rows = []
        for i in range(9):
            curve = np.sort(rng.uniform(0.3, 0.9, 3)).round(3).tolist()
            costs = rng.uniform(0.5, 2.0, 3).round(3).tolist()
            rows.append(_row(i, curve, costs, round(curve[-1] - 0.01 * seed, 4)))
        paths.append(_write_table(tmp_path / f"t_seed{seed}.csv", rows, partial_tail=seed == 1))
    return regime.load_table(paths)


def test_a_table_is_read_with_its_test_accuracy_averaged_over_seeds(varied, tmp_path) -> None:
    assert varied.seeds == 2 and len(varied.gt.archs) == 9  # the partial row is left out
    tests = []
    for seed in range(2):
        with (tmp_path / f"t_seed{seed}.csv").open(newline="") as f:
            tests.append([float(r["test_accuracy"]) for r in list(csv.DictReader(f))[:9]])
    mean = np.mean(tests, axis=0)
    for k in range(2):
        np.testing.assert_allclose(varied.gt.test[k], mean)
    assert list(varied.params) == [1000 * (i + 1) for i in range(9)]
    # --score drawn: each training's own test accuracy.
    np.testing.assert_allclose(varied.scored("drawn").test, tests)
    assert varied.scored("mean") is varied.gt


@pytest.mark.parametrize("method", regime.BASELINES)
def test_scaling_the_table_multiplies_the_baselines_event_times(varied, method) -> None:
    replay = regime.REPLAYS[method]
    for seed in range(3):
        base = replay(varied.gt, seed)
        tenfold = replay(regime.scaled(varied.gt, 10.0), seed)
        assert base, "the replay completed no training"
        # The same trainings completed, each 10 times later.
        assert [(e.val, e.test) for e in tenfold] == [(e.val, e.test) for e in base]
        assert [e.cpu for e in tenfold] == pytest.approx([10 * e.cpu for e in base])
        # The last completion is at most the whole table's cost (one seed's curves each).
        assert base[-1].cpu <= varied.gt.cpu.max(0).sum() + 1e-9


def test_a_replay_scores_the_incumbent_by_its_mean_test_accuracy(varied) -> None:
    events = regime.replay_tpe_hb(varied.gt, 0)
    means = set(np.round(varied.gt.test[0], 6))
    assert {round(e.test, 6) for e in events} <= means


def test_the_evaluation_replays_once_and_multiplies_by_the_scale(varied) -> None:
    g = regime.evaluate("t", varied.gt, 2, [], [1.0, 10.0], 3, [1.0, 4.0, 16.0])
    one, ten = g.scales
    assert list(ten.budgets) == [10.0, 40.0, 160.0]
    for m in regime.BASELINES:
        np.testing.assert_array_equal(one.baseline[m], ten.baseline[m])
        assert ten.used_up[m] == pytest.approx(10 * one.used_up[m])


# ---------------------------------------------------------------------------- overtaking
def test_overtaking_is_the_first_budget_from_which_the_study_stays_ahead() -> None:
    t = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    nan = math.nan
    # Ahead at 2 (no baseline model yet), behind at 3, ahead for good from 4.
    assert regime.overtaking(t, np.array([nan, 0.5, 0.5, 0.9, 0.9]),
                             np.array([nan, nan, 0.6, 0.6, 0.9])) == 4.0  # fmt: skip
    # Ahead throughout once it has a model; a study without a model is not ahead.
    assert regime.overtaking(t, np.array([nan, 0.7, 0.7, 0.7, 0.7]), np.full(5, 0.6)) == 2.0
    # Behind at the grid's end: never.
    assert regime.overtaking(t, np.full(5, 0.9), np.array([0.5] * 4 + [0.95])) is None
    # Equal counts as at least as good.
    assert regime.overtaking(t, np.full(5, 0.6), np.full(5, 0.6)) == 1.0


def _flat_table(tmp_path: Path) -> regime.Table:
    """Six architectures with the same curves (0.8 validation and test) and 10 CPU-s per
    epoch: every baseline's incumbent is 0.8 from its first completed training on, by 120
    CPU-s (the whole table) at the latest."""
    rows = [_row(i, [0.8, 0.8], [10.0, 10.0], 0.8) for i in range(6)]
    return regime.load_table([_write_table(tmp_path / "flat_seed0.csv", rows)])


def _run(kept: float = 0.9) -> regime.StudyRun:
    """A hand-made run: one anchor ready at 2 (val 0.5, test 0.5), the one-shot phases 2 to
    42 (F = 40), a fine-tuned model at 50 (test 0.7) and the kept model at 200 (test 0.9)."""
    return regime.StudyRun(
        ground="t",
        source="hand-made",
        seed=0,
        events=[regime.Event(2.0, 0.5, 0.5), regime.Event(50.0, 0.7, 0.7)],
        anchors=[],
        anchors_end=2.0,
        first_search=50.0,
        one_shot=40.0,
        run_cpu=200.0,
        kept_test=kept,
    )


def test_the_overtaking_budget_on_a_hand_made_case(tmp_path: Path) -> None:
    table = _flat_table(tmp_path)
    g = regime.evaluate("t", table.gt, 1, [_run()], [1.0, 10.0, 100.0], 3, [1.0, 10_000.0])
    for res in g.scales:
        s = res.scale
        for m in regime.BASELINES:
            # The baselines' first completed training comes before the study's kept model.
            assert res.used_up[m] <= 120 * s
            # The study leads at its anchor (no baseline model yet), falls behind the
            # baselines' 0.8 with its 0.5 and 0.7, and overtakes with its kept 0.9.
            assert res.overtakes[m, "larger data", True] == pytest.approx(200 * s)
            # Longer recipes: only the one-shot 40 CPU-s stay; the kept model is ready at
            # 200 * s - (s - 1) * 40.
            assert res.overtakes[m, "longer recipes", True] == pytest.approx(
                200 * s - (s - 1) * 40
            )
        assert res.at_end["study", "larger data", True] == pytest.approx(0.9)
        assert res.at_end["random+HB", "larger data", True] == pytest.approx(0.8)
    lines = regime.headline([g]).splitlines()
    # The kept model comes after the six-architecture table is used up: marked.
    assert (
        "| ×10 | 1,640 (table used up) | 2,000 (table used up) | 1,640 (table used up) |"
        in lines[3]
    )


def test_a_study_that_keeps_worse_never_overtakes(tmp_path: Path) -> None:
    table = _flat_table(tmp_path)
    g = regime.evaluate("t", table.gt, 1, [_run(kept=0.75)], [1.0], 3, [1.0, 10_000.0])
    assert all(v is None for v in g.scales[0].overtakes.values())
    assert "never within the grid (≤ 10,000)" in regime.headline([g])


def test_the_longer_recipes_clock_keeps_the_one_shot_part_fixed() -> None:
    run = _run()
    # Before the one-shot part, during it (its part is not scaled) and after it.
    assert regime.study_time(run, 2.0, 10, "longer recipes", True) == 20.0
    assert regime.study_time(run, 22.0, 10, "longer recipes", True) == pytest.approx(40.0)
    assert regime.study_time(run, 200.0, 10, "longer recipes", True) == pytest.approx(1640.0)
    assert regime.study_time(run, 200.0, 10, "larger data", True) == 2000.0
    run.kappa = 2.0  # twice as slow as the table: its timeline halves
    assert regime.study_time(run, 200.0, 1, "larger data", True) == 100.0
    assert regime.study_time(run, 200.0, 1, "larger data", False) == 200.0


def test_a_ground_without_study_runs_is_reported_as_such(tmp_path: Path) -> None:
    table = _flat_table(tmp_path)
    g = regime.evaluate("lonely", table.gt, 1, [], [1.0, 10.0], 3, [1.0, 1000.0])
    assert g.runs == [] and all(not res.overtakes and not res.study for res in g.scales)
    rows = [line for line in regime.headline([g]).splitlines() if line.startswith("| lonely")]
    assert len(rows) == 2
    assert all(line.count("no study runs") == 4 for line in rows)
    text = regime.report([g], "cmd")
    assert "study, " not in text and "own clock" not in text  # no study rows to show
    assert "random+HB (replayed, median)" in text


# ---------------------------------------------------------------------------- records
def _paired_row(config: str = "shipped") -> dict:
    anchors = [
        {"arch": _arch(i), "params": 1000 * (i + 1), "val_accuracy": 0.5, "test_accuracy": 0.5,
         "ready_cpu_seconds": t}
        for i, t in ((0, 4.0), (1, 24.0), (2, 44.0))
    ]  # fmt: skip
    return {
        "kind": "run",
        "config": config,
        "study": "studies/mnist1d_front.py",
        "seed": 0,
        "run_cpu_s": 300.0,
        "run_wall_s": 400.0,
        "phase_seconds": {"anchors": 60.0, "supernet": 100.0, "search": 60.0, "trust": 40.0},
        "anchors": anchors,
        "trained": [
            {"kind": "anchor", "ready_cpu": 44.0, "val": 0.5, "test": 0.5},
            {"kind": "fine-tuned", "ready_cpu": 260.0, "val": 0.7, "test": 0.71},
            {"kind": "fine-tuned", "ready_cpu": 250.0, "val": 0.6, "test": 0.61},
            {"kind": "retrained", "ready_cpu": 300.0, "val": 0.8, "test": 0.8},
        ],
        "kept_model": {"test": 0.8},
    }


def test_a_run_record_gives_its_events_marks_and_one_shot_cost() -> None:
    run = regime.run_from_row(_paired_row(), "paired.jsonl")
    assert run is not None and run.ground == "proving"
    assert (run.anchors_end, run.first_search, run.run_cpu) == (44.0, 250.0, 300.0)
    # F: the one-shot phases' 200 wall-s at the run's 0.75 CPU/wall = 150, under c1 - tA.
    assert run.one_shot == pytest.approx(150.0)
    assert len(run.events) == 3 + 3 and run.kept_test == 0.8
    # Capped by the CPU between the last anchor and the first search-derived model.
    row = _paired_row()
    row["trained"][2]["ready_cpu"] = 144.0
    assert regime.run_from_row(row, "p").one_shot == pytest.approx(100.0)
    # Another configuration, a header and a ground outside the benchmark are not runs.
    assert regime.run_from_row(_paired_row("rungs"), "p") is None
    assert regime.run_from_row({"kind": "header"}, "p") is None
    assert regime.run_from_row({**_paired_row(), "study": "x.py"}, "p") is None


def test_a_runs_clock_is_calibrated_on_its_anchors_in_the_table(varied) -> None:
    run = regime.run_from_row(_paired_row(), "p")
    run.ground = "t"
    regime.calibrate([run], {"t": varied})
    # Anchors 1 and 2 (architectures 1 and 2 of the table) took 20 CPU-s each in the run.
    expected = 40.0 / (varied.gt.cpu[:, 1].mean() + varied.gt.cpu[:, 2].mean())
    assert run.kappa == pytest.approx(expected)
    assert run.kappa_from.startswith("2 anchors in the table")
