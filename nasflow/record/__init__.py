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

Every study record is typed, read and written once, here: a frozen dataclass per record
(``from_dict`` checks the stored record once, ``to_dict`` gives it back as stored), one
reader per record on a study (``study_stack(study)``, ``study_finetuned(study)``...:
``None`` where the study holds none) and one writer (:func:`write_record`). Nothing
outside this package reads a study's or a trial's user attributes (a test guards it).

The package's modules: ``_keys`` (every key, defined nowhere else), ``_folder`` (the run
folder), ``_identity`` (writing and checking a study's identity), ``_reading`` (opening a
stored study, score reuse, constraints), ``_typed`` (a trial's record, a saved winner's,
the baseline table's), ``_records`` (the typed study records: the stack's, the cost
table's and the multipliers' in ``_measured``, the phases' in ``_phases``, fine-tuning's in
``_finetuned``, the rungs' in ``_rungs``) and ``_study`` (the readers and the writer).
Import from ``nasflow.record``, not from them.

``__all__`` is the public part: the typed records, their readers and the stored study a
user or an extension reads. The other names imported here (every key, the identity
checks, the trial readers) are the face nasflow's own layers use, not a stable API.
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
    study_scoring,
    study_space_identity,
    supernet_identity,
    write_identity,
)
from nasflow.record._keys import (
    ANCHOR_ATTR,
    ANCHORS_KEY,
    ARCH_ATTR,
    BASELINE_KEY,
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
    KEPT_KEY,
    LAST_STEP_KEY,
    LAST_VALUES_KEY,
    MULTIPLIERS_KEY,
    NO_SUPERNET,
    OBJECTIVES_KEY,
    PARAMS_ATTR,
    PER_ATTEMPT_ATTRS,
    PREFIX,
    REPRODUCIBILITY_KEY,
    RESUMED_AT_ATTR,
    RETRAIN_PREFIX,
    RUNG_READY_ATTR,
    RUNG_RETRAINED_ATTR,
    RUNGS_KEY,
    SCORE_SECONDS_ATTR,
    SCORING_KEY,
    SCREEN_KEY,
    SCREENED_OUT_ATTR,
    SCREENING_KEY,
    SEARCH_TRIALS_KEY,
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
    TABLE_KEY_ATTR,
    TASK_ATTR,
    TASK_RESULT_ATTR,
    TASKS_CLOSED_KEY,
    TASKS_FOLDER_KEY,
    TASKS_RUN_KEY,
    TRACEBACK_ATTR,
    TRAIN_COST_ATTR,
    TRIAL_ATTRS,
    TRUST_KEY,
    retrain_key,
    rung_key,
    step_key,
)
from nasflow.record._reading import (
    StoredStudy,
    copy_constraints,
    get_constraints,
    open_stored_study,
    reuse_score,
    sampler_constraints_kwargs,
    scored_trial,
    set_constraints,
    stored_space,
    study_metric_names,
    study_objectives,
    trial_rung,
    trial_screen,
)
from nasflow.record._records._finetuned import (
    EarlyStopping,
    FineTuned,
    FineTuneResult,
    ReadyModelError,
)
from nasflow.record._records._measured import (
    MULTIPLIER_PARTS,
    STACK_SCHEMA,
    CalibrationStep,
    CostCalibration,
    CostTableRecord,
    MultiplierPart,
    MultipliersRecord,
    StackCalibration,
    StackDecision,
    StackLayer,
    StackOrigin,
    StackRecord,
)
from nasflow.record._records._phases import (
    AnchorEntry,
    AnchorsRecord,
    KeptRecord,
    ReproducibilityRecord,
    RetrainRecord,
    ScreeningRecord,
    SupernetRecord,
    TrustRecord,
)
from nasflow.record._records._ranker import RankerRecord
from nasflow.record._records._rungs import (
    RungEntry,
    RungsRecord,
    RungStep,
    rung_outcome,
    rung_value,
    study_rungs,
)
from nasflow.record._records._tasks import TasksState, task_key, task_result
from nasflow.record._study import (
    StudyRecord,
    study_anchors,
    study_baseline,
    study_cost_table,
    study_finetuned,
    study_kept,
    study_multipliers,
    study_ranker,
    study_reproducibility,
    study_retrains,
    study_screening,
    study_search_trials,
    study_seconds,
    study_stack,
    study_supernet,
    study_trust,
    write_record,
    write_search_trials,
    write_seconds,
)
from nasflow.record._typed import WINNER_IDENTITY, BaselineRecord, TrialRecord, WinnerRecord

__all__ = [
    "AnchorsRecord",
    "BaselineRecord",
    "CostTableRecord",
    "FineTuneResult",
    "FineTuned",
    "KeptRecord",
    "MultipliersRecord",
    "ReproducibilityRecord",
    "RetrainRecord",
    "RunFolder",
    "RungsRecord",
    "ScreeningRecord",
    "StackRecord",
    "StoredStudy",
    "StudyMismatchError",
    "StudyRecord",
    "StudyRecordError",
    "SupernetRecord",
    "TrialRecord",
    "TrustRecord",
    "open_stored_study",
    "stored_space",
    "study_finetuned",
    "study_kept",
    "study_multipliers",
    "study_retrains",
    "study_rungs",
    "study_stack",
    "study_trust",
    "write_record",
]
