"""Writing a batch of finished trials to a study's storage in one transaction.

Optuna's public way, ``Study.add_trials``, creates each trial in its own transaction and
sets each parameter, value and attribute with its own look-ups: on SQLite that costs about
as much CPU as scoring a cheap candidate, ten times this module's writer
(``benchmarks/batch_write.py``; ``benchmarks/results/b4-scaling.md``, "B4, third round").
The batched screening writes through :func:`write_trials` instead: the same rows through
Optuna's own ORM models (``optuna.storages._rdb.models``), all the batch's trials inserted
in one transaction with no per-row look-up.

Where that is not possible (a storage other than Optuna's RDB storage, or an Optuna whose
models lack what is used here) :func:`write_trials` falls back to ``Study.add_trials``.
``tests/search/test_batch_write.py`` writes the same trials both ways and compares every
field read back, so a change in Optuna's schema fails the suite rather than the data.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import distribution_to_json
from optuna.trial import FrozenTrial

from nasflow.errors import ConfigError

__all__ = ["rdb_backend", "write_trials"]

#: What the fast path uses from Optuna's RDB models.
_MODEL_NAMES = (
    "StudyModel",
    "TrialModel",
    "TrialParamModel",
    "TrialValueModel",
    "TrialUserAttributeModel",
    "TrialSystemAttributeModel",
    "TrialIntermediateValueModel",
)


def rdb_backend(study: optuna.Study) -> Any | None:
    """The ``RDBStorage`` behind ``study`` (unwrapping Optuna's cache), or ``None`` where
    the study is not stored in one or Optuna's models lack what the fast path needs."""
    storage: Any = study._storage
    storage = getattr(storage, "_backend", storage)  # ``_CachedStorage`` wraps RDB storages
    if not isinstance(storage, optuna.storages.RDBStorage):
        return None
    try:
        from optuna.storages._rdb import models
        from optuna.storages._rdb.storage import _create_scoped_session  # noqa: F401
    except ImportError:
        return None
    if not all(hasattr(models, name) for name in _MODEL_NAMES):
        return None
    if not hasattr(models.TrialValueModel, "value_to_stored_repr") or not hasattr(
        models.TrialIntermediateValueModel, "intermediate_value_to_stored_repr"
    ):
        return None
    return storage


def write_trials(study: optuna.Study, trials: Sequence[FrozenTrial]) -> list[int]:
    """Add finished ``trials`` to ``study``, in order, all or none; their trial numbers.

    On Optuna's RDB storage the batch is one transaction: the study's row is locked as
    Optuna locks it to number a new trial (``SELECT ... FOR UPDATE`` where the database
    has it), the trials are numbered after those stored, and every row is inserted at
    once. Elsewhere ``Study.add_trials`` writes them (one transaction per trial) and the
    numbers are read back. Unlike ``Study.add_trial``, the fast path does not compare a
    parameter's distribution with the ones earlier trials of the study used for the same
    name (the batched screening's trials all come from one search space).

    Args:
        study: The study to write to.
        trials: Finished trials (``FrozenTrial``: parameters with their distributions,
            values, user and system attributes, intermediate values, times).

    Returns:
        The numbers the stored trials got, in the order of ``trials``.
    """
    if not trials:
        return []
    backend = rdb_backend(study)
    if backend is None:
        before = len(study.get_trials(deepcopy=False))
        study.add_trials(trials)
        stored = study.get_trials(deepcopy=False)
        return [t.number for t in stored[before : before + len(trials)]]
    for t in trials:  # the checks ``Study.add_trial`` makes, before anything is written
        t._validate()
        if t.values is not None and len(t.values) != len(study.directions):
            raise ConfigError(
                f"trial {t.number} has {len(t.values)} values; the study has "
                f"{len(study.directions)} objectives"
            )
    return _write_rdb(backend, study._study_id, trials)


def _payload(t: FrozenTrial) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of one trial, as Optuna's RDB storage represents them (built before the
    transaction opens, so nothing but inserts happens inside it)."""
    from optuna.storages._rdb import models

    values = [
        (k, *models.TrialValueModel.value_to_stored_repr(v)) for k, v in enumerate(t.values or ())
    ]
    params = [
        (
            name,
            t.distributions[name].to_internal_repr(v),
            distribution_to_json(t.distributions[name]),
        )
        for name, v in t.params.items()
    ]
    steps = [
        (step, *models.TrialIntermediateValueModel.intermediate_value_to_stored_repr(v))
        for step, v in t.intermediate_values.items()
    ]
    return {
        "values": values,
        "params": params,
        "user": [(k, json.dumps(v)) for k, v in t.user_attrs.items()],
        "system": [(k, json.dumps(v)) for k, v in t.system_attrs.items()],
        "steps": steps,
    }


def _write_rdb(backend: Any, study_id: int, trials: Sequence[FrozenTrial]) -> list[int]:
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session

    payloads = [_payload(t) for t in trials]
    # (An IntegrityError is raised, not ignored: the batch is all or nothing.)
    with _create_scoped_session(backend.scoped_session) as session:
        try:
            study = models.StudyModel.find_or_raise_by_id(study_id, session, for_update=True)
            first = models.TrialModel.count(session, study)
            rows = [
                models.TrialModel(
                    study_id=study_id,
                    number=first + i,
                    state=t.state,
                    datetime_start=t.datetime_start,
                    datetime_complete=t.datetime_complete,
                )
                for i, t in enumerate(trials)
            ]
            session.add_all(rows)
            session.flush()  # the trial ids
            children: list[Any] = []
            for row, p in zip(rows, payloads, strict=True):
                tid = row.trial_id
                children += [
                    models.TrialValueModel(trial_id=tid, objective=k, value=v, value_type=kind)
                    for k, v, kind in p["values"]
                ]
                children += [
                    models.TrialParamModel(
                        trial_id=tid, param_name=name, param_value=v, distribution_json=dist
                    )
                    for name, v, dist in p["params"]
                ]
                children += [
                    models.TrialUserAttributeModel(trial_id=tid, key=k, value_json=v)
                    for k, v in p["user"]
                ]
                children += [
                    models.TrialSystemAttributeModel(trial_id=tid, key=k, value_json=v)
                    for k, v in p["system"]
                ]
                children += [
                    models.TrialIntermediateValueModel(
                        trial_id=tid,
                        step=step,
                        intermediate_value=v,
                        intermediate_value_type=kind,
                    )
                    for step, v, kind in p["steps"]
                ]
            session.add_all(children)
        except BaseException:
            session.rollback()  # (the context manager rolls back SQLAlchemy errors only)
            raise
    return [first + i for i in range(len(trials))]
