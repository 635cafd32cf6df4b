"""B2 where the choice is made: does the study's ranking beat what costs nothing, globally and
within each cost level?

For one ground (a ``--study`` and its ground-truth tables ``--gt``, one per training
seed, merged over the architectures present in all), one supernet per ``--seeds`` is
trained with the study's recipe (``--supernet`` overrides any ``SupernetConfig`` field)
and every table architecture is scored as search scores it: BN re-estimated on the same
training batches for every path, accuracy and cross-entropy on the validation split.
Each ranker is compared with the tables' mean stand-alone test accuracy by Kendall tau-b:

- the supernet's accuracy, its cross-entropy, the study's ranking (the rank sum of both,
  ``FineTuning(rank_by="rank_sum")``) and the opt-in ranker
  (``FineTuning(rank_by="ranker")``): ``nasflow.ranker``'s pairwise score
  with its suite prior (``SUITE_PRIOR``: supernet accuracy, log parameters, the width
  choice, standardised over the table's architectures), as a study ranks its finalists
  before it has six anchors' labels (the prior was fitted on the proving ground's and
  ``hard``'s tables: there it is in sample);
- the free baselines: parameter count, training FLOPs (the cost model's tracer), the
  width choice, and two zero-cost proxies at initialisation, synflow and NWOT
  (``nasflow.proxies``, initialised from the supernet's seed);
- the ceiling: one table seed's test accuracy against another's, and the oracle: what an
  exact ranking of the architectures' expected accuracy would score against the tables'
  mean (``_ranking_stats.oracle_tau``, estimated from the ceiling), with the headroom it
  leaves above the best free baseline (where it is below the target, no ranking can meet
  the target there).

Cells: all architectures, each quartile of predicted training cost (the cost model's
prediction of the study's recipe on this machine) and each width (``--width-label``).
Intervals (90%): a bootstrap over the cell's architectures and over the supernets, paired
across rankers; per cell, the study's ranking minus the best free baseline there, with
its interval. ``--scores-out`` saves every per-architecture feature (one row per supernet
seed and architecture); ``--from-scores`` reads such a file back and trains nothing.

Usage::

    python benchmarks/ranking.py --study studies/mnist1d_front.py --seeds 0 1 2 \\
        --gt benchmarks/data/mnist1d_front_ground_truth.csv \\
        benchmarks/data/mnist1d_front_ground_truth_seed1.csv --scores-out b2_front.jsonl
    python benchmarks/ranking.py --study benchmarks/suite/hard.py \\
        --gt benchmarks/data/suite/hard_seed0.csv benchmarks/data/suite/hard_seed1.csv \\
        --supernet '{"epochs": 6}' --seeds 0 1 2
    # another supernet recipe: a sampler, weights averaged over the last epochs' checkpoints
    python benchmarks/ranking.py ... --supernet '{"sampler": "fair-depth"}' --average-last 4
    python benchmarks/ranking.py --study studies/shakespeare_cpu.py --no-supernet \\
        --gt benchmarks/data/shakespeare_cpu_ground_truth*.csv   # the free rankers alone
    python benchmarks/ranking.py --from-scores b2_front.jsonl     # the tables again
    python benchmarks/ranking.py --quick                          # CI smoke size
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.stats import kendalltau

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _ranking_features import (  # re-exported: other benchmarks read the tables here
    Row,
    default_width_label,
    free_features,
    load_ground_truth,
    load_params,
    load_tables,
    make_rows,
    merge_ground_truth,
    read_rows,
    rows_from_old_json,
    supernet_config,
    supernet_features,
    write_rows,
)
from _ranking_stats import Cell, cell_taus, cells, cost_quartiles, study_rank_score

from nasflow.proxies import PROXIES, rank_last
from nasflow.ranker import SUITE_PRIOR, Ranker
from nasflow.search import load_study_file
from nasflow.train.stack import Stack

__all__ = ["load_ground_truth", "load_params", "main", "merge_ground_truth"]

ROOT = Path(__file__).resolve().parents[1]
GT = ROOT / "benchmarks/data/mnist1d_ground_truth.csv"
DEFAULT_STUDY = ROOT / "studies/mnist1d.py"

#: Rankers, in the table's order (column name -> what it is).
RANKERS = {
    "acc": "supernet validation accuracy",
    "CE": "supernet validation cross-entropy (lower first)",
    "rank sum": "the study's ranking: rank sum of accuracy and cross-entropy",
    "ranker": "the opt-in ranker (FineTuning(rank_by='ranker')): its suite prior's score",
    "params": "parameter count",
    "FLOPs": "training FLOPs (the cost model's tracer; whole networks where it finds no op)",
    "width": "the width choice",
    "synflow": "synflow at initialisation",
    "NWOT": "NWOT at initialisation",
}
RANK_SUM = "rank sum"
RANKER = "ranker"
STUDY = RANK_SUM
FREE = ("params", "FLOPs", "width", "synflow", "NWOT")
#: The target of issue 41: the study's ranking above the best free baseline by this much.
TARGET = 0.05


def _column(rows: Sequence[Row], key: str) -> list[Any]:
    return [r.get(key) for r in rows]


def prior_scores(by_seed: Sequence[Sequence[Row]]) -> np.ndarray:
    """``(S, n)``: each supernet's architectures scored as a study's ranker scores its
    screened candidates without labels: ``SUITE_PRIOR`` over the features the rows have
    (the width only where every architecture has a numeric one), standardised over the
    architectures scored by that supernet."""
    widths = _column(by_seed[0], "width")
    names = ["supernet_accuracy", "log_params"]
    names += ["width"] if all(isinstance(w, int | float) for w in widths) else []
    prior = {k: SUITE_PRIOR[k] for k in names}
    out = []
    for rows in by_seed:
        acc, logp = _column(rows, "supernet_accuracy"), np.log(_column(rows, "params"))
        # (archs, features); every seed scored the same archs (ranker_scores checks it)
        pool = np.column_stack([acc, logp, widths][: len(names)]).astype(float)
        out.append(Ranker(names, pool, prior=prior).scores(pool))
    return np.array(out)


def ranker_scores(rows: Sequence[Row]) -> tuple[dict[str, np.ndarray], list[int]]:
    """Ranker -> ``(S, n)`` scores (higher predicts better), one row per supernet seed
    (one row for the rankers without a seed), and the seeds.

    Raises:
        SystemExit: Seeds that scored different architectures.
    """
    seeds = sorted({int(r["supernet_seed"]) for r in rows})
    by_seed = [
        sorted((r for r in rows if r["supernet_seed"] == s), key=lambda r: r["index"])
        for s in seeds
    ]
    if any(_column(b, "index") != _column(by_seed[0], "index") for b in by_seed):
        raise SystemExit("the rows' supernet seeds scored different architectures")
    first = by_seed[0]
    out: dict[str, np.ndarray] = {}
    if all(r.get("supernet_accuracy") is not None for r in rows):
        out["acc"] = np.array([_column(b, "supernet_accuracy") for b in by_seed], float)
        losses = [_column(b, "supernet_loss") for b in by_seed]
        if all(v is not None for ls in losses for v in ls):
            out["CE"] = -np.array(losses, float)
        out[RANK_SUM] = np.array(
            [study_rank_score(a, ls) for a, ls in zip(out["acc"], losses, strict=True)]
        )
        out[RANKER] = prior_scores(by_seed)
    out["params"] = np.array([_column(first, "params")], float)
    out["FLOPs"] = np.array([_column(first, "flops")], float)
    widths = _column(first, "width")
    if all(isinstance(w, int | float) for w in widths):
        out["width"] = np.array([widths], float)
    for key, name in (("synflow", "synflow"), ("nwot", "NWOT")):
        if any(key in r for r in rows):
            out[name] = np.array([rank_last(_column(b, key)) for b in by_seed])
    return out, seeds


def _cost_axis(first: Sequence[Row]) -> tuple[list[Any], str]:
    """The cost the quartiles are cut on, and what it is: the predicted training seconds,
    or the training FLOPs in a space the cost model cannot predict."""
    cost = _column(first, "predicted_cost")
    if any(c is None for c in cost):
        return _column(first, "flops"), "training FLOPs (no predicted cost here)"
    return cost, "predicted training seconds of the study's recipe on this machine (cost model)"


def analyse(
    rows: Sequence[Row], width_label: str | None, reps: int, ties: str = "b"
) -> dict[str, Any]:
    """Every cell's taus, intervals and differences from the feature rows."""
    scores, seeds = ranker_scores(rows)
    first = sorted((r for r in rows if r["supernet_seed"] == seeds[0]), key=lambda r: r["index"])
    truth = np.array(_column(first, "test_mean"), float)
    retrains = [
        np.array(_column(first, f"test_seed{k}"), float)
        for k in range(2)
        if f"test_seed{k}" in first[0]
    ]
    cost, basis = _cost_axis(first)
    widths = _column(first, "width") if width_label else None
    found = {
        name: cell_taus(
            scores,
            truth,
            members,
            retrains=retrains,
            study=STUDY,
            free=FREE,
            reps=reps,
            seed=0,
            ties=ties,
        )
        for name, members in cells(cost, widths, width_label).items()
    }
    params = scores["params"][0]
    relation = {
        name: float(np.mean([kendalltau(row, params).statistic for row in scores[name]]))
        for name in ("synflow", "NWOT")
        if name in scores
    }
    return {
        "seeds": seeds,
        "archs": len(first),
        "cells": found,
        "cost_edges": cost_quartiles(cost)[1],
        "ties": ties,
        "cost_basis": basis,
        "proxy_vs_params": relation,
    }


