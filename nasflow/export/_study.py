"""Exporting trials of a stored study: find its space, supernet, data, then write."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasflow.export._format import ExportError, ExportInfo
from nasflow.export._programs import require_onnx
from nasflow.export._writer import (
    atomic_dir,
    check_target,
    input_shape_of,
    prepare_export,
    write_export,
)
from nasflow.space import Arch, SearchSpace, rebuild_space
from nasflow.supernet import Supernet

if TYPE_CHECKING:
    import optuna

    from nasflow.search import StudySpec
    from nasflow.search._storage import StorageSpec

#: Study user attributes written by the study runner.
SPACE_KEY, FINGERPRINT_KEY, OBJECTIVES_KEY = (
    "nasflow:space",
    "nasflow:fingerprint",
    "nasflow:objectives",
)
SPACE_CONFIG_KEY = "nasflow:space_config"


def open_stored_study(
    name: str, storage: str | None, runs: os.PathLike | str
) -> tuple[optuna.Study, StorageSpec]:
    """Load study ``name`` from ``storage`` (default ``RUNS/NAME/study.db``), read-only use.

    Raises:
        ExportError: No such study file or study.
        StorageError: A bad or unreachable storage.
    """
    from nasflow.search._storage import StudyNotFoundError, load_existing_study

    try:
        study, _, spec = load_existing_study(name, storage, runs)
    except StudyNotFoundError as e:
        raise ExportError(str(e)) from None
    return study, spec


def study_space(study: optuna.Study, space: SearchSpace | None = None) -> SearchSpace:
    """Re-create the space a study searched, from its user attributes and the registry.

    Args:
        study: A study written by nasflow's study runner.
        space: The space itself (one defined in a script or notebook, not registered):
            then it is only checked against the study's record.

    Raises:
        ExportError: The study was not made by nasflow, its space is not registered, or
            the space does not have the recorded name and fingerprint.
    """
    attrs = study.user_attrs
    name, fingerprint = attrs.get(SPACE_KEY), attrs.get(FINGERPRINT_KEY)
    if not isinstance(name, str) or not isinstance(fingerprint, str):
        raise ExportError(f"study {study.study_name!r} records no nasflow space")
    if space is not None:
        if (space.name, space.fingerprint()) != (name, fingerprint):
            raise ExportError(
                f"study {study.study_name!r} searched space {name!r} (fingerprint "
                f"{fingerprint!r}), not {space.name!r} ({space.fingerprint()!r})"
            )
        return space
    raw = attrs.get(SPACE_CONFIG_KEY)
    config = json.loads(raw) if isinstance(raw, str) else None
    try:
        return rebuild_space(name, config, fingerprint)
    except ValueError as e:
        raise ExportError(f"study {study.study_name!r}: {e}") from None


def load_supernet(
    space: SearchSpace, folder: Path, log: Callable[[str], None] = print
) -> tuple[Supernet, str]:
    """The newest valid supernet checkpoint in ``folder``, loaded without pickle.

    Unusable files (corrupt, truncated, or needing pickle) are skipped and reported.

    Returns:
        The supernet (eval mode, CPU) and the checkpoint's file name.
    """
    from nasflow.train import load_latest

    found = load_latest(folder, on_bad=lambda e: log(f"skipping {e}"))
    if found is None:
        raise ExportError(
            f"no valid supernet checkpoint in {str(folder)!r}; run `nasflow search` first or "
            "pass --runs with the folder the search wrote to"
        )
    at, state = found
    label = at.filename() if hasattr(at, "filename") else f"epoch-{at}.pt"
    try:
        stored = json.loads(state["identity"])["space"]
    except (KeyError, TypeError, ValueError):
        raise ExportError(
            f"supernet checkpoint {label!r} in {str(folder)!r} has no identity"
        ) from None
    if stored != space.fingerprint():
        raise ExportError(
            f"supernet checkpoint {str(folder / label)!r} was trained for space fingerprint "
            f"{stored!r}, the study's is {space.fingerprint()!r}"
        )
    supernet = space.supernet()
    supernet.load_state_dict(state["model"])
    return supernet.eval(), label


def select_trials(study: optuna.Study, which: str | int) -> list[optuna.trial.FrozenTrial]:
    """``"best"`` (the most accurate Pareto trial), ``"pareto"`` (all) or a trial number.

    Raises:
        ExportError: No completed trial, or trial ``which`` is missing or not complete.
    """
    from optuna.trial import TrialState

    from nasflow.search import pareto_trials

    if isinstance(which, int) and not isinstance(which, bool):
        trials = {t.number: t for t in study.get_trials(deepcopy=False)}
        if which not in trials:
            raise ExportError(f"study {study.study_name!r} has no trial {which}")
        t = trials[which]
        if t.state != TrialState.COMPLETE or "arch" not in t.user_attrs:
            raise ExportError(
                f"trial {which} of study {study.study_name!r} is {t.state.name.lower()}; "
                "only completed trials can be exported"
            )
        return [t]
    if which not in ("best", "pareto"):
        raise ValueError(f"which must be 'best', 'pareto' or a trial number, got {which!r}")
    front = pareto_trials(study)
    if not front:
        raise ExportError(f"study {study.study_name!r} has no completed trial to export")
    return front[:1] if which == "best" else front


def trial_metrics(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> dict[str, float]:
    """The trial's objective values, cost and size, and its retrain results if any."""
    raw = study.user_attrs.get(OBJECTIVES_KEY)
    names = json.loads(raw) if isinstance(raw, str) else []
    out: dict[str, float] = {}
    for i, value in enumerate(trial.values or []):
        out[names[i] if i < len(names) else f"objective_{i}"] = float(value)
    for key in ("params", "train_cost", "supernet_accuracy"):
        if isinstance(trial.user_attrs.get(key), int | float):
            out[key] = float(trial.user_attrs[key])
    retrain = study.user_attrs.get(f"nasflow:retrain:{trial.number}")
    if isinstance(retrain, dict):
        for key in ("val_accuracy", "test_accuracy", "measured_train_cost"):
            if isinstance(retrain.get(key), int | float):
                out[f"retrain_{key}"] = float(retrain[key])
    return out


