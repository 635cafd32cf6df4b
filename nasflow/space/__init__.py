"""Search-space definition: choices, ``Arch`` and ``SearchSpace``."""

from __future__ import annotations

from nasflow.space._arch import Arch
from nasflow.space._choices import (
    FloatRange,
    Scalar,
    edge_choices,
    hyper_choice,
    op_choice,
    value_choice,
)
from nasflow.space._largest import largest_arch, n_params
from nasflow.space._nni import from_nni
from nasflow.space._registry import is_registered, rebuild_space, space_class
from nasflow.space._space import SearchSpace

__all__ = [
    "Arch",
    "FloatRange",
    "Scalar",
    "SearchSpace",
    "edge_choices",
    "from_nni",
    "hyper_choice",
    "is_registered",
    "largest_arch",
    "n_params",
    "op_choice",
    "rebuild_space",
    "space_class",
    "value_choice",
]
