"""nasflow: neural-architecture search and tuning for PyTorch on top of Optuna."""

from __future__ import annotations

from typing import Any

from nasflow.space import Arch, SearchSpace

__version__ = "0.1.0"

__all__ = ["Arch", "SearchSpace", "__version__", "load_exported"]


def __getattr__(name: str) -> Any:
    # ``nasflow.load_exported`` is imported on first use: ``import nasflow`` stays light.
    if name == "load_exported":
        from nasflow.export import load_exported

        return load_exported
    raise AttributeError(f"module 'nasflow' has no attribute {name!r}")
