"""The default study's supernet trained data-parallel on this machine's cores, against one
process using them all.

Trains the supernet of ``studies/mnist1d_front.py`` (its space, data, recipe; ``--epochs``
of them) once in this process with torch's threads on every core, and once as
``--ranks`` gloo ranks of one thread each (``nasflow.train.stack.launch``; the global batch
split between them, gradients all-reduced once per step), alternating, ``--repeats``
times. Prints each run's training seconds (the trainer's own clock, rank 0's) and the wall
seconds of the whole run (process start-up included for the ranks), then the median
paired ratios. Answers whether a study's supernet phase would gain from data-parallel
ranks on one machine (issue 43, item 5).

Usage::

    python benchmarks/supernet_ddp.py --repeats 3
    python benchmarks/supernet_ddp.py --quick      # one pair, one epoch: the smoke size
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from nasflow.search import load_study_file
from nasflow.train import SupernetTrainer
from nasflow.train.stack import launch

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "mnist1d_front.py"


def _train(epochs: int, folder: str) -> tuple[float, int]:
    """Train the study's supernet for ``epochs`` into ``folder``; its training seconds and
    the ranks it trained on."""
    spec = load_study_file(STUDY)
    assert spec.data is not None, "the default study trains on data"
    config = dataclasses.replace(spec.supernet_recipe, epochs=epochs)
    trainer = SupernetTrainer(spec.space, spec.data().train, config, Path(folder))
    return trainer.fit().seconds, trainer.world_size


def _rank(rank: int, world: int, epochs: int, folder: str, out: str) -> None:
    torch.set_num_threads(1)
    seconds, ranks = _train(epochs, folder)
    if rank == 0:
        Path(out).write_text(json.dumps({"seconds": seconds, "world": ranks}))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3, help="pairs (default 3)")
    p.add_argument("--epochs", type=int, default=4, help="supernet epochs per run (default 4)")
    p.add_argument("--ranks", type=int, default=os.cpu_count() or 2, help="default: the cores")
    p.add_argument("--quick", action="store_true", help="one pair of one epoch")
    args = p.parse_args(argv)
    if args.quick:
        args.repeats, args.epochs = 1, 1
    if args.repeats < 1 or args.epochs < 1 or args.ranks < 2:
        p.error("--repeats and --epochs must be >= 1, --ranks >= 2")
    threads = torch.get_num_threads()
    print(f"torch {torch.__version__}; one process x {threads} threads against "
          f"{args.ranks} ranks x 1 thread; {args.epochs} epochs of the default study's "
          "supernet")  # fmt: skip
    pairs = []
    for r in range(args.repeats):
        row = {}
        for kind in ("one", "ranks") if r % 2 == 0 else ("ranks", "one"):
            with tempfile.TemporaryDirectory() as folder:
                t0 = time.perf_counter()
                if kind == "one":
                    seconds, ranks = _train(args.epochs, folder)
                else:
                    out = str(Path(folder) / "rank0.json")
                    launch(_rank, args.ranks, (args.epochs, str(Path(folder) / "sn"), out))
                    done = json.loads(Path(out).read_text())
                    seconds, ranks = done["seconds"], done["world"]
                # The trainer's own world size: the ranks really split the batch.
                assert ranks == (1 if kind == "one" else args.ranks), (kind, ranks)
                row[kind] = (seconds, time.perf_counter() - t0)
            seconds, wall_s = row[kind]
            print(f"repeat {r} {kind:>5}: training {seconds:.1f} s, wall {wall_s:.1f} s")
        pairs.append(row)
    train = statistics.median(x["one"][0] / x["ranks"][0] for x in pairs)
    wall = statistics.median(x["one"][1] / x["ranks"][1] for x in pairs)
    print(f"\nranks against one process (median of {len(pairs)} pairs): training x{train:.2f}, "
          f"wall x{wall:.2f} (above 1: the ranks are faster)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
