"""What every phase of a study run reads (:class:`RunContext`) and what each returns.

The study runner (``nasflow.pipeline._runner``) builds one :class:`RunContext` and hands it
to each phase in turn, with the phase's inputs as arguments: the data, the stack, the
supernet, the fine-tuning result, each the output of an earlier phase that the runner
passes forward. A phase is a module with one entry point ``run_<phase>(ctx, ...)`` that
returns its result record (a frozen dataclass below) and changes nothing in the context
(it is frozen). Phases so far:

- ``_supernet.resolve_stack``: the speedup stack every phase trains with (``"auto"``
  resolved: the study's record, this device's, or a calibration now);
- ``_anchors.run_anchors``: zero-cost anchors trained from scratch first (0);
- ``_supernet.run_supernet``: train the supernet (1);
- ``_screening.run_screening``: the Optuna study proposing and scoring candidates (2);
- ``_finetune.run_finetune``: the finalists fine-tuned into ready models (2c);
- ``_retrain.run_winners``: retrain the best Pareto trials from scratch (3);
- ``_trust.run_trust``: how far the supernet's ranking can be trusted (phase 4, last).

A new phase adds a module with its ``run_<phase>(ctx, ...)`` and result record here, and
one line in ``StudyRunner.run``."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna

from nasflow.pipeline._schedule._tasks import LocalTasks, Tasks
from nasflow.record import RunFolder
from nasflow.space import Arch
from nasflow.storage import StorageSpec
from nasflow.train import TrainingInterrupted
from nasflow.train.stack import Stack

_LOG = logging.getLogger(__name__)

if TYPE_CHECKING:
    from nasflow.record import FineTuneResult, SupernetRecord
    from nasflow.search import StudySpec
    from nasflow.supernet import Supernet


def tables_url_of(storage: StorageSpec) -> str | None:
    """The database holding the cost model's and the stack's tables beside a study in
    ``storage`` (``None``: the per-user cache; journal files and in-memory studies have
    none)."""
    return storage.url if storage.kind != "journal" and storage.url else None


@dataclass(frozen=True)
class RunContext:
    """What every phase of one run reads, and none changes.

    Attributes:
        spec: The study.
        folder: The run's folder (checkpoints, winners, locks).
        storage: Where the study lives.
        study: The opened study.
        device: Training device.
        progress: Show progress bars (then per-step lines are quiet).
        stop: Set to stop gracefully (see ``StudyRunner``).
        started: ``time.perf_counter()`` when the run started (what "ready N seconds
            into the run" counts from).
        started_cpu: ``time.process_time()`` then (the process's CPU-seconds, all its
            threads).
        tasks: Where the trainings after screening run: in this process in order
            (:class:`~nasflow.pipeline._schedule._tasks.LocalTasks`), or queued for every
            process of the study (:class:`~nasflow.pipeline._schedule._tasks.SharedTasks`,
            on a shared storage).
    """

    spec: StudySpec
    folder: RunFolder
    storage: StorageSpec
    study: optuna.Study
    device: str
    progress: bool
    stop: threading.Event
    started: float = field(default_factory=time.perf_counter)
    started_cpu: float = field(default_factory=time.process_time)
    tasks: Tasks = field(default_factory=LocalTasks)

    @property
    def out(self) -> Path:
        """The run's folder (``RUNS/NAME``)."""
        return self.folder.root

    @property
    def tables_url(self) -> str | None:
        """The database holding the cost model's and the stack's tables beside the study
        (see :func:`tables_url_of`)."""
        return tables_url_of(self.storage)

    def check_stop(self, where: str) -> None:
        """Raise ``TrainingInterrupted`` (naming ``where``) if a stop was requested: the
        phases call it between their steps, where nothing is in flight."""
        if self.stop.is_set():
            raise TrainingInterrupted(where)

    # ------------------------------------------------------------------ lines
    @staticmethod
    def log(msg: str) -> None:
        """A line a user reads (``INFO`` on the ``nasflow`` logger)."""
        _LOG.info(msg)

    @staticmethod
    def quiet_log(msg: str) -> None:
        """A line of per-step detail, which progress bars stand for (``DEBUG``: the runner
        shows it where no progress bars are shown, ``nasflow._logging.lines_to``)."""
        _LOG.debug(msg)

    # ------------------------------------------------------------------ progress

    def bar(self, total: int, desc: str, unit: str = "epoch") -> Any:
        """A progress bar of ``total`` units, labelled with its phase (``None`` without
        progress bars)."""
        if not self.progress:
            return None
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, unit=unit, leave=True)

    @staticmethod
    def advance(bar: Any, epoch: int, loss: float) -> None:
        if bar is not None:
            bar.n = epoch
            bar.set_postfix(loss=f"{loss:.3f}")
            bar.refresh()

    @staticmethod
    def close_bar(bar: Any) -> None:
        if bar is not None:
            bar.close()


@dataclass(frozen=True)
class AnchorsPhaseResult:
    """Phase 0: the zero-cost anchors' trial numbers (none: the phase did not add any), and
    how long it took."""

    trials: tuple[int, ...]
    seconds: float


@dataclass(frozen=True)
class StackChoice:
    """The speedup stack every phase trains with (``None``: plain fp32 eager), and the
    seconds spent calibrating it (0: nothing was calibrated or probed)."""

    stack: Stack | None
    calibration_seconds: float


@dataclass(frozen=True)
class SupernetPhaseResult:
    """Phase 1: the supernet trained.

    Attributes:
        supernet: The trained supernet.
        info: The supernet record (``nasflow:supernet``).
        seconds: Seconds training the supernet took.
    """

    supernet: Supernet
    info: SupernetRecord
    seconds: float


@dataclass(frozen=True)
class ScreeningPhaseResult:
    """Phase 2: the trials this process ran, and how long the search took."""

    ran_trials: tuple[int, ...]
    seconds: float


@dataclass(frozen=True)
class FineTunePhaseResult:
    """The fine-tuning phase: every fine-tuned finalist, and how long it took."""

    result: FineTuneResult
    seconds: float


@dataclass(frozen=True)
class TrustPhaseResult:
    """Phase 4: whether the probe ran (a stored record is kept) and how long it took."""

    ran: bool
    seconds: float


@dataclass(frozen=True)
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
        spread: Retrained to spread the trained models over cost
            (``StudySpec.retrain_spread``): on the front, not a candidate for the kept
            model.
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
    spread: bool = False


@dataclass(frozen=True)
class WinnersPhaseResult:
    """Phase 3: the retrained (or reused) winners, and how long it took."""

    winners: tuple[Winner, ...]
    seconds: float
