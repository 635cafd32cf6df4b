"""The report's panels drawn from real finished studies: the search-level multipliers
(the record the search summary prints), the one-shot study's empty budget panel and its
cost model's calibration steps, and the fine-tuning phase's ready models."""

from __future__ import annotations

import html
import math

import optuna
import pytest

from nasflow.record import (
    COST_TABLE_KEY,
    FINETUNED_KEY,
    KEPT_KEY,
    MULTIPLIER_PARTS,
    FineTuneResult,
    open_stored_study,
    retrain_key,
    study_cost_table,
    study_multipliers,
)
from nasflow.report import (
    budget_data,
    costmodel_data,
    multipliers_data,
    plot_budget,
    plot_costmodel,
    plot_multipliers,
    ready_models,
    report_data,
    report_figures,
    write_report,
)
from tests.report._studies import make_study, mixed_study

TITLES = ["one-shot", "early stopping", "cost-model gate", "training stack", "DDP"]
NO_FINETUNING = "no fine-tuning during the search"


def _texts(fig: object) -> str:
    """Every human-readable string of a figure: titles, annotations, trace names."""
    layout = fig.layout  # type: ignore[attr-defined]
    parts = [layout.title.text or "", layout.title.subtitle.text or ""]
    parts += [a.text for a in layout.annotations]
    parts += [t.name or "" for t in fig.data]  # type: ignore[attr-defined]
    return " ".join(parts).replace("<br>", " ")


@pytest.fixture(scope="module")
def oneshot(oneshot_study) -> optuna.Study:
    return open_stored_study(oneshot_study.name, oneshot_study.url).study


@pytest.fixture(scope="module")
def tiny(tiny_study) -> optuna.Study:
    return open_stored_study(tiny_study.name, tiny_study.url).study


@pytest.mark.slow
def test_multipliers_figure_draws_the_record_the_summary_printed(oneshot, oneshot_study) -> None:
    record = study_multipliers(oneshot)
    assert record is not None
    data = multipliers_data(oneshot)
    fig = plot_multipliers(data)
    wf = next(t for t in fig.data if t.type == "waterfall")
    assert list(wf.x) == [*TITLES, "compounded"]
    assert list(wf.measure) == ["relative"] * 5 + ["total"]
    caption = _texts(fig)
    for step, key in zip(data.steps, MULTIPLIER_PARTS, strict=True):
        part = record.part(key)
        assert (step.multiplier, step.label) == (part.multiplier, part.label)
        # The summary printed the same multiplier, label and basis for this part.
        line = next(
            x
            for x in oneshot_study.printed.splitlines()
            if x.strip().startswith(step.title + " ") and f"{step.label}: " in x
        )
        assert f"{step.label}: {step.basis}" in line, (line, step.basis)
        if part.multiplier is None:
            assert step.label == "n/a"
        else:
            assert f"x{part.multiplier:.2f}" in line
        assert html.escape(step.basis) in caption  # the basis is on the figure, not dropped
    texts = list(wf.text)
    for i, step in enumerate(data.steps):
        if step.multiplier is None:  # shown as not measured, flat at x1, with its reason
            assert texts[i] == "not measured<br>n/a" and wf.y[i] == 0.0
        else:
            assert texts[i] == f"x{step.multiplier:.2f}<br>{step.label}"
            assert step.label in ("MEASURED", "ESTIMATE")
            assert math.isclose(wf.y[i], math.log(step.multiplier))
    # This run measured no stack and used one process: both named n/a with their reasons.
    assert data.steps[3].multiplier is None and data.steps[4].multiplier is None
    assert "one process: no data-parallel training ran" in caption
    # No fine-tuning during the search, but a fine-tuning phase: its early stopping (the
    # finalists halved over the rungs, each epoch timed) is the measured step.
    assert data.steps[1].multiplier is not None and data.steps[1].label == "MEASURED"
    assert "fine-tuning 3 finalists against" in caption
    assert "nothing to stop early" not in caption
    assert "not measured (the study fixes its stack" in caption
    # The running product of the available steps is the compounded figure, labelled so.
    comp = record.compounded
    assert comp.multiplier is not None and texts[-1] == f"x{comp.multiplier:.2f}<br>ESTIMATE"
    assert math.isclose(math.exp(sum(wf.y[:5])), comp.multiplier, rel_tol=1e-9)
    printed = next(x for x in oneshot_study.printed.splitlines() if "compounded" in x)
    assert f"x{comp.multiplier:.2f}  ESTIMATE" in printed
    # Beside it, the run's measured wall time, from the same record.
    bars = next(t for t in fig.data if t.type == "bar")
    assert list(bars.x)[:2] == ["search", "all runs"]
    assert list(bars.y)[:2] == [record.search_seconds, record.run_seconds]
    assert all("MEASURED" in t for t in list(bars.text)[:2])
    if record.without_nasflow_seconds is not None:  # labelled as the one-shot basis is
        assert list(bars.x)[2] == "stand-alone"
        assert list(bars.y)[2] == record.without_nasflow_seconds
        assert bars.text[2].endswith(record.part("one_shot").label)


def test_without_a_multiplier_record_the_panel_says_why() -> None:
    fig = plot_multipliers(multipliers_data(mixed_study()))
    assert len(fig.data) == 0
    text = _texts(fig)
    assert "not measured" in text and "nasflow:multipliers" in text


