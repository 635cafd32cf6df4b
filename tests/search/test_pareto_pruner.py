"""Tests for the Pareto-aware successive-halving pruner on real Optuna studies."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState

from nasflow.search import ParetoSuccessiveHalvingPruner, report_values, should_prune

optuna.logging.set_verbosity(optuna.logging.WARNING)

MAX_EPOCHS = 27
TAU = 5.0


def _final_point(theta: float, gap: float) -> tuple[float, float]:
    """Final (a, b), maximize a, minimize b. ``gap < 0.1``: on the quarter-circle front."""
    radius = 1.0 if gap < 0.1 else 0.8 - 0.5 * gap
    return radius * math.cos(theta), 1.0 - radius * math.sin(theta)


def _curve(final: tuple[float, float], epoch: int) -> tuple[float, float]:
    # Both objectives are strictly increasing functions of their final values, with the same
    # transform for every trial at a given epoch. Dominance between two trials is therefore the
    # same at every epoch as at the end: this is the honest assumption under which "a trial on
    # the final Pareto front is never pruned" is provable (it is on the first front of every rung
    # it reaches, and the whole first front is promoted).
    progress = 1.0 - math.exp(-epoch / TAU)
    return final[0] * progress, final[1] + 2.0 * (1.0 - progress)


def _truly_non_dominated(points: list[tuple[float, float]]) -> list[bool]:
    def dominates(p: tuple[float, float], q: tuple[float, float]) -> bool:
        return p[0] >= q[0] and p[1] <= q[1] and (p[0] > q[0] or p[1] < q[1])

    return [not any(dominates(p, q) for p in points) for q in points]


def _run_synthetic_study(
    storage: str | None, seed: int, n_trials: int, max_epochs: int
) -> optuna.Study:
    pruner = ParetoSuccessiveHalvingPruner(
        min_resource=1, reduction_factor=3, max_resource=max_epochs
    )

    def objective(trial: optuna.Trial) -> tuple[float, float]:
        theta = trial.suggest_float("theta", 0.0, math.pi / 2)
        gap = trial.suggest_float("gap", 0.0, 1.0)
        final = _final_point(theta, gap)
        for epoch in range(1, max_epochs + 1):
            values = _curve(final, epoch)
            pruner.check(trial, values, epoch)
        return values

    study = optuna.create_study(
        storage=storage,
        directions=["maximize", "minimize"],
        sampler=optuna.samplers.RandomSampler(seed=seed),
    )
    study.optimize(objective, n_trials=n_trials)
    return study


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_known_front_survives_and_most_epochs_are_pruned(seed: int) -> None:
    n_trials = 60
    study = _run_synthetic_study(None, seed, n_trials, MAX_EPOCHS)
    trials = study.get_trials()
    assert len(trials) == n_trials
    finals = [_final_point(t.params["theta"], t.params["gap"]) for t in trials]
    on_front = _truly_non_dominated(finals)
    epochs = [t.user_attrs["nasflow:last_step"] for t in trials]

    # (a) >= 50% of trial-epochs saved compared with training every trial to the end.
    pruned_fraction = 1.0 - sum(epochs) / (n_trials * MAX_EPOCHS)
    print(f"seed={seed} pruned fraction of trial-epochs: {pruned_fraction:.3f}")
    assert pruned_fraction >= 0.5

    # (b) every trial that is non-dominated among all sampled final points ran to completion.
    assert sum(on_front) >= 3
    for trial, front, n_epochs in zip(trials, on_front, epochs, strict=True):
        if front:
            assert trial.state == TrialState.COMPLETE, (trial.number, trial.params)
            assert n_epochs == MAX_EPOCHS
            assert "nasflow:rung_2" in trial.user_attrs
    # The pruner really pruned trials, at the first two rungs at least.
    pruned_at = {t.user_attrs["nasflow:last_step"] for t in trials if t.state == TrialState.PRUNED}
    assert {1, 3} <= pruned_at <= {1, 3, 9}
    assert {t.state for t in trials} == {TrialState.COMPLETE, TrialState.PRUNED}


@pytest.mark.slow
def test_rung_vectors_persist_in_sqlite_storage(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 'pareto.db'}"
    study = _run_synthetic_study(storage, seed=3, n_trials=15, max_epochs=9)
    reloaded = optuna.load_study(study_name=study.study_name, storage=storage)
    trials = reloaded.get_trials()
    assert len(trials) == 15
    states = {t.state for t in trials}
    assert TrialState.PRUNED in states and TrialState.COMPLETE in states
    for trial in trials:
        final = _final_point(trial.params["theta"], trial.params["gap"])
        assert trial.user_attrs["nasflow:rung_0"] == pytest.approx(list(_curve(final, 1)))
        last = trial.user_attrs["nasflow:last_step"]
        assert trial.user_attrs["nasflow:last_values"] == pytest.approx(list(_curve(final, last)))
        if trial.state == TrialState.COMPLETE:
            assert last == 9
            assert trial.user_attrs["nasflow:rung_1"] == pytest.approx(list(_curve(final, 3)))
            assert "nasflow:rung_2" not in trial.user_attrs  # 9 == max_resource: no decision
        else:
            assert last in (1, 3)


@pytest.mark.parametrize("direction", ["minimize", "maximize"])
def test_single_objective_matches_optuna_successive_halving(direction: str) -> None:
    # bootstrap_count >= reduction_factor - 1 sidesteps the one documented difference (how the
    # first eta - 1 trials at a rung are treated); otherwise decisions must be identical.
    rng = np.random.default_rng(7)
    n_trials, n_steps = 80, 30
    curves = np.cumsum(rng.normal(size=(n_trials, n_steps)), axis=1)

    def run(use_optuna: bool, as_study_pruner: bool = False) -> list[int]:
        ours = ParetoSuccessiveHalvingPruner(reduction_factor=3, bootstrap_count=2)
        reference = optuna.pruners.SuccessiveHalvingPruner(
            min_resource=1, reduction_factor=3, bootstrap_count=2
        )
        stopped_at: list[int] = []

        def objective(trial: optuna.Trial) -> float:
            curve = curves[trial.number]
            for step in range(1, n_steps + 1):
                value = float(curve[step - 1])
                if use_optuna or as_study_pruner:  # Optuna's calls, whichever pruner
                    trial.report(value, step)
                    pruned = trial.should_prune()
                else:
                    ours.report(trial, [value], step)
                    pruned = ours.should_prune(trial, step)
                if pruned:
                    stopped_at.append(step)
                    raise optuna.TrialPruned()
            stopped_at.append(n_steps)
            return value

        pruner = reference if use_optuna else ours if as_study_pruner else None
        study = optuna.create_study(direction=direction, pruner=pruner)
        study.optimize(objective, n_trials=n_trials)
        return stopped_at

    expected = run(use_optuna=True)
    assert run(use_optuna=False) == expected
    # As an Optuna BasePruner, driven by plain trial.report / trial.should_prune.
    assert run(use_optuna=False, as_study_pruner=True) == expected
    assert {1, 3, 9, 27} <= set(expected)  # the comparison covers decisions at every rung


def test_as_the_study_pruner_of_a_multi_objective_study_with_the_helpers() -> None:
    """``report_values``/``should_prune`` stand in for the calls Optuna refuses there, and decide
    exactly as the pruner's own ``check`` does."""
    expected = _run_synthetic_study(None, seed=0, n_trials=40, max_epochs=9)

    def objective(trial: optuna.Trial) -> tuple[float, float]:
        theta = trial.suggest_float("theta", 0.0, math.pi / 2)
        gap = trial.suggest_float("gap", 0.0, 1.0)
        final = _final_point(theta, gap)
        for epoch in range(1, 10):
            values = _curve(final, epoch)
            report_values(trial, values, epoch)
            if should_prune(trial):
                raise optuna.TrialPruned()
        return values

    study = optuna.create_study(
        directions=["maximize", "minimize"],
        sampler=optuna.samplers.RandomSampler(seed=0),
        pruner=ParetoSuccessiveHalvingPruner(min_resource=1, reduction_factor=3, max_resource=9),
    )
    study.optimize(objective, n_trials=40)
    states = [t.state for t in study.trials]
    assert states == [t.state for t in expected.trials]
    assert TrialState.PRUNED in states and TrialState.COMPLETE in states
    with pytest.raises(NotImplementedError):  # what the helpers stand in for
        study.ask().should_prune()
    other = optuna.create_study(directions=["maximize", "minimize"])
    trial = other.ask()
    report_values(trial, (0.5, 1.0), 1)
    with pytest.raises(TypeError, match="MedianPruner"):
        should_prune(trial)


