"""Reports: figure data (pure functions), plotly drawing, the offline HTML report and the
optuna-dashboard push.

Each figure's data comes from a pure function of the study that returns a NamedTuple
(``trained_front``, ``tradeoff_data``, ``history_data``, ``budget_data``, ``fairness_data``,
``costmodel_data``, ``stack_data``, ``multipliers_data``, ``ready_models``,
``pareto_table``); ``_figures.py`` draws them.
"""

from __future__ import annotations

from nasflow.report._dashboard import DashboardUnavailable, serve_dashboard
from nasflow.report._figures import (
    plot_budget,
    plot_costmodel,
    plot_fairness,
    plot_history,
    plot_multipliers,
    plot_stack,
)
from nasflow.report._html import write_report
from nasflow.report._records import (
    StackData,
    StackLayerRow,
    costmodel_data,
    fairness_data,
    multipliers_data,
    ready_models,
    stack_data,
)
from nasflow.report._report import report_data, report_figures
from nasflow.report._tables import plot_pareto_table
from nasflow.report._tradeoff import plot_tradeoff, plot_trained
from nasflow.report._trained import trained_front
from nasflow.report._trials import budget_data, history_data, pareto_table, tradeoff_data

__all__ = [
    "DashboardUnavailable",
    "StackData",
    "StackLayerRow",
    "budget_data",
    "costmodel_data",
    "fairness_data",
    "history_data",
    "multipliers_data",
    "pareto_table",
    "plot_budget",
    "plot_costmodel",
    "plot_fairness",
    "plot_history",
    "plot_multipliers",
    "plot_pareto_table",
    "plot_stack",
    "plot_tradeoff",
    "plot_trained",
    "ready_models",
    "report_data",
    "report_figures",
    "serve_dashboard",
    "stack_data",
    "tradeoff_data",
    "trained_front",
    "write_report",
]
