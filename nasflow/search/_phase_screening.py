"""Phase 2: the Optuna study proposing candidates and scoring them from the supernet (or a
benchmark table) (entry point :func:`run_screening`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import optuna
from optuna.trial import TrialState

from nasflow.record import TrialRecord
from nasflow.search._budget import SKIPS_BEFORE_NOTE, budget_excludes
from nasflow.search._context import RunContext, ScreeningPhaseResult
from nasflow.search._objective import CandidateError, CandidateScorer, make_reporter
from nasflow.search._optuna import study_pruner
from nasflow.search._recovery import requeue_interrupted
from nasflow.tabular import TabularObjective


def run_screening(ctx: RunContext) -> ScreeningPhaseResult:
    """Phase 2: run the study's trials up to ``ctx.n_trials`` (default the spec's) finished
    ones; a trial stopped on request is queued again to resume from its checkpoint."""
    t0 = time.perf_counter()
    spec, study = ctx.spec, ctx.study
    scorer: Callable[[optuna.Trial], Any]
    if spec.table is not None:  # tabular mode: scores are looked up, nothing trains
        scorer = TabularObjective(spec.table)
    else:
        _, multi_pruner = study_pruner(spec)
        scorer = CandidateScorer(
            spec.replace(stack=ctx.stack),  # "auto" resolved
            ctx.supernet,  # type: ignore[arg-type]
            ctx.data,  # type: ignore[arg-type]
            make_reporter(spec, multi_pruner),
            ctx.device,
            checkpoint_dir=ctx.folder.finetune,
            should_stop=ctx.stop.is_set,
            log=ctx.quiet_log,
            cost_storage=ctx.tables_url,
            remeasure_costs=spec.remeasure_costs,
        )
    before = len(ctx.ran_trials)
    finished = len(
        study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))
    )
    target = spec.n_trials if ctx.n_trials is None else ctx.n_trials
    todo = max(0, target - finished)
    if finished:
        ctx.log(f"resuming: {finished} finished trials kept, {todo} to go")
    if todo == 0:
        return ScreeningPhaseResult((), time.perf_counter() - t0)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    setup = getattr(scorer, "setup", None)
    if setup is not None:  # per-study set-up, out of the per-trial scoring path
        setup(study)

    bar = ctx.bar(todo, "phase 2: search", unit="trial")

    def after_trial(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        ctx.ran_trials.append(trial.number)
        if bar is not None:
            bar.update(1)
        _say_budget(ctx, study, trial)
        if not ctx.progress:
            rec = TrialRecord.from_trial(trial)
            vals = ", ".join(f"{v:.4g}" for v in trial.values or [])
            why = rec.fail_reason or rec.skipped
            why = f" ({why})" if why and trial.state != TrialState.COMPLETE else ""
            if rec.duplicate_of is not None:
                why = f" (architecture of trial {rec.duplicate_of}, reused)"
            ctx.log(f"trial {trial.number} {trial.state.name.lower()} {vals}{why}")
        if ctx.stop.is_set():
            study.stop()  # stop requested while no training step was running

    try:
        _optimize(ctx, scorer, todo, target, after_trial)
    finally:
        ctx.close_bar(bar)
        # A trial stopped on request is FAIL now (even where ``catch`` swallowed the
        # stop): queue it again with the same parameters, to resume from its checkpoint.
        stopped = getattr(scorer, "interrupted", None)
        if stopped is not None:
            requeue_interrupted(study, stopped)
            ctx.log(f"trial {stopped} stopped and queued to resume from its checkpoint")
    return ScreeningPhaseResult(tuple(ctx.ran_trials[before:]), time.perf_counter() - t0)


def _optimize(
    ctx: RunContext,
    scorer: Callable[[optuna.Trial], Any],
    todo: int,
    target: int,
    after_trial: Callable[[optuna.Study, optuna.trial.FrozenTrial], None],
) -> None:
    finished = (TrialState.COMPLETE, TrialState.PRUNED)
    ctx.study.optimize(
        scorer,
        n_trials=todo,
        timeout=ctx.timeout,
        catch=(CandidateError, *ctx.spec.catch),
        callbacks=[
            after_trial,
            optuna.study.MaxTrialsCallback(target, states=finished),
        ],
        show_progress_bar=False,  # (the labelled bar of ``run_screening`` is shown instead)
        gc_after_trial=False,
    )


def _say_budget(ctx: RunContext, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
    """Once, after the first few over-budget skips with nothing feasible: say that the
    budget excludes what is proposed, with the smallest candidate's figures."""
    if ctx.budget_said or TrialRecord.from_trial(trial).skipped is None:
        return
    trials = study.get_trials(deepcopy=False)
    skipped = sum(TrialRecord.from_trial(t).skipped is not None for t in trials)
    if skipped < min(SKIPS_BEFORE_NOTE, ctx.spec.n_trials):
        return
    note = budget_excludes(trials, ctx.spec.budget)
    if note is not None:
        ctx.budget_said = True
        ctx.log(f"warning: {note}")
