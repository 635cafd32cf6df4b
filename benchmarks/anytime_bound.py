"""The anytime bound: once the supernet is paid, can *any* choice of trainings be above the
peers yet? (Issue 43's target "above every peer from 1.5 x the supernet's own cost".)

At a run's CPU-second ``T`` a one-shot study that has paid its supernet (``S`` CPU-seconds)
has had at most ``T - S`` CPU-seconds for stand-alone trainings, and until it has screened
its candidates none of those trainings can have been chosen by the supernet: they are
chosen without training (the zero-cost anchors), whatever the rule. This replay asks the
most generous version of that question on each ground's own tables: **the best
hypervolume any set of the table's architectures whose summed training cost is at most
``T - S`` reaches** (an oracle that knows every architecture's outcome, trains nothing in
vain, and pays neither the cost-model calibration nor the screening), against the peers'
median hypervolume at ``T``:

- ``oracle (mean)``: the architectures' accuracy and cost averaged over the table's
  training seeds (what a run can expect);
- ``oracle (luckiest)``: each architecture's best test accuracy and lowest cost over the
  seeds, a strict upper bound: no run trained on these tables can reach more;
- the peers: random search and random search with Optuna's ``HyperbandPruner`` replayed on
  the tables (B1's replay and threshold, read from the ``--runs`` file), and every
  other method of the ``--peers`` files (B1's real runs, re-scored on these tables);
- ``nasflow``: the study's measured runs, for reference: B1's nasflow runs (a
  ``search_efficiency.py --json`` file), or one configuration's runs of paired files
  (``paired.py --json``, ``--config NAME``; each trained model at its ready CPU-second).

Between the oracle and the study sits **the zero-cost envelope** (``--envelope``): the
anchors a zero-cost rule of the family ``nasflow.pipeline.zero_cost_front`` belongs to
would train (``n`` of the non-dominated set by parameters up and training FLOPs down,
spread evenly in log FLOPs from its cheapest member to the fraction ``q`` of the way to
its largest; ``n`` in 1..8, ``q`` in 0.25, 0.5, 0.75, 1: the shipped rule is ``n=4, q=1``),
trained cheapest first as phase 0 trains them, each counted from its cumulative training
cost; at every ``T`` the best member of the family *chosen after the fact* on that
ground (an upper bound for the family: a study must pick one rule before it runs). Where
even the envelope is below a peer at ``T``, no anchor rule that sees only parameter counts
and FLOPs is above that peer there.

Where even the luckiest oracle is below a peer at ``T``, no rule that trains before the
supernet has screened can be above every peer there: the target is infeasible by design
at that ``T`` for a study that pays the supernet first. ``S`` is the median ``supernet``
phase seconds of the ``--runs`` file's nasflow runs (one thread: wall ~ CPU).

The oracle is exact: on two objectives (accuracy up, cost down) a set's hypervolume is
the sum over its staircase ``sum_k (a_k - a_{k-1}) (R - c_k)`` (points cheapest first,
each more accurate than the last), so the best set under a cost budget is a dynamic
programme over (last point, budget); costs are rounded *down* to ``--step`` CPU-seconds,
which can only raise the bound.

Usage::

    python benchmarks/anytime_bound.py --study benchmarks/suite/hard.py \\
        --gt benchmarks/data/suite/hard_seed0.csv benchmarks/data/suite/hard_seed1.csv \\
        --runs benchmarks/data/b1_anytime43_hard.json \\
        --peers benchmarks/data/b1_hard_optuna.json benchmarks/data/b1_hard_nni.json \\
        --budgets 30 60 90 120 180 240 300
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np
import optuna

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _b1_tables import (
    GroundTruth,
    hv_curve,
    hv_reference,
    hypervolume_2d,
    load_ground_truth,
    replay_summary,
    study_end,
    table_clock,
    without_finetuning,
)

from nasflow.pipeline import spread_in_log_flops, zero_cost_front
from nasflow.search import StudySpec, load_study_file
from nasflow.space import Arch


def best_hypervolume(
    acc: np.ndarray, cost: np.ndarray, ref: tuple[float, float], budgets: list[float], step: float
) -> list[float]:
    """The largest hypervolume (bounded by ``ref``) of any subset of the points whose
    summed cost is at most each of ``budgets`` (costs rounded down to ``step``)."""
    keep = (acc > ref[0]) & (cost < ref[1])
    order = np.argsort(cost[keep], kind="stable")  # cheapest first: a staircase's order
    a, c = acc[keep][order], cost[keep][order]
    bins = int(max(budgets, default=0.0) / step) + 1
    if bins <= 0 or len(a) == 0:
        return [0.0 for _ in budgets]
    width = np.floor(c / step).astype(int)
    # best[j, b]: the largest hypervolume of a staircase whose last (costliest) point is j
    # and whose summed cost is at most b steps; -inf where j does not fit.
    best = np.full((len(a), bins), -np.inf)
    for j in range(len(a)):
        w = width[j]
        if w >= bins:
            continue
        row = np.full(bins, -np.inf)
        row[w:] = (a[j] - ref[0]) * (ref[1] - c[j])
        for i in range(j):
            if a[i] >= a[j]:  # j adds nothing above a point that is cheaper and as good
                continue
            step_up = (a[j] - a[i]) * (ref[1] - c[j])
            np.maximum(row[w:], best[i, : bins - w] + step_up, out=row[w:])
        best[j] = row
    top = np.maximum(best.max(0), 0.0)
    return [float(top[int(b / step)]) if b >= 0 else 0.0 for b in budgets]


#: The zero-cost rule family of ``--envelope``: anchor counts and how far up the front.
ENVELOPE_N = tuple(range(1, 9))
ENVELOPE_Q = (0.25, 0.5, 0.75, 1.0)


def envelope(
    spec: StudySpec, gt: GroundTruth, budgets: list[float]
) -> tuple[list[float], list[float], list[str]]:
    """The shipped anchor rule's hypervolume and the family's best (chosen after the fact)
    at each budget, with the best member's ``n``/``q``: the table's architectures are the
    rule's sample, each anchor ready at the summed table cost of it and the cheaper ones."""
    archs = [Arch.from_json(a) for a in gt.archs]
    index = {a: i for i, a in enumerate(archs)}
    # More anchors than the front has members: the whole front, cheapest first.
    front = zero_cost_front(
        spec.space, len(archs), len(archs), spec.seed, spec.train.batch_size, candidates=archs
    )
    logs = np.log([max(a.flops, 1) for a in front])
    acc, cost = gt.test.mean(0), gt.cpu.mean(0)
    ref, total = hv_reference(gt)

    def curve(members: list[int]) -> list[float]:
        pick = [index[front[i].arch] for i in members]
        ready = np.cumsum(cost[pick])
        out = []
        for b in budgets:
            fit = [p for p, r in zip(pick, ready, strict=True) if r <= b]
            pts = np.stack([acc[fit], cost[fit]], 1) if fit else np.empty((0, 2))
            out.append(hypervolume_2d(pts, ref) / total if fit else 0.0)
        return out

    shipped = curve(spread_in_log_flops(logs, 4, 1.0))
    best, which = [0.0] * len(budgets), ["—"] * len(budgets)
    for n in ENVELOPE_N:
        for q in ENVELOPE_Q:
            for k, v in enumerate(curve(spread_in_log_flops(logs, n, q))):
                if v > best[k]:
                    best[k], which[k] = v, f"{n}/{q:g}"
    return shipped, best, which


