"""B8: zero-cost anchors replayed on each ground's table — how many, and are they worth it.

A study with ``anchors=Anchors(n)`` trains ``n`` architectures from scratch before its
supernet, chosen without training: the non-dominated set of (parameters up, training FLOPs
down) of a random sample, spread evenly in log FLOPs (``nasflow.search.zero_cost_front``).
This replay applies exactly that rule to each ground's random-architecture table (the
table's architectures are the sample) and reads what the anchors would have given from the
table's own trainings (mean over its training seeds):

- ``HV``: the hypervolume of the anchors' (test accuracy up, training CPU-seconds down)
  over that of the whole table's front, with B1's reference point (``search_efficiency``):
  how much of the front the anchors alone cover;
- ``CPU-s``: the anchors' summed training CPU-seconds;
- ``best``: the share of the table that the best-validating anchor's test accuracy
  beats;
- in brackets, ``n`` architectures drawn from the table at random instead (1,000 draws):
  their median HV, their expected CPU-seconds and the median share beaten by the best
  validating of them; the same number of trainings chosen without the rule: a rule that
  cannot beat this is not worth its name.

Usage::

    python benchmarks/anchors.py --studies studies/mnist1d_front.py \\
        benchmarks/suite/*.py studies/cifar10_cpu.py --n 1 2 3 4 5 6
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _b1_tables import hv_reference, hypervolume_2d, load_ground_truth

from nasflow.pipeline import zero_cost_front
from nasflow.search import load_study_file
from nasflow.space import Arch


def replay(path: Path, ns: list[int], draws: int = 1000) -> list[dict]:
    """One row per ``n`` for the study at ``path`` (its ``baseline`` tables)."""
    spec = load_study_file(path)
    gt = load_ground_truth([Path(p) for p in spec.baseline])
    archs = [Arch.from_json(a) for a in gt.archs]
    index = {a: i for i, a in enumerate(archs)}
    acc, val, cost = gt.test.mean(0), gt.val.mean(0), gt.cpu.mean(0)
    ref, total = hv_reference(gt)
    rng = np.random.default_rng(0)
    rows = []
    for n in ns:
        chosen = zero_cost_front(
            spec.space, n, len(archs), spec.seed, spec.train.batch_size, candidates=archs
        )
        pick = [index[a.arch] for a in chosen]
        hv = hypervolume_2d(np.stack([acc[pick], cost[pick]], 1), ref) / total
        best = max(pick, key=lambda i: val[i])
        randoms, random_best = [], []
        for _ in range(draws):
            r = rng.choice(len(archs), size=len(pick), replace=False)
            randoms.append(hypervolume_2d(np.stack([acc[r], cost[r]], 1), ref) / total)
            random_best.append(float(np.mean(acc < acc[max(r, key=lambda i: val[i])])))
        rows.append(
            {
                "study": spec.name,
                "n": n,
                "anchors": len(pick),
                "hv": hv,
                "cpu": float(cost[pick].sum()),
                "best_beats": float(np.mean(acc < acc[best])),
                "random_hv": float(np.median(randoms)),
                "random_best_beats": float(np.median(random_best)),
                "random_cpu": float(cost.mean() * len(pick)),
                "table_archs": len(archs),
            }
        )
    return rows


def markdown(rows: list[dict]) -> str:
    studies = list(dict.fromkeys(r["study"] for r in rows))
    ns = sorted({r["n"] for r in rows})
    out = [
        "| ground | table | "
        + " | ".join(f"n={n}: HV / CPU-s / best beats (random n)" for n in ns)
        + " |",
        "|---|---|" + "---|" * len(ns),
    ]
    for s in studies:
        by = {r["n"]: r for r in rows if r["study"] == s}
        cells = [
            f"{by[n]['hv']:.2f} / {by[n]['cpu']:.0f} / {by[n]['best_beats']:.0%} "
            f"({by[n]['random_hv']:.2f} / {by[n]['random_cpu']:.0f} / "
            f"{by[n]['random_best_beats']:.0%})"
            for n in ns
        ]
        out.append(f"| {s} | {by[ns[0]]['table_archs']} | " + " | ".join(cells) + " |")
    med = []
    for n in ns:
        rs = [r for r in rows if r["n"] == n]
        med.append(
            f"{statistics.median(r['hv'] for r in rs):.2f} / "
            f"{statistics.median(r['cpu'] for r in rs):.0f} / "
            f"{statistics.median(r['best_beats'] for r in rs):.0%} "
            f"({statistics.median(r['random_hv'] for r in rs):.2f} / "
            f"{statistics.median(r['random_cpu'] for r in rs):.0f} / "
            f"{statistics.median(r['random_best_beats'] for r in rs):.0%})"
        )
    out.append("| median | | " + " | ".join(med) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--studies", type=Path, nargs="+", required=True)
    p.add_argument("--n", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    p.add_argument("--draws", type=int, default=1000, help="random draws per n")
    args = p.parse_args(argv)
    rows = [r for s in args.studies for r in replay(s, args.n, args.draws)]
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