def markdown(found: dict[str, Cell], rankers: Sequence[str]) -> list[str]:
    """The table: one line per cell, one column per ranker, the ceiling and the difference
    between the study's ranking and the best free baseline (or, without a supernet, which
    free baseline is the best)."""
    study = any(c.difference for c in found.values())
    last = f"{STUDY} − best free" if study else "best free"
    head = ["cell", "archs", *rankers, "retrain vs retrain", "oracle (est.)", last]
    head.append("oracle − best free")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, cell in found.items():
        taus = [cell.taus[r].fmt() if r in cell.taus else "" for r in rankers]
        ceiling = cell.ceiling.fmt() if cell.ceiling else ""
        oracle = cell.oracle.fmt() if cell.oracle else ""
        diff = f"{cell.difference.fmt()} ({cell.best_free})" if cell.difference else ""
        diff = diff if study else cell.best_free or ""
        room = cell.headroom.fmt() if cell.headroom else ""
        row = [name, str(cell.n), *taus, ceiling, oracle, diff, room]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def headroom_line(found: dict[str, Cell]) -> str | None:
    """In which of the target's cells even the oracle (an exact ranking of the expected
    accuracy, estimated) is less than ``TARGET`` above the best free baseline: there the
    target cannot be met by any ranking."""
    keys = ["all"] + [f"cost Q{q}" for q in range(1, 5)]
    if any(found[k].headroom is None for k in keys):
        return None
    short = [k for k in keys if found[k].headroom.point < TARGET]  # type: ignore[union-attr]
    return (
        f"headroom (the oracle above the best free baseline; the target needs {TARGET} and "
        f"more): below it in {len(short)}/{len(keys)} cells ({', '.join(short) or 'none'}); "
        + ", ".join(f"{k} {found[k].headroom.point:+.3f}" for k in keys)  # type: ignore[union-attr]
    )


