"""Reading a stored study: open it, re-create its space, reuse its scores, its constraints."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import optuna
from optuna.trial import FrozenTrial, TrialState

from nasflow._compat import OPTUNA_MAJOR
from nasflow.errors import StudyRecordError
from nasflow.names import objective_names
from nasflow.record._folder import RunFolder
from nasflow.record._keys import (
    _ATTEMPT_KEYS,
    ARCH_ATTR,
    CONSTRAINTS_KEY,
    DUPLICATE_KEY,
    FINGERPRINT_KEY,
    OBJECTIVES_KEY,
    PREFIX,
    SCREEN_KEY,
    SPACE_CONFIG_KEY,
    SPACE_KEY,
    rung_key,
)

if TYPE_CHECKING:
    from nasflow.space import Arch, SearchSpace
    from nasflow.storage import StorageSpec


class StoredStudy(NamedTuple):
    """A loaded study, its Optuna storage and where that storage lives."""

    study: optuna.Study
    storage: optuna.storages.BaseStorage
    spec: StorageSpec


def open_stored_study(
    name: str,
    storage: str | os.PathLike | optuna.storages.BaseStorage | None = None,
    runs: os.PathLike | str = "runs",
) -> StoredStudy:
    """Open study ``name`` for reading without creating anything.

    Args:
        name: The study name.
        storage: ``--storage`` URL or an Optuna storage object; ``None`` means the run
            folder's database (``RUNS/NAME/study.db``).
        runs: Folder holding one run folder per study.

    Raises:
        StudyRecordError: No study file at the path, a file that is not an Optuna
            database, or no study of that name there.
        StorageError: A malformed URL or an unreachable database.
    """
    from nasflow.storage import check_reachable, check_study_file, open_storage, resolve_storage

    spec = resolve_storage(storage, RunFolder.of(runs, name).database)
    if spec.path is not None and not spec.path.is_file():
        raise StudyRecordError(f"no study file at {str(spec.path)!r} (give --storage URL)")
    check_study_file(spec)
    check_reachable(spec)
    opened = open_storage(spec)
    names = sorted(s.study_name for s in optuna.get_all_study_summaries(opened))
    if name not in names:
        raise StudyRecordError(f"no study {name!r} in {spec.safe_url!r}; studies there: {names}")
    return StoredStudy(optuna.load_study(study_name=name, storage=opened), opened, spec)


def stored_space(study: optuna.Study, space: SearchSpace | None = None) -> SearchSpace:
    """Re-create the space a study searched, from its records and the space registry.

    Args:
        study: A study written by nasflow's study runner.
        space: The space itself (one defined in a script or notebook, not registered):
            then it is only checked against the study's record.

    Raises:
        StudyRecordError: The study records no nasflow space, its space is not registered,
            or the space does not have the recorded name and fingerprint.
    """
    from nasflow.space import rebuild_space

    attrs = study.user_attrs
    name, fingerprint = attrs.get(SPACE_KEY), attrs.get(FINGERPRINT_KEY)
    if not isinstance(name, str) or not isinstance(fingerprint, str):
        raise StudyRecordError(f"study {study.study_name!r} records no nasflow space")
    if space is not None:
        if (space.name, space.fingerprint()) != (name, fingerprint):
            raise StudyRecordError(
                f"study {study.study_name!r} searched space {name!r} (fingerprint "
                f"{fingerprint!r}), not {space.name!r} ({space.fingerprint()!r})"
            )
        return space
    raw = attrs.get(SPACE_CONFIG_KEY)
    try:
        config = json.loads(raw) if isinstance(raw, str) else None
        return rebuild_space(name, config, fingerprint)
    except ValueError as e:
        raise StudyRecordError(f"study {study.study_name!r}: {e}") from None


def study_objectives(study: optuna.Study) -> list[str]:
    """The objective keys a study records (``[]`` without a record)."""
    raw = study.user_attrs.get(OBJECTIVES_KEY)
    return json.loads(raw) if isinstance(raw, str) else []


def study_metric_names(study: optuna.Study) -> list[str]:
    """The names of a stored study's objectives: its Optuna ``metric_names`` when set (nasflow
    sets them), else derived from its ``nasflow:objectives`` record (studies written before
    names were recorded, whose first objective may be a supernet score or a fine-tuned
    accuracy: it is called ``accuracy`` then), else ``objective 0``, ``objective 1``...
    """
    names = study.metric_names
    if names is not None and len(names) == len(study.directions):
        return list(names)
    raw = study.user_attrs.get(OBJECTIVES_KEY)
    try:
        keys = json.loads(raw) if isinstance(raw, str) else raw
        if isinstance(keys, list) and len(keys) == len(study.directions):
            return ["accuracy" if k == "accuracy" else objective_names([k])[0] for k in keys]
    except (ValueError, TypeError):
        pass
    return [f"objective {i}" for i in range(len(study.directions))]


def trial_screen(trial: FrozenTrial | optuna.Trial) -> list[float] | None:
    """A trial's objective vector at the supernet's weights (``SCREEN_KEY``), if recorded."""
    values = trial.user_attrs.get(SCREEN_KEY)
    return list(values) if isinstance(values, list | tuple) else None


def trial_rung(trial: FrozenTrial | optuna.Trial, rung: int) -> list[float] | None:
    """A trial's objective vector at pruner rung ``rung`` (:func:`rung_key`), if recorded."""
    values = trial.user_attrs.get(rung_key(rung))
    return list(values) if isinstance(values, list | tuple) else None


