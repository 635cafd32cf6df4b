"""Issue 43.4, the regime measured: where one-shot overtakes Hyperband at x1, x10, x100 cost.

The budget where the one-shot study overtakes random search and Optuna TPE, both with
Hyperband, when every stand-alone training costs x1, x10 and x100.

Nothing is trained here: the baselines are replayed on each ground's random-architecture
table (``benchmarks/ground_truth.py``: per-epoch validation curves and per-epoch training
CPU-seconds of every architecture, one file per training seed), and the study's side is
read from its measured end-to-end runs (JSON lines of ``benchmarks/paired.py`` and
``benchmarks/suite_runs.py``). Scale ``s`` stands for larger data or longer recipes: the
same measured curves, every stand-alone training's CPU cost multiplied by ``s``.

Baselines (replayed, ``--replays`` seeds each; every trial trains one architecture of the
table, its curves drawn from one of the table's training seeds at random):

- ``random+HB``: B1's replay (``_b1_tables.replay``): a seeded permutation of the table
  under Optuna's ``RandomSampler`` and ``HyperbandPruner`` (min resource 1 epoch, max the
  recipe's epochs, reduction factor 3), each epoch's validation accuracy reported from the
  table's curve and its CPU-seconds taken from the table's ``cpu_curve``;
- ``TPE+HB``: Optuna's ``TPESampler`` (defaults, seeded) with the same pruner, over one
  categorical parameter per architecture choice (the values the table holds); a proposal
  not in the table is answered by the table architecture nearest to it (fewest differing
  choices, ties drawn at random) among those not tried yet: the proposal is told FAIL and
  that architecture enqueued (a FAIL costs nothing and TPE ignores it).

Every completed training is an event at the replay's cumulative CPU-seconds; the
incumbent is the completed architecture with the best validation accuracy (of the training
drawn) and is scored by its test accuracy, the mean over the table's training seeds
(``--score drawn``: the drawn training's own, as the study's models are scored by their one
training's). The choices of both replays depend on validation accuracies only, never on
costs, so the replay at scale ``s`` is the replay at scale 1 with every event time
multiplied by ``s`` (``tests/benchmarks/test_regime.py`` replays a table with its costs
multiplied and checks this); the benchmark replays once and multiplies.

The study (measured runs, the study as each file's command ran it): its anchors (trained
from scratch, each ready at its recorded process CPU-seconds), its fine-tuned ready models
(at their recorded CPU-seconds) and its retrains (at the run's end, as the record keeps no
time for them); before the run ends its incumbent is the best-validating model ready so
far, from the run's end on it is the model the run keeps (``kept_model``). Its CPU timeline
is split at two measured marks: ``tA``, the last anchor's ready CPU-seconds, and ``c1``, the
first search-derived model's (fine-tuned or retrained). The one-shot fixed cost

    F = min(c1 - tA, (supernet + search + trust wall seconds) x run CPU-s / run wall-s)

is the one-shot phases' wall time at the run's own CPU/wall ratio, and never more than the
CPU-seconds between the last anchor and the first search-derived model (which also hold
the first fine-tuning epochs). Everything else (the anchors, fine-tuning, retrains) is
stand-alone training. At scale ``s`` a model ready at ``t`` CPU-seconds into the run is
ready at

- ``longer recipes`` (F fixed: the supernet's and the screening's recipe does not
  lengthen): ``s * t - (s - 1) * clip(t - tA, 0, F)``;
- ``larger data`` (F scales too): ``s * t``.

Clock: the tables were trained at one speed, the runs on other days under other settings
(the paired runs: fp32 with deterministic algorithms beside other jobs; B6: the bf16 stack).
Each run's timeline is divided by its clock ratio ``kappa``: the CPU-seconds between
consecutive anchors' ready times (training plus the anchor's evaluation) over the table's
mean training CPU-seconds of the same architectures (an anchor the table does not hold,
as with every search seed but 0, costed by a log-log fit of the table's CPU-seconds on
parameters); a run without two anchors borrows the median ``kappa`` of its file's runs
(same machine and settings), else stays uncalibrated (``kappa = 1``, said so). The
uncalibrated result is printed as well.

Output (markdown), per ground and scale:

- the headline table: the budget (CPU-seconds, table clock) from which the study's
  incumbent test accuracy (median over its runs) is at least the baseline's median over
  the replay seeds at every later budget up to the grid's end, under each variant; ``never
  within the grid`` where it is not so at the grid's end; ``no study runs`` where none of
  the ``--runs`` files holds a run on that ground. A budget at or after the baseline's
  median *table used up* time (its last completed training: a replay cannot go past its
  table, a real search would) is marked ``(table used up)``;
- at the budget by which every study run has kept its model: the study's kept model and
  each baseline's incumbent there (median over runs and replays);
- the headline on each run's own clock (``kappa = 1``);
- per ground, the quality of each method at the grid budgets (``s`` x ``--grid``): the
  incumbent's test accuracy in percent and, in brackets, the share of the table's
  architectures (mean test over seeds) strictly below it; ``—``: no model yet;
- the study runs read (``--runs``; default: the paired benchmark's ``shipped`` rows and
  B6's batches of the shipped study): file, seed, ``kappa``, ``tA``, ``c1``, ``F``, run
  CPU-seconds, kept test accuracy (all CPU-seconds on the run's own clock).

Usage::

    python benchmarks/regime.py                                   # every ground, x1 x10 x100
    python benchmarks/regime.py --grounds proving hard --scales 1 10 100 --replays 21 \\
        --out /tmp/regime.md
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import optuna

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _b1_tables import GroundTruth, replay, replay_curve
from _paired_stats import GroundTable

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"

#: Ground -> (its table files, as globs under ``benchmarks/data``; the study file its runs
#: name).
GROUNDS: dict[str, tuple[tuple[str, ...], str]] = {
    "proving": (("mnist1d_front_ground_truth*.csv",), "studies/mnist1d_front.py"),
    **{
        name: ((f"suite/{name}_seed*.csv",), f"benchmarks/suite/{name}.py")
        for name in ("hard", "noisy", "reseeded", "scale", "scarce", "shift", "shuffled")
    },
    "cifar10": (("cifar10_cpu_ground_truth*.csv",), "studies/cifar10_cpu.py"),
    "shakespeare": (("shakespeare_cpu_ground_truth*.csv",), "studies/shakespeare_cpu.py"),
}
#: The measured runs of the shipped study: the paired runs (rows of config ``shipped``) and
#: B6's batches of the study as shipped with four retrains (2026-11-26/27).
DEFAULT_RUNS = (
    "paired_rungs_shipped.jsonl",
    "paired_rungs_shipped_hard.jsonl",
    "b6_retrain4.jsonl",
    "b6_retrain4_rerun.jsonl",
    "b6_seeds345_shared.jsonl",
    "b6_cifar10_retrain4.jsonl",
    "b6_cifar10_seeds345_shared.jsonl",
)
DEFAULT_GRID = (25.0, 50.0, 100.0, 200.0, 400.0, 800.0, 1600.0, 3200.0, 6400.0)
BASELINES = ("random+HB", "TPE+HB")
VARIANTS = ("longer recipes", "larger data")
REDUCTION_FACTOR = 3  # B1's HyperbandPruner settings (``_b1_tables.replay``)


# ---------------------------------------------------------------------------- tables
@dataclass(frozen=True)
class Table:
    """A ground's table as the replays read it.

    Attributes:
        gt: Its rows (B1's :class:`GroundTruth`), ``test`` the mean over training seeds.
        seeds: The training seeds (files) read.
        params: ``(n_archs,)`` parameter counts (0 where a file does not record them).
        drawn_test: ``(n_tables, n_archs)`` each training's own test accuracy.
    """

    gt: GroundTruth
    seeds: int
    params: np.ndarray
    drawn_test: np.ndarray

    def scored(self, score: str) -> GroundTruth:
        """The rows with a completed training scored by the mean test accuracy over the
        training seeds (``"mean"``) or by the drawn training's own (``"drawn"``)."""
        if score == "mean":
            return self.gt
        if score == "drawn":
            return replace(self.gt, test=self.drawn_test)
        raise ValueError(f"score must be 'mean' or 'drawn', got {score!r}")


def load_table(paths: Sequence[Path]) -> Table:
    """A ground's table files as one :class:`Table` whose ``test`` is the mean over the
    training seeds (every seed's row holds it).

    Rows are matched by ``index``; kept are those every file holds with a readable
    validation curve and CPU curve of the same length (a file being written may end
    mid-row). Raises ``ValueError`` where fewer than two rows are left.
    """
    if not paths:
        raise ValueError("no table files")
    tables = []
    for path in paths:
        rows: dict[int, dict[str, str]] = {}
        with Path(path).open(newline="") as f:
            for r in csv.DictReader(f):
                try:
                    val, cpu = json.loads(r["val_curve"]), json.loads(r["cpu_curve"])
                    float(r["test_accuracy"])
                    index = int(r["index"])
                except (KeyError, TypeError, ValueError):
                    continue
                if val and len(val) == len(cpu):
                    rows[index] = r
        tables.append(rows)
    common = sorted(set.intersection(*(set(t) for t in tables))) if tables else []
    if len(common) < 2:
        raise ValueError(f"{[str(p) for p in paths]}: fewer than two complete rows")
    for i in common:
        if len({t[i]["arch"] for t in tables}) != 1:
            raise ValueError(f"the tables {[str(p) for p in paths]} disagree on row {i}")

    def col(name: str) -> np.ndarray:
        return np.array([[float(t[i][name]) for i in common] for t in tables], dtype=float)

    def curves(name: str) -> list[list[list[float]]]:
        return [[json.loads(t[i][name]) for i in common] for t in tables]

    test = col("test_accuracy")
    gt = GroundTruth(
        archs=[tables[0][i]["arch"] for i in common],
        val=col("val_accuracy"),
        test=np.broadcast_to(test.mean(0), test.shape).copy(),
        cpu=col("train_cpu_seconds"),
        val_curves=curves("val_curve"),
        cpu_curves=curves("cpu_curve"),
    )
    params = np.array([int(tables[0][i].get("params") or 0) for i in common])
    return Table(gt, len(tables), params, test)


def scaled(gt: GroundTruth, s: float) -> GroundTruth:
    """The table with every stand-alone training's CPU cost multiplied by ``s``."""
    return replace(
        gt,
        cpu=gt.cpu * s,
        cpu_curves=[[[c * s for c in curve] for curve in t] for t in gt.cpu_curves],
    )


def share_table(name: str, gt: GroundTruth) -> GroundTable:
    """The table as the paired benchmark's measures read it (the share beaten: of the
    architectures' mean test accuracy over the training seeds)."""
    return GroundTable(name, gt.test.mean(0), gt.cpu.mean(0), len(gt.test), "train_cpu_seconds")


def _arch_key(arch: str) -> str:
    return json.dumps(json.loads(arch), sort_keys=True)


# ---------------------------------------------------------------------------- baselines
@dataclass(frozen=True)
class Event:
    """A fully trained model: ready at ``cpu`` CPU-seconds, its accuracies."""

    cpu: float
    val: float
    test: float


def replay_random_hb(gt: GroundTruth, seed: int) -> list[Event]:
    """Random search + Optuna's ``HyperbandPruner`` on the table (B1's replay), to the end
    of the table; its completed trainings."""
    _, _, events = replay(gt, math.inf, "hyperband", seed, math.inf)
    return [Event(float(e["cpu"]), float(e["val"]), float(e["test"])) for e in events]


def replay_tpe_hb(gt: GroundTruth, seed: int) -> list[Event]:
    """Optuna's ``TPESampler`` + ``HyperbandPruner`` on the table, to the end of the table
    (each proposal answered by the nearest untried table architecture); its completed
    trainings."""
    rng = np.random.default_rng(seed)
    which = rng.integers(len(gt.val), size=len(gt.archs))
    archs = [json.loads(a) for a in gt.archs]
    keys = sorted({k for a in archs for k in a})
    choices = {k: sorted({a[k] for a in archs if k in a}, key=repr) for k in keys}
    dists = {k: optuna.distributions.CategoricalDistribution(v) for k, v in choices.items()}
    # codes[i, j]: the index of architecture i's value of choice j (-1: it has none).
    codes = np.array(
        [[choices[k].index(a[k]) if k in a else -1 for k in keys] for a in archs], dtype=int
    )
    epochs = len(gt.val_curves[0][0])
    study = optuna.create_study(
        direction="maximize",
        study_name=f"replay-tpe-{seed}",  # Hyperband's brackets hash the study name
        sampler=optuna.samplers.TPESampler(seed=seed),
        pruner=optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=epochs, reduction_factor=REDUCTION_FACTOR
        ),
    )
    untried = np.ones(len(archs), dtype=bool)
    spent, events = 0.0, []
    while untried.any():
        trial = study.ask(dists)
        proposal = np.array([choices[k].index(trial.params[k]) for k in keys])
        left = np.flatnonzero(untried)
        distance = (codes[left] != proposal).sum(1)
        i = int(rng.choice(left[distance == distance.min()]))
        if distance.min() > 0:  # not a table architecture: ask for the nearest instead
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            study.enqueue_trial({k: archs[i][k] for k in keys if k in archs[i]})
            trial = study.ask(dists)
        untried[i] = False
        t = which[i]
        curve, costs = gt.val_curves[t][i], gt.cpu_curves[t][i]
        spent, pruned = replay_curve(study, trial, curve, costs, epochs, spent)
        if not pruned:
            events.append(Event(spent, float(gt.val[t, i]), float(gt.test[t, i])))
    return events


