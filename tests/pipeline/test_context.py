"""The phases share a frozen context and take their inputs as arguments; the kept model is
decided once, by the runner, and the summary states that decision."""

from __future__ import annotations

import dataclasses
import inspect
import threading
from pathlib import Path

import pytest

from nasflow.pipeline._context import RunContext, Winner
from nasflow.pipeline._kept import KeptDecision, KeptWeights
from nasflow.pipeline._phases import (
    _anchors,
    _finetune,
    _retrain,
    _screening,
    _supernet,
    _trust,
)
from nasflow.pipeline._phases._retrain import winner_trials
from nasflow.pipeline._result._summary import _outcome_lines
from nasflow.pipeline._runner import RunResult
from nasflow.record import FineTuned, FineTuneResult, RunFolder
from nasflow.search import load_study_file
from nasflow.space import Arch
from nasflow.storage import resolve_storage
from tests._study_template import write_study
from tests.report._studies import arch_json, make_study


def test_the_context_holds_what_every_phase_reads_and_is_frozen(tmp_path: Path) -> None:
    fields = [f.name for f in dataclasses.fields(RunContext)]
    assert fields == [
        "spec",
        "folder",
        "storage",
        "study",
        "device",
        "progress",
        "stop",
        "started",
        "started_cpu",
        "tasks",
    ]
    spec = load_study_file(write_study(tmp_path))
    storage = resolve_storage(None, tmp_path / "study.db")
    ctx = RunContext(
        spec, RunFolder(tmp_path), storage, make_study([]), "cpu", False, threading.Event()
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.device = "cuda"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("entry", "inputs"),
    [
        (_supernet.resolve_stack, ["ctx", "data"]),
        (_anchors.run_anchors, ["ctx", "data", "stack"]),
        (_supernet.run_supernet, ["ctx", "data", "stack", "data_fingerprint"]),
        (_screening.run_screening, ["ctx", "stack", "supernet", "data", "n_trials"]),
        (_trust.run_trust, ["ctx", "data", "supernet"]),
        (_finetune.run_finetune, ["ctx", "data", "supernet", "stack"]),
        (_retrain.run_winners, ["ctx", "data", "stack", "finetuned"]),
    ],
)
def test_each_phase_takes_the_earlier_phases_outputs_as_arguments(entry, inputs) -> None:
    params = list(inspect.signature(entry).parameters)
    assert params[: len(inputs)] == inputs


def test_phase_3_retrains_the_finalists_it_is_given_best_first() -> None:
    study = make_study(
        [{"values": [0.5 + 0.1 * i, 1.0], "attrs": {"arch": arch_json([op])}} for i, op in
         enumerate(["k3", "k5", "k7"])]
    )  # fmt: skip

    def tuned(trial: int, curve: tuple[float, ...]) -> FineTuned:
        return FineTuned(trial, "{}", 0.5, curve, (1.0,) * len(curve), None, "ready")

    given = FineTuneResult((tuned(0, (0.8, 0.9)), tuned(1, (0.95,)), tuned(2, (0.7, 0.85))), 2)
    # The most epochs first, then the best validation accuracy; the Pareto set without it.
    assert [t.number for t in winner_trials(study, given)] == [0, 2, 1]
    assert [t.number for t in winner_trials(study, None)] == [2]


