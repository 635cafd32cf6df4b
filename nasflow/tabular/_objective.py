"""Tabular studies: an Optuna objective that looks scores up, and the regret it reaches."""

from __future__ import annotations

import math
from typing import NamedTuple

import optuna
from optuna.trial import TrialState

from nasflow.errors import ConfigError, NotFoundError
from nasflow.record import ARCH_ATTR, FAIL_REASON_ATTR, TABLE_KEY_ATTR, TrialRecord, reuse_score
from nasflow.space import Arch
from nasflow.tabular._table import TabularBenchmark


class TabularObjective:
    """Scores a trial by looking its architecture up in a table: no training at all.

    The trial records its arch (``user_attrs["arch"]``, as in trained studies) and its
    table key; when the table reports another metric than the searched one, that value is
    recorded too (``user_attrs[report_metric]``), never returned to the sampler. An arch
    without a row (in a partial table) fails its trial (Optuna fails a trial whose value is
    NaN) with ``user_attrs["fail_reason"]``, and the study goes on. Called as an Optuna
    objective (the per-trial loop), an arch already scored in the study reuses that
    trial's value (``user_attrs["duplicate_of"]``); the batched screening calls
    :meth:`score` with architectures the study has not scored, so that ``n_trials``
    counts distinct architectures.

    Args:
        table: The benchmark table.
    """

    def __init__(self, table: TabularBenchmark) -> None:
        if not isinstance(table, TabularBenchmark):
            raise ConfigError(f"table must be a TabularBenchmark, got {table!r}")
        self.table = table

    def __call__(self, trial: optuna.Trial) -> float:
        table = self.table
        arch = table.space.suggest(trial)
        trial.set_user_attr(ARCH_ATTR, arch.to_json())
        trial.set_user_attr(TABLE_KEY_ATTR, table.key(arch))
        reused = reuse_score(trial, arch)
        if reused is not None:  # already scored in this study
            return reused  # type: ignore[return-value]
        return self.score(trial, arch)

    def setup(self, study: optuna.Study) -> None:
        """Per-study set-up before the first candidate (a look-up needs none)."""

    def score(self, trial: optuna.Trial, arch: Arch) -> float:
        """The table's value of ``arch`` (recording its key, and the reported metric where
        it differs); NaN, with ``user_attrs["fail_reason"]``, where the table has no row.
        It does not look for an earlier trial of ``arch``."""
        table = self.table
        trial.set_user_attr(TABLE_KEY_ATTR, table.key(arch))
        if arch not in table:
            trial.set_user_attr(FAIL_REASON_ATTR, f"no row in {table.path.name}")
            return math.nan
        if table.report_metric != table.metric:
            trial.set_user_attr(table.report_metric, table.lookup(arch, table.report_metric))
        return table.lookup(arch)


class TabularOutcome(NamedTuple):
    """The best architecture a tabular study found, against the table's optimum.

    Attributes:
        trials: Completed trials.
        distinct: Distinct architectures among them (what a batched screening's
            ``n_trials`` counts; fewer than ``trials`` where the per-trial loop's sampler
            proposed an architecture again).
        best_number: Trial number of the best one.
        best_key: Its table key.
        best_value: Its value of the searched metric.
        report_value: Its value of the reported metric (``best_value`` if the same).
        optimum: The table's best value of the searched metric.
        regret: ``optimum - best_value``.
    """

    trials: int
    distinct: int
    best_number: int
    best_key: str
    best_value: float
    report_value: float
    optimum: float
    regret: float


def best_so_far(values: list[float]) -> list[float]:
    """Running maximum of a sequence of values (the incumbent after each trial)."""
    out: list[float] = []
    for v in values:
        out.append(v if not out else max(out[-1], v))
    return out


def tabular_outcome(study: optuna.Study, table: TabularBenchmark) -> TabularOutcome | None:
    """The outcome of a single-objective tabular study, or ``None`` before any trial ends."""
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not done:
        return None
    best = max(done, key=lambda t: (t.values[0], -t.number))  # earliest of equal values
    keys = {t.number: TrialRecord.from_trial(t).table_key for t in done}
    best_key = keys[best.number]
    if best_key is None:
        raise NotFoundError(f"trial {best.number} records no {TABLE_KEY_ATTR!r}")
    arch = table.arch(best_key)
    return TabularOutcome(
        trials=len(done),
        distinct=len({number if key is None else key for number, key in keys.items()}),
        best_number=best.number,
        best_key=best_key,
        best_value=best.values[0],
        report_value=table.lookup(arch, table.report_metric),
        optimum=table.optimum,
        regret=table.regret(best.values[0]),
    )


def tabular_summary(study: optuna.Study, table: TabularBenchmark) -> list[str]:
    """End-of-run lines: the best architecture found and its regret to the optimum."""
    out = tabular_outcome(study, table)
    if out is None:
        return [f"tabular study {study.study_name!r}: no completed trial"]
    repeats = out.trials - out.distinct
    again = f" ({repeats} trial{'s' * (repeats != 1)} repeated one)" if repeats else ""
    lines = [
        f"tabular study {study.study_name!r}: {out.distinct} distinct "
        f"architecture{'s' * (out.distinct != 1)} scored from {table.path.name}{again} "
        "(no training)",
        f"best: trial {out.best_number} {out.best_key}",
        f"{table.metric}: {out.best_value:.4f} (table optimum {out.optimum:.4f}, "
        f"{table.best_key})",
    ]
    if table.report_metric != table.metric:
        lines.append(f"{table.report_metric} of the best: {out.report_value:.4f}")
    lines.append(
        f"regret to the optimum: {out.regret:.4f} (after {out.distinct} distinct "
        f"architecture{'s' * (out.distinct != 1)})"
    )
    return lines
