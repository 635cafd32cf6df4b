"""The report's contents: every figure's data, then its drawing, in report order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import optuna
import plotly.graph_objects as go

from nasflow.pipeline import Headline, headline
from nasflow.record import PARAMS_ATTR, TRAIN_COST_ATTR
from nasflow.report._figures import (
    plot_budget,
    plot_costmodel,
    plot_fairness,
    plot_history,
    plot_multipliers,
    plot_stack,
)
from nasflow.report._records import (
    AnchorRow,
    CostModelData,
    FairnessData,
    MultipliersData,
    ReadyModels,
    StackData,
    anchor_models,
    costmodel_data,
    fairness_data,
    multipliers_data,
    ready_models,
    stack_data,
)
from nasflow.report._study import summarizer
from nasflow.report._tables import plot_pareto_table
from nasflow.report._tradeoff import plot_tradeoff, plot_trained
from nasflow.report._trained import TrainedFront, trained_front
from nasflow.report._trials import (
    BudgetData,
    HistoryData,
    ParetoTable,
    TradeoffData,
    budget_data,
    history_data,
    pareto_table,
    tradeoff_data,
)
from nasflow.space import SearchSpace


class ReportData(NamedTuple):
    """The data of every figure of a report (pure; tests assert on it): ``headline`` is
    the result the page opens with, ``front`` the trained models, ``pareto`` and
    ``params`` the screened candidates at the search's own number."""

    pareto: TradeoffData
    params: TradeoffData
    history: HistoryData
    budget: BudgetData
    fairness: FairnessData
    costmodel: CostModelData
    stack: StackData
    table: ParetoTable
    multipliers: MultipliersData
    ready: ReadyModels
    anchors: tuple[AnchorRow, ...] = ()
    front: TrainedFront | None = None
    headline: Headline | None = None


def report_data(
    study: optuna.Study, space: SearchSpace | None = None, location: Sequence[str] = ()
) -> ReportData:
    """Read everything the report shows from a study.

    Args:
        study: The study.
        space: Its space, for architecture summaries (found from the registry otherwise).
        location: The ``--storage``/``--runs`` arguments the headline's export command
            needs to find the study (none where the defaults do).

    Raises:
        ReportError: ``space`` is not the study's space.
        ValueError: A malformed ``nasflow:stack`` record.
    """
    summarize = summarizer(study, space)
    return ReportData(
        pareto=tradeoff_data(study, TRAIN_COST_ATTR, summarize),
        params=tradeoff_data(study, PARAMS_ATTR, summarize),
        history=history_data(study),
        budget=budget_data(study),
        fairness=fairness_data(study),
        costmodel=costmodel_data(study),
        stack=stack_data(study),
        table=pareto_table(study, summarize),
        multipliers=multipliers_data(study),
        ready=ready_models(study, summarize),
        anchors=tuple(anchor_models(study, summarize)),
        front=trained_front(study, summarize),
        headline=headline(study, location),
    )


class ReportFigure(NamedTuple):
    """One drawn figure; ``key`` names its HTML element and its dashboard graph id."""

    key: str
    figure: go.Figure
    has_data: bool


def report_figures(data: ReportData) -> list[ReportFigure]:
    """Draw every figure (the Pareto table is drawn as a figure for optuna-dashboard).

    ``has_data`` is false for a panel with nothing to show; such a panel says why.
    """
    cost = data.costmodel
    front = data.front or TrainedFront([], [], None)
    screened = f"Screened candidates: {data.pareto.y_title}"
    return [
        ReportFigure("pareto", plot_trained(front), bool(front.models)),
        ReportFigure(
            "screening",
            plot_tradeoff(data.pareto, f"{screened} vs predicted training cost"),
            bool(data.pareto.points),
        ),
        ReportFigure(
            "params",
            plot_tradeoff(data.params, f"{screened} vs parameters"),
            bool(data.params.points),
        ),
        ReportFigure("history", plot_history(data.history), bool(data.history.numbers)),
        ReportFigure("budget", plot_budget(data.budget), any(data.budget.epochs)),
        ReportFigure("fairness", plot_fairness(data.fairness), bool(data.fairness.labels)),
        ReportFigure(
            "costmodel",
            plot_costmodel(cost),
            bool(cost.points) or bool(cost.calibration and cost.calibration.steps),
        ),
        ReportFigure("stack", plot_stack(data.stack), bool(data.stack.measured_layers)),
        ReportFigure("multipliers", plot_multipliers(data.multipliers), data.multipliers.recorded),
        ReportFigure("table", plot_pareto_table(data.table), bool(data.table.rows)),
    ]
