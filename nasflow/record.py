"""The study record: what nasflow writes into a study, and where a run's files live.

Every ``nasflow:*`` key is defined here, and nowhere else: the study user attributes
(identity, space config, supernet, stack, screening, multipliers, trust, cost table,
retrained winners, phase timings), the trial user and system attributes (screening
vector, pruner rungs, constraints on Optuna 4.x, stop count), and the digest key inside a
checkpoint file. They share one namespace, so one owner keeps them from colliding and
one search finds them all. The module also writes and checks a study's identity, re-creates
the space a stored study searched (:func:`stored_space`), opens a stored study for reading
(:func:`open_stored_study`, the loader of ``nasflow report``, ``dashboard``, ``show`` and
``export``), names the folders and locks of a run under ``--runs`` (:class:`RunFolder`),
and keeps an architecture from being scored twice in one study (:func:`reuse_score`).

Why a top-level module: the keys are read and written in every layer, ``train`` (the
checkpoint digest and the supernet identity it records), ``bench`` (score reuse),
``search``, ``report``, ``export`` and the CLI. Inside ``nasflow.search`` it would pull in
the study runner (torch, the trainer, the data) for a report that only opens a study, and
``train`` and ``bench``, which ``search`` imports, could not import it without a circle.
So it imports only the standard library, Optuna and nasflow's light top-level modules;
the space registry and the storage are imported when a study is opened.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import optuna
from optuna.trial import FrozenTrial, TrialState

from nasflow._compat import OPTUNA_MAJOR
from nasflow.errors import NasflowError, NotFoundError, StudyRecordError
from nasflow.names import objective_names, set_metric_names

if TYPE_CHECKING:
    from nasflow.space import Arch, SearchSpace
    from nasflow.storage import StorageSpec

# ---------------------------------------------------------------------- keys
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
#: Study user attribute holding the seconds each phase took.
SECONDS_KEY = "nasflow:seconds"
#: Study user attribute holding the measured speedup stack (``auto_stack``'s record).
STACK_KEY = "nasflow:stack"
#: Study user attribute: candidates scored from the supernet and the median scoring time.
SCREENING_KEY = "nasflow:screening"
#: Study user attribute holding the speedup-multiplier record of the search.
MULTIPLIERS_KEY = "nasflow:multipliers"
#: Study user attribute holding the trust probe's record.
TRUST_KEY = "nasflow:trust"
#: Study user attribute holding the cost table's stability record.
COST_TABLE_KEY = "nasflow:cost_table"
#: Study user attribute holding the fine-tuning phase's record (every fine-tuned finalist;
#: typed by ``nasflow.search.FineTuneResult.from_record``, each ready model's own record in
#: ``RunFolder.ready`` by ``nasflow.search.read_ready``).
FINETUNED_KEY = "nasflow:finetuned"
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
#: Every trial user attribute nasflow writes besides its ``nasflow:`` keys.
TRIAL_ATTRS = (
    ARCH_ATTR,
    PARAMS_ATTR,
    TRAIN_COST_ATTR,
    SUPERNET_ACCURACY_ATTR,
    SKIPPED_ATTR,
    SCORE_SECONDS_ATTR,
    EPOCHS_TRAINED_ATTR,
    SCREENED_OUT_ATTR,
    FAIL_REASON_ATTR,
    TRACEBACK_ATTR,
    RESUMED_AT_ATTR,
    DUPLICATE_KEY,
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


def rung_key(rung: int) -> str:
    """Trial user attribute holding a trial's objective vector at pruner rung ``rung``."""
    return f"{PREFIX}rung_{rung}"


# ---------------------------------------------------------------------- errors
class StudyMismatchError(NasflowError, ValueError):
    """A stored study was created for another space, objectives or directions."""


# ---------------------------------------------------------------------- run folder
@dataclass(frozen=True)
class RunFolder:
    """The files of one study's run: ``RUNS/NAME`` (``root``) and what lies in it.

    Attributes:
        root: The run's folder.
    """

    root: Path

    @classmethod
    def of(cls, runs: os.PathLike | str, name: str) -> RunFolder:
        """``RUNS/NAME``."""
        return cls(Path(runs) / name)

    @property
    def database(self) -> Path:
        """The default SQLite study file."""
        return self.root / "study.db"

    @property
    def supernet(self) -> Path:
        """Phase 1's supernet checkpoints."""
        return self.root / "supernet"

    @property
    def supernet_lock(self) -> Path:
        """Held while one worker trains the supernet (the others wait)."""
        return self.root / "supernet.lock"

    @property
    def stack_lock(self) -> Path:
        """Held while one worker calibrates the speedup stack."""
        return self.root / "stack.lock"

    @property
    def finetune(self) -> Path:
        """Phase 2's fine-tuning checkpoints, one folder per trial."""
        return self.root / "finetune"

    @property
    def ready(self) -> Path:
        """The fine-tuning phase's ready models, one ``trial-N`` folder each."""
        return self.root / "ready"

    @property
    def winners(self) -> Path:
        """Phase 3's retrained winners, one ``trial-N`` folder each."""
        return self.root / "winners"

    def winner(self, number: int) -> Path:
        """Where trial ``number``'s retrained weights and their record live."""
        return self.winners / f"trial-{number}"

    @property
    def report(self) -> Path:
        """The default ``nasflow report`` file."""
        return self.root / "report.html"


