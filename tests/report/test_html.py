"""The HTML report: one self-contained file, written atomically, from a real study."""

from __future__ import annotations

import re

import optuna
import pytest

from nasflow.record import open_stored_study
from nasflow.report import write_report
from nasflow.report._html import write_atomic
from tests.report._studies import FIGURE_KEYS as FIGURE_IDS
from tests.report._studies import make_study


def test_report_of_a_real_study_is_one_offline_file(tiny_study, tmp_path) -> None:
    stored = open_stored_study(tiny_study.name, tiny_study.url)
    path = write_report(stored.study, tmp_path / "r" / "report.html", storage_label="here")
    page = path.read_text(encoding="utf-8")
    assert page.count("plotly.js v") == 1  # inlined once, not once per figure
    assert page.count("Plotly.newPlot") == len(FIGURE_IDS)
    for key in FIGURE_IDS:
        assert f'id="nasflow-{key}"' in page
    assert 'id="nasflow-pareto-table"' in page
    # Nothing that would leave the page: no external script, stylesheet, font or frame.
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=", page)
    assert "<link" not in page and "@import" not in page and "url(http" not in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert 'id="nasflow-headline"' in page and "not measured" in page


def test_user_text_is_escaped_in_the_page() -> None:
    study = make_study([])
    study.set_user_attr("nasflow:space", "</script><script>alert(1)</script>")
    from nasflow.report import report_data, report_figures
    from nasflow.report._html import render_html

    data = report_data(study)
    page = render_html(study, data, report_figures(data), "sqlite:///a<b>.db")
    assert "<script>alert(1)" not in page and "&lt;/script&gt;" in page
    assert "a&lt;b&gt;.db" in page


def test_a_failed_report_leaves_the_previous_one_untouched(study_copy) -> None:
    copy = study_copy()
    out = copy.out / copy.name / "report.html"
    out.write_text("previous report")
    study = optuna.load_study(study_name=copy.name, storage=copy.url)
    study.set_user_attr("nasflow:stack", {"layers": [{"name": "amp", "alone": -2.0}]})
    with pytest.raises(ValueError, match=r"-2\.0"):
        write_report(study, out)
    assert out.read_text() == "previous report"
    assert sorted(p.name for p in out.parent.iterdir() if p.name.endswith(".tmp")) == []


def test_atomic_write_replaces_and_leaves_no_temp_file(tmp_path) -> None:
    target = tmp_path / "report.html"
    write_atomic(target, "one")
    write_atomic(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_a_folder_is_not_a_report_path(tmp_path) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(str(tmp_path)))):
        write_report(make_study([]), tmp_path)
