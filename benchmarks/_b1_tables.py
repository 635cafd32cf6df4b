"""B1's tables: the ground truth, its replays, the hypervolume and the success tables
(``search_efficiency.py`` runs the methods; these read what they recorded)."""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import optuna


@dataclass
class GroundTruth:
    """Ground-truth tables of one sample, trained from one or more seeds.

    Attributes:
        archs: The architectures (JSON), in the tables' order.
        val: ``(n_tables, n_archs)`` final validation accuracies.
        test: ``(n_tables, n_archs)`` final test accuracies.
        cpu: ``(n_tables, n_archs)`` training CPU-seconds (``nan`` where not recorded).
        val_curves: ``[table][arch]`` per-epoch validation accuracy (empty if absent).
        cpu_curves: ``[table][arch]`` per-epoch training CPU-seconds (empty if absent).
        params: ``(n_archs,)`` trainable parameters (``None``: not recorded).
    """

    archs: list[str]
    val: np.ndarray
    test: np.ndarray
    cpu: np.ndarray
    val_curves: list[list[list[float]]]
    cpu_curves: list[list[list[float]]]
    params: np.ndarray | None = None

    @property
    def best(self) -> float:
        """The best per-architecture mean test accuracy."""
        return float(self.test.mean(0).max())

    @property
    def has_curves(self) -> bool:
        return all(c for t in self.val_curves for c in t)


def load_ground_truth(paths: list[Path]) -> GroundTruth:
    """Read tables of the same sample (rows matched by ``index``; only common ones kept)."""
    tables = []
    for path in paths:
        with path.open(newline="") as f:
            rows = {int(r["index"]): r for r in csv.DictReader(f)}
        if not rows:
            raise SystemExit(f"{path} holds no rows; run benchmarks/ground_truth.py first")
        tables.append(rows)
    common = sorted(set.intersection(*(set(t) for t in tables)))
    for i in common:
        if len({t[i]["arch"] for t in tables}) != 1:
            raise SystemExit(f"ground-truth tables disagree on architecture {i}")

    def col(name: str) -> np.ndarray:
        return np.array(
            [[float(t[i].get(name) or "nan") for i in common] for t in tables], dtype=float
        )

    def curves(name: str) -> list[list[list[float]]]:
        return [[json.loads(t[i].get(name) or "[]") for i in common] for t in tables]

    return GroundTruth(
        [tables[0][i]["arch"] for i in common],
        col("val_accuracy"),
        col("test_accuracy"),
        col("train_cpu_seconds"),
        curves("val_curve"),
        curves("cpu_curve"),
        col("params")[0] if all("params" in t[common[0]] for t in tables) else None,
    )


def best_in_sample(path: Path) -> tuple[float, int]:
    gt = load_ground_truth([path])
    return gt.best, len(gt.archs)


def resampled_random(path: Path, threshold: float, orderings: int, seed: int) -> list[int | None]:
    """Random search replayed on the ground-truth table itself: for each of ``orderings``
    random orders of its architectures, how many stand-alone trainings until the incumbent
    (best validation accuracy; the first of a tie) passes ``threshold`` on test, or
    ``None`` if no prefix of the whole sample does."""
    with path.open(newline="") as f:
        rows = [(float(r["val_accuracy"]), float(r["test_accuracy"])) for r in csv.DictReader(f)]
    rng = np.random.default_rng(seed)
    out: list[int | None] = []
    for _ in range(orderings):
        best_val, best_test, hit = -1.0, 0.0, None
        for k, i in enumerate(rng.permutation(len(rows)), start=1):
            if rows[i][0] > best_val:
                best_val, best_test = rows[i]
            if best_test >= threshold:
                hit = k
                break
        out.append(hit)
    return out


def replay_curve(
    study: optuna.Study,
    trial: optuna.Trial,
    curve: Sequence[float],
    costs: Sequence[float],
    epochs: int,
    spent: float,
) -> tuple[float, bool]:
    """Replay one table architecture's training as ``trial``: each epoch's CPU-seconds
    added to ``spent`` and its validation accuracy reported until the study's pruner
    stops it (told PRUNED) or the last epoch (told COMPLETE with it); the CPU-seconds
    spent then, and whether it was pruned."""
    for e in range(1, epochs + 1):
        spent += costs[e - 1]
        if e < epochs:
            trial.report(curve[e - 1], e)
            if trial.should_prune():
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                return spent, True
    study.tell(trial, curve[-1])
    return spent, False


