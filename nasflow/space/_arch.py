"""``Arch``: one point of a search space, as frozen, hashable, JSON-serializable data."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

from nasflow.errors import ConfigError, NotFoundError
from nasflow.space._choices import _SCALAR_TYPES, Scalar


class Arch(Mapping[str, Scalar]):
    """An immutable mapping from choice label to the chosen value.

    Two archs are equal (and hash equal) when they hold the same labels and values, whatever
    the insertion order. ``Arch.from_json(arch.to_json()) == arch`` always holds.

    Example:
        >>> a = Arch({"block0/op": "k3_e2", "width": 0.5})
        >>> a["width"]
        0.5
        >>> Arch.from_json(a.to_json()) == a
        True
    """

    __slots__ = ("_hash", "_items")

    def __init__(self, choices: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        merged = dict(choices or {}, **kwargs)
        for label, value in merged.items():
            if not isinstance(label, str) or not label:
                raise ConfigError(f"arch labels must be non-empty strings, got {label!r}")
            if not isinstance(value, _SCALAR_TYPES) or (
                isinstance(value, float) and not math.isfinite(value)
            ):
                raise ConfigError(
                    f"arch value for {label!r} is {value!r} ({type(value).__name__}); values "
                    "must be JSON scalars (str, int, finite float, bool or None)"
                )
        self._items: tuple[tuple[str, Scalar], ...] = tuple(sorted(merged.items()))
        self._hash = hash(self._items)

    def __getitem__(self, label: str) -> Scalar:
        for k, v in self._items:
            if k == label:
                return v
        raise KeyError(label)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Arch):
            return self._items == other._items
        if isinstance(other, Mapping):
            return dict(self._items) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        inner = ", ".join(f"{k!r}: {v!r}" for k, v in self._items)
        return f"Arch({{{inner}}})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Arch, (dict(self._items),))

    def to_dict(self) -> dict[str, Scalar]:
        return dict(self._items)

    def to_json(self) -> str:
        """Canonical JSON: sorted labels, no whitespace."""
        return json.dumps(dict(self._items), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Arch:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"arch JSON does not parse: {e}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"arch JSON must be an object, got {type(data).__name__}")
        return cls(data)

    def subset(self, labels: set[str] | frozenset[str]) -> Arch:
        """The arch restricted to ``labels``."""
        return Arch({k: v for k, v in self._items if k in labels})

    def replace(self, changes: Mapping[str, Scalar]) -> Arch:
        """A copy with some values changed (the labels must exist)."""
        for k in changes:
            if k not in self:
                raise NotFoundError(f"arch has no label {k!r}; its labels: {list(self)}")
        return Arch({**dict(self._items), **changes})
