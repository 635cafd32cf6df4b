"""``nasflow bench NAME``: the listing, bad names, and the CI smoke runs of B1, B2 and the
ground-truth script (their numbers are benchmarks, not tests: only structure is checked).
Plus the success rule of B1 on hand-made events."""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nasflow.cli import main
from nasflow.cli._bench import benchmark_catalogue
from nasflow.search import load_study_file
from nasflow.space import Arch
from tests._study_template import write_study
from tests.benchmarks._load import B2_COLUMNS

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _bench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nasflow.cli", "bench", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )


def test_every_listed_benchmark_has_a_script(capsys) -> None:
    assert main(["bench"]) == 0
    listed = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == list(benchmark_catalogue()) and "search_efficiency" in listed
    for name in listed:
        assert (ROOT / "benchmarks" / f"{name}.py").is_file(), name


def test_outside_a_source_checkout_bench_says_so(monkeypatch, tmp_path, capsys) -> None:
    import nasflow

    # An installed wheel: nasflow/ in site-packages, no benchmarks/ beside it.
    monkeypatch.setattr(nasflow, "__file__", str(tmp_path / "nasflow" / "__init__.py"))
    assert main(["bench"]) == 2
    err = capsys.readouterr().err
    assert "not running from a source checkout" in err and "pip install -e ." in err


