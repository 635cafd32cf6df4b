"""How a study spends its budget after the screening as one schedule of rungs
(``nasflow.pipeline``'s rung schedule runs it)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from nasflow._checks import check_int
from nasflow.errors import ConfigError
from nasflow.search._phases import RANK_BY

#: What the top rung trains (``Rungs.top``).
TOPS = ("scratch", "inherited")

#: What promotes a candidate to the next rung (``Rungs.promote``).
PROMOTES = ("front", "accuracy")


@dataclass(frozen=True)
class Rungs:
    """Successive halving over fidelities, from the screening score to a full training.

    Rung 0 is the screening score. Each next rung is a cumulative number of fine-tuning
    epochs from the inherited supernet weights (``finetune``); the top rung is the study's
    full recipe (``top``). After every rung a candidate goes on only where it is among the
    best ``1 / reduction`` of those that reached it. The kept model is the best at the top
    rung; the study's zero-cost anchors enter first, at the top rung only.

    Attributes:
        finetune: Cumulative fine-tuning epochs of the rungs between the screening and the
            top, increasing (``()``: the screened candidates go straight to the top).
        top: ``"scratch"``: the top rung trains the architecture from scratch with the
            study's recipe; ``"inherited"``: the recipe from the inherited weights.
        reduction: Keep ``1 / reduction`` of each rung (Optuna's ``reduction_factor``).
        budget: CPU-seconds for the rungs; the number of candidates that enter them is
            sized from it and the predicted costs (``None``: ``candidates``).
        candidates: How many candidates enter the first rung where no ``budget`` is set,
            and at most how many where one is (``None``: no cap).
        pruner: ``"asha"`` (successive halving, one bracket) or ``"hyperband"`` (several
            brackets of different first rungs; where ``promote="front"`` with several
            objectives, the Pareto-aware successive halving runs instead).
        promote: ``"front"``: with several objectives, a candidate goes on where it is on
            the best fronts of its rung (Pareto-aware successive halving, which keeps a
            rung's whole first front); ``"accuracy"``: by the measured validation accuracy
            alone, through Optuna's own pruner, whatever the study's objectives (the
            costs of the candidates that reach the top are still on the study's front).
        rank_by: The order in which the screened candidates enter the first rung
            (``FineTuning.rank_by``'s choices; ``"ranker"``: the pairwise ranker). The
            rank sum stays this opt-in mode's default: only ``FineTuning`` was measured
            with the ranker (``benchmarks/results/paired.md``, run 5).
    """

    finetune: tuple[int, ...] = (1, 2, 4)
    top: str = "scratch"
    reduction: int = 2
    budget: float | None = None
    candidates: int | None = 10
    pruner: str = "asha"
    promote: str = "front"
    rank_by: str = "rank_sum"

    def __post_init__(self) -> None:
        steps = tuple(self.finetune)
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in steps) or list(
            steps
        ) != sorted(set(steps)):
            raise ConfigError(
                f"Rungs.finetune must be increasing epoch counts >= 1, got {self.finetune!r}"
            )
        object.__setattr__(self, "finetune", steps)
        if self.top not in TOPS:
            raise ConfigError(f"Rungs.top must be one of {TOPS}, got {self.top!r}")
        check_int("Rungs.reduction", self.reduction, 2)
        if self.budget is not None and not (
            isinstance(self.budget, int | float)
            and not isinstance(self.budget, bool)
            and math.isfinite(self.budget)
            and self.budget > 0
        ):
            raise ConfigError(f"Rungs.budget must be CPU-seconds > 0 or None, got {self.budget!r}")
        if self.candidates is not None:
            check_int("Rungs.candidates", self.candidates, 1)
        if self.budget is None and self.candidates is None:
            raise ConfigError("Rungs needs a budget or a number of candidates")
        if self.pruner not in ("asha", "hyperband"):
            raise ConfigError(f"Rungs.pruner must be 'asha' or 'hyperband', got {self.pruner!r}")
        if self.promote not in PROMOTES:
            raise ConfigError(f"Rungs.promote must be one of {PROMOTES}, got {self.promote!r}")
        if self.rank_by not in RANK_BY:
            raise ConfigError(f"Rungs.rank_by must be one of {RANK_BY}, got {self.rank_by!r}")
