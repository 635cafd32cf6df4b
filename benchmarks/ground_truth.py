"""Ground truth for a study's space: stand-alone training of a fixed arch sample.

Every architecture of a seeded random sample of the study's space is built fresh
(``space.build``) and trained from scratch with the study's recipe (``study.train``),
recording after every epoch the validation accuracy (what search sees) and the CPU
seconds of that epoch's training steps, and the test accuracy (what users get) after the
epochs in ``--test-epochs`` and the last. The per-epoch curves let methods that only draw
from the table (random search, random search + Hyperband/ASHA) be replayed over hundreds
of seeds, as NAS-Bench-201 allows. Rows are appended to a CSV as they finish, so an
interrupted run resumes where it stopped; ``--shard K/N`` trains every N-th architecture
(run N processes, one per core, into N files; ``ranking.py`` and friends merge tables by
architecture).

Usage::

    # the proving ground (studies/mnist1d_front.py), 200 architectures, seeds 0 and 1:
    python benchmarks/ground_truth.py --study studies/mnist1d_front.py --n 200 \\
        --train-seed 0 --out benchmarks/data/mnist1d_front_ground_truth.csv
    python benchmarks/ground_truth.py --study studies/mnist1d_front.py --n 200 \\
        --train-seed 1 --out benchmarks/data/mnist1d_front_ground_truth_seed1.csv
    # the saturated default space (studies/mnist1d.py, the default):
    python benchmarks/ground_truth.py --n 100 --seed 0 \\
        --out benchmarks/data/mnist1d_ground_truth.csv
    python benchmarks/ground_truth.py --quick --out /tmp/gt.csv   # CI smoke size
    # the reliability of finished tables (retrain-vs-retrain tau, noise, spread):
    python benchmarks/ground_truth.py --summary benchmarks/data/mnist1d_front_ground_truth*.csv

The table feeds the supernet-ranking benchmark (``benchmarks/ranking.py``) and the
search-efficiency benchmark (best-in-sample accuracy, replays).
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from nasflow.search import StudySpec, load_study_file
from nasflow.space import Arch
from nasflow.train import EpochTrainer, evaluate

ROOT = Path(__file__).resolve().parents[1]

FIELDS = [
    "index",
    "arch",
    "val_accuracy",
    "test_accuracy",
    "params",
    "train_seconds",
    "train_cpu_seconds",
    "val_curve",
    "test_curve",
    "cpu_curve",
    "val_loss",
    "test_loss",
]
DEFAULT_STUDY = ROOT / "studies" / "mnist1d.py"


def sample_archs(study: StudySpec, n: int, seed: int) -> list[Arch]:
    """``n`` distinct archs of the study's space, drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    seen: dict[Arch, None] = {}
    while len(seen) < n:
        seen.setdefault(study.space.sample(rng))
    return list(seen)


def header(path: Path) -> list[str]:
    """The columns of an existing table (tables written before ``val_loss`` and
    ``test_loss`` were recorded go on without them), else :data:`FIELDS`."""
    if not path.is_file() or path.stat().st_size == 0:
        return FIELDS
    with path.open(newline="") as f:
        return next(csv.reader(f))


def read_rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def train_one(
    study: StudySpec,
    arch: Arch,
    data,  # DataBundle
    recipe,  # TrainConfig
    init_seed: int,
    batch_seed: int,
    test_epochs: set[int],
) -> dict[str, object]:
    """Train ``arch`` from scratch; its curves and final accuracies."""
    torch.manual_seed(init_seed)
    net = study.space.build(arch)
    train = data.batches("train", recipe.batch_size, batch_seed)
    val, test = data.batches("val"), data.batches("test")
    trainer = EpochTrainer(net, train, recipe)
    val_curve: list[float] = []
    cpu_curve: list[float] = []
    test_curve: dict[int, float] = {}
    val_loss = test_loss = float("nan")
    for epoch in range(1, recipe.epochs + 1):
        c0 = time.process_time()
        trainer.run_epoch()
        cpu_curve.append(time.process_time() - c0)
        accuracy, val_loss = evaluate(net, val)
        val_curve.append(accuracy)
        if epoch in test_epochs or epoch == recipe.epochs:
            test_curve[epoch], test_loss = evaluate(net, test)
    return {
        "arch": arch.to_json(),
        "val_accuracy": f"{val_curve[-1]:.4f}",
        "test_accuracy": f"{test_curve[recipe.epochs]:.4f}",
        "params": sum(p.numel() for p in net.parameters()),
        "train_seconds": f"{trainer.seconds:.2f}",
        "train_cpu_seconds": f"{sum(cpu_curve):.2f}",
        "val_curve": json.dumps([round(v, 4) for v in val_curve]),
        "test_curve": json.dumps({str(k): round(v, 4) for k, v in test_curve.items()}),
        "cpu_curve": json.dumps([round(c, 3) for c in cpu_curve]),
        "val_loss": f"{val_loss:.5f}",
        "test_loss": f"{test_loss:.5f}",
    }