def test_phase_3_spreads_its_extra_retrains_over_log_cost_from_every_trained_model() -> None:
    """``retrain_spread``: each extra retrain is the screened Pareto member farthest in log
    predicted cost from the anchors and the retrains chosen so far; an anchor's
    architecture is never retrained again."""
    from nasflow.record import AnchorEntry, AnchorsRecord, TrialRecord, write_record

    costs = [1.0, 2.0, 3.0, 10.0, 20.0, 32.0]  # one Pareto front: dearer is more accurate
    ops = ["k3", "k5", "k7", "skip", "k3_e2", "k5_e2"]
    study = make_study(
        [
            {"values": [0.5 + 0.05 * i, c], "attrs": {"arch": arch_json([op]), "train_cost": c}}
            for i, (c, op) in enumerate(zip(costs, ops, strict=True))
        ]
    )
    anchor = AnchorEntry(0, 0, arch_json(["k3"]), 10, 10, "10 params", 0.5, 0.5)
    write_record(study, AnchorsRecord("by hand", (anchor,)))
    best = [TrialRecord.from_trial(t) for t in winner_trials(study, None)][:1]
    assert [t.number for t in best] == [5]  # cost 32
    # From {1, 32}: cost 10 is farthest in log (ln 3.2 from 32); then from {1, 10, 32}: 3.
    assert [t.number for t in _retrain.spread_trials(study, best, 2)] == [3, 2]
    assert [t.number for t in _retrain.spread_trials(study, best, 9)] == [3, 2, 4, 1]
    assert _retrain.spread_trials(study, best, 0) == []
    # Without the anchor's record its trial is a candidate like any other: the cheapest.
    bare = make_study([{"values": t.values, "attrs": t.user_attrs} for t in study.trials])
    assert [t.number for t in _retrain.spread_trials(bare, best, 1)] == [0]


