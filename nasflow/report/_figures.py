"""Drawing: plotly figures from the figure data of ``_trials.py`` and ``_records.py``.

Nothing here reads a study; every function takes one figure-data NamedTuple. A figure's
explanation is its subtitle, so the HTML report and optuna-dashboard show the same text.
"""

from __future__ import annotations

import html
import math
import textwrap

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from nasflow import names
from nasflow.record import (
    COST_TABLE_KEY,
    MULTIPLIERS_KEY,
    STACK_KEY,
    SUPERNET_KEY,
)
from nasflow.report._records import (
    CostModelData,
    FairnessData,
    MultipliersData,
    MultiplierStep,
    StackData,
)
from nasflow.report._style import BLUE, DARK, GOLD, GREY, RED, layout, not_measured, side_note
from nasflow.report._trials import (
    COMPLETED,
    FAILED,
    PRUNED,
    SKIPPED,
    BudgetData,
    HistoryData,
)
from nasflow.sampling import STRICTLY_FAIR

_STATE_COLORS = {COMPLETED: BLUE, PRUNED: "#ff7f0e", SKIPPED: RED, FAILED: DARK}


def plot_history(data: HistoryData) -> go.Figure:
    """Accuracy of each completed trial and the best so far."""
    title = "Optimization history"
    if not data.numbers:
        return not_measured(title, "no completed trial yet")
    fig = go.Figure(
        [
            go.Scatter(
                x=data.numbers,
                y=data.accuracy,
                mode="markers",
                name="trial",
                marker={"color": BLUE},
            ),
            go.Scatter(
                x=data.numbers,
                y=data.best,
                mode="lines",
                line={"shape": "hv", "color": RED},
                name="best so far",
            ),
        ]
    )
    fig.update_xaxes(title="trial")
    fig.update_yaxes(title=data.y_title)
    caption = f"The {data.y_title} of every completed trial in the order they finished."
    return layout(fig, title, caption)


def plot_budget(data: BudgetData) -> go.Figure:
    """Fine-tuning epochs per trial, coloured by how the trial ended."""
    title = "Budget each trial received"
    if not data.numbers:
        return not_measured(title, "no finished trial yet")
    if not any(data.epochs):
        return not_measured(
            title,
            f"Nothing to show: none of the {len(data.numbers)} finished trials was fine-tuned "
            "during the search (a one-shot study: every candidate was scored from the "
            "supernet's inherited weights, 0 epochs each, so no pruner had epochs to cut). "
            + (
                f"The fine-tuning phase after the search trained {data.finetuned} finalists: "
                "see the ready models."
                if data.finetuned
                else ""
            ),
            label="no fine-tuning during the search",
        )
    fig = go.Figure()
    for state, color in _STATE_COLORS.items():
        idx = [i for i, s in enumerate(data.states) if s == state]
        if idx:
            fig.add_trace(
                go.Bar(
                    x=[data.numbers[i] for i in idx],
                    y=[data.epochs[i] for i in idx],
                    name=state,
                    marker={"color": color},
                    text=[str(data.epochs[i]) for i in idx],
                    textposition="outside",
                    cliponaxis=False,
                )
            )
    fig.update_xaxes(title="trial")
    fig.update_yaxes(title="epochs fine-tuned", rangemode="tozero", dtick=1)
    n_pruned = data.states.count(PRUNED)
    caption = (
        "Epochs of fine-tuning with inherited weights each trial got before it completed or "
        f"the pruner (Hyperband/ASHA, or Pareto successive halving) stopped it; {n_pruned} "
        "pruned. 0 epochs: scored from the supernet only. Skipped trials were over budget "
        "and never trained."
    )
    return layout(fig, title, caption)


