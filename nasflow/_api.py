"""The Python façade: ``nasflow.optimize(spec)`` runs a study, ``nasflow.export_winner``
exports a model it found (retrained, fine-tuned or supernet weights),
``nasflow.load_exported`` loads it back.

(``nasflow.search`` and ``nasflow.export`` name the sub-packages, so the two calls are
``optimize``, after Optuna's ``study.optimize``, and ``export_winner``.)
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import optuna

    from nasflow.export import ExportInfo
    from nasflow.pipeline import RunResult
    from nasflow.search import StudySpec


def optimize(
    spec: StudySpec,
    *,
    n_trials: int | None = None,
    timeout: float | None = None,
    storage: str | optuna.storages.BaseStorage | None = None,
    out_dir: os.PathLike | str = "runs",
    retrain: bool = True,
    device: str = "cpu",
    progress: bool = False,
    log: Callable[[str], None] | None = print,
    stop: threading.Event | None = None,
) -> RunResult:
    """Run a study end to end: train the supernet (phase 1), screen candidates with
    Optuna (phase 2), retrain the winners from scratch (phase 3).

    Everything is stored as it goes (the study in its storage, the supernet checkpoints and
    the winners' weights in ``OUT_DIR/NAME/``), so calling it again with the same spec
    resumes: finished trials are kept and saved winners are not retrained.

    Args:
        spec: The study (space, data, objectives, recipes, sampler, pruner...).
        n_trials: Phase 2 candidates in all, finished ones included (default
            ``spec.n_trials``).
        timeout: Seconds phase 2 may run (Optuna's ``timeout``).
        storage: A storage URL or Optuna storage object; default ``spec.storage``, else the
            storage of ``spec.study``, else ``OUT_DIR/NAME/study.db`` (SQLite).
        out_dir: Folder holding one sub-folder per study.
        retrain: Run phase 3.
        device: Training device (``"cpu"``, ``"cuda"``...).
        progress: Show progress bars.
        log: Where the run's lines go (``None``: only the standard ``logging`` logger
            ``nasflow``, silent unless the application configures it).
        stop: Set it (from a signal handler, say) to stop gracefully; the call then raises
            ``TrainingInterrupted`` and a later call resumes.

    Returns:
        The ``RunResult``: ``.study`` (the ``optuna.Study``, with ``metric_names`` set),
        ``.pareto`` (its Pareto trials), ``.winners`` (retrained test accuracy, measured
        training time, where the weights are) and ``.spec``.
    """
    from nasflow.pipeline import StudyRunner
    from nasflow.search import StudyFileError, StudySpec

    if not isinstance(spec, StudySpec):
        raise StudyFileError(
            f"optimize() takes a StudySpec (or nasflow.search.load_study_file(PATH)), got {spec!r}"
        )
    _check_run_arguments(n_trials, timeout, device)  # as the CLI checks them, before anything
    runner = StudyRunner(
        spec,
        storage=storage,
        out_dir=out_dir,
        log=log,
        progress=progress,
        device=device,
        stop=stop,
    )
    return runner.run(n_trials=n_trials, timeout=timeout, retrain=retrain)


def _check_run_arguments(n_trials: object, timeout: object, device: object) -> None:
    """``optimize``'s counts, seconds and device, refused in one line as the CLI refuses
    ``--n-trials``, ``--timeout`` and a device torch does not know."""
    import torch

    from nasflow._checks import check_int
    from nasflow.errors import ConfigError

    check_int("n_trials", n_trials, 1, optional=True)
    if timeout is not None and not (
        isinstance(timeout, int | float)
        and not isinstance(timeout, bool)
        and math.isfinite(timeout)
        and timeout > 0
    ):
        raise ConfigError(f"timeout must be a number of seconds > 0 or None, got {timeout!r}")
    try:
        torch.device(device)  # type: ignore[call-overload]
    except (RuntimeError, TypeError):
        raise ConfigError(
            f"device must be a torch device such as 'cpu', 'cuda' or 'cuda:1', got {device!r}"
        ) from None


def export_winner(
    result: RunResult,
    out: os.PathLike | str,
    *,
    trial: int | None = None,
    weights: str = "auto",
    onnx: bool = True,
    force: bool = False,
    log: Callable[[str], None] | None = print,
) -> ExportInfo:
    """Export one model of a study as plain PyTorch (``arch.json`` + ``model.safetensors``,
    a ``torch.export`` program and, with ``onnx``, a checked ONNX file), through
    :func:`nasflow.export.export`.

    Args:
        result: What :func:`optimize` returned.
        out: The export directory to create.
        trial: The trial to export. Default: the model the study kept (the summary's
            "kept model": the search's retrained choice or a zero-cost anchor that
            validates higher; for a study that retrained nothing, the most accurate Pareto
            trial); with ``weights="fine-tuned"``, the ready model with the best validation
            accuracy.
        weights: ``"retrained"`` (the weights phase 3 trained from scratch; an error where
            it did not), ``"fine-tuned"`` (a ready model of the fine-tuning phase, exactly
            as saved), ``"supernet"`` (inherited, BN re-estimated) or ``"auto"``:
            retrained where saved, else the supernet's.
        onnx: Also write ``model.onnx`` (needs the ``onnx`` extra).
        force: Replace an existing export at ``out`` (only a complete nasflow export).
        log: Where the export's lines go (``None``: only the standard ``logging`` logger
            ``nasflow``, as the application configures it; silent by default).

    Returns:
        The export's record (``arch.json``): ``metrics`` holds only numbers measured with
        exactly the exported weights, ``weights["kind"]`` says which they are.

    Raises:
        ExportError: ``result`` is not a ``RunResult`` of :func:`optimize`, or what
            :func:`nasflow.export.export` refuses (no such trial or ready model, no
            retrained weights, damaged files).
    """
    from nasflow.export import ExportError, export
    from nasflow.pipeline import RunResult

    if not isinstance(result, RunResult):
        raise ExportError(
            f"export_winner takes the RunResult that nasflow.optimize returned, got {result!r}"
        )
    spec = result.spec
    if spec is None:
        raise ExportError("export_winner needs the RunResult of nasflow.optimize (it has no spec)")
    storage = result.storage.given if result.storage.given is not None else result.storage.url
    (info,) = export(
        spec.name,
        out,
        which="best" if trial is None else trial,
        weights=weights,
        storage=storage,
        runs=result.out_dir.parent,
        spec=spec,
        onnx=onnx,
        force=force,
        log=log,
    )
    return info