def test_unknown_benchmark_is_one_line_and_exit_2(capsys) -> None:
    assert main(["bench", "b9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no benchmark 'b9'" in err[0] and "search_efficiency" in err[0]


def test_a_benchmarks_bad_argument_passes_its_exit_code(capsys) -> None:
    assert main(["bench", "b1", "--budget", "0"]) == 2
    assert "--budget must be > 0, got 0.0" in capsys.readouterr().err


# ---------------------------------------------------------------------------- B1 rule
def _arch(i: int) -> Arch:
    return Arch({"x": i})


def test_b1_success_needs_the_incumbent_chosen_by_validation_to_pass_on_test() -> None:
    b1 = _load("search_efficiency.py")
    run = b1.Run("random", 0, threshold=0.99, budget=1e9)
    run.add(_arch(0), val=0.95, test=0.96)
    # Passes on test but is not the incumbent (lower validation accuracy): no success.
    run.add(_arch(1), val=0.90, test=0.995)
    assert run.success_cpu is None and run.incumbent()["arch"] == _arch(0).to_json()
    # The new incumbent passes: success at this event's CPU time, and the run stops.
    with pytest.raises(b1.Stop):
        run.add(_arch(2), val=0.97, test=0.991)
    assert run.success_cpu == run.events[-1]["cpu"] and run.success_cpu > 0


def test_b1_run_stops_on_its_budget_without_success() -> None:
    b1 = _load("search_efficiency.py")
    run = b1.Run("random", 0, threshold=0.99, budget=0.0)
    with pytest.raises(b1.Stop):
        run.add(_arch(0), val=0.95, test=0.96)
    assert run.success_cpu is None and run.summary()["trained"] == 1


def test_b1_table_counts_a_failed_run_as_its_budget_and_marks_it() -> None:
    b1 = _load("search_efficiency.py")
    runs = [
        {
            "method": "nasflow",
            "seed": 0,
            "success_cpu": 100.0,
            "cpu": 100.0,
            "trained": 1,
            "incumbent_test": 0.995,
        },
        {
            "method": "random",
            "seed": 0,
            "success_cpu": None,
            "cpu": 650.0,
            "trained": 40,
            "incumbent_test": 0.99,
        },
    ]
    lines = b1.table(runs, budget=600).splitlines()
    assert "| nasflow | 1 | 1/1 | 100 | 100 | ×1.00 |" in lines[2]
    assert "| random | 1 | 0/1 | >650 | >650 | ×6.50 |" in lines[3]


def test_b1_replay_of_random_search_on_the_table_follows_the_incumbent(tmp_path: Path) -> None:
    b1 = _load("search_efficiency.py")
    gt = tmp_path / "gt.csv"
    gt.write_text(
        "index,arch,val_accuracy,test_accuracy,params,train_seconds\n"
        '0,"{}",0.90,0.990,1,1\n'  # passes; displaced only by a better validation score
        '1,"{}",0.95,0.900,1,1\n'  # once it leads, nothing displaces it: no success
        '2,"{}",0.80,0.995,1,1\n'  # passes, but only if drawn before the others
    )
    counts = b1.resampled_random(gt, 0.99, 600, 0)
    # First drawn 0 or 2: success at once; first drawn 1: never. Each about a third.
    assert set(counts) == {1, None}
    assert 150 < counts.count(None) < 250


def test_b1_counts_ready_models_as_trained_events_with_an_estimated_cost() -> None:
    from nasflow.record import FineTuned, FineTuneResult
    from nasflow.search import load_study_file

    b1 = _load("search_efficiency.py")
    spec = load_study_file(ROOT / "studies" / "mnist1d_front.py")  # data() is lazy
    arch = Arch({"x": 1}).to_json()
    result = FineTuneResult(
        [
            FineTuned(3, arch, 0.9, [0.8, 0.9], [1.0, 3.0], 0.91, "stopped"),
            FineTuned(4, arch, 0.8, [0.7], [2.0], None, "stopped"),  # no test: not counted
            FineTuned(5, arch, 0.7, [], [], None, "diverged"),  # no weights
        ],
        full_epochs=4,
    )
    run = b1.Run("nasflow", 0, threshold=0.99, budget=1e9)
    b1.add_ready_models(run, spec, result)
    assert len(run.events) == 1
    event = run.events[0]
    assert (event["val"], event["test"]) == (0.9, 0.91)
    assert event["train_cpu"] == pytest.approx(2.0 * spec.train.epochs)  # mean epoch x recipe
    assert "ready model fine-tuned 2 epochs" in event["note"]


def test_b1_counts_each_ready_model_when_its_last_epoch_ended() -> None:
    """With the study's ``trained_cpu_seconds``, ready models are events at the run's CPU
    time their weights were final, in that order (the incumbent is read from the events
    before each)."""
    from nasflow.record import FineTuned, FineTuneResult
    from nasflow.search import load_study_file

    b1 = _load("search_efficiency.py")
    spec = load_study_file(ROOT / "studies" / "mnist1d_front.py")
    arch = Arch({"x": 1}).to_json()
    late = FineTuned(3, arch, 0.9, [0.8, 0.9], [1.0, 3.0], 0.91, "ready", 50.0)
    early = FineTuned(4, arch, 0.8, [0.7], [2.0], 0.72, "stopped", 20.0)
    result = FineTuneResult([late, early], full_epochs=2)
    # A run 100 CPU-s old (an event is never placed after the run's clock).
    run = b1.Run("nasflow", 0, threshold=0.99, budget=1e9, c0=b1.cpu_seconds() - 100)
    b1.add_ready_models(run, spec, result, started=0.0)
    assert [e["cpu"] for e in run.events] == [20.0, 50.0]
    assert [e["test"] for e in run.events] == [0.72, 0.91]


# ---------------------------------------------------------------------------- smoke runs
@pytest.mark.slow
def test_b1_quick_runs_every_method(tmp_path: Path) -> None:
    out = tmp_path / "b1.json"
    proc = _bench("search_efficiency", "--quick", "--json", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    runs = {r["method"]: r for r in report["runs"]}
    assert set(runs) == {"nasflow", "random", "optuna"}
    assert 0.9 < report["threshold"] < report["best"] <= 1.0
    for r in runs.values():
        assert r["cpu"] > 0
        assert [e["cpu"] for e in r["events"]] == sorted(e["cpu"] for e in r["events"])
    # nasflow ran its whole pipeline before retraining its first candidate.
    assert runs["nasflow"]["trained"] == 1
    assert runs["nasflow"]["phases"]["supernet"] > 0 and runs["nasflow"]["phases"]["search"] > 0
    assert runs["nasflow"]["events"][0]["cpu"] > runs["nasflow"]["phases"]["search_cpu"]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert [r.split("|")[1].strip() for r in rows[1:]] == ["nasflow", "random", "optuna"]


@pytest.mark.slow
def test_b2_quick_ranks_every_cell_and_saves_the_features(tmp_path: Path) -> None:
    out, rows = tmp_path / "b2.json", tmp_path / "rows.csv"
    gt = ROOT / "benchmarks/data/mnist1d_ground_truth.csv"
    proc = _bench(
        "b2", "--quick", "--json", str(out), "--scores-out", str(rows), "--gt", str(gt), str(gt),
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    # The same table twice: a retrain that ranks exactly like the first training.
    assert report["archs"] == 8 and report["retrain_tau"] == [1.0] and report["seeds"] == [0]
    cells = report["cells"]
    assert list(cells)[:5] == ["all", "cost Q1", "cost Q2", "cost Q3", "cost Q4"]
    assert [c for c in cells if c.startswith("width=")] and sum(
        cells[f"cost Q{q}"]["n"] for q in range(1, 5)
    ) == 8
    taus = cells["all"]["taus"]
    assert set(taus) == B2_COLUMNS
    assert all(-1 <= t[0] <= 1 and t[1] <= t[2] for t in taus.values())
    assert cells["all"]["best_free"] in ("params", "FLOPs", "width", "synflow", "NWOT")
    assert report["supernet"]["0"]["epochs"] == 1 and "| all | 8 |" in proc.stdout
    with rows.open(newline="") as f:
        saved = list(csv.DictReader(f))
    assert len(saved) == 8 and {r["supernet_seed"] for r in saved} == {"0"}
    for r in saved:
        assert 0 <= float(r["supernet_accuracy"]) <= 1 and float(r["supernet_loss"]) > 0
        assert float(r["flops"]) > 0 and float(r["predicted_cost"]) > 0 and r["width"]
        assert r["synflow"] and r["nwot"] and r["test_seed0"] == r["test_seed1"]
    # --from-scores re-analyses the saved features without training: the same cells.
    again = tmp_path / "again.json"
    proc = _bench("b2", "--quick", "--from-scores", str(rows), "--json", str(again), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(again.read_text())["cells"] == cells


@pytest.mark.slow
def test_ground_truth_quick_writes_rows_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "gt.csv"
    for _ in range(2):  # the second run finds both rows done and trains nothing
        proc = _bench("ground_truth", "--quick", "--out", str(out), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert "[1/2]" not in proc.stdout
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["index"] for r in rows] == ["0", "1"]
    for r in rows:
        Arch.from_json(r["arch"])
        assert 0 <= float(r["test_accuracy"]) <= 1 and int(r["params"]) > 0


def test_b6_replays_the_kept_weights_margin() -> None:
    """``suite_runs.py --kept-margins``: a fine-tuned lead within the margin keeps the
    retrain; the replay counts the picks that kept the lower-testing weights."""
    from dataclasses import asdict

    from nasflow.record import FineTuned

    b6 = _load("suite_runs.py")
    study = str(ROOT / "studies" / "mnist1d_front.py")
    arch = Arch({"x": 1}).to_json()

    def row(ft_val: float, ft_test: float, val: float, test: float) -> dict:
        cand = FineTuned(7, arch, 0.9, [0.5, ft_val], [1.0, 1.0], ft_test, "ready")
        record = {"candidates": [asdict(cand)], "rungs": [1, 2], "val_samples": 500}
        return {
            "study": study,
            "kept_trial": 7,
            "kept_val": val,
            "kept_test": test,
            "finetuned": record,
        }

    rows = [
        row(0.982, 0.968, 0.980, 0.984),  # a 0.2-point lead (< 1 SE), testing 1.6 lower
        row(0.990, 0.985, 0.950, 0.960),  # a 4-point lead, testing higher
    ]
    table = b6.kept_margins(rows, [0, 1]).splitlines()
    # margin 0: both fine-tuned, one of them the lower-testing weights; margin 1: one.
    assert table[2].startswith("| 0 | 2 | 2 | 1 |")
    assert table[3].startswith("| 1 | 2 | 1 | 0 |")


def test_b6_ranks_the_table_by_accuracy_cross_entropy_and_their_rank_sum() -> None:
    """``suite_runs.score_taus``: cross-entropy ranks lower-is-better, the rank sum breaks
    the accuracy ties that a small validation split leaves."""
    b6 = _load("suite_runs.py")
    test = [0.1, 0.2, 0.3, 0.4]
    # Accuracy ties the two best; cross-entropy orders all four correctly.
    taus = b6.score_taus([0.5, 0.6, 0.7, 0.7], [2.0, 1.5, 1.2, 1.0], test)
    assert taus["loss"] == pytest.approx(1.0)
    assert taus["accuracy"] < taus["rank_sum"] == pytest.approx(1.0)
    # Reversed cross-entropies: the loss ranks the table backwards.
    assert b6.score_taus(test, [1.0, 1.2, 1.5, 2.0], test)["loss"] == pytest.approx(-1.0)


def _finalist(trial: int, **fields: float) -> dict:
    """One retrained finalist of a replayed run: ``fields`` its recorded numbers."""
    return {"trial": trial, "params": 100, "protected": True, **fields}


def _finalists_run(finalists: list[dict]) -> dict:
    """One replayed B6 run of the proving ground, as ``finalists.py`` records it."""
    return {
        "study": str(ROOT / "studies" / "mnist1d_front.py"),
        "name": "g",
        "seed": 0,
        "val_samples": 500,
        "kept_trial": 1,
        "kept_test": 0.97,
        "anchors": [],
        "finalists": finalists,
    }


def test_finalists_replays_the_rules_for_the_kept_finalist() -> None:
    """``finalists.py``: "largest within 1 SE" keeps the biggest of the finalists tied on
    fine-tuned validation, the oracle the best retrain; an anchor validating higher by
    more than a standard error replaces any pick."""
    fin = _load("finalists.py")

    def finalist(trial, params, ft_val, val, test, protected=True):
        return {
            "trial": trial,
            "params": params,
            "protected": protected,
            "finetuned_val": ft_val,
            "retrain_val": val,
            "retrain_test": test,
        }

    run = _finalists_run(
        [
            finalist(1, 100, 0.980, 0.97, 0.970),  # the best fine-tuned validation
            finalist(2, 300, 0.975, 0.98, 0.984),  # 0.5 points lower: within 1 SE (0.63)
            finalist(3, 900, 0.950, 0.98, 0.960, protected=False),  # 3 points lower
        ]
    )
    p = fin.picks(run)
    assert p["shipped"]["trial"] == 1 and p["best supernet score"]["trial"] == 1
    assert p["largest within 1 SE"]["trial"] == 2 and p["largest"]["trial"] == 3
    assert p["oracle"]["trial"] == 2
    # Retraining the two best fine-tuned and keeping the better retrained validation.
    assert p["best retrain val of 2"]["trial"] == 2
    assert fin.kept_test(run, p["shipped"]) == 0.970
    anchored = {**run, "anchors": [{"val_accuracy": 0.995, "test_accuracy": 0.99}]}
    assert fin.kept_test(anchored, p["shipped"]) == 0.99  # 2.5 points above: > 1 SE
    assert fin.kept_test(anchored, p["largest"]) == 0.99
    # Fine-tuned weights validating 9 points above the retrain (> 2 SE) are the kept ones.
    ahead = {**finalist(5, 100, 0.99, 0.90, 0.89), "finetuned_test": 0.95}
    assert fin.kept_test(run, ahead) == 0.95
    assert fin.kept_test(run, {**ahead, "finetuned_val": 0.905}) == 0.89  # within 2 SE
    near = {**run, "anchors": [{"val_accuracy": 0.975, "test_accuracy": 0.99}]}
    assert fin.kept_test(near, p["shipped"]) == 0.970  # lower: the pick stays
    lines = fin.report([run]).splitlines()
    row = next(line for line in lines if line.startswith("| largest within 1 SE |"))
    assert "| 1 | 1 | 1 / 0 |" in row  # one run, differs, beats more of the table
    assert "+0.00 points" in lines[-1]  # the kept finalist's replayed retrain: itself


def test_finalists_pairs_two_rules_per_ground_and_seed() -> None:
    """``finalists.py --paired``: each rule against ``against`` on the same runs, runs of
    one ground and seed averaged into one pair, and an unknown rule refused by name."""
    fin = _load("finalists.py")
    fs = [
        _finalist(1, finetuned_val=0.99, retrain_val=0.97, retrain_test=0.960),
        _finalist(2, finetuned_val=0.98, retrain_val=0.98, retrain_test=0.985),
    ]
    runs = [_finalists_run(fs), _finalists_run(fs), {**_finalists_run(fs), "seed": 1}]
    text = fin.paired_report(runs, "best retrain val of all", ["shipped"]).splitlines()
    assert text[0].startswith("shipped − best retrain val of all")
    # The shipped rule keeps trial 1 (best fine-tuned: 96.0% test), the other trial 2
    # (best retrain: 98.5%): 2.5 points of test lower in both seeds' pairs.
    row = next(line for line in text if line.startswith("| g | 2 |"))
    assert row.endswith("| -2.5 [-2.5, -2.5] (0/0/2) |")
    with pytest.raises(ValueError, match="'best of 9' is not a rule here"):
        fin.paired_report(runs, "shipped", ["best of 9"])


def test_finalists_chooses_on_two_training_seeds() -> None:
    """``finalists.py`` with second retrains: the architecture with the best mean of its two
    retrains' validation is chosen, with the weights of its better-validating seed; the
    best single retrain of all can be another; the report pairs rules with ``against``."""
    fin = _load("finalists.py")

    def finalist(trial, ft_val, val, test, val2, test2):
        return {
            "trial": trial,
            "params": 100 * trial,
            "protected": True,
            "finetuned_val": ft_val,
            "retrain_val": val,
            "retrain_test": test,
            "retrain2_val": val2,
            "retrain2_test": test2,
        }

    run = _finalists_run(
        [
            finalist(1, 0.99, 0.990, 0.970, 0.950, 0.950),  # one lucky seed: mean 0.970
            finalist(2, 0.98, 0.980, 0.975, 0.985, 0.985),  # steady: mean 0.9825
        ]
    )
    p = fin.picks(run)
    assert p["best retrain val of all"]["trial"] == 1
    assert p["2 seeds of 2: best single val"]["trial"] == 1
    mean = p["2 seeds of 2: best mean val, better seed"]
    assert mean["trial"] == 2 and fin.kept_test(run, mean) == 0.985  # its second seed
    assert fin.kept_test(run, p["2 seeds of 2: best mean val, first seed"]) == 0.975
    # The shipped pick (trial 1) with its better seed: its first, 0.990 against 0.950.
    assert fin.kept_test(run, p["best retrain val of 2, its better seed"]) == 0.970
    lines = fin.report([run], against="best retrain val of all").splitlines()
    assert "differs from best retrain val of all" in lines[0]
    row = next(x for x in lines if x.startswith("| 2 seeds of 2: best mean val, better seed |"))
    assert "| 1 | 1 | 1 / 0 |" in row
    with pytest.raises(ValueError, match="'nope'"):
        fin.report([run], against="nope")


def test_finalists_ranks_the_retrains_by_accuracy_and_cross_entropy() -> None:
    """``finalists.py``'s rank-sum rule: among the four retrained finalists, the lowest sum
    of the rank by validation accuracy (ties share their mean rank) and by validation
    cross-entropy; absent where a run's retrains have no cross-entropy."""
    fin = _load("finalists.py")

    def finalist(trial, ft_val, val, loss):
        return _finalist(
            trial, finetuned_val=ft_val, retrain_val=val, retrain_test=val, retrain_val_loss=loss
        )

    run = _finalists_run(
        [
            finalist(1, 0.99, 0.980, 0.090),  # accuracy rank 1.5, loss rank 3: 4.5
            finalist(2, 0.98, 0.980, 0.060),  # 1.5 + 1 = 2.5: the rank sum's pick
            finalist(3, 0.97, 0.970, 0.070),  # 3 + 2 = 5
            finalist(4, 0.96, 0.960, 0.100),  # 4 + 4 = 8
            finalist(5, 0.95, 0.999, 0.010),  # not among the four best fine-tuned
        ]
    )
    p = fin.picks(run)
    assert p["best retrain val of 4"]["trial"] == 1  # the tie goes to the first
    assert p["rank sum of retrain val accuracy and cross-entropy of 4"]["trial"] == 2
    for f in run["finalists"]:
        del f["retrain_val_loss"]
    assert "rank sum of retrain val accuracy and cross-entropy of 4" not in fin.picks(run)


def test_finalists_compares_one_training_with_two_over_three_retrains() -> None:
    """``finalists.trainings_report``: per pairing of a finalist's three retrains, the
    one-training choice on each, the two-training choice (best mean validation, better
    seed kept) and "one more"; runs without the three are left out."""
    fin = _load("finalists.py")

    def finalist(trial, first, again, second):
        return _finalist(
            trial,
            finetuned_val=1.0 - trial / 100,
            retrain_val_first=first[0],
            retrain_test_first=first[1],
            retrain_val=again[0],
            retrain_test=again[1],
            retrain_val_loss=0.1,
            retrain2_val=second[0],
            retrain2_test=second[1],
        )

    low = (0.5, 0.5)
    run = _finalists_run(
        [
            # Lucky once (validates 0.99 on its first training), tests below the table.
            finalist(1, (0.99, 0.90), (0.95, 0.90), (0.95, 0.90)),
            # Steady at 0.98, tests above every table architecture.
            finalist(2, (0.98, 0.999), (0.98, 0.999), (0.98, 0.999)),
            finalist(3, low, low, low),
            finalist(4, low, low, low),
        ]
    )
    lines = fin.trainings_report([run]).splitlines()
    assert lines[2] == "| first + again | 1.0% / 100.0% | 100.0% | 1.0% / 100.0% |"
    assert lines[3] == "| first + second | 1.0% / 100.0% | 100.0% | 1.0% / 100.0% |"
    assert lines[4] == "| again + second | 100.0% / 100.0% | 100.0% | 100.0% / 100.0% |"
    assert lines[-1].startswith(
        "1 runs; median |validation difference| between the first retrain and its rerun "
        "0.00 points"
    )
    for f in run["finalists"]:
        del f["retrain2_val"]
    assert fin.trainings_report([run]) == ""


@pytest.mark.slow  # the anchor rule's standard error reads the proving ground's split size
def test_finalists_one_more_training_keeps_the_better_validating_retrain() -> None:
    """``finalists.one_more``: the kept pick's second retrain replaces its first only when
    it validates higher, then the same anchor rule applies; the report pairs the two. (The
    proving ground's data is generated for its validation split's size: 8.6 CPU-s with an
    empty cache on a slow VM, over the limit of a quick test there under load.)"""
    fin = _load("finalists.py")
    study = str(ROOT / "studies" / "mnist1d_front.py")
    row = {
        "study": study,
        "name": "g",
        "seed": 0,
        "kept_trial": 7,
        "kept_val": 0.97,
        "kept_test": 0.90,
        "kept_beats": 0.01,
        "finetuned": None,
        "anchors": [],
    }
    out = {"study": study, "name": "g", "kept_val": 0.97, "second_cpu_s": 9.0}
    up = fin.one_more({**out, "second_val": 0.98, "second_test": 0.999}, row)
    assert (up["base_share"], up["one_more_share"]) == (0.01, 1.0)
    tie = fin.one_more({**out, "second_val": 0.97, "second_test": 0.999}, row)
    assert tie["one_more_share"] == 0.01  # a tie keeps the first retrain
    # An anchor validating far above both replaces either.
    anchored = {**row, "anchors": [{"val_accuracy": 0.999, "test_accuracy": 0.5, "beats": 0.0}]}
    both = fin.one_more({**out, "second_val": 0.98, "second_test": 0.999}, anchored)
    assert (both["base_weights"], both["one_more_share"]) == ("anchor", 0.0)
    lines = fin.one_more_report([up, tie]).splitlines()
    assert lines[2].startswith("| the run's own kept model | 2 | — | 1.0% | 1% |")
    assert lines[3].startswith("| one more training | 2 | 1 / 0 | 50.5% | 1% |")


def test_b7_finds_the_largest_architecture_of_a_space() -> None:
    """Coordinate ascent over the choices: no sampled architecture has more parameters,
    and no single change to its choices adds any."""
    import numpy as np

    from tests._spaces import tiny_mnist1d

    b7 = _load("largest.py")
    space = tiny_mnist1d()
    arch, params = b7.largest(space)
    assert params == b7.n_params(space, arch)
    rng = np.random.default_rng(0)
    assert all(b7.n_params(space, space.sample(rng)) <= params for _ in range(30))
    for c in space.choices:
        for v in c.values:
            assert b7.n_params(space, Arch({**dict(arch), c.label: v})) <= params


def test_b1_counts_an_event_at_the_time_it_was_ready_never_in_the_future() -> None:
    b1 = _load("search_efficiency.py")
    run = b1.Run("nasflow", 0, threshold=0.99, budget=1e9, full=True)
    run.add(_arch(0), val=0.9, test=0.9, at=0.0)
    run.add(_arch(1), val=0.9, test=0.9, at=1e9)  # a clock ahead of the run's: now
    assert run.events[0]["cpu"] == 0.0
    assert 0 < run.events[1]["cpu"] < 1e9


def _b6_row(**fields: object) -> dict:
    """A recorded B6 run (``suite_runs.py --json``) of the proving ground whose search kept
    its retrain (trial 7, 95% validation and test, beating half the table) and trained no
    anchors; ``fields`` override."""
    row = {
        "study": str(ROOT / "studies" / "mnist1d_front.py"),
        "name": "a",
        "seed": 0,
        "kept_trial": 7,
        "kept_val": 0.95,
        "kept_test": 0.95,
        "kept_beats": 0.5,
        "finetuned": None,
        "anchors": [],
    }
    return {**row, **fields}


def test_b6_replays_keeping_the_best_anchor_only_beyond_the_margin() -> None:
    """``suite_runs.py --anchor-margins``: the best-validating anchor replaces the kept
    model only where it validates higher by more than the margin."""
    b6 = _load("suite_runs.py")

    def row(name: str, kept_val: float, anchor_val: float) -> dict:
        return _b6_row(
            name=name,
            kept_val=kept_val,
            anchors=[
                {"val_accuracy": anchor_val, "test_accuracy": 0.97, "beats": 0.9},
                {"val_accuracy": anchor_val - 0.1, "test_accuracy": 0.99, "beats": 1.0},
            ],
        )

    # 500 validation samples near 95%: one standard error is about 1 point.
    rows = [row("a", 0.950, 0.955), row("b", 0.950, 0.990)]
    table = b6.anchor_margins(rows, [0, 2]).splitlines()
    assert table[2].startswith("| search only (no anchor kept) | 2 | 0 | 50.0% | 50% |")
    assert table[3].startswith("| anchor if > 0 SE | 2 | 2 | 90.0% | 90% |")
    assert table[4].startswith("| anchor if > 2 SE | 2 | 1 | 70.0% | 50% |")
    assert table[5].startswith("| best anchor alone | 2 | 2 | 90.0% |")


def test_b6_checks_the_replayed_rule_against_the_runs_own_kept_record() -> None:
    """``suite_runs.replay_agrees``: the replay keeps the run's recorded model (same
    weights, source and trial), and a record that says otherwise is counted as a
    disagreement in the summary."""
    b6 = _load("suite_runs.py")
    row = _b6_row(
        anchors=[{"val_accuracy": 0.99, "test_accuracy": 0.97, "beats": 0.9, "trial": 2}],
        supernet_tau=0.5,
        run_cpu_s=1.0,
    )
    anchor = {**row, "kept_record": {"trial": 2, "weights": "retrained", "source": "anchor"}}
    search = {**row, "kept_record": {"trial": 7, "weights": "retrained", "source": "search"}}
    assert b6.replay_agrees(anchor) and not b6.replay_agrees(search)
    calm = {**search, "anchors": []}
    assert b6.replay_agrees(calm)
    assert not b6.replay_agrees({**calm, "kept_record": {**calm["kept_record"], "trial": 8}})
    assert "in 2 of 3 runs" in b6.summary([anchor, search, calm])


def test_b8_replays_the_anchor_rule_on_a_table(tmp_path: Path) -> None:
    """``anchors.py``: the anchors are the study's rule applied to the table's
    architectures; their hypervolume is read from the table's own trainings."""
    b8 = _load("anchors.py")
    rows = b8.replay(ROOT / "studies" / "mnist1d_front.py", [1, 3], draws=20)
    assert [r["n"] for r in rows] == [1, 3] and rows[1]["anchors"] == 3
    for r in rows:
        assert 0 < r["hv"] <= 1 and 0 < r["random_hv"] <= 1 and r["cpu"] > 0
        assert 0 <= r["best_beats"] <= 1
    # n=1 is the largest architecture, the most expensive of the three.
    assert rows[0]["cpu"] < rows[1]["cpu"]
    assert "| mnist1d_front | 200 |" in b8.markdown(rows)


@pytest.mark.slow
def test_the_split_benchmarks_run_split_and_shared(tmp_path: Path) -> None:
    study = write_study(tmp_path, name="split_cost")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/split_cost.py"), "--studies", str(study)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = proc.stdout.strip().splitlines()[-1].split("|")
    # The tiny space (base 4 channels) has widths 0.5, 0.75, 1.0 ... one copy per width.
    shared, split = (int(v.replace(",", "")) for v in row[7].split("→"))
    widths = len(load_study_file(study).space.choice("width").values)
    assert row[1].strip() == "split_cost" and split == widths * shared
    assert float(row[6].strip().lstrip("x")) > 0
    out = tmp_path / "b2.json"
    gt = ROOT / "benchmarks/data/mnist1d_ground_truth.csv"
    proc = _bench(
        "b2", "--quick", "--samplers", "fair", "--split", "width", "--json", str(out),
        "--gt", str(gt), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["supernet"]["0"]["split"] == "width" and report["seeds"] == [0]


def test_b6_pairs_two_batches_by_ground_and_seed() -> None:
    """``suite_runs.py --paired``: runs are paired by (ground, seed), unpaired ones left
    out, and each ground's median is held against its bar (90% on the proving ground,
    80% on a variant)."""
    b6 = _load("suite_runs.py")

    def row(name: str, seed: int, beats: float) -> dict:
        return _b6_row(name=name, seed=seed, kept_beats=beats)

    base = [row("mnist1d_front", s, v) for s, v in ((0, 0.85), (1, 0.92), (2, 0.95))]
    base += [row("suite_hard", 0, 0.81), row("suite_hard", 9, 0.1)]
    other = [row("mnist1d_front", s, v) for s, v in ((0, 0.95), (1, 0.92), (2, 0.90))]
    other += [row("suite_hard", 0, 0.79)]
    text = b6.paired(base, other, ("shared", "split")).splitlines()
    assert text[0].startswith("4 pairs (1 + 0 runs unpaired); mean share beaten: shared 88.2%")
    assert "split 89.0%; split better in 1, worse in 2, equal in 1" in text[0]
    assert text[3] == "| mnist1d_front | 90% | 92% (85%, 92%, 95%) | 92% (95%, 92%, 90%) |"
    assert text[4] == "| suite_hard | 80% | 81% (81%) | 79% (missed) (79%) |"
    assert text[5] == "bars met: shared 2, split 1"
    with pytest.raises(ValueError, match="no \\(ground, seed\\) pair"):
        b6.paired(base, [row("suite_noisy", 0, 0.5)], ("a", "b"))


def test_augment_quick_times_both_crop_flips_and_a_step(capsys) -> None:
    assert _load("augment.py").main(["--quick"]) == 0
    rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| image")]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    loop, gather, step = float(cells[1]), float(cells[2]), float(cells[4])
    assert loop > 0 and gather > 0 and step > 0
    # (the ratios of the unrounded times: equal to the printed times' within their rounding)
    assert float(cells[3][1:]) == pytest.approx(loop / gather, rel=0.05, abs=0.1)
    assert float(cells[5]) == pytest.approx(loop / step, rel=0.05, abs=0.01)


@pytest.mark.slow
def test_calibration_cut_quick_runs_both_sides_and_writes_every_row(tmp_path, capsys) -> None:
    out = tmp_path / "cut.json"
    assert _load("calibration_cut.py").main(["--quick", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["cut_on"] for r in rows] == [True, False] and not rows[1]["cut"]
    assert all(r["cpu_s"] > 0 and r["wall_s"] > 0 and "amp" in r["alone"] for r in rows)
    table = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| 1 |")]
    assert len(table) == 1 and table[0].count("|") == 10


@pytest.mark.slow
def test_score_split_quick_times_the_three_steps_of_a_score(capsys) -> None:
    assert _load("score_split.py").main(["--quick"]) == 0
    (row,) = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| mnist1d")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    extract, batch_norm, validate = (float(c) for c in cells[1:4])
    assert extract > 0 and batch_norm > 0 and validate > 0
    share = validate / (extract + batch_norm + validate)
    assert abs(int(cells[4].rstrip("%")) - 100 * share) <= 1.5  # of the rounded times


@pytest.mark.slow
def test_supernet_ddp_quick_trains_on_two_ranks_and_one_process(tmp_path) -> None:
    # Run as a script: the spawned ranks import their function from it.
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "supernet_ddp.py"), "--quick", "--ranks", "2"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "repeat 0   one: training" in out and "repeat 0 ranks: training" in out
    assert re.search(r"training x\d+\.\d\d, wall x\d+\.\d\d", out), out


def test_b1_replays_go_on_to_the_budget_after_their_success() -> None:
    """A replayed peer keeps training after its success, as B1's real runs do: its
    hypervolume curve is not held flat from its success on (it was, until 2026-11-28)."""
    tables = _load("_b1_tables.py")
    n = 6
    gt = tables.GroundTruth(
        archs=[f'{{"a": {i}}}' for i in range(n)],
        val=np.array([[0.9, 0.5, 0.6, 0.7, 0.8, 0.85]]),
        test=np.array([[0.9, 0.5, 0.6, 0.7, 0.8, 0.85]]),
        cpu=np.full((1, n), 2.0),
        val_curves=[[[v / 2, v] for v in (0.9, 0.5, 0.6, 0.7, 0.8, 0.85)]],
        cpu_curves=[[[1.0, 1.0]] * n],
    )
    for method in ("random", "hyperband"):
        for seed in range(5):
            success, started, events = tables.replay(gt, 0.5, method, seed, budget=100.0)
            assert success == events[0]["cpu"]  # the first training passes the bar
            # Trainings started until the success, as before (not the whole table's six).
            assert started == 1 if method == "random" else started < n
            if method == "random":  # every architecture trained by the budget
                assert len(events) == n
            assert events[-1]["cpu"] > success


def test_stored_summary_lines_name_no_machine_paths() -> None:
    """``suite_runs.portable``: a row's summary says ``RUNS`` for the run's folder and ``~``
    for the home folder (the default cost cache's), never this machine's paths."""
    from pathlib import Path

    b6 = _load("suite_runs.py")
    home = Path.home()
    line = (
        f"study 's' in sqlite:////tmp/tmpab12/s/study.db; cost table sqlite:///{home}/.cache/c.db"
    )
    got = b6.portable(line, "/tmp/tmpab12")
    assert got == "study 's' in sqlite:///RUNS/s/study.db; cost table sqlite:///~/.cache/c.db"
    assert str(home) + "/" not in got and "/tmp/tmpab12" not in got


def _clock_table(tables):  # type: ignore[no-untyped-def]
    """Three architectures whose table cost is 2, 4 and 8 CPU-s, parameters 100, 200, 400
    (cost exactly proportional to parameters: the log-log fit is exact)."""
    archs = [f'{{"a": {i}}}' for i in range(3)]
    return tables.GroundTruth(
        archs=archs,
        val=np.array([[0.5, 0.6, 0.7]]),
        test=np.array([[0.5, 0.6, 0.7]]),
        cpu=np.array([[2.0, 4.0, 8.0]]),
        val_curves=[[[0.5], [0.6], [0.7]]],
        cpu_curves=[[[2.0], [4.0], [8.0]]],
        params=np.array([100.0, 200.0, 400.0]),
    )


def test_b1_clock_ratio_reads_a_runs_clock_from_its_trainings_from_scratch() -> None:
    """A run whose trainings cost 1.5 x the table's has ratio 1.5, whether its
    architectures are in the table or costed by parameters; fine-tuned models (their cost
    an estimate) do not count; on the table's clock its hypervolume is the table's own."""
    tables = _load("_b1_tables.py")
    gt = _clock_table(tables)
    events = [
        {"cpu": 3.0, "arch": '{"a": 0}', "test": 0.5, "train_cpu": 3.0, "note": "trial 0"},
        {"cpu": 9.0, "arch": '{"a": 1}', "test": 0.6, "train_cpu": 6.0, "note": "trial 1"},
        # not in the table: 300 parameters -> 6 CPU-s on the table's fit, 9 measured
        {"cpu": 18.0, "arch": '{"a": 9}', "test": 0.65, "train_cpu": 9.0, "note": "x"},
        # a fine-tuned estimate far off the clock: left out of the ratio
        {"cpu": 20.0, "arch": '{"a": 2}', "test": 0.7, "train_cpu": 100.0, "note": "fine-tuned"},
    ]
    run = {"method": "nasflow", "seed": 0, "cpu": 21.0, "events": events}
    params = {'{"a": 9}': 300}
    ratio, exact, fitted = tables.clock_ratio(run, gt, params.__getitem__)
    assert ratio == pytest.approx(1.5) and (exact, fitted) == (2, 1)
    moved = tables.on_table_clock(run, ratio)
    assert [e["cpu"] for e in moved["events"]] == pytest.approx([2.0, 6.0, 12.0, 20.0 / 1.5])
    assert moved["events"][0]["train_cpu"] == pytest.approx(2.0)
    assert moved["cpu"] == pytest.approx(14.0) and moved["clock_ratio"] == pytest.approx(1.5)
    assert run["events"][0]["cpu"] == 3.0  # the stored run is not changed
    # The two table architectures on the table's clock: the hypervolume the table's own
    # points give (seen as a run), where on the run's own clock it is lower.
    both = {"events": moved["events"][:2]}
    table_run = [{"cpu": 0.0, "test": t, "train_cpu": c} for t, c in ((0.5, 2.0), (0.6, 4.0))]
    assert tables.hv_curve(both["events"], [10.0], gt) == pytest.approx(
        tables.hv_curve(table_run, [10.0], gt)
    )
    assert tables.hv_curve(events[:2], [10.0], gt)[0] < tables.hv_curve(table_run, [10.0], gt)[0]


def test_b1_clock_ratio_is_nan_without_a_training_to_read() -> None:
    """Only fine-tuned estimates, or architectures neither in the table nor costable (no
    parameters recorded): nothing sets the clock."""
    tables = _load("_b1_tables.py")
    gt = _clock_table(tables)
    ft = {"cpu": 1.0, "arch": '{"a": 0}', "test": 0.5, "train_cpu": 3.0, "note": "fine-tuned"}
    assert np.isnan(tables.clock_ratio({"events": [ft]}, gt, lambda a: 1)[0])
    gt.params = None
    other = {**ft, "arch": '{"a": 7}', "note": "trial 3"}
    assert np.isnan(tables.clock_ratio({"events": [other]}, gt, lambda a: 1)[0])


def test_b1_study_end_is_phase_3s_last_retrain_not_b1s() -> None:
    """In a B1 run (retrains on to its budget after the study) the study's own end is its
    ``retrain_top``-th retrain; in a paired row, its last trained model."""
    tables = _load("_b1_tables.py")
    events = [{"cpu": 5.0, "note": "zero-cost anchor 1"}] + [
        {"cpu": 10.0 * k, "note": f"trial {k}, retrain rank {k}"} for k in range(1, 7)
    ]
    assert tables.study_end({"cpu": 61.0, "events": events}, 4) == 40.0
    assert tables.study_end({"cpu": 61.0, "events": events}, 7) is None
    assert tables.study_end({"events": events}, 4) == 60.0


def test_b1_without_finetuning_drops_the_fine_tuned_and_moves_the_retrains_earlier() -> None:
    """The replay of a study without its fine-tuning phase: fine-tuned models gone, every
    retrain earlier by the phase's seconds on the run's clock (divided by its ratio once
    the run is on the table's), anchors where they were."""
    tables = _load("_b1_tables.py")
    events = [
        {"cpu": 5.0, "note": "trial 0, zero-cost anchor 1, from scratch"},
        {"cpu": 40.0, "note": "trial 7, ready model fine-tuned 4 epochs (ready)"},
        {"cpu": 60.0, "note": "trial 7, retrain rank 1"},
        {"cpu": 70.0, "note": "trial 9, retrain rank 2"},
    ]
    run = {"cpu": 80.0, "events": events, "phases": {"finetune": 20.0}}
    got = tables.without_finetuning(run)
    assert [(e["cpu"], e["note"][:8]) for e in got["events"]] == [
        (5.0, "trial 0,"),
        (40.0, "trial 7,"),
        (50.0, "trial 9,"),
    ]
    assert "fine-tuned" not in " ".join(e["note"] for e in got["events"])
    on_table = tables.without_finetuning({**run, "clock_ratio": 2.0})
    assert [e["cpu"] for e in on_table["events"]] == [5.0, 50.0, 60.0]
    assert run["events"][2]["cpu"] == 60.0  # the recorded run is not changed


def test_retrain_spread_prints_every_ground_and_rule(capsys) -> None:
    """The replay's command prints one row per ground and rule from the committed score
    files and tables (phase 3's own rule is checked against it in ``tests/pipeline``)."""
    mod = _load("retrain_spread.py")
    data = ROOT / "benchmarks" / "data"
    assert (
        mod.main(
            [
                "--ground",
                "hard",
                str(data / "b2_scores" / "hard_fair12_plain.csv"),
                str(data / "suite" / "hard_seed0.csv"),
                "--rules",
                "4:0",
                "4:2",
            ]
        )
        == 0
    )
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| hard")]
    assert [r.split("|")[2].strip() for r in rows] == ["4 : 0", "4 : 2"]
    hv = [float(r.split("|")[3]) for r in rows]
    assert all(0 < h <= 1 for h in hv)
    with pytest.raises(SystemExit):
        mod.main(["--ground", "hard", "x.csv", "y.csv", "--rules", "0:2"])
    with pytest.raises(SystemExit):
        mod.main(["--ground", "hard", "x.csv", "y.csv", "--anchors", "-1"])


def test_retrain_spread_layers_train_more_each_depth_against_as_many_random_draws() -> None:
    """``--layers``: each depth adds the next non-dominated layer of the screened set (more
    trained models, a front at least as high), and the random draws are of as many."""
    mod = _load("retrain_spread.py")
    data = ROOT / "benchmarks" / "data"
    scores = mod.load_scores(data / "b2_scores" / "hard_fair12_plain.csv")
    table = mod.load_table([data / "suite" / "hard_seed0.csv"])
    rows = mod.layers_vs_random(scores, table, 3, draws=20)
    for seed in np.unique(rows[:, 0]):
        mine = rows[rows[:, 0] == seed]
        assert list(mine[:, 1]) == [1, 2, 3]
        assert (np.diff(mine[:, 2]) > 0).all() and (np.diff(mine[:, 3]) >= 0).all()
        assert (np.diff(mine[:, 5]) > 0).all()  # more trainings, more CPU
    assert ((rows[:, 4] > 0) & (rows[:, 4] <= 1)).all()
    # One layer deep, the anchors and the screened Pareto set: the rules' ceiling.
    top = mod.replay_ground(scores, table, [(400, 0)])[(400, 0)]
    assert np.allclose(rows[rows[:, 1] == 1][:, 3], top[:, 0])
    with pytest.raises(SystemExit):
        mod.main(["--ground", "hard", "x.csv", "y.csv", "--layers", "-1"])
