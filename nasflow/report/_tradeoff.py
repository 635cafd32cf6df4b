"""The trade-off figures, one measure per axis.

``plot_trained``: the models the run trained, each at its own test accuracy against its
measured training seconds, the front among the from-scratch ones and the kept model marked.
``plot_tradeoff``: the screened candidates, at the search's own number (the supernet score:
validation accuracy with inherited weights) against their predicted training cost or their
parameters; the trials trained later are marked there at that same number, never at a
trained accuracy.
"""

from __future__ import annotations

import html

import plotly.graph_objects as go

from nasflow import names
from nasflow.report._style import BLUE, DARK, GOLD, GREY, RED, layout, not_measured
from nasflow.report._trained import (
    ANCHOR,
    FINETUNED,
    MEASURED_CLOCK,
    RETRAINED,
    SPLIT,
    TrainedFront,
    TrainedModel,
)
from nasflow.report._trials import (
    DOMINATED,
    FRONT,
    INFEASIBLE,
    OVER_BUDGET,
    TradeoffData,
    TrialPoint,
)

#: The kept model's ring (an open symbol is stroked in the marker's colour).
RING = {"color": "black", "symbol": "circle-open", "size": 30, "line": {"width": 3}}
#: The trained-models figure's axes.
TRAINED_Y = f"accuracy on the {SPLIT} split (trained weights, measured)"
TRAINED_X = f"measured training cost (s, {MEASURED_CLOCK})"
#: Axis titles of the search's own numbers, where the metric name alone does not say it.
SEARCH_AXES = {
    names.SUPERNET_SCORE: "supernet score: validation accuracy, inherited weights",
    names.FINETUNED_ACCURACY: "fine-tuned validation accuracy (during the search)",
}


def _log_axis(xs: list[float]) -> str:
    """``"log"`` where the values span more than a decade or so, else ``"linear"``."""
    return "log" if xs and min(xs) > 0 and max(xs) / min(xs) > 20 else "linear"


# ---------------------------------------------------------------------- trained models
def _trained_hover(m: TrainedModel) -> str:
    lines = [f"trial {m.number}: {html.escape(m.weights)}" + (" (kept)" if m.kept else "")]
    lines.append(f"{SPLIT} accuracy {m.test_accuracy:.4f} (measured)")
    if m.val_accuracy is not None:
        lines.append(f"validation accuracy {m.val_accuracy:.4f} (measured; chose it)")
    lines.append(f"training {m.seconds:.3g} s measured ({MEASURED_CLOCK})")
    if m.predicted is not None:
        lines.append(f"{names.PREDICTED_COST} {m.predicted:.3g}")
    if m.params is not None:
        lines.append(f"{m.params:,} parameters")
    lines.append(f"arch {html.escape(m.arch)}")
    return "<br>".join(lines)


def _trained_trace(models: list[TrainedModel], name: str, marker: dict) -> go.Scatter:
    ordered = sorted(models, key=lambda m: m.seconds)
    return go.Scatter(
        x=[m.seconds for m in ordered],
        y=[m.test_accuracy for m in ordered],
        mode="markers",
        marker=marker,
        name=name,
        text=[_trained_hover(m) for m in ordered],
        hovertemplate="%{text}<extra></extra>",
    )