def plot_fairness(data: FairnessData) -> go.Figure:
    """Per-op training counts of the supernet with the strict-fair bounds."""
    title = "Supernet per-op training counts (fairness)"
    if not data.labels:
        return not_measured(title, f"no supernet record (study user attribute {SUPERNET_KEY})")
    fig = go.Figure()
    for i, lab in enumerate(data.labels):
        xs = [f"{lab.label}={v}" for v in lab.values]
        fig.add_trace(
            go.Bar(
                x=xs,
                y=lab.counts,
                name=lab.label,
                marker={"color": BLUE if i % 2 == 0 else "#6baed6"},
                showlegend=False,
                hovertemplate="%{x}: trained %{y} times<extra></extra>",
            )
        )
        if lab.low is not None:
            for bound, name in ((lab.low, "rule floor"), (lab.high, "rule ceiling")):
                fig.add_trace(
                    go.Scatter(
                        x=xs,
                        y=[bound] * len(xs),
                        mode="markers",
                        marker={
                            "symbol": "line-ew",
                            "size": 22,
                            "line": {"width": 3, "color": RED},
                        },
                        name=name,
                        legendgroup=name,
                        showlegend=i == 0,
                        hovertemplate=f"{name}: %{{y}}<extra></extra>",
                    )
                )
    fig.update_yaxes(title="paths that trained the op", rangemode="tozero")
    if data.sampler in STRICTLY_FAIR:
        ok = sum(1 for lab in data.labels if lab.within_rule)
        caption = (
            f"Strictly fair sampling: M = {data.paths_per_step} paths per step over "
            f"{data.steps} steps. A layer with m choices trains each choice floor(M/m) or "
            "ceil(M/m) times per step, so with unequal choice counts the counts of a smaller "
            "layer may differ by up to S steps (red marks: S*floor(M/m) and S*ceil(M/m)); "
            f"with equal counts all bars of a layer are equal. {ok} of {len(data.labels)} "
            "labels lie within the rule."
        )
        if data.split is not None:
            caption += (
                f" The supernet was split on {data.split!r} at epoch {data.split_epoch} "
                f"(few-shot): from then on every value of {data.split!r} has its own copy of "
                "every op, and an op's copy trains when a path of that value draws the op, "
                "so these counts hold over the whole supernet, not within each copy."
            )
    else:
        caption = (
            f"{data.sampler} sampling: {data.paths_per_step} path(s) per step; counts are "
            "random, no balance rule applies (strict fairness would use the floor/ceil(M/m) "
            "rule)."
        )
    return layout(fig, title, caption)


def _diagonal(lo: float, hi: float, show: bool) -> go.Scatter:
    return go.Scatter(
        x=[lo, hi],
        y=[lo, hi],
        mode="lines",
        line={"dash": "dash", "color": GREY},
        name="measured = predicted",
        legendgroup="diagonal",
        showlegend=show,
        hoverinfo="skip",
    )


def _span(values: list[float]) -> tuple[float, float]:
    positive = [v for v in values if v > 0] or [1.0]
    return min(positive) * 0.8, max(positive) * 1.2


