"""Phase 2: the Optuna study proposing candidates and scoring them from the supernet (or a
benchmark table) (entry point :func:`run_screening`).

Two loops:

- **Batched** (candidates scored from the supernet alone, no ``StudySpec.finetune``, or
  looked up in a benchmark ``table``): :class:`BatchedScreening`. The sampler proposes on
  an in-memory copy of the study (``ask``/``tell``), each proposal is an architecture the
  study has not scored, and every ``StudySpec.screen_batch`` scored candidates are written
  to the study's storage at once. A candidate's loop cost is the sampler's and the
  score's, not the storage's.
- **Per trial** (``study.optimize``): in-trial fine-tuning (``StudySpec.finetune``), whose
  trials report every epoch to a pruner that reads the other trials from the storage,
  checkpoint, and may be stopped and queued again: batching them would hide running
  trials from the pruner and from other workers, and a fine-tuning epoch costs far more
  than a storage write. With ``screen_batch=0`` a tabular study runs here too: its
  sampler may then propose an architecture again (the trial reuses the earlier values,
  ``duplicate_of``) and ``n_trials`` counts trials, not distinct architectures."""

from __future__ import annotations

import collections
import contextlib
import copy
import hashlib
import math
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from nasflow.data import DataBundle
from nasflow.errors import NasflowError, WriteError
from nasflow.pipeline._arch._scoring import (
    CandidateError,
    CandidateScorer,
    TabularScorer,
    make_reporter,
)
from nasflow.pipeline._budget import BudgetNote
from nasflow.pipeline._context import RunContext, ScreeningPhaseResult
from nasflow.pipeline._phases._proposals import (
    REASK_PROBE,
    REASK_WINDOW,
    REASKS,
    SpaceExhausted,
    unseen_neighbour,
    unseen_random,
)
from nasflow.pipeline._recovery import kept_words, requeue_interrupted
from nasflow.record import ARCH_ATTR, FAIL_REASON_ATTR, PREFIX, TRACEBACK_ATTR, TrialRecord
from nasflow.search import StudySpec, study_pruner, write_trials
from nasflow.space import Arch
from nasflow.storage import storage_failure
from nasflow.supernet import Supernet
from nasflow.train.stack import Stack

#: Tries to write a batch where the storage fails (Optuna's ``StorageInternalError`` or
#: any SQLAlchemy error: the batch's transaction is rolled back whole each time).
WRITE_TRIES = 3

#: The states of a stored trial that count as a screened candidate.
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


def batched(spec: StudySpec) -> bool:
    """Whether the screening runs as a batched loop (candidates scored from the supernet
    alone, or looked up in a table); in-trial fine-tuning and ``screen_batch=0`` run per
    trial (module docstring)."""
    return spec.screen_batch > 0 and not spec.finetune_epochs


