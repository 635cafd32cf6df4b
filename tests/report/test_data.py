"""The figure-data functions, checked on studies built through Optuna's own API."""

from __future__ import annotations

import json
import math

import pytest

from nasflow.pipeline import arch_summary
from nasflow.record import open_stored_study
from nasflow.report import (
    budget_data,
    costmodel_data,
    fairness_data,
    history_data,
    pareto_table,
    plot_tradeoff,
    report_data,
    report_figures,
    stack_data,
    tradeoff_data,
)
from nasflow.report._study import ReportError, generic_summary, summarizer
from nasflow.report._tables import table_cells
from nasflow.report._trials import (
    COMPLETED,
    DOMINATED,
    FAILED,
    FRONT,
    INFEASIBLE,
    OVER_BUDGET,
    PRUNED,
    SKIPPED,
)
from nasflow.sampling import FairDepthSampler, FairSampler, UniformSampler
from nasflow.search_spaces.mnist1d import MNIST1DSpace
from nasflow.space import Arch
from nasflow.train._supernet import OpCounter
from tests.report._studies import arch_json, make_study, mixed_study


def test_tradeoff_marks_front_dominated_violators_skips_and_the_winner() -> None:
    data = tradeoff_data(mixed_study(), "train_cost")
    by = {p.number: p for p in data.points}
    assert sorted(by) == [0, 1, 2, 3, 4]  # pruned-by-pruner (5) and failed (6) are not here
    assert by[0].status == FRONT and by[1].status == FRONT
    assert by[2].status == DOMINATED
    # Trial 3 beats everything but violates a constraint: marked, and kept off the front.
    assert by[3].status == INFEASIBLE and by[3].accuracy == 0.95
    assert by[4].status == OVER_BUDGET and by[4].accuracy is None
    assert by[4].note == "over budget: x"
    assert [n for n, p in by.items() if p.winner] == [1]
    assert by[1].arch == "k5 k3 width=1"
    assert data.x_title == "predicted training cost (s)" and data.left_out == 0


def test_tradeoff_front_depends_on_the_plane() -> None:
    by = {p.number: p for p in tradeoff_data(mixed_study(), "params").points}
    # On params, trial 2 (400 params) is no longer dominated; trial 0 (500) still is not.
    assert by[2].status == FRONT and by[0].status == FRONT and by[1].status == FRONT
    assert by[2].x == 400.0


def test_tradeoff_counts_trials_without_the_attribute_and_refuses_unknown_axes() -> None:
    study = make_study(
        [
            {"values": [0.5, 1.0], "attrs": {"train_cost": 1.0, "arch": arch_json(["k3"])}},
            {"values": [0.6, 1.0], "attrs": {"arch": arch_json(["k5"])}},
        ]
    )
    data = tradeoff_data(study, "train_cost")
    assert [p.number for p in data.points] == [0] and data.left_out == 1
    with pytest.raises(ValueError, match="'latency'"):
        tradeoff_data(study, "latency")


def test_history_is_completed_trials_with_best_so_far() -> None:
    study = make_study(
        [
            {"values": [0.5]},
            {"values": [0.4]},
            {"state": "pruned"},
            {"values": [0.7]},
            {"values": [0.6]},
        ],
        directions=("maximize",),
    )
    h = history_data(study)
    assert h.numbers == [0, 1, 3, 4]
    assert h.accuracy == [0.5, 0.4, 0.7, 0.6]
    assert h.best == [0.5, 0.5, 0.7, 0.7]


def test_budget_reports_epochs_and_how_each_trial_ended() -> None:
    b = budget_data(mixed_study())
    assert b.numbers == [0, 1, 2, 3, 4, 5, 6]
    assert b.epochs == [3, 3, 3, 3, 0, 1, 0]
    assert b.states == [COMPLETED] * 4 + [SKIPPED, PRUNED, FAILED]


def _fair_counts(space: MNIST1DSpace, sampler_cls: type, steps: int) -> dict:
    sampler = sampler_cls(space, seed=3)
    counter = OpCounter(space)
    for step in range(steps):
        counter.update(sampler.paths(step))
    return {
        "sampler": sampler.name,
        "epochs": 1,
        "paths_per_step": sampler.paths_per_step,
        "op_counts": counter.as_rows(),
    }


@pytest.mark.parametrize(("sampler", "layers"), [(FairSampler, 1), (FairDepthSampler, 2)])
def test_fairness_bounds_hold_for_the_real_fair_samplers_with_unequal_choice_counts(
    sampler: type, layers: int
) -> None:
    # 5 ops per layer against 3 widths: M = 5, widths get floor(5/3)=1 or ceil(5/3)=2. The
    # depth-spread sampler (its skips coupled over two layers a stage) keeps the same rule.
    space = MNIST1DSpace(base_channels=4, layers_per_stage=layers)
    record = _fair_counts(space, sampler, steps=6)
    data = fairness_data(make_study([], user_attrs={"nasflow:supernet": record}))
    assert data.sampler == sampler.name and data.paths_per_step == 5 and data.steps == 6
    by = {lab.label: lab for lab in data.labels}
    assert by["s1/l0"].counts == [6] * 5 and (by["s1/l0"].low, by["s1/l0"].high) == (6, 6)
    assert (by["width"].low, by["width"].high) == (6, 12)
    assert sum(by["width"].counts) == 30
    assert all(lab.within_rule for lab in data.labels)


