"""nasflow: neural-architecture search and tuning for PyTorch on top of Optuna."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nasflow import _checkout, _progress
from nasflow.errors import NasflowError
from nasflow.space import Arch, SearchSpace

__version__ = "0.1.0"

# In a source checkout, nasflow.search_spaces/nasflow.studies are its root folders.
_checkout.install(Path(__file__).resolve().parent)
# In a notebook without ipywidgets, progress bars are text bars, without tqdm's warning.
_progress.quiet_notebook_bars()

__all__ = [
    "Arch",
    "NasflowError",
    "SearchSpace",
    "__version__",
    "export_winner",
    "load_exported",
    "optimize",
]


def __getattr__(name: str) -> Any:
    # Imported on first use: ``import nasflow`` stays light (``nasflow spaces`` needs no
    # torch, Optuna or SQLAlchemy).
    if name == "load_exported":
        from nasflow.export import load_exported

        return load_exported
    if name in ("optimize", "export_winner"):
        from nasflow import _api

        return getattr(_api, name)
    raise AttributeError(f"module 'nasflow' has no attribute {name!r}")
