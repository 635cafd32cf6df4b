"""The trade-off figures: accuracy against predicted training cost or parameters, with the
front, the retrained winners, the fine-tuning phase's ready models, the zero-cost anchors
and a ring on the model the run keeps."""

from __future__ import annotations

import html
from collections.abc import Sequence

import plotly.graph_objects as go

from nasflow import names
from nasflow.record import PARAMS_ATTR
from nasflow.report._records import AnchorRow, ReadyModels, ReadyRow
from nasflow.report._style import BLUE, DARK, GOLD, GREY, RED, layout, not_measured
from nasflow.report._trials import (
    DOMINATED,
    FRONT,
    INFEASIBLE,
    OVER_BUDGET,
    TradeoffData,
    TrialPoint,
)


def _hover(p: TrialPoint, x_title: str, y_title: str) -> str:
    acc = "not evaluated" if p.accuracy is None else f"{p.accuracy:.4f}"
    x = f"{p.x:,.0f}" if x_title == names.PARAMS else f"{p.x:.4g}"
    lines = [f"trial {p.number}" + (" (retrained winner)" if p.winner else "")]
    if p.test_accuracy is not None:
        lines.append(f"{names.RETRAINED_TEST_ACCURACY} {p.test_accuracy:.4f}")
    lines += [f"{html.escape(y_title)} {acc}", f"{x_title} {x}", f"arch {html.escape(p.arch)}"]
    if p.note:
        lines.append(html.escape(p.note))
    return "<br>".join(lines)


def _row_x(row: ReadyRow | AnchorRow, x_attr: str) -> float | None:
    value = row.params if x_attr == PARAMS_ATTR else row.train_cost
    return None if value is None else float(value)


def _trained_hover(
    row: ReadyRow | AnchorRow, x_title: str, head: str, names_: tuple[str, str, str]
) -> str:
    """Hover text of a trained model: ``head``, then its validation and test accuracy and
    measured seconds under ``names_`` (three labels), then the figure's x value."""
    val, test, cost = names_
    x = _row_x(row, PARAMS_ATTR if x_title == names.PARAMS else "")
    lines = [head, f"{val} {row.val_accuracy:.4f} (measured)"]
    if row.test_accuracy is not None:
        lines.append(f"{test} {row.test_accuracy:.4f} (measured)")
    lines.append(f"{cost} {row.seconds:.3g}")
    if x is not None:
        lines.append(f"{x_title} {x:,.0f}" if x_title == names.PARAMS else f"{x_title} {x:.4g}")
    return "<br>".join(lines)


#: What a ready model's and an anchor's numbers are (validation, test, measured seconds).
_READY_LABELS = (
    names.FINETUNED_ACCURACY,
    names.FINETUNED_TEST_ACCURACY,
    names.MEASURED_FINETUNE_COST,
)
_ANCHOR_LABELS = (names.RETRAINED_VAL_ACCURACY, names.RETRAINED_TEST_ACCURACY, names.MEASURED_COST)