def replay(
    gt: GroundTruth, threshold: float, method: str, seed: int, budget: float
) -> tuple[float | None, int, list[dict]]:
    """One replayed run of ``"random"`` or ``"hyperband"`` (random search under Optuna's
    ``HyperbandPruner``, the same settings as the ``optuna`` method) on the table.

    Each trial draws the next architecture of a seeded permutation of the sample and one
    of its tables at random; its cost is the recorded CPU-seconds of the epochs it trained.
    The run goes on to ``budget`` after its success, as B1's real runs of the other
    methods do (a replay that stopped there held its hypervolume flat from its success on,
    which understated the replayed peers' anytime curves until 2026-11-28).
    Returns ``(CPU-s to success or None, trainings started until success or budget,
    fully trained events until the budget)``.
    """
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(gt.archs))
    which = rng.integers(len(gt.val), size=len(gt.archs))
    epochs = len(gt.val_curves[0][0])
    spent, events, success = 0.0, [], None
    best_val, best_test = -1.0, 0.0

    def finish(i: int) -> None:
        nonlocal best_val, best_test, success
        t = which[i]
        events.append(
            {"cpu": spent, "val": gt.val[t, i], "test": gt.test[t, i], "train_cpu": gt.cpu[t, i]}
        )
        if gt.val[t, i] > best_val:
            best_val, best_test = gt.val[t, i], gt.test[t, i]
        if success is None and best_test >= threshold:
            success = spent

    until_success: int | None = None
    if method == "random":
        for n, i in enumerate(order, start=1):
            spent += sum(gt.cpu_curves[which[i]][i])
            finish(i)
            if success is not None and until_success is None:
                until_success = n
            if spent >= budget:
                return success, until_success or n, events
        return success, until_success or len(order), events
    study = optuna.create_study(
        direction="maximize",
        # Hyperband assigns trials to brackets by hashing the study name: name it, or the
        # replay is not reproducible.
        study_name=f"replay-{seed}",
        sampler=optuna.samplers.RandomSampler(seed=seed),
        pruner=optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=epochs, reduction_factor=3
        ),
    )
    started = 0
    for i in order:
        trial = study.ask()
        started += 1
        curve, costs = gt.val_curves[which[i]][i], gt.cpu_curves[which[i]][i]
        spent, pruned = replay_curve(study, trial, curve, costs, epochs, spent)
        if not pruned:
            finish(i)
        if success is not None and until_success is None:
            until_success = started
        if spent >= budget:
            break
    return success, until_success or started, events


def hypervolume_2d(points: np.ndarray, ref: tuple[float, float]) -> float:
    """Area dominated by ``(accuracy up, cost down)`` points, bounded by ``ref`` =
    (lowest accuracy, highest cost). Optuna's hypervolume code is private
    (``optuna._hypervolume``), and the 2-D case is a sort and a sum."""
    pts = [(a, c) for a, c in points if a > ref[0] and c < ref[1]]
    pts.sort(key=lambda p: p[1])  # cheapest first
    area, best_acc = 0.0, ref[0]
    for i, (acc, cost) in enumerate(pts):
        best_acc = max(best_acc, acc)
        nxt = pts[i + 1][1] if i + 1 < len(pts) else ref[1]
        area += (best_acc - ref[0]) * (nxt - cost)
    return area


def hv_reference(gt: GroundTruth) -> tuple[tuple[float, float], float]:
    """The reference point and the ground-truth front's hypervolume (per-arch means)."""
    acc, cost = gt.test.mean(0), gt.cpu.mean(0)
    ref = (float(acc.min()), float(1.1 * np.nanmax(cost)))
    return ref, hypervolume_2d(np.stack([acc, cost], 1), ref)


def hv_curve(events: list[dict], budgets: list[float], gt: GroundTruth) -> list[float]:
    """The run's hypervolume / the ground truth's, after each CPU budget."""
    ref, total = hv_reference(gt)
    out = []
    for b in budgets:
        pts = np.array([(e["test"], e["train_cpu"]) for e in events if e["cpu"] <= b])
        out.append(hypervolume_2d(pts, ref) / total if len(pts) else 0.0)
    return out