def peer_curves(
    gt: GroundTruth, threshold: float, budgets: list[float], replays: int, peers: list[dict]
) -> dict[str, list[float]]:
    """Median hypervolume ratio at each budget of every peer: B1's two replays and the
    ``peers`` runs (B1 runs of other methods than nasflow)."""
    _, record = replay_summary(gt, threshold, max(budgets), replays, budgets)
    curves = {
        "random (replayed)": record["random"]["hv_median"],
        "random + Hyperband": record["hyperband"]["hv_median"],
    }
    by: dict[str, list[list[float]]] = {}
    for run in peers:
        by.setdefault(run["method"], []).append(hv_curve(run["events"], budgets, gt))
    for method, hv in by.items():
        curves[f"{method} ({len(hv)} runs)"] = np.median(hv, 0).tolist()
    return curves


def nasflow_runs(paths: list[Path], study: str, config: str | None) -> list[dict]:
    """The nasflow runs of ``paths`` as B1 runs (``events``: ``cpu``, ``test``,
    ``train_cpu``; ``phases``: ``supernet``): a B1 ``--json`` file's, or, with ``config``,
    that configuration's rows for ``study`` (its name) in paired ``--json`` files."""
    if config is None:
        return [
            r for p in paths for r in json.loads(p.read_text())["runs"] if r["method"] == "nasflow"
        ]
    rows = [json.loads(line) for p in paths for line in p.read_text().splitlines() if line]
    return [
        {
            "method": "nasflow",
            "seed": r["seed"],
            "events": [
                {
                    "cpu": m["ready_cpu"],
                    "test": m["test"],
                    "train_cpu": m["cost"],
                    "arch": m["arch"],
                    "note": m["kind"],  # "fine-tuned": clock_ratio leaves its estimate out
                }
                for m in r["trained"]
            ],
            "phases": r["phase_seconds"],
        }
        for r in rows
        if r.get("config") == config and r.get("name") == study
    ]


