"""B2's statistics: Kendall tau-b within cells of the architectures (all, each quartile of
predicted training cost, each width), with intervals over supernets and a bootstrap over
architectures, the difference between the study's ranking and the best free baseline, and
what an exact ranking of the architectures' expected accuracy would reach there (the
oracle: the ceiling any ranking can be measured against, estimated from the tables' seeds).

Pure functions of arrays; ``benchmarks/ranking.py`` computes the scores they read.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

#: Pairs of architectures per bootstrap chunk (memory: 4 bytes each, twice).
_CHUNK_PAIRS = 4_000_000


def sign_matrix(x: np.ndarray) -> np.ndarray:
    """``sign(x_i - x_j)`` for every pair, ``(n, n)`` int8."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x[:, None] - x[None, :]).astype(np.int8)


def tau_b_resampled(
    sa: np.ndarray, sb: np.ndarray, idx: np.ndarray, broken: bool = False
) -> np.ndarray:
    """Kendall tau-b of two rankings on each row of ``idx``.

    tau-b is ``sum sign(da) sign(db) / sqrt(sum sign(da)^2 * sum sign(db)^2)`` over pairs
    (scipy's ``kendalltau`` with ties in either list); an architecture drawn twice makes a
    pair tied in both lists, which tau-b leaves out.

    tau-b leaves a ranking's ties out of its denominator, so a coarse ranking (the width
    choice: four values over 200 architectures, a quarter of the pairs tied) scores above
    what it is worth when it must *choose*: among tied candidates it picks at random.
    ``broken=True`` is the expected tau-b after the first ranking's ties are broken
    uniformly at random: tied pairs add nothing to the numerator in expectation and count
    in the denominator (pairs of one architecture drawn twice stay out).

    Args:
        sa: ``sign_matrix`` of the first ranking over all ``n`` architectures.
        sb: The same for the second.
        idx: ``(B, m)`` architecture indices, one resample per row.
        broken: Break the first ranking's ties at random (in expectation).

    Returns:
        ``(B,)`` taus; ``nan`` where either ranking is constant on the resample.
    """
    idx = np.atleast_2d(idx)
    b, m = idx.shape
    out = np.empty(b)
    step = max(1, _CHUNK_PAIRS // max(1, m * m))
    for start in range(0, b, step):
        rows = idx[start : start + step]
        ia, ib = rows[:, :, None], rows[:, None, :]
        da = sa[ia, ib].astype(np.float32)  # (c, m, m)
        db = sb[ia, ib].astype(np.float32)
        num = np.einsum("cij,cij->c", da, db, dtype=np.float64)
        if broken:  # every pair of two distinct architectures: m^2 - sum of count^2
            counts = np.stack([np.bincount(r, minlength=sa.shape[0]) for r in rows])
            na = (m * m - (counts.astype(np.float64) ** 2).sum(1)).astype(np.float64)
        else:
            na = np.einsum("cij,cij->c", da, da, dtype=np.float64)
        den = np.sqrt(na * np.einsum("cij,cij->c", db, db, dtype=np.float64))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + len(rows)] = np.where(den > 0, num / den, np.nan)
    return out


def oracle_tau(between_seeds: float | np.ndarray, seeds: int = 2) -> np.ndarray:
    """Estimated Kendall tau of the architectures' *expected* stand-alone accuracy (over
    training seeds) against the mean of ``seeds`` trained tables: what a ranking that knew
    every architecture's expected accuracy exactly would score against B2's truth.

    One table against another (``between_seeds``, the "retrain vs retrain" ceiling) is
    not that ceiling: the truth B2 ranks against is the *mean* of the tables, less noisy
    than either, and a ranking without training noise (parameter count, say) can exceed
    one table's agreement with another. Under a Gaussian model (each table is the
    expected accuracy plus independent training noise of one variance within the cell):
    tau between two tables gives their correlation, the reliability of one table
    (Greiner's relation, ``r = sin(pi tau / 2)``); Spearman-Brown gives the reliability
    of the mean of ``seeds`` tables, ``R = k r / (1 + (k - 1) r)``; the expected
    accuracy's correlation with that mean is ``sqrt(R)``, and Greiner's relation turns it
    back into a tau. ``tests/benchmarks/test_ranking.py`` checks it on simulated tables
    with known expected accuracies: Gaussian ones (noise of different sizes in different
    cells included) within 0.03 on average; skewed ones (log-normal) overestimated by a
    few hundredths, which can only make a headroom look larger.

    Args:
        between_seeds: tau of one table against another (any shape); at or below 0 the
            tables share no signal and the estimate is 0; ``nan`` stays ``nan``.
        seeds: How many tables B2's truth is the mean of.

    Returns:
        The estimated tau, the shape of ``between_seeds``.
    """
    t = np.asarray(between_seeds, dtype=np.float64)
    r = np.sin(np.pi * np.clip(t, 0.0, 1.0) / 2)  # one table's reliability
    rk = seeds * r / (1 + (seeds - 1) * r)  # the mean of `seeds` tables'
    return 2 / np.pi * np.arcsin(np.sqrt(rk))