def table(runs: list[dict], budget: float) -> str:
    """Markdown: per method, successes, CPU-s to success, ratio to nasflow."""
    by: dict[str, list[dict]] = {}
    for r in runs:
        by.setdefault(r["method"], []).append(r)

    def cost(r: dict) -> float:  # a failed run counts as its whole budget (a lower bound)
        return r["success_cpu"] if r["success_cpu"] is not None else max(r["cpu"], budget)

    ref = by.get("nasflow")
    lines = [
        "| method | seeds | succeeded | CPU-s to success, per seed | median | "
        "median / nasflow | trained (fine-tuned or scratch) | incumbent test acc. at stop |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for method, rs in by.items():
        rs.sort(key=lambda r: r["seed"])
        costs = [cost(r) for r in rs]
        cells = [
            f"{c:.0f}" if r["success_cpu"] is not None else f">{c:.0f}"
            for c, r in zip(costs, rs, strict=True)
        ]
        med = statistics.median(costs)
        ratio = med / statistics.median(cost(r) for r in ref) if ref else float("nan")
        n_ok = sum(r["success_cpu"] is not None for r in rs)
        tests = [r["incumbent_test"] for r in rs if r["incumbent_test"] is not None]
        acc = f"{100 * statistics.mean(tests):.2f}" if tests else "—"
        if len(tests) > 1:
            acc += f" ± {100 * statistics.stdev(tests):.2f}"
        lines.append(
            f"| {method} | {len(rs)} | {n_ok}/{len(rs)} | {', '.join(cells)} | "
            f"{'' if n_ok > len(rs) / 2 else '>'}{med:.0f} | ×{ratio:.2f} | "
            f"{statistics.mean(r['trained'] for r in rs):.1f} | {acc} |"
        )
    return "\n".join(lines)


def rescore(run: dict, threshold: float) -> dict:
    """A stored run's success against another threshold (its events are kept as run)."""
    best_val, best_test, success = -1.0, 0.0, None
    for e in run["events"]:
        if e["val"] > best_val:
            best_val, best_test = e["val"], e["test"]
        if best_test >= threshold:
            success = e["cpu"]
            break
    return {**run, "success_cpu": success}


def clock_ratio(
    run: dict, gt: GroundTruth, params_of: Callable[[str], int]
) -> tuple[float, int, int]:
    """How many times slower the run's clock was than the table's: the measured CPU-seconds
    of its trainings from scratch over the table's mean CPU-seconds for the same
    architectures, exact where the table holds the architecture, else from a log-log fit
    of the table's CPU-seconds on parameters (``params_of``: an architecture's JSON to its
    parameter count). Fine-tuned models are left out (their cost is an estimate from their
    epochs). Returns the ratio (NaN: nothing to compare) and how many trainings were
    exact and fitted."""
    mean_cpu = gt.cpu.mean(0)
    cost = {_key(a): float(c) for a, c in zip(gt.archs, mean_cpu, strict=True)}
    fit = None
    if gt.params is not None and (gt.params > 0).all():
        fit = np.polyfit(np.log(gt.params), np.log(mean_cpu), 1)
    spent = table_cpu = 0.0
    exact = fitted = 0
    for e in run["events"]:
        if "fine-tuned" in e.get("note", ""):
            continue
        key = _key(e["arch"])
        if key in cost:
            exact += 1
            c = cost[key]
        elif fit is not None:
            fitted += 1
            c = float(np.exp(np.polyval(fit, np.log(params_of(e["arch"])))))
        else:
            continue
        spent += e["train_cpu"]
        table_cpu += c
    return (spent / table_cpu if table_cpu > 0 else float("nan")), exact, fitted


def on_table_clock(run: dict, ratio: float) -> dict:
    """The run with every CPU-second (its events' times and training costs, its total)
    divided by ``ratio`` (:func:`clock_ratio`): what it would have read on the table's
    clock, assuming the whole run was slowed alike."""
    events = [
        {**e, "cpu": e["cpu"] / ratio, "train_cpu": e["train_cpu"] / ratio} for e in run["events"]
    ]
    out = {**run, "events": events, "clock_ratio": ratio}
    if "cpu" in run:  # a B1 run's total (paired rows hold none)
        out["cpu"] = run["cpu"] / ratio
    return out


def table_clock(runs: list[dict], gt: GroundTruth, spec: Any) -> list[dict]:
    """Each run on the table's clock (:func:`on_table_clock`), its ratio printed:
    runs measured on a faster or slower machine than the table's, against the replays."""
    from nasflow.cost import CostModel
    from nasflow.space import Arch

    model = CostModel.for_space(
        spec.space, batch_size=spec.train.batch_size, storage_url="sqlite://", share=False
    )
    out = []
    for r in runs:
        ratio, exact, fitted = clock_ratio(r, gt, lambda a: model.params(Arch.from_json(a)))
        if not math.isfinite(ratio):
            raise SystemExit(f"{r['method']} seed {r['seed']}: no training to set its clock by")
        print(
            f"{r['method']} seed {r['seed']}: clock x{ratio:.2f} the table's "
            f"({exact} trainings in the table, {fitted} costed by parameters)"
        )
        out.append(on_table_clock(r, ratio))
    return out


def study_end(run: dict, retrain_top: int) -> float | None:
    """The CPU-second at which the study itself stopped training: in a B1 run (which
    retrains on to its budget after the study) the end of its ``retrain_top``-th retrain
    from scratch, phase 3's count (``None``: fewer); in a paired row, its last trained
    model's."""
    retrains = [e for e in run["events"] if "retrain rank" in e.get("note", "")]
    if "cpu" in run:  # a B1 run
        return retrains[retrain_top - 1]["cpu"] if len(retrains) >= retrain_top else None
    return max((e["cpu"] for e in run["events"]), default=None)


def without_finetuning(run: dict) -> dict:
    """A B1 nasflow run replayed as if the study had skipped its fine-tuning phase: its
    fine-tuned models dropped, its retrains from scratch (B1's, in B1's order) moved earlier
    by that phase's seconds (``phases["finetune"]``, on the run's clock: apply after
    :func:`on_table_clock`, which keeps the phases as measured, so they are divided here by
    the run's ``clock_ratio``). An estimate from a recorded run, not a run: its first
    retrain is still the one the fine-tuning chose."""
    shift = run["phases"].get("finetune", 0.0) / run.get("clock_ratio", 1.0)
    events = [
        {**e, "cpu": e["cpu"] - shift} if "retrain rank" in e.get("note", "") else e
        for e in run["events"]
        if "fine-tuned" not in e.get("note", "")
    ]
    return {**run, "events": events}


def _key(arch: str) -> str:
    return json.dumps(json.loads(arch), sort_keys=True)


def replay_summary(
    gt: GroundTruth, threshold: float, budget: float, n: int, budgets: list[float]
) -> tuple[list[str], dict]:
    """Lines and a record for ``n`` replayed runs of random search with and without
    Hyperband on the table."""
    lines, record = [], {}
    for method in ("random", "hyperband"):
        cost, started, hv = [], [], []
        for seed in range(n):
            success, k, events = replay(gt, threshold, method, seed, budget)
            cost.append(success if success is not None else budget)
            started.append(k)
            hv.append(hv_curve(events, budgets, gt))
        ok = sum(c < budget for c in cost)
        q = np.percentile(cost, [25, 50, 75])
        record[method] = {
            "runs": n,
            "succeeded": ok,
            "cpu_quartiles": q.tolist(),
            "hv_median": np.median(hv, 0).tolist() if budgets else [],
        }
        lines.append(
            f"replayed {method:9s} ({n} seeds on the table): {ok}/{n} succeed within "
            f"{budget:.0f} CPU-s; CPU-s to success median {q[1]:.0f} (quartiles "
            f"{q[0]:.0f}-{q[2]:.0f}, failures counted as the budget); trainings started "
            f"median {np.median(started):.0f}"
        )
    return lines, record


def hv_table(runs: list[dict], replays: dict, budgets: list[float], gt: GroundTruth) -> str:
    """Markdown: median hypervolume ratio per method at each CPU budget."""
    by: dict[str, list[list[float]]] = {}
    for r in runs:
        by.setdefault(r["method"], []).append(hv_curve(r["events"], budgets, gt))
    head = "| method | runs | " + " | ".join(f"HV @ {b:.0f} CPU-s" for b in budgets) + " |"
    lines = [head, "|---|---:|" + "---:|" * len(budgets)]
    for method, curves in by.items():
        med = np.median(curves, 0)
        lines.append(f"| {method} | {len(curves)} | " + " | ".join(f"{v:.3f}" for v in med) + " |")
    for method, rec in replays.items():
        if rec["hv_median"]:
            lines.append(
                f"| {method} (replayed) | {rec['runs']} | "
                + " | ".join(f"{v:.3f}" for v in rec["hv_median"])
                + " |"
            )
    return "\n".join(lines)
