"""Regularized evolution as an Optuna sampler: random start, mutation, the age rule."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from nasflow.search import RegularizedEvolutionSampler, StudyFileError, StudySpec
from nasflow.space import SearchSpace, hyper_choice, op_choice, value_choice
from nasflow.train import TrainConfig
from tests._spaces import CellSpace

OPS = ["a", "b", "c", "d"]


def objective(trial: optuna.Trial) -> float:
    xs = [trial.suggest_categorical(f"x{i}", OPS) for i in range(4)]
    w = trial.suggest_int("w", 1, 8)
    return float(sum(OPS.index(x) for x in xs) + w)


def _completed(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))


def test_children_differ_from_a_population_member_in_exactly_one_choice() -> None:
    sampler = RegularizedEvolutionSampler(population_size=8, sample_size=3, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(objective, n_trials=40)
    trials = _completed(study)
    for t in trials[8:]:
        population = trials[max(0, t.number - 8) : t.number]
        diffs = [sum(p.params[k] != t.params[k] for k in t.params) for p in population]
        assert 1 in diffs, (t.number, diffs)  # a one-choice mutation of a member
    for t in trials:  # mutation never leaves the space
        assert all(t.params[f"x{i}"] in OPS for i in range(4)) and 1 <= t.params["w"] <= 8
    # Evolution climbs: the second half beats the random first population on average.
    first = [t.value for t in trials[:8]]
    last = [t.value for t in trials[-8:]]
    assert sum(last) / 8 > sum(first) / 8


def test_the_age_rule_retires_the_best_member_once_it_is_the_oldest() -> None:
    sampler = RegularizedEvolutionSampler(population_size=4, sample_size=4, seed=1)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    space = {f"x{i}": CategoricalDistribution(OPS) for i in range(4)}
    best = {f"x{i}": "d" for i in range(4)}
    worst = {f"x{i}": "a" for i in range(4)}
    study.add_trial(optuna.trial.create_trial(params=best, distributions=space, value=100.0))
    for v in range(4):
        study.add_trial(optuna.trial.create_trial(params=worst, distributions=space, value=v))
    population = sampler.population(study, space)
    assert [t.number for t in population] == [1, 2, 3, 4]  # trial 0, the best, aged out
    # With S = P the tournament is the whole population: the parent is its best member.
    assert sampler.select_parent(study, population).number == 4
    child = sampler.mutate(dict(worst), space)
    assert sum(child[k] != worst[k] for k in worst) == 1


def test_one_sampler_serves_two_studies_each_from_its_own_trials() -> None:
    # (The batched screening proposes on an in-memory copy of the stored study with the
    # study's sampler.) The population skips failed and pruned trials, oldest first.
    sampler = RegularizedEvolutionSampler(population_size=3, sample_size=3, seed=0)
    a = optuna.create_study(direction="maximize", sampler=sampler)
    b = optuna.create_study(direction="maximize", sampler=sampler)
    space = {f"x{i}": CategoricalDistribution(OPS) for i in range(4)}
    for k, state in enumerate([TrialState.COMPLETE] * 3 + [TrialState.FAIL, TrialState.PRUNED]):
        params = {f"x{i}": OPS[k % 4] for i in range(4)}
        value = float(k) if state == TrialState.COMPLETE else None
        a.add_trial(
            optuna.trial.create_trial(params=params, distributions=space, value=value, state=state)
        )
    b.optimize(objective, n_trials=5)
    assert set(sampler.infer_relative_search_space(a, a.trials[0])) == set(space)
    assert set(sampler.infer_relative_search_space(b, b.trials[0])) == {*space, "w"}
    assert [t.number for t in sampler.population(a, space)] == [0, 1, 2]
    a.optimize(objective, n_trials=3)  # proposals go on in both, from their own trials
    b.optimize(objective, n_trials=3)
    assert [t.number for t in sampler.population(a, space)] == [5, 6, 7]


def test_multi_objective_parent_is_on_the_first_front() -> None:
    sampler = RegularizedEvolutionSampler(population_size=3, sample_size=3, seed=0)
    study = optuna.create_study(directions=["maximize", "minimize"], sampler=sampler)
    dist = {"x": CategoricalDistribution(OPS)}
    for x, values in zip(OPS, ([0.5, 2.0], [0.9, 1.0], [0.8, 3.0], [0.2, 9.0]), strict=False):
        study.add_trial(
            optuna.trial.create_trial(params={"x": x}, distributions=dist, values=values)
        )
    population = sampler.population(study, dist)
    assert sampler.select_parent(study, population).params == {"x": "b"}  # dominates c and d


def test_two_objective_tournament_breeds_from_the_whole_front_not_its_accurate_end() -> None:
    # A front of four (accuracy up, cost down) and one dominated member. With S = P every
    # tournament sees everyone: the two ends of the front (infinite crowding distance) tie
    # and are drawn at random; the crowded middle and the dominated member never win.
    sampler = RegularizedEvolutionSampler(population_size=5, sample_size=5, seed=0)
    study = optuna.create_study(directions=["maximize", "minimize"], sampler=sampler)
    dist = {"x": CategoricalDistribution([*OPS, "e"])}
    points = {"a": [0.95, 9.0], "b": [0.90, 5.0], "c": [0.89, 4.9], "d": [0.20, 1.0]}
    points["e"] = [0.5, 8.0]  # dominated by b
    for x, values in points.items():
        study.add_trial(
            optuna.trial.create_trial(params={"x": x}, distributions=dist, values=values)
        )
    population = sampler.population(study, dist)
    parents = [sampler.select_parent(study, population).params["x"] for _ in range(200)]
    assert set(parents) == {"a", "d"}  # the cheap end is bred from too
    # Two-member tournaments with the draw fixed: the crowded comparison decides.
    sampler = RegularizedEvolutionSampler(population_size=5, sample_size=2, seed=0)

    class Draw:
        def __init__(self) -> None:
            self.picks: list[int] = []

        def choice(self, n: int, size: int, replace: bool) -> np.ndarray:
            return np.array(self.picks)

        def randint(self, n: int) -> int:
            return 0

    draw = Draw()
    sampler._rng = draw  # type: ignore[assignment]
    # b and c share the front; c's neighbours (d and b) are far apart, b's (c and a) close:
    # crowding c = 0.70/0.75 + 4.0/8 > crowding b = 0.06/0.75 + 4.1/8.
    for picks, winner in (([1, 2], "c"), ([2, 1], "c"), ([1, 4], "b"), ([4, 3], "d")):
        draw.picks = picks
        assert sampler.select_parent(study, population).params["x"] == winner, picks


def test_numeric_mutations_stay_in_range() -> None:
    sampler = RegularizedEvolutionSampler(population_size=2, sample_size=1, seed=3)
    space = {
        "lr": FloatDistribution(1e-4, 1e-1, log=True),
        "p": FloatDistribution(0.0, 1.0, step=0.25),
        "n": IntDistribution(2, 10, step=2),
    }
    params = {"lr": 1e-3, "p": 0.5, "n": 4}
    for _ in range(200):
        child = sampler.mutate(params, space)
        assert sum(child[k] != params[k] for k in params) == 1
        assert 1e-4 <= child["lr"] <= 1e-1
        assert child["p"] in (0.0, 0.25, 0.5, 0.75, 1.0) and child["n"] in (2, 4, 6, 8, 10)


@pytest.mark.parametrize(
    "kwargs, bad",
    [
        ({"population_size": 1}, "population_size must be an int >= 2, got 1"),
        ({"population_size": 4, "sample_size": 5}, "sample_size must be <= population_size"),
        ({"sample_size": 0}, "sample_size must be an int >= 1, got 0"),
        ({"population_size": True}, "population_size must be an int >= 2, got True"),
    ],
)
def test_bad_arguments_are_refused(kwargs, bad) -> None:
    with pytest.raises(ValueError, match=bad):
        RegularizedEvolutionSampler(**kwargs)


def test_a_study_can_name_evolution_or_pass_any_optuna_sampler() -> None:
    from nasflow.search._optuna import study_sampler

    def data():
        raise AssertionError("not loaded")

    space = CellSpace(with_hypers=False)
    spec = StudySpec(name="s", space=space, data=data, sampler="evolution", n_trials=100)
    assert isinstance(study_sampler(spec, 0), RegularizedEvolutionSampler)
    mine = optuna.samplers.GridSampler({"x": [1, 2]}, seed=0)
    assert study_sampler(spec.replace(sampler=mine), 0) is mine
    with pytest.raises(StudyFileError, match="unknown sampler 'cma'"):
        spec.replace(sampler="cma")


def test_auto_is_tpe_below_a_thousand_candidates_and_evolution_from_there() -> None:
    from nasflow.search._optuna import AUTO_EVOLUTION_FROM, study_sampler

    def data():
        raise AssertionError("not loaded")

    spec = StudySpec(name="s", space=CellSpace(with_hypers=False), data=data, n_trials=300)
    assert AUTO_EVOLUTION_FROM == 1_000
    assert isinstance(study_sampler(spec, 0), optuna.samplers.TPESampler)
    assert isinstance(study_sampler(spec, 0, n_trials=999), optuna.samplers.TPESampler)
    big = study_sampler(spec, 0, n_trials=1_000)
    assert isinstance(big, RegularizedEvolutionSampler)
    assert (big.population_size, big.sample_size) == (20, 5)  # as measured
    assert isinstance(study_sampler(spec.replace(n_trials=10_000), 0), RegularizedEvolutionSampler)
    named = spec.replace(sampler="tpe", n_trials=10_000)
    assert isinstance(study_sampler(named, 0), optuna.samplers.TPESampler)  # named: as named


class _HyperSpace(SearchSpace):
    def __init__(self, label: str) -> None:
        super().__init__(
            [op_choice("op", ["a", "b"]), value_choice("w", [1, 2]), hyper_choice(label, (1, 2))],
            name="h",
        )

    def supernet(self):  # pragma: no cover - never built
        raise NotImplementedError


def test_a_searched_hyper_parameter_that_no_phase_trains_with_is_refused() -> None:
    def data():
        raise AssertionError("not loaded")

    with pytest.raises(StudyFileError, match=r"hyper-parameter 'lr'.*finetune=None"):
        StudySpec(name="s", space=_HyperSpace("lr"), data=data, finetune=None)
    with pytest.raises(StudyFileError, match=r"hyper-parameter 'dropout'.*no phase trains"):
        StudySpec(
            name="s", space=_HyperSpace("dropout"), data=data, finetune=TrainConfig(epochs=2)
        )
    StudySpec(name="s", space=_HyperSpace("lr"), data=data, finetune=TrainConfig(epochs=1))