# ---------------------------------------------------------------------- identity
def supernet_identity(
    fingerprint: str,
    config: Mapping[str, Any] | None,
    stack: Mapping[str, Any] | None = None,
    data: str | None = None,
) -> str:
    """The identity of a supernet: trials scored by another supernet are not comparable.

    Args:
        fingerprint: The space's fingerprint.
        config: The ``SupernetConfig`` as a dict; ``None`` for a tabular study (nothing
            trains: :data:`NO_SUPERNET`).
        stack: The speedup stack it trains with, recorded in checkpoints when not plain.
        data: The fingerprint of the data it trains on, recorded in checkpoints (the
            study records it in its scoring record, ``SCORING_KEY``).
    """
    if config is None:
        return NO_SUPERNET
    ident: dict[str, Any] = {"space": fingerprint, "config": dict(config)}
    if stack is not None:
        ident["stack"] = dict(stack)
    if data is not None:
        ident["data"] = data
    return json.dumps(ident, sort_keys=True)


def checkpoint_mismatch(stored: Any, want: str) -> str | None:
    """Why a checkpoint's identity ``stored`` is not this run's ``want`` (``None``: it is
    the same, or the same but for the data fingerprint an older checkpoint lacks)."""
    if stored == want:
        return None
    try:
        had, now = json.loads(stored), json.loads(want)
    except (TypeError, ValueError):
        return "written for another space or supernet configuration"
    if not isinstance(had, dict) or not isinstance(now, dict):
        return "written for another space or supernet configuration"
    if "data" not in had and {k: v for k, v in now.items() if k != "data"} == had:
        return None  # written before checkpoints recorded their data
    if had.get("data") != now.get("data") and {**had, "data": None} == {**now, "data": None}:
        return (
            f"trained on other data (data fingerprint {had.get('data')!r}, this study's "
            f"{now.get('data')!r})"
        )
    return "written for another space or supernet configuration"


def checkpoint_fingerprint(state: Mapping[str, Any]) -> str | None:
    """The space fingerprint a supernet checkpoint was trained for (``None``: no identity)."""
    try:
        fingerprint = json.loads(state[CHECKPOINT_IDENTITY])["space"]
    except (KeyError, TypeError, ValueError):
        return None
    return fingerprint if isinstance(fingerprint, str) else None


def _supernet_change(stored: str, want: str) -> str:
    """What differs between two supernet records, e.g. ``epochs 3 in the study, 4 here``."""
    try:
        a, b = json.loads(stored), json.loads(want)
        old, new = a["config"], b["config"]
        diff = [
            f"{k} {old.get(k)!r} in the study, {new.get(k)!r} here"
            for k in new
            if old.get(k) != new.get(k)
        ]
        if a["space"] != b["space"]:
            diff.append(f"space {a['space']} in the study, {b['space']} here")
    except (ValueError, TypeError, KeyError):
        diff = []
    return ", ".join(diff) or f"{stored} in the study, {want} here"


def scoring_identity(data: str | None, **settings: Any) -> str:
    """What a study's scores and objectives are measured with, as recorded JSON.

    Args:
        data: The data bundle's fingerprint (``nasflow.data.data_fingerprint``); ``None``
            for a tabular study.
        settings: JSON-able settings that change a score or an objective (the training
            and fine-tuning recipes, the BN recalibration batches, the cost estimator).
    """
    return json.dumps({"data": data, **settings}, sort_keys=True)


def _flat(record: Any, prefix: str = "") -> dict[str, Any]:
    """``{"train": {"epochs": 2}}`` -> ``{"train.epochs": 2}``."""
    if not isinstance(record, dict):
        return {prefix: record}
    out: dict[str, Any] = {}
    for k, v in record.items():
        out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def scoring_change(stored: str, want: str) -> str:
    """What differs between two scoring records, e.g. ``train.epochs 2 in the study, 3
    here``; the data fingerprint is called ``data``."""
    try:
        a, b = json.loads(stored), json.loads(want)
        old, new = {}, {}
        for k in set(a) | set(b):  # nested records compared field by field where both are
            both = isinstance(a.get(k), dict) and isinstance(b.get(k), dict)
            old.update(_flat(a.get(k), k) if both else {k: a.get(k)})
            new.update(_flat(b.get(k), k) if both else {k: b.get(k)})
    except (ValueError, TypeError, AttributeError):
        return f"{stored} in the study, {want} here"
    diff = [
        f"{k} {old.get(k)!r} in the study, {new.get(k)!r} here"
        for k in sorted(set(old) | set(new), key=lambda k: (k != "data", k))
        if old.get(k) != new.get(k)
    ]
    return ", ".join(diff) or f"{stored} in the study, {want} here"


def study_identity(
    space: SearchSpace, objectives: Any, supernet: str, scoring: str | None = None
) -> dict[str, str]:
    """The identity a study of ``space`` and ``objectives`` records (see ``IDENTITY_KEYS``).

    Args:
        space: The searched space.
        objectives: The objective keys, in order.
        supernet: :func:`supernet_identity` of the supernet that scores the trials.
        scoring: :func:`scoring_identity` of the data and recipes the trials are scored
            with (``None``: not checked).
    """
    ident = {
        SPACE_KEY: space.name,
        FINGERPRINT_KEY: space.fingerprint(),
        OBJECTIVES_KEY: json.dumps(list(objectives)),
        SUPERNET_IDENTITY_KEY: supernet,
    }
    if scoring is not None:
        ident[SCORING_KEY] = scoring
    return ident


