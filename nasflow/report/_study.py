"""Finding a stored study by name, and naming its architectures in one line."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import NamedTuple

import optuna

from nasflow import names
from nasflow.errors import NasflowError
from nasflow.search import arch_summary
from nasflow.search._storage import StorageSpec, StudyNotFoundError, load_existing_study
from nasflow.space import Arch, SearchSpace, rebuild_space

#: ``summarize(arch_json) -> str``: the one-line view of an architecture shown on hover.
Summarizer = Callable[[str], str]


class ReportError(NasflowError, ValueError):
    """A report or dashboard cannot be made: no such study, file or record (one line)."""


class StoredStudy(NamedTuple):
    """A loaded study, its Optuna storage and where that storage lives."""

    study: optuna.Study
    storage: optuna.storages.BaseStorage
    spec: StorageSpec


def load_stored_study(
    name: str, storage: str | None = None, out_dir: os.PathLike | str = "runs"
) -> StoredStudy:
    """Load study ``name`` without creating anything.

    Args:
        name: Study name.
        storage: ``--storage`` URL; ``None`` means ``OUT_DIR/NAME/study.db``.
        out_dir: Folder holding one sub-folder per study.

    Raises:
        ReportError: No study file at the path, or no study of that name in the storage.
        StorageError: Malformed URL or unreachable database.
    """
    try:
        study, store, spec = load_existing_study(name, storage, out_dir)
    except StudyNotFoundError as e:
        raise ReportError(str(e)) from None
    return StoredStudy(study, store, spec)


def _stored_space(study: optuna.Study) -> SearchSpace | None:
    """The study's space re-created from the registry and its recorded ``config``
    (``nasflow:space_config``; the default space without one), if that gives the recorded
    fingerprint; ``None`` otherwise (an unregistered or changed space)."""
    attrs = study.user_attrs
    name, fingerprint = attrs.get("nasflow:space"), attrs.get("nasflow:fingerprint")
    if not isinstance(name, str) or not isinstance(fingerprint, str):
        return None
    raw = attrs.get("nasflow:space_config")
    try:
        config = json.loads(raw) if isinstance(raw, str) else None
        return rebuild_space(name, config, fingerprint)
    except Exception:  # summaries are cosmetic: fall back, never fail the report
        return None


def generic_summary(arch_json: str) -> str:
    """``arch_summary``'s layout without the space: string choices (ops) in label order,
    then ``label=value`` for the numbers."""
    arch = Arch.from_json(arch_json)
    ops = [str(v) for v in arch.values() if isinstance(v, str)]
    rest = [
        f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
        for k, v in arch.items()
        if not isinstance(v, str)
    ]
    return " ".join(ops + rest)


def summarizer(study: optuna.Study, space: SearchSpace | None = None) -> Summarizer:
    """How the report names an architecture.

    Args:
        study: The study (its ``nasflow:space`` and ``nasflow:fingerprint`` records).
        space: The study's space, when the caller has it; else it is re-created from the
            registry and the study's records, else :func:`generic_summary` is used.

    Raises:
        ReportError: ``space`` is not the space the study was created with.
    """
    recorded = study.user_attrs.get("nasflow:fingerprint")
    if space is not None and recorded is not None and space.fingerprint() != recorded:
        raise ReportError(
            f"space {space.name!r} has fingerprint {space.fingerprint()!r}, but study "
            f"{study.study_name!r} was created with {recorded!r}"
        )
    space = space or _stored_space(study)
    if space is None:
        return generic_summary

    def summarize(arch_json: str) -> str:
        return arch_summary(space, Arch.from_json(arch_json))

    return summarize


def objective_names(study: optuna.Study) -> list[str]:
    """What the study's objectives are called (``nasflow.search.names``): its Optuna
    ``metric_names``, else derived from ``nasflow:objectives``, else ``objective 0..``."""
    return names.study_metric_names(study)
