"""``Budget``: limits a candidate must meet before it is trained."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from nasflow.errors import ConfigError


@dataclass(frozen=True)
class Budget:
    """Limits a candidate must meet; violators are recorded and skipped before training.

    Attributes:
        max_params: Largest parameter count (a positive number, or ``None``: no limit).
        max_train_cost: Largest predicted training cost, in seconds (positive, or ``None``).

    Raises:
        ValueError: A limit that is not a positive finite number (a bool, a string, NaN,
            infinity, zero or less), naming it.
    """

    max_params: int | None = None
    max_train_cost: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_params", "max_train_cost"):
            v = getattr(self, name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
                raise ConfigError(f"Budget {name} must be a positive number or None, got {v!r}")
            if v <= 0:
                raise ConfigError(f"Budget {name} must be > 0 (a limit), got {v!r}")

    def violations(self, params: int, train_cost: float) -> dict[str, float]:
        """Constraint values (feasible when <= 0), relative to each limit."""
        out: dict[str, float] = {}
        if self.max_params is not None:
            out["params"] = params / self.max_params - 1.0
        if self.max_train_cost is not None:
            out["train_cost"] = train_cost / self.max_train_cost - 1.0
        return out