REPLAYS = {"random+HB": replay_random_hb, "TPE+HB": replay_tpe_hb}


def incumbent_curve(events: Iterable[Event], budgets: np.ndarray) -> np.ndarray:
    """The incumbent's test accuracy at each budget: the best validation accuracy among the
    events ready by then (the first of a tie); NaN where none is."""
    out = np.full(len(budgets), np.nan)
    best_val = -math.inf
    for e in sorted(events, key=lambda e: e.cpu):
        if e.val > best_val:
            best_val = e.val
            out[budgets >= e.cpu] = e.test
    return out


# ---------------------------------------------------------------------------- the study
@dataclass
class StudyRun:
    """One measured run of the study on a ground (CPU-seconds on the run's own clock).

    Attributes:
        ground: The ground's name.
        source: The file it was read from.
        seed: The search seed.
        events: Its trained models, each ready at CPU-seconds into the run.
        anchors: ``(ready CPU-seconds, architecture, parameters)`` of its anchors, in
            ready order.
        anchors_end: ``tA``, the last anchor's ready CPU-seconds (0 without anchors).
        first_search: ``c1``, the first search-derived model's ready CPU-seconds.
        one_shot: ``F``, the one-shot phases' CPU-seconds (see the module docstring).
        run_cpu: The run's CPU-seconds (its kept model is ready then).
        kept_test: The kept model's test accuracy (``None``: the run kept none).
        kappa: The run's clock over the table's (its timeline is divided by it).
        kappa_from: How ``kappa`` was found.
    """

    ground: str
    source: str
    seed: int
    events: list[Event]
    anchors: list[tuple[float, str, int]]
    anchors_end: float
    first_search: float
    one_shot: float
    run_cpu: float
    kept_test: float | None
    kappa: float = 1.0
    kappa_from: str = "uncalibrated"


