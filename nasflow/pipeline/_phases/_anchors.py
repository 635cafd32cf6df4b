"""Zero-cost anchors: architectures chosen before anything trains, trained first.

Nothing that the one-shot search produces exists before its supernet is trained and
screened (a minute or more on a CPU). The anchors fill that gap: a few architectures
chosen from the space by numbers that cost no training -- parameter count (more is more
accurate: on the generalisation suite the parameter count alone ranks the random
architectures at Kendall tau +0.62 to +0.81, ``benchmarks/RESULTS.md``) and training
FLOPs (fewer is cheaper) -- trained from scratch with the study's recipe before the
supernet. They are ready models within seconds, they span the accuracy-cost front from
its cheap end to its accurate end, and they are the baseline the search's kept model is
compared with.

Phase 0 (entry point :func:`run_anchors`; how they are chosen: :func:`zero_cost_front`).

Each anchor is a trial of the study: queued (``enqueue_trial``) before the first trial, so
phase 2 scores it from the supernet like any other candidate, and trained from scratch
here with the study's recipe through the study's speedup stack (resolved, or calibrated,
just before this phase), its weights and record saved where phase 3 saves a retrained
winner (``RUNS/NAME/winners/trial-N``): ``nasflow export NAME --trial N`` exports them,
and phase 3 reuses them where it would retrain the same architecture.
The study records every anchor under ``nasflow:anchors`` after each training, so a killed
study loses at most the anchor in flight and a resumed one trains none twice."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import optuna

from nasflow._checks import check_int
from nasflow.data import DataBundle
from nasflow.pipeline._arch._training import train_winner, winner_identity
from nasflow.pipeline._arch._winners import WEIGHTS_FILE, find_winner
from nasflow.pipeline._context import AnchorsPhaseResult, RunContext
from nasflow.pipeline._cost import traces
from nasflow.record import (
    ANCHOR_ATTR,
    AnchorEntry,
    AnchorsRecord,
    TrialRecord,
    WinnerRecord,
    study_anchors,
    write_record,
)
from nasflow.search import non_dominated_sort
from nasflow.space import Arch, SearchSpace, largest_arch
from nasflow.train.stack import Stack

if TYPE_CHECKING:
    from nasflow.cost import CostModel


@dataclass(frozen=True)
class Anchor:
    """One zero-cost anchor: the architecture and the numbers that chose it.

    Attributes:
        arch: The architecture.
        params: Trainable parameters of its stand-alone network.
        flops: Forward and backward FLOPs of one training step (the study's batch size).
    """

    arch: Arch
    params: int
    flops: int


def stand_alone_counts(model: CostModel, arch: Arch) -> tuple[int, int]:
    """``(parameters, training FLOPs per step)`` of ``arch``'s whole stand-alone network at
    the model's batch shape and input dtype (on ``meta``: shapes only)."""
    from nasflow.cost import count_flops, count_params

    net = model.network(arch)
    flops = count_flops(net, model.batch_shape, input_dtype=model.input_dtype)
    return count_params(net), flops.total


def zero_cost_front(
    space: SearchSpace,
    n: int,
    sample: int,
    seed: int,
    batch_size: int,
    candidates: Sequence[Arch] | None = None,
    extra: Sequence[Arch] = (),
) -> list[Anchor]:
    """Up to ``n`` anchors, cheapest first: of ``sample`` distinct random architectures
    (drawn with ``seed``; or the given ``candidates``) and ``extra``, the non-dominated set by
    (parameters up, training FLOPs down), and on it the members nearest to ``n`` points
    evenly spaced in log FLOPs from its cheapest to its largest member (the largest always
    included).

    Parameters and FLOPs come from the cost model's op tracer (shapes only, on the
    ``meta`` device; no table, nothing is measured): about 1.5 CPU-seconds for 256
    candidates of the MNIST-1D space. Where the tracer sees no ops in the space (a
    supernet that slices its weights instead of calling choice modules, as the GPT-2
    space does: every count would be 0; ``nasflow.pipeline._cost.traces``), they are
    counted on each stand-alone network (:func:`stand_alone_counts`).
    """
    from nasflow.cost import CostModel

    check_int("n", n, 1)
    check_int("sample", sample, 1)
    # A table in memory: the op tracer needs one, nothing is measured or stored in it.
    model = CostModel.for_space(space, batch_size=batch_size, storage_url="sqlite://", share=False)
    archs: dict[Arch, None] = {}
    if candidates is not None:
        archs = dict.fromkeys(candidates)
    else:
        rng = np.random.default_rng(seed)
        for _ in range(20 * sample):  # a small space runs out of distinct architectures
            archs.setdefault(space.sample(rng))
            if len(archs) == sample:
                break
    archs.update(dict.fromkeys(extra))
    if traces(model):
        found = [Anchor(a, model.params(a), model.flops(a).total) for a in archs]
    else:
        found = [Anchor(a, *stand_alone_counts(model, a)) for a in archs]
    points = np.array([(-a.params, a.flops) for a in found], dtype=float)
    ranks = non_dominated_sort(points, ["minimize", "minimize"])
    front = sorted((a for a, r in zip(found, ranks, strict=True) if r == 0), key=_by_flops)
    if len(front) <= n:
        return front
    return [front[i] for i in spread_in_log_flops(np.log([max(a.flops, 1) for a in front]), n)]


def spread_in_log_flops(logs: np.ndarray, n: int, reach: float = 1.0) -> list[int]:
    """Indices (ascending) of the ``n`` members of a front sorted cheapest first (``logs``:
    their log FLOPs) nearest to ``n`` points evenly spaced from its cheapest to the fraction
    ``reach`` of the way to its largest; the whole front where it has ``n`` or fewer.

    Points are matched from the top down (``n=1`` with ``reach=1`` is the largest), each to
    the nearest member not yet chosen, ties to the cheaper.
    """
    if len(logs) <= n:
        return list(range(len(logs)))
    top = logs[-1] if reach == 1.0 else logs[0] + reach * (logs[-1] - logs[0])
    chosen: list[int] = []
    for target in np.linspace(top, logs[0], n):
        free = [i for i in range(len(logs)) if i not in chosen]
        chosen.append(min(free, key=lambda i: (abs(logs[i] - target), i)))
    return sorted(chosen)


def _by_flops(a: Anchor) -> tuple[int, int]:
    return a.flops, -a.params


def describe(anchor: Anchor) -> str:
    """``"12.3k params, 45.6 MFLOPs/step"``."""
    return f"{_si(anchor.params)} params, {_si(anchor.flops)}FLOPs/step"


def _si(x: float) -> str:
    if x <= 0:
        return "0"
    k = min(int(math.log10(x) // 3), 4)
    return f"{x / 1000**k:.3g}{' kMGT'[k].strip()}"


def run_anchors(ctx: RunContext, data: DataBundle, stack: Stack | None) -> AnchorsPhaseResult:
    """Phase 0: choose the zero-cost anchors (a new study only), queue each as a trial,
    and train each from scratch on ``data`` through ``stack`` (the study's, resolved
    before this phase: ``"auto"`` calibrated or the stored record), or reuse its saved
    training."""
    t0 = time.perf_counter()
    spec, study = ctx.spec, ctx.study
    assert spec.anchors is not None
    record = study_anchors(study)
    if record is None:
        held = len(study.get_trials(deepcopy=False))
        if held:
            ctx.log(
                f"phase 0: no zero-cost anchors: the study already holds {held} trials "
                "(anchors are chosen before its first)"
            )
            return AnchorsPhaseResult((), time.perf_counter() - t0)
        record = _queue(ctx)
    entries = list(record.anchors)
    for i, entry in enumerate(entries):
        if entry.trained and _saved(ctx, data, entry, stack):
            continue
        ctx.check_stop("phase 0, between anchors")
        arch = Arch.from_json(entry.arch)
        res, folder = train_winner(
            ctx,
            data,
            entry.trial,
            arch,
            stack,
            winner_identity(spec, data, arch, stack),
            f"phase 0: anchor {entry.index + 1}/{len(entries)} (trial {entry.trial})",
            params=entry.params,
            extra={ANCHOR_ATTR: entry.index},
        )
        entries[i] = entry = replace(
            entry,
            val_accuracy=res.val_accuracy,
            test_accuracy=res.test_accuracy,
            measured_train_cost=res.seconds,
            ready_seconds=time.perf_counter() - ctx.started,
            ready_cpu_seconds=time.process_time() - ctx.started_cpu,
            stack=(stack or Stack()).to_dict(),
            weights=None if folder is None else str(folder.relative_to(ctx.out) / WEIGHTS_FILE),
        )
        record = replace(record, anchors=tuple(entries))
        write_record(study, record)
        ctx.log(anchor_line(entry))
    seconds = time.perf_counter() - t0
    record = replace(record, seconds=seconds)
    write_record(study, record)
    return AnchorsPhaseResult(tuple(e.trial for e in entries), seconds)


def _queue(ctx: RunContext) -> AnchorsRecord:
    """Choose the anchors, queue each as a trial, and record them in the study."""
    spec, study = ctx.spec, ctx.study
    assert spec.anchors is not None
    fallback = spec.anchors.fallback == "largest"
    # The space's largest architecture has the most parameters, so it is non-dominated and
    # the front's most expensive member: the rule always takes it (the largest anchor).
    extra = (largest_arch(spec.space),) if fallback else ()
    chosen = zero_cost_front(
        spec.space, spec.anchors.n, spec.anchors.sample, spec.seed, spec.train.batch_size,
        extra=extra,
    )  # fmt: skip
    entries = []
    for i, anchor in enumerate(chosen):
        study.enqueue_trial(dict(anchor.arch), user_attrs={ANCHOR_ATTR: i})
        entries.append(
            AnchorEntry(
                i,
                _queued_number(study, i),
                anchor.arch.to_json(),
                anchor.params,
                anchor.flops,
                describe(anchor),
            )
        )
    rule = (
        f"of {spec.anchors.sample} random architectures (seed {spec.seed})"
        + (" and the space's largest" if fallback else "")
        + ", the non-dominated set by parameters (up) and training FLOPs (down); on it, the "
        f"{len(chosen)} nearest to points evenly spaced in log FLOPs"
    )
    top = max(entries, key=lambda e: (e.params, e.index)) if fallback else None
    if top is not None:
        rule += f"; the largest (trial {top.trial}) is kept unless the search beats it"
    record = AnchorsRecord(rule, tuple(entries), fallback=None if top is None else top.trial)
    write_record(study, record)
    ctx.log(
        f"phase 0: {len(chosen)} zero-cost anchors, trained from scratch before the supernet "
        f"(trials {', '.join(str(e.trial) for e in entries)}; {record.rule})"
    )
    return record


def _queued_number(study: optuna.Study, index: int) -> int:
    waiting = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,))
    return max(t.number for t in waiting if TrialRecord.from_trial(t).anchor == index)


def _saved(ctx: RunContext, data: DataBundle, entry: AnchorEntry, stack: Stack | None) -> bool:
    """Whether the anchor's training is saved, as this run would train it."""
    arch = Arch.from_json(entry.arch)
    folder = ctx.folder.winner(entry.trial)
    saved, _ = find_winner(folder, winner_identity(ctx.spec, data, arch, stack))
    if saved is None:
        return False
    rec = WinnerRecord.from_dict(saved)
    return rec.val_accuracy == entry.val_accuracy


def anchor_line(entry: AnchorEntry) -> str:
    """One anchor's line: what it is, what it scored, when it was ready."""
    test = entry.test_accuracy
    return (
        f"anchor {entry.index + 1} (trial {entry.trial}, {entry.chosen_by}): "
        f"trained from scratch, validation {entry.val_accuracy:.4f}"
        + ("" if test is None else f", test {test:.4f}")
        + f"; training {entry.measured_train_cost:.1f}s measured, ready "
        f"{entry.ready_seconds:.0f}s into the run"
    )
