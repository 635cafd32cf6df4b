"""B1: search efficiency — CPU-seconds to find a near-best architecture of the default space.

Methods, each run for several seeds on the default MNIST-1D study (``studies/mnist1d.py``),
one torch intra-op thread, on the same data:

* ``nasflow``: the default study as ``nasflow search`` runs it (fair supernet, then TPE
  with inherited weights under the Pareto successive-halving pruner, the cost-model table
  built from scratch), then the evaluated candidates are retrained from scratch in order of
  their supernet accuracy (the default study retrains only the first).
* ``random``: random search with full stand-alone training of every candidate.
* ``optuna``: what an Optuna user writes without nasflow — a single-objective TPE study on
  the same choices, each candidate trained from scratch with the stand-alone recipe and
  reporting its validation accuracy after every epoch to Optuna's ``HyperbandPruner``.
* ``nni`` (needs ``pip install -e ".[nni]"``, so it runs in a virtualenv of its own):
  NNI 3.0's ``RandomOneShot`` (SPOS) supernet for as many single-path epochs as the
  nasflow supernet's path passes, then ``RegularizedEvolution`` over as many candidates as
  the default study's trials, then retrains in order of supernet accuracy
  (``benchmarks/_nni_spos.py``).

Every fully trained candidate is an *event* at the process CPU time it finished. The
*incumbent* is the fully trained candidate with the best validation accuracy so far
(selection never looks at test accuracy); a run *succeeds* at the first event where the
incumbent's test accuracy is within ``--margin`` of the best test accuracy in the
ground-truth sample (``benchmarks/data/mnist1d_ground_truth.csv``). A run stops at success
or once it has spent ``--budget`` CPU-seconds. All stand-alone training uses the study's
recipe (``study.train``), the one the ground truth was made with.

Usage::

    python benchmarks/search_efficiency.py --seeds 0 1 2 --json b1.json
    .venv-nni/bin/python benchmarks/search_efficiency.py --methods nni --json b1_nni.json
    python benchmarks/search_efficiency.py --merge b1.json b1_nni.json   # one table
    python benchmarks/search_efficiency.py --quick      # CI smoke size
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import optuna
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nasflow.data import DataBundle  # noqa: E402
from nasflow.search import StudyRunner, StudySpec  # noqa: E402
from nasflow.search._objective import recipe_for  # noqa: E402
from nasflow.space import Arch  # noqa: E402
from nasflow.train import Batches, EpochTrainer, TrainConfig, evaluate  # noqa: E402
from studies.mnist1d import study as default_study  # noqa: E402

GT = ROOT / "benchmarks/data/mnist1d_ground_truth.csv"
METHODS = ("nasflow", "random", "optuna", "nni")
DEFAULT_METHODS = ("nasflow", "random", "optuna")


def cpu_seconds() -> float:
    """CPU time of this process (all its threads) and of its waited-for children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class Stop(Exception):
    """The run succeeded or spent its budget."""


@dataclass
class Run:
    """One (method, seed) run: its fully trained candidates, in order."""

    method: str
    seed: int
    threshold: float
    budget: float
    c0: float = field(default_factory=cpu_seconds)
    events: list[dict] = field(default_factory=list)
    success_cpu: float | None = None
    phases: dict[str, float] = field(default_factory=dict)

    def cpu(self) -> float:
        return cpu_seconds() - self.c0

    def incumbent(self) -> dict | None:
        return max(self.events, key=lambda e: e["val"], default=None)

    def add(self, arch: Arch, val: float, test: float, note: str = "") -> None:
        """Record a fully trained candidate; raise ``Stop`` on success or budget."""
        self.events.append(
            {"cpu": self.cpu(), "arch": arch.to_json(), "val": val, "test": test, "note": note}
        )
        inc = self.incumbent()
        if self.success_cpu is None and inc is not None and inc["test"] >= self.threshold:
            self.success_cpu = self.events[-1]["cpu"]
        self.check()

    def check(self) -> None:
        if self.success_cpu is not None or self.cpu() >= self.budget:
            raise Stop

    def summary(self) -> dict:
        inc = self.incumbent()
        return {
            "method": self.method,
            "seed": self.seed,
            "success_cpu": self.success_cpu,
            "cpu": self.cpu(),
            "trained": len(self.events),
            "incumbent_test": inc["test"] if inc else None,
            "incumbent_val": inc["val"] if inc else None,
            "phases": self.phases,
            "events": self.events,
        }


