"""The one export entry point: trials of a stored study, with the weights asked for.

``nasflow export``, the façade ``nasflow.export_winner`` and Python callers all go through
:func:`export`; it checks the choice of trials and weights, then hands over to the trial
exporter (retrained or supernet weights, ``_study``) or the ready-model exporter
(fine-tuned weights, ``_ready``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from nasflow._logging import lines_to
from nasflow.errors import ConfigError
from nasflow.export._format import FINE_TUNED, WEIGHT_KINDS, ExportInfo
from nasflow.export._ready import export_ready
from nasflow.export._study import export_study

if TYPE_CHECKING:
    import optuna

    from nasflow.search import StudySpec

#: What ``weights`` accepts: ``"auto"`` (a trial's retrained weights where phase 3 saved
#: them, else the supernet's) or one kind (``"retrained"``, ``"fine-tuned"``,
#: ``"supernet"``).
WEIGHTS = ("auto", *WEIGHT_KINDS)


def check_choice(which: object, weights: object) -> None:
    """Refuse a ``which`` or ``weights`` that :func:`export` does not accept, in one line.

    Raises:
        ConfigError: ``weights`` is not one of ``WEIGHTS``; ``which`` is neither
            ``"best"``, ``"pareto"`` nor a trial number ``>= 0``; or ``"pareto"`` with
            fine-tuned weights (a study's ready models are not its Pareto set).
    """
    if weights not in WEIGHTS:
        raise ConfigError(f"weights must be one of {', '.join(WEIGHTS)}, got {weights!r}")
    trial = isinstance(which, int) and not isinstance(which, bool)
    if not (which in ("best", "pareto") or (trial and which >= 0)):  # type: ignore[operator]
        raise ConfigError(f"which must be 'best', 'pareto' or a trial number >= 0, got {which!r}")
    if weights == FINE_TUNED and which == "pareto":
        raise ConfigError(
            "fine-tuned weights are those of one ready model: which must be 'best' (the "
            "ready model with the best validation accuracy) or its trial number, got 'pareto'"
        )


def export(
    name: str,
    out: os.PathLike | str,
    *,
    which: str | int = "best",
    weights: str = "auto",
    storage: str | optuna.storages.BaseStorage | None = None,
    runs: os.PathLike | str = "runs",
    study_file: str | None = None,
    spec: StudySpec | None = None,
    recalibrate: bool = True,
    onnx: bool = True,
    force: bool = False,
    log: Callable[[str], None] | None = print,
) -> list[ExportInfo]:
    """Export trials of a stored study as plain PyTorch (``nasflow export``).

    Everything is checked before anything is written; the folder is written next to
    ``out`` and renamed, so a failure leaves nothing. ``out`` may replace only a complete
    nasflow export, and only with ``force``.

    Which weights an export holds (``arch.json``'s ``weights["kind"]``), each recorded with
    the metrics of exactly those weights:

    - ``"retrained"``: the weights phase 3 trained from scratch (``RUNS/NAME/winners``),
      with their test and validation accuracy and measured training seconds; a trial
      phase 3 did not retrain is an error.
    - ``"fine-tuned"``: a ready model of the fine-tuning phase (``RUNS/NAME/ready``),
      exactly as saved (batch norm not recalibrated); ``which`` is ``"best"`` (the best
      validation accuracy) or its trial number.
    - ``"supernet"``: the supernet's, with batch-norm statistics re-estimated on the
      study's training data as the search scored them (unless ``recalibrate`` is false),
      with their validation accuracy measured now where the study's data is found.
    - ``"auto"``: retrained where phase 3 saved them, else the supernet's.

    Args:
        name: The study's name in its storage.
        out: The export directory to create (with ``which="pareto"``, one ``trial-N``
            folder per Pareto trial inside it).
        which: ``"best"`` (the model the study kept: its retrained choice or a zero-cost
            anchor; for a study that retrained nothing, the most accurate Pareto trial),
            ``"pareto"`` (every Pareto trial) or a trial number.
        weights: ``"auto"``, ``"retrained"``, ``"fine-tuned"`` or ``"supernet"``.
        storage: Storage URL or Optuna storage object (default ``RUNS/NAME/study.db``).
        runs: The folder the search wrote to (checkpoints, winners, ready models).
        study_file: A study file or registered study name: its data (batch norm, input
            shape) and its space where no registry knows it.
        spec: The study itself (space and data), for a space that is not registered.
        recalibrate: Re-estimate batch-norm statistics of supernet weights (fine-tuned
            weights are always exported as saved: false is refused with them).
        onnx: Also write and check ``model.onnx`` (needs the ``onnx`` extra).
        force: Replace an existing complete export at ``out``.
        log: Where the export's lines go (``print``: the terminal); ``None``: the
            standard ``logging`` logger ``nasflow`` only, as the application configures it.

    Returns:
        The record written to each export's ``arch.json``, in the order of ``which``.

    Raises:
        ConfigError: A ``which``, ``weights`` or ``recalibrate`` it does not accept.
        ExportError: Anything missing or inconsistent (no such trial or ready model, no
            retrained weights, damaged files); nothing is written then.
        StudyRecordError: No such study, or no usable record of its space.
        StudyFileError: ``study_file`` does not exist or does not run.
        StorageError: A bad or unreachable storage.
    """
    check_choice(which, weights)
    if weights == FINE_TUNED:
        if not recalibrate:
            raise ConfigError(
                "recalibrate=False does not apply to fine-tuned weights (exported as saved)"
            )
        with lines_to(log):
            return [export_ready(name, out, which, storage, runs, study_file, spec, onnx, force)]
    with lines_to(log):
        return export_study(
            name, out, which, storage, runs, study_file, spec, recalibrate, onnx, force, weights
        )
