"""Tabular benchmarks: score architectures by table lookup instead of training.

A study whose ``StudySpec.table`` is set skips supernet training and retraining: each
trial's architecture is looked up in the table, so samplers can be compared over hundreds
of trials in seconds, and the run ends with the regret to the table's optimum.
"""

from __future__ import annotations

from nasflow.tabular._objective import TabularObjective, tabular_outcome, tabular_summary
from nasflow.tabular._table import TableError, TabularBenchmark

__all__ = [
    "TableError",
    "TabularBenchmark",
    "TabularObjective",
    "tabular_outcome",
    "tabular_summary",
]
