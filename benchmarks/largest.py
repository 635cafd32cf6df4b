"""B7: the trivial baseline a search must beat — the space's largest architecture.

On every ground of the generalisation suite the parameter count alone ranks the random
architectures at least as well as the supernet does (``benchmarks/ranking.py`` prints
it), so "train the biggest network the space allows" is the baseline a user would try
first. For every study: the architecture with the most parameters (greedy, one choice at
a time, from the space's first values, until no single change adds parameters) is
trained from scratch with the study's recipe for each ``--seeds`` training seed, exactly
as ``benchmarks/ground_truth.py`` trains a table's rows; its test accuracy, and the share
of the study's random-architecture table (``study.baseline``, mean over its training
seeds) that it strictly beats, are printed next to the CPU-seconds it cost.

Usage::

    python benchmarks/largest.py --studies studies/mnist1d_front.py benchmarks/suite/*.py \\
        --seeds 0 1 --json benchmarks/data/b7_largest.jsonl
    python benchmarks/largest.py --from-json benchmarks/data/b7_largest.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ground_truth import train_one
from ranking import load_ground_truth, merge_ground_truth

from nasflow.search import StudySpec, load_study_file
from nasflow.space import Arch, SearchSpace, largest_arch, n_params


def largest(space: SearchSpace, fixed: Mapping[str, Any] | None = None) -> tuple[Arch, int]:
    """The architecture with the most parameters (``nasflow.space.largest_arch``; the
    choices in ``fixed``, label -> value, keep their value: the param ladder fixes the
    width) and its parameter count."""
    arch = largest_arch(space, fixed)
    return arch, n_params(space, arch)


def beats(value: float, table: list[float]) -> float:
    return sum(t < value for t in table) / len(table)


def run_one(path: Path, seed: int) -> dict:
    study: StudySpec = load_study_file(path)
    arch, params = largest(study.space)
    tables = [load_ground_truth(Path(p), None) for p in study.baseline]
    _, _, gt_test = merge_ground_truth(tables)
    # The table's own seeds: training seed s trains row i from init seed s * 100_003 + i
    # with batch seed recipe.seed + s (ground_truth.py); this row is "row -1".
    recipe = study.train
    row = train_one(
        study, arch, study.data(), recipe, seed * 100_003 + 99_999, recipe.seed + seed, set()
    )
    test = float(row["test_accuracy"])
    return {
        "study": str(path),
        "name": study.name,
        "seed": seed,
        "arch": arch.to_json(),
        "params": params,
        "test": test,
        "val": float(row["val_accuracy"]),
        "cpu_s": float(row["train_cpu_seconds"]),
        "table_archs": len(gt_test),
        "table_median": statistics.median(gt_test),
        "table_max_params": max(int(r["params"]) for r in _rows(Path(study.baseline[0]))),
        "beats": beats(test, gt_test),
    }


def _rows(path: Path) -> list[dict]:
    import csv

    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def summary(rows: list[dict]) -> str:
    out = [
        "| ground | largest arch params (table's largest) | test, per training seed "
        "| table median | beats, per seed | median beats | CPU-s per training |",
        "|---|---:|---|---:|---|---:|---:|",
    ]
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["name"], []).append(r)
    for name, rs in sorted(by.items()):
        rs.sort(key=lambda r: r["seed"])
        tests = " / ".join(f"{r['test']:.1%}" for r in rs)
        shares = " / ".join(f"{r['beats']:.0%}" for r in rs)
        out.append(
            f"| {name} | {rs[0]['params']:,} ({rs[0]['table_max_params']:,}) "
            f"| {tests} | {rs[0]['table_median']:.1%} "
            f"| {shares} "
            f"| {statistics.median(r['beats'] for r in rs):.0%} "
            f"| {statistics.mean(r['cpu_s'] for r in rs):.1f} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--studies", type=Path, nargs="+", default=[])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", type=Path, help="append every training here (JSON lines)")
    p.add_argument("--from-json", type=Path, nargs="+", help="report these rows only")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows: list[dict] = []
    if args.from_json:
        for f in args.from_json:
            rows += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    for path in args.studies:
        for seed in args.seeds:
            row = run_one(path, seed)
            rows.append(row)
            print(
                f"{row['name']} seed {seed}: {row['params']:,} params, test {row['test']:.4f},"
                f" beats {row['beats']:.0%} of the table, {row['cpu_s']:.1f} CPU-s",
                flush=True,
            )
            if args.json:
                with args.json.open("a") as f:
                    f.write(json.dumps(row) + "\n")
    print(summary(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
