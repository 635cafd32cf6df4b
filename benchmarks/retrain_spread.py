"""Phase 3's retrains by score or spread over cost, replayed on the suite's tables.

Which screened candidates should phase 3 retrain from scratch? By score (the most accurate
members of the screened Pareto set: where the kept model comes from) or some of them
spread over cost (``StudySpec.retrain_spread``: each the member farthest in log predicted
cost from every model trained so far, the rule of ``nasflow.pipeline``'s phase 3)? This
replay asks it of the B2 score files, which hold every table architecture's supernet
accuracy and predicted cost under three supernets (``benchmarks/data/b2_scores/``), and
the ground's tables, which hold what each architecture scores trained from scratch:

- the anchors: the shipped zero-cost rule (``Anchors(n=4)``, ``--anchors``: the
  non-dominated set by parameters up and training FLOPs down, four spread in log FLOPs)
  on the table's sample;
- the screened Pareto set: the table's architectures by (supernet accuracy up, predicted
  cost down); a rule ``TOP:SPREAD`` retrains its ``TOP`` most accurate members, then
  ``SPREAD`` more chosen by cost;
- per supernet and training seed: the trained models' (anchors and retrains) hypervolume
  over the table's front (test accuracy up, the table's training CPU-seconds down; B1's
  reference point), the kept model (the best retrained validation; the anchors' margin
  rule is not replayed) as its share of the table, and the retrains' summed CPU-seconds;
  a rule with ``TOP`` at least the screened Pareto set's size (its last column, less the
  anchors) trains all of it: the most any rule drawing from that set can reach.

``--layers K`` asks the question under every such rule: is the supernet's choice worth
more than chance *at the same number of trainings*? It trains the screened set's first
``K`` non-dominated layers (by supernet accuracy up, predicted cost down; each layer the
non-dominated set of what the layers before it left) with the anchors, and prints, per
depth, their hypervolume against the median of ``--draws`` random draws of as many table
architectures (no anchors: random search's trainings). Where the two are level, no rule
choosing from the supernet's scores can put a front above random search's at any budget
that also pays for the supernet.

It replays phase 3 without the fine-tuning phase (fine-tuned validation cannot be
replayed from the tables) and counts every training as done (no clock): a pre-check of
the rule, not its measurement: paired run 17 (``benchmarks/results/paired.md``) measures
the study with it.

Usage::

    python benchmarks/retrain_spread.py \\
        --ground hard benchmarks/data/b2_scores/hard_fair12_plain.csv \\
            benchmarks/data/suite/hard_seed0.csv benchmarks/data/suite/hard_seed1.csv \\
        --rules 4:0 8:0 4:2 4:4
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _b1_tables import hypervolume_2d

from nasflow.pipeline import spread_in_log_flops


def _key(arch: object) -> str:
    """An architecture's JSON with sorted keys (the score files and tables write it)."""
    return json.dumps(json.loads(arch) if isinstance(arch, str) else arch, sort_keys=True)


def load_scores(path: Path) -> list[dict]:
    """A B2 score file's rows (CSV or JSON lines)."""
    if path.suffix == ".csv":
        with path.open() as f:
            return list(csv.DictReader(f))
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_table(paths: list[Path]) -> dict[str, list[tuple[float, float, float]]]:
    """Architecture -> (validation, test, training CPU-s) per training seed's table."""
    table: dict[str, list[tuple[float, float, float]]] = {}
    for p in paths:
        with p.open() as f:
            for r in csv.DictReader(f):
                row = (
                    float(r["val_accuracy"]),
                    float(r["test_accuracy"]),
                    float(r["train_cpu_seconds"]),
                )
                table.setdefault(_key(r["arch"]), []).append(row)
    return table


def non_dominated(up: np.ndarray, down: np.ndarray) -> list[int]:
    """Indices of the points no other point beats on ``up`` (higher) and ``down`` (lower)."""
    out = []
    for i in range(len(up)):
        better = (up >= up[i]) & (down <= down[i]) & ((up > up[i]) | (down < down[i]))
        if not better.any():
            out.append(i)
    return out


