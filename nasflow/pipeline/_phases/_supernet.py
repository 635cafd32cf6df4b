"""Phase 1: train the supernet (entry point :func:`run_supernet`), through the speedup
stack resolved before every phase (:func:`resolve_stack`)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from nasflow._files import file_lock
from nasflow.data import DataBundle
from nasflow.pipeline._context import RunContext, StackChoice, SupernetPhaseResult
from nasflow.pipeline._multipliers import stack_line
from nasflow.record import StackRecord, SupernetRecord, study_stack, write_record
from nasflow.settings import recalibration_requested
from nasflow.train import Progress, SupernetTrainer, list_checkpoints
from nasflow.train.stack import Stack, is_rank_zero


def run_supernet(
    ctx: RunContext,
    data: DataBundle,
    stack: Stack | None,
    data_fingerprint: str | None,
    checkpoint_every: int = 0,
    worker: bool = False,
    *,
    found_at_start: list[tuple[Progress, Path]],
) -> SupernetPhaseResult:
    """Phase 1: train the supernet on ``data`` through ``stack`` (the study's, see
    :func:`resolve_stack`) (resumable; concurrent workers wait for the one that trains)
    and record it on the study (not from a ``worker``).

    Args:
        ctx: The run.
        data: The study's data.
        stack: The speedup stack every phase trains with.
        data_fingerprint: The data's fingerprint (the checkpoints carry it).
        checkpoint_every: Also checkpoint every this many steps inside an epoch.
        worker: A worker process (records nothing on the study).
        found_at_start: The newest checkpoint when the run started
            (``list_checkpoints(folder)[:1]``).
    """
    t = time.perf_counter()
    spec = ctx.spec
    stack, note = supernet_stack(spec.supernet.split, spec.stack, stack)
    if note:
        ctx.log(note)
    bar = ctx.bar(spec.supernet.epochs, "phase 1: supernet")
    with file_lock(ctx.folder.supernet_lock):
        trainer = SupernetTrainer(
            spec.space,
            data.train,
            spec.supernet_recipe,
            ctx.folder.supernet,
            ctx.device,
            checkpoint_every=checkpoint_every,
            should_stop=ctx.stop.is_set,
            stack=stack,
            data_fingerprint=data_fingerprint,
        )
        # Checkpoints that appeared since this run started are another process's, not an
        # earlier run of this one (a worker, or the study's process, that got the lock
        # first); and a worker's always are (one that joins after the supernet finished).
        appeared = list_checkpoints(ctx.folder.supernet)[:1] != found_at_start
        trainer.written_by_another = worker or appeared
        result = trainer.fit(on_epoch=lambda e, loss: ctx.advance(bar, e, loss))
    ctx.close_bar(bar)
    info = SupernetRecord(
        spec.supernet.sampler,
        result.epochs_done,
        trainer.sampler.paths_per_step,
        result.seconds,
        result.resumed_from,
        tuple(result.losses),
        tuple(result.op_counts.as_rows()),
        # Few-shot split (SupernetConfig.split): the label and the epoch it split at.
        spec.supernet.split,
        spec.supernet.split_epoch,
        # Where the supernet trained through another stack than the study's (None: same).
        note,
    )
    seconds = time.perf_counter() - t
    if not worker:
        write_record(ctx.study, info)
    return SupernetPhaseResult(result.supernet, info, seconds)


def supernet_stack(
    split: str | None, requested: Stack | str | None, stack: Stack | None
) -> tuple[Stack | None, str | None]:
    """The stack the supernet trains with, and a line to log where it differs from
    ``stack`` (the one every other phase trains with).

    A split supernet (``SupernetConfig.split``) trains without gradient accumulation when
    the stack was chosen by the calibration (``requested == "auto"``): each of its
    sub-supernets already gets one optimizer step in as many as there are parts, and
    accumulation divides them again. Measured once, on one ground (the suite's
    ``scarce``): the split supernet a calibration sent through adaptive accumulation
    ranked the table at Kendall tau +0.263, the same study and seed through bf16 autocast
    alone at +0.636 (benchmarks/RESULTS.md, "B6 with the split supernet"); the shared
    supernet through accumulation ranked as well as in fp32 on four grounds ("The shared
    supernet through adaptive accumulation"), so only the split drops it. A stack the
    user fixed is kept as given.
    """
    if split is None or requested != "auto" or stack is None or stack.accumulation == 1:
        return stack, None
    kept = dataclasses.replace(stack, accumulation=1)
    return kept, (
        f"supernet: split on {split!r}, trained without the stack's gradient accumulation "
        f"({stack.accumulation!r}): each sub-supernet already gets fewer optimizer steps"
    )


def resolve_stack(ctx: RunContext, data: DataBundle) -> StackChoice:
    """The stack every phase trains with, from the spec: a ``Stack`` given or ``None`` as
    it is; for ``"auto"``: the record stored on the study (a resumed study trains on with
    the stack its checkpoints were written with), else this device's record from the
    database's stack calibration table (nothing trains), else a calibration within
    ``spec.stack_budget``, stored there (rank 0); the record is copied to the study either
    way. With it, the seconds spent calibrating (0 when nothing was calibrated or
    probed).

    A fixed stack or ``None`` measures and stores nothing (the report says "not
    measured"). Concurrent workers wait for the one that calibrates, then reuse its
    choice, so every process (and the supernet checkpoints) trains with one stack.
    """
    spec, study = ctx.spec, ctx.study
    if spec.stack != "auto":
        return StackChoice(spec.stack if isinstance(spec.stack, Stack) else None, 0.0)
    from nasflow.calibrate import device_stack

    refresh = spec.recalibrate_stack or recalibration_requested()
    with file_lock(ctx.folder.stack_lock):
        stored = study_stack(study)
        if stored is not None and stored.stack is not None:
            again = " (not recalibrated: a study keeps the stack it started with)"
            ctx.log(f"{stack_line(stored)}; stored with this study{again * refresh}")
            return StackChoice(Stack.from_dict(dict(stored.stack)), 0.0)
        if spec.deterministic:  # no timing may choose the layers
            ctx.log("speedup stack: plain fp32 eager ('auto' is not calibrated: deterministic)")
            return StackChoice(None, 0.0)
        train = data.batches("train", spec.train.batch_size, spec.seed)
        res = device_stack(
            spec.space,
            train,
            data.batches("val"),
            spec.train.lr,
            spec.train.weight_decay,
            planned_batches=spec.train.epochs * len(train),
            storage_url=ctx.tables_url,
            device=ctx.device,
            seed=spec.seed,
            budget=spec.stack_budget,
            refresh=refresh,
            store=is_rank_zero(),
            should_stop=ctx.stop.is_set,
        )
        record = StackRecord.from_dict(res.record)
        if is_rank_zero():
            write_record(study, record)
        ctx.log(stack_line(record))
        return StackChoice(res.stack, 0.0 if res.reused else res.seconds)
