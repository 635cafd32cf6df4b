"""The report's tables as text cells: the Pareto set (the kept trial marked, every empty
cell said) and the fine-tuning phase's ready models; the Pareto set also as a plotly table
for optuna-dashboard."""

from __future__ import annotations

import html

import plotly.graph_objects as go

from nasflow import names
from nasflow.report._records import ReadyModels
from nasflow.report._style import fmt, layout
from nasflow.report._trials import ParetoRow, ParetoTable

#: The column saying how each Pareto trial was trained (it explains the empty ones).
TRAINED_AS = "trained as"


def _untrained(row: ParetoRow) -> str:
    """What a from-scratch cell of a trial without a from-scratch training says."""
    return "not retrained" if "fine-tuned" in row.trained else "not trained"


def _trial_cell(row: ParetoRow) -> str:
    if not row.kept:
        return str(row.number)
    return f"{row.number} (kept)" if row.on_front else f"{row.number} (kept; not in the set)"


def table_cells(data: ParetoTable) -> tuple[list[str], list[list[str]]]:
    """Header and rows (as text, the architecture last) of the Pareto table.

    The objectives come first; predicted cost and parameters follow unless they are
    objectives already, then the from-scratch training's results and how the trial was
    trained. No cell is empty: a missing number says why.
    """
    header = ["trial", *data.objectives]
    extra_cost = names.PREDICTED_COST not in data.objectives
    extra_params = names.PARAMS not in data.objectives
    header += [names.PREDICTED_COST] * extra_cost + [names.PARAMS] * extra_params
    header += [names.RETRAINED_TEST_ACCURACY, names.MEASURED_COST, TRAINED_AS, "arch"]
    rows = []
    for r in data.rows:
        row = [_trial_cell(r), *(f"{v:.4g}" for v in r.values)]
        cost = fmt(r.train_cost, ".3g") or "not recorded"
        row += [cost] * extra_cost + [fmt(r.params, ",") or "not recorded"] * extra_params
        trained = r.measured_train_cost is not None
        test = fmt(r.test_accuracy, ".4f") or ("not measured" if trained else _untrained(r))
        row += [test, fmt(r.measured_train_cost, ".3g") or _untrained(r)]
        row += [r.trained or "screened only: not trained", r.arch or "not recorded"]
        rows.append(row)
    return header, rows


def table_note(data: ParetoTable) -> str:
    """What the Pareto table's numbers are (which weights, which split, predicted or
    measured)."""
    return (
        "The study's Pareto set over its own objectives (the search's numbers: a supernet "
        "score is the validation accuracy of inherited weights, not of a trained model), "
        "best first; the kept trial is marked and listed first when it is not in the set. "
        f"{names.RETRAINED_TEST_ACCURACY} and {names.MEASURED_COST}: the trial trained "
        "from scratch with the study's recipe (phase 3's retrain, else its zero-cost "
        "anchor), test split, wall time of the training steps. "
        + (data.cost_basis[0].upper() + data.cost_basis[1:] + "." if data.cost_basis else "")
    )


def ready_cells(data: ReadyModels) -> tuple[list[str], list[list[str]]]:
    """Header and rows (as text, the architecture last) of the ready-models table."""
    header = [
        "trial",
        "fine-tuned epochs",
        names.FINETUNED_ACCURACY,
        names.FINETUNED_TEST_ACCURACY,
        names.MEASURED_FINETUNE_COST,
        names.PREDICTED_COST,
        "status",
        "arch",
    ]
    rows = [
        [
            str(r.number),
            str(r.epochs),
            f"{r.val_accuracy:.4f}",
            fmt(r.test_accuracy, ".4f") or "not measured",
            f"{r.seconds:.3g}",
            fmt(r.train_cost, ".3g") or "not recorded",
            r.status,
            r.arch,
        ]
        for r in data.rows
    ]
    return header, rows


def plot_pareto_table(data: ParetoTable) -> go.Figure:
    """The Pareto set as a plotly table (the HTML report uses a plain table instead)."""
    header, rows = table_cells(data)
    cols = [[html.escape(row[j]) for row in rows] for j in range(len(header))]
    fig = go.Figure(go.Table(header={"values": header}, cells={"values": cols, "align": "left"}))
    return layout(fig, "Pareto set", table_note(data))
