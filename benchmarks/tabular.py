"""B-tab: samplers on tabular NAS-Bench-201 — regret to the optimum after N trials.

Runs the study of ``studies/nb201_tabular.py`` (its space, table and sampler settings, via
the same ``study_sampler`` the runner uses) with each sampler for each seed, on an
in-memory Optuna storage, and reports mean ± std over the seeds of

- the final regret: table optimum (94.37) minus the best test accuracy found, in points;
- the test accuracy of the best architecture found;
- the share of runs that found the optimum.

Every budget is its own run (a 100-trial run is not the head of a 300-trial run). Next
to the samplers, the exact expectation of random search with replacement (Optuna's
``RandomSampler`` may repeat an architecture) is computed from the table, as a check on
the measured random rows.

Usage::

    python benchmarks/tabular.py                        # 20 seeds, 100 and 300 trials
    python benchmarks/tabular.py --quick                # CI smoke size (seconds)
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import warnings
from pathlib import Path

import optuna

from nasflow.search import StudySpec, load_study_file, study_sampler
from nasflow.tabular import TabularBenchmark, TabularObjective, tabular_outcome

ROOT = Path(__file__).resolve().parents[1]

STUDY = ROOT / "studies" / "nb201_tabular.py"
SAMPLERS = ("tpe", "random", "nsga2")


def run_once(spec: StudySpec, sampler: str, n_trials: int, seed: int) -> tuple[float, float]:
    """One search: ``(regret, test accuracy of the best found)``."""
    spec = spec.replace(sampler=sampler, n_trials=n_trials, seed=seed)
    study = optuna.create_study(direction="maximize", sampler=study_sampler(spec, seed))
    study.optimize(TabularObjective(spec.table), n_trials=n_trials)  # type: ignore[arg-type]
    out = tabular_outcome(study, spec.table)  # type: ignore[arg-type]
    if out is None or out.trials != n_trials:
        raise RuntimeError(f"{sampler} seed {seed}: {n_trials} trials asked, {out} completed")
    return out.regret, out.report_value


def random_expectation(table: TabularBenchmark, n_trials: int) -> tuple[float, float]:
    """Exact mean and std of the best of ``n_trials`` uniform draws with replacement."""
    values = sorted(table.values())
    size = len(values)
    mean = second = 0.0
    for k, v in enumerate(values, start=1):
        p = (k / size) ** n_trials - ((k - 1) / size) ** n_trials  # P(max is the k-th)
        mean += p * v
        second += p * v * v
    return mean, math.sqrt(max(0.0, second - mean * mean))


def mean_std(xs: list[float]) -> str:
    std = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.fmean(xs):.3f} ± {std:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="runs per sampler and budget")
    parser.add_argument("--trials", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=SAMPLERS)
    parser.add_argument("--quick", action="store_true", help="2 seeds, 20 trials")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.trials = 2, [20]
    if args.seeds < 2 or min(args.trials) < 1:
        parser.error(f"need --seeds >= 2 and trials >= 1, got {args.seeds} and {args.trials}")

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    spec = load_study_file(STUDY)
    table = spec.table
    if table is None:
        raise SystemExit(f"{STUDY} is not a tabular study")
    print(f"table: {table.path.name}, {len(table)} architectures, optimum {table.optimum:.4f}")

    header = (
        "| sampler | trials | seeds | final regret (points) | test acc. of best (%) "
        "| optimum found | seconds per run |"
    )
    lines = [header, "|---|---:|---:|---:|---:|---:|---:|"]
    t_all = time.perf_counter()
    for n in args.trials:
        for sampler in args.samplers:
            regrets, accs, secs = [], [], []
            for seed in range(args.seeds):
                t = time.perf_counter()
                regret, acc = run_once(spec, sampler, n, seed)
                secs.append(time.perf_counter() - t)
                regrets.append(regret)
                accs.append(acc)
            found = sum(r == 0.0 for r in regrets)
            lines.append(
                f"| {sampler} | {n} | {args.seeds} | {mean_std(regrets)} | {mean_std(accs)} "
                f"| {found}/{args.seeds} | {statistics.median(secs):.2f} |"
            )
            print(lines[-1], flush=True)
        mean, std = random_expectation(table, n)
        lines.append(
            f"| random, exact expectation | {n} | — | {table.optimum - mean:.3f} ± {std:.3f} "
            f"| {mean:.3f} ± {std:.3f} | — | — |"
        )
    print(f"\nall runs: {time.perf_counter() - t_all:.0f} s\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