def spread_pick(
    candidates: list[int], logs: list[float], log_cost: np.ndarray, k: int
) -> list[int]:
    """``k`` of ``candidates`` (best first), each the farthest in log cost from ``logs`` and
    the ones picked before it; ties to the earlier (phase 3's ``spread_trials``)."""
    pool, logs, picked = list(candidates), list(logs), []
    while pool and len(picked) < k:
        far = max(pool, key=lambda i: min((abs(log_cost[i] - x) for x in logs), default=0.0))
        picked.append(far)
        logs.append(float(log_cost[far]))
        pool.remove(far)
    return picked


class _Front:
    """A table's front: B1's reference point, the hypervolume of the table's two-seed means
    and the training seeds every architecture has."""

    def __init__(self, table: dict) -> None:
        keys = list(table)
        self.test_mean = np.array([np.mean([r[1] for r in table[k]]) for k in keys])
        cpu_mean = np.array([np.mean([r[2] for r in table[k]]) for k in keys])
        self.ref = (float(self.test_mean.min()), float(1.1 * cpu_mean.max()))
        self.total = hypervolume_2d(np.stack([self.test_mean, cpu_mean], 1), self.ref)
        self.seeds = min(len(v) for v in table.values())


def _supernets(
    scores: list[dict], anchors_n: int
) -> Iterator[tuple[int, list[str], np.ndarray, np.ndarray, list[int]]]:
    """Per supernet seed of a score file: (seed, architecture keys, supernet accuracy,
    predicted cost, the anchors' indices)."""
    for s in sorted({int(r["supernet_seed"]) for r in scores}):
        rows = [r for r in scores if int(r["supernet_seed"]) == s]
        arch = [_key(r["arch"]) for r in rows]
        acc = np.array([float(r["supernet_accuracy"]) for r in rows])
        cost = np.array([float(r["predicted_cost"]) for r in rows])
        params = np.array([float(r["params"]) for r in rows])
        flops = np.array([float(r["flops"]) for r in rows])
        front = sorted(non_dominated(params, flops), key=lambda i: flops[i])
        anchors = [front[i] for i in spread_in_log_flops(np.log(flops[front]), anchors_n)]
        yield s, arch, acc, cost, anchors


def replay_ground(
    scores: list[dict], table: dict, rules: list[tuple[int, int]], anchors_n: int = 4
) -> dict[tuple[int, int], np.ndarray]:
    """Per rule, rows of (hypervolume / the table's, kept model's share, retrain CPU-s,
    members of the screened Pareto set), one per supernet and training seed."""
    f = _Front(table)
    test_mean, ref, total, seeds = f.test_mean, f.ref, f.total, f.seeds
    out: dict[tuple[int, int], list[tuple[float, float, float, int]]] = {r: [] for r in rules}
    for _, arch, acc, cost, anchors in _supernets(scores, anchors_n):
        screened = sorted(non_dominated(acc, cost), key=lambda i: -acc[i])
        screened = [i for i in screened if i not in anchors]
        log_cost = np.log(cost)
        for top, spread in rules:
            chosen = screened[:top]
            logs = [float(log_cost[i]) for i in anchors + chosen]
            chosen = chosen + spread_pick(screened[top:], logs, log_cost, spread)
            for t in range(seeds):
                pts = np.array(
                    [(table[arch[i]][t][1], table[arch[i]][t][2]) for i in anchors + chosen]
                )
                kept = max(chosen, key=lambda i: table[arch[i]][t][0])
                kept_test = np.mean([r[1] for r in table[arch[kept]]])
                out[(top, spread)].append(
                    (
                        hypervolume_2d(pts, ref) / total,
                        float(np.mean(test_mean < kept_test)),
                        sum(table[arch[i]][t][2] for i in chosen),
                        len(screened),
                    )
                )
    return {r: np.array(v) for r, v in out.items()}


