"""Accuracy of the hardware-aware cost model on this machine.

For random architectures of the default MNIST-1D space (batch 64, input (1, 40)), the
training-step time is measured twice, interleaved (A and B: every round visits all
architectures in a fresh random order, rounds alternate between A and B), and scored
against A:

- the cost model (op-latency table + calibrated per-step overhead; its calibration
  paths are drawn separately and never among the scored ones),
- a FLOPs-only baseline (FLOPs scaled to seconds by least squares on the same
  calibration steps), and the same baseline fitted on A itself (in-sample, optimistic),
- re-measurement B: the noise floor of this machine.

Figures: Kendall tau-b, mean absolute percentage error, share within ±10%. Targets:
tau >= 0.9, and a ±10% hit rate >= 80% of B's. Also reported: what building the table
and calibrating cost, and the cost per candidate of a prediction next to measuring the
candidate's step the way the search runner did before (``measure_step_time``).

Usage::

    python benchmarks/cost_model.py                 # full: 30 archs, ~2-4 min on 2 cores
    python benchmarks/cost_model.py --quick         # smoke: a tiny space, seconds
    python benchmarks/cost_model.py --json out.json --storage sqlite:///cost.db

Without ``--storage`` the table is built from scratch in a temporary SQLite file, so the
table-building cost is part of the run.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from nasflow._host import cpu_model
from nasflow.cost import CostModel, evaluate_accuracy
from nasflow.search_spaces.mnist1d import MNIST1DSpace
from nasflow.train import measure_step_time


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke size: tiny space, 6 archs")
    p.add_argument("--archs", type=int, help="scored architectures (default 30; quick 6)")
    p.add_argument("--rounds", type=int, help="rounds per measurement A and B (default 3)")
    p.add_argument("--calib", type=int, help="calibration steps (default 8; quick 3)")
    p.add_argument("--op-rounds", type=int, help="visits per op when building the table")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument(
        "--threads", type=int, help="torch intra-op threads (default: torch's; quick: 1)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the scored architectures")
    p.add_argument("--storage", help="cost table: file, sqlite:///FILE or postgresql://...")
    p.add_argument("--json", type=Path, help="write the results here")
    args = p.parse_args(argv)
    for name in ("archs", "rounds", "calib", "threads", "op_rounds"):
        v = getattr(args, name)
        if v is not None and v < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {v}")
    if args.batch_size < 1:
        p.error(f"--batch-size must be >= 1, got {args.batch_size}")
    return args


def scored_archs(space: MNIST1DSpace, n: int, seed: int, exclude: set[str]) -> list:
    """``n`` distinct random paths, none of them a calibration path."""
    rng = np.random.default_rng(10_000 + seed)
    out: dict[str, object] = {}
    for _ in range(100 * n):
        if len(out) == n:
            break
        a = space.path(space.sample(rng))
        if a.to_json() not in exclude:
            out.setdefault(a.to_json(), a)
    return list(out.values())


def per_candidate_costs(model: CostModel, archs: list, space: MNIST1DSpace) -> dict[str, float]:
    """Seconds per candidate: a prediction (new paths, after the table exists) vs measuring
    the candidate's step like the search runner did (``measure_step_time``, 2+5 steps)."""
    fresh = [space.path(space.sample(np.random.default_rng(777 + i))) for i in range(len(archs))]
    t0 = time.perf_counter()
    for a in fresh:
        model.predict_step_seconds(a)
    predict = (time.perf_counter() - t0) / len(fresh)
    supernet = space.supernet()
    x = torch.randn(model.batch_size, *model.input_shape)
    y = torch.randint(0, space.num_classes, (model.batch_size,))
    sample = archs[: min(5 if len(archs) > 10 else 2, len(archs))]
    t0 = time.perf_counter()
    for a in sample:
        measure_step_time(supernet.extract(a), x, y)
    measure = (time.perf_counter() - t0) / len(sample)
    return {"predict_seconds": predict, "measure_step_time_seconds": measure}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    elif args.quick:  # a smoke run: one thread keeps it fast on a busy machine
        torch.set_num_threads(1)
    if args.quick:
        space = MNIST1DSpace(base_channels=8, layers_per_stage=1, ops=("k3_e2", "k7_e2", "skip"))
        n_archs, rounds, calib, iters = args.archs or 6, args.rounds or 1, args.calib or 3, 2
    else:
        space = MNIST1DSpace()
        n_archs, rounds, calib, iters = args.archs or 30, args.rounds or 3, args.calib or 8, 3
    with tempfile.TemporaryDirectory() as tmp:
        storage = args.storage or str(Path(tmp) / "cost.db")
        kwargs = {} if args.op_rounds is None else {"rounds": args.op_rounds}
        model = CostModel.for_space(
            space, batch_size=args.batch_size, storage_url=storage, **kwargs
        )
        t0 = time.perf_counter()
        measured_ops = model.measure_space()
        t_table = time.perf_counter() - t0
        t0 = time.perf_counter()
        model.calibrate(n=calib, rounds=rounds, iters=iters)
        t_calib = time.perf_counter() - t0
        exclude = {p["arch"] for p in model.calibration.points}
        archs = scored_archs(space, n_archs, args.seed, exclude)
        t0 = time.perf_counter()
        report = evaluate_accuracy(model, archs, rounds=rounds, iters=iters, seed=args.seed)
        t_eval = time.perf_counter() - t0
        costs = per_candidate_costs(model, archs, space)
        n_rows = model.table.count(model.fingerprint)
        model.table.close()
    report.meta.update(
        {
            "command": " ".join(["python", "benchmarks/cost_model.py", *(argv or sys.argv[1:])]),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "mode": "quick" if args.quick else "full",
            "space": space.name,
            "space_config": space.config,
            "batch_size": args.batch_size,
            "archs": len(archs),
            "rounds_per_measurement": rounds,
            "steps_per_visit": iters,
            "device": model.fingerprint.describe(),
            "cpu": cpu_model(),
            "python": platform.python_version(),
            "threads": torch.get_num_threads(),
            "table_rows": n_rows,
            "ops_measured_now": measured_ops,
            "calibration": {
                "slope": model.calibration.slope,
                "intercept_seconds": model.calibration.intercept,
                "points": len(model.calibration.points),
                "archs": [p["arch"] for p in model.calibration.points],
            },
            "seconds": {
                "build_table": t_table,
                "calibrate": t_calib,
                "evaluate": t_eval,
            },
            "per_candidate": costs,
        }
    )
    print(f"device: {model.fingerprint.describe()}")
    print(
        f"table: {n_rows} op rows ({measured_ops} measured now, {t_table:.1f} s); "
        f"calibration on {len(model.calibration.points)} steps ({t_calib:.1f} s): "
        f"step = {model.calibration.slope:.3f} * ops + "
        f"{model.calibration.intercept * 1e3:.2f} ms"
    )
    a_ms = [v * 1e3 for v in report.measured_a]
    print(
        f"{len(archs)} archs, step time {min(a_ms):.1f}-{max(a_ms):.1f} ms "
        f"(median {statistics.median(a_ms):.1f}); A and B: {rounds} rounds each, "
        f"{iters} steps per visit ({t_eval:.1f} s)"
    )
    print()
    print(report.table())
    print()
    print(
        f"per candidate: prediction {costs['predict_seconds'] * 1e3:.2f} ms vs "
        f"measure_step_time {costs['measure_step_time_seconds'] * 1e3:.1f} ms"
    )
    print(f"hit rate vs re-measurement's: {report.hit_rate_ratio:.2f}")
    for target, ok in report.targets().items():
        print(f"target {target}: {'met' if ok else 'NOT met'}")
    out = args.json
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report.to_dict(), indent=2) + "\n")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