@pytest.mark.slow
def test_a_one_shot_studys_budget_panel_says_why_it_is_empty(oneshot) -> None:
    data = budget_data(oneshot)
    assert data.numbers and not any(data.epochs)  # one-shot: 0 epochs each
    assert data.finetuned == 3  # the fine-tuning phase's finalists
    fig = plot_budget(data)
    text = _texts(fig)
    assert len(fig.data) == 0 and NO_FINETUNING in text
    assert f"none of the {len(data.numbers)} finished trials" in text
    assert "trained 3 finalists" in text
    budget = next(f for f in report_figures(report_data(oneshot)) if f.key == "budget")
    assert not budget.has_data


@pytest.mark.slow
def test_a_budget_panel_with_epochs_draws_bars_and_no_note(tiny) -> None:
    fig = plot_budget(budget_data(tiny))
    assert any(t.type == "bar" and max(t.y) > 0 for t in fig.data)
    assert NO_FINETUNING not in _texts(fig) and "not measured" not in _texts(fig)


@pytest.mark.slow
def test_the_cost_model_panel_shows_the_calibration_steps_it_was_fitted_on(oneshot) -> None:
    table = study_cost_table(oneshot)
    assert table is not None and table.calibration is not None
    cal = table.calibration
    assert len(cal.steps) >= 2 and all(s.measured > 0 and s.arch for s in cal.steps)
    data = costmodel_data(oneshot)
    assert data.calibration == cal and len(data.points) == 1  # the one retrained winner
    fig = plot_costmodel(data)
    steps = next(t for t in fig.data if (t.name or "").startswith("calibration step"))
    assert steps.name == f"calibration step ({len(cal.steps)}, measured)"
    assert list(steps.y) == [s.measured for s in cal.steps]
    assert list(steps.x) == pytest.approx([cal.slope * s.ops + cal.intercept for s in cal.steps])
    assert any(t.name == "retrained winner" for t in fig.data)
    text = _texts(fig)
    assert f"Fitted on {len(cal.steps)} whole-network training steps" in text
    assert "no calibration steps" not in text and "no winner" not in text


def test_a_cost_record_without_its_fit_says_so_beside_the_winner() -> None:
    study = mixed_study()
    study.set_user_attr(COST_TABLE_KEY, {"source": "measured now", "clock": "wall time"})
    fig = plot_costmodel(costmodel_data(study))
    text = _texts(fig)
    assert "no calibration steps" in text and "predates" in text
    assert [t.name for t in fig.data if t.name == "retrained winner"]
    empty = plot_costmodel(costmodel_data(make_study([])))
    assert len(empty.data) == 0
    assert "no winner was retrained" in _texts(empty).lower()
    assert "no calibration steps: the study records no cost model" in _texts(empty)


@pytest.mark.slow
def test_ready_models_are_on_the_front_and_in_a_table(oneshot, tmp_path) -> None:
    phase = FineTuneResult.from_dict(oneshot.user_attrs[FINETUNED_KEY])
    ready = ready_models(oneshot)
    assert ready.recorded and {r.number for r in ready.rows} == {c.trial for c in phase.ready}
    by_trial = {c.trial: c for c in phase.ready}
    for r in ready.rows:
        c = by_trial[r.number]
        assert (r.epochs, r.val_accuracy, r.seconds) == (c.epochs, c.val_accuracy, c.train_seconds)
    assert {r.epochs for r in ready.rows} == {1, 2}  # one rung of 1 epoch, survivors 2
    pareto = next(f for f in report_figures(report_data(oneshot)) if f.key == "pareto").figure
    traces = [t for t in pareto.data if (t.name or "").startswith("fine-tuned from the supernet")]
    assert sorted(t.name for t in traces) == [
        "fine-tuned from the supernet (1 epoch)",
        "fine-tuned from the supernet (2 epochs)",
    ]
    # Each ready model at its own measured fine-tuning seconds and test accuracy.
    measured = {(r.seconds, r.test_accuracy) for r in ready.rows}
    drawn = [(x, y) for t in traces for x, y in zip(t.x, t.y, strict=True)]
    assert len(drawn) == len(ready.rows) and set(drawn) <= measured
    # The ring sits on the model the run keeps, at its own measured numbers.
    kept = oneshot.user_attrs[KEPT_KEY]
    (ring,) = [t for t in pareto.data if (t.name or "").startswith("kept model")]
    assert ring.name.startswith(f"kept model: trial {kept['trial']}, ")
    if kept["weights"] == "fine-tuned":
        row = max((r for r in ready.rows if r.number == kept["trial"]), key=lambda r: r.epochs)
        assert (ring.x[0], ring.y[0]) == (row.seconds, row.test_accuracy)
        assert "fine-tuned" in ring.name
    else:
        rec = oneshot.user_attrs[retrain_key(kept["trial"])]
        assert (ring.x[0], ring.y[0]) == (rec["measured_train_cost"], rec["test_accuracy"])
    page = write_report(oneshot, tmp_path / "report.html").read_text(encoding="utf-8")
    table = page[page.index('id="nasflow-ready-table"') :]
    table = table[: table.index("</table>")]
    assert table.count("<tr>") == len(ready.rows) + 1
    best = ready.rows[0]
    assert f"<td>{best.number}</td><td>{best.epochs}</td><td>{best.val_accuracy:.4f}</td>" in table


def test_a_study_without_a_fine_tuning_phase_has_no_ready_table(tmp_path) -> None:
    assert not ready_models(mixed_study()).recorded
    page = write_report(mixed_study(), tmp_path / "r.html").read_text(encoding="utf-8")
    assert "nasflow-ready-table" not in page
