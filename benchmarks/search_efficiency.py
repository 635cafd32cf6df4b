"""B1: search efficiency — CPU-seconds to find a near-best architecture of a study's space.

Methods, each run for several seeds on a study (``--study``: the default MNIST-1D study
``studies/mnist1d.py``, or the proving ground ``studies/mnist1d_front.py``), one torch
intra-op thread, on the same data:

* ``nasflow``: the study as ``nasflow search`` runs it (fair supernet, then the study's
  sampler over supernet scores, the trust probe and the fine-tuning phase where the study
  has them, the cost-model table built from scratch). Its trained models are events: the
  zero-cost anchors where the study trains them (from scratch with the recipe, each at the
  process CPU-seconds into the run it was ready, as the study records them; ``--anchors``
  overrides the study's setting), the fine-tuning phase's ready models
  (fine-tuned weights, each at the CPU-seconds its last epoch ended, as the study records
  them; ordered by that time), then retrains from
  scratch: the finalist the study keeps first (phase 3's choice), then the Pareto set of
  (supernet score, predicted cost), most accurate first, then the rest in order of
  supernet score (the study itself retrains only the first).
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
ground-truth sample (``--gt``; with several tables of the same sample trained from other
seeds, the best of the per-architecture means). A run stops at success or once it has
spent ``--budget`` CPU-seconds (``--full`` ignores success and spends the whole budget,
for the hypervolume curve). All stand-alone training uses the study's recipe
(``study.train``), the one the ground truth was made with.

Multi-objective view: every fully trained candidate also records its training
CPU-seconds; at each CPU budget, the hypervolume of (test accuracy up, training
CPU-seconds down) of the candidates trained so far is divided by that of the ground
truth's own front (per-architecture means), with the reference point at the table's
lowest accuracy and 1.1 × its largest training cost.

Replays: methods that only draw architectures (random search, and random search under
Optuna's ``HyperbandPruner``) are replayed on the ground-truth table for many seeds from
its per-epoch validation curves and per-epoch CPU-seconds (``ground_truth.py`` records
them), each training drawn from one of the tables at random; the real ``random`` runs
check the replay.

Usage::

    python benchmarks/search_efficiency.py --study studies/mnist1d_front.py \
        --gt benchmarks/data/mnist1d_front_ground_truth.csv \
        benchmarks/data/mnist1d_front_ground_truth_seed1.csv --seeds 0 1 2 --json b1.json
    python benchmarks/search_efficiency.py --seeds 0 1 2 --json b1.json   # default space
    .venv-nni/bin/python benchmarks/search_efficiency.py --methods nni --json b1_nni.json
    python benchmarks/search_efficiency.py --merge b1.json b1_nni.json   # one table
    python benchmarks/search_efficiency.py --quick      # CI smoke size
"""

from __future__ import annotations

import argparse
import contextlib
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

from nasflow.data import DataBundle
from nasflow.pipeline import StudyRunner, recipe_for
from nasflow.record import FineTuneResult, TrialRecord, study_anchors, study_finetuned
from nasflow.search import Anchors, StudySpec, load_study_file, non_dominated_sort
from nasflow.space import Arch
from nasflow.train import EpochTrainer, TrainConfig, evaluate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _b1_tables import (
    hv_table,
    load_ground_truth,
    replay_summary,
    resampled_random,
    rescore,
    study_end,
    table,
    table_clock,
)

ROOT = Path(__file__).resolve().parents[1]

GT = ROOT / "benchmarks/data/mnist1d_ground_truth.csv"
DEFAULT_STUDY = ROOT / "studies/mnist1d.py"
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
    full: bool = False
    c0: float = field(default_factory=cpu_seconds)
    events: list[dict] = field(default_factory=list)
    success_cpu: float | None = None
    phases: dict[str, float] = field(default_factory=dict)

    def cpu(self) -> float:
        return cpu_seconds() - self.c0

    def incumbent(self) -> dict | None:
        return max(self.events, key=lambda e: e["val"], default=None)

    def add(
        self,
        arch: Arch,
        val: float,
        test: float,
        note: str = "",
        train_cpu: float = 0.0,
        at: float | None = None,
    ) -> None:
        """Record a fully trained candidate (``train_cpu``: its training CPU-seconds;
        ``at``: the run's CPU-seconds when it was ready, default now); raise ``Stop`` on
        success (unless ``full``) or budget."""
        self.events.append(
            {
                "cpu": self.cpu() if at is None else min(at, self.cpu()),
                "arch": arch.to_json(),
                "val": val,
                "test": test,
                "note": note,
                "train_cpu": train_cpu,
            }
        )
        inc = self.incumbent()
        if self.success_cpu is None and inc is not None and inc["test"] >= self.threshold:
            self.success_cpu = self.events[-1]["cpu"]
        self.check()

    def check(self) -> None:
        if (self.success_cpu is not None and not self.full) or self.cpu() >= self.budget:
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


