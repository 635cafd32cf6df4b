"""Optuna integration: study specs, pruners and the study runner.

Storage (``resolve_storage``, ``StorageError``, ``redact``) is ``nasflow.storage``'s.
"""

from __future__ import annotations

import warnings
from typing import Any

from nasflow.record import StudyMismatchError
from nasflow.search._anchors import (
    ANCHOR_MARGIN_SE,
    Anchor,
    Anchors,
    kept_anchor,
    zero_cost_front,
)
from nasflow.search._baseline import read_baseline
from nasflow.search._batch_write import write_trials
from nasflow.search._evolution import RegularizedEvolutionSampler
from nasflow.search._finetune import (
    KEPT_MARGIN_SE,
    FineTuned,
    FineTuneResult,
    FineTuning,
    KeptWeights,
    ReadyModelError,
    kept_weights,
    read_ready,
    standard_error,
    validation_margin,
    weights_label,
)
from nasflow.search._headline import (
    Headline,
    baseline_words,
    headline,
    headline_lines,
    study_location,
)
from nasflow.search._multipliers import MULTIPLIER_TITLES, multiplier_basis
from nasflow.search._objective import CandidateError, arch_summary
from nasflow.search._optuna import study_sampler
from nasflow.search._pareto import crowding_distance, non_dominated_sort
from nasflow.search._pareto_pruner import (
    ParetoSuccessiveHalvingPruner,
    report_values,
    should_prune,
)
from nasflow.search._phase_screening import REASKS as SCREENING_REASKS
from nasflow.search._phase_screening import BatchedScreening
from nasflow.search._reproducibility import reproducibility_line, reproducibility_record
from nasflow.search._retrain import recipe_for, retrain_arch
from nasflow.search._runner import RunResult, StudyRunner, Winner, pareto_trials
from nasflow.search._spec import OBJECTIVES, Budget, StudyFileError, StudySpec, load_study_file
from nasflow.search._summary import summary_table
from nasflow.search._trust import (
    TrustProbe,
    TrustResult,
    bootstrap_tau,
    run_trust_probe,
    spread_over_ranking,
)
from nasflow.search._winners import RECORD_FILE as WINNER_RECORD_FILE
from nasflow.search._winners import WinnerError, load_winner_weights, read_winner

__all__ = [
    "ANCHOR_MARGIN_SE",
    "KEPT_MARGIN_SE",
    "MULTIPLIER_TITLES",
    "OBJECTIVES",
    "SCREENING_REASKS",
    "WINNER_RECORD_FILE",
    "Anchor",
    "Anchors",
    "BatchedScreening",
    "Budget",
    "CandidateError",
    "FineTuneResult",
    "FineTuned",
    "FineTuning",
    "Headline",
    "KeptWeights",
    "ParetoSuccessiveHalvingPruner",
    "ReadyModelError",
    "RegularizedEvolutionSampler",
    "RunResult",
    "StudyFileError",
    "StudyMismatchError",
    "StudyRunner",
    "StudySpec",
    "TrustProbe",
    "TrustResult",
    "Winner",
    "WinnerError",
    "arch_summary",
    "baseline_words",
    "bootstrap_tau",
    "crowding_distance",
    "headline",
    "headline_lines",
    "kept_anchor",
    "kept_weights",
    "load_study_file",
    "load_winner_weights",
    "multiplier_basis",
    "non_dominated_sort",
    "pareto_trials",
    "read_baseline",
    "read_ready",
    "read_winner",
    "recipe_for",
    "report_values",
    "reproducibility_line",
    "reproducibility_record",
    "retrain_arch",
    "run_trust_probe",
    "should_prune",
    "spread_over_ranking",
    "standard_error",
    "study_location",
    "study_sampler",
    "summary_table",
    "validation_margin",
    "weights_label",
    "write_trials",
    "zero_cost_front",
]


def __getattr__(name: str) -> Any:
    # ``report`` was the name of ``report_values`` (documented in the README until 0.1):
    # a deprecated alias, not in ``__all__``.
    if name == "report":
        warnings.warn(
            "nasflow.search.report is deprecated; use nasflow.search.report_values",
            DeprecationWarning,
            stacklevel=2,
        )
        return report_values
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
