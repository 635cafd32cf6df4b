"""How a study runs: the runner and its phases, the kept model, the ready models, the
summary.

``StudyRunner(spec).run()`` opens the study (``nasflow.search.StudySpec``) and runs the
phases in order (``_phases``), each a module with one entry point: the zero-cost anchors
(``_anchors``), the supernet (``_supernet``), the screening (``_screening``), the trust
probe (``_trust``), the fine-tuning of the finalists (``_finetune``), the retrains
(``_retrain``), or in their place the rung schedule (``_rungs``). What the phases do to
one architecture is ``_arch`` (scored from the supernet, fine-tuned from inherited
weights into a ready model, trained from scratch, its weights saved and found again);
what runs where and when is ``_schedule`` (the rung ladder in Optuna, and the trainings
any process of the study takes); which model is kept is ``_kept``; what the run prints is
``_result`` (``_headline`` and ``_summary``).

``__all__`` is the public part: the runner and its result, the headline and summary, the
kept-model rules, retraining and the saved models. The other names imported here are for
nasflow's own report, export and benchmarks, not a stable API.
"""

from __future__ import annotations

from nasflow.pipeline._arch._ready import read_ready, weights_label
from nasflow.pipeline._arch._scoring import CandidateError, arch_summary
from nasflow.pipeline._arch._training import recipe_for, retrain_arch
from nasflow.pipeline._arch._winners import RECORD_FILE as WINNER_RECORD_FILE
from nasflow.pipeline._arch._winners import WinnerError, load_winner_weights, read_winner
from nasflow.pipeline._baseline import read_baseline
from nasflow.pipeline._kept import (
    FALLBACK_MARGIN_SE,
    KEPT_MARGIN_SE,
    KeptWeights,
    full_recipe_choice,
    kept_anchor,
    kept_weights,
    standard_error,
    validation_margin,
)
from nasflow.pipeline._multipliers import MULTIPLIER_TITLES, multiplier_basis
from nasflow.pipeline._phases._anchors import Anchor, spread_in_log_flops, zero_cost_front
from nasflow.pipeline._phases._screening import REASKS as SCREENING_REASKS
from nasflow.pipeline._phases._screening import BatchedScreening
from nasflow.pipeline._phases._trust import bootstrap_tau, run_trust_probe, spread_over_ranking
from nasflow.pipeline._phases._trust import verdict as trust_verdict
from nasflow.pipeline._reproducibility import reproducibility_line, reproducibility_record
from nasflow.pipeline._result._headline import (
    Headline,
    baseline_words,
    headline,
    headline_lines,
    study_location,
)
from nasflow.pipeline._result._summary import summary_table, worker_summary
from nasflow.pipeline._runner import RunResult, StudyRunner, Winner, pareto_trials
from nasflow.pipeline._schedule._tasks import SUFFIX as TASKS_SUFFIX

__all__ = [
    "FALLBACK_MARGIN_SE",
    "KEPT_MARGIN_SE",
    "Anchor",
    "CandidateError",
    "Headline",
    "KeptWeights",
    "RunResult",
    "StudyRunner",
    "Winner",
    "WinnerError",
    "arch_summary",
    "bootstrap_tau",
    "headline",
    "headline_lines",
    "kept_anchor",
    "kept_weights",
    "load_winner_weights",
    "pareto_trials",
    "read_ready",
    "read_winner",
    "recipe_for",
    "reproducibility_line",
    "retrain_arch",
    "run_trust_probe",
    "spread_over_ranking",
    "study_location",
    "summary_table",
    "weights_label",
    "worker_summary",
    "zero_cost_front",
]
