"""How a study spends its budget on each phase: the zero-cost anchors (:class:`Anchors`),
the trust probe (:class:`TrustProbe`) and the fine-tuning of the finalists
(:class:`FineTuning`). ``nasflow.pipeline`` runs them."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from nasflow._checks import check_choice, check_fraction, check_int
from nasflow.errors import ConfigError
from nasflow.train import (
    TrainConfig,
)

#: What ``Anchors.fallback`` accepts besides ``None``.
FALLBACKS = ("largest",)


@dataclass(frozen=True)
class Anchors:
    """How many zero-cost anchors a study trains first, and from how many candidates.

    Attributes:
        n: Anchors trained from scratch before the supernet (each costs one stand-alone
            training with the study's recipe). The default was the knee of the front's
            coverage against the training it costs on the suite's first (40-architecture)
            tables (``benchmarks/anchors.py``; ``benchmarks/results/b8-anchors.md``); on
            the 200 x 2 tables six cover more, but kept worse models in paired run 11
            (``benchmarks/results/paired.md``), so four stay.
        sample: Random architectures drawn from the space (seeded by the study's seed);
            the anchors are spread over the non-dominated set of (parameters up, training
            FLOPs down) among them, evenly in log FLOPs from its cheapest member to its
            largest.
        fallback: ``None`` (the default): the best-validating anchor replaces the
            search's choice where it validates higher (both are full trainings with the
            recipe; no margin since 2026-12-02). ``"largest"``: the space's largest
            architecture (:func:`nasflow.space.largest_arch`) joins the random draws, so
            it is the largest anchor, and it is the model kept unless the search's choice
            (or another anchor) validates above it by ``FALLBACK_MARGIN_SE`` standard
            errors (``nasflow.pipeline``): the search has to beat
            the trivial baseline on evidence, not merely match it. Not the default:
            paired run 6 (``benchmarks/results/paired.md``) measured no gain (−1.4 points
            of the table pooled, interval −7.1 to +4.0, on three suite grounds).
    """

    n: int = 4
    sample: int = 256
    fallback: str | None = None

    def __post_init__(self) -> None:
        check_int("Anchors.n", self.n, 1)
        check_int("Anchors.sample", self.sample, self.n)
        if self.fallback is not None:
            check_choice("Anchors.fallback", self.fallback, FALLBACKS)


#: What the finalists' "best supernet scores" may be ranked by (``FineTuning.rank_by``).
RANK_BY = ("accuracy", "rank_sum", "ranker")


@dataclass(frozen=True)
class FineTuning:
    """How the fine-tuning phase spends its budget.

    Attributes:
        finalists: Screened candidates that enter the first rung: the ``top`` best
            supernet scores, then the screened Pareto set, then the next best scores.
        rank_by: What "best supernet scores" means when the finalists are chosen:
            ``"rank_sum"`` (the default), the sum of a path's two ranks among the screened
            candidates, by its validation accuracy at the supernet's weights (the screening
            score) and by the validation cross-entropy of the same forward passes (ties: the
            higher accuracy); ``"accuracy"``, the screening score alone; ``"ranker"``, the
            pairwise ranker of ``nasflow.ranker`` over the screening's own features (the
            supernet accuracy, the parameter count (log) and the width choice,
            ``width``/``n_embd``, standardised over the screened candidates) with the
            weights two MNIST-1D tables chose (``nasflow.ranker.SUITE_PRIOR``), refitted on
            the anchors' trainings where six or more are in hand and order them better (its
            record: ``nasflow.record.study_ranker``). Paired runs (``benchmarks/results/
            paired.md``, run 5): the ranker kept better models on three MNIST-1D grounds
            (+2.1 points of the table pooled) and worse ones on CIFAR-10 (-0.7, interval
            below zero), so the rank sum stays the default.
        top: Of the finalists, the best supernet scores, fine-tuned through every rung
            without halving: the kept model is chosen among the last rung's candidates
            (phase 3 retrains the ``StudySpec.retrain_top`` best by fine-tuned validation
            accuracy and keeps the best retrained validation), so it never depends on a
            one-epoch cut. The rest, mostly the cheaper end of the Pareto set, are halved
            and become ready models along the front. ``None`` (the default): the share a
            rung promotes, ``ceil(finalists * share)`` (5 of 10 at the first rung's share of
            1/2, the value the suite chose: ``benchmarks/results/constants.md``), so it is
            not a constant of its own; :attr:`protected` is the count either way. Choosing
            among the best scores rather than the Pareto set first under Pareto halving
            (``top=0``) is measured on the generalisation suite's tables
            (``benchmarks/generalisation.py``; ``benchmarks/results/b5-suite-ranking.md``).
        rungs: Cumulative epochs at each rung, increasing (``(1, 2, 4)``: one epoch for
            every finalist, a second for the survivors, two more for the last ones).
        keep: Share of a rung's candidates promoted to the next (at least one). ``None``
            (the default): successive halving's own coupling of promotion to resource, the
            ratio of the rung's epochs to the next one's (``rungs[r] / rungs[r + 1]``: 1/2 at
            every rung of ``(1, 2, 4)``, the share B5 chose, ``benchmarks/results/
            b5-suite-ranking.md``), so it is not a tuned constant of its own
            (:meth:`share`). With one rung nothing is promoted, and the share that splits
            the finalists into best scores and the front (:attr:`protected`) is 1/2.
        lr: Peak learning rate of the fine-tuning schedule; ``None`` is the study recipe's.
        warmup_epochs: Linear warm-up before the cosine decay.
    """

    finalists: int = 10
    rungs: tuple[int, ...] = (1, 2, 4)
    keep: float | None = None
    lr: float | None = None
    warmup_epochs: float = 0.5
    top: int | None = None
    rank_by: str = "rank_sum"

    def __post_init__(self) -> None:
        check_int("FineTuning.finalists", self.finalists, 1)
        if self.keep is not None:
            check_fraction("FineTuning.keep", self.keep, one=True)
        if self.top is not None:
            check_int("FineTuning.top", self.top, 0)
            if self.top > self.finalists:
                raise ConfigError(
                    f"FineTuning.top must be at most finalists ({self.finalists}), "
                    f"got {self.top!r}"
                )
        rungs = tuple(self.rungs)
        if (
            not rungs
            or any(isinstance(r, bool) or not isinstance(r, int) or r < 1 for r in rungs)
            or list(rungs) != sorted(set(rungs))
        ):
            raise ConfigError(
                f"FineTuning.rungs must be increasing positive epoch counts, got {self.rungs!r}"
            )
        object.__setattr__(self, "rungs", rungs)
        if self.rank_by not in RANK_BY:
            raise ConfigError(
                f"FineTuning.rank_by must be one of {', '.join(map(repr, RANK_BY))}, "
                f"got {self.rank_by!r}"
            )
        if self.lr is not None and not (isinstance(self.lr, float | int) and 0 < self.lr < 10):
            raise ConfigError(f"FineTuning.lr must be in (0, 10) or None, got {self.lr!r}")
        if not 0 <= self.warmup_epochs <= rungs[-1]:
            raise ConfigError(
                f"FineTuning.warmup_epochs must be in [0, {rungs[-1]}], got {self.warmup_epochs!r}"
            )

    def share(self, rung: int = 0) -> float:
        """The share of rung ``rung``'s candidates promoted to the next: ``keep``, or where
        it is ``None`` the ratio of the two rungs' epochs (successive halving with
        reduction factor ``rungs[rung + 1] / rungs[rung]``); 1/2 after the last rung or
        with one rung, where nothing is promoted (the share then only sizes
        :attr:`protected`)."""
        if self.keep is not None:
            return float(self.keep)
        if rung + 1 >= len(self.rungs):
            return 0.5
        return self.rungs[rung] / self.rungs[rung + 1]

    @property
    def protected(self) -> int:
        """How many finalists are protected from halving: ``top``, or where it is ``None``
        ``ceil(finalists * share)`` with the first rung's :meth:`share` (kept unresolved,
        so a copy with other ``finalists``, ``rungs`` or ``keep`` follows them)."""
        if self.top is not None:
            return self.top
        # (the product is rounded first: 10 * 0.3 is 3.0000000000000004 in floats)
        return math.ceil(round(self.finalists * self.share(0), 9))

    def recipe(self, base: TrainConfig) -> TrainConfig:
        """The fine-tuning recipe: ``base`` with the last rung's epochs, this lr and warm-up."""
        return replace(
            base,
            epochs=self.rungs[-1],
            lr=base.lr if self.lr is None else float(self.lr),
            warmup_epochs=self.warmup_epochs,
        )