def layers_vs_random(
    scores: list[dict], table: dict, depth: int, anchors_n: int = 4, draws: int = 200
) -> np.ndarray:
    """Rows of (supernet seed, layer, trained models, their hypervolume / the table's, the
    median of ``draws`` random draws of as many, their training CPU-s): the anchors and the
    first ``layer`` non-dominated layers of the screened set, for layer ``1..depth``. Both
    averaged over the table's training seeds (random draws alternate between them)."""
    f = _Front(table)
    ref, total, seeds = f.ref, f.total, f.seeds
    rng = np.random.default_rng(0)
    out = []
    for s, arch, acc, cost, anchors in _supernets(scores, anchors_n):
        members = set(anchors)
        left = list(range(len(arch)))

        def hv(idx: list[int], t: int, arch: list[str] = arch) -> float:
            pts = np.array([(table[arch[i]][t][1], table[arch[i]][t][2]) for i in idx])
            return hypervolume_2d(pts, ref) / total

        for layer in range(1, depth + 1):
            if not left:
                break
            nd = [left[j] for j in non_dominated(acc[left], cost[left])]
            members |= set(nd)
            left = [i for i in left if i not in set(nd)]
            idx = sorted(members)
            ours = float(np.mean([hv(idx, t) for t in range(seeds)]))
            chance = [
                hv(list(rng.choice(len(arch), len(idx), replace=False)), d % seeds)
                for d in range(draws)
            ]
            cpu = float(np.mean([sum(table[arch[i]][t][2] for i in idx) for t in range(seeds)]))
            out.append((s, layer, len(idx), ours, float(np.median(chance)), cpu))
    return np.array(out)


def _print_layers(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--layers``: the screened set's non-dominated layers against random draws."""
    print(
        "| ground | supernet seed | layers | trained (with anchors) | HV / table's "
        "| random draws of as many (median) | training CPU-s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, scores, tables in _grounds(p, args):
        rows = layers_vs_random(scores, tables, args.layers, args.anchors, args.draws)
        for s, layer, n, ours, chance, cpu in rows:
            print(
                f"| {name} | {s:.0f} | {layer:.0f} | {n:.0f} | {ours:.3f} | {chance:.3f} "
                f"| {cpu:.0f} |"
            )


def _grounds(p: argparse.ArgumentParser, args: argparse.Namespace) -> list[tuple]:
    """Each ``--ground``'s name, score rows and table."""
    out = []
    for ground in args.ground:
        if len(ground) < 3:
            p.error(f"--ground {' '.join(ground)}: give NAME SCORES TABLE [TABLE...]")
        name, scores, tables = ground[0], Path(ground[1]), [Path(t) for t in ground[2:]]
        out.append((name, load_scores(scores), load_table(tables)))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--ground",
        nargs="+",
        action="append",
        required=True,
        metavar="NAME SCORES TABLE",
        help="a ground's name, its B2 score file and its tables (repeat per ground)",
    )
    p.add_argument("--rules", nargs="+", default=["4:0", "8:0", "4:2", "4:4"], help="TOP:SPREAD")
    p.add_argument(
        "--anchors", type=int, default=4, help="zero-cost anchors (the image study ships 6)"
    )
    p.add_argument(
        "--layers",
        type=int,
        default=0,
        help="instead of --rules: the screened set's first LAYERS non-dominated layers "
        "trained, against random draws of as many",
    )
    p.add_argument("--draws", type=int, default=200, help="random draws per depth (--layers)")
    args = p.parse_args(argv)
    rules = []
    for text in args.rules:
        top, _, spread = text.partition(":")
        if not (top.isdigit() and spread.isdigit()) or int(top) < 1:
            p.error(f"--rules: {text!r} is not TOP:SPREAD with TOP >= 1 (for example 4:2)")
        rules.append((int(top), int(spread)))
    if args.anchors < 0:
        p.error(f"--anchors must be >= 0, got {args.anchors}")
    if args.layers < 0 or args.draws < 1:
        p.error(f"--layers must be >= 0 and --draws >= 1, got {args.layers} and {args.draws}")
    if args.layers:
        _print_layers(p, args)
        return 0
    print(
        "| ground | rule (by score : spread) | HV / table's | kept share | retrain CPU-s "
        "| screened Pareto set |"
    )
    print("|---|---|---:|---:|---:|---:|")
    for name, scores, tables in _grounds(p, args):
        result = replay_ground(scores, tables, rules, args.anchors)
        for (top, spread), rows in result.items():
            hv, share, cpu, _ = rows.mean(0)
            size = f"{rows[:, 3].min():.0f}-{rows[:, 3].max():.0f}"
            print(f"| {name} | {top} : {spread} | {hv:.3f} | {share:.1%} | {cpu:.1f} | {size} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