def target_line(found: dict[str, Cell]) -> str | None:
    """Whether the study's ranking beats the best free baseline by ``TARGET`` with the
    interval above 0, globally and in each cost quartile."""
    keys = ["all"] + [f"cost Q{q}" for q in range(1, 5)]
    if any(found[k].difference is None for k in keys):
        return None
    met = [k for k in keys if found[k].difference.point >= TARGET and found[k].difference.low > 0]  # type: ignore[union-attr]
    verdict = "met" if len(met) == len(keys) else "not met"
    return (
        f"target ({STUDY} ≥ best free + {TARGET} tau, 90% interval above 0, globally and in "
        f"each cost quartile): {verdict} ({len(met)}/{len(keys)} cells: "
        f"{', '.join(met) or 'none'})"
    )


def _overrides(args: argparse.Namespace, p: argparse.ArgumentParser, study: Any) -> dict[str, Any]:
    """``--supernet`` plus the shorthand options, which must not contradict it."""
    out = dict(args.supernet or {})
    short: dict[str, Any] = {
        "epochs": args.epochs,
        "lr": args.lr,
        "weight_decay": args.weight_decay,
    }
    if args.split is not None:
        short["split"] = None if args.split == "none" else args.split
        short["split_from"] = args.split_from
    if args.samplers and len(args.samplers) > 1:
        p.error(f"--samplers: one sampler per run, got {args.samplers} (run once per sampler)")
    if args.samplers == ["uniform"]:  # equal compute: M single-path epochs per fair epoch
        m = max(len(c.values) for c in study.space.path_choices)
        short["sampler"] = "uniform"
        short["epochs"] = (short["epochs"] or out.get("epochs") or study.supernet.epochs) * m
    for key, value in short.items():
        if value is None and key != "split":
            continue
        if key in out and out[key] != value:
            p.error(
                f"--{key.replace('_', '-')} {value!r} contradicts --supernet's {key}={out[key]!r}"
            )
        out[key] = value
    return out


