"""Gradient accumulation (fixed and variance-aware adaptive k) and the LR schedule."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from nasflow._checks import check_int
from nasflow.errors import ConfigError


def adaptive_k(variance: float, target_variance: float, k_max: int, eps: float = 1e-12) -> int:
    """The seed paper's rule: ``k = min(k_max, ceil(sigma^2 / (sigma_target^2 + eps)))``.

    Args:
        variance: ``sigma^2``, the variance (trace of the covariance) of one batch's
            gradient.
        target_variance: ``sigma_target^2``, the variance allowed for the averaged gradient
            of one optimizer step.
        k_max: Upper bound on ``k``.
        eps: Guards the division.

    Returns:
        Batches to average per optimizer step, in ``[1, k_max]``.
    """
    if not (variance >= 0 and math.isfinite(variance)):
        return k_max
    return max(1, min(k_max, math.ceil(variance / (max(target_variance, 0.0) + eps))))


def schedule_factor(step: int, total_steps: int, warmup_steps: int = 0) -> float:
    """Linear warm-up then cosine decay to zero: the factor ``warmup_cosine`` applies.

    ``step`` counts batches (not optimizer steps), so the schedule is the same function
    of the data seen whatever ``k`` the accumulation uses.

    Written out because ``StackStep`` needs the factor at any batch (the first of each
    optimizer step, ``k`` batches apart, ``k`` adaptive): PyTorch's schedulers are objects
    that advance one step per call and keep their closed form private
    (``_get_closed_form_lr``). ``warmup_cosine`` is PyTorch's ``LinearLR`` +
    ``CosineAnnealingLR``; a test holds the two equal.
    """
    total = max(1, total_steps)
    warm = min(max(0, warmup_steps), total - 1)
    if step < warm:
        return (step + 1) / (warm + 1)
    progress = min(1.0, (step - warm) / max(1, total - warm))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


@dataclass(frozen=True)
class Schedule:
    """Warm-up + cosine over a training run measured in batches.

    Attributes:
        total_batches: Batches in the whole run.
        warmup_batches: Batches of linear warm-up.
    """

    total_batches: int
    warmup_batches: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.total_batches, bool) or self.total_batches < 1:
            raise ConfigError(f"total_batches must be >= 1, got {self.total_batches!r}")
        if self.warmup_batches < 0:
            raise ConfigError(f"warmup_batches must be >= 0, got {self.warmup_batches!r}")

    def factor(self, batch: int) -> float:
        return schedule_factor(batch, self.total_batches, self.warmup_batches)


class Accumulation(ABC):
    """How many batches of gradients are summed before each optimizer step.

    The effective batch of a step is ``k`` batches, and the learning rate follows the
    linear scaling rule (``lr * k``).
    """

    name = "accumulation"
    #: Whether ``observe`` needs per-unit gradient statistics (costs a gradient copy).
    needs_stats = False

    @property
    @abstractmethod
    def k(self) -> int:
        """Batches in the next optimizer step."""

    def observe(self, batch_variance: float, mean_sq_norm: float) -> None:
        """Update from one step's gradient statistics (adaptive policies only)."""
        return None

    def state_dict(self) -> dict[str, Any]:
        """What a resumed run needs to choose the same ``k`` (nothing for a fixed ``k``)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a ``state_dict()``."""
        return None

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Settings as JSON-able data."""


class FixedAccumulation(Accumulation):
    """Always ``k`` batches per optimizer step (``k=1`` is no accumulation)."""

    def __init__(self, k: int = 1) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"accumulation must be an int >= 1 or 'adaptive', got {k!r}")
        self._k = k

    @property
    def k(self) -> int:
        return self._k

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "k": self._k}


class AdaptiveAccumulation(Accumulation):
    """Variance-aware ``k``: average enough batches that gradient noise stays small.

    After each optimizer step the per-batch gradient variance ``sigma^2`` (trace of the
    covariance, estimated from the step's ``k`` batches, or two half-batches when
    ``k = 1``) and the squared norm of the mean gradient are smoothed with an exponential
    moving average, and the next step uses
    ``k = min(k_max, ceil(sigma^2 / (noise_target * |g|^2 + eps)))``. With
    ``noise_target = 1`` the effective batch tracks the gradient noise scale
    ``tr(Sigma) / |G|^2`` of McCandlish et al. (2018), the critical batch size.

    Args:
        k_max: Largest ``k``.
        noise_target: Allowed variance of the averaged gradient, relative to its squared
            norm.
        ema: Smoothing of the statistics across steps, in [0, 1).
    """

    needs_stats = True

    def __init__(self, k_max: int = 8, noise_target: float = 1.0, ema: float = 0.9) -> None:
        check_int("k_max", k_max)
        if not (noise_target > 0 and math.isfinite(noise_target)):
            raise ConfigError(f"noise_target must be a positive number, got {noise_target!r}")
        if not 0 <= ema < 1:
            raise ConfigError(f"ema must be in [0, 1), got {ema!r}")
        self.k_max, self.noise_target, self.ema = k_max, noise_target, ema
        self._k = 1
        self._var = self._sq = 0.0
        self._weight = 0.0  # bias correction of the moving averages
        self.history: list[int] = []

    @property
    def k(self) -> int:
        return self._k

    def observe(self, batch_variance: float, mean_sq_norm: float) -> None:
        if not (math.isfinite(batch_variance) and math.isfinite(mean_sq_norm)):
            return
        b = self.ema
        self._var = b * self._var + (1 - b) * batch_variance
        self._sq = b * self._sq + (1 - b) * mean_sq_norm
        self._weight = b * self._weight + (1 - b)
        var, sq = self._var / self._weight, self._sq / self._weight
        self._k = adaptive_k(var, self.noise_target * sq, self.k_max)
        self.history.append(self._k)

    def state_dict(self) -> dict[str, Any]:
        return {
            "k": self._k,
            "var": self._var,
            "sq": self._sq,
            "weight": self._weight,
            "history": list(self.history),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if not state:
            return
        self._k = int(state["k"])
        self._var, self._sq = float(state["var"]), float(state["sq"])
        self._weight = float(state["weight"])
        self.history = [int(k) for k in state["history"]]

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "k": "adaptive",
            "k_max": self.k_max,
            "noise_target": self.noise_target,
        }


def make_accumulation(setting: int | str, k_max: int = 8, noise_target: float = 1.0):
    """``FixedAccumulation(k)`` for an int, ``AdaptiveAccumulation`` for ``"adaptive"``."""
    if setting == "adaptive":
        return AdaptiveAccumulation(k_max, noise_target)
    if isinstance(setting, str):
        raise ConfigError(f"accumulation must be an int >= 1 or 'adaptive', got {setting!r}")
    return FixedAccumulation(setting)