def run_screening(
    ctx: RunContext,
    stack: Stack | None = None,
    supernet: Supernet | None = None,
    data: DataBundle | None = None,
    n_trials: int | None = None,
    timeout: float | None = None,
    worker: bool = False,
) -> ScreeningPhaseResult:
    """Phase 2: score candidates up to ``n_trials`` (default the spec's) from ``supernet``
    on ``data``, costs predicted through ``stack`` (``None`` all three: a tabular study,
    looked up), for at most ``timeout`` seconds (``worker``: one of several processes).

    Batched (:func:`batched`): ``n_trials`` distinct architectures, written every
    ``spec.screen_batch``. Per trial: finished trials; a trial stopped on request is queued
    again to resume from its checkpoint."""
    t0 = time.perf_counter()
    spec, study = ctx.spec, ctx.study
    scorer: CandidateScorer | TabularScorer
    if spec.table is not None:  # tabular mode: scores are looked up, nothing trains
        scorer = TabularScorer(spec.table)
    else:
        assert supernet is not None and data is not None, "screening needs the supernet"
        _, multi_pruner = study_pruner(spec)
        scorer = CandidateScorer(
            spec.replace(stack=stack),  # "auto" resolved
            supernet,
            data,
            make_reporter(spec, multi_pruner),
            ctx.device,
            checkpoint_dir=ctx.folder.finetune,
            should_stop=ctx.stop.is_set,
            cost_storage=ctx.tables_url,
            remeasure_costs=spec.remeasure_costs,
        )
    ran: list[int] = []  # the trials this process scores, in order
    note = BudgetNote(spec)
    target = spec.n_trials if n_trials is None else n_trials
    if batched(spec):
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        if waiting:  # queued by hand (``enqueue_trial``): run as they were asked, per trial
            scorer.setup(study)
            _optimize(ctx, scorer, len(waiting), target, timeout, _after_trial(ctx, ran, note))
        BatchedScreening(ctx, scorer, target, timeout, worker, ran, note).run(t0)
        return ScreeningPhaseResult(tuple(ran), time.perf_counter() - t0)
    finished = len(
        study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))
    )
    todo = max(0, target - finished)
    if finished:
        ctx.log(f"{kept_words(ctx, finished, 'finished trials')}, {todo} to go")
    if todo == 0:
        return ScreeningPhaseResult((), time.perf_counter() - t0)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    setup = getattr(scorer, "setup", None)
    if setup is not None:  # per-study set-up, out of the per-trial scoring path
        setup(study)
    bar = ctx.bar(todo, "phase 2: search", unit="trial")
    try:
        _optimize(ctx, scorer, todo, target, timeout, _after_trial(ctx, ran, note, bar))
    finally:
        ctx.close_bar(bar)
        # A trial stopped on request is FAIL now (even where ``catch`` swallowed the
        # stop): queue it again with the same parameters, to resume from its checkpoint.
        stopped = getattr(scorer, "interrupted", None)
        if stopped is not None:
            requeue_interrupted(study, stopped)
            ctx.log(f"trial {stopped} stopped and queued to resume from its checkpoint")
    return ScreeningPhaseResult(tuple(ran), time.perf_counter() - t0)


def _after_trial(
    ctx: RunContext, ran: list[int], note: BudgetNote, bar: Any = None
) -> Callable[[optuna.Study, FrozenTrial], None]:
    """The per-trial loop's callback: record the trial in ``ran``, advance the phase's
    bar, say once when the budget excludes what is proposed, log it, honour a stop
    request."""

    def after_trial(study: optuna.Study, trial: FrozenTrial) -> None:
        ran.append(trial.number)
        if bar is not None:
            bar.update(1)
        note.after(study, trial)
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

    return after_trial


def _optimize(
    ctx: RunContext,
    scorer: Callable[[optuna.Trial], Any],
    todo: int,
    target: int,
    timeout: float | None,
    after_trial: Callable[[optuna.Study, optuna.trial.FrozenTrial], None],
) -> None:
    finished = (TrialState.COMPLETE, TrialState.PRUNED)
    t0 = time.perf_counter()
    while todo > 0:
        left = None if timeout is None else timeout - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            return
        try:
            ctx.study.optimize(
                scorer,
                n_trials=todo,
                timeout=left,
                catch=(CandidateError, *ctx.spec.catch),
                callbacks=[
                    after_trial,
                    optuna.study.MaxTrialsCallback(target, states=finished),
                ],
                show_progress_bar=False,  # (the phase's labelled bar is shown instead)
                gc_after_trial=False,
            )
            return
        except ValueError as e:  # Optuna's "Cannot tell a FAIL trial": see CandidateScorer.swept
            number = getattr(scorer, "swept", None)
            if number is None and "Cannot tell a FAIL trial" not in str(e):
                raise
            scorer.swept = None  # type: ignore[attr-defined]
            ctx.log(
                f"trial {'?' if number is None else number} was failed by another worker's "
                "sweep while this one fine-tuned it (its heartbeat came late); stopped here, "
                "its retry resumes from the checkpoint"
            )
            done = len(ctx.study.get_trials(deepcopy=False, states=finished))
            todo = min(todo, target - done)


