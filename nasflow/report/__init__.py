"""Reports: figure data (pure functions), plotly drawing, the offline HTML report and the
optuna-dashboard push.

Each figure's data comes from a pure function of the study that returns a NamedTuple
(``trained_front``, ``tradeoff_data``, ``history_data``, ``budget_data``, ``fairness_data``,
``costmodel_data``, ``stack_data``, ``multipliers_data``, ``ready_models``,
``pareto_table``); ``_figures.py`` draws them.
"""

from __future__ import annotations

from nasflow.report._dashboard import (
    DashboardUnavailable,
    dashboard_server,
    is_loopback,
    push_figures,
    require_dashboard,
    serve_dashboard,
)
from nasflow.report._figures import (
    plot_budget,
    plot_costmodel,
    plot_fairness,
    plot_history,
    plot_multipliers,
    plot_stack,
)
from nasflow.report._html import render_html, write_atomic, write_report
from nasflow.report._records import (
    CostModelData,
    FairnessData,
    LabelCounts,
    MultipliersData,
    MultiplierStep,
    ReadyModels,
    ReadyRow,
    StackData,
    StackLayerRow,
    costmodel_data,
    fairness_data,
    multipliers_data,
    ready_models,
    stack_data,
)
from nasflow.report._report import ReportData, ReportFigure, report_data, report_figures
from nasflow.report._study import (
    ReportError,
    generic_summary,
    summarizer,
)
from nasflow.report._style import not_measured
from nasflow.report._tables import plot_pareto_table, table_cells
from nasflow.report._tradeoff import plot_tradeoff, plot_trained
from nasflow.report._trained import TrainedFront, TrainedModel, trained_front
from nasflow.report._trials import (
    BudgetData,
    CostBasis,
    HistoryData,
    ParetoRow,
    ParetoTable,
    TradeoffData,
    TrialPoint,
    budget_data,
    cost_basis,
    history_data,
    pareto_table,
    tradeoff_data,
)

__all__ = [
    "BudgetData",
    "CostBasis",
    "CostModelData",
    "DashboardUnavailable",
    "FairnessData",
    "HistoryData",
    "LabelCounts",
    "MultiplierStep",
    "MultipliersData",
    "ParetoRow",
    "ParetoTable",
    "ReadyModels",
    "ReadyRow",
    "ReportData",
    "ReportError",
    "ReportFigure",
    "StackData",
    "StackLayerRow",
    "TradeoffData",
    "TrainedFront",
    "TrainedModel",
    "TrialPoint",
    "budget_data",
    "cost_basis",
    "costmodel_data",
    "dashboard_server",
    "fairness_data",
    "generic_summary",
    "history_data",
    "is_loopback",
    "multipliers_data",
    "not_measured",
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
    "push_figures",
    "ready_models",
    "render_html",
    "report_data",
    "report_figures",
    "require_dashboard",
    "serve_dashboard",
    "stack_data",
    "summarizer",
    "table_cells",
    "tradeoff_data",
    "trained_front",
    "write_atomic",
    "write_report",
]