def study_data_fingerprint(study: optuna.Study) -> str | None:
    """The fingerprint of the data a study was scored on (``None``: not recorded)."""
    try:
        data = json.loads(study.user_attrs[SCORING_KEY])["data"]
    except (KeyError, TypeError, ValueError):
        return None
    return data if isinstance(data, str) else None


def has_identity(study: optuna.Study) -> bool:
    """Whether nasflow recorded (part of) an identity on ``study``."""
    return any(k in study.user_attrs for k in IDENTITY_KEYS)


def write_identity(
    study: optuna.Study, identity: dict[str, str], space_config: Mapping[str, Any]
) -> None:
    """Record what a new study searches (keys a racing worker wrote are kept)."""
    if all(k in study.user_attrs for k in identity):
        return
    for k, v in identity.items():
        if k not in study.user_attrs:  # (a worker racing us may have written them)
            study.set_user_attr(k, v)
    study.set_user_attr(SPACE_CONFIG_KEY, json.dumps(dict(space_config)))


def check_identity(
    study: optuna.Study,
    identity: dict[str, str],
    directions: list[str],
    metric_names: list[str],
    where: str,
) -> list[str]:
    """Refuse a stored study created for another space, objectives, directions, supernet,
    data, recipes or metric names; adopt the supernet identity, the scoring record and
    the metric names of a study written before they were recorded.

    Args:
        study: The stored study.
        identity: What this run would record (:func:`study_identity`).
        directions: This run's directions (``"maximize"``/``"minimize"``).
        metric_names: This run's objective names.
        where: The storage's printable URL, for messages.

    Returns:
        One warning line per record adopted from this run (an older study's).

    Raises:
        StudyMismatchError: Naming what differs.
    """
    name = study.study_name
    stored = {k: study.user_attrs.get(k) for k in IDENTITY_KEYS}
    have_dirs = [d.name.lower() for d in study.directions]
    for k in IDENTITY_KEYS:
        if k not in _RECORDED_KEYS and stored[k] != identity[k]:
            raise StudyMismatchError(
                f"study {name!r} in {where!r} was created with "
                f"{k.split(':')[1]}={stored[k]!r}, this study file has {identity[k]!r}; "
                "use another study name or storage"
            )
    if have_dirs != directions:
        raise StudyMismatchError(
            f"study {name!r} has directions {have_dirs}, this study file "
            f"{directions}; use another study name or storage"
        )
    had, want = stored[SUPERNET_IDENTITY_KEY], identity[SUPERNET_IDENTITY_KEY]
    if had != want and had is not None:
        raise StudyMismatchError(
            f"study {name!r} in {where!r} was scored by another "
            f"supernet ({_supernet_change(had, want)}); its "
            "trials would not be comparable with new ones: give the study a new name "
            "(StudySpec(name=...)) or use another storage"
        )
    if had is None:  # created before supernets were recorded: adopt it
        study.set_user_attr(SUPERNET_IDENTITY_KEY, want)
    names = study.metric_names
    if names is not None and list(names) != metric_names:
        raise StudyMismatchError(
            f"study {name!r} in {where!r} records its objectives "
            f"as {list(names)}, this study file would record {metric_names} (a "
            "change between fine-tuning (finetune) and none changes what the first "
            "objective measures); use another study name or storage"
        )
    notes = _check_scoring(study, stored[SCORING_KEY], identity.get(SCORING_KEY), where)
    if names is None:  # created before metric names were recorded: adopt them
        set_metric_names(study, metric_names)
    return notes


def _check_scoring(study: optuna.Study, had: Any, want: str | None, where: str) -> list[str]:
    """Refuse a study scored on other data or with other recipes (see ``SCORING_KEY``);
    record this run's where an older nasflow recorded none (one warning line)."""
    if want is None or had == want:
        return []
    if had is None:
        study.set_user_attr(SCORING_KEY, want)
        return [
            f"warning: study {study.study_name!r} was written by an older nasflow that did "
            "not record its data and recipes; recorded this run's, checked from now on"
        ]
    raise StudyMismatchError(
        f"study {study.study_name!r} in {where!r} was scored with other data or settings "
        f"({scoring_change(str(had), want)}); its trials would not be comparable with new "
        "ones: give the study a new name (StudySpec(name=...)) or use another storage"
    )


# ---------------------------------------------------------------------- reading
class StoredStudy(NamedTuple):
    """A loaded study, its Optuna storage and where that storage lives."""

    study: optuna.Study
    storage: optuna.storages.BaseStorage
    spec: StorageSpec


def open_stored_study(
    name: str,
    storage: str | os.PathLike | optuna.storages.BaseStorage | None = None,
    runs: os.PathLike | str = "runs",
) -> StoredStudy:
    """Open study ``name`` for reading without creating anything.

    Args:
        name: The study name.
        storage: ``--storage`` URL or an Optuna storage object; ``None`` means the run
            folder's database (``RUNS/NAME/study.db``).
        runs: Folder holding one run folder per study.

    Raises:
        StudyRecordError: No study file at the path, a file that is not an Optuna
            database, or no study of that name there.
        StorageError: A malformed URL or an unreachable database.
    """
    from nasflow.storage import check_reachable, check_study_file, open_storage, resolve_storage

    spec = resolve_storage(storage, RunFolder.of(runs, name).database)
    if spec.path is not None and not spec.path.is_file():
        raise StudyRecordError(f"no study file at {str(spec.path)!r} (give --storage URL)")
    check_study_file(spec)
    check_reachable(spec)
    opened = open_storage(spec)
    names = sorted(s.study_name for s in optuna.get_all_study_summaries(opened))
    if name not in names:
        raise StudyRecordError(f"no study {name!r} in {spec.safe_url!r}; studies there: {names}")
    return StoredStudy(optuna.load_study(study_name=name, storage=opened), opened, spec)


