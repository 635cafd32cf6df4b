"""B-tab: samplers on tabular NAS-Bench-201 — regret to the optimum after N distinct
architectures.

Runs the study of ``studies/nb201_tabular.py`` (its space, table and sampler settings)
with each sampler for each seed through ``StudyRunner``, on an in-memory Optuna storage:
the screening loop every study runs, which counts distinct architectures toward
``n_trials`` (a sampler that proposes a scored architecture is asked again, then a random
unseen one is drawn). It reports mean ± std over the seeds of

- the final regret: table optimum (94.37) minus the best test accuracy found, in points,
  after N distinct architectures;
- the test accuracy of the best architecture found;
- the share of runs that found the optimum.

Every budget is its own run (a 100-architecture run is not the head of a 300 one). Next
to the samplers, the exact expectation of random search over N distinct architectures
(drawn without replacement) is computed from the table, as a check on the measured
random rows.

Usage::

    python benchmarks/tabular.py                        # 20 seeds, 100 and 300 architectures
    python benchmarks/tabular.py --quick                # CI smoke size (seconds)
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import optuna

from nasflow.pipeline import StudyRunner
from nasflow.search import StudySpec, load_study_file
from nasflow.tabular import TabularBenchmark, tabular_outcome

ROOT = Path(__file__).resolve().parents[1]

STUDY = ROOT / "studies" / "nb201_tabular.py"
SAMPLERS = ("tpe", "random", "nsga2")


def run_once(
    spec: StudySpec, sampler: str, n_trials: int, seed: int, runs: Path
) -> tuple[float, float]:
    """One search of ``n_trials`` distinct architectures, run as ``nasflow search`` runs
    it (in memory, run folder under ``runs``): ``(regret, test accuracy of the best)``."""
    spec = spec.replace(
        name=f"{sampler}-{n_trials}-{seed}",
        sampler=sampler,
        n_trials=n_trials,
        seed=seed,
        storage=optuna.storages.InMemoryStorage(),
    )
    study = StudyRunner(spec, out_dir=runs, progress=False, log=lambda _m: None).run().study
    out = tabular_outcome(study, spec.table)  # type: ignore[arg-type]
    if out is None or out.distinct != n_trials:
        raise RuntimeError(
            f"{sampler} seed {seed}: {n_trials} distinct architectures asked, outcome {out}"
        )
    return out.regret, out.report_value


def _log_comb(n: int, k: int) -> float:
    """log C(n, k) (C(15625, 300) is far past a float)."""
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def random_expectation(
    table: TabularBenchmark, n_trials: int, distinct: bool = True
) -> tuple[float, float]:
    """Exact mean and std of the best of ``n_trials`` uniform draws: distinct ones
    (without replacement, what a study's screening draws), or with replacement."""
    values = sorted(table.values())
    size = len(values)
    if distinct and not 1 <= n_trials <= size:
        raise ValueError(f"n_trials must be 1 to {size} distinct draws, got {n_trials}")

    def at_most(k: int) -> float:
        """P(the best of the draws is among the k smallest values)."""
        if not distinct:
            return (k / size) ** n_trials
        if k < n_trials:
            return 0.0
        return math.exp(_log_comb(k, n_trials) - _log_comb(size, n_trials))

    mean = second = 0.0
    for k, v in enumerate(values, start=1):
        p = at_most(k) - at_most(k - 1)  # P(max is the k-th)
        mean += p * v
        second += p * v * v
    return mean, math.sqrt(max(0.0, second - mean * mean))


def mean_std(xs: list[float]) -> str:
    std = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.fmean(xs):.3f} ± {std:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="runs per sampler and budget")
    parser.add_argument(
        "--trials", type=int, nargs="+", default=[100, 300], help="distinct architectures"
    )
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=SAMPLERS)
    parser.add_argument("--quick", action="store_true", help="2 seeds, 20 architectures")
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
        "| sampler | distinct archs | seeds | final regret (points) | test acc. of best (%) "
        "| optimum found | seconds per run |"
    )
    lines = [header, "|---|---:|---:|---:|---:|---:|---:|"]
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tabular-runs-") as runs:
        for n in args.trials:
            lines += budget_rows(spec, table, n, args.samplers, args.seeds, Path(runs))
    print(f"\nall runs: {time.perf_counter() - t_all:.0f} s\n")
    print("\n".join(lines))
    return 0


def budget_rows(
    spec: StudySpec,
    table: TabularBenchmark,
    n: int,
    samplers: list[str],
    seeds: int,
    runs: Path,
) -> list[str]:
    """The rows of one budget (``n`` distinct architectures): one per sampler, over
    ``seeds`` runs each (printed as each ends), and random search's exact expectation."""
    lines = []
    for sampler in samplers:
        regrets, accs, secs = [], [], []
        for seed in range(seeds):
            t = time.perf_counter()
            regret, acc = run_once(spec, sampler, n, seed, runs)
            secs.append(time.perf_counter() - t)
            regrets.append(regret)
            accs.append(acc)
        found = sum(r == 0.0 for r in regrets)
        lines.append(
            f"| {sampler} | {n} | {seeds} | {mean_std(regrets)} | {mean_std(accs)} "
            f"| {found}/{seeds} | {statistics.median(secs):.2f} |"
        )
        print(lines[-1], flush=True)
    mean, std = random_expectation(table, n)
    lines.append(
        f"| random, exact expectation (distinct) | {n} | — | "
        f"{table.optimum - mean:.3f} ± {std:.3f} | {mean:.3f} ± {std:.3f} | — | — |"
    )
    return lines


if __name__ == "__main__":
    sys.exit(main())