def summarize(paths: list[Path], margin: float) -> list[str]:
    """The reliability of tables of one sample trained from different seeds."""
    from scipy.stats import kendalltau

    tables = [{int(r["index"]): r for r in read_rows(path)} for path in paths]
    common = sorted(set.intersection(*(set(t) for t in tables)))
    if not common:
        raise SystemExit("the tables share no architecture")
    test = np.array([[float(t[i]["test_accuracy"]) for i in common] for t in tables])
    val = np.array([[float(t[i]["val_accuracy"]) for i in common] for t in tables])
    cpu = np.array(
        [[float(t[i].get("train_cpu_seconds") or "nan") for i in common] for t in tables]
    )
    mean = test.mean(0)
    lines = [
        f"{len(common)} architectures in all {len(tables)} tables",
        f"per-architecture mean test accuracy: {mean.min():.4f}-{mean.max():.4f}, median "
        f"{np.median(mean):.4f}, std over architectures {mean.std(ddof=1):.4f}",
        f"share within {margin:.3f} of the best mean ({mean.max():.4f}): "
        f"{np.mean(mean >= mean.max() - margin):.1%}",
    ]
    if len(tables) > 1:
        # Seed-to-seed std of one training: pooled within-architecture sample std.
        sd = float(np.sqrt(np.mean(test.var(0, ddof=1))))
        lines.append(
            f"seed-to-seed std of one training's test accuracy: {sd:.4f} (spread/noise "
            f"{mean.std(ddof=1) / sd:.1f}x)"
        )
        for a in range(len(tables)):
            for b in range(a + 1, len(tables)):
                lines.append(
                    f"retrain-vs-retrain Kendall tau (test), tables {a} and {b}: "
                    f"{kendalltau(test[a], test[b]).statistic:+.3f}; (validation) "
                    f"{kendalltau(val[a], val[b]).statistic:+.3f}"
                )
        top = mean >= np.percentile(mean, 75)
        sd_top = float(np.sqrt(np.mean(test[:, top].var(0, ddof=1))))
        lines.append(f"seed-to-seed std in the top quarter: {sd_top:.4f}")
    lines.append(
        f"validation vs test Kendall tau (mean over tables): "
        f"{kendalltau(val.mean(0), mean).statistic:+.3f}"
    )
    if not np.isnan(cpu).all():
        lines.append(
            f"training CPU-seconds: median {np.nanmedian(cpu):.2f}, "
            f"{np.nanmin(cpu):.2f}-{np.nanmax(cpu):.2f}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--study", type=Path, default=DEFAULT_STUDY, help="the study file")
    p.add_argument("--n", type=int, default=100, help="architectures in the sample")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample")
    p.add_argument(
        "--train-seed",
        type=int,
        help="seed of the initial weights and batch order (default: --seed)",
    )
    p.add_argument("--epochs", type=int, help="override the study's training epochs")
    p.add_argument(
        "--test-epochs",
        type=int,
        nargs="*",
        default=[1, 3, 6, 9],
        help="epochs after which the test split is scored too (the last always is)",
    )
    p.add_argument("--shard", default="0/1", help="K/N: train the archs with index %% N == K")
    p.add_argument("--quick", action="store_true", help="smoke size: 2 archs, 1 epoch")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/data/mnist1d_ground_truth.csv")
    p.add_argument(
        "--summary",
        type=Path,
        nargs="+",
        help="train nothing: print the reliability of these tables of one sample",
    )
    p.add_argument("--margin", type=float, default=0.003, help="success bar below the best")
    args = p.parse_args(argv)
    if args.summary:
        print("\n".join(summarize(args.summary, args.margin)))
        return 0
    if args.quick:
        args.n, args.epochs = 2, 1
    if args.n < 1:
        p.error(f"--n must be >= 1, got {args.n}")
    try:
        k, n_shards = (int(v) for v in args.shard.split("/"))
        if not 0 <= k < n_shards:
            raise ValueError
    except ValueError:
        p.error(f"--shard must be K/N with 0 <= K < N, got {args.shard!r}")
    torch.set_num_threads(args.threads)
    study = load_study_file(args.study)
    recipe = study.train if args.epochs is None else replace(study.train, epochs=args.epochs)
    data = study.data()
    archs = sample_archs(study, args.n, args.seed)
    train_seed = args.seed if args.train_seed is None else args.train_seed
    # With --train-seed equal to --seed this is the original table's recipe exactly.
    batch_seed = recipe.seed + train_seed - args.seed
    done = {int(r["index"]) for r in read_rows(args.out)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    new_file = not args.out.is_file()
    fields = header(args.out)
    with args.out.open("a", newline="") as f:
        writer = csv.DictWriter(f, fields, extrasaction="ignore")
        if new_file:
            writer.writeheader()
        for i, arch in enumerate(archs):
            if i in done or i % n_shards != k:
                continue
            t0 = time.perf_counter()
            row = train_one(
                study,
                arch,
                data,
                recipe,
                train_seed * 100_003 + i,
                batch_seed,
                set(args.test_epochs),
            )
            row = {"index": i, **row}
            writer.writerow(row)
            f.flush()
            print(
                f"[{i + 1}/{args.n}] test {row['test_accuracy']} val {row['val_accuracy']} "
                f"{row['params']} params {row['train_cpu_seconds']} CPU-s "
                f"(wall {time.perf_counter() - t0:.1f}s)",
                flush=True,
            )
    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
