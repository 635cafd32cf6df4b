"""The training recipe: one set of optimizer, schedule and data-order settings.

``Recipe`` holds what every training run shares; the stand-alone recipe
(``TrainConfig``), the supernet's (``SupernetConfig``, the recipe plus its path sampler)
and the stack harness's run settings extend it, each with its own defaults.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from typing import Any

from nasflow._checks import check_int
from nasflow.errors import ConfigError
from nasflow.sampling import SAMPLERS
from nasflow.train._distill import DISTILL_MODES, check_weight


class RecipeError(ConfigError):
    """A training recipe holds a bad value (checked when it is built)."""


def _check_number(name: str, value: Any, positive: bool = False) -> None:
    """A real, finite number > 0 (``positive``) or >= 0, not a bool."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or not (value > 0 if positive else value >= 0)
    ):
        bound = "> 0" if positive else ">= 0"
        raise RecipeError(f"{name} must be a finite number {bound}, got {value!r}")


@dataclass(frozen=True)
class Recipe:
    """How a network is trained: AdamW with a linear warm-up then cosine decay.

    Attributes:
        epochs: Passes over the training split.
        lr: Peak learning rate.
        weight_decay: AdamW decoupled weight decay.
        warmup_epochs: Linear warm-up before the cosine decay.
        seed: Seeds the run (see the subclass for what it seeds).
    """

    epochs: int = 20
    lr: float = 3e-3
    weight_decay: float = 1e-2
    warmup_epochs: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        check_int("epochs", self.epochs, error=RecipeError)
        _check_number("lr", self.lr, positive=True)
        _check_number("weight_decay", self.weight_decay)
        _check_number("warmup_epochs", self.warmup_epochs)
        check_int("seed", self.seed, 0, error=RecipeError)


@dataclass(frozen=True)
class TrainConfig(Recipe):
    """A stand-alone training recipe (the study's training budget, fine-tuning).

    A study initialises and shuffles from ``StudySpec.seed``; ``seed`` here is the data
    order's seed for code that trains with the recipe alone (the benchmarks).

    Attributes:
        batch_size: Samples per optimizer step.
        label_smoothing: Cross-entropy label smoothing.
    """

    batch_size: int = 64
    label_smoothing: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("batch_size", self.batch_size, error=RecipeError)
        ls = self.label_smoothing
        if isinstance(ls, bool) or not isinstance(ls, numbers.Real) or not 0 <= ls < 1:
            raise RecipeError(f"label_smoothing must be a number in [0, 1), got {ls!r}")


@dataclass(frozen=True)
class SupernetConfig(Recipe):
    """How a supernet is trained: the recipe plus its path sampler.

    ``seed`` seeds initialisation, data order and path sampling.

    Attributes:
        sampler: ``"fair"`` (FairNAS, default), ``"fair-depth"`` (strictly fair, each
            step's skips spread over its paths' depths: ``nasflow.sampling``) or
            ``"uniform"`` (SPOS).
        batch_size: Samples per step (shared by all paths of the step).
        split: Few-shot splitting: a path choice of the space (``"width"``) on whose values
            the supernet is split into sub-supernets, one per value, each path training in
            its own (``nasflow.supernet.Split``); ``None`` shares every weight.
        split_from: The fraction of ``epochs`` trained shared before the split (each
            sub-supernet then starts from the shared weights and optimizer state).
        distill: In-place distillation (``nasflow.train._distill.Distillation``): ``"inplace"``
            trains every path on a mix of the labels and the soft targets of the space's
            largest path, run without gradient on the same batch (strict fairness holds);
            ``None`` trains on the labels alone.
        distill_weight: The soft targets' share of each path's loss, in ``(0, 1)``.
        distill_temperature: The softmax temperature of student and teacher.
    """

    epochs: int = 10
    warmup_epochs: float = 0.5
    sampler: str = "fair"
    batch_size: int = 64
    split: str | None = None
    split_from: float = 0.0
    distill: str | None = None
    distill_weight: float = 0.5
    distill_temperature: float = 1.0

    def __post_init__(self) -> None:
        if self.sampler not in SAMPLERS:
            raise RecipeError(f"sampler must be one of {sorted(SAMPLERS)}, got {self.sampler!r}")
        super().__post_init__()
        check_int("batch_size", self.batch_size, error=RecipeError)
        if self.split is not None and (not isinstance(self.split, str) or not self.split):
            raise RecipeError(f"split must be a path choice's label or None, got {self.split!r}")
        f = self.split_from
        if isinstance(f, bool) or not isinstance(f, numbers.Real) or not 0 <= f < 1:
            raise RecipeError(f"split_from must be a number in [0, 1), got {f!r}")
        if self.distill is not None and self.distill not in DISTILL_MODES:
            raise RecipeError(
                f"distill must be None or one of {', '.join(map(repr, DISTILL_MODES))}, "
                f"got {self.distill!r}"
            )
        if not check_weight(self.distill_weight):
            raise RecipeError(
                f"distill_weight must be a number strictly between 0 and 1, got "
                f"{self.distill_weight!r}"
            )
        _check_number("distill_temperature", self.distill_temperature, positive=True)

    def identity(self) -> dict[str, Any]:
        """The fields that identify a supernet (``asdict``), without the split's or the
        distillation's while there is none: stored studies and checkpoints from before
        either keep theirs."""
        fields = asdict(self)
        if self.split is None:
            del fields["split"], fields["split_from"]
        if self.distill is None:  # (likewise for stores from before distillation)
            del fields["distill"], fields["distill_weight"], fields["distill_temperature"]
        return fields

    @property
    def split_epoch(self) -> int | None:
        """The epoch at whose start the supernet is split (``None``: never)."""
        if self.split is None:
            return None
        return min(self.epochs - 1, round(self.split_from * self.epochs))
