"""The paired benchmark's measures: a ground's table, the three measures of a run, and the
mean paired difference with a bootstrap interval, per ground and pooled over grounds.

Measures of one run (a study run, or a baseline's trainings), each against its ground's
random-architecture table (``study.baseline``, every training seed's file):

- ``share``: the share of the table's architectures (their test accuracy, the mean over
  the table's training seeds) strictly below the kept model's test accuracy;
- ``test``: the kept model's test accuracy;
- ``hv``: the hypervolume of (test accuracy up, training seconds down) of every model the
  run trained that was ready within the budget, over the table's own hypervolume. The
  reference point is fixed by the table alone, so both configurations of a ground are
  measured on one scale: its lowest mean test accuracy and 1.1 times its largest mean
  training seconds (B1's point). Training seconds are the clock the study measures
  (``train_seconds``: the training steps on the wall clock), which the baselines and the
  table record too (``train_cpu_seconds`` where a table lacks it: the report says so).
  The budget (``--hv-budget study``) is the CPU-seconds of the pair's study run (``a``'s
  where both are studies): a model counts if it was ready by then, so a configuration
  that spends more gets nothing for it; ``none`` counts every model.

A difference is ``b - a`` on the same ground and search seed. Its interval is a percentile
bootstrap over the seeds (``scipy.stats.bootstrap``, seeds resampled within the ground);
pooled, the mean of the grounds' mean differences, every ground weighing the same, with
seeds resampled within each ground (stratified). A ground needs two pairs for an interval;
one with fewer is left out of the pooled figures.
"""

from __future__ import annotations

import csv
import math
import re
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import bootstrap

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _b1_tables import hypervolume_2d

#: The measures, in the report's order, and what each difference is in.
METRICS = {
    "share": "the kept model's share of the table beaten (points of the table)",
    "test": "the kept model's test accuracy (points)",
    "hv": "hypervolume of the trained models / the table's",
}
LEVEL = 0.9
N_RESAMPLES = 10_000
#: The bar the report checks each configuration's median share against, per ground.
SHARE_BAR = 0.9


@dataclass(frozen=True)
class GroundTable:
    """A ground's random-architecture table, as the measures read it.

    Attributes:
        name: The ground (study) name.
        test: ``(n_archs,)`` mean test accuracy over the table's training seeds.
        cost: ``(n_archs,)`` mean training seconds.
        seeds: The training seeds (files) averaged.
        clock: The cost column read (``train_seconds`` or ``train_cpu_seconds``).
    """

    name: str
    test: np.ndarray
    cost: np.ndarray
    seeds: int = 1
    clock: str = "train_seconds"

    def __post_init__(self) -> None:
        if len(self.test) < 2 or len(self.test) != len(self.cost):
            raise ValueError(
                f"ground {self.name!r}: a table needs two or more architectures with a test "
                f"accuracy and a cost, got {len(self.test)}"
            )

    @property
    def ref(self) -> tuple[float, float]:
        """The hypervolume's reference point: (lowest accuracy, 1.1 x largest cost)."""
        return float(self.test.min()), float(1.1 * self.cost.max())

    @property
    def hv_total(self) -> float:
        """The table's own hypervolume (per-architecture means)."""
        return hypervolume_2d(np.stack([self.test, self.cost], 1), self.ref)

    def share(self, test: float) -> float:
        """Share of the table's architectures strictly below ``test``."""
        return float(np.mean(self.test < test))

    def hypervolume(self, points: Sequence[tuple[float, float]]) -> float:
        """(accuracy, cost) points' hypervolume over the table's."""
        if not len(points):
            return 0.0
        return hypervolume_2d(np.asarray(points, dtype=float), self.ref) / self.hv_total

    @classmethod
    def from_files(cls, name: str, paths: Sequence[Path]) -> GroundTable:
        """From a ground's table files: the architectures (by ``index``) every file holds
        with a finite test accuracy and cost (a file being written may end mid-row)."""
        if not paths:
            raise ValueError(f"ground {name!r} names no table (study.baseline is empty)")
        files, columns = [], []
        for path in paths:
            with Path(path).open(newline="") as f:
                reader = csv.DictReader(f)
                files.append(list(reader))
                columns.append(reader.fieldnames or [])
        clock = "train_seconds"
        if not all(clock in c for c in columns):
            clock = "train_cpu_seconds"
        tables = [{int(r["index"]): (_num(r, "test_accuracy"), _num(r, clock)) for r in rows
                   if r.get("index", "").isdigit()} for rows in files]  # fmt: skip
        common = sorted(
            i for i in set.intersection(*(set(t) for t in tables))
            if all(math.isfinite(v) for t in tables for v in t[i])
        )  # fmt: skip
        test = np.array([[t[i][0] for i in common] for t in tables]).reshape(len(tables), -1)
        cost = np.array([[t[i][1] for i in common] for t in tables]).reshape(len(tables), -1)
        # (n_tables, n_archs) -> (n_archs,): the mean over the training seeds.
        return cls(name, test.mean(0), cost.mean(0), len(tables), clock)


def _num(row: dict, key: str) -> float:
    try:
        return float(row.get(key) or "nan")
    except ValueError:
        return float("nan")


def run_values(row: dict, table: GroundTable, budget: float) -> dict[str, float | None]:
    """A run row's three measures (``None``: the run kept no model with a test accuracy);
    ``hv`` counts the models ready within ``budget`` CPU-seconds."""
    kept = row.get("kept_model") or {}
    test = kept.get("test")
    points = [(m["test"], m["cost"]) for m in row["trained"] if m["ready_cpu"] <= budget]
    return {
        "share": None if test is None else table.share(test),
        "test": test,
        "hv": table.hypervolume(points),
    }


