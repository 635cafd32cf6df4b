"""Every ``nasflow:*`` key and trial attribute nasflow writes, defined here and nowhere else."""

from __future__ import annotations

#: Prefix of every key nasflow writes into a study or a checkpoint.
PREFIX = "nasflow:"

#: Study user attributes that identify what a stored study searches.
SPACE_KEY = "nasflow:space"
FINGERPRINT_KEY = "nasflow:fingerprint"
OBJECTIVES_KEY = "nasflow:objectives"
#: The supernet that scores the trials (its ``SupernetConfig`` and space fingerprint).
SUPERNET_IDENTITY_KEY = "nasflow:supernet_identity"
#: What every score and objective is measured with: the data (its fingerprint, see
#: ``nasflow.data.data_fingerprint``), the training and fine-tuning recipes, the BN
#: recalibration batches and the cost estimator (see :func:`scoring_identity`).
SCORING_KEY = "nasflow:scoring"
IDENTITY_KEYS = (SPACE_KEY, FINGERPRINT_KEY, OBJECTIVES_KEY, SUPERNET_IDENTITY_KEY, SCORING_KEY)
#: Identity keys compared by their own rules (a readable diff, adopted when missing).
_RECORDED_KEYS = (SUPERNET_IDENTITY_KEY, SCORING_KEY)
#: Study user attribute holding the space's ``config`` as JSON (lets ``nasflow export``
#: re-create a space built with constructor arguments; the fingerprint covers it).
SPACE_CONFIG_KEY = "nasflow:space_config"
#: Study user attribute holding the supernet record of phase 1 (sampler, epochs, op counts).
SUPERNET_KEY = "nasflow:supernet"
#: Study user attribute holding the seconds each phase took (summed over finished runs).
SECONDS_KEY = "nasflow:seconds"
#: Study user attribute: the trials the study's own finished runs scored (not a worker's),
#: as ``[first, last]`` ranges of trial numbers.
SEARCH_TRIALS_KEY = "nasflow:search_trials"
#: Study user attribute holding the measured speedup stack (``auto_stack``'s record).
STACK_KEY = "nasflow:stack"
#: Study user attribute: candidates scored from the supernet and the median scoring time.
SCREENING_KEY = "nasflow:screening"
#: Study user attribute holding the speedup-multiplier record of the search.
MULTIPLIERS_KEY = "nasflow:multipliers"
#: Study user attribute holding the trust probe's record.
TRUST_KEY = "nasflow:trust"
#: Study user attribute holding the record of the ranker that chose the finalists.
RANKER_KEY = "nasflow:ranker"
#: Study user attribute holding the cost table's stability record.
COST_TABLE_KEY = "nasflow:cost_table"
#: Study user attribute holding the fine-tuning phase's record (every fine-tuned finalist;
#: typed by ``nasflow.record.FineTuneResult``, each ready model's own record in
#: ``RunFolder.ready`` by ``nasflow.pipeline.read_ready``).
FINETUNED_KEY = "nasflow:finetuned"
#: Study user attribute holding the zero-cost anchors' record (each anchor's trial, how it
#: was chosen, its from-scratch training; phase 0, ``nasflow.search.Anchors``).
ANCHORS_KEY = "nasflow:anchors"
#: Study user attribute naming the model a finished run keeps (what the summary's "kept
#: model" line says, and what ``nasflow export NAME --best`` exports): ``{"trial": N,
#: "weights": "retrained" | "fine-tuned", "source": "search" | "anchor"}``.
KEPT_KEY = "nasflow:kept"
#: Study user attribute holding the test accuracies of the study's table of random
#: architectures trained stand-alone with its recipe (``StudySpec.baseline``), as the
#: finished run read it: what share of them the kept model beats (``BaselineRecord``).
BASELINE_KEY = "nasflow:baseline"
#: Study user attribute: which inputs of the finished run a clock decided (the stack's
#: calibration, the cost table, fine-tuning's promotion, other processes) and whether it
#: ran deterministic (``nasflow.search.reproducibility_record``).
REPRODUCIBILITY_KEY = "nasflow:reproducibility"
#: Study user attribute holding the rung schedule's record (``StudySpec.rungs``: the plan,
#: how many candidates reached each rung, how well each rung ranked the next).
RUNGS_KEY = "nasflow:rungs"
#: Trial user attributes of the rung study (``NAME:rungs``): the candidate's fine-tuned
#: record (``FineTuned.to_dict()``) and its top rung's training from scratch
#: (``RetrainRecord.to_dict()``), written by whichever worker trained it.
RUNG_READY_ATTR = "nasflow:ready"
#: Trial user attributes of the rung study set when a candidate is queued: its screening
#: trial, its screening score (rung 0) and the top rung's report step (with ``ARCH_ATTR``
#: and ``ANCHOR_ATTR``).
RUNG_SCREENED_ATTR = "screening_trial"
RUNG_SCORE_ATTR = "rung0"
RUNG_TOP_ATTR = "top_step"
RUNG_RETRAINED_ATTR = "nasflow:retrained"
#: Trial user attributes of the task study (``NAME:tasks``): what a queued training is
#: (its task key) and what it measured, with the process that ran it.
TASK_ATTR = "nasflow:task"
TASK_RESULT_ATTR = "nasflow:task_result"
#: Study user attributes of the task study: the study process's run in progress, the last
#: run it closed, and its runs folder (a worker with another takes no task).
TASKS_RUN_KEY = "nasflow:tasks_run"
TASKS_CLOSED_KEY = "nasflow:tasks_closed"
TASKS_FOLDER_KEY = "nasflow:tasks_folder"
#: Prefix of the per-winner records written by phase 3 (``nasflow:retrain:<trial number>``).
RETRAIN_PREFIX = "nasflow:retrain:"

