"""The Optuna sampler and pruner of a study (named apart from ``nasflow.sampling``'s path
samplers, which choose supernet paths, not trials)."""

from __future__ import annotations

from typing import Any

import optuna

from nasflow.record import sampler_constraints_kwargs
from nasflow.search._evolution import RegularizedEvolutionSampler
from nasflow.search._pareto_pruner import ParetoSuccessiveHalvingPruner
from nasflow.search._spec import StudySpec


def sampler_seed(seed: int, created: int) -> int:
    """The sampler seed of a process joining a study that holds ``created`` trials.

    A new study uses ``seed`` itself (a worker's, raised by its process id, is mixed down
    to 32 bits); a resumed one continues the random stream instead of replaying it
    (re-seeding with ``seed`` would propose the first trials' architectures again while
    the sampler is in its random start-up phase).
    """
    if created == 0 and seed < 2**32:
        return seed
    import numpy as np

    return int(np.random.SeedSequence([seed, created]).generate_state(1)[0])


#: ``sampler="auto"`` screens this many candidates or more with regularized evolution,
#: fewer with TPE (benchmarks/results/samplers.md; benchmarks/results/b4-scaling.md, "B4,
#: third round").
AUTO_EVOLUTION_FROM = 1_000


def auto_sampler_name(n_trials: int) -> str:
    """What ``sampler="auto"`` is for a screening of ``n_trials`` candidates.

    Fewer than ``AUTO_EVOLUTION_FROM``: Optuna's TPE as it comes (univariate with several
    objectives): multivariate TPE screens a better front of supernet scores, but the model
    the study keeps was not better with it (``benchmarks/results/samplers.md``, "Decision,
    first made and then reverted"). From ``AUTO_EVOLUTION_FROM``: regularized evolution,
    whose proposal cost does not grow with the trials and whose front at that size is
    within seed noise of the best, where TPE's proposals mostly end as random draws at
    the highest CPU cost (``benchmarks/results/b4-scaling.md``, "B4, third round", which
    also compares the kept models).
    """
    return "evolution" if n_trials >= AUTO_EVOLUTION_FROM else "tpe"


def study_sampler(
    spec: StudySpec, seed: int, n_trials: int | None = None
) -> optuna.samplers.BaseSampler:
    """The Optuna sampler of a study (seeded; a sampler instance is used as given).

    Args:
        spec: The study.
        seed: The sampler's seed.
        n_trials: Candidates this run screens (``"auto"`` depends on it); default the
            spec's.
    """
    if isinstance(spec.sampler, optuna.samplers.BaseSampler):
        return spec.sampler
    n = spec.n_trials if n_trials is None else n_trials
    name = auto_sampler_name(n) if spec.sampler == "auto" else spec.sampler
    kwargs = sampler_constraints_kwargs() if name in ("tpe", "nsga2") else {}
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, **kwargs)
    if name == "evolution":
        population = max(4, min(20, n // 5))
        return RegularizedEvolutionSampler(population, max(2, population // 4), seed=seed)
    startup = max(5, min(10, n // 4))
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup, **kwargs)


def study_pruner(spec: StudySpec) -> tuple[optuna.pruners.BasePruner, Any]:
    """(pruner given to Optuna, pruner used for multi-objective reports)."""
    name, r = spec.resolved_pruner, max(1, spec.finetune_epochs)
    if isinstance(spec.pruner, optuna.pruners.BasePruner):  # used as given
        multi = len(spec.objectives) > 1
        pareto = isinstance(spec.pruner, ParetoSuccessiveHalvingPruner)
        return spec.pruner, spec.pruner if multi and pareto else None
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=r, reduction_factor=3
        ), None
    if name == "asha":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3), None
    if name == "pareto":  # the study's pruner: `study.pruner` says what prunes
        pareto = ParetoSuccessiveHalvingPruner(min_resource=1, reduction_factor=3, max_resource=r)
        return pareto, pareto
    return optuna.pruners.NopPruner(), None
