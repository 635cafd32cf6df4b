"""Drawing: each figure shows its data, labels what is missing, and escapes user text."""

from __future__ import annotations

import math
import re

import pytest

from nasflow.names import set_metric_names
from nasflow.report import (
    fairness_data,
    pareto_table,
    plot_fairness,
    plot_stack,
    plot_tradeoff,
    plot_trained,
    report_data,
    report_figures,
    stack_data,
    tradeoff_data,
    trained_front,
)
from nasflow.report._tables import table_cells
from tests.report._studies import FIGURE_KEYS, arch_json, make_study, mixed_study


def _texts(fig) -> str:
    """Every human-readable string of a figure: titles, annotations, trace names."""
    parts = [fig.layout.title.text or "", fig.layout.title.subtitle.text or ""]
    parts += [a.text for a in fig.layout.annotations]
    parts += [t.name or "" for t in fig.data]
    return " ".join(parts).replace("<br>", " ")


def test_screening_figure_draws_each_status_and_marks_retrained_trials_at_their_score() -> None:
    fig = plot_tradeoff(tradeoff_data(mixed_study()), "Pareto front")
    names = [t.name for t in fig.data]
    assert names[0] == "dominated" and names[-1] == "retrained in phase 3 (at its accuracy)"
    assert any(n.startswith("over budget") for n in names)
    assert "violates a constraint" in names and "Pareto front (in this plane)" in names
    winner = fig.data[-1]
    assert list(winner.x) == [2.0] and list(winner.y) == [0.90]
    assert "arch k5 k3 width=1" in winner.text[0]
    # At its search score; its hover names the retrained test accuracy apart from it.
    assert "after retraining: retrained test accuracy 0.8800" in winner.text[0], winner.text[0]
    assert fig.layout.yaxis.title.text == "accuracy"  # no metric names recorded: generic
    skipped = next(t for t in fig.data if t.name.startswith("over budget"))
    assert skipped.y[0] < 0.70  # drawn below every evaluated accuracy, not at a made-up one
    assert "not evaluated" in skipped.text[0]


def test_the_kept_model_is_ringed_where_the_study_records_it() -> None:
    study = mixed_study()
    plain = plot_tradeoff(tradeoff_data(study), "Pareto front")
    assert not any((t.name or "").startswith("the kept model") for t in plain.data)
    study.set_user_attr("nasflow:kept", {"trial": 1, "weights": "retrained", "source": "search"})
    fig = plot_tradeoff(tradeoff_data(study), "Pareto front")
    ring = fig.data[-1]
    assert ring.name == "the kept model's trial 1 (at its accuracy)"
    # On the trial's own point in this plane: its search score, labelled as such.
    assert (list(ring.x), list(ring.y)) == ([2.0], [0.90])
    assert "The black ring" in _texts(fig) and "architecture, at its accuracy" in _texts(fig)
    # A record this version cannot read is ignored, as a missing one is: no ring.
    study.set_user_attr("nasflow:kept", {"trial": 1, "weights": "supernet", "source": "search"})
    fig = plot_tradeoff(tradeoff_data(study), "Pareto front")
    assert not any((t.name or "").startswith("the kept model") for t in fig.data)


def _trained_study():
    """The mixed study with a fine-tuned ready model (trial 0, 2 epochs) and a zero-cost
    anchor (trial 2) beside its retrained winner (trial 1); the numbers are test data."""
    study = mixed_study()
    candidate = {
        "trial": 0,
        "arch": arch_json(["k3", "skip"]),
        "supernet_accuracy": 0.8,
        "val_curve": [0.81, 0.84],
        "epoch_seconds": [1.0, 1.5],
        "test_accuracy": 0.83,
        "status": "ready",
    }
    study.set_user_attr("nasflow:finetuned", {"candidates": [candidate], "rungs": [1, 2]})
    anchor = {
        "index": 0,
        "trial": 2,
        "val_accuracy": 0.86,
        "test_accuracy": 0.85,
        "measured_train_cost": 4.0,
    }
    study.set_user_attr("nasflow:anchors", {"anchors": [{**anchor, "arch": arch_json(["k3"])}]})
    return study


