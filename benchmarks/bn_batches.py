"""Fixed BN batches: the one-shot score's CPU time with the batch-norm batches augmented
anew for every path (before) against made once and reused (``Batches.fixed``, now).

For each study, one supernet of its space (untrained: the time of a score does not depend
on the weights) scores ``--n`` random architectures the way screening does (extract the
path, re-estimate BN on ``study.bn_batches`` training batches, validate), each
architecture with both variants in turn, the order alternating, so load drifts hit both.
Prints the median process CPU-milliseconds per score of each and their ratio, and how the
fixed variant's score divides between extracting the path and re-estimating its batch
norm, and validating (the part a staged score on a slice of the validation split would
cut). (What the fixed batches do to the ranking is measured by ``benchmarks/ranking.py``,
column "fixed BN batches".)

Usage::

    python benchmarks/bn_batches.py --studies studies/cifar10_cpu.py studies/mnist1d_front.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from nasflow.search import load_study_file
from nasflow.supernet import recalibrate_bn
from nasflow.train import evaluate


def one_study(path: Path, n: int) -> tuple[str, int, float, float, float, int]:
    """``(name, BN batches, median CPU-ms per score with per-path augmentation, with fixed
    batches, the fixed scores' median share spent validating, validation samples)`` for
    one study."""
    study = load_study_file(path)
    data = study.data()
    supernet = study.space.supernet()
    train = data.batches("train", study.train.batch_size, study.seed)
    val = data.batches("val")
    rng = np.random.default_rng(0)
    archs = [study.space.sample(rng) for _ in range(n)]
    n_bn = study.bn_batches
    times: dict[str, list[float]] = {"fresh": [], "fixed": []}
    validating: list[float] = []  # share of a fixed score spent in the validation pass
    train.fixed(n_bn)  # made once per study, outside the timed scores (as in screening)
    for i, arch in enumerate(archs):
        for variant in ("fresh", "fixed") if i % 2 else ("fixed", "fresh"):
            c0 = time.process_time()
            net = supernet.extract(study.space.path(arch))
            bn = train.epoch(0) if variant == "fresh" else train.fixed(n_bn)
            recalibrate_bn(net, bn, n_bn)
            c1 = time.process_time()
            evaluate(net, val)
            c2 = time.process_time()
            times[variant].append(1000 * (c2 - c0))
            if variant == "fixed":
                validating.append((c2 - c1) / max(c2 - c0, 1e-9))
    return (
        study.name,
        n_bn,
        statistics.median(times["fresh"]),
        statistics.median(times["fixed"]),
        statistics.median(validating),
        len(val.dataset),  # type: ignore[arg-type]
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=Path, nargs="+", required=True)
    p.add_argument("--n", type=int, default=40, help="architectures per study")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    if args.n < 2:
        p.error(f"--n must be >= 2, got {args.n}")
    torch.set_num_threads(args.threads)
    print(
        "| study | BN batches | per-path augmentation (CPU-ms) | fixed batches (CPU-ms) | ratio "
        "| fixed: share validating (samples) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for path in args.studies:
        name, n_bn, fresh, fixed, share, samples = one_study(path, args.n)
        ratio = fresh / fixed
        print(
            f"| {name} | {n_bn} | {fresh:.1f} | {fixed:.1f} | x{ratio:.2f} | {share:.0%} "
            f"({samples:,}) |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