def stored_space(study: optuna.Study, space: SearchSpace | None = None) -> SearchSpace:
    """Re-create the space a study searched, from its records and the space registry.

    Args:
        study: A study written by nasflow's study runner.
        space: The space itself (one defined in a script or notebook, not registered):
            then it is only checked against the study's record.

    Raises:
        StudyRecordError: The study records no nasflow space, its space is not registered,
            or the space does not have the recorded name and fingerprint.
    """
    from nasflow.space import rebuild_space

    attrs = study.user_attrs
    name, fingerprint = attrs.get(SPACE_KEY), attrs.get(FINGERPRINT_KEY)
    if not isinstance(name, str) or not isinstance(fingerprint, str):
        raise StudyRecordError(f"study {study.study_name!r} records no nasflow space")
    if space is not None:
        if (space.name, space.fingerprint()) != (name, fingerprint):
            raise StudyRecordError(
                f"study {study.study_name!r} searched space {name!r} (fingerprint "
                f"{fingerprint!r}), not {space.name!r} ({space.fingerprint()!r})"
            )
        return space
    raw = attrs.get(SPACE_CONFIG_KEY)
    try:
        config = json.loads(raw) if isinstance(raw, str) else None
        return rebuild_space(name, config, fingerprint)
    except ValueError as e:
        raise StudyRecordError(f"study {study.study_name!r}: {e}") from None


def study_objectives(study: optuna.Study) -> list[str]:
    """The objective keys a study records (``[]`` without a record)."""
    raw = study.user_attrs.get(OBJECTIVES_KEY)
    return json.loads(raw) if isinstance(raw, str) else []


def study_metric_names(study: optuna.Study) -> list[str]:
    """The names of a stored study's objectives: its Optuna ``metric_names`` when set (nasflow
    sets them), else derived from its ``nasflow:objectives`` record (studies written before
    names were recorded, whose first objective may be a supernet score or a fine-tuned
    accuracy: it is called ``accuracy`` then), else ``objective 0``, ``objective 1``...
    """
    names = study.metric_names
    if names is not None and len(names) == len(study.directions):
        return list(names)
    raw = study.user_attrs.get(OBJECTIVES_KEY)
    try:
        keys = json.loads(raw) if isinstance(raw, str) else raw
        if isinstance(keys, list) and len(keys) == len(study.directions):
            return ["accuracy" if k == "accuracy" else objective_names([k])[0] for k in keys]
    except (ValueError, TypeError):
        pass
    return [f"objective {i}" for i in range(len(study.directions))]


def retrain_records(study: optuna.Study) -> dict[int, dict[str, Any]]:
    """Trial number -> phase-3 record (``test_accuracy``, ``measured_train_cost``, ...)."""
    out: dict[int, dict[str, Any]] = {}
    for key, record in study.user_attrs.items():
        suffix = key[len(RETRAIN_PREFIX) :]
        if key.startswith(RETRAIN_PREFIX) and suffix.isdigit() and isinstance(record, dict):
            out[int(suffix)] = record
    return dict(sorted(out.items()))


def study_stack_dict(study: optuna.Study) -> dict[str, Any] | None:
    """The ``Stack.to_dict()`` a ``stack="auto"`` study resolved to and trains with (its
    ``STACK_KEY`` record's ``"stack"``), or ``None`` where none is recorded."""
    stored = study.user_attrs.get(STACK_KEY)
    if isinstance(stored, dict) and isinstance(stored.get("stack"), dict):
        return dict(stored["stack"])
    return None


# ---------------------------------------------------------------------- score reuse
def scored_trial(study: optuna.Study, arch: Arch) -> FrozenTrial | None:
    """The earliest COMPLETE trial of ``study`` whose ``arch`` user attribute is ``arch``."""
    key = arch.to_json()
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if t.user_attrs.get(ARCH_ATTR) == key:
            return t
    return None


def reuse_score(trial: optuna.Trial, arch: Arch) -> float | list[float] | None:
    """The values to return for ``trial`` if ``arch`` was already scored, else ``None``:
    an architecture is never scored twice in one study.

    The trial then gets the earlier trial's recorded numbers (parameters, cost,
    accuracies: every user attribute except per-attempt and ``nasflow:`` bookkeeping
    ones) and constraint values, and ``user_attrs["duplicate_of"]`` = the earlier trial's
    number. Call it after ``trial.set_user_attr("arch", ...)``.
    """
    earlier = scored_trial(trial.study, arch)
    if earlier is None or earlier.values is None:
        return None
    for key, value in earlier.user_attrs.items():
        if key not in _ATTEMPT_KEYS and not key.startswith(PREFIX):
            trial.set_user_attr(key, value)
    copy_constraints(trial, earlier)
    trial.set_user_attr(DUPLICATE_KEY, int(earlier.user_attrs.get(DUPLICATE_KEY, earlier.number)))
    values = [float(v) for v in earlier.values]
    return values[0] if len(values) == 1 else values