def _parser(study: Any) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="B2: the study's ranking against free baselines")
    p.add_argument("--study", type=Path, default=DEFAULT_STUDY, help="the study file")
    p.add_argument(
        "--gt", type=Path, nargs="+", default=[GT], help="ground-truth table per training seed"
    )
    p.add_argument(
        "--seeds", type=int, nargs="+", default=[0, 1, 2], help="supernet (and proxy) seeds"
    )
    p.add_argument(
        "--supernet",
        type=json.loads,
        help="SupernetConfig field overrides in JSON, e.g. '{\"epochs\": 6}' (the warm-up "
        "keeps its share of the epochs)",
    )
    p.add_argument("--epochs", type=int, help="shorthand for --supernet '{\"epochs\": N}'")
    p.add_argument("--lr", type=float, help="shorthand: the supernet's learning rate")
    p.add_argument("--weight-decay", type=float, help="shorthand: the supernet's weight decay")
    p.add_argument("--split", metavar="LABEL", help="shorthand: few-shot split ('none': no split)")
    p.add_argument(
        "--split-from", type=float, default=0.0, help="with --split: fraction of epochs shared"
    )
    p.add_argument(
        "--samplers", nargs="+", choices=("fair", "uniform"), help="uniform: at equal compute"
    )
    p.add_argument(
        "--stack", type=json.loads, help="the supernet's speedup stack as Stack fields in JSON"
    )
    p.add_argument(
        "--frozen-bn-affine", action="store_true", help="batch norms' scale/shift kept at 1/0"
    )
    p.add_argument(
        "--bn-batches", type=int, nargs="+", default=[study.bn_batches], help="BN batches"
    )
    p.add_argument(
        "--no-supernet", action="store_true", help="the free rankers only: train nothing"
    )
    p.add_argument("--proxies", nargs="*", choices=sorted(PROXIES), default=["synflow", "nwot"])
    p.add_argument(
        "--proxy-batch", type=int, default=128, help="training inputs NWOT reads (paper: 128)"
    )
    p.add_argument(
        "--width-label", help=f"the width choice (default: {default_width_label(study)})"
    )
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates")
    p.add_argument(
        "--ties",
        choices=("b", "broken"),
        default="b",
        help="b: Kendall tau-b (a ranking's ties left out of its pairs); broken: each "
        "ranking's ties broken at random, as when it must choose (the width choice has "
        "four values)",
    )
    p.add_argument(
        "--depth-op",
        metavar="OP",
        help="also: what each ranking prefers in depth, tau against the number of "
        "searchable layers whose op is not OP (e.g. skip), beside the tables' own",
    )
    p.add_argument("--limit", type=int, help="use only the first N merged architectures")
    p.add_argument(
        "--average-last",
        type=int,
        default=0,
        metavar="K",
        help="score the supernet's weights averaged over its last K epoch checkpoints",
    )
    p.add_argument("--quick", action="store_true", help="smoke size: 1 seed, 1 epoch, 8 archs")
    p.add_argument(
        "--scores-out", type=Path, help="save the per-architecture features (.jsonl or .csv)"
    )
    p.add_argument("--from-scores", type=Path, help="train nothing: read a --scores-out file")
    p.add_argument(
        "--from-json", type=Path, help="train nothing: the supernets of an earlier B2 --json"
    )
    p.add_argument("--json", type=Path, help="write the cells here")
    return p