def _ask_and_decide(
    study: optuna.Study, pruner: ParetoSuccessiveHalvingPruner, values: list[float], step: int = 1
) -> bool:
    trial = study.ask()
    pruner.report(trial, values, step)
    return pruner.should_prune(trial, step)


def test_whole_first_front_is_promoted_and_dominated_trials_pruned() -> None:
    study = optuna.create_study(directions=["minimize", "minimize"])
    pruner = ParetoSuccessiveHalvingPruner(reduction_factor=3)
    # Six mutually non-dominated trials: more than 1/3 of the rung, all promoted, including
    # interior points that arrive after both extremes (their crowding distance ranks them last).
    front = [[0.0, 5.0], [5.0, 0.0], [1.0, 4.0], [4.0, 1.0], [2.0, 3.0], [3.0, 2.0]]
    assert [_ask_and_decide(study, pruner, v) for v in front] == [False] * 6
    # Seven trials reached the rung, the front has six: a dominated newcomer is pruned.
    assert _ask_and_decide(study, pruner, [3.5, 2.5]) is True
    # A new point that extends the front is promoted.
    assert _ask_and_decide(study, pruner, [-1.0, 10.0]) is False


def test_rank_within_quantile_is_promoted_without_being_on_front() -> None:
    study = optuna.create_study(directions=["maximize", "minimize"])
    pruner = ParetoSuccessiveHalvingPruner(reduction_factor=3)
    decisions = [_ask_and_decide(study, pruner, [1.0, 0.0])]  # dominates everything below
    # Mutually non-dominated, all behind [1, 0]: the 1st is promoted only because fewer than
    # eta trials reached the rung; then n // 3 == 1 slot, taken by [1, 0].
    decisions += [_ask_and_decide(study, pruner, [0.1 * i, 5.0 + i]) for i in range(4)]
    # 6 trials -> 2 slots: [1, 0] is front 0 and [0.9, 1] is alone on front 1, so it is kept.
    decisions.append(_ask_and_decide(study, pruner, [0.9, 1.0]))
    assert [not d for d in decisions] == [True, True, False, False, False, True]