def loaders(data: DataBundle, recipe: TrainConfig, seed: int) -> tuple[Batches, ...]:
    return (
        Batches(data.train, recipe.batch_size, shuffle=True, seed=seed, drop_last=True),
        Batches(data.val, 512, shuffle=False),
        Batches(data.test, 512, shuffle=False),
    )


def standalone(
    spec: StudySpec,
    arch: Arch,
    data: DataBundle,
    seed: int,
    on_epoch: Callable[[int, torch.nn.Module], None] | None = None,
) -> tuple[float, float]:
    """Train ``arch`` from scratch with the study's recipe; (val, test) accuracy."""
    recipe = recipe_for(arch, spec.train)
    train, val, test = loaders(data, recipe, seed)
    torch.manual_seed(seed)
    net = spec.space.build(arch)
    trainer = EpochTrainer(net, train, recipe)
    for _ in range(recipe.epochs):
        trainer.run_epoch()
        if on_epoch is not None:
            on_epoch(trainer.epoch, net)
    return evaluate(net, val)[0], evaluate(net, test)[0]


# ---------------------------------------------------------------------------- methods
def run_nasflow(run: Run, spec: StudySpec, data: DataBundle, retrain_max: int) -> None:
    """The study end to end, then retrains in order of supernet accuracy."""
    spec = replace(spec, seed=run.seed, data=lambda: data)
    with tempfile.TemporaryDirectory() as tmp, _env("NASFLOW_CACHE", tmp):
        runner = StudyRunner(spec, out_dir=tmp, log=lambda _: None, progress=False)
        result = runner.run(retrain=False)
        run.phases = {k: v for k, v in result.seconds.items()}
        run.phases["search_cpu"] = run.cpu()
        done = result.study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
        done.sort(key=lambda t: -t.values[0])
        for rank, t in enumerate(done[:retrain_max]):
            arch = Arch.from_json(t.user_attrs["arch"])
            val, test = standalone(spec, arch, data, spec.seed)
            run.add(arch, val, test, f"trial {t.number}, supernet rank {rank + 1}")


def run_random(run: Run, spec: StudySpec, data: DataBundle) -> None:
    rng = np.random.default_rng(run.seed)
    seen: set[Arch] = set()
    while True:
        arch = spec.space.sample(rng)
        if arch in seen:
            continue
        seen.add(arch)
        val, test = standalone(spec, arch, data, run.seed * 100_003 + len(seen))
        run.add(arch, val, test)


def run_optuna(run: Run, spec: StudySpec, data: DataBundle) -> None:
    """Plain Optuna: TPE + HyperbandPruner over epochs of from-scratch training."""
    epochs = spec.train.epochs
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=run.seed),
        pruner=optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=epochs, reduction_factor=3
        ),
    )
    _, val_batches, _ = loaders(data, spec.train, 0)

    def objective(trial: optuna.Trial) -> float:
        arch = spec.space.suggest(trial)

        def report(epoch: int, net: torch.nn.Module) -> None:
            if epoch < epochs:
                trial.report(evaluate(net, val_batches)[0], epoch)
                if trial.should_prune():
                    raise optuna.TrialPruned
            run.check()

        try:
            val, test = standalone(spec, arch, data, run.seed * 100_003 + trial.number, report)
            trial.report(val, epochs)
            run.add(arch, val, test, f"trial {trial.number}")
        except Stop:
            stopped.append(trial.number)
            study.stop()
            raise optuna.TrialPruned("the run stopped") from None
        return val

    stopped: list[int] = []
    study.optimize(objective, catch=())
    if stopped:
        raise Stop


