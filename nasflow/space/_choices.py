"""Choice declarations: the atoms a search space is made of."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from nasflow._checks import check_int
from nasflow.errors import ConfigError

ChoiceKind = Literal["op", "edge", "value", "hyper"]

#: JSON scalars an architecture may hold; Optuna's categorical distribution accepts the same.
Scalar = str | int | float | bool | None

_SCALAR_TYPES = (str, int, float, bool, type(None))


def _check_label(label: Any) -> str:
    if not isinstance(label, str) or not label.strip():
        raise ConfigError(f"choice label must be a non-empty string, got {label!r}")
    return label


def _same_key(v: Scalar) -> tuple[str, Any]:
    """``v`` up to equality: ``1``, ``1.0`` and ``True`` are one value (equal in Python, so
    one ``Arch``; Optuna could not tell them apart either)."""
    if isinstance(v, bool | int | float):
        return ("number", float(v))
    return (type(v).__name__, v)


def _check_values(label: str, values: Iterable[Any]) -> tuple[Scalar, ...]:
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise ConfigError(
            f"choice {label!r} needs a list of values, got {values!r} (a "
            f"{type(values).__name__}, not a list)"
        )
    vals = tuple(values)
    if not vals:
        raise ConfigError(f"choice {label!r} has an empty list of values; give at least one")
    for v in vals:
        if not isinstance(v, _SCALAR_TYPES) or (isinstance(v, float) and not math.isfinite(v)):
            raise ConfigError(
                f"choice {label!r} has value {v!r} of type {type(v).__name__}; values must be "
                "JSON scalars (str, int, finite float, bool or None)"
            )
    seen: dict[tuple[str, Any], Scalar] = {}
    for v in vals:
        key = _same_key(v)
        if key in seen:
            raise ConfigError(
                f"choice {label!r} has duplicate value {v!r} (equal to {seen[key]!r})"
            )
        seen[key] = v
    return vals


@dataclass(frozen=True)
class Choice:
    """A categorical choice with a finite list of JSON-scalar values.

    Attributes:
        label: Unique name of the choice within its space (``"block3/op"``).
        values: The candidates, in a fixed order.
        kind: ``"op"`` (which operation a layer runs), ``"edge"`` (the operation on a DAG
            edge), ``"value"`` (a number such as a width or a depth) or ``"hyper"`` (a
            training hyper-parameter: part of the space, not of the supernet path).
    """

    label: str
    values: tuple[Scalar, ...]
    kind: ChoiceKind = "op"

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", _check_label(self.label))
        object.__setattr__(self, "values", _check_values(self.label, self.values))
        if self.kind not in ("op", "edge", "value", "hyper"):
            raise ConfigError(
                f"choice {self.label!r} has kind {self.kind!r}; expected op, edge, value or hyper"
            )

    @property
    def is_discrete(self) -> bool:
        return True

    @property
    def in_path(self) -> bool:
        """Whether the choice selects part of the network (hyper-parameters do not)."""
        return self.kind != "hyper"

    def contains(self, value: Any) -> bool:
        return any(_same(value, v) for v in self.values)

    def spec(self) -> dict[str, Any]:
        return {"label": self.label, "kind": self.kind, "values": list(self.values)}


@dataclass(frozen=True)
class FloatRange:
    """A continuous training hyper-parameter (learning rate, weight decay...).

    Attributes:
        label: Unique name of the choice within its space.
        low: Lower bound, inclusive.
        high: Upper bound, inclusive.
        log: Sample on a log scale (``low`` must then be positive).
    """

    label: str
    low: float
    high: float
    log: bool = False
    kind: ChoiceKind = field(default="hyper", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", _check_label(self.label))
        for name in ("low", "high"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ConfigError(f"range {self.label!r}: {name}={v!r} must be a finite number")
        if not self.low < self.high:
            raise ConfigError(
                f"range {self.label!r}: low={self.low!r} must be below high={self.high!r}"
            )
        if self.log and self.low <= 0:
            raise ConfigError(f"range {self.label!r}: log scale needs low > 0, got {self.low!r}")

    @property
    def is_discrete(self) -> bool:
        return False

    @property
    def in_path(self) -> bool:
        return False

    def contains(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return self.low <= value <= self.high

    def spec(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "kind": self.kind,
            "low": self.low,
            "high": self.high,
            "log": self.log,
        }


AnyChoice = Choice | FloatRange


def _same(a: Any, b: Any) -> bool:
    if type(a) is type(b):
        return bool(a == b)
    return (
        isinstance(a, int | float)
        and isinstance(b, int | float)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and a == b
    )


def op_choice(label: str, ops: Sequence[str]) -> Choice:
    """The operation of one searchable layer."""
    return Choice(label, ops, "op")  # type: ignore[arg-type]  # (Choice checks, makes a tuple)


def value_choice(label: str, values: Sequence[Scalar]) -> Choice:
    """A numeric architectural value: width multiplier, depth, number of heads."""
    return Choice(label, values, "value")  # type: ignore[arg-type]


def hyper_choice(label: str, values: Sequence[Scalar]) -> Choice:
    """A categorical training hyper-parameter (batch size, optimizer name...)."""
    return Choice(label, values, "hyper")  # type: ignore[arg-type]


def edge_choices(prefix: str, num_nodes: int, ops: Sequence[str]) -> list[Choice]:
    """One choice per edge of a cell DAG where every node takes all earlier nodes as input.

    Node 0 is the cell input; node ``i`` sums one op applied to each node ``j < i``. A
    NAS-Bench-201 cell is ``edge_choices("cell", 4, ops)``: 6 edges.

    Args:
        prefix: Label prefix; edge ``j -> i`` is labelled ``f"{prefix}/{i}<-{j}"``.
        num_nodes: Nodes in the cell including the input node (at least 2).
        ops: Operation names available on every edge.

    Returns:
        The edge choices in (target, source) order.
    """
    check_int("num_nodes", num_nodes, 2)
    _check_values(prefix, ops)  # (a string is not a list of ops)
    return [
        Choice(f"{prefix}/{i}<-{j}", tuple(ops), "edge")
        for i in range(1, num_nodes)
        for j in range(i)
    ]
