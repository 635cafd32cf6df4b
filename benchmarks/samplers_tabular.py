"""Issue 26: samplers on tabular NAS-Bench-201 at a budget of *distinct* queries.

``benchmarks/tabular.py`` counts trials, and a sampler that proposes a cell again spends a
trial on a look-up it already had. Here every run stops at ``--queries`` distinct cells,
proposed the way the batched screening proposes (``nasflow.search.BatchedScreening``):
the sampler is asked up to ``1 + REASKS`` times for a cell not queried yet (a repeat is
told FAIL, never scored), then a uniformly random unqueried cell is drawn and enqueued.

Study: ``studies/nb201_tabular.py`` (all 15,625 cells, the ``cifar10_test_acc_200ep``
column of ``../shared/data/nb201_cifar10.csv``, one objective). Samplers: the study
runner's own ``study_sampler`` for ``nsga2``, ``evolution`` and ``random``; its TPE (10
start-up trials) with ``multivariate`` False (``tpe-uni``) or True (``tpe-mv``, the
runner's ``"tpe"``; on this one-objective study it was already so with Optuna 5), as
``samplers_screening.make_sampler`` builds them. Per sampler, mean ± sample std over the seeds of
the regret (table optimum minus the best test accuracy among the queried cells, in
points), the share of runs that queried the optimum, sampler asks per distinct query,
the share of queries drawn at random after ``1 + REASKS`` repeats, and process CPU
seconds per run.

Usage::

    python benchmarks/samplers_tabular.py --seeds 10 --queries 100 \\
        --json benchmarks/data/samplers_tabular.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState
from samplers_screening import SAMPLERS, make_sampler

from nasflow.pipeline import SCREENING_REASKS as REASKS
from nasflow.search import load_study_file
from nasflow.tabular import TabularBenchmark

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "nb201_tabular.py"


def run_once(spec: Any, table: TabularBenchmark, sampler: str, queries: int, seed: int) -> dict:
    """One search of ``queries`` distinct cells; its row."""
    spec = spec.replace(n_trials=queries, seed=seed)
    study = optuna.create_study(direction="maximize", sampler=make_sampler(spec, sampler, seed))
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    best = -np.inf
    asks = fallbacks = 0
    c0 = time.process_time()
    while len(seen) < queries:
        for _ in range(1 + REASKS):
            trial = study.ask()
            asks += 1
            arch = spec.space.suggest(trial)
            if arch.to_json() not in seen:
                break
            study.tell(trial, state=TrialState.FAIL)  # a repeat: never scored
        else:
            while True:
                arch = spec.space.sample(rng)
                if arch.to_json() not in seen:
                    break
            fallbacks += 1
            study.enqueue_trial(dict(arch), skip_if_exists=False)
            trial = study.ask()
            arch = spec.space.suggest(trial)
        seen.add(arch.to_json())
        value = table.lookup(arch)
        best = max(best, value)
        study.tell(trial, value)
    return {
        "sampler": sampler,
        "seed": seed,
        "queries": queries,
        "regret": round(table.regret(best), 4),
        "best": best,
        "optimum_found": bool(table.regret(best) == 0.0),
        "asks": asks,
        "fallbacks": fallbacks,
        "cpu_s": round(time.process_time() - c0, 3),
    }


def _ms(xs: list[float], digits: int = 3) -> str:
    std = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.fmean(xs):.{digits}f} ± {std:.{digits}f}"


def table_lines(rows: list[dict]) -> list[str]:
    """Markdown: one line per sampler (in ``SAMPLERS`` order)."""
    lines = [
        "| sampler | queries | seeds | regret at N distinct (points), mean ± std "
        "| optimum found | sampler asks per distinct query | drawn at random | CPU-s per run |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in SAMPLERS:
        mine = [r for r in rows if r["sampler"] == name]
        if not mine:
            continue
        n = mine[0]["queries"]
        asks = sum(r["asks"] for r in mine) / sum(r["queries"] for r in mine)
        rand = sum(r["fallbacks"] for r in mine) / sum(r["queries"] for r in mine)
        lines.append(
            f"| {name} | {n} | {len(mine)} | {_ms([r['regret'] for r in mine])} "
            f"| {sum(r['optimum_found'] for r in mine)}/{len(mine)} | {asks:.2f} "
            f"| {rand:.0%} | {statistics.median(r['cpu_s'] for r in mine):.2f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=SAMPLERS)
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    spec = load_study_file(STUDY)
    table = spec.table
    if table is None:
        raise SystemExit(f"{STUDY} is not a tabular study")
    print(f"table: {table.path.name}, {len(table)} cells, optimum {table.optimum:.4f}")
    rows = []
    for sampler in args.samplers:
        for seed in range(args.seeds):
            rows.append(run_once(spec, table, sampler, args.queries, seed))
            print(json.dumps(rows[-1]), flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(rows, indent=1))
    print("\n".join(table_lines(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