# ---------------------------------------------------------------------- score reuse
def scored_trial(study: optuna.Study, arch: Arch) -> FrozenTrial | None:
    """The earliest COMPLETE trial of ``study`` whose ``arch`` user attribute is ``arch``."""
    key = arch.to_json()
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if t.user_attrs.get(ARCH_ATTR) == key:
            return t
    return None


def reuse_score(trial: optuna.Trial, arch: Arch) -> float | list[float] | None:
    """The values to return for ``trial`` if ``arch`` was already scored, else ``None``:
    an architecture is never scored twice in one study.

    The trial then gets the earlier trial's recorded numbers (parameters, cost,
    accuracies: every user attribute except per-attempt and ``nasflow:`` bookkeeping
    ones) and constraint values, and ``user_attrs["duplicate_of"]`` = the earlier trial's
    number. Call it after ``trial.set_user_attr("arch", ...)``.
    """
    earlier = scored_trial(trial.study, arch)
    if earlier is None or earlier.values is None:
        return None
    for key, value in earlier.user_attrs.items():
        if key not in _ATTEMPT_KEYS and not key.startswith(PREFIX):
            trial.set_user_attr(key, value)
    copy_constraints(trial, earlier)
    trial.set_user_attr(DUPLICATE_KEY, int(earlier.user_attrs.get(DUPLICATE_KEY, earlier.number)))
    values = [float(v) for v in earlier.values]
    return values[0] if len(values) == 1 else values


# ---------------------------------------------------------------------- constraints
# Optuna 5 stores a trial's constraint values itself; on Optuna 4.x they are the study
# record's CONSTRAINTS_KEY attribute, handed to the sampler as ``constraints_func``.


def set_constraints(trial: optuna.Trial, values: dict[str, float]) -> None:
    """Record constraint values (feasible when every value is <= 0) on a trial.

    Optuna 5 stores them with ``Trial.set_constraint``; on 4.x they go to a user attribute
    that :func:`sampler_constraints_kwargs` hands to the sampler as ``constraints_func``.
    """
    if OPTUNA_MAJOR >= 5:
        for key, value in values.items():
            trial.set_constraint(key, float(value))
    else:  # pragma: no cover - exercised only on Optuna 4.x
        trial.set_user_attr(CONSTRAINTS_KEY, [float(v) for v in values.values()])


def get_constraints(trial: FrozenTrial) -> tuple[float, ...] | None:
    """The constraint values of a finished trial, whichever Optuna stored them."""
    if OPTUNA_MAJOR >= 5:
        keys = sorted(k for k in trial.system_attrs if k.startswith("constraints:"))
        if keys:
            return tuple(float(trial.system_attrs[k]) for k in keys)
        legacy = trial.system_attrs.get("constraints")
        return tuple(legacy) if legacy is not None else None
    values = trial.user_attrs.get(CONSTRAINTS_KEY)  # pragma: no cover
    return tuple(values) if values is not None else None  # pragma: no cover


def copy_constraints(trial: optuna.Trial, source: FrozenTrial) -> None:
    """Give ``trial`` the constraint values recorded on the finished trial ``source``."""
    if OPTUNA_MAJOR >= 5:
        for key, value in source.system_attrs.items():
            if key.startswith("constraints:"):
                trial.set_constraint(key.split(":", 1)[1], float(value))
    elif CONSTRAINTS_KEY in source.user_attrs:  # pragma: no cover - Optuna 4.x
        trial.set_user_attr(CONSTRAINTS_KEY, list(source.user_attrs[CONSTRAINTS_KEY]))


def _constraints_func(trial: FrozenTrial) -> Sequence[float]:  # pragma: no cover - 4.x
    return trial.user_attrs.get(CONSTRAINTS_KEY, [0.0])


def sampler_constraints_kwargs() -> dict[str, Callable[[FrozenTrial], Sequence[float]]]:
    """Extra sampler arguments that make it constraint-aware on this Optuna version."""
    if OPTUNA_MAJOR >= 5:
        return {}
    return {"constraints_func": _constraints_func}  # pragma: no cover