def study_ground(study: str) -> str | None:
    """The ground whose study file is ``study`` (``None``: none of :data:`GROUNDS`)."""
    return next((g for g, (_, s) in GROUNDS.items() if s == study), None)


def run_from_row(row: dict, source: str) -> StudyRun | None:
    """A :class:`StudyRun` from a paired row (with its ``trained`` list) or a B6 row;
    ``None`` for a header, a configuration other than ``shipped``, a ground not in
    :data:`GROUNDS` or a row without its run's CPU-seconds."""
    if row.get("kind", "run") != "run" or row.get("config", "shipped") != "shipped":
        return None
    ground = study_ground(str(row.get("study")))
    run_cpu = row.get("run_cpu_s")
    if ground is None or not run_cpu:
        return None
    run_cpu = float(run_cpu)

    def at(value: float | None) -> float:
        return run_cpu if value is None else min(float(value), run_cpu)

    anchors = sorted(
        (a for a in row.get("anchors") or [] if a.get("test_accuracy") is not None),
        key=lambda a: at(a.get("ready_cpu_seconds")),
    )
    events = [
        Event(at(a.get("ready_cpu_seconds")), a["val_accuracy"], a["test_accuracy"])
        for a in anchors
    ]
    search: list[Event] = []
    if "trained" in row:  # the paired benchmark's records (benchmarks/_trained.py)
        search = [
            Event(at(m["ready_cpu"]), m["val"], m["test"])
            for m in row["trained"]
            if m["kind"] != "anchor"
        ]
    else:  # B6: the fine-tuned ready models; its retrains' records keep no time
        for c in (row.get("finetuned") or {}).get("candidates", []):
            if c.get("status") != "diverged" and c.get("val_curve") and c.get("test_accuracy"):
                search.append(
                    Event(at(c.get("trained_cpu_seconds")), c["val_curve"][-1], c["test_accuracy"])
                )
    t_a = max((e.cpu for e in events), default=0.0)
    c1 = min((e.cpu for e in search), default=run_cpu)
    phases = row.get("phase_seconds") or {}
    wall = row.get("run_wall_s") or phases.get("total")
    one_shot = c1 - t_a
    if wall and any(k in phases for k in ("supernet", "search", "trust")):
        one_shot_wall = sum(phases.get(k, 0.0) for k in ("supernet", "search", "trust"))
        one_shot = min(one_shot, one_shot_wall * run_cpu / wall)
    kept = row.get("kept_model") or {}
    kept_test = kept.get("test", row.get("kept_test"))
    return StudyRun(
        ground=ground,
        source=source,
        seed=int(row.get("seed", -1)),
        events=events + search,
        anchors=[
            (at(a.get("ready_cpu_seconds")), _arch_key(a["arch"]), int(a.get("params") or 0))
            for a in anchors
            if a.get("arch")
        ],
        anchors_end=t_a,
        first_search=c1,
        one_shot=max(one_shot, 0.0),
        run_cpu=run_cpu,
        kept_test=None if kept_test is None else float(kept_test),
    )