def test_fairness_flags_counts_outside_the_rule_and_skips_it_for_uniform() -> None:
    record = {
        "sampler": "fair",
        "paths_per_step": 2,
        "op_counts": [["a", "x", 4], ["a", "y", 4], ["b", 0, 6], ["b", 1, 2]],
    }
    data = fairness_data(make_study([], user_attrs={"nasflow:supernet": record}))
    by = {lab.label: lab for lab in data.labels}
    assert by["a"].within_rule is True and by["b"].within_rule is False
    space = MNIST1DSpace(base_channels=4, layers_per_stage=1)
    uniform = _fair_counts(space, UniformSampler, steps=5)
    data = fairness_data(make_study([], user_attrs={"nasflow:supernet": uniform}))
    assert data.sampler == "uniform" and all(lab.within_rule is None for lab in data.labels)
    assert fairness_data(make_study([])).labels == []


def test_costmodel_pairs_predicted_and_measured_per_winner() -> None:
    data = costmodel_data(mixed_study())
    assert [(p.number, p.predicted, p.measured) for p in data.points] == [(1, 2.0, 3.0)]
    assert data.points[0].ratio == pytest.approx(1.5)
    assert costmodel_data(make_study([])).points == []


def test_stack_is_not_measured_without_a_record() -> None:
    data = stack_data(make_study([]))
    assert not data.measured and data.layers == [] and data.product is None
    assert data.end_to_end is None and data.interaction is None


def test_stack_record_gives_product_and_interaction() -> None:
    record = {
        "baseline": "fp32 eager",
        "device": "cpu",
        "layers": [
            {"name": "a", "alone": 1.5, "cumulative": 1.5},
            {"name": "b", "alone": 2.0, "cumulative": 2.4},
        ],
        "end_to_end": 2.4,
    }
    data = stack_data(make_study([], user_attrs={"nasflow:stack": record}))
    assert data.measured and [x.name for x in data.layers] == ["a", "b"]
    assert data.product == pytest.approx(3.0)
    assert data.interaction == pytest.approx(0.8)
    no_e2e = {**record, "end_to_end": None}
    assert stack_data(make_study([], user_attrs={"nasflow:stack": no_e2e})).interaction is None


@pytest.mark.slow
def test_a_study_whose_calibration_ran_has_a_waterfall_with_bars(calibrated_study) -> None:
    study = open_stored_study(calibrated_study.name, calibrated_study.url).study
    record = study.user_attrs["nasflow:stack"]
    assert record["origin"]["kind"] == "calibrated" and not record.get("skipped")
    data = stack_data(study)
    names = ["amp", "accumulation", "denormal", "threads"]
    assert data.measured and [x.name for x in data.layers] == names
    for layer in data.layers:  # each alone and stacked cumulatively, measured in one run
        assert layer.alone > 0 and layer.cumulative > 0, layer
    assert data.layers[0].cumulative == data.layers[0].alone
    assert data.end_to_end == data.layers[-1].cumulative
    assert data.product == pytest.approx(math.prod(x.alone for x in data.layers))
    assert data.interaction == pytest.approx(data.end_to_end / data.product)
    assert data.chosen == record["chosen"] and "Calibrated on this device" in data.note
    figure = next(f for f in report_figures(report_data(study)) if f.key == "stack")
    assert figure.has_data
    bars = figure.figure.data[0]
    assert bars.type == "waterfall"
    assert list(bars.x) == [*names, "product of layers", "interaction", "measured end-to-end"]
    cumulative = figure.figure.data[1]
    assert list(cumulative.x) == names and len(cumulative.y) == len(names)


@pytest.mark.parametrize(
    ("record", "bad"),
    [
        ({"layers": [{"name": "a", "alone": -1.0}]}, "-1.0"),
        ({"layers": [{"name": "a", "alone": float("nan")}]}, "nan"),
        ({"layers": [{"alone": 2.0}]}, "'alone': 2.0"),
        ({"layers": [], "end_to_end": "fast"}, "'fast'"),
        ({"layer": []}, "'layer'"),
    ],
)
def test_a_malformed_stack_record_is_refused_naming_the_value(record, bad) -> None:
    study = make_study([], user_attrs={"nasflow:stack": record})
    with pytest.raises(ValueError, match=bad.replace("(", r"\(")):
        stack_data(study)


