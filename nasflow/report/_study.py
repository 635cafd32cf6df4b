"""Naming a stored study's architectures in one line, and the report's error."""

from __future__ import annotations

from collections.abc import Callable

import optuna

from nasflow import record
from nasflow.errors import NasflowError
from nasflow.pipeline import arch_summary
from nasflow.space import Arch, SearchSpace

#: ``summarize(arch_json) -> str``: the one-line view of an architecture shown on hover.
Summarizer = Callable[[str], str]


class ReportError(NasflowError, ValueError):
    """A report cannot be made: the space given is not the study's (one line)."""


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
    recorded = record.study_space_identity(study)[1]
    if space is not None and recorded is not None and space.fingerprint() != recorded:
        raise ReportError(
            f"space {space.name!r} has fingerprint {space.fingerprint()!r}, but study "
            f"{study.study_name!r} was created with {recorded!r}"
        )
    if space is None:
        try:
            space = record.stored_space(study)
        except Exception:  # summaries are cosmetic: fall back, never fail the report
            return generic_summary

    def summarize(arch_json: str) -> str:
        return arch_summary(space, Arch.from_json(arch_json))

    return summarize