def bound_table(args: argparse.Namespace) -> str:
    spec = load_study_file(args.study)
    gt = load_ground_truth(args.gt or [Path(p) for p in spec.baseline])
    if args.config is not None and args.threshold is None:
        raise SystemExit("--config (paired files) needs --threshold (B1's success bar)")
    ours = nasflow_runs(args.runs, spec.name, args.config)
    if not ours:
        raise SystemExit(f"{[str(p) for p in args.runs]} hold no nasflow run of {spec.name}")
    others = [
        r
        for path in args.peers or []
        for r in json.loads(path.read_text())["runs"]
        if r["method"] != "nasflow"
    ]
    clock = ""
    if args.table_clock:
        ours, others = table_clock(ours, gt, spec), table_clock(others, gt, spec)
        clock = (
            "; every run on the table's clock (x"
            + ", x".join(f"{r['clock_ratio']:.2f}" for r in ours + others)
            + ")"
        )
    # The study's own end, as it ran (before any replay below moves its retrains).
    ends = [e for r in ours if (e := study_end(r, spec.retrain_top)) is not None]
    if args.without_finetuning:
        ours = [without_finetuning(r) for r in ours]
    threshold = args.threshold
    if threshold is None:
        threshold = json.loads(args.runs[0].read_text())["threshold"]
    supernet = args.supernet_cpu or statistics.median(
        r["phases"]["supernet"] / r.get("clock_ratio", 1.0) for r in ours
    )
    ref, total = hv_reference(gt)
    end = statistics.median(ends) if ends else None
    budgets = sorted({*args.budgets, *([round(end)] if end is not None else [])})
    room = [max(b - supernet, -1.0) for b in budgets]
    mean = best_hypervolume(gt.test.mean(0), gt.cpu.mean(0), ref, room, args.step)
    luck = best_hypervolume(gt.test.max(0), gt.cpu.min(0), ref, room, args.step)
    peers = peer_curves(gt, threshold, budgets, args.replays, others)
    nasflow = np.median([hv_curve(r["events"], budgets, gt) for r in ours], 0).tolist()
    best_peer = np.max(list(peers.values()), 0)
    head = " | ".join(f"@ {b:.0f}" for b in budgets)
    lines = [
        f"{spec.name}: {len(gt.archs)} architectures x {len(gt.test)} seeds; supernet "
        f"{supernet:.0f} CPU-s (median of {len(ours)} runs), so 1.5 x = {1.5 * supernet:.0f}"
        + ("" if end is None else f"; the study's own end {end:.0f} CPU-s (median)")
        + clock,
        "",
        f"| hypervolume / the table's | {head} CPU-s |",
        "|---|" + "---:|" * len(budgets),
        "| CPU-s left for trainings once the supernet is paid | "
        + " | ".join(f"{max(r, 0):.0f}" for r in room)
        + " |",
        "| oracle (mean), trainings within that | " + _cells(mean, total) + " |",
        "| oracle (luckiest), trainings within that | " + _cells(luck, total) + " |",
        *(f"| {k} | " + " | ".join(f"{v:.3f}" for v in c) + " |" for k, c in peers.items()),
        f"| nasflow{'' if args.config is None else ' ' + args.config}"
        + (" without fine-tuning (replayed" if args.without_finetuning else " (measured")
        + f", median of {len(ours)}) | "
        + " | ".join(f"{v:.3f}" for v in nasflow)
        + " |",
        *(_envelope_rows(spec, gt, budgets, best_peer) if args.envelope else []),
        "| luckiest oracle above every peer? | "
        + " | ".join(
            "yes" if v / total > p else "**no**" for v, p in zip(luck, best_peer, strict=True)
        )
        + " |",
    ]
    return "\n".join(lines)