# ---------------------------------------------------------------------- constraints
# Optuna 5 stores a trial's constraint values itself; on Optuna 4.x they are the study
# record's CONSTRAINTS_KEY attribute, handed to the sampler as ``constraints_func``.


def set_constraints(trial: optuna.Trial, values: dict[str, float]) -> None:
    """Record constraint values (feasible when every value is <= 0) on a trial.

    Optuna 5 stores them with ``Trial.set_constraint``; on 4.x they go to a user attribute
    that :func:`sampler_constraints_kwargs` hands to the sampler as ``constraints_func``.
    """
    if OPTUNA_MAJOR >= 5:
        for key, value in values.items():
            trial.set_constraint(key, float(value))
    else:  # pragma: no cover - exercised only on Optuna 4.x
        trial.set_user_attr(CONSTRAINTS_KEY, [float(v) for v in values.values()])


def get_constraints(trial: FrozenTrial) -> tuple[float, ...] | None:
    """The constraint values of a finished trial, whichever Optuna stored them."""
    if OPTUNA_MAJOR >= 5:
        keys = sorted(k for k in trial.system_attrs if k.startswith("constraints:"))
        if keys:
            return tuple(float(trial.system_attrs[k]) for k in keys)
        legacy = trial.system_attrs.get("constraints")
        return tuple(legacy) if legacy is not None else None
    values = trial.user_attrs.get(CONSTRAINTS_KEY)  # pragma: no cover
    return tuple(values) if values is not None else None  # pragma: no cover


def copy_constraints(trial: optuna.Trial, source: FrozenTrial) -> None:
    """Give ``trial`` the constraint values recorded on the finished trial ``source``."""
    if OPTUNA_MAJOR >= 5:
        for key, value in source.system_attrs.items():
            if key.startswith("constraints:"):
                trial.set_constraint(key.split(":", 1)[1], float(value))
    elif CONSTRAINTS_KEY in source.user_attrs:  # pragma: no cover - Optuna 4.x
        trial.set_user_attr(CONSTRAINTS_KEY, list(source.user_attrs[CONSTRAINTS_KEY]))


def _constraints_func(trial: FrozenTrial) -> Sequence[float]:  # pragma: no cover - 4.x
    return trial.user_attrs.get(CONSTRAINTS_KEY, [0.0])


def sampler_constraints_kwargs() -> dict[str, Callable[[FrozenTrial], Sequence[float]]]:
    """Extra sampler arguments that make it constraint-aware on this Optuna version."""
    if OPTUNA_MAJOR >= 5:
        return {}
    return {"constraints_func": _constraints_func}  # pragma: no cover


# ---------------------------------------------------------------------- typed records
# One frozen dataclass per record nasflow writes, each with one ``from_dict`` (which reads
# every version written so far) and one ``to_dict`` (the current version, as stored).
# A new record (a fine-tuned model, a screening batch, a trust verdict) is added the same
# way: its keys as fields, its older versions migrated in ``from_dict``.


def _opt_float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _opt_int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class TrialRecord:
    """What nasflow recorded on one trial (its user attributes), typed.

    Attributes:
        number: The trial's number (-1 when read from bare attributes).
        arch: The architecture as ``Arch.to_json()`` (``None``: not suggested yet).
        params: Parameter count.
        train_cost: Predicted training seconds.
        supernet_accuracy: Validation accuracy at the supernet's weights.
        skipped: Why it was not scored (over budget).
        score_seconds: Seconds the one-shot score took.
        epochs_trained: Fine-tuning epochs trained.
        screened_out: Why screening stopped it.
        fail_reason: Why the attempt failed or was pruned.
        traceback: The failure's traceback.
        resumed_at: ``(epoch, batch)`` the fine-tuning resumed from.
        duplicate_of: The earlier trial whose score it reused.
    """

    number: int = -1
    arch: str | None = None
    params: int | None = None
    train_cost: float | None = None
    supernet_accuracy: float | None = None
    skipped: str | None = None
    score_seconds: float | None = None
    epochs_trained: int | None = None
    screened_out: str | None = None
    fail_reason: str | None = None
    traceback: str | None = None
    resumed_at: tuple[int, int] | None = None
    duplicate_of: int | None = None

    @classmethod
    def from_dict(cls, attrs: Mapping[str, Any], number: int = -1) -> TrialRecord:
        """From a trial's user attributes (other keys are ignored)."""
        resumed = attrs.get(RESUMED_AT_ATTR)
        return cls(
            number=number,
            arch=_opt_str(attrs.get(ARCH_ATTR)),
            params=_opt_int(attrs.get(PARAMS_ATTR)),
            train_cost=_opt_float(attrs.get(TRAIN_COST_ATTR)),
            supernet_accuracy=_opt_float(attrs.get(SUPERNET_ACCURACY_ATTR)),
            skipped=_opt_str(attrs.get(SKIPPED_ATTR)),
            score_seconds=_opt_float(attrs.get(SCORE_SECONDS_ATTR)),
            epochs_trained=_opt_int(attrs.get(EPOCHS_TRAINED_ATTR)),
            screened_out=_opt_str(attrs.get(SCREENED_OUT_ATTR)),
            fail_reason=_opt_str(attrs.get(FAIL_REASON_ATTR)),
            traceback=_opt_str(attrs.get(TRACEBACK_ATTR)),
            resumed_at=(
                (int(resumed[0]), int(resumed[1]))
                if isinstance(resumed, list | tuple) and len(resumed) == 2
                else None
            ),
            duplicate_of=_opt_int(attrs.get(DUPLICATE_KEY)),
        )

    @classmethod
    def from_trial(cls, trial: FrozenTrial | optuna.Trial) -> TrialRecord:
        """From a (frozen or running) trial's user attributes."""
        return cls.from_dict(trial.user_attrs, trial.number)

    def to_dict(self) -> dict[str, Any]:
        """The user attributes, as stored (unset fields left out)."""
        values = {
            ARCH_ATTR: self.arch,
            PARAMS_ATTR: self.params,
            TRAIN_COST_ATTR: self.train_cost,
            SUPERNET_ACCURACY_ATTR: self.supernet_accuracy,
            SKIPPED_ATTR: self.skipped,
            SCORE_SECONDS_ATTR: self.score_seconds,
            EPOCHS_TRAINED_ATTR: self.epochs_trained,
            SCREENED_OUT_ATTR: self.screened_out,
            FAIL_REASON_ATTR: self.fail_reason,
            TRACEBACK_ATTR: self.traceback,
            RESUMED_AT_ATTR: list(self.resumed_at) if self.resumed_at is not None else None,
            DUPLICATE_KEY: self.duplicate_of,
        }
        return {k: v for k, v in values.items() if v is not None}

    @property
    def screened(self) -> bool:
        """Whether it was scored from the supernet (an architecture and its accuracy)."""
        return self.arch is not None and self.supernet_accuracy is not None

    def get_arch(self) -> Arch:
        """The architecture (raises ``KeyError`` when the trial records none)."""
        from nasflow.space import Arch

        if self.arch is None:
            raise NotFoundError(f"trial {self.number} records no {ARCH_ATTR!r}")
        return Arch.from_json(self.arch)