def cost_quartiles(cost: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """``(quartile of each architecture 0..3, the three edges)`` of predicted costs: an
    architecture at an edge belongs to the lower quartile."""
    c = np.asarray(cost, dtype=np.float64)
    edges = np.quantile(c, [0.25, 0.5, 0.75])
    return np.searchsorted(edges, c, side="left"), edges


def cells(
    cost: Sequence[float], widths: Sequence[object] | None, width_label: str | None
) -> dict[str, np.ndarray]:
    """The architectures of each cell: ``"all"``, ``"cost Q1"`` .. ``"cost Q4"`` (quartiles
    of predicted training cost, Q1 the cheapest), and ``"<label>=<value>"`` per width."""
    n = len(cost)
    out = {"all": np.arange(n)}
    quartile, _ = cost_quartiles(cost)
    for q in range(4):
        out[f"cost Q{q + 1}"] = np.flatnonzero(quartile == q)
    if widths is not None and width_label:
        for v in sorted(set(widths), key=lambda w: (str(type(w)), w)):  # type: ignore[arg-type]
            out[f"{width_label}={v}"] = np.array([i for i, w in enumerate(widths) if w == v])
    return out


def study_rank_score(accuracy: Sequence[float], loss: Sequence[float | None]) -> np.ndarray:
    """The study's ranking as a score (higher first): the sum of each architecture's rank
    by supernet accuracy (higher first) and by supernet cross-entropy (lower first), ties
    broken by the accuracy, as ``FineTuning(rank_by="rank_sum")`` orders its finalists;
    by accuracy alone where any cross-entropy is missing or not finite (as search does)."""
    acc = np.asarray(accuracy, dtype=np.float64)
    if any(v is None or not np.isfinite(v) for v in loss):
        return acc.copy()
    total = rankdata(-acc) + rankdata(np.asarray(loss, dtype=np.float64))
    keys = sorted(set(zip(total.tolist(), (-acc).tolist(), strict=True)))
    place = {k: i for i, k in enumerate(keys)}
    return -np.array([place[k] for k in zip(total.tolist(), (-acc).tolist(), strict=True)], float)


@dataclass(frozen=True)
class Interval:
    """A point estimate and its 90% interval (``nan`` where undefined)."""

    point: float
    low: float
    high: float

    def fmt(self) -> str:
        if not np.isfinite(self.point):
            return "—"
        return f"{self.point:+.2f} [{self.low:+.2f}, {self.high:+.2f}]"

    def to_list(self) -> list[float | None]:
        return [
            None if not np.isfinite(v) else float(v) for v in (self.point, self.low, self.high)
        ]


@dataclass(frozen=True)
class Cell:
    """One cell's taus.

    Attributes:
        n: Architectures in the cell.
        taus: Ranker -> tau against the truth (mean over supernets) with its interval.
        ceiling: One table seed's test accuracy against another's (``None``: one table).
        best_free: The free baseline with the highest tau here (``None``: none defined).
        difference: The study's ranking minus ``best_free``, paired resamples.
        oracle: :func:`oracle_tau` of ``ceiling``: an exact ranking of the expected
            accuracy against the truth, estimated (``None``: one table).
        headroom: ``oracle`` minus ``best_free``, paired resamples: the most any ranking
            can be above the best free baseline here (``None``: either missing).
    """

    n: int
    taus: Mapping[str, Interval]
    ceiling: Interval | None
    best_free: str | None
    difference: Interval | None
    oracle: Interval | None = None
    headroom: Interval | None = None


def _interval(point: float, reps: np.ndarray) -> Interval:
    finite = reps[np.isfinite(reps)]
    if not np.isfinite(point) or len(finite) == 0:
        return Interval(point, np.nan, np.nan)
    low, high = np.percentile(finite, [5, 95])
    return Interval(point, float(low), float(high))


def cell_taus(
    scores: Mapping[str, np.ndarray],
    truth: np.ndarray,
    members: np.ndarray,
    *,
    retrains: Sequence[np.ndarray] = (),
    study: str | None = None,
    free: Sequence[str] = (),
    reps: int = 1000,
    seed: int = 0,
    ties: str = "b",
    truth_seeds: int | None = None,
) -> Cell:
    """Taus of every ranker in one cell, with 90% intervals: each bootstrap replicate draws
    the cell's architectures with replacement and the supernets with replacement (the same
    draws for every ranker: paired), and averages the drawn supernets' taus.

    Args:
        scores: Ranker -> ``(S, n)`` scores over all architectures, one row per supernet
            (or per initialisation seed; a ranker without seeds has one row).
        truth: ``(n,)`` what is ranked against (the tables' mean test accuracy).
        members: The cell's architecture indices.
        retrains: Two or more tables' ``(n,)`` test accuracies: the ceiling is the first
            against the second.
        truth_seeds: How many tables ``truth`` is the mean of (the oracle's ``seeds``;
            default: ``len(retrains)``).
        study: The ranker whose difference to the best free baseline is reported.
        free: The free baselines (the best by point tau is chosen per cell).
        reps: Bootstrap replicates.
        seed: The bootstrap's seed.
        ties: ``"b"``: tau-b (a ranking's ties left out); ``"broken"``: each ranking's ties
            broken at random (in expectation), as a ranking that must choose meets them.
    """
    m = len(members)
    rng = np.random.default_rng(seed)
    idx = members[rng.integers(0, m, (reps, m))] if m else np.zeros((reps, 0), int)
    seeds = max((s.shape[0] for s in scores.values()), default=1)
    draw = rng.integers(0, seeds, (reps, seeds))
    st = sign_matrix(truth)
    taus: dict[str, Interval] = {}
    reps_of: dict[str, np.ndarray] = {}
    for name, mat in scores.items():
        mat = np.atleast_2d(mat)
        if mat.shape[0] not in (1, seeds):
            raise ValueError(f"{name}: {mat.shape[0]} rows of scores, expected 1 or {seeds}")
        signs = [sign_matrix(row) for row in mat]
        broken = ties == "broken"
        point = np.array([tau_b_resampled(s, st, members[None, :], broken)[0] for s in signs])
        per = np.stack([tau_b_resampled(s, st, idx, broken) for s in signs])  # (S_r, reps)
        rep = per[0] if mat.shape[0] == 1 else _mean_drawn(per, draw)
        pt = float(np.nanmean(point)) if np.isfinite(point).any() else np.nan
        taus[name], reps_of[name] = _interval(pt, rep), rep
    ceiling = oracle = None
    oracle_reps = np.full(reps, np.nan)
    if len(retrains) >= 2 and m:
        sa, sb = sign_matrix(retrains[0]), sign_matrix(retrains[1])
        between = tau_b_resampled(sa, sb, idx)
        ceiling = _interval(tau_b_resampled(sa, sb, members[None, :])[0], between)
        k = len(retrains) if truth_seeds is None else truth_seeds
        oracle_reps = oracle_tau(between, k)
        oracle = _interval(float(oracle_tau(ceiling.point, k)), oracle_reps)
    defined = [f for f in free if f in taus and np.isfinite(taus[f].point)]
    best = max(defined, key=lambda f: taus[f].point) if defined else None
    difference = headroom = None
    if study in taus and best is not None:
        point = taus[study].point - taus[best].point
        difference = _interval(point, reps_of[study] - reps_of[best])
    if oracle is not None and best is not None:
        headroom = _interval(oracle.point - taus[best].point, oracle_reps - reps_of[best])
    return Cell(m, taus, ceiling, best, difference, oracle, headroom)


def _mean_drawn(per: np.ndarray, draw: np.ndarray) -> np.ndarray:
    """``(reps,)``: for each replicate, the mean of ``per[s, b]`` over its drawn seeds."""
    picked = per[draw, np.arange(per.shape[1])[:, None]]  # (reps, seeds)
    with warnings.catch_warnings():  # a replicate whose drawn taus are all nan stays nan
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(picked, axis=1)