class BatchedScreening:
    """The batched screening loop: propose on an in-memory study, score, write in batches.

    The in-memory study holds the stored finished trials (read once at the start, then
    only the trials other workers wrote since, read before each write) and every
    candidate this process scored; the sampler sees each score before the next proposal,
    as in the per-trial loop. Every ``spec.screen_batch`` candidates the batch is written
    to the study's storage in one transaction (``write_trials``: tried again where the
    storage fails, never half written) with the parameters, distributions, values, user
    and system attributes and times the per-trial loop writes.

    A proposal is an architecture the study has not scored (stored, or scored in this
    batch): the sampler is asked up to ``1 + REASKS`` times (once where the last
    ``REASK_WINDOW`` re-asks found nothing new), then a uniformly random
    unseen architecture is drawn; when none is left the loop stops and says so. On a
    shared storage (PostgreSQL, journal file) the write is serialised between workers (a
    PostgreSQL advisory lock, a lock file beside the journal) and a candidate another
    worker wrote meanwhile is dropped, so no architecture is stored twice; ``n_trials``
    caps the distinct architectures stored, whichever worker scored them.

    Args:
        ctx: The run.
        scorer: Scores one candidate (``CandidateScorer.score``).
        target: Distinct architectures wanted in the study.
        timeout: Seconds the loop may run (``None``: no limit).
        worker: One of several processes (it draws its own random stream).
        ran: The trials this process scored so far in this phase (queued trials scored
            one by one first); each trial written is appended.
        note: Says when the budget excludes what is proposed.
    """

    def __init__(
        self,
        ctx: RunContext,
        scorer: CandidateScorer | TabularScorer,
        target: int,
        timeout: float | None = None,
        worker: bool = False,
        ran: list[int] | None = None,
        note: BudgetNote | None = None,
    ) -> None:
        self.ctx, self.scorer, self.target = ctx, scorer, target
        self.timeout = timeout
        self.ran = [] if ran is None else ran
        self.note = BudgetNote(ctx.spec) if note is None else note
        self.space = ctx.spec.space
        self.batch_size = ctx.spec.screen_batch
        study = ctx.study
        self.memory = optuna.create_study(
            storage=optuna.storages.InMemoryStorage(),
            directions=study.directions,
            sampler=study.sampler,
        )
        #: Stored trials already folded in (by trial number).
        self._known: set[int] = set()
        #: Architectures (``Arch.to_json``) stored in the study, any finished state.
        self.stored: set[str] = set()
        #: Architectures of stored COMPLETE or PRUNED trials: the distinct candidates.
        self.counted: set[str] = set()
        #: Stored or scored by this process (the proposals to avoid).
        self.seen: set[str] = set()
        #: Proposals drawn uniformly at random (the sampler proposed scored ones).
        self.fallbacks = 0
        #: Proposals mutated from the sampler's repeat (``repeat_fallback="mutate"``).
        self.mutated = 0
        #: Outcomes of the last ``REASK_WINDOW`` re-asks (``True``: an unseen architecture).
        self._reasks: collections.deque[bool] = collections.deque(maxlen=REASK_WINDOW)
        #: Repeats proposed while re-asking did not pay (every ``REASK_PROBE``-th re-asked).
        self._unpaid = 0
        #: Re-asks skipped because re-asking did not pay.
        self.reasks_skipped = 0
        self.dropped = 0
        self.scored = 0
        self.exhausted = False
        created = len(study.get_trials(deepcopy=False))
        self._rng = np.random.default_rng([ctx.spec.seed, created, os.getpid() * worker])
        self._engine: Any = None  # PostgreSQL: the connection holding the write lock
        #: In-memory trials of random fallbacks (their ``fixed_params`` is not written).
        self._enqueued: set[int] = set()
        self._size = self.space.size
        self._refresh(into_memory=True)

    # ------------------------------------------------------------------ storage
    def _refresh(self, into_memory: bool) -> list[FrozenTrial]:
        """Fold the finished trials stored since the last look in; the new ones (added
        to the in-memory study when ``into_memory``)."""
        new = []
        for t in self.ctx.study.get_trials(deepcopy=False):
            if t.number in self._known or not t.state.is_finished():
                continue
            new.append(t)
            self._fold(t, t.number)
        if into_memory:
            self.memory.add_trials(t for t in new if t.state in FINISHED)
        return new

    def _fold(self, t: FrozenTrial, number: int) -> None:
        """Count a trial stored as trial ``number`` of the study."""
        self._known.add(number)
        arch = TrialRecord.from_trial(t).arch
        if arch is None:
            return
        self.stored.add(arch)
        self.seen.add(arch)
        if t.state in FINISHED:
            self.counted.add(arch)

    @contextlib.contextmanager
    def _write_lock(self) -> Iterator[None]:
        """Serialise read-then-write between the workers of a shared storage."""
        kind = self.ctx.storage.kind
        if kind == "postgresql":
            import sqlalchemy

            if self._engine is None:
                self._engine = sqlalchemy.create_engine(
                    self.ctx.storage.url, poolclass=sqlalchemy.pool.NullPool
                )
            digest = hashlib.sha256(f"{PREFIX}screening:{self.ctx.spec.name}".encode())
            key = int.from_bytes(digest.digest()[:7], "big")  # a bigint advisory lock key
            with self._engine.connect() as conn:
                conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:k)"), {"k": key})
                try:
                    yield
                finally:
                    conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
        elif kind == "journal" and self.ctx.storage.path is not None:
            from filelock import FileLock

            path = self.ctx.storage.path
            with FileLock(str(path.with_name(path.name + ".screening.lock"))):
                yield
        else:  # SQLite (one process: its lock file), in memory, or another RDB
            yield

    def _write(self, batch: list[FrozenTrial]) -> None:
        """Write a scored batch to the study's storage: the whole batch in one
        transaction (:func:`write_trials`), retried where the storage fails, never half
        written."""
        if not batch:
            return
        with self._write_lock():
            if self.ctx.storage.multi_worker:
                self._refresh(into_memory=True)  # what other workers wrote meanwhile
            keep: list[FrozenTrial] = []
            room = self.target - len(self.counted)
            for t in batch:
                arch = TrialRecord.from_trial(t).arch
                if arch in self.stored or (t.state in FINISHED and room <= 0):
                    self.dropped += 1  # another worker stored it, or n_trials is reached
                    continue
                keep.append(t)
                room -= t.state in FINISHED
            numbers = self._write_retrying([self._as_stored(t) for t in keep])
        for t, number in zip(keep, numbers, strict=True):
            self._fold(t, number)
        self.ran.extend(numbers)
        if numbers:
            self.ctx.quiet_log(
                f"screened {len(self.counted)}/{self.target} distinct candidates: trials "
                f"{numbers[0]}-{numbers[-1]} written"
            )

    def _write_retrying(self, trials: list[FrozenTrial]) -> list[int]:
        """:func:`write_trials`, tried again (``WRITE_TRIES`` in all) where the storage
        fails; the last failure is raised with the batch's size (nothing of it stored)."""
        import sqlalchemy.exc

        failures = (optuna.exceptions.StorageInternalError, sqlalchemy.exc.SQLAlchemyError)
        last: BaseException | None = None
        for attempt in range(1, WRITE_TRIES + 1):
            try:
                return write_trials(self.ctx.study, trials)
            except failures as e:
                full = storage_failure(e, self.ctx.storage)
                if full is not None:  # a full disk is not retried, nor blamed on the data
                    raise WriteError(
                        f"{full}; nothing of a batch of {len(trials)} scored candidates is "
                        "stored (a resumed study scores them again)",
                        full.path,
                        full.reason,
                    ) from e
                last = e
                if attempt < WRITE_TRIES:
                    why = str(e.__cause__ or e)[:300]  # (Optuna's own text guesses the data)
                    self.ctx.quiet_log(f"writing the batch failed ({why}); trying again")
                    time.sleep(0.5 * attempt)
        raise NasflowError(
            f"could not write a batch of {len(trials)} scored candidates to the study's "
            f"storage after {WRITE_TRIES} tries (nothing of the batch is stored; a resumed "
            f"study scores them again): {str(getattr(last, '__cause__', None) or last)[:300]}"
        ) from last

    def _as_stored(self, trial: FrozenTrial) -> FrozenTrial:
        """The trial as the per-trial loop stores it: a random fallback's enqueued
        parameters (Optuna's ``fixed_params``) are the trial's parameters, not kept apart."""
        if trial._trial_id not in self._enqueued:
            return trial
        out = copy.copy(trial)
        out.system_attrs = {k: v for k, v in trial.system_attrs.items() if k != "fixed_params"}
        return out

    # ------------------------------------------------------------------ proposals
    def _fallback(self, repeat: Arch) -> Arch:
        """The unseen architecture proposed in place of the sampler's ``repeat``
        (``StudySpec.repeat_fallback``): one or two choices away from it (``"mutate"``),
        else drawn uniformly.

        Raises:
            SpaceExhausted: None is left.
        """
        if self.ctx.spec.repeat_fallback == "mutate":
            near = unseen_neighbour(self.space, repeat, self.seen, self._rng)
            if near is not None:
                self.mutated += 1
                return near
        self.fallbacks += 1
        return unseen_random(self.space, self.seen, self._rng)

    def _reasks_pay(self) -> bool:
        """Whether to ask again after a repeat: yes until ``REASK_WINDOW`` re-asks are
        judged, then while one of the last ``REASK_WINDOW`` found an unseen architecture
        (else every ``REASK_PROBE``-th repeat only)."""
        if len(self._reasks) < REASK_WINDOW or any(self._reasks):
            return True
        self._unpaid += 1
        return self._unpaid % REASK_PROBE == 0

    def propose(self) -> tuple[optuna.Trial, Arch]:
        """An in-memory trial proposing an architecture the study has not scored.

        Raises:
            SpaceExhausted: Every architecture of the space is scored.
        """
        if len(self.seen) >= self._size:
            raise SpaceExhausted
        trial = self.memory.ask()
        arch = self.space.suggest(trial)
        if arch.to_json() not in self.seen:
            return trial, arch
        self.memory.tell(trial, state=TrialState.FAIL)  # a repeat: never scored
        if self._reasks_pay():
            for _ in range(REASKS):
                trial = self.memory.ask()
                arch = self.space.suggest(trial)
                new = arch.to_json() not in self.seen
                self._reasks.append(new)
                if new:
                    return trial, arch
                self.memory.tell(trial, state=TrialState.FAIL)
        else:
            self.reasks_skipped += REASKS
        arch = self._fallback(arch)
        self.memory.enqueue_trial(dict(arch), skip_if_exists=False)
        trial = self.memory.ask()
        self._enqueued.add(trial._trial_id)
        return trial, self.space.suggest(trial)

    # ------------------------------------------------------------------ the loop
    def _score(self, trial: optuna.Trial, arch: Arch) -> tuple[FrozenTrial, BaseException | None]:
        """Score one candidate; its finished in-memory trial, and an error to re-raise
        after its batch is written (one the study's ``catch`` does not list)."""
        trial.set_user_attr(ARCH_ATTR, arch.to_json())
        catch: tuple[type[BaseException], ...] = (CandidateError, *self.ctx.spec.catch)
        try:
            values = self.scorer.score(trial, arch)
        except optuna.TrialPruned:
            return self.memory.tell(trial, state=TrialState.PRUNED), None
        except catch as e:
            if FAIL_REASON_ATTR not in trial.user_attrs:
                trial.set_user_attr(FAIL_REASON_ATTR, f"{type(e).__name__}: {str(e)[:500]}")
            self.ctx.quiet_log(f"candidate {arch.to_json()} failed: {e}")
            return self.memory.tell(trial, state=TrialState.FAIL), None
        except Exception as e:
            if TRACEBACK_ATTR not in trial.user_attrs:
                import traceback

                trial.set_user_attr(TRACEBACK_ATTR, traceback.format_exc()[-8000:])
            return self.memory.tell(trial, state=TrialState.FAIL), e
        return self.memory.tell(trial, values), None

    def _stopping(self, t0: float) -> bool:
        timeout = self.timeout
        return self.ctx.stop.is_set() or (
            timeout is not None and time.perf_counter() - t0 >= timeout
        )

    def run(self, t0: float) -> None:
        """Screen until ``target`` distinct architectures are stored, the space is
        exhausted, a stop is requested or the timeout passes (``t0``: the phase's
        ``perf_counter`` start)."""
        ctx = self.ctx
        have = len(self.counted)
        todo = max(0, self.target - have)
        if have and len(set(self.ran)) >= have:  # this run scored them: queued trials
            ctx.log(f"{have} queued candidates scored first, {todo} to go")
        elif have:
            ctx.log(f"{kept_words(ctx, have, 'distinct candidates')}, {todo} to go")
        if todo == 0:
            return
        self.scorer.setup(ctx.study)
        bar = ctx.bar(todo, "phase 2: screening", unit="candidate")
        try:
            while len(self.counted) < self.target and not self._stopping(t0):
                n = min(self.batch_size, self.target - len(self.counted))
                batch: list[FrozenTrial] = []
                error: BaseException | None = None
                try:
                    while len(batch) < n and error is None and not self._stopping(t0):
                        trial, arch = self.propose()
                        self.seen.add(arch.to_json())
                        frozen, error = self._score(trial, arch)
                        batch.append(frozen)
                        self.scored += 1
                        if bar is not None:
                            bar.update(1)
                except SpaceExhausted:
                    self.exhausted = True
                self._write(batch)
                for frozen in batch:
                    self.note.after(ctx.study, frozen)
                if error is not None:
                    raise error
                if self.exhausted:
                    break
        finally:
            ctx.close_bar(bar)
            if self._engine is not None:
                self._engine.dispose()
                self._engine = None
        self._report()

    def _report(self) -> None:
        ctx, n = self.ctx, len(self.counted)
        if self.exhausted:
            size = f"{self._size:,}" if math.isfinite(self._size) else "the reachable"
            ctx.log(
                f"search space exhausted: all {size} architectures of space "
                f"{self.space.name!r} are scored; screening stops at {n} distinct "
                f"candidates (n_trials={self.target})"
            )
        skipped = (
            f" ({self.reasks_skipped} re-asks skipped: none of {REASK_WINDOW} in a row had "
            "proposed an unseen architecture)"
            if self.reasks_skipped
            else ""
        )
        replaced = [
            f"{self.mutated} mutated from them (one or two choices changed)"
            if self.mutated
            else "",
            f"{self.fallbacks} drawn at random" if self.fallbacks else "",
        ]
        random = (
            f"; the sampler proposed scored architectures (asked up to {1 + REASKS} times) "
            f"{self.mutated + self.fallbacks} times: "
            f"{', '.join(r for r in replaced if r)} in their place{skipped}"
            if self.fallbacks or self.mutated
            else ""
        )
        dropped = (
            f"; {self.dropped} scored but not written (stored by another worker meanwhile, "
            "or past n_trials)"
            if self.dropped
            else ""
        )
        ctx.log(
            f"screening: {self.scored} distinct candidates scored by this process, {n} "
            f"distinct in the study{random}{dropped}"
        )