#: The current version of the ``nasflow:stack`` record (1: ``layers`` and ``end_to_end``
#: described the chosen stack only, and ``end_to_end`` was its multiplier).
STACK_SCHEMA = 2


@dataclass(frozen=True)
class StackRecord:
    """The ``nasflow:stack`` record (``stack="auto"``'s calibration), typed.

    The fields are the keys every reader uses; the record's other keys (the calibration's
    details: ``product``, ``interaction``, ``noise``, ``candidates``, ``calibration``...)
    stay in ``extra`` and come back with :meth:`to_dict`.

    Attributes:
        schema: The version written (``from_dict`` reads 1 and 2).
        stack: The ``Stack.to_dict()`` trained with (``None``: none recorded).
        chosen: The layers kept.
        chosen_multiplier: The chosen stack's measured multiplier against the baseline
            (schema 1 kept it in ``end_to_end``).
        layers: Per-layer rows (``name``, ``alone``, ``cumulative``, ``kept``); in schema 1
            the chosen layers only.
        end_to_end: Every candidate layer stacked, against the baseline (schema 2).
        skipped: Why the calibration did not run (trained with the baseline).
        origin: Where the numbers come from (``kind``: reused, calibrated, skipped).
        extra: Every other key, as stored.
    """

    schema: int = STACK_SCHEMA
    stack: dict[str, Any] | None = None
    chosen: tuple[str, ...] = ()
    chosen_multiplier: float | None = None
    layers: tuple[dict[str, Any], ...] = ()
    end_to_end: float | None = None
    skipped: str | None = None
    origin: dict[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _FIELDS = ("schema", "stack", "chosen", "chosen_multiplier", "layers", "end_to_end",
               "skipped", "origin")  # fmt: skip

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> StackRecord:
        """From a stored record of any schema (a schema 1 record is migrated: its
        ``end_to_end`` is the chosen multiplier, and no all-layers figure exists)."""
        schema = int(record.get("schema", 1))
        e2e = _opt_float(record.get("end_to_end"))
        if schema >= 2:
            mult, end_to_end = _opt_float(record.get("chosen_multiplier")), e2e
        else:
            mult, end_to_end = e2e, None
        chosen = record.get("chosen")
        stack = record.get("stack")
        origin = record.get("origin")
        skipped = record.get("skipped")
        return cls(
            schema=schema,
            stack=dict(stack) if isinstance(stack, Mapping) else None,
            chosen=tuple(str(c) for c in chosen) if isinstance(chosen, list | tuple) else (),
            chosen_multiplier=mult,
            layers=tuple(dict(x) for x in record.get("layers") or () if isinstance(x, Mapping)),
            end_to_end=end_to_end,
            skipped=str(skipped) if skipped else None,
            origin=dict(origin) if isinstance(origin, Mapping) else None,
            extra={k: v for k, v in record.items() if k not in cls._FIELDS},
        )

    @property
    def all_layers(self) -> bool:
        """Whether ``layers`` and ``end_to_end`` describe every candidate layer (schema 2),
        not only the chosen ones."""
        return self.schema >= 2

    def to_dict(self) -> dict[str, Any]:
        """The record as stored, in its own schema (``None`` fields left out)."""
        out: dict[str, Any] = {"schema": self.schema, **self.extra}
        if self.schema >= 2:
            out["chosen_multiplier"] = self.chosen_multiplier
            out["end_to_end"] = self.end_to_end
        else:
            out["end_to_end"] = self.chosen_multiplier
        values = {
            "stack": self.stack,
            "chosen": list(self.chosen),
            "layers": [dict(x) for x in self.layers],
            "skipped": self.skipped,
            "origin": self.origin,
        }
        out.update({k: v for k, v in values.items() if v is not None})
        return out


#: The identity keys of a winner's record: they must equal what a run would train for a
#: saved winner to be reused.
WINNER_IDENTITY = ("space", "fingerprint", "arch", "recipe", "seed", "stack", "data")


@dataclass(frozen=True)
class WinnerRecord:
    """A retrained winner's ``record.json`` (``RunFolder.winner(n) / "record.json"``), typed.

    Attributes:
        identity: What was trained (``WINNER_IDENTITY`` keys: space, fingerprint, arch as a
            dict, recipe, seed, stack, data).
        study: The study's name.
        trial: The trial's number.
        test_accuracy: Accuracy of the retrained weights on the test split.
        val_accuracy: The same on the validation split.
        measured_train_cost: Measured seconds of the from-scratch training.
        predicted_train_cost: The search's predicted seconds.
        params: Parameter count.
        device: Where it trained.
        extra: Every other key as stored (format, checksum of the weights...).
    """

    identity: Mapping[str, Any]
    study: str | None = None
    trial: int | None = None
    test_accuracy: float | None = None
    val_accuracy: float | None = None
    measured_train_cost: float | None = None
    predicted_train_cost: float | None = None
    params: int | None = None
    device: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _FIELDS = ("study", "trial", "test_accuracy", "val_accuracy", "measured_train_cost",
               "predicted_train_cost", "params", "device")  # fmt: skip

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> WinnerRecord:
        """From a stored ``record.json``."""
        known = set(WINNER_IDENTITY) | set(cls._FIELDS)
        return cls(
            identity={k: record[k] for k in WINNER_IDENTITY if k in record},
            study=_opt_str(record.get("study")),
            trial=_opt_int(record.get("trial")),
            test_accuracy=_opt_float(record.get("test_accuracy")),
            val_accuracy=_opt_float(record.get("val_accuracy")),
            measured_train_cost=_opt_float(record.get("measured_train_cost")),
            predicted_train_cost=_opt_float(record.get("predicted_train_cost")),
            params=_opt_int(record.get("params")),
            device=_opt_str(record.get("device")),
            extra={k: v for k, v in record.items() if k not in known},
        )

    def to_dict(self) -> dict[str, Any]:
        """The record as written (identity keys first; ``None`` fields left out)."""
        values = {k: getattr(self, k) for k in self._FIELDS}
        return {
            **self.identity,
            **{k: v for k, v in values.items() if v is not None},
            **self.extra,
        }


#: The parts of the ``nasflow:multipliers`` record (``MULTIPLIERS_KEY``), in the order the
#: summary prints them and the report stacks them.
MULTIPLIER_PARTS = ("one_shot", "early_stopping", "gate", "stack", "ddp")
#: What a multiplier's number is: measured in this run, estimated, or neither.
MEASURED, ESTIMATE, NOT_AVAILABLE = "MEASURED", "ESTIMATE", "n/a"


@dataclass(frozen=True)
class MultiplierPart:
    """One technique's multiplier in the ``nasflow:multipliers`` record, typed.

    Attributes:
        key: The part's key (one of ``MULTIPLIER_PARTS``, or ``"compounded"``).
        multiplier: Cost without the technique / cost with it; ``None``: not measured or
            not applicable (``note`` says why).
        label: ``MEASURED``, ``ESTIMATE`` or ``NOT_AVAILABLE`` (``"n/a"``); a record
            written before parts carried a label gets ``ESTIMATE`` when it says
            ``estimate``, else ``MEASURED``, and ``n/a`` without a multiplier.
        note: What the number comes from, or why there is none.
        fields: Every key of the part as stored (the basis figures: seconds, counts...).
    """

    key: str
    multiplier: float | None
    label: str
    note: str = ""
    fields: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, key: str, part: Any) -> MultiplierPart:
        """From one part of the record (a missing or malformed part reads as ``n/a``)."""
        data = dict(part) if isinstance(part, Mapping) else {}
        mult = _opt_float(data.get("multiplier"))
        label = _opt_str(data.get("label"))
        if label is None:
            label = ESTIMATE if data.get("estimate") else MEASURED
        if mult is None:
            label = NOT_AVAILABLE
        return cls(key, mult, label, _opt_str(data.get("note")) or "", data)

    @property
    def measured(self) -> bool:
        """Whether the multiplier was measured in this run."""
        return self.label == MEASURED and self.multiplier is not None