def plot_costmodel(data: CostModelData) -> go.Figure:
    """Left: the measured training steps the cost model was fitted on, against its fitted
    line; right: predicted against measured training cost of the retrained winners."""
    title = "Cost model: predicted vs measured training cost"
    cal = data.calibration
    steps = list(cal.steps) if cal is not None else []
    no_winner = "no winner was retrained from scratch (run nasflow search with --retrain)"
    if not data.points and not steps:
        why = f"{no_winner}; no calibration steps: {data.why or 'none recorded'}."
        return not_measured(title, why[0].upper() + why[1:])
    # (Each side is named by its axis titles: subplot titles would collide with the caption.)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14)
    clock = data.clock or "seconds"
    if steps and cal is not None:
        fitted = [cal.predict(x.ops) for x in steps]
        measured = [x.measured for x in steps]
        fig.add_trace(_diagonal(*_span(fitted + measured), True), row=1, col=1)
        fig.add_trace(
            go.Scatter(
                x=fitted,
                y=measured,
                mode="markers",
                marker={"color": BLUE, "size": 10},
                name=f"calibration step ({len(steps)}, measured)",
                customdata=[x.ops for x in steps],
                hovertemplate="fitted %{x:.3g}s, measured %{y:.3g}s (ops sum "
                "%{customdata:.3g}s)<extra></extra>",
            ),
            row=1,
            col=1,
        )
    else:
        side_note(fig, f"no calibration steps: {data.why}", "")
    if data.points:
        ends = [v for p in data.points for v in (p.predicted, p.measured)]
        fig.add_trace(_diagonal(*_span(ends), not steps), row=1, col=2)
        fig.add_trace(
            go.Scatter(
                x=[p.predicted for p in data.points],
                y=[p.measured for p in data.points],
                mode="markers+text",
                text=[f"trial {p.number}" for p in data.points],
                textposition="top center",
                marker={"color": GOLD, "size": 12, "line": {"width": 1}},
                name="retrained winner",
                customdata=[p.ratio for p in data.points],
                hovertemplate="predicted %{x:.3g}s, measured %{y:.3g}s "
                "(x%{customdata:.2f})<extra></extra>",
            ),
            row=1,
            col=2,
        )
    else:
        side_note(fig, no_winner, "2")
    for col in (1, 2):
        fig.update_xaxes(type="log", row=1, col=col)
        fig.update_yaxes(type="log", row=1, col=col)
    fig.update_xaxes(title="calibration step: fitted (s)", row=1, col=1)
    fig.update_yaxes(title=f"calibration step: measured ({clock}, s)", row=1, col=1)
    fig.update_xaxes(title=f"winner: {names.PREDICTED_COST}", row=1, col=2)
    fig.update_yaxes(title=f"winner: {names.MEASURED_COST}", row=1, col=2)
    caption = (
        "Left: the whole-network training steps the cost model was fitted on, measured "
        "against its fitted line (one step each). Right: the retrained winners' whole "
        "training. Predicted: the cost model's fitted step time of the candidate times the "
        "recipe's steps (during search)."
    )
    if steps and cal is not None:
        caption += (
            f" Fitted on {len(steps)} whole-network training steps measured on "
            f"{data.device or 'this device'} ({clock}, best of rounds"
            + (f", batch {cal.batch_size}" if cal.batch_size else "")
            + f"): step = {cal.slope:.3g} x sum of op seconds + {cal.intercept:.3g}s."
        )
    else:
        caption += f" Calibration steps not shown: {data.why} (study user attribute " + (
            f"{COST_TABLE_KEY})."
        )
    if data.points:
        ratios = ", ".join(f"trial {p.number} x{p.ratio:.2f}" for p in data.points)
        caption += f" Measured: the from-scratch retrain. measured/predicted: {ratios}."
    return layout(fig, title, caption)