@dataclass(frozen=True)
class TrustProbe:
    """How much to spend on the trust probe.

    Attributes:
        archs: Architectures trained (spread over the supernet's ranking); at least 4.
        epochs: Epochs each probed architecture is trained.
        bootstrap: Bootstrap resamples of the probed architectures for the interval.
        proxy: ``"finetune"`` (inherited supernet weights, fine-tuned; needs the
            supernet) or ``"scratch"`` (stand-alone from scratch, the study's recipe
            shortened to ``epochs``).
        schedule_epochs: With ``"finetune"``: the epochs the learning-rate schedule spans
            (``epochs`` of them are trained), as in the fine-tuning phase's last rung.
        margin: Added to both ends of the 90% bootstrap interval: the calibration on the
            generalisation suite (the bootstrap alone ignores that the proxy is itself a
            noisy ranking of the architectures).
        pool: With ``"finetune"``: random architectures of the space scored from the
            supernet, over whose ranking the ``archs`` are spread. The tau a verdict is
            about is the supernet's ranking of random architectures (what a
            random-architecture table measures), not of the screened ones, which a
            sampler has already narrowed to one region; ``0`` spreads over the screened
            candidates instead.
    """

    archs: int = 8
    epochs: int = 2
    bootstrap: int = 2000
    proxy: str = "finetune"
    schedule_epochs: int = 4
    margin: float = 0.15
    pool: int = 40

    def __post_init__(self) -> None:
        for name, low in (("archs", 4), ("epochs", 1), ("bootstrap", 100)):
            check_int(f"TrustProbe.{name}", getattr(self, name), low)
        check_choice("TrustProbe.proxy", self.proxy, ("finetune", "scratch"))
        check_int("TrustProbe.schedule_epochs", self.schedule_epochs, self.epochs)
        if self.pool:
            check_int("TrustProbe.pool", self.pool, self.archs)
        if (
            isinstance(self.margin, bool)
            or not isinstance(self.margin, int | float)
            or not (0 <= self.margin <= 1)
        ):
            raise ConfigError(f"TrustProbe.margin must be in [0, 1], got {self.margin!r}")