def load_runs(paths: Sequence[Path]) -> list[StudyRun]:
    """Every run of the shipped study in the JSON-lines files (a line being written, not
    yet JSON, is skipped)."""
    runs = []
    for path in paths:
        with Path(path).open() as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                run = run_from_row(row, Path(path).name) if isinstance(row, dict) else None
                if run is not None:
                    runs.append(run)
    return runs


def calibrate(runs: list[StudyRun], tables: dict[str, Table]) -> None:
    """Set each run's ``kappa``: the CPU-seconds between consecutive anchors' ready times
    over the table's mean training CPU-seconds of the later anchor's architecture, summed
    over its anchors after the first. An anchor the table does not hold is costed by a
    log-log fit of the table's mean training CPU-seconds on parameters (anchors are drawn
    with the search seed, so only seed 0's are the table's). A run without two anchors
    borrows the median of its file's calibrated runs, else stays at 1 (uncalibrated)."""
    for run in runs:
        tab = tables.get(run.ground)
        if tab is None or len(run.anchors) < 2:
            continue
        mean_cpu = tab.gt.cpu.mean(0)
        cost = {_arch_key(a): float(c) for a, c in zip(tab.gt.archs, mean_cpu, strict=True)}
        params = tab.params.astype(float)
        fit = None
        if (params > 0).all():
            fit = np.polyfit(np.log(params), np.log(mean_cpu), 1)
        spent = table = 0.0
        exact = predicted = 0
        for (t_prev, _, _), (t, key, n_params) in zip(run.anchors, run.anchors[1:], strict=False):
            if key in cost:
                exact += 1
                c = cost[key]
            elif fit is not None and n_params > 0:
                predicted += 1
                c = float(np.exp(np.polyval(fit, math.log(n_params))))
            else:
                continue
            spent += t - t_prev
            table += c
        if table > 0:
            run.kappa = spent / table
            run.kappa_from = f"{exact} anchors in the table, {predicted} costed by parameters"
    for run in runs:
        if run.kappa_from != "uncalibrated":
            continue
        mates = [r.kappa for r in runs if r.source == run.source and "anchors" in r.kappa_from]
        if mates:
            run.kappa = statistics.median(mates)
            run.kappa_from = f"borrowed: median of {len(mates)} runs of the file"


