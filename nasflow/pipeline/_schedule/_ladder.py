"""One schedule from the screening score to the kept model: successive halving over
fidelities, in Optuna.

Rung 0 is a candidate's screening score (inherited supernet weights, batch norm
re-estimated). The next rungs are cumulative epochs of fine-tuning from those weights
(``Rungs.finetune``, e.g. 1, 2 and 4) and the top rung is the recipe's full training
(``Rungs.top``). Every rung is an Optuna ``report`` of the candidate's trial in the study's
*rung study* (``NAME:rungs``, in the study's storage), and promotion is a pruner's: a trial
goes on to the next rung only where its value at this rung is among the best ``1 /
reduction`` of the trials that reached it (:class:`~nasflow.search.ParetoSuccessiveHalvingPruner`,
which reads plain reports with one objective and objective vectors with several; or
Optuna's own ``SuccessiveHalvingPruner`` / ``HyperbandPruner`` with one objective).

The candidates enter the rung study in the order the study's ranking puts them
(:func:`enqueue`): trials run in that order, and the first trials of a rung are promoted
while few have reached it (asynchronous successive halving), so the order decides which
candidates get the full training when the budget is short. Zero-cost anchors enter first
and skip the fine-tuning rungs (they have no inherited weights before the supernet exists):
they are trained at the top rung only.

The rung study is what workers share: its trials are claimed atomically by the storage, so
any ``nasflow worker`` takes the next waiting candidate and none is trained twice.
:func:`plan` sizes the number of candidates from a CPU budget; :func:`rung_tau` reads how
well each rung predicts the next (the trust verdict, free); :func:`kept_trial` is the best
at the top rung.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from nasflow._checks import check_int
from nasflow.errors import ConfigError, StateError
from nasflow.record import RungEntry, rung_value, step_key
from nasflow.search import report_values, should_prune
from nasflow.space import Arch

#: The rung study of study ``NAME`` is ``NAME`` followed by this.
SUFFIX = ":rungs"


@dataclass(frozen=True)
class Candidate:
    """A candidate entering the rung study.

    Attributes:
        arch: Its architecture.
        score: Its rung-0 value (the screening score; ``None`` for an anchor, which is
            chosen before the supernet exists).
        screening_trial: Its trial in the screening study (``None`` for an anchor).
        anchor: A zero-cost anchor: trained at the top rung only.
    """

    arch: Arch
    score: float | None = None
    screening_trial: int | None = None
    anchor: bool = False


@dataclass(frozen=True)
class RungPlan:
    """The fidelities and how many candidates enter them.

    Attributes:
        steps: The report steps of the fine-tuning rungs (cumulative epochs).
        top: The step the top rung (the full training) reports at: the next rung of the
            geometric ladder after the last fine-tuning rung, so Optuna's successive
            halving and Hyperband see one ladder.
        reduction: Keep ``1 / reduction`` of a rung's trials.
        candidates: Candidates entering the first rung.
    """

    steps: tuple[int, ...]
    top: int
    reduction: int
    candidates: int

    def __post_init__(self) -> None:
        steps = tuple(self.steps)
        if list(steps) != sorted(set(steps)) or any(s < 1 for s in steps):
            raise ConfigError(f"rung steps must be increasing epochs >= 1, got {self.steps!r}")
        if self.top <= (steps[-1] if steps else 0):
            raise ConfigError(f"the top rung's step {self.top} must follow {steps!r}")
        check_int("reduction", self.reduction, 2)
        check_int("candidates", self.candidates, 1)

    def share_reaching(self) -> list[float]:
        """The share of the candidates expected to reach each rung after the first, the
        top included (``1 / reduction`` of the rung before)."""
        return [self.reduction ** -(k + 1) for k in range(len(self.steps))]

    def cost_per_candidate(self, epoch_cost: float, top_cost: float) -> float:
        """Expected seconds one entering candidate costs: every one trains the first
        rung, a ``1 / reduction`` share each next one, the top rung included."""
        cost, done = 0.0, 0
        shares = [1.0, *self.share_reaching()]
        for share, step in zip(shares, self.steps, strict=False):
            cost += share * (step - done) * epoch_cost
            done = step
        return cost + shares[len(self.steps)] * top_cost


def ladder(finetune: Sequence[int], reduction: int) -> tuple[tuple[int, ...], int]:
    """The fine-tuning steps and the top rung's step: the next step of the ladder
    (``last * reduction``; ``1`` without fine-tuning rungs)."""
    steps = tuple(int(s) for s in finetune)
    return steps, (steps[-1] * reduction if steps else 1)


def plan(
    finetune: Sequence[int],
    reduction: int,
    epoch_cost: float,
    top_cost: float,
    budget: float | None,
    available: int,
    most: int | None = None,
) -> RungPlan:
    """How many candidates enter the rungs: as many as the expected cost of the schedule
    allows within ``budget`` seconds (``epoch_cost``: one fine-tuning epoch; ``top_cost``:
    one full training), at least ``reduction ** len(rungs)`` (so one is expected to reach
    the top), at most ``most`` and the ``available`` candidates.

    Raises:
        ConfigError: No candidate is available, or a cost is not a positive number.
    """
    check_int("available", available, 1)
    for name, value in (("epoch_cost", epoch_cost), ("top_cost", top_cost)):
        if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")
    steps, top = ladder(finetune, reduction)
    floor = reduction ** len(steps)
    draft = RungPlan(steps, top, reduction, 1)
    if budget is None:
        n = most if most is not None else floor
    else:
        n = int(budget // draft.cost_per_candidate(epoch_cost, top_cost))
        n = max(n, floor) if most is None else min(max(n, floor), most)
    return RungPlan(steps, top, reduction, max(1, min(n, available)))


def rung_study(
    storage: optuna.storages.BaseStorage,
    name: str,
    directions: Sequence[str | optuna.study.StudyDirection],
    pruner: optuna.pruners.BasePruner,
    sampler: optuna.samplers.BaseSampler | None = None,
) -> optuna.Study:
    """The rung study of study ``name`` (created or loaded): one trial per candidate.

    Raises:
        StateError: A stored rung study has other directions (``Rungs.promote`` changed
            since it was created: Optuna would load it as it is).
    """
    wanted = [
        d if isinstance(d, optuna.study.StudyDirection) else optuna.study.StudyDirection[d.upper()]
        for d in directions
    ]
    study = optuna.create_study(
        study_name=name + SUFFIX,
        storage=storage,
        directions=wanted,
        load_if_exists=True,
        pruner=pruner,
        sampler=sampler or optuna.samplers.RandomSampler(seed=0),
    )
    if list(study.directions) != wanted:
        held = [d.name.lower() for d in study.directions]
        raise StateError(
            f"the rung study {name + SUFFIX!r} was created promoting by {held}, this run "
            f"promotes by {[d.name.lower() for d in wanted]} (Rungs.promote changed?); "
            "run the study with the Rungs it started with, or under another name"
        )
    study.pruner = pruner  # (a loaded study keeps no pruner)
    return study


def enqueue(study: optuna.Study, candidates: Sequence[Candidate], top: int) -> int:
    """Queue the candidates the study does not hold yet, in the given order (the order
    the trials run in); returns how many were queued. A resumed study queues none twice."""
    held = {e.arch for t in study.get_trials(deepcopy=False) if (e := RungEntry.find(t))}
    queued = 0
    for c in candidates:
        key = c.arch.to_json()
        if key in held:
            continue
        entry = RungEntry(key, top, c.anchor, c.score, c.screening_trial)
        study.enqueue_trial({}, user_attrs=entry.to_attrs(), skip_if_exists=False)
        held.add(key)
        queued += 1
    return queued


class RungTrainer(Protocol):
    """What the schedule asks of training (``nasflow.pipeline`` trains through the
    study's stack; the tests use small stand-ins)."""

    def fine_tune(self, trial: optuna.Trial, arch: Arch, epochs: int) -> Sequence[float]:
        """The objective values after ``epochs`` cumulative epochs of fine-tuning from
        the inherited weights (continuing the trial's earlier epochs)."""

    def top(self, trial: optuna.Trial, arch: Arch) -> Sequence[float]:
        """The objective values of the top rung's full training."""

    def finish(self, trial: optuna.Trial, arch: Arch) -> None:
        """Called once the trial leaves the schedule (promoted to the end, pruned, or
        failed): save what it trained."""


def run_rungs(
    study: optuna.Study,
    trainer: RungTrainer,
    plan: RungPlan,
    stop: Callable[[], bool] | None = None,
    timeout: float | None = None,
    catch: tuple[type[Exception], ...] = (),
) -> list[FrozenTrial]:
    """Run the waiting trials of the rung study, each up the rungs while the pruner
    promotes it; returns the rung study's finished trials.

    A trial reports its rung-0 value at step 0, each fine-tuning rung at its step and the
    top rung at ``plan.top`` (anchors: the top rung only), and is pruned where the pruner
    says so; a trial whose loss diverges (the trainer raises ``catch``) fails and the
    schedule goes on. ``stop`` is checked between trials.
    """

    single = len(study.directions) == 1

    def report(trial: optuna.Trial, values: Sequence[float], step: int) -> bool:
        """Report one rung; whether the pruner stops the trial here. One objective:
        ``trial.report`` (any Optuna pruner reads it); several: the vector, for
        ``ParetoSuccessiveHalvingPruner`` (Optuna refuses ``report`` there)."""
        if single:
            trial.report(float(values[0]), step)
            return trial.should_prune()
        trial.set_user_attr(step_key(step), [float(v) for v in values])
        report_values(trial, values, step)
        return should_prune(trial)

    def objective(trial: optuna.Trial) -> float | Sequence[float]:
        entry = RungEntry.find(trial)
        if entry is None:  # the last waiting trial was taken by another worker
            trial.study.stop()
            raise optuna.TrialPruned("no candidate was waiting")
        arch = Arch.from_json(entry.arch)
        try:
            if not entry.anchor:
                for step in plan.steps:
                    if report(trial, list(trainer.fine_tune(trial, arch, step)), step):
                        raise optuna.TrialPruned(f"not promoted after rung {step}")
            values = list(trainer.top(trial, arch))
        finally:
            trainer.finish(trial, arch)
        if single:
            trial.report(float(values[0]), plan.top)
        else:
            trial.set_user_attr(step_key(plan.top), [float(v) for v in values])
            report_values(trial, values, plan.top)
        return values[0] if single else values

    def halt(s: optuna.Study, _: FrozenTrial) -> None:
        if stop is not None and stop():
            s.stop()

    deadline = None if timeout is None else time.monotonic() + timeout
    # Until nothing waits (a queue still being written, or trials other workers left
    # behind, are taken on the next round).
    while not (stop is not None and stop()):
        waiting = len(study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))
        left = None if deadline is None else deadline - time.monotonic()
        if not waiting or (left is not None and left <= 0):
            break
        study.optimize(
            objective,
            n_trials=waiting,
            timeout=left,
            catch=catch,
            callbacks=[halt],
            gc_after_trial=False,
        )
    return [
        t
        for t in study.get_trials(deepcopy=False)
        if t.state.is_finished() and RungEntry.find(t) is not None
    ]


