"""The stack calibration with and without cutting hopeless variants short, side by side.

Runs the default study's ``stack="auto"`` calibration (``studies/mnist1d_front.py``: its
space, data, batch size, recipe, seed and ``stack_budget``, through
``calibrate_for_space`` as a study calls it) twice per repeat, once with the cut
(``nasflow.calibrate.CUT_BELOW``) and once without (``cut_below=None``), the order
alternating between repeats, in one process. Prints each run, then the median wall and
CPU seconds of each side, the median of the paired ratios (without / with), how often both
chose the same stack, and what was cut.

Where the cut matters is a CPU without fast bf16, whose bf16 autocast runs at a few
hundredths of fp32's speed: run it there, or stand one in on a CPU with ``avx512_bf16``
by capping oneDNN's instruction set (read when torch starts)::

    ONEDNN_MAX_CPU_ISA=AVX2 python benchmarks/calibration_cut.py --repeats 5
    python benchmarks/calibration_cut.py --repeats 5        # this CPU as it is
    python benchmarks/calibration_cut.py --quick            # one pair, a 10 s budget
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

from nasflow.calibrate import CUT_BELOW, calibrate_for_space
from nasflow.search import load_study_file

ROOT = Path(__file__).resolve().parents[1]


def _one(spec: Any, train: Any, val: Any, cut: bool, budget: float) -> dict[str, Any]:
    """One calibration as the study runs it, with or without the cut, and its cost."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = calibrate_for_space(
        spec.space,
        train,
        val,
        spec.train.lr,
        spec.train.weight_decay,
        planned_batches=spec.train.epochs * len(train),
        seed=spec.seed,
        budget=budget,
        cut_below=CUT_BELOW if cut else None,
    )
    rec = result.record
    cal = rec.get("calibration", {})
    return {
        "cut_on": cut,
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "chosen": rec.get("chosen"),
        "cut": cal.get("cut", []),
        "first_phase": cal.get("first_phase"),
        "second_phase": cal.get("second_phase"),
        "skipped": rec.get("skipped"),
        "alone": {c["name"]: c.get("alone") for c in rec.get("candidates", [])},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5, help="pairs (default 5)")
    p.add_argument("--budget", type=float, help="seconds (default: the study's stack_budget)")
    p.add_argument("--json", type=Path, help="write every run's row here")
    p.add_argument("--quick", action="store_true", help="one pair, a 10 s budget")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error(f"--repeats must be >= 1, got {args.repeats}")
    if args.quick:
        args.repeats, args.budget = 1, 10.0
    spec = load_study_file(ROOT / "studies" / "mnist1d_front.py")
    budget = spec.stack_budget if args.budget is None else args.budget
    data = spec.data()
    train = data.batches("train", spec.train.batch_size, spec.seed)
    val = data.batches("val")
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA", "not capped")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, oneDNN ISA {isa}; "
          f"budget {budget:g} s")  # fmt: skip
    rows = []
    for r in range(args.repeats):
        for cut in (True, False) if r % 2 == 0 else (False, True):
            row = _one(spec, train, val, cut, budget)
            rows.append(row)
            alone = ", ".join(f"{k} x{v:.2f}" for k, v in row["alone"].items() if v is not None)
            print(
                f"repeat {r} cut {'on ' if cut else 'off'}: {row['wall_s']:.1f} s wall, "
                f"{row['cpu_s']:.1f} CPU-s; chose {row['chosen']}; cut {row['cut']}; alone "
                f"{alone}; first phase {row['first_phase']}; second {row['second_phase']}",
                flush=True,
            )
    on = [x for x in rows if x["cut_on"]]
    off = [x for x in rows if not x["cut_on"]]
    pairs = list(zip(on, off, strict=True))
    med = statistics.median
    wall = med(b["wall_s"] / a["wall_s"] for a, b in pairs)
    cpu = med(b["cpu_s"] / a["cpu_s"] for a, b in pairs)
    print()
    print("| pairs | wall s, cut on | wall s, off | off / on (median of pairs) | CPU-s on "
          "| CPU-s off | CPU off / on | same stack chosen | cut |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    print(
        f"| {len(pairs)} | {med(x['wall_s'] for x in on):.1f} "
        f"| {med(x['wall_s'] for x in off):.1f} | x{wall:.2f} "
        f"| {med(x['cpu_s'] for x in on):.1f} | {med(x['cpu_s'] for x in off):.1f} "
        f"| x{cpu:.2f} "
        f"| {sum(a['chosen'] == b['chosen'] for a, b in pairs)} of {len(pairs)} "
        f"| {', '.join(sorted({n for x in on for n in x['cut']})) or 'none'} |"
    )  # fmt: skip
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