def plot_trained(data: TrainedFront) -> go.Figure:
    """Every trained model at (measured training seconds, test accuracy): the anchors and
    retrains from scratch with the front among them, the ready models fine-tuned from the
    supernet, and a ring on the kept model at its own numbers."""
    title = f"Trained models: {SPLIT} accuracy vs measured training cost"
    if not data.models:
        why = (
            "No trained model with a test accuracy: nothing was trained from scratch or "
            "fine-tuned (run nasflow search without --no-retrain). The screened candidates' "
            "supernet scores are in the next panel."
        )
        if data.untested:
            why = f"{len(data.untested)} trained models have no test accuracy recorded."
        return not_measured(title, why, label="no trained model")
    fig = go.Figure()
    front = sorted((m for m in data.models if m.on_front), key=lambda m: m.seconds)
    if front:
        fig.add_trace(
            go.Scatter(
                x=[m.seconds for m in front],
                y=[m.test_accuracy for m in front],
                mode="lines",
                line={"shape": "hv", "color": BLUE},
                name="front of the from-scratch trainings",
                hoverinfo="skip",
            )
        )
    anchors = [m for m in data.models if m.kind == ANCHOR]
    if anchors:
        marker = {"color": "#ff7f0e", "symbol": "square", "size": 12}
        fig.add_trace(_trained_trace(anchors, "zero-cost anchor (from scratch)", marker))
    retrained = [m for m in data.models if m.kind == RETRAINED]
    if retrained:
        marker = {"color": GOLD, "symbol": "star", "size": 16, "line": {"width": 1}}
        fig.add_trace(_trained_trace(retrained, "retrained from scratch (phase 3)", marker))
    tuned = [m for m in data.models if m.kind == FINETUNED]
    for epochs in sorted({m.epochs or 0 for m in tuned}):
        rows = [m for m in tuned if (m.epochs or 0) == epochs]
        marker = {"color": "#2ca02c", "symbol": "diamond", "size": 10 + 2 * min(epochs, 6)}
        name = f"fine-tuned from the supernet ({epochs} epoch{'s' * (epochs != 1)})"
        fig.add_trace(_trained_trace(rows, name, marker))
    kept = data.kept_model
    if kept is not None:
        fig.add_trace(
            go.Scatter(
                x=[kept.seconds],
                y=[kept.test_accuracy],
                mode="markers+text",
                marker=RING,
                text=[f"kept: trial {kept.number}"],
                textposition="top center",
                name=f"kept model: trial {kept.number}, {kept.weights}",
                hovertext=[_trained_hover(kept)],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    fig.update_xaxes(title=TRAINED_X, type=_log_axis([m.seconds for m in data.models]))
    fig.update_yaxes(title=TRAINED_Y)
    return layout(fig, title, _trained_caption(data, tuned))


def _trained_caption(data: TrainedFront, tuned: list[TrainedModel]) -> str:
    caption = (
        f"Every model the run trained, at its accuracy on the {SPLIT} split (its own weights; "
        "validation chose among them, the test split only reports) against the measured "
        f"{MEASURED_CLOCK} of its training on this machine. From scratch with the study's "
        "recipe: the zero-cost anchors (trained before the supernet) and phase 3's retrains; "
        "the line joins those that no other from-scratch training beats in both."
    )
    if tuned:
        supernet = f" ({data.supernet_seconds:.0f} s measured)" if data.supernet_seconds else ""
        caption += (
            f" Green diamonds: {len(tuned)} ready models fine-tuned from the supernet's "
            "inherited weights; their cost counts their fine-tuning epochs only, not the "
            f"supernet{supernet} their weights come from, so they are not on the line."
        )
    kept = data.kept_model
    if kept is not None:
        caption += (
            f" The ring: the model the run keeps, trial {kept.number} ({kept.weights}), "
            f"{SPLIT} accuracy {kept.test_accuracy:.4f}, {kept.seconds:.3g} s measured."
        )
    elif data.kept is not None:
        caption += f" The kept model (trial {data.kept.trial}) has no {SPLIT} accuracy to draw."
    if data.untested:
        caption += f" {len(data.untested)} trained models without a {SPLIT} accuracy are left out."
    return caption


# ---------------------------------------------------------------------- screened candidates
def _hover(p: TrialPoint, x_title: str, y_title: str) -> str:
    acc = "not evaluated" if p.accuracy is None else f"{p.accuracy:.4f}"
    x = f"{p.x:,.0f}" if x_title == names.PARAMS else f"{p.x:.4g}"
    lines = [f"trial {p.number}" + (" (retrained in phase 3)" if p.winner else "")]
    lines += [f"{html.escape(y_title)} {acc}", f"{html.escape(x_title)} {x}"]
    if p.test_accuracy is not None:
        lines.append(f"after retraining: {names.RETRAINED_TEST_ACCURACY} {p.test_accuracy:.4f}")
    lines.append(f"arch {html.escape(p.arch)}")
    if p.note:
        lines.append(html.escape(p.note))
    return "<br>".join(lines)


def plot_tradeoff(data: TradeoffData, title: str) -> go.Figure:
    """The screened candidates at the search's own number (``data.y_title``) against
    predicted cost or parameters: front, dominated, violators, skipped, the trials trained
    later (at that same number) and a ring on the kept model's trial."""
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
                marker={"color": GOLD, "symbol": "star-open", "size": 16, "line": {"width": 2}},
                name=f"retrained in phase 3 (at its {data.y_title})",
                text=[_hover(p, data.x_title, data.y_title) for p in wins],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    kept = data.kept
    ring = next(
        (p for p in data.points if kept and p.number == kept.trial and p.accuracy is not None),
        None,
    )
    if ring is not None:
        fig.add_trace(
            go.Scatter(
                x=[ring.x],
                y=[ring.accuracy],
                mode="markers",
                marker=RING,
                name=f"the kept model's trial {ring.number} (at its {data.y_title})",
                text=[f"trial {ring.number}: the kept model's architecture, {data.y_title}"],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    fig.update_xaxes(title=data.x_title, type=_log_axis([p.x for p in data.points]))
    fig.update_yaxes(title=SEARCH_AXES.get(data.y_title, data.y_title))
    return layout(fig, title, _tradeoff_caption(data, bool(wins), ring is not None))


def _tradeoff_caption(data: TradeoffData, wins: bool, ring: bool) -> str:
    meaning = names.MEANINGS.get(data.y_title)
    caption = (
        f"{len(data.points)} trials at the search's own number, {data.y_title}"
        + (f" ({meaning})" if meaning else "")
        + f", against {data.x_title}. The front is the set of completed trials that no other "
        "is better than in both (in this plane, which can differ from the study's own "
        "objectives). Hover a point for its architecture."
    )
    if data.x_basis:
        caption += " " + data.x_basis[0].upper() + data.x_basis[1:] + "."
    if data.left_out:
        caption += f" {data.left_out} trials without a {data.x_attr} record are left out."
    if wins:
        caption += (
            " Open stars: the trials phase 3 retrained from scratch, drawn at their "
            f"{data.y_title}; their trained accuracy is in the trained-models panel."
        )
    if ring:
        caption += (
            " The black ring: the kept model's architecture, at its "
            f"{data.y_title} (its trained numbers: the trained-models panel and the headline)."
        )
    return caption
