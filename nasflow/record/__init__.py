"""The study record: what nasflow writes into a study, and where a run's files live.

Every ``nasflow:*`` key is defined in ``_keys``, and nowhere else: the study user attributes
(identity, space config, supernet, stack, screening, multipliers, trust, cost table,
retrained winners, phase timings), the trial user and system attributes (screening
vector, pruner rungs, constraints on Optuna 4.x, stop count), and the digest key inside a
checkpoint file. They share one namespace, so one owner keeps them from colliding and
one search finds them all. The package also writes and checks a study's identity, re-creates
the space a stored study searched (:func:`stored_space`), opens a stored study for reading
(:func:`open_stored_study`, the loader of ``nasflow report``, ``dashboard``, ``show`` and
``export``), names the folders and locks of a run under ``--runs`` (:class:`RunFolder`),
and keeps an architecture from being scored twice in one study (:func:`reuse_score`).

Why a top-level package: the keys are read and written in every layer, ``train`` (the
checkpoint digest and the supernet identity it records), ``bench`` (score reuse),
``search``, ``report``, ``export`` and the CLI. Inside ``nasflow.search`` it would pull in
the study runner (torch, the trainer, the data) for a report that only opens a study, and
``train`` and ``bench``, which ``search`` imports, could not import it without a circle.
So it imports only the standard library, Optuna and nasflow's light top-level modules;
the space registry and the storage are imported when a study is opened.

The package's modules: ``_keys`` (every key, defined nowhere else), ``_folder`` (the run
folder), ``_identity`` (writing and checking a study's identity), ``_reading`` (opening a
stored study, score reuse, constraints) and ``_typed`` (one frozen dataclass per record).
Import from ``nasflow.record``, not from them.
"""

from __future__ import annotations

from nasflow.errors import StudyRecordError
from nasflow.record._folder import RunFolder, StudyMismatchError
from nasflow.record._identity import (
    check_identity,
    checkpoint_fingerprint,
    checkpoint_mismatch,
    has_identity,
    scoring_change,
    scoring_identity,
    study_data_fingerprint,
    study_identity,
    supernet_identity,
    write_identity,
)
from nasflow.record._keys import (
    ARCH_ATTR,
    CHECKPOINT_IDENTITY,
    CONSTRAINTS_KEY,
    COST_TABLE_KEY,
    DIGEST_KEY,
    DUPLICATE_KEY,
    EPOCHS_TRAINED_ATTR,
    FAIL_REASON_ATTR,
    FINETUNED_KEY,
    FINGERPRINT_KEY,
    IDENTITY_KEYS,
    LAST_STEP_KEY,
    LAST_VALUES_KEY,
    MULTIPLIERS_KEY,
    NO_SUPERNET,
    OBJECTIVES_KEY,
    PARAMS_ATTR,
    PER_ATTEMPT_ATTRS,
    PREFIX,
    RESUMED_AT_ATTR,
    RETRAIN_PREFIX,
    SCORE_SECONDS_ATTR,
    SCORING_KEY,
    SCREEN_KEY,
    SCREENED_OUT_ATTR,
    SCREENING_KEY,
    SECONDS_KEY,
    SKIPPED_ATTR,
    SPACE_CONFIG_KEY,
    SPACE_KEY,
    STACK_KEY,
    STOPS_KEY,
    SUPERNET_ACCURACY_ATTR,
    SUPERNET_IDENTITY_KEY,
    SUPERNET_KEY,
    SUPERNET_LOSS_ATTR,
    TRACEBACK_ATTR,
    TRAIN_COST_ATTR,
    TRIAL_ATTRS,
    TRUST_KEY,
    retrain_key,
    rung_key,
)
from nasflow.record._reading import (
    StoredStudy,
    copy_constraints,
    get_constraints,
    open_stored_study,
    retrain_records,
    reuse_score,
    sampler_constraints_kwargs,
    scored_trial,
    set_constraints,
    stored_space,
    study_metric_names,
    study_objectives,
    study_stack_dict,
)
from nasflow.record._typed import (
    MULTIPLIER_PARTS,
    STACK_SCHEMA,
    WINNER_IDENTITY,
    CalibrationStep,
    CostCalibration,
    CostTableRecord,
    MultiplierPart,
    MultipliersRecord,
    StackRecord,
    TrialRecord,
    WinnerRecord,
)

__all__ = [
    "ARCH_ATTR",
    "CHECKPOINT_IDENTITY",
    "CONSTRAINTS_KEY",
    "COST_TABLE_KEY",
    "DIGEST_KEY",
    "DUPLICATE_KEY",
    "EPOCHS_TRAINED_ATTR",
    "FAIL_REASON_ATTR",
    "FINETUNED_KEY",
    "FINGERPRINT_KEY",
    "IDENTITY_KEYS",
    "LAST_STEP_KEY",
    "LAST_VALUES_KEY",
    "MULTIPLIERS_KEY",
    "MULTIPLIER_PARTS",
    "NO_SUPERNET",
    "OBJECTIVES_KEY",
    "PARAMS_ATTR",
    "PER_ATTEMPT_ATTRS",
    "PREFIX",
    "RESUMED_AT_ATTR",
    "RETRAIN_PREFIX",
    "SCORE_SECONDS_ATTR",
    "SCORING_KEY",
    "SCREENED_OUT_ATTR",
    "SCREENING_KEY",
    "SCREEN_KEY",
    "SECONDS_KEY",
    "SKIPPED_ATTR",
    "SPACE_CONFIG_KEY",
    "SPACE_KEY",
    "STACK_KEY",
    "STACK_SCHEMA",
    "STOPS_KEY",
    "SUPERNET_ACCURACY_ATTR",
    "SUPERNET_IDENTITY_KEY",
    "SUPERNET_KEY",
    "SUPERNET_LOSS_ATTR",
    "TRACEBACK_ATTR",
    "TRAIN_COST_ATTR",
    "TRIAL_ATTRS",
    "TRUST_KEY",
    "WINNER_IDENTITY",
    "CalibrationStep",
    "CostCalibration",
    "CostTableRecord",
    "MultiplierPart",
    "MultipliersRecord",
    "RunFolder",
    "StackRecord",
    "StoredStudy",
    "StudyMismatchError",
    "StudyRecordError",
    "TrialRecord",
    "WinnerRecord",
    "check_identity",
    "checkpoint_fingerprint",
    "checkpoint_mismatch",
    "copy_constraints",
    "get_constraints",
    "has_identity",
    "open_stored_study",
    "retrain_key",
    "retrain_records",
    "reuse_score",
    "rung_key",
    "sampler_constraints_kwargs",
    "scored_trial",
    "scoring_change",
    "scoring_identity",
    "set_constraints",
    "stored_space",
    "study_data_fingerprint",
    "study_identity",
    "study_metric_names",
    "study_objectives",
    "study_stack_dict",
    "supernet_identity",
    "write_identity",
]
