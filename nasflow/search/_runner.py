"""The study runner: phase 1 (supernet), phase 2 (Optuna search), phase 3 (retrain)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from nasflow._checks import check_int
from nasflow._files import file_lock
from nasflow._regular import check_run_folders
from nasflow.bench import TabularObjective
from nasflow.data import DataBundle, check_bundle, data_fingerprint
from nasflow.names import objective_names
from nasflow.record import (
    DUPLICATE_KEY,
    MULTIPLIERS_KEY,
    SCREENING_KEY,
    SECONDS_KEY,
    STACK_KEY,
    SUPERNET_KEY,
    TRUST_KEY,
    RunFolder,
    StudyMismatchError,
    check_identity,
    has_identity,
    retrain_key,
    study_identity,
    study_stack_dict,
    supernet_identity,
    write_identity,
)
from nasflow.search._baseline import read_baseline, screening_record
from nasflow.search._budget import SKIPS_BEFORE_NOTE, budget_excludes
from nasflow.search._identity import scoring_record
from nasflow.search._multipliers import search_multipliers, stack_line
from nasflow.search._objective import (
    CandidateError,
    CandidateScorer,
    make_reporter,
)
from nasflow.search._optuna import sampler_seed, study_pruner, study_sampler
from nasflow.search._recovery import (
    heartbeat_settings,
    requeue_interrupted,
    sweep_zombies,
)
from nasflow.search._retrain import recipe_for, retrain_arch
from nasflow.search._spec import StudySpec
from nasflow.search._trust import run_trust_probe, trust_record
from nasflow.search._winners import WEIGHTS_FILE as WINNER_WEIGHTS
from nasflow.search._winners import find_winner, save_winner
from nasflow.space import Arch
from nasflow.storage import (
    SQLiteLock,
    StorageError,
    StorageSpec,
    check_reachable,
    open_storage,
    resolve_storage,
)
from nasflow.supernet import Supernet
from nasflow.train import SupernetTrainer, TrainingInterrupted
from nasflow.train.stack import Stack, is_rank_zero


@dataclass
class Winner:
    """A retrained winner (phase 3): trial ``number``'s architecture trained from scratch.

    Attributes:
        number: The trial.
        arch: Its architecture.
        val_accuracy: Accuracy of the retrained weights on the validation split.
        test_accuracy: Accuracy of the retrained weights on the test split.
        predicted_train_cost: The cost model's predicted training seconds (search).
        measured_train_cost: Measured seconds of the from-scratch training.
        params: Parameter count.
        weights: The folder holding the retrained weights and their record
            (``OUT/NAME/winners/trial-N``), or ``None`` when they were not saved.
        reused: Taken from an earlier run's saved winner instead of retrained now.
    """

    number: int
    arch: Arch
    val_accuracy: float
    test_accuracy: float
    predicted_train_cost: float
    measured_train_cost: float
    params: int
    weights: Path | None = None
    reused: bool = False


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


def pareto_trials(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """The study's Pareto set, best accuracy first.

    Optuna's ``study.best_trials`` (completed, feasible where trials carry constraints,
    non-dominated) less the trials that reused an earlier trial's score
    (``user_attrs["duplicate_of"]``): such a trial is the same architecture as its first
    trial, which has the same values and constraints and so is in the set already.
    """
    front = [t for t in study.best_trials if DUPLICATE_KEY not in t.user_attrs]
    return sorted(front, key=lambda t: -t.values[0])


class StudyRunner:
    """Runs a ``StudySpec`` end to end against a storage.

    Args:
        spec: The study.
        storage: ``--storage`` URL or an Optuna storage object; ``None`` for the spec's
            (``spec.storage``, else the storage of ``spec.study``, else
            ``OUT/NAME/study.db``, SQLite).
        out_dir: Folder holding one sub-folder per study (supernet checkpoints, reports).
        log: Line logger.
        progress: Show progress bars.
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
        log: Callable[[str], None] = print,
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
        self._worker = False
        #: The speedup stack every phase trains with (``spec.stack``, resolved by ``run``).
        self.stack: Stack | None = spec.stack if isinstance(spec.stack, Stack) else None

    # ------------------------------------------------------------------ storage and study
    @property
    def _tables_url(self) -> str | None:
        """The database holding the cost model's and the stack's tables beside the study
        (``None``: the per-user cache; journal files and in-memory studies have none)."""
        return self.storage.url if self.storage.kind != "journal" and self.storage.url else None

    def _identity(self) -> dict[str, str]:
        spec = self.spec
        supernet = None if spec.table is not None else asdict(spec.supernet)
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
        study.sampler = study_sampler(self.spec, sampler_seed(seed, created))
        study.pruner = study_pruner(self.spec)[0]
        return study

    def _check_identity(self, study: optuna.Study, directions: list[str]) -> None:
        ident, names = self._identity(), self.metric_names
        for note in check_identity(study, ident, directions, names, self.storage.safe_url):
            self.log(note)

    def _sweep_zombies(self, study: optuna.Study) -> None:
        """Fail trials left RUNNING by dead workers, and retry each at most once."""
        sweep_zombies(study, self.storage.kind, self.heartbeat[1], self.log)

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # ------------------------------------------------------------------ phases
    def resolve_stack(self, study: optuna.Study, data: DataBundle) -> float:
        """Set ``self.stack`` from the spec. For ``"auto"``: keep the record stored on the
        study (a resumed study trains on with the stack its checkpoints were written
        with), else reuse this device's record from the database's stack calibration table
        (nothing trains), else calibrate within ``spec.stack_budget`` and store the record
        there (rank 0); the record is copied to the study either way. Returns the seconds
        spent calibrating (0 when nothing was calibrated or probed).

        A fixed stack or ``None`` measures and stores nothing (the report says "not
        measured"). Concurrent workers wait for the one that calibrates, then reuse its
        choice, so every process (and the supernet checkpoints) trains with one stack.
        """
        if self.spec.stack != "auto":
            return 0.0
        from nasflow.calibrate import device_stack, recalibration_requested

        spec = self.spec
        refresh = spec.recalibrate_stack or recalibration_requested()
        with file_lock(self.folder.stack_lock):
            stored = study.user_attrs.get(STACK_KEY)
            resumed = study_stack_dict(study)
            if resumed is not None:
                self.stack = Stack.from_dict(resumed)
                again = " (not recalibrated: a study keeps the stack it started with)"
                self.log(f"{stack_line(stored)}; stored with this study{again * refresh}")
                return 0.0
            train = data.batches("train", spec.train.batch_size, spec.seed)
            res = device_stack(
                spec.space,
                train,
                data.batches("val"),
                spec.train.lr,
                spec.train.weight_decay,
                planned_batches=spec.train.epochs * len(train),
                storage_url=self._tables_url,
                device=self.device,
                seed=spec.seed,
                budget=spec.stack_budget,
                refresh=refresh,
                store=is_rank_zero(),
                log=self._quiet_log,
            )
            self.stack = res.stack
            if is_rank_zero():
                study.set_user_attr(STACK_KEY, res.record)
            self.log(stack_line(res.record))
            return 0.0 if res.reused else res.seconds

    def train_supernet(self, data: DataBundle) -> Supernet:
        """Phase 1 (resumable; concurrent workers wait for the one that trains)."""
        spec = self.spec
        ckpt = self.folder.supernet
        bar = self._bar(spec.supernet.epochs, "phase 1: supernet")
        with file_lock(self.folder.supernet_lock):
            trainer = SupernetTrainer(
                spec.space,
                data.train,
                spec.supernet,
                ckpt,
                self.device,
                log=self._quiet_log,
                checkpoint_every=self.checkpoint_every,
                should_stop=self.stop.is_set,
                stack=self.stack,
                data_fingerprint=self._data_fingerprint,
            )
            result = trainer.fit(on_epoch=lambda e, loss: self._advance(bar, e, loss))
        self._close(bar)
        self._supernet_info = {
            "sampler": spec.supernet.sampler,
            "epochs": result.epochs_done,
            "paths_per_step": trainer.sampler.paths_per_step,
            "seconds": result.seconds,
            "resumed_from": result.resumed_from,
            "losses": result.losses,
            "op_counts": result.op_counts.as_rows(),
        }
        return result.supernet

    def search(
        self,
        study: optuna.Study,
        supernet: Supernet | None,
        data: DataBundle | None,
        n_trials: int | None,
        timeout: float | None,
    ) -> None:
        """Phase 2: the Optuna study over supernet paths (or table lookups)."""
        spec = self.spec
        scorer: Callable[[optuna.Trial], Any]
        if spec.table is not None:  # tabular mode: scores are looked up, nothing trains
            scorer = TabularObjective(spec.table)
        else:
            _, multi_pruner = study_pruner(spec)
            scorer = CandidateScorer(
                spec.replace(stack=self.stack),  # "auto" resolved
                supernet,  # type: ignore[arg-type]
                data,  # type: ignore[arg-type]
                make_reporter(spec, multi_pruner),
                self.device,
                checkpoint_dir=self.folder.finetune,
                should_stop=self.stop.is_set,
                log=self._quiet_log,
                cost_storage=self._tables_url,
                remeasure_costs=spec.remeasure_costs,
            )
        finished = len(
            study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))
        )
        target = spec.n_trials if n_trials is None else n_trials
        todo = max(0, target - finished)
        if finished:
            self.log(f"resuming: {finished} finished trials kept, {todo} to go")
        if todo == 0:
            return
        optuna.logging.set_verbosity(optuna.logging.WARNING)

        bar = self._bar(todo, "phase 2: search", unit="trial")

        def after_trial(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
            self.ran_trials.append(trial.number)
            if bar is not None:
                bar.update(1)
            self._say_budget(study, trial)
            if not self.progress:
                vals = ", ".join(f"{v:.4g}" for v in trial.values or [])
                attrs = trial.user_attrs
                why = attrs.get("fail_reason", attrs.get("skipped"))
                why = f" ({why})" if why and trial.state != TrialState.COMPLETE else ""
                if DUPLICATE_KEY in trial.user_attrs:
                    why = f" (architecture of trial {trial.user_attrs[DUPLICATE_KEY]}, reused)"
                self.log(f"trial {trial.number} {trial.state.name.lower()} {vals}{why}")
            if self.stop.is_set():
                study.stop()  # stop requested while no training step was running

        try:
            self._optimize(study, scorer, todo, timeout, target, after_trial)
        finally:
            self._close(bar)
            # A trial stopped on request is FAIL now (even where ``catch`` swallowed the
            # stop): queue it again with the same parameters, to resume from its checkpoint.
            stopped = getattr(scorer, "interrupted", None)
            if stopped is not None:
                requeue_interrupted(study, stopped)
                self.log(f"trial {stopped} stopped and queued to resume from its checkpoint")

    def _optimize(
        self,
        study: optuna.Study,
        scorer: Callable[[optuna.Trial], Any],
        todo: int,
        timeout: float | None,
        target: int,
        after_trial: Callable[[optuna.Study, optuna.trial.FrozenTrial], None],
    ) -> None:
        study.optimize(
            scorer,
            n_trials=todo,
            timeout=timeout,
            catch=(CandidateError, *self.spec.catch),
            callbacks=[
                after_trial,
                optuna.study.MaxTrialsCallback(
                    target, states=(TrialState.COMPLETE, TrialState.PRUNED)
                ),
            ],
            show_progress_bar=False,  # (the labelled bar of ``search`` is shown instead)
            gc_after_trial=False,
        )

    def _say_budget(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        """Once, after the first few over-budget skips with nothing feasible: say that the
        budget excludes what is proposed, with the smallest candidate's figures."""
        if self._budget_said or "skipped" not in trial.user_attrs:
            return
        trials = study.get_trials(deepcopy=False)
        skipped = sum("skipped" in t.user_attrs for t in trials)
        if skipped < min(SKIPS_BEFORE_NOTE, self.spec.n_trials):
            return
        note = budget_excludes(trials, self.spec.budget)
        if note is not None:
            self._budget_said = True
            self.log(f"warning: {note}")

    def retrain(self, study: optuna.Study, data: DataBundle) -> list[Winner]:
        """Phase 3: retrain the best Pareto trials from scratch; test accuracy + real cost.

        Each winner's weights and record (recipe, seed, test and validation accuracy,
        measured training time) are saved in ``OUT/NAME/winners/trial-N/``, atomically and
        checksummed. A winner saved there by an earlier run with the same space,
        architecture, recipe, seed, speedup stack and data (name and split sizes) is
        reused instead of retrained.
        """
        spec, winners = self.spec, []
        splits = (data.train, data.val, data.test)
        front = pareto_trials(study)[: spec.retrain_top]
        for t in front:
            arch = Arch.from_json(t.user_attrs["arch"])
            recipe = recipe_for(arch, spec.train)
            folder = self.folder.winner(t.number)
            identity = {
                "space": spec.space.name,
                "fingerprint": spec.space.fingerprint(),
                "arch": arch.to_dict(),
                "recipe": asdict(recipe),
                "seed": spec.seed,
                "stack": (self.stack or Stack()).to_dict(),
                "data": {
                    "name": data.name,
                    "sizes": [getattr(d, "__len__", lambda: None)() for d in splits],
                },
            }
            saved, why = find_winner(folder, identity)
            if saved is not None:
                self.log(f"phase 3: trial {t.number} was retrained by an earlier run: {folder}")
                w = Winner(
                    t.number,
                    arch,
                    float(saved["val_accuracy"]),
                    float(saved["test_accuracy"]),
                    float(t.user_attrs["train_cost"]),
                    float(saved["measured_train_cost"]),
                    int(t.user_attrs["params"]),
                    folder,
                    reused=True,
                )
            else:
                if why:
                    self.log(f"phase 3: retraining trial {t.number}: {why}")
                w = self._retrain_one(t, arch, recipe.epochs, data, folder, identity)
            winners.append(w)
            record = {k: v for k, v in asdict(w).items() if k not in ("arch", "weights", "reused")}
            if w.weights is not None:
                record["weights"] = str(w.weights.relative_to(self.out) / WINNER_WEIGHTS)
            study.set_user_attr(retrain_key(t.number), record)
        return winners

    def trust_probe(self, study: optuna.Study, data: DataBundle) -> None:
        """Phase 2b: how far the supernet's ranking can be trusted on this space (once per
        study: a stored record is kept while no new candidate was screened)."""
        spec = self.spec
        scored: dict[Arch, float] = {}
        for t in study.get_trials(deepcopy=False):
            if "supernet_accuracy" in t.user_attrs and "arch" in t.user_attrs:
                scored.setdefault(
                    Arch.from_json(t.user_attrs["arch"]), t.user_attrs["supernet_accuracy"]
                )
        stored = study.user_attrs.get(TRUST_KEY)
        if isinstance(stored, dict) and stored.get("screened") == len(scored):
            return
        if len(scored) < spec.trust.archs:  # type: ignore[union-attr]
            self.log(
                f"trust probe skipped: {len(scored)} screened architectures, fewer than "
                f"its {spec.trust.archs}"  # type: ignore[union-attr]
            )
            return
        result = run_trust_probe(
            spec.space,
            list(scored.items()),
            data.batches("train", spec.train.batch_size, spec.seed),
            data.batches("val"),
            spec.train,
            spec.trust,  # type: ignore[arg-type]
            seed=spec.seed,
            device=self.device,
            log=self._quiet_log,
        )
        study.set_user_attr(TRUST_KEY, {**trust_record(result), "screened": len(scored)})

    def _retrain_one(
        self,
        t: optuna.trial.FrozenTrial,
        arch: Arch,
        epochs: int,
        data: DataBundle,
        folder: Path,
        identity: dict[str, Any],
    ) -> Winner:
        """Train one winner from scratch, score it, and save its weights (rank 0)."""
        bar = self._bar(epochs, f"phase 3: retrain trial {t.number}")
        net, _, res = retrain_arch(
            self.spec,
            arch,
            data,
            self.stack,
            self.device,
            on_epoch=lambda e, loss, b=bar: self._advance(b, e, loss),
        )
        self._close(bar)
        w = Winner(
            t.number,
            arch,
            res.val_accuracy,
            float(res.test_accuracy or 0.0),
            float(t.user_attrs["train_cost"]),
            res.seconds,
            int(t.user_attrs["params"]),
        )
        if is_rank_zero():
            save_winner(
                folder,
                net,
                {
                    **identity,
                    "study": self.spec.name,
                    "trial": t.number,
                    "test_accuracy": w.test_accuracy,
                    "val_accuracy": w.val_accuracy,
                    "measured_train_cost": w.measured_train_cost,
                    "predicted_train_cost": w.predicted_train_cost,
                    "params": w.params,
                    "device": str(self.device),
                },
            )
            w.weights = folder
        return w

    # ------------------------------------------------------------------ all phases
    def run(
        self,
        n_trials: int | None = None,
        timeout: float | None = None,
        retrain: bool = True,
        worker: bool = False,
    ) -> RunResult:
        """Validate, then run the phases; a worker skips phase 3."""
        spec = self.spec
        t0 = time.perf_counter()
        try:
            check_run_folders(self.out)  # (a FIFO there would hang, a link mislead)
            study = self.open_study(worker=worker)
            self.log(f"study {spec.name!r} in {self.storage.safe_url}")
            seconds: dict[str, float] = {}
            data, supernet = None, None
            if spec.table is None:  # tabular mode skips phases 1 and 3
                data = self._load_data()
                assert data is not None
                calibration = self.resolve_stack(study, data)
                if calibration:
                    seconds["calibration"] = calibration
                t = time.perf_counter()
                supernet = self.train_supernet(data)
                seconds["supernet"] = time.perf_counter() - t
                if not worker:
                    study.set_user_attr(SUPERNET_KEY, self._supernet_info)
            t = time.perf_counter()
            self.search(study, supernet, data, n_trials, timeout)
            seconds["search"] = time.perf_counter() - t
            if self.stop.is_set():
                raise TrainingInterrupted("the search, between trials")
            if spec.trust is not None and not worker and data is not None and is_rank_zero():
                t = time.perf_counter()
                self.trust_probe(study, data)
                seconds["trust"] = time.perf_counter() - t
            winners: list[Winner] = []
            if retrain and not worker and data is not None:
                t = time.perf_counter()
                winners = self.retrain(study, data)
                seconds["retrain"] = time.perf_counter() - t
            seconds["total"] = time.perf_counter() - t0
            if not worker and is_rank_zero():
                study.set_user_attr(SECONDS_KEY, seconds)
                screening = screening_record(study)
                if screening is not None:
                    study.set_user_attr(SCREENING_KEY, screening)
                if spec.table is None:
                    trials = study.get_trials(deepcopy=False)
                    measured = read_baseline(spec.baseline)[1] if spec.baseline else None
                    multipliers = search_multipliers(
                        trials,
                        seconds,
                        spec.finetune_epochs,
                        study.user_attrs.get(STACK_KEY),
                        measured_standalone=measured or None,
                    )
                    study.set_user_attr(MULTIPLIERS_KEY, multipliers)
            return RunResult(
                study,
                self.out,
                self.storage,
                pareto_trials(study),
                winners,
                seconds,
                list(self.ran_trials),
                spec,
            )
        finally:
            self.close()

    # ------------------------------------------------------------------ progress
    def _quiet_log(self, msg: str) -> None:
        if not self.progress:
            self.log(msg)

    def _bar(self, total: int, desc: str, unit: str = "epoch") -> Any:
        if not self.progress:
            return None
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, unit=unit, leave=True)

    @staticmethod
    def _advance(bar: Any, epoch: int, loss: float) -> None:
        if bar is not None:
            bar.n = epoch
            bar.set_postfix(loss=f"{loss:.3f}")
            bar.refresh()

    @staticmethod
    def _close(bar: Any) -> None:
        if bar is not None:
            bar.close()