def study_time(run: StudyRun, t: float, s: float, variant: str, calibrated: bool) -> float:
    """When a model ready ``t`` CPU-seconds into ``run`` is ready at scale ``s`` (table
    clock where ``calibrated``)."""
    k = run.kappa if calibrated else 1.0
    t, t_a, f = t / k, run.anchors_end / k, run.one_shot / k
    if variant == "larger data":
        return s * t
    if variant != "longer recipes":
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    return s * t - (s - 1) * min(max(t - t_a, 0.0), f)


def study_curve(
    run: StudyRun, budgets: np.ndarray, s: float, variant: str, calibrated: bool = True
) -> np.ndarray:
    """The run's test accuracy at each budget: its best-validating model ready by then,
    and its kept model from its end on; NaN before its first model."""
    events = [
        Event(study_time(run, e.cpu, s, variant, calibrated), e.val, e.test) for e in run.events
    ]
    out = incumbent_curve(events, budgets)
    if run.kept_test is not None:
        out[budgets >= study_time(run, run.run_cpu, s, variant, calibrated)] = run.kept_test
    return out


# ---------------------------------------------------------------------------- comparison
def median_curve(curves: Sequence[np.ndarray]) -> np.ndarray:
    """The median over runs at each budget, a run without a model counting as the worst;
    NaN where the median run has none."""
    stacked = np.where(np.isnan(np.asarray(curves, dtype=float)), -np.inf, curves)
    med = np.median(stacked, axis=0)
    return np.where(np.isfinite(med), med, np.nan)


