"""What the few-shot split costs: supernet training time and memory, shared against split.

For each study, one-epoch supernet trainings of its space with its recipe, alternately
shared (``SupernetConfig(split=None)``) and split (``split="width"`` from the start, or the
study's own split), ``--rounds`` of each, the order alternating so load drifts hit both.
Each training builds its supernet and optimizer and trains one epoch of the study's fair
steps on its training split. Prints the median process CPU-seconds per epoch of each and
their ratio, the parameters, and the parameter + AdamW-moment memory. (What the split does
to the ranking is measured by ``benchmarks/ranking.py --split``.)

Usage::

    python benchmarks/split_cost.py --studies studies/mnist1d_front.py studies/cifar10_cpu.py
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import torch

from nasflow.search import load_study_file
from nasflow.train import SupernetTrainer


def one_study(path: Path, rounds: int, label: str) -> dict:
    """Median CPU-s per epoch, parameters and parameter + AdamW bytes, shared and split."""
    study = load_study_file(path)
    data = study.data()
    split = study.supernet.split or label
    configs = {
        "shared": dataclasses.replace(study.supernet, epochs=1, split=None),
        "split": dataclasses.replace(study.supernet, epochs=1, split=split, split_from=0.0),
    }
    cpu: dict[str, list[float]] = {k: [] for k in configs}
    params: dict[str, int] = {}
    for r in range(rounds):
        for name in ("shared", "split") if r % 2 == 0 else ("split", "shared"):
            cfg = dataclasses.replace(configs[name], seed=r)
            trainer = SupernetTrainer(study.space, data.train, cfg)
            c0 = time.process_time()
            result = trainer.fit()
            cpu[name].append(time.process_time() - c0)
            params[name] = sum(p.numel() for p in result.supernet.parameters())
    return {
        "study": study.name,
        "split": split,
        "steps": len(trainer.batches),
        "cpu": {k: statistics.median(v) for k, v in cpu.items()},
        "params": params,
    }


def mib(n: int) -> float:
    """MiB of ``n`` fp32 parameters with AdamW's two moments."""
    return 3 * 4 * n / 2**20


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=Path, nargs="+", required=True)
    p.add_argument("--rounds", type=int, default=4, help="one-epoch trainings of each")
    p.add_argument("--split", default="width", help="the label split on (default: width)")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error(f"--rounds must be >= 1, got {args.rounds}")
    torch.set_num_threads(args.threads)
    print(
        "| study | split on | steps per epoch | shared CPU-s/epoch | split CPU-s/epoch | ratio "
        "| parameters shared → split | params + AdamW MiB shared → split |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for path in args.studies:
        r = one_study(path, args.rounds, args.split)
        a, b = r["cpu"]["shared"], r["cpu"]["split"]
        pa, pb = r["params"]["shared"], r["params"]["split"]
        print(
            f"| {r['study']} | {r['split']} | {r['steps']} | {a:.2f} | {b:.2f} | x{b / a:.2f} "
            f"| {pa:,} → {pb:,} | {mib(pa):.1f} → {mib(pb):.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
