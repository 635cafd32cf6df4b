"""What every report figure shares: its colours, its layout (the title, and the caption as
the subtitle, so the HTML report and optuna-dashboard show the same text), and the panel
that says a quantity was not measured."""

from __future__ import annotations

import html
import textwrap

import plotly.graph_objects as go

BLUE, GREY, DARK, RED, GOLD = "#1f77b4", "#b8b8b8", "#6e6e6e", "#d62728", "#ffb000"


def layout(fig: go.Figure, title: str, caption: str, height: int = 480) -> go.Figure:
    # One paragraph per "\n" of the caption, each wrapped.
    lines = [
        line
        for paragraph in caption.split("\n")
        for line in textwrap.wrap(paragraph, 120, break_on_hyphens=False)
    ] or [""]
    fig.update_layout(
        # The title is pinned to the top of the figure: Plotly's default centres it in the
        # top margin, so a long caption below it ran into the plot.
        title={
            "text": html.escape(title),
            "x": 0.01,
            "y": 1,
            "yref": "container",
            "yanchor": "top",
            "pad": {"t": 20},
            "subtitle": {"text": "<br>".join(html.escape(s) for s in lines)},
        },
        margin={"t": 70 + 17 * len(lines), "l": 70, "r": 30, "b": 60},
        height=height + 17 * len(lines),
        template="plotly_white",
        legend={"orientation": "h", "y": -0.18},
    )
    return fig


def fmt(v: float | None, spec: str) -> str:
    return "" if v is None else format(v, spec)


def side_note(fig: go.Figure, text: str, axis: str) -> None:
    """Say in the middle of subplot ``axis`` (``""`` for the first, ``"2"``...) why it is
    empty."""
    fig.add_annotation(
        text=html.escape(text),
        xref=f"x{axis} domain",
        yref=f"y{axis} domain",
        x=0.5,
        y=0.5,
        showarrow=False,
        font={"color": DARK},
    )


def not_measured(title: str, why: str, label: str = "not measured") -> go.Figure:
    """A panel with no data, saying so (``label``, ``not measured`` by default) and why."""
    fig = go.Figure()
    fig.add_annotation(
        text=f"<b>{html.escape(label)}</b>",
        x=0.5,
        y=0.6,
        xref="paper",
        yref="paper",
        showarrow=False,
        font={"size": 28, "color": DARK},
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return layout(fig, title, why, height=300)