def overtaking(times: np.ndarray, study: np.ndarray, base: np.ndarray) -> float | None:
    """The first of ``times`` from which ``study`` is at least ``base`` at every later one
    (a study without a model is not; a baseline without one is beaten by any); ``None``
    where it is not so at the last."""
    ok = ~np.isnan(study) & (np.isnan(base) | (study >= base))
    if not ok[-1]:
        return None
    bad = np.flatnonzero(~ok)
    return float(times[0] if len(bad) == 0 else times[bad[-1] + 1])


@dataclass
class ScaleResult:
    """One ground at one scale.

    Attributes:
        scale: ``s``.
        budgets: The grid's budgets (``s`` x the base grid).
        baseline: Method -> its median incumbent test accuracy at each budget.
        used_up: Method -> the median over replays of its last completed training.
        study: ``(variant, calibrated)`` -> the study's median at each budget.
        ended: ``(variant, calibrated)`` -> when the last of its runs ends (every run has
            kept its model).
        at_end: ``(method or "study", variant, calibrated)`` -> the median test accuracy
            at ``ended``.
        overtakes: ``(method, variant, calibrated)`` -> the overtaking budget.
    """

    scale: float
    budgets: np.ndarray
    baseline: dict[str, np.ndarray]
    used_up: dict[str, float]
    study: dict[tuple[str, bool], np.ndarray] = field(default_factory=dict)
    ended: dict[tuple[str, bool], float] = field(default_factory=dict)
    at_end: dict[tuple[str, str, bool], float] = field(default_factory=dict)
    overtakes: dict[tuple[str, str, bool], float | None] = field(default_factory=dict)


@dataclass
class GroundResult:
    """One ground: its table, the study's runs on it, and each scale's result."""

    name: str
    rows: int
    seeds: int
    table: GroundTable
    runs: list[StudyRun]
    replays: int
    scales: list[ScaleResult]


def evaluate(
    name: str,
    gt: GroundTruth,
    seeds: int,
    runs: list[StudyRun],
    scales: Sequence[float],
    replays: int,
    grid: Sequence[float],
) -> GroundResult:
    """Replay both baselines ``replays`` times on the table (once, their times multiplied
    by each scale) and compare them with the study's runs at every scale."""
    unscaled = {m: [REPLAYS[m](gt, seed) for seed in range(replays)] for m in BASELINES}
    results = []
    for s in scales:
        budgets = s * np.asarray(grid, dtype=float)
        lo, hi = budgets[0], budgets[-1]
        events = {
            m: [[Event(s * e.cpu, e.val, e.test) for e in r] for r in rs]
            for m, rs in unscaled.items()
        }
        marks = [e.cpu for rs in events.values() for r in rs for e in r]
        for run in runs:
            for variant in VARIANTS:
                for cal in (True, False):
                    marks += [
                        study_time(run, t, s, variant, cal)
                        for t in [e.cpu for e in run.events] + [run.run_cpu]
                    ]
        times = np.unique(np.concatenate([budgets, [m for m in marks if lo <= m <= hi]]))
        on_grid = np.searchsorted(times, budgets)
        res = ScaleResult(s, budgets, {}, {})
        dense: dict[str, np.ndarray] = {}
        for m, rs in events.items():
            dense[m] = median_curve([incumbent_curve(r, times) for r in rs])
            res.baseline[m] = dense[m][on_grid]
            res.used_up[m] = float(np.median([max((e.cpu for e in r), default=0.0) for r in rs]))
        for variant in VARIANTS:
            for cal in (True, False):
                if not runs:
                    continue
                curve = median_curve([study_curve(r, times, s, variant, cal) for r in runs])
                res.study[variant, cal] = curve[on_grid]
                end = max(study_time(r, r.run_cpu, s, variant, cal) for r in runs)
                res.ended[variant, cal] = end
                at = np.array([end])
                res.at_end["study", variant, cal] = float(
                    median_curve([study_curve(r, at, s, variant, cal) for r in runs])[0]
                )
                for m, rs in events.items():
                    res.at_end[m, variant, cal] = float(
                        median_curve([incumbent_curve(r, at) for r in rs])[0]
                    )
                for m in BASELINES:
                    res.overtakes[m, variant, cal] = overtaking(times, curve, dense[m])
        results.append(res)
    return GroundResult(name, len(gt.archs), seeds, share_table(name, gt), runs, replays, results)


