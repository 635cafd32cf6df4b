"""Argument checks shared by every package: counts and other ints, fractions, choices.

Each check returns the value it accepted, or raises one line naming the parameter and the
bad value. The error is :class:`~nasflow.errors.ConfigError` (a ``NasflowError`` and a
``ValueError``) unless the caller passes its own subclass (a study file's
``StudyFileError``, say). ``bool`` is never accepted as a number.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, TypeVar

from nasflow.errors import ConfigError

T = TypeVar("T")


def check_int(
    name: str,
    value: Any,
    minimum: int = 1,
    maximum: int | None = None,
    *,
    optional: bool = False,
    error: type[ValueError] = ConfigError,
) -> Any:
    """``value`` if it is an int from ``minimum`` to ``maximum`` (or ``None`` if optional).

    Args:
        name: The parameter's name, for the message.
        value: The value to check.
        minimum: Smallest accepted int.
        maximum: Largest accepted int, or ``None`` for no bound.
        optional: Also accept ``None``.
        error: The ``ValueError`` subclass to raise (default ``ConfigError``).

    Raises:
        ValueError: ``"{name} must be an int >= {minimum}, got {value!r}"`` (or ``from
            {minimum} to {maximum}``, ``or None``), as ``error``.
    """
    if value is None and optional:
        return value
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        bound = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        alternative = " or None" if optional else ""
        raise error(f"{name} must be an int {bound}{alternative}, got {value!r}")
    return value


def check_fraction(
    name: str,
    value: Any,
    *,
    zero: bool = False,
    one: bool = False,
    error: type[ValueError] = ConfigError,
) -> Any:
    """``value`` if it is a number between 0 and 1 (ends excluded unless asked for).

    Args:
        name: The parameter's name, for the message.
        value: The value to check.
        zero: Accept 0.
        one: Accept 1.
        error: The ``ValueError`` subclass to raise (default ``ConfigError``).

    Raises:
        ValueError: ``"{name} must be a share in (0, 1), got {value!r}"`` (with ``[`` or
            ``]`` for an accepted end), as ``error``.
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (value >= 0 if zero else value > 0)
        or not (value <= 1 if one else value < 1)
    ):
        interval = f"{'[' if zero else '('}0, 1{']' if one else ')'}"
        raise error(f"{name} must be a share in {interval}, got {value!r}")
    return value


def check_choice(
    name: str, value: T, choices: Collection[T], *, error: type[ValueError] = ConfigError
) -> T:
    """``value`` if it is one of ``choices``.

    Raises:
        ValueError: ``"{name} must be one of {choices}, got {value!r}"``, as ``error``.
    """
    if value not in choices:
        raise error(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value
