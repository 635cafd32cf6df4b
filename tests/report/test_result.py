"""A real run's result, stated: the report opens with it and the search's closing lines
say the same; the trained models are drawn at their own measured numbers, apart from the
screened supernet scores; the Pareto table marks the kept row and leaves no cell empty."""

from __future__ import annotations

import html

import pytest

from nasflow.cli import main
from nasflow.pipeline import headline
from nasflow.record import (
    ANCHORS_KEY,
    FINETUNED_KEY,
    KEPT_KEY,
    FineTuneResult,
    open_stored_study,
    retrain_key,
    study_baseline,
    study_retrains,
)
from nasflow.report import report_data, report_figures, write_report
from nasflow.report._tables import table_cells
from tests.report.conftest import BASELINE_ACCURACIES

pytestmark = pytest.mark.slow  # every test here reads a study a real run wrote


@pytest.fixture(scope="module")
def study(result_study):
    return open_stored_study(result_study.name, result_study.url).study


def _kept_numbers(study) -> tuple[float, float]:
    """The kept model's (measured seconds, test accuracy), read from the raw records."""
    kept = study.user_attrs[KEPT_KEY]
    if kept["weights"] == "fine-tuned":
        result = FineTuneResult.from_dict(study.user_attrs[FINETUNED_KEY])
        c = next(c for c in result.ready if c.trial == kept["trial"])
        return c.train_seconds, c.test_accuracy
    if kept["source"] == "anchor":
        a = next(
            a for a in study.user_attrs[ANCHORS_KEY]["anchors"] if a["trial"] == kept["trial"]
        )
        return a["measured_train_cost"], a["test_accuracy"]
    rec = study.user_attrs[retrain_key(kept["trial"])]
    return rec["measured_train_cost"], rec["test_accuracy"]


def test_the_run_records_its_baseline_table(study, result_study) -> None:
    record = study_baseline(study)
    assert record is not None and record.files == (result_study.baseline.name,)
    assert record.test_accuracies == BASELINE_ACCURACIES


