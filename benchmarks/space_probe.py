"""A quick probe of a candidate proving ground: spread of accuracies against training noise.

Trains ``--n`` random architectures of ``MNIST1DSpace(widths=--widths)`` twice each (two
initial-weight and batch-order seeds) on an MNIST-1D variant with ``--train-samples``
training sequences (20% held out for validation) and 10,000 test
sequences, with ``--epochs`` of the default recipe, one thread, and prints the range of the
per-architecture mean test accuracy, the seed-to-seed standard deviation, the Kendall tau
between the two seeds and the CPU-seconds per training. It is how the proving ground
(``studies/mnist1d_front.py``) was chosen; see ``benchmarks/results/grounds.md``.

Usage::

    python benchmarks/space_probe.py --train-samples 2000 --widths 0.125 0.25 0.5 1.0
    python benchmarks/space_probe.py --train-samples 4000 --widths 0.125 0.25 0.5 1.0
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch
from scipy.stats import kendalltau

from nasflow.data import MNIST1DVariant, load_mnist1d
from nasflow.search_spaces.mnist1d import MNIST1DSpace
from nasflow.train import TrainConfig, evaluate, train_standalone


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train-samples", type=int, default=2000)
    p.add_argument("--iid-noise", type=float, default=0.02)
    p.add_argument("--widths", type=float, nargs="+", default=[0.125, 0.25, 0.5, 1.0])
    p.add_argument("--n", type=int, default=10, help="random architectures")
    p.add_argument("--epochs", type=int, default=12)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    space = MNIST1DSpace(widths=args.widths)
    variant = MNIST1DVariant(train_samples=args.train_samples, iid_noise_scale=args.iid_noise)
    data = load_mnist1d(variant=variant, val_fraction=0.2)
    rng = np.random.default_rng(0)
    archs = [space.sample(rng) for _ in range(args.n)]
    recipe = TrainConfig(epochs=args.epochs, batch_size=64, lr=3e-3, weight_decay=1e-2)
    tests = np.zeros((2, args.n))
    cpu = []
    for i, arch in enumerate(archs):
        for seed in (0, 1):
            torch.manual_seed(seed * 1000 + i)
            net = space.build(arch)
            c0 = time.process_time()
            train_standalone(
                net,
                data.batches("train", 64, seed),
                data.batches("val"),
                recipe,
            )
            cpu.append(time.process_time() - c0)
            tests[seed, i] = evaluate(net, data.batches("test"))[0]
        print(f"{i}: test {tests[0, i]:.4f} / {tests[1, i]:.4f}  {arch.to_json()}", flush=True)
    mean = tests.mean(0)
    sd = float(np.sqrt(np.mean((tests[0] - tests[1]) ** 2) / 2))
    print(
        f"mean test accuracy {mean.min():.4f}-{mean.max():.4f} (std over archs {mean.std():.4f}); "
        f"seed-to-seed std {sd:.4f}; tau seed 0 vs 1 {kendalltau(tests[0], tests[1])[0]:+.3f}; "
        f"{np.mean(cpu):.1f} CPU-s per training"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
