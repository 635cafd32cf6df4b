"""Trust, measured on the user's own space: does the supernet's ranking hold up?

No one-shot NAS tool tells its user whether the supernet's ranking can be believed on
*their* space. The probe answers it at the cost of a few short trainings: it takes ``k``
screened architectures spread evenly over the supernet's ranking (the best, the worst
and evenly spaced ranks between), trains each stand-alone from scratch with a short
recipe, and reports Kendall's tau between the supernet score and the short training's
validation accuracy, with a bootstrap interval over the probed architectures. A short
training is itself a noisy proxy of the full one, so the tau is a lower-bound flavoured
check, not the ground truth; ``benchmarks/ranking.py`` measures how well it predicts the
tau against a full ground truth.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch
from scipy.stats import kendalltau

from nasflow._checks import check_int
from nasflow.space import Arch, SearchSpace
from nasflow.train import Batches, TrainConfig, train_standalone


@dataclass(frozen=True)
class TrustProbe:
    """How much to spend on the trust probe.

    Attributes:
        archs: Architectures trained (spread over the supernet's ranking); at least 4.
        epochs: Epochs of the short stand-alone recipe (the study's recipe otherwise).
        bootstrap: Bootstrap resamples of the probed architectures for the interval.
    """

    archs: int = 8
    epochs: int = 3
    bootstrap: int = 2000

    def __post_init__(self) -> None:
        for name, low in (("archs", 4), ("epochs", 1), ("bootstrap", 100)):
            check_int(f"TrustProbe.{name}", getattr(self, name), low)


@dataclass
class TrustResult:
    """The probe's outcome (JSON-able through ``asdict``)."""

    tau: float
    low: float
    high: float
    archs: list[str]
    supernet_scores: list[float]
    short_accuracies: list[float]
    epochs: int
    seconds: float
    verdict: str


def spread_over_ranking(scored: Sequence[tuple[Arch, float]], k: int) -> list[int]:
    """Indices of ``k`` entries at evenly spaced ranks of ``scored`` by score (best and
    worst included), or all of them when there are at most ``k``."""
    order = sorted(range(len(scored)), key=lambda i: -scored[i][1])
    if len(order) <= k:
        return order
    ranks = np.linspace(0, len(order) - 1, k).round().astype(int)
    return [order[r] for r in ranks]


def bootstrap_tau(
    a: Sequence[float], b: Sequence[float], n: int, seed: int
) -> tuple[float, float, float]:
    """Kendall tau-b of ``a`` and ``b`` and a 90% percentile bootstrap interval.

    Resamples that are constant in either list (tau undefined) are dropped.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    tau = float(kendalltau(x, y).statistic)
    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(n):
        idx = rng.integers(len(x), size=len(x))
        if np.ptp(x[idx]) == 0 or np.ptp(y[idx]) == 0:
            continue
        taus.append(float(kendalltau(x[idx], y[idx]).statistic))
    if not taus:
        return tau, float("nan"), float("nan")
    low, high = np.percentile(taus, [5, 95])
    return tau, float(low), float(high)


def verdict(tau: float, low: float) -> str:
    """Plain words for a probe's tau and the lower end of its interval."""
    if np.isnan(tau):
        return "undetermined: the probed architectures scored alike; screen more"
    if low >= 0.3 and tau >= 0.6:
        return "trust it: the supernet ranks these architectures as short training does"
    if tau >= 0.3:
        return (
            "screen more: the ranking is only roughly right here; retrain several top "
            "candidates (retrain_top) rather than one"
        )
    return (
        "train longer: the supernet does not rank this space; train it for more epochs "
        "before trusting its scores"
    )


def run_trust_probe(
    space: SearchSpace,
    scored: Sequence[tuple[Arch, float]],
    train: Batches,
    val: Batches,
    recipe: TrainConfig,
    probe: TrustProbe,
    seed: int = 0,
    device: torch.device | str = "cpu",
    log: Callable[[str], None] | None = None,
) -> TrustResult:
    """Train ``probe.archs`` architectures of ``scored`` stand-alone and compare rankings.

    Args:
        space: The study's space (builds the networks).
        scored: ``(arch, supernet score)`` of the screened candidates (higher is better).
        train: Training batches of the short recipe.
        val: Validation batches (never the test split).
        recipe: The study's stand-alone recipe; its epochs are replaced by ``probe.epochs``.
        probe: How much to spend.
        seed: Seeds the networks' initial weights and the bootstrap.
        device: Where to train.
        log: Line logger.
    """
    short = replace(recipe, epochs=probe.epochs, warmup_epochs=min(recipe.warmup_epochs, 1.0))
    picks = spread_over_ranking(scored, probe.archs)
    t0 = time.perf_counter()
    accs = []
    for n, i in enumerate(picks):
        torch.manual_seed(seed * 1009 + n)
        net = space.build(scored[i][0])
        accs.append(train_standalone(net, train, val, short, device=device).val_accuracy)
        if log is not None:
            log(f"trust probe: {n + 1}/{len(picks)} trained, val accuracy {accs[-1]:.4f}")
    scores = [scored[i][1] for i in picks]
    tau, low, high = bootstrap_tau(scores, accs, probe.bootstrap, seed)
    return TrustResult(
        tau,
        low,
        high,
        [scored[i][0].to_json() for i in picks],
        scores,
        accs,
        probe.epochs,
        time.perf_counter() - t0,
        verdict(tau, low),
    )


def trust_record(result: TrustResult) -> dict:
    """The study user attribute's value (JSON)."""
    return asdict(result)


def format_trust(record: dict) -> str:
    """One summary line."""
    return (
        f"trust probe: Kendall tau {record['tau']:+.2f} (90% bootstrap interval "
        f"{record['low']:+.2f} to {record['high']:+.2f}) between supernet score and "
        f"validation accuracy after {record['epochs']} epochs of stand-alone training, "
        f"{len(record['archs'])} architectures spread over the ranking, "
        f"{record['seconds']:.0f}s: {record['verdict']}"
    )