def _rows(
    args: argparse.Namespace, p: argparse.ArgumentParser, study: Any, overrides: dict[str, Any]
) -> tuple[list[Row], dict]:
    """Train and score everything the tables need; ``(rows, what was done)``."""
    try:
        stack = None if args.stack is None else Stack.from_dict(args.stack)
    except (TypeError, ValueError) as e:
        p.error(f"--stack {args.stack!r}: {e}")
    table = load_tables(args.gt, args.limit)
    for path, skipped in zip(table.paths, table.skipped, strict=True):
        if skipped:
            print(f"{path}: {skipped} incomplete row(s) left out (a table being written)")
    torch.set_num_threads(1)
    data = study.data()
    supernet: dict[int, tuple[list, list]] = {}
    recipe: dict[int, dict] = {}
    info: dict[str, Any] = {"train_seconds": {}}
    seeds = args.seeds
    if args.from_json:
        supernet, line = rows_from_old_json(args.from_json, args.bn_batches[0])
        print(line)
        seeds = sorted(supernet)
        table = table.head(min(len(v[0]) for v in supernet.values()))
        supernet = {
            s: (a[: len(table.archs)], ls[: len(table.archs)]) for s, (a, ls) in supernet.items()
        }
    elif not args.no_supernet:
        for seed in seeds:
            cfg = supernet_config(study, overrides, seed)
            recipe[seed] = {"overrides": overrides, **cfg.identity()}
            if args.average_last:
                recipe[seed]["average_last"] = args.average_last
            acc, loss, seconds = supernet_features(
                study,
                cfg,
                table.archs,
                data,
                args.bn_batches[0],
                stack,
                args.frozen_bn_affine,
                args.average_last,
            )
            supernet[seed] = (acc, loss)
            info["train_seconds"][seed] = seconds
            print(
                f"supernet seed {seed}: trained {seconds:.0f}s "
                f"({cfg.sampler}, {cfg.epochs} epochs)",
                flush=True,
            )
    free = free_features(
        study, table.archs, data, seeds, args.proxies, args.proxy_batch, args.quick
    )
    for line in free.failures:
        print(line)
    info.update(
        failures=free.failures,
        cost_table=free.cost_source,
        supernet=recipe,
        tables=[str(t) for t in table.paths],
    )
    label = args.width_label or default_width_label(study)
    return make_rows(study.name, table, seeds, free, label, supernet, recipe), info


