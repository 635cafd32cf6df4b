"""What a study is: its spec, budget, phase settings, samplers and pruners.

How a study runs (the runner, its phases, the kept model, the summary) is
``nasflow.pipeline``; storage (``resolve_storage``, ``StorageError``) is ``nasflow.storage``.
"""

from __future__ import annotations

from nasflow.search._batch_write import write_trials
from nasflow.search._budget import Budget
from nasflow.search._evolution import RegularizedEvolutionSampler
from nasflow.search._optuna import sampler_seed, study_pruner, study_sampler
from nasflow.search._pareto import non_dominated_sort
from nasflow.search._pareto_pruner import (
    ParetoSuccessiveHalvingPruner,
    promoted,
    report_values,
    should_prune,
)
from nasflow.search._phases import Anchors, FineTuning, TrustProbe
from nasflow.search._rungs import Rungs
from nasflow.search._spec import OBJECTIVES, RECIPE_KEYS, StudyFileError, StudySpec
from nasflow.search._study_file import load_study_file

__all__ = [
    "OBJECTIVES",
    "RECIPE_KEYS",
    "Anchors",
    "Budget",
    "FineTuning",
    "ParetoSuccessiveHalvingPruner",
    "RegularizedEvolutionSampler",
    "Rungs",
    "StudyFileError",
    "StudySpec",
    "TrustProbe",
    "load_study_file",
    "non_dominated_sort",
    "promoted",
    "report_values",
    "sampler_seed",
    "should_prune",
    "study_pruner",
    "study_sampler",
    "write_trials",
]