def test_pareto_table_lists_the_studys_front_with_retrain_records() -> None:
    def attrs(cost: float, ops: list[str]) -> dict:
        return {"train_cost": cost, "params": 100, "arch": arch_json(ops)}

    study = make_study(
        [
            {"values": [0.80, 1.0], "attrs": attrs(1.0, ["k3"])},
            {"values": [0.90, 2.0], "attrs": attrs(2.0, ["k5"])},
            {"values": [0.70, 3.0], "attrs": attrs(3.0, ["k7"])},
        ],
        user_attrs={
            "nasflow:objectives": '["accuracy", "train_cost"]',
            "nasflow:retrain:1": {"test_accuracy": 0.88, "measured_train_cost": 3.0},
        },
    )
    table = pareto_table(study)
    assert table.objectives == ["accuracy", "predicted training cost (s)"]
    assert [r.number for r in table.rows] == [1, 0]  # best accuracy first; 2 is dominated
    assert table.rows[0].values == [0.90, 2.0] and table.rows[0].arch == "k5 width=1"
    assert (table.rows[0].test_accuracy, table.rows[0].measured_train_cost) == (0.88, 3.0)
    assert table.rows[1].test_accuracy is None and table.rows[1].params == 100


def test_summaries_use_the_space_when_it_matches_and_refuse_another() -> None:
    space = MNIST1DSpace()
    arch = space.sample(0)
    study = make_study(
        [],
        user_attrs={"nasflow:space": space.name, "nasflow:fingerprint": space.fingerprint()},
    )
    # The registered default space has the recorded fingerprint: its own summary is used.
    assert summarizer(study)(arch.to_json()) == arch_summary(space, arch)
    other = MNIST1DSpace(base_channels=8)
    with pytest.raises(ReportError, match=other.fingerprint()):
        summarizer(study, other)
    # A space built with arguments is re-created from its recorded config.
    small = MNIST1DSpace(base_channels=8, layers_per_stage=1, ops=("k3_e2", "skip"))
    recorded = make_study(
        [],
        user_attrs={
            "nasflow:space": small.name,
            "nasflow:fingerprint": small.fingerprint(),
            "nasflow:space_config": json.dumps(small.config),
        },
    )
    arch = small.sample(1)
    assert summarizer(recorded)(arch.to_json()) == arch_summary(small, arch)
    changed = make_study(
        [], user_attrs={"nasflow:space": "mnist1d", "nasflow:fingerprint": "0" * 16}
    )
    assert summarizer(changed) is generic_summary


def test_generic_summary_lists_ops_then_numbers() -> None:
    arch = Arch({"b": "k5", "a": "k3", "width": 0.75, "lr": 0.00123})
    assert generic_summary(arch.to_json()) == "k3 k5 lr=0.00123 width=0.75"


def test_the_predicted_cost_axis_says_what_the_prediction_is() -> None:
    study = mixed_study()
    plain = tradeoff_data(study)
    assert plain.x_title == "predicted training cost (s)" and "does not record" in plain.x_basis
    study.set_user_attr(
        "nasflow:cost_table", {"clock": "thread CPU time", "source": "measured now"}
    )
    data = tradeoff_data(study)
    assert data.x_title == "predicted training cost (s): thread CPU time of undisturbed steps"
    assert "times the recipe's steps" in data.x_basis and "wall time" in data.x_basis
    fig = plot_tradeoff(data, "t")
    assert fig.layout.xaxis.title.text == data.x_title
    assert "Predicted training cost: the cost model&#x27;s thread CPU time" in (
        fig.layout.title.subtitle.text.replace("<br>", " ")
    )
    assert pareto_table(study).cost_basis == data.x_basis  # the table's note says the same
    timed = make_study(
        [{"values": [0.5, 1.0], "attrs": {"train_cost": 1.0, "arch": arch_json(["k3"])}}],
        user_attrs={"nasflow:scoring": json.dumps({"cost": "measure"})},
    )
    assert tradeoff_data(timed).x_title.endswith("timed steps x recipe steps")
    # The parameters axis is a count: nothing to qualify.
    assert tradeoff_data(study, "params").x_title == "parameters"


def test_the_pareto_table_says_how_each_trial_was_trained_and_adds_the_kept_one() -> None:
    study = mixed_study()
    rows = {r.number: r for r in pareto_table(study).rows}
    assert rows[1].trained == "retrained from scratch (phase 3)" and not rows[1].kept
    assert rows[0].trained == "screened only: not trained"
    # A kept trial outside the Pareto set (trial 2 is dominated) is listed first, marked.
    study.set_user_attr("nasflow:kept", {"trial": 2, "weights": "retrained", "source": "anchor"})
    anchor = {
        "index": 0,
        "trial": 2,
        "val_accuracy": 0.9,
        "test_accuracy": 0.89,
        "measured_train_cost": 5.0,
    }
    study.set_user_attr("nasflow:anchors", {"anchors": [{**anchor, "arch": arch_json(["k3"])}]})
    first = pareto_table(study).rows[0]
    assert (first.number, first.kept, first.on_front) == (2, True, False)
    assert first.trained == "kept: the zero-cost anchor's weights; zero-cost anchor, from scratch"
    assert (first.test_accuracy, first.measured_train_cost) == (0.89, 5.0)
    _, cells = table_cells(pareto_table(study))
    assert cells[0][0] == "2 (kept; not in the set)" and all(c for row in cells for c in row)