def _envelope_rows(
    spec: StudySpec, gt: GroundTruth, budgets: list[float], best_peer: np.ndarray
) -> list[str]:
    shipped, best, which = envelope(spec, gt, budgets)
    return [
        "| zero-cost rule as shipped (4 anchors), trained first | "
        + " | ".join(f"{v:.3f}" for v in shipped)
        + " |",
        "| zero-cost envelope: best n/q chosen after the fact | "
        + " | ".join(f"{v:.3f} ({w})" for v, w in zip(best, which, strict=True))
        + " |",
        "| envelope above every peer? | "
        + " | ".join("yes" if v > p else "**no**" for v, p in zip(best, best_peer, strict=True))
        + " |",
    ]


def _cells(values: list[float], total: float) -> str:
    return " | ".join(f"{v / total:.3f}" for v in values)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--study", type=Path, required=True, help="the ground's study file")
    p.add_argument("--gt", type=Path, nargs="+", help="tables (default: the study's)")
    p.add_argument(
        "--runs", type=Path, nargs="+", required=True, help="B1 --json files of nasflow runs"
    )
    p.add_argument("--config", help="--runs are paired.py --json files: this configuration")
    p.add_argument("--threshold", type=float, help="B1's success bar (with --config)")
    p.add_argument("--peers", type=Path, nargs="*", help="B1 --json files of other methods")
    p.add_argument("--budgets", type=float, nargs="+", default=[30, 60, 90, 120, 180, 240, 300])
    p.add_argument("--supernet-cpu", type=float, help="default: the runs' median")
    p.add_argument("--replays", type=int, default=300, help="replayed runs per peer")
    p.add_argument("--step", type=float, default=0.05, help="cost resolution, CPU-s")
    p.add_argument("--envelope", action="store_true", help="add the zero-cost rule family's rows")
    p.add_argument(
        "--without-finetuning",
        action="store_true",
        help="replay nasflow's B1 runs without their fine-tuning phase (an estimate)",
    )
    p.add_argument(
        "--table-clock",
        action="store_true",
        help="put every measured run (nasflow's, the peers') on the table's clock first",
    )
    args = p.parse_args(argv)
    if args.step <= 0:
        p.error(f"--step must be > 0, got {args.step}")
    if args.without_finetuning and args.config is not None:
        p.error(f"--without-finetuning replays B1 runs, not paired rows (--config {args.config})")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    print(bound_table(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