#: Trial user attribute: the objective vector at the supernet's weights (screening).
SCREEN_KEY = "nasflow:screen"
#: Trial user attribute holding constraint values on Optuna 4.x.
CONSTRAINTS_KEY = "nasflow:constraints"
#: Trial user attributes of the Pareto pruner: the last reported step and its vector.
LAST_STEP_KEY = "nasflow:last_step"
LAST_VALUES_KEY = "nasflow:last_values"
#: Trial system attribute: how often a trial was stopped on request and queued again.
STOPS_KEY = "nasflow:stops"

#: Key of the content digest inside a saved checkpoint state.
DIGEST_KEY = "nasflow:sha256"
#: Checkpoint field holding the supernet identity (see :func:`supernet_identity`).
CHECKPOINT_IDENTITY = "identity"

# Trial user attributes nasflow writes (read them through :class:`TrialRecord`).
#: The trial's architecture, as ``Arch.to_json()``.
ARCH_ATTR = "arch"
#: Parameter count of the stand-alone network.
PARAMS_ATTR = "params"
#: Predicted (or measured) seconds to train the candidate stand-alone for the budget.
TRAIN_COST_ATTR = "train_cost"
#: Validation accuracy at the supernet's weights (BN recalibrated).
SUPERNET_ACCURACY_ATTR = "supernet_accuracy"
#: Validation cross-entropy at the supernet's weights (the same forward passes).
SUPERNET_LOSS_ATTR = "supernet_loss"
#: Why a candidate over the budget was not scored (pruned without training).
SKIPPED_ATTR = "skipped"
#: Seconds the one-shot score took (extract, BN recalibration, validation).
SCORE_SECONDS_ATTR = "score_seconds"
#: Fine-tuning epochs trained so far.
EPOCHS_TRAINED_ATTR = "epochs_trained"
#: Why screening stopped a candidate before fine-tuning.
SCREENED_OUT_ATTR = "screened_out"
#: Why an attempt failed or was pruned, and its traceback.
FAIL_REASON_ATTR = "fail_reason"
TRACEBACK_ATTR = "traceback"
#: ``[epoch, batch]`` a fine-tuning resumed from.
RESUMED_AT_ATTR = "resumed_at"
#: Trial user attribute of a trial whose architecture was already scored: the earlier trial.
DUPLICATE_KEY = "duplicate_of"
#: Trial user attribute of a zero-cost anchor's trial: its index among the anchors.
ANCHOR_ATTR = "anchor"
#: Trial user attribute of a tabular study's trial: the table's key of its architecture.
TABLE_KEY_ATTR = "table_key"
#: Every trial user attribute nasflow writes besides its ``nasflow:`` keys.
TRIAL_ATTRS = (
    ARCH_ATTR,
    PARAMS_ATTR,
    TRAIN_COST_ATTR,
    SUPERNET_ACCURACY_ATTR,
    SUPERNET_LOSS_ATTR,
    SKIPPED_ATTR,
    SCORE_SECONDS_ATTR,
    EPOCHS_TRAINED_ATTR,
    SCREENED_OUT_ATTR,
    FAIL_REASON_ATTR,
    TRACEBACK_ATTR,
    RESUMED_AT_ATTR,
    DUPLICATE_KEY,
    ANCHOR_ATTR,
    TABLE_KEY_ATTR,
)
#: Trial user attributes of a finished attempt that must not leak into its retry.
PER_ATTEMPT_ATTRS = (FAIL_REASON_ATTR, TRACEBACK_ATTR)
#: Trial user attributes that describe one attempt, not the architecture's score.
_ATTEMPT_KEYS = frozenset({ARCH_ATTR, *PER_ATTEMPT_ATTRS, RESUMED_AT_ATTR, DUPLICATE_KEY})

#: What the supernet identity of a tabular study (scored from its table) says.
NO_SUPERNET = "none: scored from a table"


def retrain_key(number: int) -> str:
    """Study user attribute holding phase 3's record of trial ``number``."""
    return f"{RETRAIN_PREFIX}{number}"


def step_key(step: int) -> str:
    """Rung-study trial user attribute holding the objective vector reported at ``step``
    (several objectives: Optuna keeps intermediate values for one only)."""
    return f"{PREFIX}step_{step}"


def rung_key(rung: int) -> str:
    """Trial user attribute holding a trial's objective vector at pruner rung ``rung``."""
    return f"{PREFIX}rung_{rung}"
