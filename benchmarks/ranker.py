"""The learned ranker, validated leave-one-ground-out on the suite's tables.

For every ground held out in turn, ``nasflow.ranker``'s pairwise model is fitted on the
other grounds' table architectures (features from ``benchmarks/ranking.py --scores-out``:
the supernet's accuracy and cross-entropy, log parameters, log training FLOPs, the width,
log synflow, NWOT, log predicted cost; each standardised within its ground and supernet;
labels: the tables' mean stand-alone test accuracy; pairs within one ground and supernet)
and ranks the held-out ground's architectures. Its Kendall tau is reported globally, per
quartile of predicted training cost and per width, beside the free baselines' and the
study's rank sum, with the difference "ranker minus the best free baseline" and its 90%
interval (bootstrap over architectures and supernets: ``_ranking_stats.cell_taus``).

The weights fitted on every ground at once are printed last: the prior a study uses
before it has labels of its own (``nasflow.ranker.PRIOR``).

Usage::

    python benchmarks/ranker.py --scores benchmarks/data/b2_scores/*.jsonl
    python benchmarks/ranker.py --scores ... --features supernet_accuracy log_params log_flops
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _ranking_features import read_rows
from _ranking_stats import cell_taus, cells
from ranking import FREE, RANK_SUM, depth, ranker_scores

from nasflow.ranker._pairwise import Standardiser, fit_pairwise

#: Feature name -> how it is read from a feature row (``None``: missing).
READERS = {
    "supernet_accuracy": lambda r: r.get("supernet_accuracy"),
    "supernet_loss": lambda r: r.get("supernet_loss"),
    "log_params": lambda r: _log(r.get("params")),
    "log_flops": lambda r: _log(r.get("flops")),
    "width": lambda r: r.get("width") if isinstance(r.get("width"), int | float) else None,
    "log_synflow": lambda r: _log(r.get("synflow")),
    "nwot": lambda r: r.get("nwot"),
    "log_cost": lambda r: _log(r.get("predicted_cost")),
    # Layers that are not a skip: the supernet's accuracy favours depth where training at
    # equal cost favours width (b2-ranking.md, "what stops B2's target"); a weight on depth
    # learned from other grounds' tables can correct that.
    "depth": lambda r: _depth(r.get("arch")),
}
RANKER = "ranker"


def _depth(arch: Any) -> float | None:
    """Layers of ``arch`` that are not a skip (``None``: no architecture, or no layers)."""
    if not isinstance(arch, str | dict):
        return None
    choices = json.loads(arch) if isinstance(arch, str) else arch
    if not any(isinstance(v, str) for v in choices.values()):
        return None
    return float(depth(choices, "skip"))


def _log(v: Any) -> float | None:
    if v is None or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
        return None
    return math.log(v)


class Ground:
    """One ground's feature rows, by supernet seed, in index order."""

    def __init__(self, name: str, rows: Sequence[dict[str, Any]]) -> None:
        self.name = name
        self.rows = list(rows)
        self.seeds = sorted({int(r["supernet_seed"]) for r in rows})
        self.by_seed = [
            sorted((r for r in rows if r["supernet_seed"] == s), key=lambda r: r["index"])
            for s in self.seeds
        ]
        self.truth = np.array([r["test_mean"] for r in self.by_seed[0]], float)

    def available(self) -> set[str]:
        """The features every row of this ground has."""
        return {
            n
            for n, read in READERS.items()
            if all(read(r) is not None for b in self.by_seed for r in b)
        }

    def standardised(self, names: Sequence[str]) -> list[np.ndarray]:
        """Per seed, the ``(n, F)`` features standardised over this ground's architectures."""
        out = []
        for b in self.by_seed:
            x = np.array([[READERS[n](r) for n in names] for r in b], float)
            out.append(Standardiser.of(x)(x))
        return out


def fit_on(grounds: Sequence[Ground], names: Sequence[str], c: float) -> np.ndarray:
    """Pairwise weights fitted on ``grounds`` (pairs within one ground and supernet)."""
    zs, ys, groups = [], [], []
    for g in grounds:
        for seed, z in zip(g.seeds, g.standardised(names), strict=True):
            zs.append(z)
            ys.append(g.truth)
            groups += [(g.name, seed)] * len(z)
    weights, _ = fit_pairwise(np.vstack(zs), np.concatenate(ys), groups, c)
    return weights


