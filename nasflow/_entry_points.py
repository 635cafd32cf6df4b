"""Lookups in the entry-point groups through which packages register spaces and studies."""

from __future__ import annotations

import importlib.util
from importlib.metadata import entry_points
from pathlib import Path

#: Search spaces: name -> ``"module:Class"``.
SPACES = "nasflow.spaces"
#: Ready study files: name -> module (the study file is the module's source).
STUDIES = "nasflow.studies"


def registered(group: str) -> dict[str, str]:
    """The installed entry points of ``group``: name -> target."""
    return {ep.name: ep.value for ep in entry_points(group=group)}


def module_file(module: str) -> Path | None:
    """The source file of an importable module (a registered study), ``None`` if there
    is none."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin)