def plot_stack(data: StackData) -> go.Figure:
    """The speedup-multiplier waterfall (log scale), or a labelled empty panel."""
    title = "Speedup stack: measured multipliers"
    if not data.measured:
        return not_measured(
            title,
            (data.note + " " if data.note else "")
            + "No speedup-stack measurement is stored with this study (study user attribute "
            f"{STACK_KEY}). nasflow shows only multipliers measured on this workload, never "
            "an assumed one.",
        )
    if not data.layers:
        return not_measured(
            title,
            f"The stack was measured against {data.baseline} ({data.device}) and no layer is "
            "in it: training ran as the baseline.",
            label="no layer kept",
        )
    layers = data.measured_layers
    unmeasured = [x.name for x in data.layers if x.alone is None]
    if not layers:
        return not_measured(title, f"No layer has its own measurement: {', '.join(unmeasured)}.")
    names = [x.name for x in layers] + ["product of layers"]
    measure = ["relative"] * len(layers) + ["total"]
    y = [math.log(x.alone) for x in layers if x.alone is not None] + [0.0]
    text = [f"x{x.alone:.2f}" for x in layers] + [f"x{data.product:.2f}"]
    if data.end_to_end is not None and data.interaction is not None:
        names += ["interaction", "measured end-to-end"]
        measure += ["relative", "total"]
        y += [math.log(data.interaction), 0.0]
        text += [f"x{data.interaction:.2f}", f"x{data.end_to_end:.2f}"]
    fig = go.Figure(
        go.Waterfall(
            x=names, y=y, measure=measure, text=text, textposition="outside", name="multiplier"
        )
    )
    cum = [(x.name, x.cumulative) for x in layers if x.cumulative is not None]
    if cum:
        fig.add_trace(
            go.Scatter(
                x=[n for n, _ in cum],
                y=[math.log(c) for _, c in cum],
                mode="markers",
                marker={"color": RED, "symbol": "diamond", "size": 10},
                name="measured cumulative",
                text=[f"x{c:.2f}" for _, c in cum],
                hovertemplate="%{x}: cumulative %{text}<extra></extra>",
            )
        )
    ticks = [0.25, 0.5, 0.75, 0.9, 1, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20, 50, 100]
    fig.update_yaxes(
        title="multiplier (log scale)",
        tickvals=[math.log(t) for t in ticks],
        ticktext=[f"x{t:g}" for t in ticks],
    )
    e2e = "not measured" if data.end_to_end is None else f"x{data.end_to_end:.2f}"
    caption = (
        f"Each layer alone vs {data.baseline} ({data.device}), same work, same run; their "
        f"product x{data.product:.2f} against the measured end-to-end {e2e}; the difference "
        "is the interaction between layers."
    )
    if unmeasured:
        caption += (
            f" Not measured alone, left out (so no interaction is shown): {', '.join(unmeasured)}."
        )
    if data.chosen is not None:
        if data.chosen:
            m = (
                ""
                if data.chosen_multiplier is None
                else f", measured x{data.chosen_multiplier:.2f}"
            )
            caption += f" Trained with: {'+'.join(data.chosen)}{m}."
        else:
            caption += (
                " No layer was kept (none gained enough without losing accuracy): trained "
                f"with {data.baseline}."
            )
    if data.note:
        caption += " " + data.note
    return layout(fig, title, caption)


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Multiplier ticks (x1, x2, x5, x10...) covering ``[lo, hi]``."""
    ticks = [m * 10.0**e for e in range(-3, 7) for m in (1, 2, 5)]
    inside = [t for t in ticks if lo / 2.5 <= t <= hi * 2.5]
    return inside or [1.0]


def _step_text(step: MultiplierStep) -> str:
    if step.multiplier is None:
        return "not measured<br>n/a"
    return f"x{step.multiplier:.2f}<br>{step.label}"


def plot_multipliers(data: MultipliersData) -> go.Figure:
    """The search-level multipliers as a waterfall from x1 to the compounded figure (log
    scale), each step labelled with its multiplier, MEASURED/ESTIMATE and its basis, beside
    the run's measured wall time."""
    title = "Search-level multipliers: what each technique saved"
    if not data.recorded:
        return not_measured(
            title,
            f"No multiplier record is stored with this study (study user attribute "
            f"{MULTIPLIERS_KEY}): a search run writes it when it finishes (a tabular study "
            "has none).",
        )
    # (Each side is named by its axis titles: subplot titles would collide with the caption.)
    fig = make_subplots(rows=1, cols=2, column_widths=[0.7, 0.3], horizontal_spacing=0.12)
    _add_multiplier_waterfall(fig, data)
    _add_wall_time_bars(fig, data)
    return layout(fig, title, _multipliers_caption(data), height=560)


def _multiplier_steps(data: MultipliersData) -> list[MultiplierStep]:
    """The steps drawn: each technique's, then the compounded figure where recorded."""
    return [*data.steps, data.compounded] if data.compounded else list(data.steps)