def run_nni(run: Run, spec: StudySpec, data: DataBundle, retrain_max: int) -> None:
    """NNI's SPOS workflow at nasflow's supernet compute, then retrains."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _nni_spos import search

    paths = max(len(c.values) for c in spec.space.path_choices)  # fair: paths per step
    top, counts = search(
        spec, data, run.seed, spec.supernet.epochs * paths, spec.n_trials, retrain_max
    )
    run.phases = {**counts, "search_cpu": run.cpu()}
    for rank, sample in enumerate(top):
        arch = spec.space.validate(sample)
        val, test = standalone(spec, arch, data, run.seed)
        run.add(arch, val, test, f"evolution rank {rank + 1}")


@contextlib.contextmanager
def _env(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


# ---------------------------------------------------------------------------- reporting
def best_in_sample(path: Path) -> tuple[float, int]:
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"{path} holds no rows; run benchmarks/ground_truth.py first")
    return max(float(r["test_accuracy"]) for r in rows), len(rows)


def resampled_random(path: Path, threshold: float, orderings: int, seed: int) -> list[int | None]:
    """Random search replayed on the ground-truth table itself: for each of ``orderings``
    random orders of its architectures, how many stand-alone trainings until the incumbent
    (best validation accuracy; the first of a tie) passes ``threshold`` on test, or
    ``None`` if no prefix of the whole sample does."""
    with path.open(newline="") as f:
        rows = [(float(r["val_accuracy"]), float(r["test_accuracy"])) for r in csv.DictReader(f)]
    rng = np.random.default_rng(seed)
    out: list[int | None] = []
    for _ in range(orderings):
        best_val, best_test, hit = -1.0, 0.0, None
        for k, i in enumerate(rng.permutation(len(rows)), start=1):
            if rows[i][0] > best_val:
                best_val, best_test = rows[i]
            if best_test >= threshold:
                hit = k
                break
        out.append(hit)
    return out


def table(runs: list[dict], budget: float) -> str:
    """Markdown: per method, successes, CPU-s to success, ratio to nasflow."""
    by: dict[str, list[dict]] = {}
    for r in runs:
        by.setdefault(r["method"], []).append(r)

    def cost(r: dict) -> float:  # a failed run counts as its whole budget (a lower bound)
        return r["success_cpu"] if r["success_cpu"] is not None else max(r["cpu"], budget)

    ref = by.get("nasflow")
    lines = [
        "| method | seeds | succeeded | CPU-s to success, per seed | median | "
        "median / nasflow | trained from scratch | incumbent test acc. at stop |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for method, rs in by.items():
        rs.sort(key=lambda r: r["seed"])
        costs = [cost(r) for r in rs]
        cells = [
            f"{c:.0f}" if r["success_cpu"] is not None else f">{c:.0f}"
            for c, r in zip(costs, rs, strict=True)
        ]
        med = statistics.median(costs)
        ratio = med / statistics.median(cost(r) for r in ref) if ref else float("nan")
        n_ok = sum(r["success_cpu"] is not None for r in rs)
        tests = [r["incumbent_test"] for r in rs if r["incumbent_test"] is not None]
        acc = f"{100 * statistics.mean(tests):.2f}" if tests else "—"
        if len(tests) > 1:
            acc += f" ± {100 * statistics.stdev(tests):.2f}"
        lines.append(
            f"| {method} | {len(rs)} | {n_ok}/{len(rs)} | {', '.join(cells)} | "
            f"{'' if n_ok > len(rs) / 2 else '>'}{med:.0f} | ×{ratio:.2f} | "
            f"{statistics.mean(r['trained'] for r in rs):.1f} | {acc} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="B1: search efficiency")
    p.add_argument("--methods", nargs="+", choices=METHODS, default=list(DEFAULT_METHODS))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--budget", type=float, default=900.0, help="CPU-seconds per run")
    p.add_argument("--margin", type=float, default=0.003, help="accuracy below the best")
    p.add_argument("--retrain-max", type=int, default=10, help="nasflow retrains at most")
    p.add_argument("--n-trials", type=int, help="override the default study's trials")
    p.add_argument("--gt", type=Path, default=GT)
    p.add_argument("--quick", action="store_true", help="smoke size: tiny budget, 1 seed")
    p.add_argument("--json", type=Path, help="write every run's events here")
    p.add_argument("--merge", type=Path, nargs="+", help="print one table of these --json files")
    args = p.parse_args(argv)
    if args.merge:
        reports = [json.loads(f.read_text()) for f in args.merge]
        budgets = {r.get("budget") for r in reports}
        if len(budgets) != 1 or len({r["threshold"] for r in reports}) != 1:
            p.error(f"--merge files differ in budget or threshold: {sorted(map(str, budgets))}")
        print(table([run for r in reports for run in r["runs"]], reports[0]["budget"]))
        return 0
    if args.budget <= 0:
        p.error(f"--budget must be > 0, got {args.budget}")
    if not 0 <= args.margin < 1:
        p.error(f"--margin must be in [0, 1), got {args.margin}")
    spec = default_study
    if args.quick:  # tiny everything: only checks that each method runs end to end
        args.seeds, args.budget, args.retrain_max = [0], 1.0, 1
        spec = replace(
            spec,
            n_trials=2,
            finetune_epochs=1,
            supernet=replace(spec.supernet, epochs=1),
            train=replace(spec.train, epochs=2),
        )
    elif args.n_trials is not None:
        spec = replace(spec, n_trials=args.n_trials)
    torch.set_num_threads(1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    best, n_gt = best_in_sample(args.gt)
    threshold = round(best - args.margin, 6)
    data = spec.data()
    print(
        f"best test accuracy in the {n_gt}-arch ground truth: {best:.4f}; success: "
        f"incumbent test >= {threshold:.4f}; budget {args.budget:.0f} CPU-s per run",
        flush=True,
    )
    runs = []
    for seed in args.seeds:  # methods interleaved seed by seed: drifts in load hit all
        for method in args.methods:
            run = Run(method, seed, threshold, args.budget)
            w0 = time.perf_counter()
            try:
                if method == "nasflow":
                    run_nasflow(run, spec, data, args.retrain_max)
                elif method == "random":
                    run_random(run, spec, data)
                elif method == "optuna":
                    run_optuna(run, spec, data)
                else:
                    run_nni(run, spec, data, args.retrain_max)
            except Stop:
                pass
            s = run.summary()
            s["wall"] = time.perf_counter() - w0
            runs.append(s)
            inc = f"{s['incumbent_test']:.4f}" if s["incumbent_test"] is not None else "—"
            print(
                f"seed {seed} {method:8s} "
                + (
                    f"success at {s['success_cpu']:.0f} CPU-s"
                    if s["success_cpu"] is not None
                    else f"no success in {s['cpu']:.0f} CPU-s"
                )
                + f" (wall {s['wall']:.0f} s), {s['trained']} trained from scratch, "
                f"incumbent test {inc}",
                flush=True,
            )
    print()
    print(table(runs, args.budget))
    counts = resampled_random(args.gt, threshold, 10_000, 0)
    hits = sorted(c for c in counts if c is not None)
    if hits:
        q = np.percentile(hits, [25, 50, 75])
        per = [
            e["cpu"] - (r["events"][i - 1]["cpu"] if i else 0.0)
            for r in runs
            if r["method"] == "random"
            for i, e in enumerate(r["events"])
        ]
        cost = f"; {statistics.median(per):.0f} CPU-s per training in this run" if per else ""
        print(
            f"\nrandom search replayed on the {n_gt}-arch ground truth (10,000 orders): "
            f"{len(hits) / len(counts):.1%} succeed within the sample; those take "
            f"{q[1]:.0f} trainings (median; quartiles {q[0]:.0f}-{q[2]:.0f}){cost}"
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"best": best, "threshold": threshold, "budget": args.budget, "runs": runs},
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