def kept_trial(study: optuna.Study) -> FrozenTrial | None:
    """The best top-rung trial by its first objective (``None``: none reached it)."""
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not done:
        return None
    sign = 1.0 if study.directions[0] == optuna.study.StudyDirection.MAXIMIZE else -1.0
    return max(done, key=lambda t: (sign * float(t.values[0]), -t.number))


@dataclass(frozen=True)
class RungTau:
    """How well one rung ranks the candidates the next one measured.

    Attributes:
        low_step: The lower rung's step (0: the screening score).
        high_step: The higher rung's step.
        pairs: Candidates measured at both.
        tau: Kendall tau of the two (``nan`` with fewer than 3 candidates).
        interval: 90% bootstrap interval over the candidates.
    """

    low_step: int
    high_step: int
    pairs: int
    tau: float
    interval: tuple[float, float]


def measured_at(trials: Sequence[FrozenTrial], step: int) -> int:
    """How many of ``trials`` were measured at rung ``step`` (0: the screening score)."""
    return sum(rung_value(t, step) is not None for t in trials)


def rung_tau(
    trials: Sequence[FrozenTrial], low: int, high: int, reps: int = 2000, seed: int = 0
) -> RungTau:
    """Kendall tau between two rungs over the trials measured at both, with a 90%
    bootstrap interval: the trust verdict read from the schedule itself."""
    from scipy.stats import kendalltau

    pairs = [
        (a, b)
        for t in trials
        if (a := rung_value(t, low)) is not None and (b := rung_value(t, high)) is not None
    ]
    n = len(pairs)
    if n < 3:
        return RungTau(low, high, n, float("nan"), (float("nan"), float("nan")))
    x, y = np.array(pairs, dtype=float).T
    tau = float(kendalltau(x, y).statistic)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(reps):
        i = rng.integers(0, n, n)
        t = kendalltau(x[i], y[i]).statistic
        if np.isfinite(t):
            draws.append(t)
    lo, hi = np.percentile(draws, [5, 95]) if draws else (np.nan, np.nan)
    return RungTau(low, high, n, tau, (float(lo), float(hi)))