def test_the_report_opens_with_the_result_the_search_printed(study, result_study, tmp_path):
    out = tmp_path / "report.html"
    runs = str(result_study.out)
    assert main(["report", result_study.name, "--runs", runs, "--out-file", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    top = page.index('id="nasflow-headline"')
    assert top < page.index('class="figure"') and top < page.index('id="nasflow-pareto-table"')
    head = page[top : page.index("</section>", top)]
    kept = study.user_attrs[KEPT_KEY]
    seconds, test = _kept_numbers(study)
    share = sum(a < test for a in BASELINE_ACCURACIES) / len(BASELINE_ACCURACIES)
    h = headline(study, ("--runs", runs))
    assert (h.trial, h.test_accuracy, h.seconds) == (kept["trial"], test, seconds)
    export = f"nasflow export {result_study.name} --runs {runs}"
    assert h.export.startswith(export) and h.export.endswith("--out DIR")
    said = [
        f"keeps <b>trial {kept['trial']}</b>",
        f"<b>{test:.4f}</b> on the test split",
        f"training {seconds:.1f} s measured",
        f"beats {share:.0%} of 12 stand-alone trainings of random architectures",
        html.escape(h.anchors),
        html.escape(h.trust),
        f"<code>{html.escape(h.export)}</code>",
    ]
    for part in said:
        assert part in head, part
    assert h.anchors.startswith("the search's choice") and h.trust.startswith("Kendall tau")
    # The search's closing lines say the same, in six lines, with or without the detail.
    for printed in (result_study.short, result_study.verbose):
        closing = printed.splitlines()[-6:]
        assert closing[0].startswith(f"result: study 'result' keeps trial {kept['trial']} (")
        text = "\n".join(closing)
        parts = (
            f"test accuracy {test:.4f} (test split",
            f"{seconds:.1f} s measured",
            f"beats {share:.0%} of 12",
            h.anchors,
            h.trust,
            f"`{h.export}`",
        )
        for part in parts:
            assert part in text, part
    assert result_study.short.splitlines()[-6:] == result_study.verbose.splitlines()[-6:]
    # The short text is the result and where the study is; the detail is behind --verbose.
    assert len(result_study.short.splitlines()) <= 9
    assert "Pareto set of study" not in result_study.short
    assert "Pareto set of study" in result_study.verbose


def test_trained_models_and_screened_scores_are_drawn_apart(study) -> None:
    figures = {f.key: f.figure for f in report_figures(report_data(study))}
    front = figures["pareto"]
    # Every point of the trained-models figure is a trained model's (measured seconds,
    # test accuracy), read here from the raw records.
    retrained = [(r.measured_train_cost, r.test_accuracy) for r in study_retrains(study).values()]
    anchors = study.user_attrs[ANCHORS_KEY]["anchors"]
    # Each retrain records when it was ready (the run's CPU-seconds), after the anchors;
    # a winner that is an anchor's trial reuses its training and records no time of its own.
    # (Which trials are retrained varies: this study times its candidates' steps, so both
    # retrains can be anchors' trials.)
    anchor_trials = {a["trial"] for a in anchors}
    records = study_retrains(study)
    ready = [r.ready_cpu_seconds for n, r in records.items() if n not in anchor_trials]
    assert len(records) == 2 and all(t is not None for t in ready)
    assert all(r.ready_cpu_seconds is None for n, r in records.items() if n in anchor_trials)
    if ready:
        assert min(ready) > max(a["ready_cpu_seconds"] for a in anchors)  # type: ignore
    trained = {*retrained, *((a["measured_train_cost"], a["test_accuracy"]) for a in anchors)}
    result = FineTuneResult.from_dict(study.user_attrs[FINETUNED_KEY])
    trained |= {(c.train_seconds, c.test_accuracy) for c in result.ready}
    points = [(x, y) for t in front.data for x, y in zip(t.x, t.y, strict=True)]
    assert points and set(points) <= trained
    (ring,) = [t for t in front.data if (t.name or "").startswith("kept model")]
    assert (ring.x[0], ring.y[0]) == _kept_numbers(study)
    assert "test split" in front.layout.yaxis.title.text
    assert "measured" in front.layout.xaxis.title.text
    assert "wall time" in front.layout.xaxis.title.text
    # The screened candidates: the search's own number only, on a cost axis that says
    # what it is (this study times every candidate's step: cost="measure").
    screened = figures["screening"]
    scores = {t.values[0] for t in study.get_trials() if t.values}
    drawn = {y for t in screened.data for y in t.y}
    assert drawn and drawn <= scores
    title = screened.layout.xaxis.title.text
    assert title == "predicted training cost (s): timed steps x recipe steps"
    assert screened.layout.yaxis.title.text.startswith("supernet score: validation accuracy")


def test_the_pareto_table_marks_the_kept_row_and_leaves_no_cell_empty(study, tmp_path):
    data = report_data(study)
    header, rows = table_cells(data.table)
    assert all(cell.strip() for row in rows for cell in row)
    kept = study.user_attrs[KEPT_KEY]["trial"]
    marked = [row for row in rows if "(kept" in row[0]]
    assert len(marked) == 1 and marked[0][0].startswith(f"{kept} (kept")
    assert marked[0][header.index("trained as")].startswith("kept: ")
    page = write_report(study, tmp_path / "r.html").read_text(encoding="utf-8")
    table = page[page.index('id="nasflow-pareto-table"') :]
    table = table[: table.index("</table>")]
    assert table.count('<tr class="kept">') == 1
    assert "<td></td>" not in table


def test_a_cost_model_study_labels_its_axis_with_the_clock(oneshot_study) -> None:
    study = open_stored_study(oneshot_study.name, oneshot_study.url).study
    figures = {f.key: f.figure for f in report_figures(report_data(study))}
    title = figures["screening"].layout.xaxis.title.text
    assert title == "predicted training cost (s): thread CPU time of undisturbed steps"