@pytest.mark.parametrize(
    ("kept", "at", "what"),
    [
        ({"trial": 1, "weights": "retrained", "source": "search"}, (3.0, 0.88), "retrained"),
        ({"trial": 0, "weights": "fine-tuned", "source": "search"}, (2.5, 0.83), "2 epochs"),
        ({"trial": 2, "weights": "retrained", "source": "anchor"}, (4.0, 0.85), "anchor"),
    ],
)
def test_the_trained_front_rings_the_kept_model_at_its_own_measured_numbers(
    kept, at, what
) -> None:
    study = _trained_study()
    study.set_user_attr("nasflow:kept", kept)
    front = trained_front(study)
    # Every trained model at (measured seconds, test accuracy): nothing from the search.
    assert sorted((m.seconds, m.test_accuracy) for m in front.models) == [
        (2.5, 0.83),
        (3.0, 0.88),
        (4.0, 0.85),
    ]
    assert [m.number for m in front.models if m.on_front] == [1]  # the anchor is dominated
    fig = plot_trained(front)
    ring = fig.data[-1]
    assert (ring.x[0], ring.y[0]) == at and what in ring.name
    assert ring.name.startswith(f"kept model: trial {kept['trial']}, ")
    points = {(x, y) for t in fig.data if t.mode != "lines" for x, y in zip(t.x, t.y, strict=True)}
    assert points == {(2.5, 0.83), (3.0, 0.88), (4.0, 0.85)}
    assert fig.layout.yaxis.title.text == "accuracy on the test split (trained weights, measured)"
    assert (
        fig.layout.xaxis.title.text
        == "measured training cost (s, wall time of the training steps)"
    )
    text = _texts(fig)
    assert "not the supernet" in text and "so they are not on the line" in text


def test_hover_text_escapes_html_from_the_study() -> None:
    evil = '{"s1/l0":"<img src=x onerror=alert(1)>"}'
    study = make_study([{"values": [0.5, 1.0], "attrs": {"train_cost": 1.0, "arch": evil}}])
    fig = plot_tradeoff(tradeoff_data(study), "t")
    hover = " ".join(t.text[0] for t in fig.data)
    assert "<img" not in hover and "&lt;img" in hover


def test_stack_without_measurements_is_a_labelled_empty_panel() -> None:
    fig = plot_stack(stack_data(make_study([])))
    assert len(fig.data) == 0
    text = _texts(fig)
    assert "not measured" in text and "nasflow:stack" in text
    assert not re.search(r"x\d", text)  # no multiplier of any kind


def test_a_measured_stack_without_layers_says_none_was_kept() -> None:
    record = {"baseline": "fp32 eager", "device": "cpu", "layers": [], "end_to_end": None}
    fig = plot_stack(stack_data(make_study([], user_attrs={"nasflow:stack": record})))
    text = _texts(fig)
    assert len(fig.data) == 0 and "no layer kept" in text and "not measured" not in text
    assert not re.search(r"x\d", text)


def test_a_layer_without_its_own_measurement_is_named_not_drawn() -> None:
    record = {
        "baseline": "fp32 eager",
        "device": "cpu",
        "layers": [{"name": "a", "alone": 1.5}, {"name": "b", "alone": None}],
        "end_to_end": 2.4,
    }
    data = stack_data(make_study([], user_attrs={"nasflow:stack": record}))
    assert data.product == 1.5 and data.interaction is None
    fig = plot_stack(data)
    assert list(fig.data[0].x) == ["a", "product of layers"]
    assert "Not measured alone, left out" in _texts(fig) and ": b." in _texts(fig)


def test_stack_waterfall_compounds_layers_and_shows_the_interaction() -> None:
    record = {
        "baseline": "fp32 eager",
        "device": "cpu",
        "layers": [{"name": "a", "alone": 1.5}, {"name": "b", "alone": 2.0}],
        "end_to_end": 2.4,
    }
    fig = plot_stack(stack_data(make_study([], user_attrs={"nasflow:stack": record})))
    wf = fig.data[0]
    assert list(wf.x) == ["a", "b", "product of layers", "interaction", "measured end-to-end"]
    assert list(wf.text) == ["x1.50", "x2.00", "x3.00", "x0.80", "x2.40"]
    # Relative steps are log-multipliers, so the running sum at the end is log(end-to-end).
    relative = [y for y, m in zip(wf.y, wf.measure, strict=True) if m == "relative"]
    assert math.isclose(sum(relative), math.log(2.4))
    assert "product x3.00" in _texts(fig) and "measured end-to-end x2.40" in _texts(fig)


