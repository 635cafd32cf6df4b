"""``TabularBenchmark``: precomputed scores of every architecture of a space, from a CSV."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nasflow.errors import ConfigError, NasflowError, NotFoundError
from nasflow.space import Arch, SearchSpace


class TableError(NasflowError, ValueError):
    """A benchmark table is missing, malformed, or does not match its space."""


def _key_functions(
    space: SearchSpace,
    to_key: Callable[[Mapping[str, Any]], str] | None,
    from_key: Callable[[str], Arch] | None,
) -> tuple[Callable[[Mapping[str, Any]], str], Callable[[str], Arch]]:
    """The arch <-> key conversion: given, or the space's ``to_string`` / ``from_string``."""
    to_key = to_key or getattr(space, "to_string", None)
    from_key = from_key or getattr(space, "from_string", None)
    if not callable(to_key) or not callable(from_key):
        raise ConfigError(
            f"space {space.name!r} has no to_string/from_string methods; pass to_key and "
            "from_key to convert between its archs and the table's keys"
        )
    return to_key, from_key


class TabularBenchmark:
    """A table of precomputed scores (one row per architecture) that replaces training.

    The CSV has a header; one column holds each architecture's key (a canonical string such
    as NAS-Bench-201's ``|op~0|+|op~0|op~1|+|op~0|op~1|op~2|``), others its metrics. The
    whole table is checked when it is loaded: every key must parse into an arch of the
    space and convert back to itself (so keys are canonical and one-to-one with archs), no
    key may repeat, every metric must be a finite number, and, with ``complete=True``,
    the table must hold every architecture of the space.

    Metrics are higher-is-better (accuracies), in the table's own units; the regret of a
    value is ``optimum - value`` in those units.

    Args:
        path: The CSV file.
        space: The space whose architectures the table scores (no hyper-parameters).
        metric: Column that a study maximizes.
        report_metric: Column reported for the best architecture found (e.g. a test
            accuracy when ``metric`` is a validation accuracy); default ``metric``.
        key_column: Column of architecture keys.
        to_key: Arch -> key; default ``space.to_string``.
        from_key: Key -> arch; default ``space.from_string``.
        complete: Require one row for every architecture of the space.

    Raises:
        TableError: The file is missing or malformed, or does not match the space; the
            message names the file, the row and the bad value.
        ValueError: Bad arguments.
    """

    def __init__(
        self,
        path: os.PathLike | str,
        space: SearchSpace,
        *,
        metric: str,
        report_metric: str | None = None,
        key_column: str = "arch",
        to_key: Callable[[Mapping[str, Any]], str] | None = None,
        from_key: Callable[[str], Arch] | None = None,
        complete: bool = True,
    ) -> None:
        if not isinstance(space, SearchSpace):
            raise ConfigError(f"space must be a SearchSpace, got {space!r}")
        if space.hyper_choices:
            labels = [c.label for c in space.hyper_choices]
            raise ConfigError(
                f"space {space.name!r} has training hyper-parameters {labels}; a table "
                "scores architectures only"
            )
        for name, value in (("metric", metric), ("key_column", key_column)):
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{name} must be a non-empty column name, got {value!r}")
        self.path = Path(path)
        self.space = space
        self.metric = metric
        self.report_metric = report_metric or metric
        self.key_column = key_column
        self._to_key, self._from_key = _key_functions(space, to_key, from_key)
        self._rows = self._load()
        if complete and len(self._rows) != space.num_paths:
            raise TableError(
                f"table {str(self.path)!r} has {len(self._rows)} architectures; space "
                f"{space.name!r} has {space.num_paths} (pass complete=False for a partial table)"
            )
        self.best_key = max(self._rows, key=lambda k: self._rows[k][self.metric])
        self.optimum = self._rows[self.best_key][self.metric]

    def _load(self) -> dict[str, dict[str, float]]:
        """Key -> {metric: value} for the two metric columns, validated row by row."""
        where = repr(str(self.path))
        if not self.path.is_file():
            raise TableError(f"benchmark table {where} does not exist")
        columns = (self.metric, self.report_metric)
        rows: dict[str, dict[str, float]] = {}
        with open(self.path, newline="") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            for col in (self.key_column, *columns):
                if col not in header:
                    raise TableError(f"table {where} has no column {col!r}; columns: {header}")
            for n, row in enumerate(reader, start=2):  # line 1 is the header
                key = row[self.key_column]
                try:
                    arch = self._from_key(key)
                except ValueError as e:
                    raise TableError(f"table {where} line {n}: {e}") from None
                if self._to_key(arch) != key:
                    raise TableError(
                        f"table {where} line {n}: key {key!r} is not canonical; the space "
                        f"writes it {self._to_key(arch)!r}"
                    )
                if key in rows:
                    raise TableError(f"table {where} line {n}: architecture {key!r} repeats")
                rows[key] = {c: self._number(row[c], c, n) for c in columns}
        if not rows:
            raise TableError(f"table {where} has no rows")
        return rows

    def _number(self, text: str | None, column: str, line: int) -> float:
        try:
            value = float(text)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value):
            raise TableError(
                f"table {str(self.path)!r} line {line}: {column}={text!r} is not a finite number"
            )
        return value

    # ------------------------------------------------------------------ lookups
    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, arch: object) -> bool:
        """Whether ``arch`` (a mapping of label to value) has a row."""
        return isinstance(arch, Mapping) and self.key(arch) in self._rows

    def key(self, arch: Mapping[str, Any]) -> str:
        """The table key of ``arch``."""
        return self._to_key(arch)

    def arch(self, key: str) -> Arch:
        """The arch of a table key."""
        return self._from_key(key)

    def lookup(self, arch: Mapping[str, Any], metric: str | None = None) -> float:
        """The table's value of ``metric`` (default: the searched one) for ``arch``.

        Raises:
            KeyError: ``arch`` has no row (only possible with ``complete=False``).
        """
        metric = metric or self.metric
        if metric not in (self.metric, self.report_metric):
            raise ConfigError(
                f"metric {metric!r} was not loaded; loaded: {[self.metric, self.report_metric]}"
            )
        key = self.key(arch)
        try:
            return self._rows[key][metric]
        except KeyError:
            raise NotFoundError(f"architecture {key!r} has no row in {str(self.path)!r}") from None

    def regret(self, value: float) -> float:
        """How far ``value`` of the searched metric is below the table's optimum."""
        return self.optimum - value

    def values(self, metric: str | None = None) -> list[float]:
        """Every value of ``metric`` in the table (for exact baselines such as random search)."""
        metric = metric or self.metric
        return [row[metric] for row in self._rows.values()]

    def __repr__(self) -> str:
        return (
            f"TabularBenchmark({str(self.path)!r}, space={self.space.name!r}, "
            f"metric={self.metric!r}, rows={len(self)}, optimum={self.optimum:g})"
        )
