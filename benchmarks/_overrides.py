"""Configurations of a paired benchmark: a name and JSON overrides of a study.

A configuration is written ``NAME`` or ``NAME=JSON``: ``JSON`` is an object whose keys are
dotted paths into ``StudySpec`` and its nested frozen dataclasses (``"supernet.epochs"``,
``"finetuning.finalists"``, ``"retrain_top"``) and whose values are JSON (a list becomes a
tuple where the field holds one, an object becomes the field's dataclass, ``null`` is
``None``). Two names are baselines, not studies: ``largest`` trains the space's largest
architecture (B7) and ``ladder`` the largest architecture at each width (the param
ladder); their overrides change the recipe they train with (``"train.epochs"``).

Every override is checked when it is applied, before anything trains: an unknown field is
one error naming it and the fields there, and the values are checked by the dataclasses'
own validation (``StudySpec``, ``SupernetConfig``, ``FineTuning``...).
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: Configurations that are not a study: what they train instead.
BASELINES = {
    "largest": "the space's largest architecture trained with the study's recipe (B7)",
    "ladder": "the largest architecture at each width trained with the study's recipe",
}
#: The ``StudySpec`` fields a baseline reads (it trains with the study's recipe).
BASELINE_READS = ("train",)
#: ``StudySpec`` fields no override may change, and why.
FIXED = {
    "seed": "the instrument pairs configurations on the same search seeds (--seeds)",
    "name": "the ground's name pairs the runs",
    "baseline": "the ground's table is what both configurations are measured against",
    "space": "it holds code, not a JSON value",
    "data": "it holds code, not a JSON value",
    "study": "it holds code, not a JSON value",
    "storage": "each run writes a temporary study of its own",
    "table": "a tabular study trains nothing",
    "catch": "it holds exception types, not a JSON value",
}
_NAME = re.compile(r"[A-Za-z0-9_.-]+")


class OverrideError(ValueError):
    """A configuration or one of its overrides is malformed or refused."""


@dataclass(frozen=True)
class Config:
    """One side of a paired benchmark.

    Attributes:
        name: The configuration's name (the rows' ``config``).
        overrides: Dotted path -> JSON value, applied in order to each ground's study.
    """

    name: str
    overrides: Mapping[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """``"study"``, or the baseline's name (``BASELINES``)."""
        return self.name if self.name in BASELINES else "study"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "overrides": dict(self.overrides)}


def parse_config(text: str) -> Config:
    """``NAME`` or ``NAME=JSON`` (a JSON object of overrides) as a :class:`Config`.

    Raises:
        OverrideError: A name of other characters than letters, digits, ``_ . -``, JSON
            that does not parse, JSON that is not an object, or a baseline's name with an
            override of a field the baseline does not read (``BASELINE_READS``).
    """
    name, sep, raw = text.partition("=")
    if not _NAME.fullmatch(name):
        raise OverrideError(
            f"configuration {text!r}: write NAME or NAME=JSON, NAME of letters, digits, "
            "'_', '.' and '-'"
        )
    if not sep:
        return Config(name)
    try:
        overrides = json.loads(raw)
    except json.JSONDecodeError as e:
        raise OverrideError(f"configuration {name!r}: {raw!r} is not JSON ({e.msg})") from None
    if not isinstance(overrides, dict):
        raise OverrideError(
            f"configuration {name!r}: overrides must be a JSON object of dotted paths, "
            f'as {{"supernet.epochs": 6}}; got {raw!r}'
        )
    ignored = [k for k in overrides if name in BASELINES and k.split(".")[0] not in BASELINE_READS]
    if ignored:  # the baseline would run unchanged under a name that says otherwise
        raise OverrideError(
            f"configuration {name!r} names a baseline ({BASELINES[name]}): it reads only "
            f"{', '.join(f'{r}.*' for r in BASELINE_READS)} of the study, so "
            f"{', '.join(map(repr, ignored))} would change nothing; give a study "
            "configuration another name"
        )
    return Config(name, overrides)


def apply_overrides(spec: Any, overrides: Mapping[str, Any]) -> Any:
    """``spec`` (a ``StudySpec``) with every override applied, in order.

    Raises:
        OverrideError: An unknown or fixed field, a path through a value that is not a
            dataclass, or a value the dataclass refuses; the message names the override.
    """
    for key, value in overrides.items():
        parts = key.split(".")
        if not all(parts):
            raise OverrideError(f"override {key!r}: a dotted path of field names, as 'a.b'")
        if parts[0] in FIXED:
            raise OverrideError(f"override {key!r}: {parts[0]!r} is fixed: {FIXED[parts[0]]}")
        spec = _set(spec, parts, value, key)
    return spec


def _set(obj: Any, parts: list[str], value: Any, key: str, at: str = "") -> Any:
    """``obj`` (a dataclass instance) with the field at ``parts`` set to ``value``."""
    fields = {f.name for f in dataclasses.fields(obj)}
    head, where = parts[0], f"{at}{parts[0]}"
    if head not in fields:
        raise OverrideError(
            f"override {key!r}: {type(obj).__name__} has no field {head!r}"
            f"{f' (at {at[:-1]!r})' if at else ''}; its fields: {', '.join(sorted(fields))}"
        )
    current = getattr(obj, head)
    if len(parts) > 1:
        if current is None:
            raise OverrideError(
                f"override {key!r}: {where!r} is None in this study; set it whole first, "
                f'as {{"{where}": {{"{parts[1]}": ...}}}}'
            )
        if not dataclasses.is_dataclass(current):
            raise OverrideError(
                f"override {key!r}: {where!r} is {current!r}, not a dataclass with fields"
            )
        new = _set(current, parts[1:], value, key, f"{where}.")
    else:
        new = _convert(value, _hints(type(obj))[head], key)
    try:
        return dataclasses.replace(obj, **{head: new})
    except (ValueError, TypeError) as e:
        raise OverrideError(f"override {key!r}: {e}") from None


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _members(hint: Any) -> tuple[Any, ...]:
    """The types of a union (``A | B``, ``Optional[A]``), or ``(hint,)``."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return typing.get_args(hint)
    return (hint,)


def _convert(value: Any, hint: Any, key: str) -> Any:
    """A JSON value as the field of type ``hint`` takes it: an object becomes the field's
    dataclass, a list a tuple where the field holds a tuple."""
    members = _members(hint)
    if isinstance(value, dict):
        classes = [t for t in members if isinstance(t, type) and dataclasses.is_dataclass(t)]
        if not classes:
            raise OverrideError(f"override {key!r}: takes {hint}, not a JSON object")
        return _build(classes[0], value, key)
    if isinstance(value, list):
        tuples = any(t is tuple or typing.get_origin(t) is tuple for t in members)
        return tuple(value) if tuples else value
    return value


def _build(cls: type, mapping: dict[str, Any], key: str) -> Any:
    """``cls(**mapping)``, each value converted to its field's type."""
    hints = _hints(cls)
    known = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(mapping) - set(known))
    if unknown:
        raise OverrideError(
            f"override {key!r}: {cls.__name__} has no field {unknown[0]!r}; its fields: "
            f"{', '.join(sorted(known))}"
        )
    kwargs = {k: _convert(v, hints[k], f"{key}.{k}") for k, v in mapping.items()}
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as e:
        raise OverrideError(f"override {key!r}: {e}") from None
