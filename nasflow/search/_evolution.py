"""Regularized evolution (aging evolution) as an Optuna sampler.

Real, Aggarwal, Huang and Le, "Regularized Evolution for Image Classifier Architecture
Search" (AAAI 2019), Algorithm 1: keep a population of the ``P`` most recent models; to
propose a child, draw ``S`` of them at random, take the best as the parent and mutate one
of its choices. The *age* rule is what regularizes it: a model leaves the population
when it is the oldest, however good it was, so an architecture that scored well once by
luck cannot dominate the search. SPOS (Guo et al. 2019) and NNI search supernets with it.

Mapped onto Optuna: the population is the ``population_size`` most recently *finished*
COMPLETE trials (by trial number) whose parameters cover the relative search space;
until there are that many, proposals are random (Optuna's ``RandomSampler``, the paper's
random initial population). With several objectives the tournament is NSGA-II's crowded
comparison (Deb et al. 2002): the contender on the best non-dominated front of the
population wins, and among contenders on that front the least crowded one (the largest
crowding distance within its front, so the front's ends and its gaps are bred from, not
only its most accurate end); remaining ties are broken at random.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.samplers import BaseSampler, RandomSampler
from optuna.search_space import IntersectionSearchSpace
from optuna.trial import FrozenTrial, TrialState

from nasflow._checks import check_int
from nasflow.errors import ConfigError, ConfigTypeError
from nasflow.search._pareto import crowding_distance, non_dominated_sort

__all__ = ["RegularizedEvolutionSampler"]


class RegularizedEvolutionSampler(BaseSampler):
    """Aging evolution over an Optuna search space (architectures and hyper-parameters).

    Args:
        population_size: ``P``, the number of most recent completed trials that form the
            population (and of random trials before evolution starts).
        sample_size: ``S``, how many population members compete to be the parent
            (``1 <= S <= P``; larger is greedier).
        seed: Seed of the sampler's generator.

    Raises:
        ValueError: ``population_size < 2`` or ``sample_size`` outside ``[1, P]``.
    """

    def __init__(
        self, population_size: int = 20, sample_size: int = 5, seed: int | None = None
    ) -> None:
        self.population_size = check_int("population_size", population_size, 2)
        self.sample_size = check_int("sample_size", sample_size, 1)
        if sample_size > population_size:
            raise ConfigError(
                f"sample_size must be <= population_size ({population_size}), got {sample_size!r}"
            )
        self._rng = np.random.RandomState(seed)
        self._random = RandomSampler(seed=seed)
        # Optuna's incremental intersection (it reads only the trials finished since its
        # last call), one per study (a batched screening proposes on an in-memory copy of
        # the study): recomputing it over every completed trial at each proposal made a
        # 10,000-candidate screening quadratic; the proposal cost is now flat
        # (benchmarks/results/b4-scaling.md, "B4, third round").
        self._search_spaces: weakref.WeakKeyDictionary[Any, dict[int, IntersectionSearchSpace]] = (
            weakref.WeakKeyDictionary()
        )

    def reseed_rng(self) -> None:
        self._rng.seed()
        self._random.reseed_rng()

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        per_study = self._search_spaces.setdefault(study._storage, {})
        space = per_study.setdefault(study._study_id, IntersectionSearchSpace())
        return {name: dist for name, dist in space.calculate(study).items() if not dist.single()}

    def population(
        self, study: optuna.Study, search_space: dict[str, BaseDistribution]
    ) -> list[FrozenTrial]:
        """The current population: the ``P`` youngest completed trials (fewer at first),
        oldest first; found from the youngest trial back, so its cost does not grow with
        the study."""
        young: list[FrozenTrial] = []
        for t in reversed(study.get_trials(deepcopy=False)):  # (in trial-number order)
            if t.state == TrialState.COMPLETE and all(name in t.params for name in search_space):
                young.append(t)
                if len(young) == self.population_size:
                    break
        return young[::-1]

    def select_parent(self, study: optuna.Study, population: list[FrozenTrial]) -> FrozenTrial:
        """Tournament selection: the best of ``S`` members drawn without replacement.

        One objective: the best value wins (the first drawn among equals). Several: the
        crowded comparison of NSGA-II, with front ranks and crowding distances computed
        over the whole population: the lowest front rank wins, then the largest crowding
        distance, then a random draw among what is still tied.
        """
        picks = self._rng.choice(len(population), size=self.sample_size, replace=False)
        if len(study.directions) == 1:
            contenders = [population[i] for i in sorted(picks)]
            sign = 1.0 if study.direction == optuna.study.StudyDirection.MINIMIZE else -1.0
            return min(contenders, key=lambda t: sign * float(t.values[0]))
        values = np.array([t.values for t in population], dtype=float)  # (P, n_objectives)
        ranks = non_dominated_sort(values, study.directions)
        crowding = crowding_distance(values, ranks)
        best = min(int(ranks[i]) for i in picks)
        front = [i for i in picks if ranks[i] == best]
        widest = max(crowding[i] for i in front)
        tied = sorted(int(i) for i in front if crowding[i] == widest)
        return population[tied[self._rng.randint(len(tied))]]

    def mutate(
        self, params: dict[str, Any], search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        """``params`` with exactly one choice of ``search_space`` changed to another value
        of its distribution (a categorical takes another of its choices; a numeric range
        takes another grid value, or is resampled, log-uniformly where the range is
        logarithmic)."""
        child = dict(params)
        name = sorted(search_space)[self._rng.randint(len(search_space))]
        dist, old = search_space[name], params[name]
        if isinstance(dist, CategoricalDistribution):
            others = [c for c in dist.choices if c != old]
            child[name] = others[self._rng.randint(len(others))]
        elif isinstance(dist, IntDistribution):
            values = [v for v in range(dist.low, dist.high + 1, dist.step) if v != old]
            child[name] = int(values[self._rng.randint(len(values))])
        elif isinstance(dist, FloatDistribution):
            if dist.log:
                child[name] = float(np.exp(self._rng.uniform(np.log(dist.low), np.log(dist.high))))
            elif dist.step is not None:
                n = round((dist.high - dist.low) / dist.step)
                grid = [dist.low + i * dist.step for i in range(n + 1)]
                others = [v for v in grid if not np.isclose(v, old)]
                child[name] = float(others[self._rng.randint(len(others))])
            else:
                child[name] = float(self._rng.uniform(dist.low, dist.high))
        else:  # pragma: no cover - Optuna has no other distribution types
            raise ConfigTypeError(f"cannot mutate {name!r} with distribution {dist!r}")
        return child

    def sample_relative(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        if not search_space:
            return {}
        population = self.population(study, search_space)
        if len(population) < self.population_size:
            return {}  # the random initial population (sample_independent)
        parent = self.select_parent(study, population)
        return self.mutate({k: parent.params[k] for k in search_space}, search_space)

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        return self._random.sample_independent(study, trial, param_name, param_distribution)