# ---------------------------------------------------------------------------- report
def _cpu(x: float) -> str:
    return f"{x:,.0f}"


def _quality(value: float, table: GroundTable) -> str:
    if math.isnan(value):
        return "—"
    return f"{100 * value:.2f} ({table.share(value):.0%})"


def _overtake_cell(res: ScaleResult, method: str, variant: str, calibrated: bool) -> str:
    x = res.overtakes.get((method, variant, calibrated))
    if x is None:
        return f"never within the grid (≤ {_cpu(res.budgets[-1])})"
    cell = _cpu(x)
    if x >= res.used_up[method]:
        cell += " (table used up)"
    return cell


def headline(results: Sequence[GroundResult], calibrated: bool = True) -> str:
    """Markdown: per ground and scale, the budget where the study overtakes each baseline
    under each variant (grounds without study runs say so)."""
    cols = [f"vs {m}, {v}" for m in BASELINES for v in VARIANTS]
    lines = [
        "| ground | table: archs × seeds | study runs | kappa | F, CPU-s | scale | "
        + " | ".join(cols)
        + " |",
        "|---|---|---:|---:|---:|---:|" + "---|" * len(cols),
    ]
    for g in results:
        if not calibrated and not g.runs:
            continue
        for res in g.scales:
            kappa = statistics.median(r.kappa for r in g.runs) if g.runs and calibrated else 1.0
            f = (
                _cpu(
                    statistics.median(
                        r.one_shot / (r.kappa if calibrated else 1.0) for r in g.runs
                    )
                )
                if g.runs
                else "—"
            )
            head = (
                f"| {g.name} | {g.rows} × {g.seeds} | {len(g.runs)} | "
                f"{f'{kappa:.2f}' if g.runs else '—'} | {f} | ×{res.scale:g} | "
            )
            if not g.runs:
                cells = ["no study runs"] * len(cols)
            else:
                cells = [
                    _overtake_cell(res, m, v, calibrated) for m in BASELINES for v in VARIANTS
                ]
            lines.append(head + " | ".join(cells) + " |")
    return "\n".join(lines)


def end_table(results: Sequence[GroundResult]) -> str:
    """Markdown: per ground with study runs, scale and variant, the study's kept model and
    each baseline at the budget by which every study run has kept its model."""
    lines = [
        "| ground | scale | variant | every run kept by, CPU-s | study kept, median | "
        + " | ".join(f"{m} there, median" for m in BASELINES)
        + " |",
        "|---|---:|---|---:|---:|" + "---:|" * len(BASELINES),
    ]
    for g in results:
        for res in g.scales:
            for v in VARIANTS:
                if (v, True) not in res.ended:
                    continue
                cells = [_quality(res.at_end[w, v, True], g.table) for w in ("study", *BASELINES)]
                lines.append(
                    f"| {g.name} | ×{res.scale:g} | {v} | {_cpu(res.ended[v, True])} | "
                    + " | ".join(cells)
                    + " |"
                )
    return "\n".join(lines)


def details(g: GroundResult) -> str:
    """Markdown: one ground's quality of each method at the grid budgets, per scale."""
    out = [
        f"### {g.name}: {g.rows} architectures × {g.seeds} training seed(s); "
        f"{len(g.runs)} study run(s); {g.replays} replays per baseline",
        "",
    ]
    for res in g.scales:
        out.append(f"Scale ×{res.scale:g} (budgets: CPU-seconds, table clock):")
        out.append("")
        out.append("| method | " + " | ".join(_cpu(b) for b in res.budgets) + " |")
        out.append("|---|" + "---:|" * len(res.budgets))
        for m in BASELINES:
            out.append(
                f"| {m} (replayed, median) | "
                + " | ".join(_quality(v, g.table) for v in res.baseline[m])
                + " |"
            )
        for v in VARIANTS:
            if (v, True) in res.study:
                out.append(
                    f"| study, {v} (measured runs, median) | "
                    + " | ".join(_quality(x, g.table) for x in res.study[v, True])
                    + " |"
                )
        out.append("")
        used = ", ".join(f"{m} {_cpu(res.used_up[m])}" for m in BASELINES)
        line = f"Table used up (median last completed training): {used} CPU-s."
        if res.ended:
            kept = ", ".join(f"{v} {_cpu(res.ended[v, True])}" for v in VARIANTS)
            line += f" Every study run has kept its model by: {kept} CPU-s."
        out += [line, ""]
    return "\n".join(out)


