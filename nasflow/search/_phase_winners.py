"""Phase 3: retrain the best Pareto trials from scratch, score them on the test split and
measure their training cost (entry point :func:`run_winners`)."""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import optuna

from nasflow.record import DUPLICATE_KEY, KeptRecord, TrialRecord, WinnerRecord, retrain_key
from nasflow.search._anchors import kept_anchor
from nasflow.search._context import RunContext, Winner, WinnersPhaseResult
from nasflow.search._finetune import FineTuneResult, KeptWeights, kept_weights
from nasflow.search._retrain import recipe_for, retrain_arch
from nasflow.search._winners import WEIGHTS_FILE as WINNER_WEIGHTS
from nasflow.search._winners import find_winner, save_winner
from nasflow.space import Arch
from nasflow.train import TrainResult
from nasflow.train.stack import Stack, is_rank_zero


def pareto_trials(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """The study's Pareto set, best accuracy first.

    Optuna's ``study.best_trials`` (completed, feasible where trials carry constraints,
    non-dominated) less the trials that reused an earlier trial's score
    (``user_attrs["duplicate_of"]``): such a trial is the same architecture as its first
    trial, which has the same values and constraints and so is in the set already.
    """
    front = [t for t in study.best_trials if DUPLICATE_KEY not in t.user_attrs]
    return sorted(front, key=lambda t: -t.values[0])


def winner_trials(ctx: RunContext) -> list[optuna.trial.FrozenTrial]:
    """The trials phase 3 retrains, best first: after a fine-tuning phase its candidates
    by fine-tuned validation accuracy (those fine-tuned the most epochs first), else the
    screened Pareto set by supernet accuracy."""
    if ctx.finetuned is None or not ctx.finetuned.ready:
        return pareto_trials(ctx.study)
    ranked = sorted(ctx.finetuned.ready, key=lambda c: (-c.epochs, -c.val_accuracy))
    trials = ctx.study.get_trials(deepcopy=False)
    by_number = {t.number: t for t in trials}
    return [by_number[c.trial] for c in ranked if c.trial in by_number]


def run_winners(ctx: RunContext) -> WinnersPhaseResult:
    """Phase 3: retrain the best ``retrain_top`` trials from scratch (after fine-tuning:
    the best fine-tuned finalists, else the Pareto set by supernet accuracy); test
    accuracy + real cost. The winners come back best retrained validation accuracy first:
    the first is the search's kept choice.

    Each winner's weights and record (recipe, seed, test and validation accuracy,
    measured training time) are saved in ``OUT/NAME/winners/trial-N/``, atomically and
    checksummed. A winner saved there by an earlier run with the same space,
    architecture, recipe, seed, speedup stack and data (name and split sizes) is
    reused instead of retrained.
    """
    t0 = time.perf_counter()
    spec, study, data = ctx.spec, ctx.study, ctx.data
    assert data is not None, "phase 3 needs the study's data"
    winners = []
    for t in winner_trials(ctx)[: spec.retrain_top]:
        ctx.check_stop("phase 3, between retrains")
        trial = TrialRecord.from_trial(t)
        arch = trial.get_arch()
        folder = ctx.folder.winner(t.number)
        identity = winner_identity(ctx, arch, ctx.stack)
        saved, why = find_winner(folder, identity)
        if saved is not None:
            ctx.log(f"phase 3: trial {t.number} was retrained by an earlier run: {folder}")
            record = WinnerRecord.from_dict(saved)
            w = Winner(
                t.number,
                arch,
                float(record.val_accuracy),  # type: ignore[arg-type]
                float(record.test_accuracy),  # type: ignore[arg-type]
                float(trial.train_cost),  # type: ignore[arg-type]
                float(record.measured_train_cost),  # type: ignore[arg-type]
                int(trial.params),  # type: ignore[arg-type]
                folder,
                reused=True,
            )
        else:
            if why:
                ctx.log(f"phase 3: retraining trial {t.number}: {why}")
            w = _retrain_one(ctx, trial, arch, identity)
        winners.append(w)
        entry = {k: v for k, v in asdict(w).items() if k not in ("arch", "weights", "reused")}
        if w.weights is not None:
            entry["weights"] = str(w.weights.relative_to(ctx.out) / WINNER_WEIGHTS)
        study.set_user_attr(retrain_key(t.number), entry)
    # Several retrained: the kept choice is the best retrained validation accuracy (all
    # trained with the same recipe from scratch, so comparable); ties keep the order in
    # which they were chosen (fine-tuned validation accuracy, or supernet accuracy).
    winners.sort(key=lambda w: -w.val_accuracy)
    return WinnersPhaseResult(tuple(winners), time.perf_counter() - t0)


@dataclass(frozen=True)
class KeptDecision:
    """Which model a finished run keeps, and on what evidence (the summary's "kept model"
    lines and the study's ``nasflow:kept`` record both come from here).

    Attributes:
        search: The search's choice, its retrain or its fine-tuned weights
            (:func:`~nasflow.search.kept_weights`); ``None`` without a fine-tuning record.
        anchors: The zero-cost anchors trained from scratch (their records).
        search_val: The validation accuracy of the search's kept weights.
        what: Those weights, in words ("choice (retrained)", ...).
        anchor: The anchor that replaces the search's choice (it validates higher by more
            than ``ANCHOR_MARGIN_SE`` standard errors), or ``None``.
        trial: The kept trial (``None``: nothing was retrained).
        weights: ``"retrained"`` (from scratch: phase 3's retrain or an anchor) or
            ``"fine-tuned"``.
    """

    search: KeptWeights | None
    anchors: list[Mapping[str, Any]]
    search_val: float
    what: str
    anchor: Mapping[str, Any] | None
    trial: int | None
    weights: str

    def record(self) -> dict[str, Any] | None:
        """The study's ``nasflow:kept`` record (``None`` when nothing is kept), in the
        shape :func:`nasflow.record.kept_record` reads back."""
        if self.trial is None:
            return None
        source = "anchor" if self.anchor is not None else "search"
        return KeptRecord(self.trial, self.weights, source)._asdict()


def decide_kept(winners: Sequence[Winner], finetuned: object, anchors: object) -> KeptDecision:
    """The model a run keeps: phase 3's first winner (the search's choice: the best
    retrained validation accuracy among the trials it retrained) with the weights
    :func:`~nasflow.search.kept_weights` keeps, unless the best-validating zero-cost anchor
    validates above it by more than the margin (:func:`~nasflow.search.kept_anchor`).
    ``finetuned`` and ``anchors`` are the study's fine-tuning and anchors records."""
    search = None
    samples = None
    if isinstance(finetuned, dict):
        samples = finetuned.get("val_samples")
        if winners:
            w0 = winners[0]
            result = FineTuneResult.from_record(finetuned)
            search = kept_weights(w0.number, w0.val_accuracy, w0.test_accuracy, result)
    trained = [
        e
        for e in (anchors.get("anchors", []) if isinstance(anchors, dict) else [])
        if e.get("val_accuracy") is not None
    ]
    if not winners:
        return KeptDecision(search, trained, 0.0, "", None, None, "retrained")
    if search is not None:
        val, what = search.val_accuracy, f"choice ({search.kind})"
    else:
        val, what = winners[0].val_accuracy, "choice (retrained)"
    anchor = None
    if trained:
        best, margin = kept_anchor(val, trained, samples)
        anchor = best if best["val_accuracy"] - val > margin else None
    if anchor is not None:
        return KeptDecision(search, trained, val, what, anchor, int(anchor["trial"]), "retrained")
    weights = search.kind if search is not None else "retrained"
    return KeptDecision(search, trained, val, what, None, winners[0].number, weights)


def winner_identity(ctx: RunContext, arch: Arch, stack: Stack | None) -> dict[str, Any]:
    """What a from-scratch training of ``arch`` is (``nasflow.search._winners.IDENTITY``):
    a saved winner with the same identity is reused instead of trained again."""
    spec, data = ctx.spec, ctx.data
    assert data is not None, "a from-scratch training needs the study's data"
    splits = (data.train, data.val, data.test)
    return {
        "space": spec.space.name,
        "fingerprint": spec.space.fingerprint(),
        "arch": arch.to_dict(),
        "recipe": asdict(recipe_for(arch, spec.train)),
        "seed": spec.seed,
        "stack": (stack or Stack()).to_dict(),
        "data": {
            "name": data.name,
            "sizes": [getattr(d, "__len__", lambda: None)() for d in splits],
        },
    }


def train_winner(
    ctx: RunContext,
    number: int,
    arch: Arch,
    stack: Stack | None,
    identity: dict[str, Any],
    desc: str,
    predicted_train_cost: float | None = None,
    params: int | None = None,
    extra: dict[str, Any] | None = None,
) -> tuple[TrainResult, Path | None]:
    """Train trial ``number``'s ``arch`` from scratch with the study's recipe through
    ``stack``, score it, and save its weights and record (with ``extra``'s keys) in
    ``RUNS/NAME/winners/trial-N`` (rank 0; the folder, else ``None``).

    The training is checkpointed in ``RUNS/NAME/retraining/trial-N`` after every epoch and
    when a stop is requested (``ctx.stop``), resumed from there by the next run, and the
    checkpoints are removed once the weights are saved.

    Raises:
        TrainingInterrupted: A stop was requested (checkpointed).
    """
    data = ctx.data
    assert data is not None, "a from-scratch training needs the study's data"
    epochs = recipe_for(arch, ctx.spec.train).epochs
    ctx.quiet_log(f"{desc}: training from scratch, {epochs} epochs")
    bar = ctx.bar(epochs, desc)
    checkpoints = ctx.folder.retraining(number) if is_rank_zero() else None
    try:
        net, _, res = retrain_arch(
            ctx.spec,
            arch,
            data,
            stack,
            ctx.device,
            on_epoch=lambda e, loss: ctx.advance(bar, e, loss),
            checkpoints=checkpoints,
            identity=json.dumps(identity, sort_keys=True),
            should_stop=ctx.stop.is_set,
            log=ctx.log,
            what=desc,
        )
    finally:
        ctx.close_bar(bar)
    if not is_rank_zero():
        return res, None
    record = WinnerRecord(
        identity=identity,
        study=ctx.spec.name,
        trial=number,
        test_accuracy=float(res.test_accuracy or 0.0),
        val_accuracy=res.val_accuracy,
        measured_train_cost=res.seconds,
        predicted_train_cost=predicted_train_cost,
        params=params,
        device=str(ctx.device),
    )
    folder = ctx.folder.winner(number)
    save_winner(folder, net, {**record.to_dict(), **(extra or {})})
    if checkpoints is not None:
        shutil.rmtree(checkpoints, ignore_errors=True)
        with contextlib.suppress(OSError):  # (another training's may be in progress there)
            checkpoints.parent.rmdir()
    return res, folder


def _retrain_one(
    ctx: RunContext, trial: TrialRecord, arch: Arch, identity: dict[str, Any]
) -> Winner:
    """Train one winner from scratch, score it, and save its weights (rank 0)."""
    res, saved = train_winner(
        ctx,
        trial.number,
        arch,
        ctx.stack,
        identity,
        f"phase 3: retrain trial {trial.number}",
        float(trial.train_cost),  # type: ignore[arg-type]
        int(trial.params),  # type: ignore[arg-type]
    )
    return Winner(
        trial.number,
        arch,
        res.val_accuracy,
        float(res.test_accuracy or 0.0),
        float(trial.train_cost),  # type: ignore[arg-type]
        res.seconds,
        int(trial.params),  # type: ignore[arg-type]
        saved,
    )
