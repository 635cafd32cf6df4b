"""Exporting a study's ready models: the fine-tuning phase's weights, exactly as saved.

The fine-tuning phase saves every finalist it fine-tuned from inherited supernet weights
in ``RUNS/NAME/ready/trial-N`` (``model.safetensors`` and ``record.json``) and lists them in
the study's record (``nasflow.record.FINETUNED_KEY``). An export of one is written like
every other export (same files, loader and ``--force`` rules), with those weights as saved:
nothing is recalibrated or trained.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasflow._regular import check_folder
from nasflow.errors import ConfigError
from nasflow.export._format import FINE_TUNED, ExportError, ExportInfo, finetuned_notes
from nasflow.export._study import (
    data_input_shape,
    open_for_export,
    search_record,
    trained_stack,
    write_prepared,
)
from nasflow.export._writer import check_target, prepare_trained
from nasflow.record import (
    FineTuned,
    ReadyModelError,
    RunFolder,
    stored_space,
    study_finetuned,
)
from nasflow.space import Arch, SearchSpace

if TYPE_CHECKING:
    import optuna
    from torch import nn

    from nasflow.search import StudySpec

#: How the fine-tuning phase leaves batch norm in a ready model.
READY_BATCH_NORM = (
    "running statistics of the fine-tuning (re-estimated on training batches of the "
    "inherited weights before its first epoch), as saved"
)


def ready_models(study: optuna.Study) -> list[FineTuned]:
    """The ready models ``study`` recorded (fine-tuned finalists with weights), best
    validation accuracy first (ties: more epochs, then the lower trial number).

    Raises:
        ExportError: The study's record of its fine-tuning phase is malformed.
    """
    try:
        result = study_finetuned(
            study, f"study {study.study_name!r}'s record of its fine-tuning phase"
        )
    except ReadyModelError as e:
        raise ExportError(str(e)) from None
    if result is None:
        return []
    return sorted(result.ready, key=lambda c: (-c.val_accuracy, -c.epochs, c.trial))


def _listing(ready: list[FineTuned]) -> str:
    """``trial 3 (val 0.6100, 2 epochs), ...``: what ``--ready`` accepts."""
    return ", ".join(
        f"trial {c.trial} (validation accuracy {c.val_accuracy:.4f}, {c.epochs} epoch"
        + "s" * (c.epochs != 1)
        + ")"
        for c in ready
    )


def select_ready(study: optuna.Study, which: str | int) -> FineTuned:
    """The ready model ``which``: ``"best"`` (the best validation accuracy, see
    :func:`ready_models`) or the one of a trial number.

    Raises:
        ConfigError: ``which`` is neither.
        ExportError: The study has no ready model, or none of that trial; the message
            lists the ready models there are.
    """
    if isinstance(which, bool) or not (which == "best" or isinstance(which, int)):
        raise ConfigError(f"ready must be 'best' or a trial number, got {which!r}")
    name = study.study_name
    ready = ready_models(study)
    if not ready:
        tuned = study_finetuned(study)
        why = (
            f"all {len(tuned.candidates)} of its fine-tuned finalists diverged"
            if tuned is not None and tuned.candidates
            else "it recorded no finished fine-tuning phase (StudySpec(finetuning="
            "FineTuning(...)) makes them)"
        )
        raise ExportError(
            f"study {name!r} has no ready models: {why}; export a trial with --best, "
            "--trial N or --pareto instead"
        )
    if which == "best":
        return ready[0]
    for c in ready:
        if c.trial == which:
            return c
    raise ExportError(
        f"study {name!r} has no ready model of trial {which}; its ready models, best "
        f"validation accuracy first: {_listing(ready)}"
    )


def export_ready(
    name: str,
    out: os.PathLike | str,
    which: str | int = "best",
    storage: str | optuna.storages.BaseStorage | None = None,
    runs: os.PathLike | str = "runs",
    study_file: str | None = None,
    spec: StudySpec | None = None,
    onnx: bool = True,
    force: bool = False,
) -> ExportInfo:
    """Export a ready model of a stored study with its fine-tuned weights, exactly as
    saved (batch norm is not recalibrated).

    The arguments are :func:`nasflow.export.export`'s (which checks them): ``which`` is
    ``"best"`` (the ready model with the best validation accuracy) or a trial number.
    ``arch.json`` and ``README.md`` record the weights as ``"fine-tuned"`` with their
    epochs, their validation and test accuracy (and which split each is of) and the
    measured seconds of their fine-tuning.

    Raises:
        ExportError: No ready model (or none of that trial), its files are missing,
            corrupt, not regular files or not of its architecture; nothing is written then.
        SpecialFileError: A run folder that is a link, FIFO or file.
    """
    out = Path(out)
    study, spec, data_of, base = open_for_export(name, storage, runs, study_file, spec, onnx)
    chosen = select_ready(study, which)
    space = stored_space(study, spec.space if spec is not None else None)
    check_target(out, force)
    net, info = _prepare_ready(
        study,
        chosen,
        space,
        RunFolder.of(runs, name).ready / f"trial-{chosen.trial}",
        base,
        data_input_shape(space, study, data_of),
    )
    return write_prepared(out, space, [(chosen.trial, net, info)], False, onnx, force)[0]


def _prepare_ready(
    study: optuna.Study,
    chosen: FineTuned,
    space: SearchSpace,
    folder: Path,
    base: dict[str, Any],
    input_shape: tuple[int, ...] | None,
) -> tuple[nn.Module, ExportInfo]:
    """The network of the ready model in ``folder`` with its saved weights, and its record,
    after checking that the folder holds the ready model the study recorded."""
    from nasflow.pipeline import WinnerError, load_winner_weights, read_ready

    name, n = study.study_name, chosen.trial
    what = f"the ready model of trial {n} of study {name!r}"
    check_folder(folder, what)  # (a link or FIFO there: one line, nothing opened)
    if not folder.is_dir():
        raise ExportError(f"{what} is recorded, but {str(folder)!r} does not exist")
    try:
        saved, record = read_ready(folder)
        state = load_winner_weights(folder, record)
    except (WinnerError, ReadyModelError) as e:
        raise ExportError(f"{what} is unusable: {e}") from None
    same = (saved.trial, saved.arch, saved.val_curve, saved.test_accuracy) == (
        n,
        chosen.arch,
        chosen.val_curve,
        chosen.test_accuracy,
    )
    if not same:
        raise ExportError(
            f"{str(folder / 'record.json')!r} is not {what} as the study records it (another "
            "run wrote it); run `nasflow search` on the study again, or export another one"
        )
    if record.get("fingerprint", space.fingerprint()) != space.fingerprint():
        raise ExportError(
            f"{what} was fine-tuned in space fingerprint {record['fingerprint']!r}, the "
            f"study's is {space.fingerprint()!r}"
        )
    try:
        arch = Arch.from_json(saved.arch)
    except ValueError as e:
        raise ExportError(f"{what} records an unreadable architecture: {e}") from None
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    how = f"the fine-tuning phase of study {name!r}"
    weights = {
        "source": how,
        "epochs": saved.epochs,
        "status": saved.status,
        "val_curve": list(saved.val_curve),
        "batch_norm": READY_BATCH_NORM,
        "recipe": record.get("recipe"),
        "seed": record.get("seed"),
        "stack": record.get("stack") or trained_stack(study),
        "device": record.get("device"),
        "ready_sha256": record["weights"]["sha256"],
    }
    try:
        return prepare_trained(
            space,
            arch,
            state,
            kind=FINE_TUNED,
            metrics={
                "test_accuracy": float(saved.test_accuracy),  # type: ignore[arg-type]
                "val_accuracy": saved.val_accuracy,
                "train_seconds_measured": saved.train_seconds,
            },
            notes=finetuned_notes(how, saved.epochs),
            study={**base, "trial": n, **(search_record(trials[n]) if n in trials else {})},
            weights={k: v for k, v in weights.items() if v is not None},
            input_shape=input_shape,
        )
    except ExportError as e:  # (weights that do not fit the architecture, say)
        raise ExportError(f"{what} in {str(folder)!r}: {e}") from None
