"""Exporting trials of a stored study: find its space, supernet, data, then write."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from nasflow._entry_points import STUDIES, module_file, registered
from nasflow._regular import check_run_folders
from nasflow.errors import ConfigError
from nasflow.export._format import (
    RETRAINED,
    SUPERNET,
    ExportError,
    ExportInfo,
    retrained_notes,
    supernet_notes,
)
from nasflow.export._programs import require_onnx
from nasflow.export._writer import (
    atomic_dir,
    check_target,
    input_shape_of,
    prepare_export,
    prepare_trained,
    write_export,
)
from nasflow.record import (
    ANCHOR_ATTR,
    RunFolder,
    TrialRecord,
    checkpoint_fingerprint,
    open_stored_study,
    stored_space,
    study_data_fingerprint,
    study_kept,
    study_objectives,
    study_stack,
)
from nasflow.space import SearchSpace
from nasflow.supernet import Supernet, split_supernet

if TYPE_CHECKING:
    import optuna
    from torch import nn

    from nasflow.search import StudySpec


_LOG = logging.getLogger(__name__)


def load_supernet(space: SearchSpace, folder: Path) -> tuple[Supernet, str]:
    """The newest valid supernet checkpoint in ``folder``, loaded without pickle.

    Unusable files (corrupt, truncated, or needing pickle) are skipped and reported (a
    warning of the ``nasflow`` logger).

    Returns:
        The supernet (eval mode, CPU) and the checkpoint's file name.
    """
    from nasflow.train import load_latest

    found = load_latest(folder, on_bad=lambda e: _LOG.warning(f"skipping {e}"))
    if found is None:
        raise ExportError(
            f"no valid supernet checkpoint in {str(folder)!r}; run `nasflow search` first or "
            "pass --runs with the folder the search wrote to"
        )
    at, state = found
    label = at.filename() if hasattr(at, "filename") else f"epoch-{at}.pt"
    stored = checkpoint_fingerprint(state)
    if stored is None:
        raise ExportError(
            f"supernet checkpoint {label!r} in {str(folder)!r} has no identity"
        ) from None
    if stored != space.fingerprint():
        raise ExportError(
            f"supernet checkpoint {str(folder / label)!r} was trained for space fingerprint "
            f"{stored!r}, the study's is {space.fingerprint()!r}"
        )
    supernet = space.supernet()
    if state.get("split"):  # trained with few-shot splitting (SupernetConfig.split)
        supernet = split_supernet(supernet, str(state["split"]))
    supernet.load_state_dict(state["model"])
    return supernet.eval(), label


def select_trials(study: optuna.Study, which: str | int) -> list[optuna.trial.FrozenTrial]:
    """``"best"``, ``"pareto"`` (every Pareto trial) or a trial number.

    ``"best"`` is the model the study's last finished run kept (its ``nasflow:kept``
    record: the summary's "kept model" line: phase 3's retrained choice among the
    fine-tuned finalists, or a zero-cost anchor), else, for a study that retrained nothing,
    the most accurate Pareto trial.

    Raises:
        ExportError: No completed trial, or trial ``which`` is missing or not complete.
    """
    from optuna.trial import TrialState

    from nasflow.pipeline import pareto_trials

    if isinstance(which, int) and not isinstance(which, bool):
        trials = {t.number: t for t in study.get_trials(deepcopy=False)}
        if which not in trials:
            raise ExportError(f"study {study.study_name!r} has no trial {which}")
        t = trials[which]
        if t.state != TrialState.COMPLETE or TrialRecord.from_trial(t).arch is None:
            raise ExportError(
                f"trial {which} of study {study.study_name!r} is {t.state.name.lower()}; "
                "only completed trials can be exported"
            )
        return [t]
    if which not in ("best", "pareto"):
        raise ConfigError(f"which must be 'best', 'pareto' or a trial number, got {which!r}")
    if which == "best":
        kept = study_kept(study)
        if kept is not None:
            return select_trials(study, kept.trial)
    front = pareto_trials(study)
    if not front:
        raise ExportError(f"study {study.study_name!r} has no completed trial to export")
    return front[:1] if which == "best" else front


def trained_stack(study: optuna.Study) -> dict[str, Any] | None:
    """The ``Stack.to_dict()`` a ``stack="auto"`` study trained with (``None``: none
    recorded)."""
    record = study_stack(study)
    return None if record is None or record.stack is None else dict(record.stack)


def search_record(trial: optuna.trial.FrozenTrial) -> dict[str, float]:
    """What the search predicted or counted for a trial's architecture (not its weights):
    ``params`` and ``train_cost_predicted_s`` (the cost model's training seconds)."""
    rec = TrialRecord.from_trial(trial)
    out: dict[str, float] = {}
    for name, value in (("params", rec.params), ("train_cost_predicted_s", rec.train_cost)):
        if value is not None:
            out[name] = value
    return out


def retrained_winner(
    runs: os.PathLike | str, name: str, trial: optuna.trial.FrozenTrial, space: SearchSpace
) -> tuple[Path, dict[str, Any]] | None:
    """The weights phase 3 saved for ``trial`` (``RUNS/NAME/winners/trial-N``), checked.

    Returns:
        ``(folder, record)``, or ``None`` when phase 3 never saved that trial.

    Raises:
        ExportError: A saved winner that is corrupt, or of another space or architecture.
    """
    from nasflow.pipeline import WINNER_RECORD_FILE, WinnerError, read_winner

    folder = RunFolder.of(runs, name).winner(trial.number)
    if not (folder / WINNER_RECORD_FILE).exists():
        return None
    try:
        record = read_winner(folder)
    except WinnerError as e:
        raise ExportError(
            f"the retrained weights of trial {trial.number} are unusable: {e}; run "
            f"`nasflow search` on study {name!r} again to retrain it, or pass --weights supernet"
        ) from None
    if record.get("fingerprint") != space.fingerprint() or record.get("arch") != json.loads(
        json.dumps(TrialRecord.from_trial(trial).get_arch().to_dict())
    ):
        raise ExportError(
            f"{str(folder / WINNER_RECORD_FILE)!r} records another space or architecture than "
            f"trial {trial.number} of study {name!r}; remove the folder and run `nasflow search` "
            "again, or pass --weights supernet"
        )
    return folder, record


def find_study_spec(arg: str | None, *names: str) -> tuple[StudySpec, str] | None:
    """The study file ``arg`` (a path or a registered study name), else the first
    registered study among ``names`` (``nasflow.studies`` entry points), else ``None``.

    Returns:
        The study and how it was found (``"registered study 'mnist1d'"`` or the file).
    """
    from nasflow.search import load_study_file

    studies = registered(STUDIES)

    def load_registered(name: str) -> tuple[StudySpec, str]:
        path = module_file(studies[name])
        if path is None:
            raise ExportError(f"registered study {name!r} ({studies[name]}) is not installed")
        return load_study_file(path), f"registered study {name!r}"

    if arg is not None:
        if not Path(arg).exists() and arg in studies:
            return load_registered(arg)
        return load_study_file(arg), f"study file {arg!r}"
    for name in names:
        if name in studies:
            return load_registered(name)
    return None


def study_data_spec(
    name: str, data: str | None, study_file: str | None = None
) -> tuple[StudySpec, str] | None:
    """The study file whose data study ``name`` was searched on.

    ``study_file`` (a path or a registered study name) when given, else the registered
    study of the name ``name`` (a ready study run under its own name), never one matched
    by the space's name: another study of the space may have other data.

    Args:
        name: The stored study's name.
        data: Its recorded data fingerprint (``None``: an older study recorded none).
        study_file: ``--study``.

    Returns:
        The study and how it was found, or ``None`` when no registered study is named
        ``name`` or its data is not the recorded one.

    Raises:
        ExportError: ``study_file`` gives other data than the recorded fingerprint.
    """
    from nasflow.data import data_fingerprint

    found = find_study_spec(study_file) if study_file is not None else find_study_spec(None, name)
    if found is None or data is None:
        return found
    have = data_fingerprint(found[0].data())
    if have == data:
        return found
    if study_file is None:
        return None
    raise ExportError(
        f"the data of {found[1]} (fingerprint {have!r}) is not the data study {name!r} was "
        f"searched on ({data!r}); pass --study with the study file that ran it"
    )


class OpenedStudy(NamedTuple):
    """A stored study opened for export (:func:`open_for_export`).

    Attributes:
        study: The study.
        spec: The study file's spec when one was given (its space and data), else ``None``.
        data_of: The study giving the data and how it was found (``study_data_spec``),
            when one was given.
        base: What every export of it records under ``study``: name, storage (no
            password), objectives and the data fingerprint (``nasflow retrain`` finds the
            data by it).
    """

    study: optuna.Study
    spec: StudySpec | None
    data_of: tuple[StudySpec, str] | None
    base: dict[str, Any]


def open_for_export(
    name: str,
    storage: str | optuna.storages.BaseStorage | None,
    runs: os.PathLike | str,
    study_file: str | None,
    spec: StudySpec | None,
    onnx: bool,
) -> OpenedStudy:
    """Check what an export of study ``name`` needs before anything is read: the ONNX
    extra, the run folders (a FIFO there would hang), the storage and the study file.

    Raises:
        MissingDependencyError: ``onnx`` without the extra installed.
        SpecialFileError: A run folder that is a link, FIFO or file.
        StudyRecordError: No such study.
        ExportError: ``study_file`` gives other data than the study recorded.
    """
    if onnx:
        require_onnx()
    check_run_folders(RunFolder.of(runs, name).root)
    study, _, storage_spec = open_stored_study(name, storage, runs)
    data_of = (spec, f"study {spec.name!r}") if spec is not None else None
    if spec is None and study_file is not None:  # its space may be one no registry knows
        data_of = study_data_spec(name, study_data_fingerprint(study), study_file)
        spec = data_of[0] if data_of is not None else None
    base = {
        "name": name,
        "storage": storage_spec.safe_url,
        "objectives": study_objectives(study),
    }
    if study_data_fingerprint(study) is not None:
        base["data_fingerprint"] = study_data_fingerprint(study)
    return OpenedStudy(study, spec, data_of, base)


def data_input_shape(
    space: SearchSpace, study: optuna.Study, data_of: tuple[StudySpec, str] | None
) -> tuple[int, ...] | None:
    """One input sample's shape from the study's data, where the space's config records
    none (trained weights need no data otherwise); ``None`` when that data is not found."""
    if "input_shape" in space.config:
        return None
    found = data_of or study_data_spec(study.study_name, study_data_fingerprint(study))
    return tuple(found[0].data().input_shape) if found is not None else None


def export_study(
    name: str,
    out: os.PathLike | str,
    which: str | int = "best",
    storage: str | optuna.storages.BaseStorage | None = None,
    runs: os.PathLike | str = "runs",
    study_file: str | None = None,
    spec: StudySpec | None = None,
    recalibrate: bool = True,
    onnx: bool = True,
    force: bool = False,
    weights: str = "auto",
) -> list[ExportInfo]:
    """Export trials of a stored study with their retrained or supernet weights.

    The arguments are :func:`nasflow.export.export`'s (which checks them): ``weights`` is
    ``"auto"``, ``"retrained"`` or ``"supernet"``. Supernet weights are recorded with their
    validation accuracy measured now when the study's data is found (from ``spec``, else
    ``study_file``, else the registered study of the same name).
    """
    out = Path(out)
    study, spec, data_of, base = open_for_export(name, storage, runs, study_file, spec, onnx)
    trials = select_trials(study, which)
    space = stored_space(study, spec.space if spec is not None else None)
    check_target(out, force)
    winners: dict[int, tuple[Path, dict[str, Any]]] = {}
    if weights != SUPERNET:
        for t in trials:
            found_winner = retrained_winner(runs, name, t, space)
            if found_winner is not None:
                winners[t.number] = found_winner
    missing = [t.number for t in trials if t.number not in winners]
    if weights == RETRAINED and missing:
        what = f"trial {missing[0]}" if len(missing) == 1 else f"trials {missing}"
        raise ExportError(
            f"{what} of study {name!r} {'has' if len(missing) == 1 else 'have'} no retrained "
            f"weights in {str(RunFolder.of(runs, name).winners)!r}: run phase 3 (`nasflow search` "
            "with --retrain, the default; it retrains the study's retrain_top most accurate "
            "Pareto trials), or pass --weights supernet"
        )
    prepared = []
    if missing:
        prepared += _prepare_supernet(
            [t for t in trials if t.number in missing],
            space,
            name,
            runs,
            base,
            data_of or study_data_spec(name, study_data_fingerprint(study)),
            recalibrate,
            trained_stack(study),
        )
    shape = data_input_shape(space, study, data_of) if winners else None
    for t in trials:
        if t.number in winners:
            prepared.append(_prepare_winner(t, space, name, *winners[t.number], base, shape))
    order = {t.number: i for i, t in enumerate(trials)}
    prepared.sort(key=lambda p: order[p[0]])
    return write_prepared(out, space, prepared, which == "pareto", onnx, force)


def write_prepared(
    out: Path,
    space: SearchSpace,
    prepared: list[tuple[int, nn.Module, ExportInfo]],
    per_trial: bool,
    onnx: bool,
    force: bool,
) -> list[ExportInfo]:
    """Write prepared networks into ``out`` all at once, and say what was written (the
    ``nasflow`` logger's lines).

    Args:
        out: The export directory (checked with ``check_target``).
        space: Their space.
        prepared: ``(trial number, network, record)`` of each, in order.
        per_trial: One ``trial-N`` folder each inside ``out`` (``--pareto``); else the
            one network's export is ``out`` itself.
        onnx: Also write and check ``model.onnx``.
        force: Replace a complete export at ``out``; with ``per_trial`` the complete
            ``trial-N`` exports there that this run does not write are kept.
    """
    replaced = out.is_dir() and any(out.iterdir())
    with atomic_dir(out, force) as tmp:
        infos = []
        for number, net, info in prepared:
            folder = tmp / f"trial-{number}" if per_trial else tmp
            infos.append(write_export(folder, space, net, info, onnx))
            shown = ", ".join(f"{k} {v:.4f}" for k, v in info.metrics.items())
            what = info.weights.get("description", f"{info.kind} weights")
            _LOG.info(f"trial {number}: {what}; {shown or 'no accuracy measured'}")
        kept = keep_other_exports(out, tmp) if replaced and per_trial else []
    if replaced:
        what = ", ".join(sorted(p.name for p in out.iterdir() if p.name not in kept))
        _LOG.info(
            f"--force replaced {what if per_trial else 'the export'} in {out}"
            + (f"; kept {', '.join(kept)} (complete exports this run did not write)" * bool(kept))
        )
    _LOG.info(f"exported to {out}")
    return infos


def keep_other_exports(out: Path, tmp: Path) -> list[str]:
    """Copy the ``trial-N`` exports of ``out`` that this run did not write into ``tmp``
    (which replaces ``out``): ``--force`` replaces only what it writes. Returns their names.
    (``check_target`` already made sure each is a complete nasflow export.)"""
    import shutil

    kept = []
    for entry in sorted(out.iterdir()):
        if entry.name.startswith("trial-") and not (tmp / entry.name).exists():
            shutil.copytree(entry, tmp / entry.name, symlinks=True)
            kept.append(entry.name)
    return kept


def _prepare_winner(
    t: optuna.trial.FrozenTrial,
    space: SearchSpace,
    name: str,
    folder: Path,
    record: dict[str, Any],
    base: dict[str, Any],
    input_shape: tuple[int, ...] | None = None,
) -> tuple[int, Any, ExportInfo]:
    """The retrained network of trial ``t`` and its record, from phase 3's saved winner."""
    from nasflow.pipeline import WinnerError, load_winner_weights

    try:
        state = load_winner_weights(folder, record)
    except WinnerError as e:
        raise ExportError(f"the retrained weights of trial {t.number} are unusable: {e}") from None
    how = f"phase 3 of study {name!r}"
    anchor = record.get(ANCHOR_ATTR)
    if isinstance(anchor, int):  # phase 0 saves its anchors where phase 3 saves winners
        how = f"phase 0 of study {name!r} (zero-cost anchor {anchor + 1}, before the supernet)"
    net, info = prepare_trained(
        space,
        TrialRecord.from_trial(t).get_arch(),
        state,
        metrics={
            "test_accuracy": float(record["test_accuracy"]),
            "val_accuracy": float(record["val_accuracy"]),
            "train_seconds_measured": float(record["measured_train_cost"]),
        },
        notes=retrained_notes(how),
        study={**base, "trial": t.number, **search_record(t)},
        weights={
            "source": how,
            "recipe": record.get("recipe"),
            "seed": record.get("seed"),
            "stack": record.get("stack"),
            "device": record.get("device"),
            "winner_sha256": record["weights"]["sha256"],
        },
        input_shape=input_shape,
    )
    return t.number, net, info


def _prepare_supernet(
    trials: list[optuna.trial.FrozenTrial],
    space: SearchSpace,
    name: str,
    runs: os.PathLike | str,
    base: dict[str, Any],
    found: tuple[StudySpec, str] | None,
    recalibrate: bool,
    stack: dict[str, Any] | None,
) -> list[tuple[int, Any, ExportInfo]]:
    """The supernet paths of ``trials`` (BN recalibrated if asked) with their records;
    ``found`` is the study giving the data (:func:`study_data_spec`), ``stack`` the one
    the supernet trained with (``stack="auto"`` studies)."""
    from nasflow.train import evaluate

    supernet, checkpoint = load_supernet(space, RunFolder.of(runs, name).supernet)
    if recalibrate and found is None:
        raise ExportError(
            f"cannot find the data of study {name!r} to recalibrate batch norm (no ready "
            "study of that name): pass --study STUDY_FILE (the study file that ran it), or "
            "--no-recalibrate to keep the supernet's statistics"
        )
    data = found[0].data() if found is not None else None
    shape = input_shape_of(space, data.input_shape if data is not None else None)
    if data is not None and tuple(data.input_shape) != shape:
        raise ExportError(
            f"the data of {found[1]} has inputs of shape {list(data.input_shape)}, space "
            f"{space.name!r} takes {list(shape)}; pass --study with the searched study file"
        )
    train = None  # the batches the search recalibrated batch norm on: same order, same size
    if data is not None and recalibrate:
        train = data.batches("train", found[0].train.batch_size, found[0].seed)  # type: ignore[index]
        _LOG.info(f"batch norm recalibrated on the training data of {found[1]}")
    prepared = []
    for t in trials:
        net, info = prepare_export(
            space,
            supernet,
            TrialRecord.from_trial(t).get_arch(),
            study={
                **base,
                "trial": t.number,
                "data": found[1] if data is not None else None,
                **search_record(t),
            },
            calibration=train.epoch(0) if train is not None else None,
            bn_batches=found[0].bn_batches if found is not None else 1,
            input_shape=shape,
            source=f"supernet checkpoint {checkpoint}",
            stack=stack,
        )
        if data is not None:
            acc = evaluate(net, data.batches("val"))[0]
            info = dataclasses.replace(
                info,
                metrics={"val_accuracy": acc},
                notes=supernet_notes(info.weights["batch_norm"], found[1]),  # type: ignore[index]
            )
        prepared.append((t.number, net, info))
    return prepared
