"""The rung schedule on real Optuna studies and pruners, with a trainer whose curves are
known: sizing from a budget, the queue order, promotion, anchors at the top rung only,
several objectives, a stop and a resume that trains nothing twice, the trust read from
the rungs."""

from __future__ import annotations

import math

import optuna
import pytest

from nasflow.errors import StateError
from nasflow.pipeline._schedule._ladder import (
    Candidate,
    RungPlan,
    enqueue,
    kept_trial,
    plan,
    run_rungs,
    rung_study,
    rung_tau,
)
from nasflow.record import RungEntry
from nasflow.search import ParetoSuccessiveHalvingPruner
from nasflow.space import Arch


class Curves:
    """Candidate ``i`` trains to accuracy ``q[i]``: ``q - 0.1 / epochs`` after fine-tuning,
    ``q`` at the top rung; every call is logged (who trained what)."""

    def __init__(self, quality: dict[str, float], objectives: int = 1) -> None:
        self.quality, self.objectives = quality, objectives
        self.calls: list[tuple[str, str, int]] = []

    def _values(self, arch: Arch, acc: float) -> list[float]:
        return [acc] if self.objectives == 1 else [acc, 1.0]  # one cost: accuracy decides

    def fine_tune(self, trial: optuna.Trial, arch: Arch, epochs: int) -> list[float]:
        self.calls.append(("fine_tune", arch["name"], epochs))
        return self._values(arch, self.quality[arch["name"]] - 0.1 / epochs)

    def top(self, trial: optuna.Trial, arch: Arch) -> list[float]:
        self.calls.append(("top", arch["name"], 0))
        return self._values(arch, self.quality[arch["name"]])

    def finish(self, trial: optuna.Trial, arch: Arch) -> None:
        self.calls.append(("finish", arch["name"], 0))


def _candidates(n: int, anchors: int = 0) -> list[Candidate]:
    out = [Candidate(Arch({"name": f"a{i}", "w": i}), anchor=True) for i in range(anchors)]
    out += [
        Candidate(Arch({"name": f"c{i}", "w": i}), score=1.0 - i / n, screening_trial=i)
        for i in range(n)
    ]
    return out


def _study(pruner: optuna.pruners.BasePruner, directions: tuple[str, ...] = ("maximize",)):
    storage = optuna.storages.InMemoryStorage()
    return rung_study(storage, "s", directions, pruner)


def test_the_budget_sizes_how_many_candidates_enter() -> None:
    p = RungPlan((1, 2, 4), 8, 2, 1)
    # 1 epoch for all, 1 more for half, 2 more for a quarter, the top for an eighth.
    assert p.cost_per_candidate(epoch_cost=1.0, top_cost=12.0) == pytest.approx(
        1 + 0.5 + 0.5 + 12 / 8
    )
    sized = plan((1, 2, 4), 2, epoch_cost=1.0, top_cost=12.0, budget=70.0, available=300)
    assert (sized.steps, sized.top, sized.candidates) == ((1, 2, 4), 8, 20)
    # At least one expected at the top (2**3), at most what is available or allowed.
    assert plan((1, 2, 4), 2, 1.0, 12.0, budget=1.0, available=300).candidates == 8
    assert plan((1, 2, 4), 2, 1.0, 12.0, budget=1e6, available=30).candidates == 30
    assert plan((1, 2, 4), 2, 1.0, 12.0, budget=1e6, available=300, most=12).candidates == 12
    assert plan((), 2, 1.0, 12.0, budget=None, available=5, most=3).top == 1
    with pytest.raises(ValueError, match="epoch_cost must be a positive number"):
        plan((1, 2), 2, 0.0, 1.0, None, 3)
    with pytest.raises(ValueError, match="must follow"):
        RungPlan((1, 2), 2, 2, 1)


def test_candidates_run_in_queue_order_and_the_best_reaches_the_top() -> None:
    quality = {f"c{i}": q for i, q in enumerate([0.70, 0.90, 0.60, 0.95, 0.50, 0.80])}
    study = _study(optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=2))
    cands = _candidates(6)
    assert enqueue(study, cands, top=8) == 6
    assert enqueue(study, cands, top=8) == 0  # queued once
    trainer = Curves(quality)
    p = RungPlan((1, 2, 4), 8, 2, 6)
    finished = run_rungs(study, trainer, p)
    assert [RungEntry.from_trial(t).arch for t in finished] == [c.arch.to_json() for c in cands]
    firsts = [name for kind, name, e in trainer.calls if kind == "fine_tune" and e == 1]
    assert firsts == [f"c{i}" for i in range(6)]  # in the queue's order
    tops = {name for kind, name, _ in trainer.calls if kind == "top"}
    assert "c3" in tops and "c4" not in tops and "c2" not in tops  # the worst are cut early
    kept = kept_trial(study)
    assert kept is not None and RungEntry.from_trial(kept).arch == cands[3].arch.to_json()
    assert kept.value == 0.95
    pruned = [t for t in finished if t.state == optuna.trial.TrialState.PRUNED]
    assert pruned and all(max(t.intermediate_values) < 8 for t in pruned)
    # Every candidate, pruned or promoted to the end, is finished once (its model saved).
    assert sorted(name for kind, name, _ in trainer.calls if kind == "finish") == sorted(quality)