def standalone(
    spec: StudySpec,
    arch: Arch,
    data: DataBundle,
    seed: int,
    on_epoch: Callable[[int, torch.nn.Module], None] | None = None,
) -> tuple[float, float, float]:
    """Train ``arch`` from scratch with the study's recipe; (val, test) accuracy and the
    CPU-seconds of the training steps."""
    recipe = recipe_for(arch, spec.train)
    train, val, test = (
        data.batches("train", recipe.batch_size, seed),
        data.batches("val"),
        data.batches("test"),
    )
    torch.manual_seed(seed)
    net = spec.space.build(arch)
    trainer = EpochTrainer(net, train, recipe)
    train_cpu = 0.0
    for _ in range(recipe.epochs):
        c0 = time.process_time()
        trainer.run_epoch()
        train_cpu += time.process_time() - c0
        if on_epoch is not None:
            on_epoch(trainer.epoch, net)
    return evaluate(net, val)[0], evaluate(net, test)[0], train_cpu


def retrain_order(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """Completed trials: the Pareto set (most accurate first), then the rest by accuracy."""
    done = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    if not done:
        return []
    ranks = non_dominated_sort(np.array([t.values for t in done]), study.directions)
    front = sorted((t for t, r in zip(done, ranks, strict=True) if r == 0), key=_by_acc)
    rest = sorted((t for t, r in zip(done, ranks, strict=True) if r > 0), key=_by_acc)
    return front + rest


def _by_acc(t: optuna.trial.FrozenTrial) -> float:
    return -t.values[0]


# ---------------------------------------------------------------------------- methods
def run_nasflow(run: Run, spec: StudySpec, data: DataBundle, retrain_max: int) -> None:
    """The study end to end; its trained models are events: the fine-tuning phase's ready
    models (where the study fine-tunes), then retrains from scratch: first the finalist the
    study keeps (phase 3's choice), then the screened candidates in ``retrain_order``."""
    spec = replace(spec, seed=run.seed, data=lambda: data)
    with tempfile.TemporaryDirectory() as tmp, _env("NASFLOW_CACHE", tmp):
        runner = StudyRunner(spec, out_dir=tmp, log=lambda _: None, progress=False)
        started = run.cpu()
        result = runner.run(retrain=False)
        run.phases = {k: v for k, v in result.seconds.items()}
        run.phases["search_cpu"] = run.cpu()
        run.phases["trials"] = len(result.study.trials)
        scored = [TrialRecord.from_trial(t).score_seconds for t in result.study.trials]
        scored = [s for s in scored if s is not None]
        if scored:
            run.phases["median_score_ms"] = 1000 * statistics.median(scored)
        order = retrain_order(result.study)
        seen: set[Arch] = set()
        anchors = study_anchors(result.study)
        for a in anchors.trained if anchors is not None else ():
            arch = Arch.from_json(a.arch)
            seen.add(arch)  # trained from scratch with the recipe: not retrained again
            run.add(
                arch,
                a.val_accuracy,
                a.test_accuracy,
                f"trial {a.trial}, zero-cost anchor {a.index + 1}, from scratch",
                a.measured_train_cost,
                at=started + (a.ready_cpu_seconds or 0.0),
            )
        finetuned = study_finetuned(result.study)
        if finetuned is not None:
            add_ready_models(run, spec, finetuned, started)
            kept = finetuned.best()
            if kept is not None:  # phase 3 retrains this one first
                first = [t for t in order if t.number == kept.trial]
                order = first + [t for t in order if t.number != kept.trial]
        for rank, t in enumerate(order):
            arch = TrialRecord.from_trial(t).get_arch()
            if arch in seen:  # a duplicate trial of an architecture already retrained
                continue
            seen.add(arch)
            if len(seen) > retrain_max:
                break
            val, test, train_cpu = standalone(spec, arch, data, spec.seed)
            run.add(arch, val, test, f"trial {t.number}, retrain rank {rank + 1}", train_cpu)


def add_ready_models(
    run: Run, spec: StudySpec, finetuned: FineTuneResult, started: float | None = None
) -> None:
    """The fine-tuning phase's ready models as trained events: each at the run's CPU time
    its last epoch ended (``started``: the run's CPU-seconds when the study began; the
    record's ``trained_cpu_seconds`` counts from there), else at the CPU time the study
    finished (conservative: a model ready after an early rung existed before).

    Their validation and test accuracy are of their fine-tuned weights; their training
    cost (the hypervolume's second objective is the architecture's stand-alone training
    cost) is an ESTIMATE: the mean measured fine-tuning epoch seconds times the recipe's
    epochs (the same network and batch size; one thread, so wall ~ CPU).
    """
    # In the order they were ready: the incumbent at each event is read from those before.
    for c in sorted(finetuned.ready, key=lambda c: c.trained_cpu_seconds or float("inf")):
        if c.test_accuracy is None:
            continue
        cost = float(np.mean(c.epoch_seconds)) * spec.train.epochs
        run.add(
            Arch.from_json(c.arch),
            c.val_accuracy,
            c.test_accuracy,
            f"trial {c.trial}, ready model fine-tuned {c.epochs} epochs ({c.status})",
            cost,
            at=None
            if started is None or c.trained_cpu_seconds is None
            else started + c.trained_cpu_seconds,
        )


def run_random(run: Run, spec: StudySpec, data: DataBundle) -> None:
    rng = np.random.default_rng(run.seed)
    seen: set[Arch] = set()
    while True:
        arch = spec.space.sample(rng)
        if arch in seen:
            continue
        seen.add(arch)
        val, test, train_cpu = standalone(spec, arch, data, run.seed * 100_003 + len(seen))
        run.add(arch, val, test, train_cpu=train_cpu)


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
    val_batches = data.batches("val")

    def objective(trial: optuna.Trial) -> float:
        arch = spec.space.suggest(trial)

        def report(epoch: int, net: torch.nn.Module) -> None:
            if epoch < epochs:
                trial.report(evaluate(net, val_batches)[0], epoch)
                if trial.should_prune():
                    raise optuna.TrialPruned
            run.check()

        try:
            val, test, train_cpu = standalone(
                spec, arch, data, run.seed * 100_003 + trial.number, report
            )
            trial.report(val, epochs)
            run.add(arch, val, test, f"trial {trial.number}", train_cpu)
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
        val, test, train_cpu = standalone(spec, arch, data, run.seed)
        run.add(arch, val, test, f"evolution rank {rank + 1}", train_cpu)


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="B1: search efficiency")
    p.add_argument("--study", type=Path, default=DEFAULT_STUDY, help="the study file")
    p.add_argument("--methods", nargs="*", choices=METHODS, default=list(DEFAULT_METHODS))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--budget", type=float, default=900.0, help="CPU-seconds per run")
    p.add_argument("--margin", type=float, default=0.003, help="accuracy below the best")
    p.add_argument("--retrain-max", type=int, default=10, help="nasflow retrains at most")
    p.add_argument("--n-trials", type=int, help="override the study's trials")
    p.add_argument(
        "--anchors",
        type=int,
        help="nasflow: train this many zero-cost anchors first (0: none; default: the study's)",
    )
    p.add_argument("--gt", type=Path, nargs="+", default=[GT], help="ground-truth table(s)")
    p.add_argument(
        "--full", action="store_true", help="spend the whole budget (hypervolume curves)"
    )
    p.add_argument(
        "--hv-budgets",
        type=float,
        nargs="*",
        default=[],
        help="CPU budgets at which to print the hypervolume ratio",
    )
    p.add_argument("--replays", type=int, default=300, help="replayed runs per method")
    p.add_argument("--quick", action="store_true", help="smoke size: tiny budget, 1 seed")
    p.add_argument("--json", type=Path, help="write every run's events here")
    p.add_argument("--merge", type=Path, nargs="+", help="print one table of these --json files")
    p.add_argument(
        "--rescore",
        type=Path,
        nargs="+",
        help="run nothing: score the runs of these --json files against --gt again",
    )
    p.add_argument(
        "--table-clock",
        action="store_true",
        help="with --rescore: put each run on the table's clock first (clock_ratio)",
    )
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
    spec = load_study_file(args.study)
    if args.quick:  # tiny everything: only checks that each method runs end to end
        args.seeds, args.budget, args.retrain_max = [0], 1.0, 1
        args.replays = min(args.replays, 5)
        spec = replace(
            spec,
            n_trials=2,
            finetune=replace(spec.finetune or TrainConfig(lr=1e-3, warmup_epochs=0), epochs=1),
            supernet=replace(spec.supernet, epochs=1),
            train=replace(spec.train, epochs=2),
        )
    elif args.n_trials is not None:
        spec = replace(spec, n_trials=args.n_trials)
    if args.anchors is not None:
        spec = replace(spec, anchors=Anchors(n=args.anchors) if args.anchors else None)
    torch.set_num_threads(1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    gt = load_ground_truth(args.gt)
    best, n_gt = gt.best, len(gt.archs)
    threshold = round(best - args.margin, 6)
    mean_test = gt.test.mean(0)
    if args.rescore:  # the runs' own budget (the header says which)
        args.budget = max(json.loads(f.read_text())["budget"] for f in args.rescore)
    print(
        f"best test accuracy in the {n_gt}-arch ground truth ({len(args.gt)} table(s), "
        f"per-arch mean): {best:.4f}; median {np.median(mean_test):.4f}; "
        f"{np.mean(mean_test >= threshold):.1%} of the sample pass; success: incumbent "
        f"test >= {threshold:.4f}; budget {args.budget:.0f} CPU-s per run",
        flush=True,
    )
    if args.rescore:
        args.methods = []
    data = spec.data() if args.methods else None
    runs = [r for f in args.rescore or [] for r in json.loads(f.read_text())["runs"]]
    if args.table_clock:
        runs = table_clock(runs, gt, spec)
        if runs:  # the replays go as far as the slowest-clocked run reaches on the table's
            args.budget = max(args.budget, *(r["cpu"] for r in runs))
    runs = [rescore(r, threshold) for r in runs]
    for seed in args.seeds:  # methods interleaved seed by seed: drifts in load hit all
        for method in args.methods:
            run = Run(method, seed, threshold, args.budget, full=args.full)
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
            extra = ""
            if "median_score_ms" in s["phases"]:
                extra = (
                    f"; {s['phases']['trials']} candidates screened, median scoring "
                    f"{s['phases']['median_score_ms']:.1f} ms each"
                )
            print(
                f"seed {seed} {method:8s} "
                + (
                    f"success at {s['success_cpu']:.0f} CPU-s"
                    if s["success_cpu"] is not None
                    else f"no success in {s['cpu']:.0f} CPU-s"
                )
                + f" (wall {s['wall']:.0f} s), {s['trained']} trained (fine-tuned or "
                f"from scratch), incumbent test {inc}{extra}",
                flush=True,
            )
    if runs:
        print()
        print(table(runs, args.budget))
        ends = [
            e for r in runs if r["method"] == "nasflow" and (e := study_end(r, spec.retrain_top))
        ]
        if ends:
            print(
                f"\nthe study's own end (its {spec.retrain_top} retrains from scratch done), "
                f"CPU-s per nasflow run: {', '.join(f'{e:.0f}' for e in ends)}; "
                f"median {statistics.median(ends):.0f}"
            )
    replays: dict = {}
    if gt.has_curves and not np.isnan(gt.cpu).any():
        lines, replays = replay_summary(gt, threshold, args.budget, args.replays, args.hv_budgets)
        print()
        print("\n".join(lines))
        if args.hv_budgets:
            print()
            print(hv_table(runs, replays, args.hv_budgets, gt))
    else:  # an older table without curves: trainings only
        counts = resampled_random(args.gt[0], threshold, 10_000, 0)
        hits = sorted(c for c in counts if c is not None)
        if hits:
            q = np.percentile(hits, [25, 50, 75])
            print(
                f"\nrandom search replayed on the {n_gt}-arch ground truth (10,000 orders): "
                f"{len(hits) / len(counts):.1%} succeed within the sample; those take "
                f"{q[1]:.0f} trainings (median; quartiles {q[0]:.0f}-{q[2]:.0f})"
            )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "best": best,
                    "threshold": threshold,
                    "budget": args.budget,
                    "runs": runs,
                    "replays": replays,
                },
                indent=1,
                default=float,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