def _check(args: argparse.Namespace, p: argparse.ArgumentParser, study: Any) -> None:
    """Refuse a bad value before anything runs: one line naming it."""
    if args.supernet is not None and not isinstance(args.supernet, dict):
        p.error(
            f"--supernet must be a JSON object of SupernetConfig fields, got {args.supernet!r}"
        )
    if len(args.bn_batches) != 1 or args.bn_batches[0] < 0:
        p.error(f"--bn-batches: one number >= 0 (search's BN batches), got {args.bn_batches}")
    if args.bootstrap < 1:
        p.error(f"--bootstrap must be >= 1, got {args.bootstrap}")
    if args.proxy_batch < 2:
        p.error(f"--proxy-batch must be >= 2 (NWOT compares inputs), got {args.proxy_batch}")
    if args.average_last < 0:
        p.error(f"--average-last must be >= 0 epochs, got {args.average_last}")
    if args.limit is not None and args.limit < 2:
        p.error(f"--limit must be >= 2 architectures, got {args.limit}")
    labels = study.space.labels
    if args.width_label and not args.from_scores and args.width_label not in labels:
        p.error(
            f"--width-label {args.width_label!r} is not a choice of space "
            f"{study.space.name!r}; its choices: {sorted(labels)}"
        )
    modes = [m for m in ("from_scores", "from_json", "no_supernet") if getattr(args, m)]
    if len(modes) > 1:
        flags = " and ".join("--" + m.replace("_", "-") for m in modes)
        p.error(f"{flags} exclude each other (each says where the supernet scores come from)")


def main(argv: list[str] | None = None) -> int:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--study", type=Path, default=DEFAULT_STUDY)
    study = load_study_file(pre.parse_known_args(argv)[0].study)
    p = _parser(study)
    args = p.parse_args(argv)
    _check(args, p, study)
    if args.quick:
        args.seeds, args.limit = [0], args.limit or 8
        args.bootstrap, args.proxy_batch = min(args.bootstrap, 200), min(args.proxy_batch, 16)
        if args.epochs is None and "epochs" not in (args.supernet or {}):
            args.epochs = 1
    overrides = _overrides(args, p, study)
    label = args.width_label or default_width_label(study)
    if args.from_scores:
        rows, info = read_rows(args.from_scores), {"from_scores": str(args.from_scores)}
        label = args.width_label or rows[0].get("width_label") or label
    else:
        rows, info = _rows(args, p, study, overrides)
        if args.scores_out:
            write_rows(args.scores_out, rows)
            print(f"{len(rows)} feature rows written to {args.scores_out}")
    result = analyse(rows, label, args.bootstrap, args.ties)
    for line in report_lines(rows, result, args.bootstrap):
        print(line)
    if args.depth_op:
        for line in depth_lines(rows, label, args.depth_op, args.bootstrap):
            print(line)
    if args.json:
        args.json.write_text(
            json.dumps(record(rows, result, label, args.bootstrap, info), indent=1)
        )
    return 0


def report_lines(rows: Sequence[Row], result: dict[str, Any], reps: int) -> list[str]:
    """What a reader sees: what was ranked against what, the table, the target, and how
    the proxies relate to the parameter count."""
    found: dict[str, Cell] = result["cells"]
    rankers = [r for r in RANKERS if any(r in c.taus for c in found.values())]
    edges = ", ".join(f"{e:.3g}" for e in result["cost_edges"])
    broken = " (each ranking's ties broken at random)" if result.get("ties") == "broken" else ""
    tables = len([k for k in rows[0] if k.startswith("test_seed")])
    lines = [
        f"\n{rows[0]['ground']}: {result['archs']} architectures; Kendall tau-b{broken} "
        "against the mean "
        f"stand-alone test accuracy of {tables} table(s); supernet rankers and proxies: mean "
        f"over seeds {result['seeds']}; 90% intervals: bootstrap over architectures and seeds "
        f"({reps} replicates). Cost quartiles: {result['cost_basis']}, edges {edges}. "
        "Retrain vs retrain: one table's test accuracy against another's (the rankers face "
        "the tables' mean, which is less noisy, so a ranking without training noise can be "
        "above it). Oracle: an exact ranking of the expected accuracy against the tables' "
        "mean, estimated from retrain vs retrain (Gaussian noise model; an estimate, not a "
        "measurement)."
    ]
    lines.append("columns: " + "; ".join(f"{r}: {RANKERS[r]}" for r in rankers))
    lines += markdown(found, rankers)
    target, room = target_line(found), headroom_line(found)
    lines += [line for line in (target, room) if line]
    relation = result["proxy_vs_params"]
    if relation:
        lines.append(
            "the proxies against the parameter count (all architectures, mean over seeds): "
            + ", ".join(f"tau({k}, params) {v:+.2f}" for k, v in relation.items())
        )
    return lines


