"""Ground truth for the default MNIST-1D space: stand-alone training of a fixed arch sample.

Every architecture of a seeded random sample is built fresh (``space.build``) and trained
from scratch with the default study's recipe (``studies/mnist1d.py``: ``study.train``), then
scored on the validation split (what search sees) and the test split (what users get).
Rows are appended to a CSV as they finish, so an interrupted run resumes where it stopped.

Usage::

    python benchmarks/ground_truth.py --n 100 --seed 0 \
        --out benchmarks/data/mnist1d_ground_truth.csv
    # the same sample trained again from other initial weights and batch order:
    python benchmarks/ground_truth.py --n 100 --seed 0 --train-seed 1 \
        --out benchmarks/data/mnist1d_ground_truth_seed1.csv
    python benchmarks/ground_truth.py --quick --out /tmp/gt.csv   # CI smoke size

The table feeds the supernet-ranking benchmark (``benchmarks/ranking.py``) and the
search-efficiency benchmark (best-in-sample accuracy).
"""

from __future__ import annotations

import argparse
import csv
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nasflow.space import Arch  # noqa: E402
from nasflow.train import Batches, train_standalone  # noqa: E402
from studies.mnist1d import study  # noqa: E402

FIELDS = ["index", "arch", "val_accuracy", "test_accuracy", "params", "train_seconds"]


def sample_archs(n: int, seed: int) -> list[Arch]:
    """``n`` distinct archs of the default space, drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    seen: dict[Arch, None] = {}
    while len(seen) < n:
        seen.setdefault(study.space.sample(rng))
    return list(seen)


def read_rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100, help="architectures in the sample")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample")
    p.add_argument(
        "--train-seed",
        type=int,
        help="seed of the initial weights and batch order (default: --seed)",
    )
    p.add_argument("--epochs", type=int, help="override the study's training epochs")
    p.add_argument("--quick", action="store_true", help="smoke size: 2 archs, 1 epoch")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/data/mnist1d_ground_truth.csv")
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.epochs = 2, 1
    if args.n < 1:
        p.error(f"--n must be >= 1, got {args.n}")
    torch.set_num_threads(args.threads)
    recipe = study.train if args.epochs is None else replace(study.train, epochs=args.epochs)
    data = study.data()
    archs = sample_archs(args.n, args.seed)
    train_seed = args.seed if args.train_seed is None else args.train_seed
    # With --train-seed equal to --seed this is the original table's recipe exactly.
    batch_seed = recipe.seed + train_seed - args.seed
    done = {int(r["index"]) for r in read_rows(args.out)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    new_file = not args.out.is_file()
    with args.out.open("a", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        if new_file:
            writer.writeheader()
        for i, arch in enumerate(archs):
            if i in done:
                continue
            torch.manual_seed(train_seed * 100_003 + i)
            net = study.space.build(arch)
            train = Batches(data.train, recipe.batch_size, seed=batch_seed, drop_last=True)
            val = Batches(data.val, 512, shuffle=False)
            test = Batches(data.test, 512, shuffle=False)
            t0 = time.perf_counter()
            res = train_standalone(net, train, val, recipe, test)
            row = {
                "index": i,
                "arch": arch.to_json(),
                "val_accuracy": f"{res.val_accuracy:.4f}",
                "test_accuracy": f"{res.test_accuracy:.4f}",
                "params": sum(p.numel() for p in net.parameters()),
                "train_seconds": f"{res.seconds:.2f}",
            }
            writer.writerow(row)
            f.flush()
            print(
                f"[{i + 1}/{args.n}] test {row['test_accuracy']} val {row['val_accuracy']} "
                f"{row['params']} params {row['train_seconds']}s "
                f"(wall {time.perf_counter() - t0:.1f}s)",
                flush=True,
            )
    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
