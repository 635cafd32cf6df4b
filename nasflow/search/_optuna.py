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
#: fewer with TPE (benchmarks/RESULTS.md, "Samplers for large screenings" and "B4, third
#: round").
AUTO_EVOLUTION_FROM = 1_000


def auto_sampler_name(n_trials: int) -> str:
    """What ``sampler="auto"`` is for a screening of ``n_trials`` candidates.

    Fewer than ``AUTO_EVOLUTION_FROM``: Optuna's TPE as it comes (univariate with several
    objectives). Multivariate TPE screens a better front of supernet scores on the
    proving ground, but the model the study keeps was worse on 5 of 5 suite grounds
    (seed 0) than with this default, which is measured on 8 grounds x 3 seeds. From
    ``AUTO_EVOLUTION_FROM``: regularized evolution. At 1,000 candidates (proving ground,
    3 seeds) univariate TPE's screened front is barely above random search's (95% of its
    proposals end as random draws after four repeats) at the highest CPU cost of all
    samplers (229 CPU-s against evolution's 121), and its proposal cost keeps growing
    with the trials; evolution's front is within seed noise of the best (NSGA-II) with
    the smallest spread, and its proposal costs ~0.7 ms at any size. The kept model at
    1,000 candidates (proving ground 3 seeds, hard and shuffled 1 seed): evolution's beat
    TPE's in 3 of 5 pairs, median 95% of the random table against 92%, a spread far
    wider than the difference.
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