#: The rankings whose preference for depth ``--depth-op`` reports, with the tables' own.
DEPTH_RANKERS = ("acc", RANK_SUM, RANKER, "params", "NWOT")


def depth(arch: str | dict[str, Any], op: str) -> int:
    """Searchable layers of ``arch`` (a JSON string or mapping) whose op is not ``op``:
    the choices whose value is a string (ops; widths and other numbers are not layers)."""
    choices = json.loads(arch) if isinstance(arch, str) else arch
    return sum(1 for v in choices.values() if isinstance(v, str) and v != op)


def depth_lines(rows: Sequence[Row], width_label: str | None, op: str, reps: int) -> list[str]:
    """What each ranking prefers in depth: Kendall tau-b of each ranking (mean over
    supernets) against the architectures' depth (layers whose op is not ``op``), in every
    cell, beside the tables' mean test accuracy against the same depth. A ranking above
    the tables' value ranks deep architectures higher than training them does.

    Raises:
        SystemExit: Every architecture has the same depth (``op`` names no op of the
            space, or every layer has it).
    """
    scores, seeds = ranker_scores(rows)
    first = sorted((r for r in rows if r["supernet_seed"] == seeds[0]), key=lambda r: r["index"])
    d = np.array([depth(r["arch"], op) for r in first], float)
    if len(set(d.tolist())) < 2:
        raise SystemExit(f"--depth-op {op!r}: every architecture has the same depth")
    named = {"tables": np.array([_column(first, "test_mean")], float)}
    named.update({k: scores[k] for k in DEPTH_RANKERS if k in scores})
    cost, _ = _cost_axis(first)
    widths = _column(first, "width") if width_label else None
    head = ["cell", "archs", *(f"{k} ~ depth" for k in named)]
    lines = [
        f"\nwhat each ranking prefers in depth: Kendall tau-b against the layers whose op is "
        f"not {op!r} (0-{int(d.max())}); 'tables': the tables' mean test accuracy; a ranking "
        "above it favours depth more than training does",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for name, members in cells(cost, widths, width_label).items():
        cell = cell_taus(named, d, members, reps=reps, seed=0)
        taus = [cell.taus[k].fmt() for k in named]
        lines.append("| " + " | ".join([name, str(cell.n), *taus]) + " |")
    return lines


def record(
    rows: Sequence[Row], result: dict[str, Any], label: str | None, reps: int, info: dict
) -> dict[str, Any]:
    """The ``--json`` record: every cell's taus as ``[point, low, high]``."""
    found: dict[str, Cell] = result["cells"]
    return {
        "ground": rows[0]["ground"],
        "archs": result["archs"],
        "seeds": result["seeds"],
        "width_label": label,
        "bootstrap": reps,
        "cost_edges": [float(e) for e in result["cost_edges"]],
        "cost_basis": result["cost_basis"],
        "retrain_tau": [found["all"].ceiling.point] if found["all"].ceiling else [],
        "proxy_vs_params": result["proxy_vs_params"],
        "cells": {
            name: {
                "n": c.n,
                "taus": {r: t.to_list() for r, t in c.taus.items()},
                "ceiling": c.ceiling.to_list() if c.ceiling else None,
                "best_free": c.best_free,
                "difference": c.difference.to_list() if c.difference else None,
                "oracle": c.oracle.to_list() if c.oracle else None,
                "headroom": c.headroom.to_list() if c.headroom else None,
            }
            for name, c in found.items()
        },
        **info,
    }


if __name__ == "__main__":
    sys.exit(main())