def find_study_spec(arg: str | None, *names: str) -> tuple[StudySpec, str] | None:
    """The study file ``arg`` (a path or a registered study name), else the first
    registered study among ``names`` (``nasflow.studies`` entry points), else ``None``.

    Returns:
        The study and how it was found (``"registered study 'mnist1d'"`` or the file).
    """
    from nasflow.search import load_study_file

    registered = {ep.name: ep.value for ep in entry_points(group="nasflow.studies")}

    def load_registered(name: str) -> tuple[StudySpec, str]:
        spec = importlib.util.find_spec(registered[name])
        if spec is None or spec.origin is None:
            raise ExportError(f"registered study {name!r} ({registered[name]}) is not installed")
        return load_study_file(spec.origin), f"registered study {name!r}"

    if arg is not None:
        if not Path(arg).exists() and arg in registered:
            return load_registered(arg)
        return load_study_file(arg), f"study file {arg!r}"
    for name in names:
        if name in registered:
            return load_registered(name)
    return None


def calibration_batches(spec: StudySpec, data: Any) -> Iterator[Any]:
    """The training batches the search recalibrates batch norm on (same order, same size)."""
    from nasflow.train import Batches

    return Batches(
        data.train, spec.train.batch_size, shuffle=True, seed=spec.seed, drop_last=True
    ).epoch(0)