def pair_budget(a: dict, b: dict, mode: str) -> float:
    """The CPU-seconds within which a pair's trained models count: the study run's
    (``a``'s where both are studies) under ``"study"``; unbounded under ``"none"`` or
    when neither is a study."""
    if mode == "none":
        return math.inf
    if mode != "study":
        raise ValueError(f"hv budget must be 'study' or 'none', got {mode!r}")
    for row in (a, b):
        if row["config_kind"] == "study":
            return float(row["run_cpu_s"])
    return math.inf


def interval(
    groups: Sequence[Sequence[float]], n_resamples: int = N_RESAMPLES, seed: int = 0
) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of the groups' means, and its ``LEVEL`` percentile
    bootstrap interval with every group resampled on its own (one group: the seeds of a
    ground; several: stratified by ground). ``low`` and ``high`` are NaN where a group has
    fewer than two values."""
    arrays = [np.asarray(g, dtype=float) for g in groups]
    mean = float(np.mean([a.mean() for a in arrays]))
    if any(len(a) < 2 for a in arrays):
        return mean, math.nan, math.nan

    def mean_of_means(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean([np.mean(s, axis=axis) for s in samples], axis=0)

    res = bootstrap(
        tuple(arrays),
        mean_of_means,
        confidence_level=LEVEL,
        method="percentile",
        n_resamples=n_resamples,
        rng=np.random.default_rng(seed),
        vectorized=True,
    )
    ci = res.confidence_interval
    return mean, float(ci.low), float(ci.high)


@dataclass(frozen=True)
class Summary:
    """One measure's paired difference on one ground, or pooled.

    Attributes:
        n: Pairs.
        mean: Mean difference ``b - a`` (pooled: the mean of the grounds' means).
        low: The interval's lower end (NaN: too few pairs).
        high: Its upper end.
        better: Pairs where ``b`` is higher.
        equal: Pairs where both are equal.
        worse: Pairs where ``b`` is lower.
        a_median: Median of ``a``'s values (pooled: over every pair).
        b_median: Median of ``b``'s values.
    """

    n: int
    mean: float
    low: float
    high: float
    better: int
    equal: int
    worse: int
    a_median: float
    b_median: float

    def stat(self, name: str) -> float:
        """``mean``, ``low``, ``high``, ``a_median`` or ``b_median``."""
        return float(getattr(self, name))

    def points(self) -> str:
        """The difference in points (× 100), its interval where it has one, and the
        pairs higher / equal / lower: ``+1.3 [+0.0, +3.9] (1/5/0)``."""
        ci = "" if math.isnan(self.low) else f" [{100 * self.low:+.1f}, {100 * self.high:+.1f}]"
        return f"{100 * self.mean:+.1f}{ci} ({self.better}/{self.equal}/{self.worse})"


def summarise(
    pairs: dict[str, list[tuple[float, float]]], n_resamples: int = N_RESAMPLES
) -> tuple[dict[str, Summary], Summary | None]:
    """Per ground and pooled: the :class:`Summary` of ``(a, b)`` value pairs. Pooled over
    the grounds with two or more pairs (``None``: none has)."""
    per: dict[str, Summary] = {}
    for ground, values in pairs.items():
        if values:
            per[ground] = _summary([values], n_resamples)
    pooled_grounds = [v for v in pairs.values() if len(v) >= 2]
    return per, (_summary(pooled_grounds, n_resamples) if pooled_grounds else None)


def _summary(groups: list[list[tuple[float, float]]], n_resamples: int) -> Summary:
    diffs = [[b - a for a, b in g] for g in groups]
    mean, low, high = interval(diffs, n_resamples)
    flat = [p for g in groups for p in g]
    return Summary(
        n=len(flat),
        mean=mean,
        low=low,
        high=high,
        better=sum(b > a for a, b in flat),
        equal=sum(b == a for a, b in flat),
        worse=sum(b < a for a, b in flat),
        a_median=statistics.median(a for a, _ in flat),
        b_median=statistics.median(b for _, b in flat),
    )


#: The screening's line (``BatchedScreening._report``): candidates this process scored,
#: and how many it proposed in place of the sampler's repeats, mutated or drawn at random
#: (the line before ``repeat_fallback`` said "K drawn at random after the sampler ...").
_SCREENED = re.compile(r"screening: (\d+) distinct candidates scored by this process")
_MUTATED = re.compile(r"(\d+) mutated from them")
_RANDOM = re.compile(r"(\d+) drawn at random")


@dataclass(frozen=True)
class Proposals:
    """How a run's screened candidates were proposed: ``scored`` in all, ``mutated``
    from the sampler's repeats, ``random`` drawn uniformly; the rest the sampler's own."""

    scored: int
    mutated: int
    random: int

    @property
    def sampler(self) -> int:
        return self.scored - self.mutated - self.random


def proposals(row: dict) -> Proposals | None:
    """The proposals of a study run, read from its summary's screening line (``None``:
    no screening line, a baseline's row)."""
    for line in row.get("summary") or ():
        m = _SCREENED.search(line)
        if m is None:
            continue
        mutated, random = _MUTATED.search(line), _RANDOM.search(line)
        return Proposals(
            int(m.group(1)),
            int(mutated.group(1)) if mutated else 0,
            int(random.group(1)) if random else 0,
        )
    return None