@dataclass(frozen=True)
class MultipliersRecord:
    """The search-level multipliers of a finished run (study user attribute
    ``MULTIPLIERS_KEY``, written by ``nasflow.search``'s ``search_multipliers``), typed.

    Attributes:
        parts: One per ``MULTIPLIER_PARTS`` key, in that order (a part the record lacks
            reads as ``n/a``).
        compounded: The product of the parts with a multiplier (an estimate: it assumes
            the techniques are independent); ``compounded_of`` names them.
        compounded_of: The part keys multiplied into ``compounded``.
        run_seconds: Measured wall time of the whole run.
        search_seconds: Measured wall time of the supernet and the search.
        without_nasflow_seconds: Training the same candidates stand-alone, from the
            one-shot part's basis (labelled as that part is), or ``None``.
        extra: Every key as stored.
    """

    parts: tuple[MultiplierPart, ...]
    compounded: MultiplierPart
    compounded_of: tuple[str, ...] = ()
    run_seconds: float | None = None
    search_seconds: float | None = None
    without_nasflow_seconds: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> MultipliersRecord:
        """From the stored record."""
        comp = MultiplierPart.from_dict("compounded", record.get("compounded"))
        e2e = record.get("end_to_end")
        e2e = e2e if isinstance(e2e, Mapping) else {}
        of = comp.fields.get("of")
        return cls(
            parts=tuple(MultiplierPart.from_dict(k, record.get(k)) for k in MULTIPLIER_PARTS),
            compounded=comp,
            compounded_of=tuple(str(k) for k in of) if isinstance(of, list | tuple) else (),
            run_seconds=_opt_float(e2e.get("seconds")),
            search_seconds=_opt_float(e2e.get("search_seconds")),
            without_nasflow_seconds=_opt_float(e2e.get("without_nasflow_seconds")),
            extra=dict(record),
        )

    @classmethod
    def from_study(cls, study: optuna.Study) -> MultipliersRecord | None:
        """The study's record, or ``None`` when it holds none (a run that did not finish,
        a tabular study)."""
        record = study.user_attrs.get(MULTIPLIERS_KEY)
        return cls.from_dict(record) if isinstance(record, Mapping) else None

    def part(self, key: str) -> MultiplierPart:
        """The part ``key`` (one of ``MULTIPLIER_PARTS``).

        Raises:
            NotFoundError: Not a part's key (a ``KeyError`` too).
        """
        for p in self.parts:
            if p.key == key:
                return p
        raise NotFoundError(f"no multiplier part {key!r}; parts: {[p.key for p in self.parts]}")

    def to_dict(self) -> dict[str, Any]:
        """The record as stored."""
        return dict(self.extra)