def _add_multiplier_waterfall(fig: go.Figure, data: MultipliersData) -> None:
    """The waterfall of the steps' multipliers (left), on a log axis ticked as ``xN``."""
    steps = _multiplier_steps(data)
    y = [0.0 if s.multiplier is None else math.log(s.multiplier) for s in data.steps]
    measure = ["relative"] * len(data.steps)
    if data.compounded is not None:
        # The total bar is drawn at the record's compounded figure (the running sum of the
        # available steps' logs is the same number).
        y.append(0.0)
        measure.append("total")
    fig.add_trace(
        go.Waterfall(
            x=[s.title for s in steps],
            y=y,
            measure=measure,
            base=0.0,
            text=[_step_text(s) for s in steps],
            textposition="outside",
            textfont={"size": 12},
            customdata=[
                "<br>".join(textwrap.wrap(html.escape(f"{s.label}: {s.basis}"), 90)) for s in steps
            ],
            hovertemplate="%{x}: %{customdata}<extra></extra>",
            name="multiplier",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    running = [0.0]
    for v in y[: len(data.steps)]:
        running.append(running[-1] + v)
    lo, hi = math.exp(min(running)), math.exp(max(running))
    ticks = _log_ticks(min(lo, 1.0), max(hi, 1.0))
    fig.update_yaxes(
        title="multiplier: cost without / cost with (log scale)",
        tickvals=[math.log(t) for t in ticks],
        ticktext=[f"x{t:g}" for t in ticks],
        range=[math.log(min(ticks)) - 0.3, math.log(max(ticks)) + 0.6],
        row=1,
        col=1,
    )


def _add_wall_time_bars(fig: go.Figure, data: MultipliersData) -> None:
    """The study's measured wall times (right): the search, its runs and, where the
    one-shot step records it, training the same candidates stand-alone (its label)."""
    bars = [("search", data.search_seconds, "MEASURED")]
    bars.append(("all runs", data.run_seconds, "MEASURED"))
    if data.without_nasflow_seconds is not None:
        one = next((s for s in data.steps if s.key == "one_shot"), None)
        bars.append(("stand-alone", data.without_nasflow_seconds, one.label if one else "n/a"))
    shown = [(n, v, lab) for n, v, lab in bars if v is not None]
    fig.add_trace(
        go.Bar(
            x=[n for n, _, _ in shown],
            y=[v for _, v, _ in shown],
            text=[f"{v:.3g}s<br>{lab}" for _, v, lab in shown],
            textposition="outside",
            textfont={"size": 12},
            cliponaxis=False,
            marker={"color": [GREY if lab != "MEASURED" else DARK for _, _, lab in shown]},
            name="seconds",
            showlegend=False,
            hovertemplate="%{x}: %{y:.1f}s<extra></extra>",
        ),
        row=1,
        col=2,
    )
    top = max((v for _, v, _ in shown), default=1.0)
    fig.update_yaxes(
        title="measured wall time of this run (s)", range=[0, top * 1.3], row=1, col=2
    )


def _multipliers_caption(data: MultipliersData) -> str:
    """What the figure shows, then one line per step: its multiplier, label and basis."""
    lines = [
        f"{s.title} x{s.multiplier:.2f} {s.label}: {s.basis}"
        if s.multiplier is not None
        else f"{s.title} n/a (not measured, drawn flat at x1): {s.basis}"
        for s in _multiplier_steps(data)
    ]
    return (
        "Each step multiplies the cost of the search (cost without the technique / cost with "
        "it), from the run's stored record, the one the search summary prints; MEASURED: "
        "measured by this study, ESTIMATE: estimated, as each basis says. The compounded "
        "figure assumes the techniques are independent: the measured wall time beside it "
        "is what the study took (search: supernet + search; all runs: every phase of its runs"
        + (
            "; stand-alone: training the same candidates stand-alone, from the one-shot "
            "basis and labelled as it is"
            if data.without_nasflow_seconds is not None
            else ""
        )
        + ").\n"
        + "\n".join(lines)
    )