def test_crowding_distance_breaks_ties_inside_a_front() -> None:
    study = optuna.create_study(directions=["minimize", "minimize"])
    pruner = ParetoSuccessiveHalvingPruner(reduction_factor=3)
    points = [[0.0, 0.0], [1.0, 5.0], [5.0, 1.0], [2.0, 4.0], [4.0, 2.0]]
    assert [_ask_and_decide(study, pruner, p) for p in points] == [False, False, True, True, True]
    # 6 trials, 2 slots, [0, 0] takes one. [3, 3] is interior to front 1, behind its two
    # boundary points (infinite crowding distance): pruned.
    assert _ask_and_decide(study, pruner, [3.0, 3.0]) is True
    # [0.5, 6] becomes a boundary point of front 1: only [0, 0] ranks strictly ahead of it.
    assert _ask_and_decide(study, pruner, [0.5, 6.0]) is False


def test_non_rung_steps_nan_and_bootstrap() -> None:
    study = optuna.create_study(directions=["minimize", "minimize"])
    pruner = ParetoSuccessiveHalvingPruner(
        min_resource=2, reduction_factor=2, min_early_stopping_rate=1, bootstrap_count=1
    )
    assert [pruner.rung_resource(k) for k in range(3)] == [4, 8, 16]
    first = study.ask()
    for step in (1, 2, 3):  # before the first rung: never pruned, even on NaN
        pruner.report(first, [math.nan, 0.0], step)
        assert pruner.should_prune(first, step) is False
    pruner.report(first, [0.0, 0.0], 4)
    assert pruner.should_prune(first, 4) is True  # bootstrap: no other trial at rung 0 yet
    assert first.user_attrs["nasflow:rung_0"] == [0.0, 0.0]
    second = study.ask()
    pruner.report(second, [-1.0, 2.0], 5)  # steps may skip a rung step: rung 0 decided at 5
    assert pruner.should_prune(second, 5) is False  # bootstrap met, on the rung's front
    assert pruner.should_prune(second, 5) is False  # decided once, not re-decided
    third = study.ask()
    pruner.report(third, [math.nan, 0.0], 4)
    assert pruner.should_prune(third, 4) is True
    assert "nasflow:rung_0" not in third.user_attrs


def test_check_raises_trial_pruned_and_max_resource_caps_rungs() -> None:
    study = optuna.create_study(directions=["minimize", "minimize"])
    pruner = ParetoSuccessiveHalvingPruner(bootstrap_count=5, max_resource=3)
    trial = study.ask()
    with pytest.raises(optuna.TrialPruned):
        pruner.check(trial, [0.0, 0.0], 1)
    other = study.ask()
    pruner.report(other, [0.0, 0.0], 3)  # rung 0 at step 1 was skipped; rung 1 (3) is the max
    assert pruner.should_prune(other, 3) is True  # still decided at rung 0 (bootstrap)
    late = study.ask()
    pruner.report(late, [0.0, 0.0], 0)
    assert pruner.should_prune(late, 0) is False


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"reduction_factor": 1}, r"reduction_factor must be an int >= 2, got 1"),
        ({"reduction_factor": 2.5}, r"reduction_factor .* got 2\.5"),
        ({"min_resource": 0}, r"min_resource .* got 0"),
        ({"min_early_stopping_rate": -1}, r"min_early_stopping_rate .* got -1"),
        ({"bootstrap_count": -2}, r"bootstrap_count .* got -2"),
        ({"min_resource": 4, "max_resource": 3}, r"max_resource \(3\) .* min_resource \(4\)"),
    ],
)
def test_invalid_arguments(kwargs: dict, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        ParetoSuccessiveHalvingPruner(**kwargs)


def test_report_and_should_prune_validation() -> None:
    study = optuna.create_study(directions=["maximize", "minimize"])
    pruner = ParetoSuccessiveHalvingPruner()
    trial = study.ask()
    with pytest.raises(ValueError, match="3 values for a study with 2 directions"):
        pruner.report(trial, [1.0, 2.0, 3.0], 1)
    with pytest.raises(ValueError, match="step must be an int >= 0, got -1"):
        pruner.report(trial, [1.0, 2.0], -1)
    with pytest.raises(ValueError, match="step=1"):
        pruner.should_prune(trial, 1)
    pruner.report(trial, [1.0, 2.0], 1)
    with pytest.raises(ValueError, match="last reported step is 1"):
        pruner.should_prune(trial, 2)
