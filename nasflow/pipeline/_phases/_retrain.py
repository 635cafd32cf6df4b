"""Phase 3: retrain the best Pareto trials from scratch, score them on the test split and
measure their training cost (entry point :func:`run_winners`)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import optuna

from nasflow.data import DataBundle
from nasflow.pipeline._arch._training import train_winner, winner_identity
from nasflow.pipeline._arch._winners import WEIGHTS_FILE as WINNER_WEIGHTS
from nasflow.pipeline._arch._winners import find_winner
from nasflow.pipeline._context import RunContext, Winner, WinnersPhaseResult
from nasflow.pipeline._schedule._tasks import Handler, Task
from nasflow.record import (
    DUPLICATE_KEY,
    FineTuneResult,
    RetrainRecord,
    TrialRecord,
    WinnerRecord,
    study_anchors,
    write_record,
)
from nasflow.train.stack import Stack

#: Phase 3's task: one retrain.
RETRAIN = "retrain"


def pareto_trials(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """The study's Pareto set, best accuracy first.

    Optuna's ``study.best_trials`` (completed, feasible where trials carry constraints,
    non-dominated) less the trials that reused an earlier trial's score
    (``user_attrs["duplicate_of"]``): such a trial is the same architecture as its first
    trial, which has the same values and constraints and so is in the set already.
    """
    front = [t for t in study.best_trials if DUPLICATE_KEY not in t.user_attrs]
    return sorted(front, key=lambda t: -t.values[0])


def winner_trials(
    study: optuna.Study, finetuned: FineTuneResult | None
) -> list[optuna.trial.FrozenTrial]:
    """The trials phase 3 retrains, best first: after a fine-tuning phase (``finetuned``)
    its candidates by fine-tuned validation accuracy (those fine-tuned the most epochs
    first), else the screened Pareto set by supernet accuracy."""
    if finetuned is None or not finetuned.ready:
        return pareto_trials(study)
    ranked = sorted(finetuned.ready, key=lambda c: (-c.epochs, -c.val_accuracy))
    trials = study.get_trials(deepcopy=False)
    by_number = {t.number: t for t in trials}
    return [by_number[c.trial] for c in ranked if c.trial in by_number]


def spread_trials(study: optuna.Study, chosen: list[TrialRecord], k: int) -> list[TrialRecord]:
    """``k`` members of the screened Pareto set beside ``chosen``, to spread the study's
    trained models over cost: each the member farthest in log predicted training cost from
    every model trained from scratch so far (the study's trained anchors, ``chosen`` and
    the members picked before it), ties to the more accurate. Members without a predicted
    cost are not candidates.

    Why: the retrains by score sit at the front's costly end (the finalists are the
    screening's most accurate), where the anchors already trained a model. They fill the
    front and are not candidates for the kept model. In ``benchmarks/results/paired.md``'s
    run 18 (three of them, 18 pairs on three MNIST-1D grounds) the trained models'
    hypervolume rose +0.008 pooled (interval above zero), every kept model the same; in
    run 17, when they were candidates, one kept model was worse (a spread retrain that
    validated highest of seven and tested lower).
    """
    if k <= 0:
        return []
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    anchors = study_anchors(study)
    trained = list(chosen)
    if anchors is not None:
        trained += [
            TrialRecord.from_trial(trials[a.trial]) for a in anchors.trained if a.trial in trials
        ]
    seen = {t.get_arch() for t in trained}
    logs = [math.log(t.train_cost) for t in trained if t.train_cost and t.train_cost > 0]
    # (log predicted cost, member), best accuracy first: max() keeps the first of a tie.
    candidates = [
        (math.log(r.train_cost), r)
        for r in (TrialRecord.from_trial(t) for t in pareto_trials(study))
        if r.get_arch() not in seen and r.train_cost and r.train_cost > 0
    ]
    picked: list[TrialRecord] = []
    while candidates and len(picked) < k:
        log, far = max(candidates, key=lambda c: min((abs(c[0] - x) for x in logs), default=0))
        picked.append(far)
        logs.append(log)
        candidates = [c for c in candidates if c[1].get_arch() != far.get_arch()]
    return picked


def run_winners(
    ctx: RunContext, data: DataBundle, stack: Stack | None, finetuned: FineTuneResult | None
) -> WinnersPhaseResult:
    """Phase 3: retrain the best ``retrain_top`` trials from scratch on ``data`` through
    ``stack`` (after a fine-tuning phase, ``finetuned``: the best fine-tuned finalists,
    else the Pareto set by supernet accuracy), then ``retrain_spread`` more spread over
    cost (:func:`spread_trials`); test accuracy + real cost. The winners come back best
    retrained validation accuracy first, the spread retrains after the others: the first
    is the search's kept choice.

    Each winner's weights and record (recipe, seed, test and validation accuracy,
    measured training time) are saved in ``OUT/NAME/winners/trial-N/``, atomically and
    checksummed. A winner saved there by an earlier run with the same space,
    architecture, recipe, seed, speedup stack and data (name and split sizes) is
    reused instead of retrained.
    """
    t0 = time.perf_counter()
    spec, study = ctx.spec, ctx.study
    chosen = [TrialRecord.from_trial(t) for t in winner_trials(study, finetuned)]
    chosen = chosen[: spec.retrain_top]
    spread = spread_trials(study, chosen, spec.retrain_spread)
    for trial in spread:
        ctx.log(
            f"phase 3: trial {trial.number} chosen to spread the trained models over "
            f"cost (predicted {float(trial.train_cost or 0):.1f} s; not a candidate for "
            "the kept model)"
        )
    chosen += spread
    spread_numbers = {t.number for t in spread}
    slots: list[Winner | None] = []
    tasks = []
    for trial in chosen:
        folder = ctx.folder.winner(trial.number)
        saved, why = find_winner(folder, winner_identity(spec, data, trial.get_arch(), stack))
        if saved is not None:
            ctx.log(f"phase 3: trial {trial.number} was retrained by an earlier run: {folder}")
            rec = WinnerRecord.from_dict(saved)
            slots.append(
                _winner(
                    trial,
                    rec.val_accuracy,
                    rec.test_accuracy,
                    rec.measured_train_cost,
                    folder,
                    reused=True,
                    spread=trial.number in spread_numbers,
                )
            )
            continue
        if why:
            ctx.log(f"phase 3: retraining trial {trial.number}: {why}")
        slots.append(None)
        tasks.append(Task(RETRAIN, {"trial": trial.number}))
    # The retrains: in this process in order, or shared with the study's workers; each
    # recorded as it comes (a stopped phase keeps what is done).
    trained: dict[int, Winner] = {}
    queued = [trial for trial, slot in zip(chosen, slots, strict=True) if slot is None]

    def record(i: int, r: dict[str, Any]) -> None:
        weights = None if r["weights"] is None else ctx.out / r["weights"]
        trial = queued[i]
        w = _winner(
            trial,
            r["val_accuracy"],
            r["test_accuracy"],
            r["seconds"],
            weights,
            spread=trial.number in spread_numbers,
        )
        trained[w.number] = w
        ready = time.process_time() - ctx.started_cpu
        write_record(study, retrain_record(w, ctx.out, ready))

    ctx.tasks.run(tasks, {RETRAIN: retrain_handler(ctx, data, stack)}, record)
    winners = []
    for trial, slot in zip(chosen, slots, strict=True):
        if slot is not None:
            write_record(study, retrain_record(slot, ctx.out))
        winners.append(slot if slot is not None else trained[trial.number])
    # Several retrained: the kept choice is the best retrained validation accuracy (all
    # trained with the same recipe from scratch, so comparable) among those chosen by
    # score; the spread retrains come after them (run 17: the best of seven validations
    # kept a cheap spread retrain that tested lower). Ties keep the order in which they
    # were chosen (fine-tuned validation accuracy, or supernet accuracy).
    winners.sort(key=lambda w: (w.spread, -w.val_accuracy))
    return WinnersPhaseResult(tuple(winners), time.perf_counter() - t0)


def _winner(
    trial: TrialRecord,
    val_accuracy: float | None,
    test_accuracy: float | None,
    seconds: float | None,
    folder: Path | None,
    reused: bool = False,
    spread: bool = False,
) -> Winner:
    """Screened ``trial`` retrained: its validation and test accuracy, the training's
    measured seconds and the folder of its weights (``spread``: retrained to spread the
    trained models over cost, not a candidate for the kept model)."""
    return Winner(
        trial.number,
        trial.get_arch(),
        float(val_accuracy or 0.0),
        float(test_accuracy or 0.0),
        float(trial.train_cost),  # type: ignore[arg-type]
        float(seconds or 0.0),
        int(trial.params),  # type: ignore[arg-type]
        folder,
        reused=reused,
        spread=spread,
    )


def retrain_handler(ctx: RunContext, data: DataBundle, stack: Stack | None) -> Handler:
    """Phase 3's training as a task (any process of the study runs it): trial
    ``args["trial"]`` trained from scratch, scored and saved; what it measured."""

    def retrain(args: Mapping[str, Any]) -> dict[str, Any]:
        number = int(args["trial"])
        found = [t for t in ctx.study.get_trials(deepcopy=False) if t.number == number]
        trial = TrialRecord.from_trial(found[0])
        identity = winner_identity(ctx.spec, data, trial.get_arch(), stack)
        w = _retrain_one(ctx, data, stack, trial, identity)
        return {
            "val_accuracy": w.val_accuracy,
            "test_accuracy": w.test_accuracy,
            "seconds": w.measured_train_cost,
            # (relative to the run's folder: the study's process may name it otherwise)
            "weights": None if w.weights is None else str(w.weights.relative_to(ctx.out)),
        }

    return retrain


def retrain_record(w: Winner, out: Path, ready_cpu: float | None = None) -> RetrainRecord:
    """Phase 3's study record of winner ``w`` (its weights relative to the run's folder
    ``out``; ``ready_cpu``: the process's CPU-seconds into the run when it was ready)."""
    weights = None if w.weights is None else str(w.weights.relative_to(out) / WINNER_WEIGHTS)
    return RetrainRecord(
        w.number,
        w.val_accuracy,
        w.test_accuracy,
        w.predicted_train_cost,
        w.measured_train_cost,
        w.params,
        weights,
        ready_cpu,
        w.spread,
    )


def _retrain_one(
    ctx: RunContext,
    data: DataBundle,
    stack: Stack | None,
    trial: TrialRecord,
    identity: dict[str, Any],
) -> Winner:
    """Train one winner from scratch, score it, and save its weights (rank 0)."""
    arch = trial.get_arch()
    res, saved = train_winner(
        ctx,
        data,
        trial.number,
        arch,
        stack,
        identity,
        f"phase 3: retrain trial {trial.number}",
        float(trial.train_cost),  # type: ignore[arg-type]
        int(trial.params),  # type: ignore[arg-type]
    )
    return _winner(trial, res.val_accuracy, res.test_accuracy, res.seconds, saved)
