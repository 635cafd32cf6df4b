"""nasflow: neural-architecture search and tuning for PyTorch on top of Optuna."""

from __future__ import annotations

from nasflow.space import Arch, SearchSpace

__version__ = "0.1.0"

__all__ = ["Arch", "SearchSpace", "__version__"]
