"""Phase 0: the zero-cost anchors, trained from scratch before the supernet (entry point
:func:`run_anchors`; how they are chosen: ``nasflow.search._anchors``).

Each anchor is a trial of the study: queued (``enqueue_trial``) before the first trial, so
phase 2 scores it from the supernet like any other candidate, and trained from scratch
here with the study's recipe through the study's speedup stack (resolved, or calibrated,
just before this phase), its weights and record saved where phase 3 saves a retrained
winner (``RUNS/NAME/winners/trial-N``): ``nasflow export NAME --trial N`` exports them,
and phase 3 reuses them where it would retrain the same architecture.
The study records every anchor under ``nasflow:anchors`` after each training, so a killed
study loses at most the anchor in flight and a resumed one trains none twice.
"""

from __future__ import annotations

import time
from typing import Any

import optuna

from nasflow.record import ANCHOR_ATTR, ANCHORS_KEY, WinnerRecord
from nasflow.search._anchors import Anchor, describe, zero_cost_front
from nasflow.search._context import AnchorsPhaseResult, RunContext
from nasflow.search._phase_winners import train_winner, winner_identity
from nasflow.search._winners import WEIGHTS_FILE, find_winner
from nasflow.space import Arch
from nasflow.train.stack import Stack


def run_anchors(ctx: RunContext) -> AnchorsPhaseResult:
    """Phase 0: choose the zero-cost anchors (a new study only), queue each as a trial,
    and train each from scratch, or reuse its saved training."""
    t0 = time.perf_counter()
    spec, study = ctx.spec, ctx.study
    assert spec.anchors is not None and ctx.data is not None
    record = study.user_attrs.get(ANCHORS_KEY)
    if not isinstance(record, dict):
        held = len(study.get_trials(deepcopy=False))
        if held:
            ctx.log(
                f"phase 0: no zero-cost anchors: the study already holds {held} trials "
                "(anchors are chosen before its first)"
            )
            return AnchorsPhaseResult((), time.perf_counter() - t0)
        record = _queue(ctx)
    stack = ctx.stack  # resolved before phase 0 ("auto": calibrated or the stored record)
    entries: list[dict[str, Any]] = record["anchors"]
    for entry in entries:
        if entry.get("val_accuracy") is not None and _saved(ctx, entry, stack):
            continue
        ctx.check_stop("phase 0, between anchors")
        arch = Arch.from_json(entry["arch"])
        number = int(entry["trial"])
        res, folder = train_winner(
            ctx,
            number,
            arch,
            stack,
            winner_identity(ctx, arch, stack),
            f"phase 0: anchor {entry['index'] + 1}/{len(entries)} (trial {number})",
            params=int(entry["params"]),
            extra={ANCHOR_ATTR: entry["index"]},
        )
        entry.update(
            val_accuracy=res.val_accuracy,
            test_accuracy=res.test_accuracy,
            measured_train_cost=res.seconds,
            ready_seconds=time.perf_counter() - ctx.started,
            ready_cpu_seconds=time.process_time() - ctx.started_cpu,
            stack=(stack or Stack()).to_dict(),
            weights=None if folder is None else str(folder.relative_to(ctx.out) / WEIGHTS_FILE),
        )
        study.set_user_attr(ANCHORS_KEY, record)
        ctx.log(anchor_line(entry))
    seconds = time.perf_counter() - t0
    record["seconds"] = seconds
    study.set_user_attr(ANCHORS_KEY, record)
    return AnchorsPhaseResult(tuple(int(e["trial"]) for e in entries), seconds)


def _queue(ctx: RunContext) -> dict[str, Any]:
    """Choose the anchors, queue each as a trial, and record them in the study."""
    spec, study = ctx.spec, ctx.study
    assert spec.anchors is not None
    chosen = zero_cost_front(
        spec.space, spec.anchors.n, spec.anchors.sample, spec.seed, spec.train.batch_size
    )
    entries = []
    for i, anchor in enumerate(chosen):
        study.enqueue_trial(dict(anchor.arch), user_attrs={ANCHOR_ATTR: i})
        entries.append(_entry(i, _queued_number(study, i), anchor))
    record = {
        "rule": (
            f"of {spec.anchors.sample} random architectures (seed {spec.seed}), the "
            "non-dominated set by parameters (up) and training FLOPs (down); on it, the "
            f"{len(chosen)} nearest to points evenly spaced in log FLOPs"
        ),
        "anchors": entries,
    }
    study.set_user_attr(ANCHORS_KEY, record)
    ctx.log(
        f"phase 0: {len(chosen)} zero-cost anchors, trained from scratch before the supernet "
        f"(trials {', '.join(str(e['trial']) for e in entries)}; {record['rule']})"
    )
    return record


def _queued_number(study: optuna.Study, index: int) -> int:
    waiting = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,))
    return max(t.number for t in waiting if t.user_attrs.get(ANCHOR_ATTR) == index)


def _entry(index: int, number: int, anchor: Anchor) -> dict[str, Any]:
    return {
        "index": index,
        "trial": number,
        "arch": anchor.arch.to_json(),
        "params": anchor.params,
        "flops": anchor.flops,
        "chosen_by": describe(anchor),
    }


def _saved(ctx: RunContext, entry: dict[str, Any], stack: Stack | None) -> bool:
    """Whether the anchor's training is saved, as this run would train it."""
    arch = Arch.from_json(entry["arch"])
    folder = ctx.folder.winner(int(entry["trial"]))
    saved, _ = find_winner(folder, winner_identity(ctx, arch, stack))
    if saved is None:
        return False
    rec = WinnerRecord.from_dict(saved)
    return rec.val_accuracy == entry["val_accuracy"]


def anchor_line(entry: dict[str, Any]) -> str:
    """One anchor's line: what it is, what it scored, when it was ready."""
    test = entry.get("test_accuracy")
    return (
        f"anchor {entry['index'] + 1} (trial {entry['trial']}, {entry['chosen_by']}): "
        f"trained from scratch, validation {entry['val_accuracy']:.4f}"
        + ("" if test is None else f", test {test:.4f}")
        + f"; training {entry['measured_train_cost']:.1f}s measured, ready "
        f"{entry['ready_seconds']:.0f}s into the run"
    )