def plot_tradeoff(
    data: TradeoffData,
    title: str,
    ready: ReadyModels | None = None,
    anchors: Sequence[AnchorRow] = (),
) -> go.Figure:
    """Accuracy against cost or parameters: front, dominated, violators, winner, the
    fine-tuning phase's ready models (one trace per number of fine-tuned epochs) and the
    zero-cost anchors trained from scratch."""
    if not data.points:
        return not_measured(title, "no completed trial records this quantity yet")
    evaluated = [p.accuracy for p in data.points if p.accuracy is not None]
    lo, hi = (min(evaluated), max(evaluated)) if evaluated else (0.0, 1.0)
    floor = lo - 0.08 * max(hi - lo, 0.01)  # where trials without an accuracy are drawn
    fig = go.Figure()
    styles = {
        DOMINATED: ("dominated", GREY, "circle"),
        INFEASIBLE: ("violates a constraint", DARK, "x"),
        OVER_BUDGET: ("over budget: skipped, not evaluated (drawn at the bottom)", RED, "x"),
        FRONT: ("Pareto front (in this plane)", BLUE, "circle"),
    }
    for status, (name, color, symbol) in styles.items():
        pts = sorted((p for p in data.points if p.status == status), key=lambda p: p.x)
        if not pts:
            continue
        fig.add_trace(
            go.Scatter(
                x=[p.x for p in pts],
                y=[floor if p.accuracy is None else p.accuracy for p in pts],
                mode="lines+markers" if status == FRONT else "markers",
                line={"shape": "hv", "color": color} if status == FRONT else None,
                marker={"color": color, "symbol": symbol, "size": 9},
                name=name,
                text=[_hover(p, data.x_title, data.y_title) for p in pts],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    wins = [p for p in data.points if p.winner]
    if wins:
        fig.add_trace(
            go.Scatter(
                x=[p.x for p in wins],
                y=[p.accuracy for p in wins],
                mode="markers",
                marker={"color": GOLD, "symbol": "star", "size": 18, "line": {"width": 1}},
                name="winner (retrained from scratch)",
                text=[_hover(p, data.x_title, data.y_title) for p in wins],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    shown = [r for r in (ready.rows if ready else []) if _row_x(r, data.x_attr) is not None]
    for epochs in sorted({r.epochs for r in shown}):
        rows = sorted((r for r in shown if r.epochs == epochs), key=lambda r: r.number)
        fig.add_trace(
            go.Scatter(
                x=[_row_x(r, data.x_attr) for r in rows],
                y=[r.val_accuracy for r in rows],
                mode="markers",
                marker={"color": "#2ca02c", "symbol": "diamond", "size": 11 + 2 * epochs},
                name=f"fine-tuned ({epochs} epoch{'s' * (epochs != 1)}): "
                f"{names.FINETUNED_ACCURACY}, measured",
                text=[
                    _trained_hover(
                        r,
                        data.x_title,
                        f"trial {r.number}: ready model ({names.finetuned_weights(r.epochs)})",
                        _READY_LABELS,
                    )
                    for r in rows
                ],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    drawn = sorted(
        (r for r in anchors if _row_x(r, data.x_attr) is not None), key=lambda r: r.number
    )
    if drawn:
        fig.add_trace(
            go.Scatter(
                x=[_row_x(r, data.x_attr) for r in drawn],
                y=[r.val_accuracy for r in drawn],
                mode="markers",
                marker={"color": "#ff7f0e", "symbol": "square", "size": 12},
                name=f"zero-cost anchors (from scratch): {names.RETRAINED_VAL_ACCURACY}, measured",
                text=[
                    _trained_hover(
                        r,
                        data.x_title,
                        f"trial {r.number}: zero-cost anchor, trained from scratch before the "
                        "supernet",
                        _ANCHOR_LABELS,
                    )
                    for r in drawn
                ],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    ring = _kept_ring(data, shown, drawn)
    if ring is not None:
        x, y, what = ring
        fig.add_trace(
            go.Scatter(
                x=[x],
                y=[y],
                mode="markers",
                # An open symbol is stroked in the marker's colour (its line colour is
                # ignored): a black ring around the kept model's own marker.
                marker={
                    "color": "black",
                    "symbol": "circle-open",
                    "size": 30,
                    "line": {"width": 3},
                },
                name=f"kept model: {what}",
                text=[f"the model this run keeps: {what}"],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    xs = [p.x for p in data.points]
    wide = min(xs) > 0 and max(xs) / min(xs) > 20  # spans more than a decade or so
    fig.update_xaxes(title=data.x_title, type="log" if wide else "linear")
    meaning = names.MEANINGS.get(data.y_title)
    fig.update_yaxes(title=data.y_title)
    caption = (
        f"{len(data.points)} trials. The front is the set of completed trials that no other "
        f"is better than in both {data.y_title} and {data.x_title} (in this plane, which can "
        "differ from the study's own objectives). Hover a point for its architecture"
        + (f" and a winner for its {names.RETRAINED_TEST_ACCURACY}. " if wins else ". ")
        + (f"{data.y_title}: {meaning}." if meaning else "")
    )
    if data.left_out:
        caption += f" {data.left_out} trials without a {data.x_attr} record are left out."
    if shown:
        caption += (
            f" Green diamonds: the {len(shown)} ready models of the fine-tuning phase, drawn at "
            f"their {names.FINETUNED_ACCURACY} (measured on the fine-tuned weights, not the "
            "supernet's), bigger for more epochs."
        )
    if drawn:
        caption += (
            f" Orange squares: the {len(drawn)} zero-cost anchors, trained from scratch with "
            f"the study's recipe before the supernet, drawn at their "
            f"{names.RETRAINED_VAL_ACCURACY}."
        )
    if ring is not None:
        caption += (
            f" The black ring marks the model the run keeps ({ring[2]}): what "
            "nasflow export NAME --best exports."
        )
    return layout(fig, title, caption)


def _kept_ring(
    data: TradeoffData, ready: Sequence[ReadyRow], anchors: Sequence[AnchorRow]
) -> tuple[float, float, str] | None:
    """Where the kept model is drawn and what it is, in words: on its ready model's
    diamond (its most fine-tuned epochs) when it keeps fine-tuned weights, on its anchor's
    square when an anchor is kept, else on its winner's star; ``None`` when the study
    records no kept model or its marker is not drawn in this plane."""
    kept = data.kept
    if kept is None:
        return None
    if kept.weights == "fine-tuned":
        rows = [r for r in ready if r.number == kept.trial]
        if rows:
            row = max(rows, key=lambda r: r.epochs)
            what = f"trial {kept.trial}, {names.finetuned_weights(row.epochs)}"
            return _row_x(row, data.x_attr) or 0.0, row.val_accuracy, what
        return None
    if kept.source == "anchor":
        kept_anchor = next((r for r in anchors if r.number == kept.trial), None)
        if kept_anchor is not None:
            what = f"trial {kept.trial}, a zero-cost anchor trained from scratch"
            return _row_x(kept_anchor, data.x_attr) or 0.0, kept_anchor.val_accuracy, what
        return None
    points = [p for p in data.points if p.number == kept.trial and p.accuracy is not None]
    if points:
        what = f"trial {kept.trial}, retrained from scratch (the search's choice)"
        return points[0].x, float(points[0].accuracy or 0.0), what
    return None
