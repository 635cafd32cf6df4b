"""Issue 26: which sampler proposes a large screening's candidates, measured on the
proving ground.

For each search seed, one supernet is trained with the study's own supernet recipe
(``studies/mnist1d_front.py``: fair sampling, 12 epochs; fp32, ``stack=None``) and cached
under ``--work`` (reused by every sampler and size, and by a later invocation). Then, for
each sampler, the study's batched screening (phase 2 only: no fine-tuning, no trust
probe, no retraining; ``screen_batch=32``; SQLite) screens ``max(--sizes)`` distinct
candidates in one process on one torch thread, and the rows for the smaller sizes are the
first N distinct candidates of that run: every sampler's settings are the same for any
``n_trials >= 100`` (TPE: 10 start-up trials; evolution: population 20, tournament 5;
NSGA-II: Optuna's defaults), so a run of N is the head of a longer run of the same seed.

Per (seed, sampler, N), a JSON row:

* ``hv``: hypervolume of the screened front, objectives (supernet validation accuracy up,
  predicted training cost in seconds down), against the fixed reference point
  ``(REF_ACCURACY, REF_COST)``, as a fraction of the reference box
  ``(1 - REF_ACCURACY) * REF_COST``;
* ``cpu_s``: process CPU seconds of the batched screening loop from its first proposal
  to the (N+1)-th proposal, or to the end of the loop (its last batch written) for the
  largest N: sampler, scoring, storage writes, records. The supernet checkpoint's load,
  the study's opening and the cost estimator's set-up are outside; ``hv_per_cpu_s =
  hv / cpu_s``;
* ``asks``: sampler proposals made (repeats included, the random fallback's enqueued
  trials not), ``asks_per_distinct``, and ``fallbacks``: candidates drawn uniformly at
  random after repeated proposals (up to ``1 + REASKS`` asks);
* the winner, the candidate with the top supernet score: its architecture, supernet
  accuracy and predicted cost, and its stand-alone test accuracy with the ground truth's
  recipe (``benchmarks/ground_truth.py``: 12 epochs, initial weights and batch order of
  train seeds 0 and 1, the mean of the two), looked up in the ground-truth tables when it
  is one of their 200 random architectures, else trained here (cached under ``--work``);
  ``beats``: the share of the 200 random architectures (mean of their two trainings) whose
  test accuracy it beats.

Usage::

    OMP_NUM_THREADS=1 NASFLOW_CACHE=/tmp/samplers-cache python benchmarks/samplers_screening.py \\
        --seeds 0 1 2 --sizes 300 1000 --json benchmarks/data/samplers_screening.json
    # longer runs for some samplers, appended to the same rows:
    python benchmarks/samplers_screening.py --seeds 0 --sizes 300 1000 3000 \\
        --samplers random nsga2 --json benchmarks/data/samplers_screening.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import optuna
import torch
from ground_truth import train_one
from ranking import load_ground_truth, merge_ground_truth

from nasflow.pipeline import BatchedScreening, StudyRunner
from nasflow.record import RunFolder, TrialRecord, sampler_constraints_kwargs
from nasflow.search import StudySpec, load_study_file, study_sampler
from nasflow.space import Arch

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "mnist1d_front.py"
GT = (
    ROOT / "benchmarks/data/mnist1d_front_ground_truth.csv",
    ROOT / "benchmarks/data/mnist1d_front_ground_truth_seed1.csv",
)
#: ``nsga2``, ``evolution``, ``random``: ``study_sampler`` (the runner's); ``tpe-uni`` and
#: ``tpe-mv``: the runner's TPE (10 start-up trials) with ``multivariate`` False / True.
#: The runner's ``"tpe"`` is ``tpe-mv`` since this benchmark; before, it left
#: ``multivariate`` to Optuna (5.x: multivariate with one objective, univariate with
#: several), so the former default was ``tpe-uni`` on the two-objective proving ground.
SAMPLERS = ("tpe-uni", "tpe-mv", "nsga2", "evolution", "random")
#: The hypervolume's reference point: chance accuracy on MNIST-1D's 10 classes, and a
#: predicted training cost (seconds) above every candidate's in these runs (the largest
#: seen: printed by ``--table``).
REF_ACCURACY = 0.1
REF_COST = 20.0


def make_sampler(spec: StudySpec, name: str, seed: int) -> optuna.samplers.BaseSampler:
    """The sampler ``name`` of ``SAMPLERS`` for ``spec``, seeded with ``seed``."""
    if not name.startswith("tpe-"):
        return study_sampler(spec.replace(sampler=name), seed)
    tpe = study_sampler(spec.replace(sampler="tpe"), seed)
    assert isinstance(tpe, optuna.samplers.TPESampler)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(
            seed=seed,
            n_startup_trials=tpe._n_startup_trials,
            multivariate=name == "tpe-mv",
            **sampler_constraints_kwargs(),
        )


def hypervolume(points: np.ndarray) -> float:
    """Hypervolume of ``(accuracy, cost)`` points (accuracy up, cost down) against
    ``(REF_ACCURACY, REF_COST)``, as a fraction of the reference box."""
    pts = points[(points[:, 0] > REF_ACCURACY) & (points[:, 1] < REF_COST)]
    if not len(pts):
        return 0.0
    pts = pts[np.argsort(pts[:, 1], kind="stable")]  # cheapest first
    # For each cost c, the dominated height is the best accuracy among points costing <= c.
    area, best = 0.0, REF_ACCURACY
    for i, (acc, cost) in enumerate(pts):
        best = max(best, acc)
        right = pts[i + 1, 1] if i + 1 < len(pts) else REF_COST
        area += (best - REF_ACCURACY) * (right - cost)
    return area / ((1.0 - REF_ACCURACY) * REF_COST)


class Marks:
    """What the instrumented screening records, one entry per proposal."""

    cpu: ClassVar[list[float]] = []
    asks: ClassVar[list[int]] = []
    fallbacks: ClassVar[list[int]] = []

    @classmethod
    def reset(cls) -> None:
        cls.cpu, cls.asks, cls.fallbacks = [], [], []

    @classmethod
    def mark(cls, asks: int, fallbacks: int) -> None:
        cls.cpu.append(time.process_time())
        cls.asks.append(asks)
        cls.fallbacks.append(fallbacks)


def instrument_screening() -> None:
    """Wrap the study's batched screening (``BatchedScreening``, the class the runner
    uses) so that it records the process CPU time and the sampler's proposals so far at
    the start of each proposal, and once more after the last batch is written."""
    init, propose, run = BatchedScreening.__init__, BatchedScreening.propose, BatchedScreening.run

    def counted_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.asks = 0
        ask = self.memory.ask

        def counted(*a: Any, **k: Any) -> optuna.Trial:
            self.asks += 1
            return ask(*a, **k)

        self.memory.ask = counted

    def marked_propose(self: Any) -> tuple[optuna.Trial, Arch]:
        Marks.mark(self.asks - self.fallbacks, self.fallbacks)  # (a fallback's ask is enqueued)
        return propose(self)

    def marked_run(self: Any, t0: float) -> None:
        run(self, t0)
        Marks.mark(self.asks - self.fallbacks, self.fallbacks)  # the last batch written

    BatchedScreening.__init__ = counted_init  # type: ignore[method-assign]
    BatchedScreening.propose = marked_propose  # type: ignore[method-assign]
    BatchedScreening.run = marked_run  # type: ignore[method-assign]


def base_spec(seed: int) -> StudySpec:
    """The proving-ground study, phase 2 only, for search seed ``seed``."""
    base = load_study_file(STUDY)
    return base.replace(
        finetuning=None, trust=None, stack=None, baseline=(), screen_batch=32, seed=seed
    )


def supernet_folder(work: Path, seed: int) -> Path:
    """The cached supernet of seed ``seed`` (trained here the first time)."""
    spec = base_spec(seed).replace(name=f"supernet-s{seed}", n_trials=1, sampler="random")
    folder = RunFolder.of(work, spec.name).supernet
    if not (work / f"supernet-s{seed}.done").exists():
        shutil.rmtree(RunFolder.of(work, spec.name).root, ignore_errors=True)
        c0 = time.process_time()
        StudyRunner(spec, out_dir=work, progress=False, log=lambda _: None).run(retrain=False)
        cpu = time.process_time() - c0
        (work / f"supernet-s{seed}.done").write_text(f"{cpu:.1f}\n")
        print(f"seed {seed}: supernet trained, {cpu:.0f} CPU-s (with the cost table)", flush=True)
    return folder


class Truth:
    """Stand-alone test accuracy (mean of train seeds 0 and 1) by architecture: the
    ground-truth tables, then architectures trained here (cached in ``path``)."""

    def __init__(self, path: Path) -> None:
        archs, _, test = merge_ground_truth([load_ground_truth(p, None) for p in GT])
        self.table = {a.to_json(): t for a, t in zip(archs, test, strict=True)}
        self.random = sorted(test)
        self.path = path
        self.trained: dict[str, dict] = json.loads(path.read_text()) if path.exists() else {}
        self.spec = load_study_file(STUDY)
        self._data: Any = None

    def test_accuracy(self, arch: Arch) -> tuple[float, str]:
        key = arch.to_json()
        if key in self.table:
            return self.table[key], "table"
        if key not in self.trained:
            if self._data is None:
                self._data = self.spec.data()
            recipe = self.spec.train
            c0 = time.process_time()
            runs = [
                train_one(self.spec, arch, self._data, recipe, s, recipe.seed + s, set())
                for s in (0, 1)
            ]
            self.trained[key] = {
                "test": [float(r["test_accuracy"]) for r in runs],
                "cpu_s": round(time.process_time() - c0, 1),
            }
            self.path.write_text(json.dumps(self.trained, indent=1))
        return statistics.fmean(self.trained[key]["test"]), "trained"

    def beats(self, acc: float) -> float:
        return sum(a < acc for a in self.random) / len(self.random)


def screen(work: Path, seed: int, sampler: str, n: int, runs: Path) -> dict[str, Any]:
    """One screening of ``n`` distinct candidates: its COMPLETE trials in order and the
    instrumented marks."""
    spec = base_spec(seed).replace(name=f"{sampler}-s{seed}-n{n}", n_trials=n)
    spec = spec.replace(sampler=make_sampler(spec, sampler, seed))
    shutil.copytree(supernet_folder(work, seed), RunFolder.of(runs, spec.name).supernet)
    Marks.reset()
    result = StudyRunner(spec, out_dir=runs, progress=False, log=lambda _: None).run(retrain=False)
    trials = sorted(
        (t for t in result.study.get_trials(deepcopy=False) if t.state.name == "COMPLETE"),
        key=lambda t: t.number,
    )
    return {
        "trials": trials,
        "marks": (list(Marks.cpu), list(Marks.asks), list(Marks.fallbacks)),
    }


def trace_path(rows: Path) -> Path:
    """Where the per-candidate traces of the rows in ``rows`` are kept."""
    return rows.with_name(rows.stem + "_traces.json")


def save_trace(rows: Path, seed: int, sampler: str, run: dict[str, Any]) -> None:
    """Keep the run's per-candidate trace: ``[cpu_s, supernet accuracy, predicted cost,
    asks, fallbacks]`` after each candidate (CPU from the first proposal)."""
    cpu, asks, fallbacks = run["marks"]
    trials = run["trials"]
    assert len(cpu) == len(trials) + 1, (len(cpu), len(trials))  # every proposal COMPLETE
    trace = [
        [
            round(cpu[k + 1] - cpu[0], 3),
            round(t.values[0], 4),
            round(t.values[1], 4),
            asks[k + 1],
            fallbacks[k + 1],
        ]
        for k, t in enumerate(trials)
    ]
    path = trace_path(rows)
    traces = json.loads(path.read_text()) if path.exists() else {}
    traces[f"{sampler}/seed{seed}"] = trace
    path.write_text(json.dumps(traces))


def hv_at_cpu(trace: list[list[float]], budget: float) -> float | None:
    """Hypervolume of the candidates screened within ``budget`` CPU-s (``None``: the run
    ended before it)."""
    if trace[-1][0] < budget:
        return None
    pts = np.array([[acc, cost] for cpu, acc, cost, *_ in trace if cpu <= budget])
    return hypervolume(pts) if len(pts) else 0.0


def rows_for(run: dict, seed: int, sampler: str, sizes: list[int], truth: Truth) -> list[dict]:
    trials = run["trials"]
    cpu, asks, fallbacks = run["marks"]
    out = []
    for n in sizes:
        if n > len(trials):
            continue
        head = trials[:n]
        points = np.array([t.values for t in head], dtype=float)
        # Up to the n-th candidate: the start of the (n+1)-th proposal, or the loop's end.
        spent, n_asks, n_fall = cpu[n] - cpu[0], asks[n], fallbacks[n]
        top = max(head, key=lambda t: t.values[0])
        arch = TrialRecord.from_trial(top).get_arch()
        test, source = truth.test_accuracy(arch)
        hv = hypervolume(points)
        out.append(
            {
                "seed": seed,
                "sampler": sampler,
                "n": n,
                "hv": round(hv, 5),
                "cpu_s": round(spent, 1),
                "hv_per_cpu_s": hv / spent,
                "asks": n_asks,
                "asks_per_distinct": round(n_asks / n, 3),
                "fallbacks": n_fall,
                "max_cost": round(float(points[:, 1].max()), 3),
                "winner": arch.to_json(),
                "winner_supernet_acc": round(top.values[0], 4),
                "winner_cost": round(top.values[1], 3),
                "winner_test": round(test, 4),
                "winner_source": source,
                "winner_beats": round(truth.beats(test), 3),
            }
        )
    return out


def table_lines(rows: list[dict]) -> list[str]:
    """Markdown: one line per (N, sampler), means over the seeds (± sample std)."""

    def ms(xs: list[float], fmt: str) -> str:
        if len(xs) < 2:
            return format(xs[0], fmt)
        std = format(statistics.stdev(xs), fmt.lstrip("+"))
        return f"{format(statistics.fmean(xs), fmt)} ± {std}"

    lines = [
        "| N | sampler | seeds | HV (fraction of box) | HV − random's, same seed | CPU-s "
        "| HV per 100 CPU-s "
        "| asks per distinct | drawn at random | winner supernet acc. | winner test acc. "
        "| winner beats (share of 200 random) | winners looked up / trained |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sorted({r["n"] for r in rows}):
        for name in SAMPLERS:
            mine = sorted(
                (r for r in rows if r["n"] == n and r["sampler"] == name), key=lambda r: r["seed"]
            )
            if not mine:
                continue
            looked = sum(r["winner_source"] == "table" for r in mine)
            rand = {r["seed"]: r["hv"] for r in rows if r["n"] == n and r["sampler"] == "random"}
            gain = [r["hv"] - rand[r["seed"]] for r in mine if r["seed"] in rand]
            lines.append(
                f"| {n} | {name} | {','.join(str(r['seed']) for r in mine)} "
                f"| {ms([r['hv'] for r in mine], '.4f')} "
                f"| {ms(gain, '+.4f') if gain else '—'} "
                f"| {ms([r['cpu_s'] for r in mine], '.0f')} "
                f"| {ms([100 * r['hv_per_cpu_s'] for r in mine], '.3f')} "
                f"| {statistics.fmean(r['asks_per_distinct'] for r in mine):.2f} "
                f"| {sum(r['fallbacks'] for r in mine) / sum(r['n'] for r in mine):.0%} "
                f"| {ms([r['winner_supernet_acc'] for r in mine], '.3f')} "
                f"| {ms([r['winner_test'] for r in mine], '.4f')} "
                f"| {ms([r['winner_beats'] for r in mine], '.2f')} "
                f"| {looked} / {len(mine) - looked} |"
            )
    top = max(r["max_cost"] for r in rows)
    lines.append(f"\nhighest predicted cost screened: {top:.2f} s (reference {REF_COST} s)")
    return lines


def budget_lines(traces: dict[str, list[list[float]]], budgets: list[float]) -> list[str]:
    """Markdown: hypervolume at equal CPU budgets, mean ± std over the seeds whose run
    lasted that long (how many: ``k/n``)."""
    lines = [
        "| sampler | " + " | ".join(f"HV within {b:g} CPU-s" for b in budgets) + " |",
        "|---|" + "---:|" * len(budgets),
    ]
    for name in SAMPLERS:
        mine = [t for key, t in sorted(traces.items()) if key.split("/")[0] == name]
        if not mine:
            continue
        cells = []
        for b in budgets:
            hvs = [h for t in mine if (h := hv_at_cpu(t, b)) is not None]
            if not hvs:
                cells.append(f"— (0/{len(mine)} runs lasted)")
                continue
            std = f" ± {statistics.stdev(hvs):.4f}" if len(hvs) > 1 else ""
            cells.append(f"{statistics.fmean(hvs):.4f}{std} ({len(hvs)}/{len(mine)})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--sizes", type=int, nargs="+", default=[300, 1000])
    p.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=SAMPLERS)
    p.add_argument("--work", default="/tmp/samplers-bench", help="supernets, trained winners")
    p.add_argument("--json", help="append the rows here (rows of the same key are replaced)")
    p.add_argument(
        "--table", action="store_true", help="print --json's rows as a table, run nothing"
    )
    p.add_argument(
        "--budgets",
        type=float,
        nargs="+",
        default=[25.0, 40.0, 90.0],
        help="CPU-s budgets of the equal-CPU table",
    )
    args = p.parse_args(argv)
    if args.table:
        print("\n".join(table_lines(json.loads(Path(args.json).read_text()))))
        traces = json.loads(trace_path(Path(args.json)).read_text())
        print("\n".join(["", *budget_lines(traces, args.budgets)]))
        return 0
    torch.set_num_threads(1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    instrument_screening()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    truth = Truth(work / "trained_winners.json")
    out = Path(args.json) if args.json else None
    rows: list[dict] = json.loads(out.read_text()) if out and out.exists() else []
    sizes = sorted(args.sizes)
    for seed in args.seeds:
        for sampler in args.samplers:
            with tempfile.TemporaryDirectory() as tmp:
                run = screen(work, seed, sampler, sizes[-1], Path(tmp))
            new = rows_for(run, seed, sampler, sizes, truth)
            if out:
                save_trace(out, seed, sampler, run)
            keys = {(r["seed"], r["sampler"], r["n"]) for r in new}
            rows = [r for r in rows if (r["seed"], r["sampler"], r["n"]) not in keys] + new
            for r in new:
                print(json.dumps(r), flush=True)
            if out:
                out.write_text(json.dumps(rows, indent=1))
    print("\n".join(table_lines(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