def export_study(
    name: str,
    out: os.PathLike | str,
    which: str | int = "best",
    storage: str | None = None,
    runs: os.PathLike | str = "runs",
    study_file: str | None = None,
    spec: StudySpec | None = None,
    recalibrate: bool = True,
    onnx: bool = True,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> list[ExportInfo]:
    """Export trials of a stored study (``nasflow export``); everything is checked first.

    ``which="pareto"`` writes one ``trial-N`` folder per Pareto trial inside ``out``.
    Batch-norm statistics are re-estimated on the study's training data, as the search
    scored them, unless ``recalibrate`` is false; the data comes from ``spec``, else
    ``study_file``, else the registered study of the same name (or of the space's name).
    The export's own validation accuracy is then recorded as ``export_val_accuracy``.

    Args:
        name: The study's name in the storage.
        out: The export directory to create.
        which: ``"best"``, ``"pareto"`` or a trial number.
        storage: Storage URL (default ``RUNS/NAME/study.db``).
        runs: The folder the search wrote to (``RUNS/NAME/supernet`` holds checkpoints).
        study_file: A study file or registered study name giving the data.
        spec: The study itself (space and data), for a space that is not registered.
        recalibrate: Re-estimate batch-norm statistics on the study's training data.
        onnx: Also write and check ``model.onnx``.
        force: Replace an existing export at ``out``.
        log: Line logger.

    Raises:
        ExportError: Anything missing or inconsistent; nothing is written then.
        StudyFileError: ``study_file`` does not exist or does not run.
        StorageError: A bad or unreachable storage.
    """
    from nasflow.train import Batches, evaluate

    out = Path(out)
    if onnx:
        require_onnx()
    study, storage_spec = open_stored_study(name, storage, runs)
    trials = select_trials(study, which)
    space = study_space(study, spec.space if spec is not None else None)
    supernet, checkpoint = load_supernet(space, Path(runs) / name / "supernet", log)
    if spec is not None:
        found: tuple[StudySpec, str] | None = (spec, f"study {spec.name!r}")
    else:
        found = find_study_spec(study_file, name, space.name)
    if recalibrate and found is None:
        raise ExportError(
            f"cannot find the data of study {name!r} to recalibrate batch norm: pass "
            "--study STUDY_FILE, or --no-recalibrate to keep the supernet's statistics"
        )
    data = found[0].data() if found is not None and recalibrate else None
    shape = input_shape_of(space, data.input_shape if data is not None else None)
    if data is not None and tuple(data.input_shape) != shape:
        raise ExportError(
            f"the data of {found[1]} has inputs of shape {list(data.input_shape)}, space "
            f"{space.name!r} takes {list(shape)}; pass --study with the searched study file"
        )
    if data is not None:
        log(f"batch norm recalibrated on the training data of {found[1]}")
    check_target(out, force)
    prepared = []
    for t in trials:
        metrics = trial_metrics(study, t)
        record = {
            "name": name,
            "storage": storage_spec.safe_url,
            "trial": t.number,
            "objectives": json.loads(study.user_attrs.get(OBJECTIVES_KEY, "[]")),
            "data": found[1] if data is not None else None,
        }
        net, info = prepare_export(
            space,
            supernet,
            Arch.from_json(t.user_attrs["arch"]),
            metrics=metrics,
            study=record,
            calibration=calibration_batches(found[0], data) if data is not None else None,
            bn_batches=found[0].bn_batches if found is not None else 1,
            input_shape=shape,
            source=f"supernet checkpoint {checkpoint}",
        )
        if data is not None:
            acc = evaluate(net, Batches(data.val, 512, shuffle=False))[0]
            info = dataclasses.replace(info, metrics={**metrics, "export_val_accuracy": acc})
        prepared.append((t.number, net, info))
    with atomic_dir(out, force) as tmp:
        infos = []
        for number, net, info in prepared:
            folder = tmp / f"trial-{number}" if which == "pareto" else tmp
            infos.append(write_export(folder, space, net, info, onnx))
            log(f"trial {number}: " + ", ".join(f"{k} {v:.4g}" for k, v in info.metrics.items()))
    log(f"exported to {out}")
    return infos
