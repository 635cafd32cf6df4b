"""A study's identity: what its scores depend on, written once and checked on every resume."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import optuna

from nasflow.names import set_metric_names
from nasflow.record._folder import StudyMismatchError
from nasflow.record._keys import (
    _RECORDED_KEYS,
    CHECKPOINT_IDENTITY,
    FINGERPRINT_KEY,
    IDENTITY_KEYS,
    NO_SUPERNET,
    OBJECTIVES_KEY,
    SCORING_KEY,
    SPACE_CONFIG_KEY,
    SPACE_KEY,
    SUPERNET_IDENTITY_KEY,
)

if TYPE_CHECKING:
    from nasflow.space import SearchSpace


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
        old: dict[str, Any] = {}
        new: dict[str, Any] = {}
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


def study_scoring(study: optuna.Study) -> dict[str, Any]:
    """What a study's scores were measured with (its ``SCORING_KEY`` record: the data's
    fingerprint, the recipes, the cost estimator), ``{}`` where it records none."""
    try:
        scoring = json.loads(study.user_attrs.get(SCORING_KEY) or "{}")
    except (TypeError, ValueError):
        return {}
    return scoring if isinstance(scoring, dict) else {}


def study_space_identity(study: optuna.Study) -> tuple[str | None, str | None]:
    """``(space name, space fingerprint)`` a study records (``None`` where it does not)."""
    name, fingerprint = study.user_attrs.get(SPACE_KEY), study.user_attrs.get(FINGERPRINT_KEY)
    return (
        name if isinstance(name, str) else None,
        fingerprint if isinstance(fingerprint, str) else None,
    )


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