def runs_table(runs: Sequence[StudyRun]) -> str:
    """Markdown: every study run read (CPU-seconds on the run's own clock)."""
    lines = [
        "| ground | file | seed | kappa | kappa from | tA | c1 | F | run CPU-s | kept test |",
        "|---|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(runs, key=lambda r: (list(GROUNDS).index(r.ground), r.source, r.seed)):
        kept = "—" if r.kept_test is None else f"{100 * r.kept_test:.2f}"
        lines.append(
            f"| {r.ground} | {r.source} | {r.seed} | {r.kappa:.2f} | {r.kappa_from} | "
            f"{r.anchors_end:.0f} | {r.first_search:.0f} | {r.one_shot:.0f} | "
            f"{r.run_cpu:.0f} | {kept} |"
        )
    return "\n".join(lines)


def report(results: Sequence[GroundResult], command: str, score: str = "mean") -> str:
    """The whole markdown report (``score``: how the baselines' incumbents are scored)."""
    runs = [r for g in results for r in g.runs]
    scoring = {
        "mean": "the mean test accuracy over the table's training seeds",
        "drawn": "the test accuracy of the training drawn",
    }[score]
    parts = [
        f"Command: `{command}`",
        "",
        f"Baselines replayed on the tables, their incumbents scored by {scoring}; the "
        "study's models by their measured test accuracy (one training each).",
        "",
        "The budget (CPU-seconds on the table's clock) from which the study's kept/incumbent "
        "test accuracy (median over its measured runs) stays at least the baseline's "
        "(median over replays):",
        "",
        headline(results),
        "",
    ]
    if any(g.runs for g in results):
        parts += [
            "At the budget by which every study run has kept its model (test accuracy in "
            "percent, in brackets the share of the table below it):",
            "",
            end_table(results),
            "",
            "The same on each run's own clock (kappa = 1, uncalibrated):",
            "",
            headline(results, calibrated=False),
            "",
            "Study runs read (CPU-seconds on the run's own clock):",
            "",
            runs_table(runs),
            "",
        ]
    parts += [details(g) for g in results]
    return "\n".join(parts)


def table_files(name: str) -> list[Path]:
    """The ground's table files."""
    globs, _ = GROUNDS[name]
    return sorted(p for pattern in globs for p in DATA.glob(pattern))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--grounds", nargs="+", choices=list(GROUNDS), default=list(GROUNDS))
    p.add_argument("--scales", type=float, nargs="+", default=[1.0, 10.0, 100.0])
    p.add_argument("--replays", type=int, default=11, help="replay seeds per baseline")
    p.add_argument(
        "--runs",
        type=Path,
        nargs="*",
        default=[DATA / f for f in DEFAULT_RUNS],
        help="JSON-lines files of the study's measured runs",
    )
    p.add_argument(
        "--grid",
        type=float,
        nargs="+",
        default=list(DEFAULT_GRID),
        help="budgets at scale 1 (CPU-seconds), multiplied by each scale",
    )
    p.add_argument(
        "--score",
        choices=("mean", "drawn"),
        default="mean",
        help="a baseline's incumbent scored by the mean test accuracy over the table's "
        "training seeds (default) or by the drawn training's own",
    )
    p.add_argument("--out", type=Path, help="write the markdown report here too")
    args = p.parse_args(argv)
    if args.replays < 1 or min(args.scales) <= 0 or min(args.grid) <= 0:
        p.error("--replays must be >= 1, --scales and --grid > 0")
    args.grid = sorted(args.grid)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    c0 = time.process_time()
    tables: dict[str, Table] = {}
    for name in args.grounds:
        files = table_files(name)
        try:
            tables[name] = load_table(files)
        except ValueError as e:
            print(f"{name}: skipped ({e})", file=sys.stderr)
    runs = load_runs([f for f in args.runs if f.is_file()])
    calibrate(runs, tables)
    results = []
    for name, tab in tables.items():
        mine = [r for r in runs if r.ground == name]
        results.append(
            evaluate(
                name, tab.scored(args.score), tab.seeds, mine, args.scales, args.replays, args.grid
            )
        )
        print(f"{name}: done ({time.process_time() - c0:.0f} CPU-s)", file=sys.stderr)
    command = "python benchmarks/regime.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = report(results, command.strip(), args.score)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
