"""The study runner: opens the study and sequences the phases, each a module with one entry
point ``run_<phase>(ctx, ...)`` that reads a frozen ``RunContext``
(``nasflow.pipeline._context``) and takes the earlier phases' outputs as arguments:
the stack (``_supernet.resolve_stack``), phase 0 (``_anchors``), phase 1 (``_supernet``),
phase 2 (``_screening``), 2c (``_finetune``), phase 3 (``_retrain``), and last the trust
probe (``_trust``)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import optuna
import sqlalchemy

from nasflow._checks import check_int
from nasflow._logging import lines_to
from nasflow._regular import check_run_folders
from nasflow.data import DataBundle, check_bundle, data_fingerprint
from nasflow.errors import ConfigError
from nasflow.names import objective_names
from nasflow.pipeline._baseline import baseline_record, read_baseline, screening_record
from nasflow.pipeline._context import RunContext, Winner, tables_url_of
from nasflow.pipeline._cost import check_cost_source
from nasflow.pipeline._costtable import check_caches
from nasflow.pipeline._identity import scoring_record
from nasflow.pipeline._kept import KeptDecision, decide_kept
from nasflow.pipeline._multipliers import measured_trainings, search_multipliers
from nasflow.pipeline._phases._anchors import run_anchors
from nasflow.pipeline._phases._finetune import (
    FINETUNE,
    finetune_engine,
    finetune_handler,
    run_finetune,
)
from nasflow.pipeline._phases._retrain import RETRAIN, pareto_trials, retrain_handler, run_winners
from nasflow.pipeline._phases._rungs import run_rung_schedule
from nasflow.pipeline._phases._screening import run_screening
from nasflow.pipeline._phases._supernet import resolve_stack, run_supernet
from nasflow.pipeline._phases._trust import POOL, TRUST, pool_handler, run_trust, trust_handler
from nasflow.pipeline._recovery import heartbeat_settings, sweep_zombies
from nasflow.pipeline._reproducibility import reproducibility_record, use_deterministic
from nasflow.pipeline._schedule._tasks import LocalTasks, SharedTasks, Tasks
from nasflow.record import (
    RunFolder,
    StudyMismatchError,
    check_identity,
    has_identity,
    study_anchors,
    study_finetuned,
    study_identity,
    study_seconds,
    study_stack,
    supernet_identity,
    write_identity,
    write_record,
    write_search_trials,
    write_seconds,
)
from nasflow.search import StudySpec, sampler_seed, study_pruner, study_sampler
from nasflow.settings import world_size
from nasflow.storage import (
    SQLiteLock,
    StorageError,
    StorageSpec,
    check_reachable,
    open_storage,
    resolve_storage,
    storage_failure,
)
from nasflow.supernet import Supernet
from nasflow.train import Progress, TrainingInterrupted, list_checkpoints
from nasflow.train.stack import Stack, is_rank_zero

_LOG = logging.getLogger(__name__)

#: What a storage that failed raises (a full disk among them).
STORAGE_ERRORS = (optuna.exceptions.StorageInternalError, sqlalchemy.exc.SQLAlchemyError)


def check_one_process() -> None:
    """Refuse a study run as one rank of a data-parallel group (``torchrun``, or a process
    group already initialised), before anything is opened or written.

    The phases are not data-parallel: each rank would run the whole study, and the ranks
    deadlocked on the supernet's lock (one held it and waited in the process group's
    set-up for the other, which waited for the lock; found under ``torchrun
    --nproc-per-node 2``, 2026-12-03). Several processes share a study as workers.
    """
    import torch.distributed as dist

    size = world_size()
    if dist.is_available() and dist.is_initialized():
        size = max(size, dist.get_world_size())
    if size > 1:
        raise ConfigError(
            f"a study runs in one process, not as one of {size} data-parallel ranks "
            f"(WORLD_SIZE={size}, torchrun): start `nasflow search` once and `nasflow "
            "worker` processes on a shared storage to share it; a supernet alone trains "
            "data-parallel with nasflow.train.SupernetTrainer under torchrun"
        )


@dataclass
class RunResult:
    """What a run produced and where it lives."""

    study: optuna.Study
    out_dir: Path
    storage: StorageSpec
    pareto: list[optuna.trial.FrozenTrial] = field(default_factory=list)
    winners: list[Winner] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    ran_trials: list[int] = field(default_factory=list)
    spec: StudySpec | None = None
    #: Which model the run keeps and why (decided once, when the run finished; ``None``:
    #: not decided here, as on a DDP rank other than 0).
    kept: KeptDecision | None = None
    #: The trainings after screening this process ran for the study, by kind (a shared
    #: storage's; empty where one process trains them all).
    trainings: dict[str, int] = field(default_factory=dict)


class StudyRunner:
    """Runs a ``StudySpec`` end to end against a storage.

    Args:
        spec: The study.
        storage: ``--storage`` URL or an Optuna storage object; ``None`` for the spec's
            (``spec.storage``, else the storage of ``spec.study``, else
            ``OUT/NAME/study.db``, SQLite).
        out_dir: Folder holding one sub-folder per study (supernet checkpoints, reports).
        log: Where the run's lines go, each as a string (``print``: the terminal);
            ``None``: the standard ``logging`` logger ``nasflow`` only, as the
            application configures it (``nasflow._logging``).
        progress: Show progress bars (then per-step detail lines are not sent to ``log``).
        device: Training device.
        stop: Set it (from a signal handler) to stop gracefully: the current training step
            finishes, a checkpoint is written, a trial in flight is queued to be resumed,
            and ``run`` raises ``TrainingInterrupted``.
        heartbeat_interval: Seconds between trial heartbeats (RDB storages); default
            ``$NASFLOW_HEARTBEAT_INTERVAL`` or 10.
        grace_period: Seconds without a heartbeat before a trial's worker counts as dead
            and the trial is failed and retried once; default ``$NASFLOW_GRACE_PERIOD`` or 30.
        checkpoint_every: Also checkpoint the supernet every this many steps inside an
            epoch (0: at epoch ends only).
    """

    def __init__(
        self,
        spec: StudySpec,
        storage: str | optuna.storages.BaseStorage | None = None,
        out_dir: os.PathLike | str = "runs",
        log: Callable[[str], None] | None = print,
        progress: bool = True,
        device: str = "cpu",
        stop: threading.Event | None = None,
        heartbeat_interval: int | None = None,
        grace_period: int | None = None,
        checkpoint_every: int = 0,
    ) -> None:
        self.spec = spec
        self.folder = RunFolder.of(out_dir, spec.name)
        self.out = self.folder.root
        if storage is None:
            storage = spec.storage
        if storage is None and spec.study is not None:
            # Optuna keeps a study's storage private; its URL (where it has one) places the
            # SQLite lock and the cost tables beside the study.
            storage = spec.study._storage
        self.storage = resolve_storage(storage, self.folder.database)
        self.log, self.progress, self.device = log, progress, device
        self.stop = stop if stop is not None else threading.Event()
        self.heartbeat = heartbeat_settings(heartbeat_interval, grace_period)
        self.checkpoint_every = check_int("checkpoint_every", checkpoint_every, 0)
        self._lock: SQLiteLock | None = None
        self._data: DataBundle | None = None
        self._data_fingerprint: str | None = None
        self._budget_said = False
        self.ran_trials: list[int] = []
        #: The ``n_trials`` of the run in progress (``None``: the spec's).
        self._n_trials: int | None = None
        #: The newest supernet checkpoint when the run started (set by ``run``).
        self._checkpoints_at_start: list[tuple[Progress, Path]] = []
        self._worker = False
        #: The speedup stack every phase trains with (``spec.stack``, resolved by ``run``).
        self.stack: Stack | None = spec.stack if isinstance(spec.stack, Stack) else None

    # ------------------------------------------------------------------ storage and study
    def _identity(self) -> dict[str, str]:
        spec = self.spec
        supernet = None if spec.table is not None else spec.supernet_recipe.identity()
        ident = supernet_identity(spec.space.fingerprint(), supernet)
        self._load_data()
        scoring = scoring_record(spec, self._data_fingerprint)
        return study_identity(spec.space, spec.objectives, ident, scoring)

    def _load_data(self) -> DataBundle | None:
        """The study's data, loaded once, and its fingerprint (``None``: a tabular study)."""
        if self._data is None and self.spec.table is None:
            self._data = self.spec.data()
            check_bundle(self._data, self.spec.space.config.get("input_shape"))
            self._data_fingerprint = data_fingerprint(self._data)
        return self._data

    @property
    def metric_names(self) -> list[str]:
        """What the study's objectives are called (Optuna's ``metric_names``)."""
        spec = self.spec
        return objective_names(spec.objectives, spec.finetune_epochs, spec.table is not None)

    def open_study(self, worker: bool = False) -> optuna.Study:
        """Create or load the study, refusing a mismatched one before writing anything."""
        with lines_to(self.log, detail=not self.progress):
            return self._open_study(worker)

    def _open_study(self, worker: bool) -> optuna.Study:
        check_one_process()
        self._worker = worker
        if worker and not self.storage.multi_worker:
            raise StorageError(
                "a worker needs a shared storage: SQLite supports one process; use "
                "--storage postgresql://... or --storage journal:///FILE"
            )
        check_reachable(self.storage)
        if self.storage.kind == "sqlite":
            self._lock = SQLiteLock(self.storage.path)  # type: ignore[arg-type]
            self._lock.acquire()
        self._load_data()  # checked (and fingerprinted) before the study is created
        storage = open_storage(self.storage, *self.heartbeat)
        if self._lock is not None:
            self._lock.lock_identity()  # (a new study file exists only now)
        directions = self.spec.directions
        names = {s.study_name for s in optuna.get_all_study_summaries(storage)}
        given = self.spec.study
        if given is not None:
            if not has_identity(given):
                held = len(given.get_trials(deepcopy=False))
                if held:
                    raise StudyMismatchError(
                        f"the optuna.Study {self.spec.name!r} given holds {held} trials that "
                        "nasflow did not make; give nasflow an empty study or a new name"
                    )
                write_identity(given, self._identity(), self.spec.space.config)
            self._check_identity(given, directions)
            self._sweep_zombies(given)
            return self._attach(given)
        if self.spec.name in names:
            existing = optuna.load_study(study_name=self.spec.name, storage=storage)
            self._check_identity(existing, directions)
            self._sweep_zombies(existing)
            return self._attach(existing)
        # load_if_exists: a worker racing us to create the same study is fine.
        study = optuna.create_study(
            study_name=self.spec.name,
            storage=storage,
            directions=directions,
            load_if_exists=True,
        )
        write_identity(study, self._identity(), self.spec.space.config)
        self._check_identity(study, directions)
        return self._attach(study)

    def _attach(self, study: optuna.Study) -> optuna.Study:
        """Give a loaded study this run's sampler and pruner (they are not stored)."""
        # Workers draw from their own streams, or they would all propose the same trials.
        seed = self.spec.seed + (os.getpid() if self._worker else 0)
        created = len(study.get_trials(deepcopy=False))
        study.sampler = study_sampler(self.spec, sampler_seed(seed, created), self._n_trials)
        study.pruner = study_pruner(self.spec)[0]
        return study

    def _tasks(self, study: optuna.Study, worker: bool) -> Tasks:
        """Where the trainings after screening run: queued for every process of the study
        on a storage several share (one model trained by one process), else here."""
        shared = self.storage.multi_worker and self.spec.table is None
        if not shared:
            return LocalTasks()
        tasks = SharedTasks(study, self.out, self.stop.is_set)
        if not worker:
            tasks.start()
        return tasks

    def _check_identity(self, study: optuna.Study, directions: list[str]) -> None:
        ident, names = self._identity(), self.metric_names
        for note in check_identity(study, ident, directions, names, self.storage.safe_url):
            _LOG.info(note)

    def _sweep_zombies(self, study: optuna.Study) -> None:
        """Fail trials left RUNNING by dead workers, and retry each at most once."""
        sweep_zombies(study, self.storage.kind, self.heartbeat[1])

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # ------------------------------------------------------------------ all phases
    def run(
        self,
        n_trials: int | None = None,
        timeout: float | None = None,
        retrain: bool = True,
        worker: bool = False,
    ) -> RunResult:
        """Validate, then run the phases in order (each ``run_<phase>(ctx, ...)``, see
        ``nasflow.pipeline._context``); a worker skips phase 3 and the study records."""
        # The run's lines (the nasflow logger's) go to ``log``, per-step detail only where
        # no progress bars stand for it.
        with lines_to(self.log, detail=not self.progress):
            return self._run(n_trials, timeout, retrain, worker)

    def _run(
        self, n_trials: int | None, timeout: float | None, retrain: bool, worker: bool
    ) -> RunResult:
        spec = self.spec
        t0, c0 = time.perf_counter(), time.process_time()
        # (what another process trains from now on is not this study's earlier run)
        self._checkpoints_at_start = list_checkpoints(self.folder.supernet)[:1]
        restore = use_deterministic(spec.deterministic)  # (torch's, until the run ends)
        try:
            check_cost_source(spec.space, spec.cost, tabular=spec.table is not None)
            check_run_folders(self.out)  # (a FIFO there would hang, a link mislead)
            self._n_trials = n_trials  # (``sampler="auto"`` depends on it)
            study = self.open_study(worker=worker)
            _LOG.info(f"study {spec.name!r} in {self.storage.safe_url}")
            check_caches(tables_url_of(self.storage))  # before any training
            tasks = self._tasks(study, worker)
            ctx = RunContext(
                spec,
                self.folder,
                self.storage,
                study,
                self.device,
                self.progress,
                self.stop,
                started=t0,
                started_cpu=c0,
                tasks=tasks,
            )
            try:
                seconds, winners = self._run_phases(ctx, n_trials, timeout, retrain, worker)
            finally:
                if isinstance(tasks, SharedTasks) and not worker:
                    # Decided, stopped or failed: the workers waiting for trainings go home.
                    with contextlib.suppress(*STORAGE_ERRORS):
                        tasks.close()
            seconds["total"] = time.perf_counter() - t0
            kept = None
            if is_rank_zero():  # which model is kept: decided here, from the final records
                kept = self._decide_kept(study, winners)
                if not worker:  # what a later run's reproducibility record counts as its own
                    write_search_trials(study, self.ran_trials)
            if not worker and kept is not None:
                self._record(study, seconds, winners, kept)
                write_record(study, reproducibility_record(study, spec, self.ran_trials, timeout))
            return RunResult(
                study,
                self.out,
                self.storage,
                pareto_trials(study),
                winners,
                seconds,
                list(self.ran_trials),
                spec,
                kept,
                dict(tasks.done) if isinstance(tasks, SharedTasks) else {},
            )
        except STORAGE_ERRORS as e:
            failed = storage_failure(e, self.storage)  # a full disk: one line naming it
            if failed is None:
                raise
            raise failed from e
        finally:
            restore()
            self.close()

    def _run_phases(
        self,
        ctx: RunContext,
        n_trials: int | None,
        timeout: float | None,
        retrain: bool,
        worker: bool,
    ) -> tuple[dict[str, float], list[Winner]]:
        """Each phase in order, its inputs the outputs of the phases before it (the data,
        the stack, the supernet, the fine-tuning result): the seconds each took, and the
        retrained winners (best first)."""
        spec, seconds = ctx.spec, {}
        data: DataBundle | None = None
        supernet: Supernet | None = None
        if spec.table is None:  # tabular mode skips phases 0, 1 and 3
            data = self._load_data()
            assert data is not None
            choice = resolve_stack(ctx, data)  # (the anchors train through it too)
            self.stack = choice.stack
            if choice.calibration_seconds:
                seconds["calibration"] = choice.calibration_seconds
            if spec.anchors is not None and not worker and is_rank_zero():
                seconds["anchors"] = run_anchors(ctx, data, self.stack).seconds
            phase1 = run_supernet(
                ctx,
                data,
                self.stack,
                self._data_fingerprint,
                self.checkpoint_every,
                worker,
                found_at_start=self._checkpoints_at_start,
            )
            supernet, seconds["supernet"] = phase1.supernet, phase1.seconds
        screening = run_screening(ctx, self.stack, supernet, data, n_trials, timeout, worker)
        self.ran_trials.extend(screening.ran_trials)
        seconds["search"] = screening.seconds
        if self.stop.is_set():
            raise TrainingInterrupted("the search, between trials")
        finetuned = None
        winners: list[Winner] = []
        if spec.rungs is not None and data is not None and supernet is not None:
            # One schedule from the screening score to the full training, shared by every
            # worker, in place of the fine-tuning phase and phase 3.
            rungs = run_rung_schedule(ctx, data, supernet, self.stack, worker, retrain)
            seconds["rungs"] = rungs.seconds
            if worker:
                seconds["shared"] = self._serve(ctx, data, supernet)
            elif spec.trust is not None and is_rank_zero():
                seconds["trust"] = run_trust(ctx, data, supernet).seconds
            return seconds, list(rungs.winners)
        if worker and data is not None:
            seconds["shared"] = self._serve(ctx, data, supernet)
        lead = data is not None and not worker and is_rank_zero()
        if lead and spec.finetuning is not None and supernet is not None:
            phase = run_finetune(ctx, data, supernet, self.stack)
            finetuned, seconds["finetune"] = phase.result, phase.seconds
        if retrain and not worker and data is not None:
            phase3 = run_winners(ctx, data, self.stack, finetuned)
            winners, seconds["retrain"] = list(phase3.winners), phase3.seconds
        if lead and spec.trust is not None:
            # Last: nothing above reads the verdict, so the models a user keeps are not made
            # to wait for it (paired run 12, benchmarks/results/paired.md: the first
            # search-derived model 36-98 CPU-s sooner on CIFAR-10 and `hard`). The kept
            # model is decided by now: recorded first, so a stop in the probe leaves it.
            kept = self._decide_kept(ctx.study, winners)
            if kept.record is not None:
                write_record(ctx.study, kept.record)
            seconds["trust"] = run_trust(ctx, data, supernet).seconds
        return seconds, winners

    def _serve(self, ctx: RunContext, data: DataBundle, supernet: Supernet | None) -> float:
        """A worker after screening: take the trainings the study's process queues (trust
        probe, fine-tuning, retrains: whichever it queues, its ``--retrain`` decides) until
        it has decided; the seconds it served."""
        t0 = time.perf_counter()
        if not isinstance(ctx.tasks, SharedTasks):
            return 0.0
        spec, handlers = ctx.spec, {}
        if spec.trust is not None:
            handlers[TRUST] = trust_handler(ctx, data, supernet)
            if supernet is not None:
                handlers[POOL] = pool_handler(ctx, data, supernet)
        if spec.finetuning is not None and supernet is not None:
            engine = finetune_engine(ctx, data, supernet, self.stack)
            handlers[FINETUNE] = finetune_handler(engine, ctx.folder.ready)
        handlers[RETRAIN] = retrain_handler(ctx, data, self.stack)
        _LOG.info("worker: screening done; taking the trainings the study's process queues")
        n = ctx.tasks.serve(handlers)
        _LOG.info(f"worker: {n} trainings after screening run here")
        return time.perf_counter() - t0

    def _decide_kept(self, study: optuna.Study, winners: list[Winner]) -> KeptDecision:
        """The kept model from phase 3's ``winners`` and the study's records: the same rule
        before the trust probe (recorded early) and at the run's end."""
        inherited = self.spec.top_rung_inherited
        return decide_kept(winners, study_finetuned(study), study_anchors(study), inherited)

    def _record(
        self,
        study: optuna.Study,
        seconds: dict[str, float],
        winners: list[Winner],
        kept: KeptDecision,
    ) -> None:
        """The study-level records of a finished run: phase timings, the kept model
        (``kept``), screening and the search-level multipliers, all over the study's
        finished runs: the phase seconds are added to the earlier runs', and the one-shot
        multiplier comes from the stand-alone trainings this study measured (``winners``,
        retrained now or by an earlier run, and the fine-tuned ready models) over them. A
        finished study run again therefore reprints its own figures, not ~0 s ones."""
        spec = self.spec
        write_seconds(study, seconds)
        seconds = study_seconds(study)  # every finished run's, as the measurements below are
        finetuned = study_finetuned(study)
        if kept.record is not None:
            write_record(study, kept.record)
        screening = screening_record(study)
        if screening is not None:
            write_record(study, screening)
        if spec.baseline:  # the share of random architectures the kept model beats
            write_record(study, baseline_record(spec.baseline))
        if spec.table is None:
            trials = study.get_trials(deepcopy=False)
            measured = read_baseline(spec.baseline)[1] if spec.baseline else None
            runs = measured_trainings(
                trials,
                spec.train.epochs,
                [(w.number, w.measured_train_cost) for w in winners],
                finetuned,
            )
            multipliers = search_multipliers(
                trials,
                seconds,
                spec.finetune_epochs,
                study_stack(study),
                measured_standalone=measured or None,
                measured_runs=runs,
                finetuned=finetuned,
            )
            write_record(study, multipliers)