@dataclass(frozen=True)
class CalibrationStep:
    """One whole-network training step the cost model was fitted on.

    Attributes:
        ops: Sum of the path's measured op seconds (the fit's input).
        measured: The step's measured seconds (best of rounds, the cost table's clock).
        arch: The path, as ``Arch.to_json()``.
    """

    ops: float
    measured: float
    arch: str = ""


@dataclass(frozen=True)
class CostCalibration:
    """The cost model's fit, as the study records it inside its cost-table record
    (``COST_TABLE_KEY``, key ``"calibration"``): ``step = slope * ops + intercept``.

    Attributes:
        slope: Seconds of a step per second of summed op latency.
        intercept: Fixed seconds per step.
        steps: The measured steps the line was fitted on.
        batch_size: The batch size of the steps.
    """

    slope: float
    intercept: float
    steps: tuple[CalibrationStep, ...] = ()
    batch_size: int | None = None

    def predict(self, ops: float) -> float:
        """The fitted step seconds of a path whose op seconds sum to ``ops``."""
        return max(0.0, self.slope * ops + self.intercept)

    @classmethod
    def from_dict(cls, record: Any) -> CostCalibration | None:
        """From a stored ``"calibration"`` object (``None``: missing or malformed)."""
        if not isinstance(record, Mapping):
            return None
        slope, intercept = _opt_float(record.get("slope")), _opt_float(record.get("intercept"))
        if slope is None or intercept is None:
            return None
        steps = []
        for p in record.get("points") or ():
            if not isinstance(p, Mapping):
                continue
            ops, measured = _opt_float(p.get("ops")), _opt_float(p.get("measured"))
            if ops is not None and measured is not None:
                steps.append(CalibrationStep(ops, measured, _opt_str(p.get("arch")) or ""))
        return cls(slope, intercept, tuple(steps), _opt_int(record.get("batch_size")))

    def to_dict(self) -> dict[str, Any]:
        """As stored in the cost-table record."""
        return {
            "slope": self.slope,
            "intercept": self.intercept,
            "batch_size": self.batch_size,
            "points": [{"ops": s.ops, "measured": s.measured, "arch": s.arch} for s in self.steps],
        }


@dataclass(frozen=True)
class CostTableRecord:
    """The study's cost-table record (``COST_TABLE_KEY``: where the cost model's table came
    from, how steady the machine was, and the fit), typed.

    Attributes:
        device: The device the table describes.
        clock: What the table's seconds are (``"thread CPU time"``, ``"wall time"``...).
        source: ``"measured now"``, ``"shared table"`` or ``"stored"``.
        batch_size: The batch size the model predicts.
        calibration: The fit and its measured steps (``None``: a record written before
            studies recorded it).
        extra: Every key as stored.
    """

    device: str | None = None
    clock: str | None = None
    source: str | None = None
    batch_size: int | None = None
    calibration: CostCalibration | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> CostTableRecord:
        """From the stored record."""
        return cls(
            device=_opt_str(record.get("device")),
            clock=_opt_str(record.get("clock")),
            source=_opt_str(record.get("source")),
            batch_size=_opt_int(record.get("batch_size")),
            calibration=CostCalibration.from_dict(record.get("calibration")),
            extra=dict(record),
        )

    @classmethod
    def from_study(cls, study: optuna.Study) -> CostTableRecord | None:
        """The study's record, or ``None`` when it holds none (its cost estimator timed
        every candidate, or the study is tabular)."""
        record = study.user_attrs.get(COST_TABLE_KEY)
        return cls.from_dict(record) if isinstance(record, Mapping) else None

    def to_dict(self) -> dict[str, Any]:
        """The record as stored (the calibration as :meth:`CostCalibration.to_dict`)."""
        out = dict(self.extra)
        if self.calibration is not None:
            out["calibration"] = self.calibration.to_dict()
        return out