def test_the_benchmarks_replay_of_the_spread_rule_picks_what_phase_3_picks() -> None:
    """``benchmarks/retrain_spread.py`` replays ``spread_trials`` on arrays: the same picks
    on the same front."""
    import importlib.util

    import numpy as np

    from nasflow.record import TrialRecord

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "retrain_spread.py"
    spec = importlib.util.spec_from_file_location("bench_retrain_spread", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    costs = np.sort(np.random.default_rng(0).uniform(1.0, 50.0, 12))
    ops = ["k3", "k5", "k7", "skip"]
    study = make_study(
        [
            {
                "values": [0.3 + 0.05 * i, float(c)],
                "attrs": {"arch": arch_json([ops[i % 4], ops[i // 4]]), "train_cost": float(c)},
            }
            for i, c in enumerate(costs)
        ]
    )
    best = [TrialRecord.from_trial(study.trials[11])]
    ours = [t.number for t in _retrain.spread_trials(study, best, 5)]
    rest = list(range(10, -1, -1))  # the rest of the front, most accurate first
    theirs = mod.spread_pick(rest, [float(np.log(costs[11]))], np.log(costs), 5)
    assert ours == theirs and len(set(ours)) == 5


def _result(tmp_path: Path, kept: KeptDecision | None) -> tuple[RunResult, object]:
    tmp_path.mkdir(exist_ok=True)
    spec = load_study_file(write_study(tmp_path))
    study = make_study([{"values": [0.9, 1.0], "attrs": {"arch": arch_json(["k3"])}}])
    winner = Winner(0, Arch({}), 0.90, 0.89, 1.0, 3.0, 100)
    storage = resolve_storage(None, tmp_path / "study.db")
    result = RunResult(study, tmp_path, storage, [], [winner], {"total": 1.0}, [0], spec, kept)
    return result, spec


def test_the_summary_states_the_decision_the_run_made(tmp_path: Path) -> None:
    """The summary states the kept model the runner decided (``RunResult.kept``), not one
    it decides again from the records: here the decision keeps fine-tuned weights that no
    record of the study shows."""
    fine = KeptWeights(0, "fine-tuned", 0.95, 0.90, 0.94, 2, 0.01)
    decision = KeptDecision(fine, [], 0.95, "choice (fine-tuned)", None, 0, "fine-tuned", 500)
    result, spec = _result(tmp_path, decision)
    text = "\n".join(_outcome_lines(result, spec, spec.name))  # type: ignore[arg-type]
    assert "kept model: trial 0's fine-tuned weights" in text
    assert f"`nasflow export {spec.name} --ready 0 --out DIR` exports the kept model" in text
    nothing, spec = _result(tmp_path / "b", None)
    text = "\n".join(_outcome_lines(nothing, spec, spec.name))  # type: ignore[arg-type]
    assert "kept model" not in text and "exports the most accurate trial" in text


def test_the_summary_says_which_ranking_chose_and_what_parameter_count_keeps(
    tmp_path: Path,
) -> None:
    from nasflow.pipeline._result._summary import ranking_line
    from nasflow.record import AnchorEntry

    fine = KeptWeights(7, "retrained", 0.95, 0.90, 0.94, 2, 0.01)
    small = AnchorEntry(0, 1, "{}", 1_000, 10, "1k params", 0.80, 0.79)
    large = AnchorEntry(1, 2, "{}", 90_000, 99, "90k params", 0.93, 0.92)
    decision = KeptDecision(fine, [small, large], 0.95, "choice", None, 7, "retrained", 500)
    spec = load_study_file(write_study(tmp_path))
    line = ranking_line(spec, decision)
    assert line.startswith("chosen by: supernet accuracy (the screened Pareto set)")
    assert (
        "parameter count alone keeps trial 2 (the anchor with the most parameters, 90,000" in line
    )
    assert "validation 0.9300, test 0.9200, against the kept model's 0.9500, test 0.9400" in line
    # Without anchors nothing measured what parameter count would keep: the line says so.
    bare = KeptDecision(fine, [], 0.95, "choice", None, 7, "retrained", 500)
    assert ranking_line(spec, bare).endswith("parameter count's own choice was not measured")


def test_the_summary_states_the_regime_in_stand_alone_trainings(tmp_path: Path) -> None:
    from nasflow.pipeline._result._summary import regime_line

    fine = KeptWeights(0, "retrained", 0.95, 0.90, 0.94, 2, 0.01)
    decision = KeptDecision(fine, [], 0.95, "choice", None, 0, "retrained", 500)
    result, _ = _result(tmp_path, decision)  # one winner, retrained in 3.0 s
    assert regime_line(result, decision) is None  # no supernet in this run
    result.seconds.update(supernet=20.0, search=10.0)  # 30 s: ten 3-second trainings
    line = regime_line(result, decision)
    assert line is not None
    assert "one stand-alone training of the recipe took 3s here (median of 1 measured" in line
    assert "took 30s, as much as 10.0 of them" in line
    assert "the best of 10 random architectures, which beats 91% of them" in line


def test_a_full_recipe_from_inherited_weights_is_kept_without_a_retrain() -> None:
    import math

    from nasflow.pipeline._kept import decide_kept
    from nasflow.record import AnchorEntry, AnchorsRecord

    def tuned(trial: int, curve: tuple[float, ...]) -> FineTuned:
        return FineTuned(trial, "{}", 0.5, curve, (1.0,) * len(curve), 0.9, "ready")

    # Trial 2 validates highest but stopped at 2 epochs; of the two that trained the whole
    # recipe (6 epochs), trial 1 validates highest and is kept, fine-tuned.
    result = FineTuneResult(
        (tuned(1, (0.5,) * 5 + (0.93,)), tuned(2, (0.99, 0.99)), tuned(3, (0.5,) * 5 + (0.9,))),
        6,
        500,
        (1, 2, 6),
    )
    decision = decide_kept([], result, None, full_from_inherited=True)
    assert (decision.trial, decision.weights) == (1, "fine-tuned")
    assert decision.search is not None and math.isnan(decision.search.other_val_accuracy)
    assert "the full recipe): validation 0.9300" in decision.search.line("s")
    # Without the flag a run without retrains keeps nothing, as before.
    assert decide_kept([], result, None).trial is None
    # An anchor that validates higher by more than its margin still wins.
    anchor = AnchorEntry(0, 9, "{}", 10, 10, "10 params", 0.99, 0.98)
    anchors = AnchorsRecord("by hand", (anchor,))
    kept = decide_kept([], result, anchors, full_from_inherited=True)
    assert (kept.trial, kept.weights) == (9, "retrained")