def evaluate_on(
    ground: Ground, names: Sequence[str], weights: np.ndarray, width_label: str | None, reps: int
) -> dict[str, Any]:
    """Every cell's taus on ``ground`` for the ranker (``weights``), the study's rank sum
    and the free baselines."""
    scores, _ = ranker_scores(ground.rows)
    # The held-out fit's weights replace B2's own "ranker" column (the suite prior's).
    scores[RANKER] = np.array([z @ weights for z in ground.standardised(names)])
    first = ground.by_seed[0]
    retrains = [
        np.array([r[f"test_seed{k}"] for r in first], float)
        for k in range(2)
        if f"test_seed{k}" in first[0]
    ]
    cost = [r.get("predicted_cost") for r in first]
    if any(c is None for c in cost):
        cost = [r.get("flops") for r in first]
    widths = [r.get("width") for r in first] if width_label else None
    out = {}
    for cell, members in cells(cost, widths, width_label).items():
        out[cell] = cell_taus(
            scores,
            ground.truth,
            members,
            retrains=retrains,
            study=RANKER,
            free=[f for f in FREE if f in scores],
            reps=reps,
        )
    return out


#: How many of the best-ranked architectures a study fine-tunes (``FineTuning.finalists``).
TOP_K = 10


def top_k(ground: Ground, names: Sequence[str], weights: np.ndarray, k: int = TOP_K) -> str:
    """What choosing the ``k`` best-ranked architectures as finalists would give, per
    ranking: the share of the table the best of them beats and the mean share the ``k``
    beat (the tables' mean test accuracy; mean over the supernets, ties in a free
    ranking broken by the architecture's index)."""
    scores, _ = ranker_scores(ground.rows)
    # The held-out fit's weights replace B2's own "ranker" column (the suite prior's).
    scores[RANKER] = np.array([z @ weights for z in ground.standardised(names)])
    truth = ground.truth
    beaten = np.array([(truth < t).mean() for t in truth])  # each architecture's share
    parts = []
    for name in [RANKER, RANK_SUM, *[f for f in FREE if f in scores]]:
        if name not in scores:
            continue
        best, mean = [], []
        for row in np.atleast_2d(scores[name]):
            chosen = np.argsort(-row, kind="stable")[:k]
            best.append(beaten[chosen].max())
            mean.append(beaten[chosen].mean())
        parts.append(f"{name} {np.mean(best):.0%} / {np.mean(mean):.0%}")
    return f"top {k} (best of them / their mean share of the table beaten): " + ", ".join(parts)


def _fmt(iv: Any) -> str:
    return "—" if iv is None else iv.fmt()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scores", type=Path, nargs="+", required=True, help="--scores-out files")
    p.add_argument("--features", nargs="+", choices=sorted(READERS), help="default: all shared")
    p.add_argument("--c", type=float, default=1.0, help="inverse L2 strength of the fit")
    p.add_argument("--reps", type=int, default=1000, help="bootstrap replicates")
    args = p.parse_args(argv)
    grounds = []
    for path in args.scores:
        rows = read_rows(path)
        if not rows:
            p.error(f"{path} holds no feature rows")
        grounds.append(Ground(str(rows[0]["ground"]), rows))
    shared = set.intersection(*(g.available() for g in grounds))
    names = [n for n in READERS if n in shared] if args.features is None else args.features
    missing = [n for n in names if n not in shared]
    if missing:
        p.error(f"features {missing} are missing on some ground (shared: {sorted(shared)})")
    if len(grounds) < 2:
        p.error("leave-one-ground-out needs two or more grounds")
    print(f"features: {', '.join(names)}; labels: the tables' mean test accuracy")
    wins = 0
    for held in grounds:
        weights = fit_on([g for g in grounds if g is not held], names, args.c)
        label = held.rows[0].get("width_label")
        found = evaluate_on(held, names, weights, label, args.reps)
        print(f"\n{held.name} (held out; {len(held.truth)} architectures, seeds {held.seeds})")
        print("| cell | ranker | study | best free | ranker - best free | ceiling |")
        print("|---|---|---|---|---|---|")
        ok = True
        for cell, c in found.items():
            best = c.best_free
            diff = c.difference
            if cell == "all" or cell.startswith("cost Q"):
                ok = ok and diff is not None and np.isfinite(diff.low) and diff.low > 0
            print(
                f"| {cell} | {_fmt(c.taus.get(RANKER))} | {_fmt(c.taus.get(RANK_SUM))} | "
                f"{best}: {_fmt(c.taus.get(best) if best else None)} | {_fmt(diff)} | "
                f"{_fmt(c.ceiling)} |"
            )
        wins += ok
        print(f"target (ranker above the best free baseline, interval > 0, all + Q1-Q4): {ok}")
        print(top_k(held, names, weights))
    print(f"\ngrounds meeting the target: {wins} of {len(grounds)}")
    weights = fit_on(grounds, names, args.c)
    print(
        "weights fitted on every ground (the prior): "
        + ", ".join(f"{n} {w:+.3f}" for n, w in zip(names, weights, strict=True))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