def test_anchors_train_at_the_top_rung_only() -> None:
    quality = {"a0": 0.99, **{f"c{i}": 0.5 + i / 10 for i in range(3)}}
    study = _study(optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=2))
    enqueue(study, _candidates(3, anchors=1), top=8)
    trainer = Curves(quality)
    run_rungs(study, trainer, RungPlan((1, 2), 4, 2, 3))
    assert [c for c in trainer.calls if c[1] == "a0"] == [("top", "a0", 0), ("finish", "a0", 0)]
    assert RungEntry.from_trial(kept_trial(study)).arch == Arch({"name": "a0", "w": 0}).to_json()


def test_several_objectives_promote_through_the_pareto_pruner() -> None:
    quality = {f"c{i}": 0.85 - 0.05 * i for i in range(8)}  # each later one worse
    study = _study(
        ParetoSuccessiveHalvingPruner(min_resource=1, reduction_factor=2),
        ("maximize", "minimize"),
    )
    enqueue(study, _candidates(8), top=4)
    trainer = Curves(quality, objectives=2)
    finished = run_rungs(study, trainer, RungPlan((1, 2), 4, 2, 8))
    states = [t.state for t in finished]
    assert optuna.trial.TrialState.COMPLETE in states and optuna.trial.TrialState.PRUNED in states
    assert all(len(t.values) == 2 for t in finished if t.values)


def test_a_rung_study_reopened_with_other_directions_is_refused() -> None:
    storage = optuna.storages.InMemoryStorage()
    pruner = ParetoSuccessiveHalvingPruner(min_resource=1, reduction_factor=2)
    rung_study(storage, "s", ("maximize", "minimize"), pruner)
    again = rung_study(storage, "s", ("maximize", "minimize"), pruner)  # the same: loaded
    assert len(again.directions) == 2
    with pytest.raises(StateError, match=r"promoting by \['maximize', 'minimize'\], this run "
                       r"promotes by \['maximize'\] \(Rungs.promote changed\?\)"):  # fmt: skip
        rung_study(storage, "s", ("maximize",), optuna.pruners.SuccessiveHalvingPruner())


def test_a_stop_between_trials_and_a_resume_train_nothing_twice() -> None:
    quality = {f"c{i}": 0.5 + 0.01 * i for i in range(5)}
    storage = optuna.storages.InMemoryStorage()
    pruner = optuna.pruners.NopPruner()
    study = rung_study(storage, "s", ("maximize",), pruner)
    enqueue(study, _candidates(5), top=2)
    trainer = Curves(quality)
    p = RungPlan((1,), 2, 2, 5)
    run_rungs(study, trainer, p, stop=lambda: len(trainer.calls) >= 6)  # after 2 trials
    assert len([c for c in trainer.calls if c[0] == "top"]) == 2
    again = rung_study(storage, "s", ("maximize",), pruner)
    enqueue(again, _candidates(5), top=2)  # a resumed run queues the same candidates
    run_rungs(again, trainer, p)
    tops = [c[1] for c in trainer.calls if c[0] == "top"]
    assert sorted(tops) == [f"c{i}" for i in range(5)]  # each trained once


def test_the_trust_is_read_from_the_rungs() -> None:
    quality = {f"c{i}": 0.9 - 0.05 * i for i in range(6)}  # the screening order is right
    study = _study(optuna.pruners.NopPruner())
    enqueue(study, _candidates(6), top=2)
    finished = run_rungs(study, Curves(quality), RungPlan((1,), 2, 2, 6))
    first = rung_tau(finished, 0, 1, reps=200)
    assert first.pairs == 6 and first.tau == pytest.approx(1.0)
    assert first.interval[0] <= 1.0 <= first.interval[1] + 1e-9
    top = rung_tau(finished, 1, 2, reps=200)
    assert top.tau == pytest.approx(1.0)
    few = rung_tau(finished[:2], 0, 1)
    assert few.pairs == 2 and math.isnan(few.tau)