def test_fairness_figure_states_the_floor_ceil_rule() -> None:
    record = {
        "sampler": "fair",
        "paths_per_step": 3,
        "op_counts": [["op", "a", 2], ["op", "b", 2], ["op", "c", 2], ["w", 1, 4], ["w", 2, 2]],
    }
    fig = plot_fairness(fairness_data(make_study([], user_attrs={"nasflow:supernet": record})))
    text = _texts(fig)
    assert "floor(M/m)" in text and "ceil(M/m)" in text and "unequal choice counts" in text
    assert "2 of 2 labels lie within the rule" in text
    bars = [t for t in fig.data if t.type == "bar"]
    assert [list(b.y) for b in bars] == [[2, 2, 2], [4, 2]]
    assert "split" not in text
    record.update(split="w", split_epoch=0)
    fig = plot_fairness(fairness_data(make_study([], user_attrs={"nasflow:supernet": record})))
    assert "split on &#x27;w&#x27; at epoch 0 (few-shot)" in _texts(fig)  # HTML-escaped
    assert "not within each copy" in _texts(fig)


def test_every_report_figure_is_drawn_and_empty_ones_say_so() -> None:
    full = report_figures(report_data(mixed_study()))
    assert [f.key for f in full] == [*FIGURE_KEYS, "table"]
    missing = {f.key for f in full if not f.has_data}
    # no supernet record, no stack measurement, no multiplier record (no run finished)
    assert missing == {"fairness", "stack", "multipliers"}
    for f in full:
        if f.has_data:
            assert len(f.figure.data) > 0
        else:
            assert len(f.figure.data) == 0 and "not measured" in _texts(f.figure)
    empty = report_figures(report_data(make_study([])))
    assert all(not f.has_data for f in empty)


def test_params_axis_is_logarithmic_only_for_wide_ranges() -> None:
    def study(params: list[int]):
        return make_study(
            [
                {"values": [0.5, 1.0], "attrs": {"params": p, "arch": arch_json(["k3"])}}
                for p in params
            ]
        )

    narrow = plot_tradeoff(tradeoff_data(study([300, 900]), "params"), "t")
    wide = plot_tradeoff(tradeoff_data(study([300, 90_000]), "params"), "t")
    assert narrow.layout.xaxis.type == "linear" and wide.layout.xaxis.type == "log"


ARCH = arch_json(["k5", "k5"])


def test_table_adds_cost_and_params_only_when_they_are_not_objectives() -> None:
    cost_study = make_study(
        [{"values": [0.5, 2.0], "attrs": {"train_cost": 2.0, "params": 950, "arch": ARCH}}],
        user_attrs={"nasflow:objectives": '["accuracy", "train_cost"]'},
    )
    header, rows = table_cells(pareto_table(cost_study))
    assert header == [
        "trial",
        "accuracy",
        "predicted training cost (s)",
        "parameters",
        "retrained test accuracy",
        "measured training cost (s)",
        "trained as",
        "arch",
    ]
    # No empty cell: what was not trained says so.
    assert rows[0] == [
        "0",
        "0.5",
        "2",
        "950",
        "not trained",
        "not trained",
        "screened only: not trained",
        "k5 k5 width=1",
    ]
    params_study = make_study(
        [{"values": [0.5, 100.0], "attrs": {"train_cost": 2.0, "params": 100}}],
        user_attrs={"nasflow:objectives": '["accuracy", "params"]'},
    )
    header, rows = table_cells(pareto_table(params_study))
    assert header[:4] == ["trial", "accuracy", "parameters", "predicted training cost (s)"]
    assert rows[0][:4] == ["0", "0.5", "100", "2"]


def test_axes_and_hovers_use_the_studys_metric_names() -> None:
    study = mixed_study()
    set_metric_names(study, ["supernet score", "predicted training cost (s)"])
    fig = plot_tradeoff(tradeoff_data(study), "Pareto front")
    assert fig.layout.yaxis.title.text == "supernet score: validation accuracy, inherited weights"
    assert fig.layout.xaxis.title.text == "predicted training cost (s)"  # no cost record
    assert "supernet score 0.9000" in fig.data[-1].text[0]
    assert "inherited weights" in _texts(fig)  # the name's meaning
    header, _ = table_cells(pareto_table(study))
    assert header[1:3] == ["supernet score", "predicted training cost (s)"]
