"""The report opened in headless Chromium with networking cut off: every figure renders,
the console stays clean, nothing is requested, and a screenshot is kept.

Chromium is Debian's ``chromium`` package (``.ci/run`` installs it); without it the test
skips here and fails in CI.
"""

from __future__ import annotations

import time
from importlib.util import find_spec
from pathlib import Path

import optuna
import pytest

from nasflow.record import open_stored_study
from nasflow.report import write_report
from tests.conftest import require_or_skip
from tests.report._cdp import Browser, chromium_binary

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
DATA_FIGURES = (
    "pareto",
    "screening",
    "params",
    "history",
    "budget",
    "fairness",
    "costmodel",
    "multipliers",
)

#: Per plot div: whether plotly drew its SVG, how many data points (markers, bars) it has,
#: and its visible text.
_PROBE = """
Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => ({
  id: d.id,
  svg: d.querySelector('svg.main-svg') !== null,
  points: d.querySelectorAll('.point').length,
  traces: d.querySelectorAll('.scatterlayer .trace, .barlayer .trace, .waterfalllayer .trace')
    .length,
  text: d.innerText || d.textContent
}))
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    binary = chromium_binary()
    require_or_skip(binary is not None, "chromium is not installed (apt-get install chromium)")
    require_or_skip(find_spec("websocket") is not None, "websocket-client is missing (dev)")
    b = Browser(binary, tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield b
    finally:
        b.close()


def _rendered(browser: Browser, expected: int, timeout: float = 60.0) -> dict[str, dict]:
    """The probe once every plot div has its SVG (bounded wait)."""
    deadline = time.monotonic() + timeout
    while True:
        divs = browser.evaluate(_PROBE) or []
        if len(divs) == expected and all(d["svg"] for d in divs):
            return {d["id"].removeprefix("nasflow-"): d for d in divs}
        if time.monotonic() > deadline:
            raise AssertionError(f"figures did not render within {timeout}s: {divs}")
        time.sleep(0.2)


#: Per plot div: the bottom of its caption (the title's subtitle) and the top of its plot
#: area, in page pixels.
_CAPTIONS = """
Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => {
  const caption = d.querySelector('.gtitle-subtitle');
  const area = d.querySelector('.draglayer .nsewdrag');
  return [d.id, caption && caption.getBoundingClientRect().bottom,
          area && area.getBoundingClientRect().top];
})
"""

#: The stroke opacity of the kept-model ring's marker on the Pareto figure (``None``
#: without a ring).
_RING = """
(() => {
  const d = document.getElementById('nasflow-pareto');
  const i = d.data.findIndex(t => (t.name || '').startsWith('kept model'));
  if (i < 0) return null;
  const point = d.querySelectorAll('.scatterlayer .trace')[i].querySelector('.point');
  return point && getComputedStyle(point).strokeOpacity;
})()
"""


#: The headline's position and text, and the top of the first figure, in page pixels.
_HEADLINE = """
(() => {
  const h = document.getElementById('nasflow-headline');
  const f = document.querySelector('.js-plotly-plot');
  return {top: h.getBoundingClientRect().top, text: h.innerText,
          first_figure: f.getBoundingClientRect().top};
})()
"""


def _assert_captions_clear_of_plots(browser: Browser) -> None:
    """No figure's caption runs into its plot (a long caption once covered the markers)."""
    for div, caption, top in browser.evaluate(_CAPTIONS):
        if caption is not None and top is not None:
            assert caption <= top, (div, caption, top)


def _assert_offline_and_clean(browser: Browser, page: Path) -> None:
    assert browser.errors() == []
    requested = browser.requested_urls()
    assert requested and all(u == page.as_uri() or u.startswith("data:") for u in requested), (
        requested
    )


@pytest.mark.slow
def test_report_renders_every_figure_offline(browser, tiny_study, tmp_path) -> None:
    stored = open_stored_study(tiny_study.name, tiny_study.url)
    page = write_report(stored.study, tmp_path / "report.html")
    browser.open(page.as_uri())
    divs = _rendered(browser, expected=len(DATA_FIGURES) + 1)
    browser.screenshot(ARTIFACTS / "report.png")  # kept as a CI artifact, pass or fail
    for key in DATA_FIGURES:
        assert divs[key]["points"] > 0 and divs[key]["traces"] > 0, (key, divs[key])
    # The stack has no measurement in this study: a labelled panel, and no bar at all.
    assert "not measured" in divs["stack"]["text"] and divs["stack"]["points"] == 0
    trained = browser.evaluate("document.getElementById('nasflow-pareto').innerText")
    assert "retrained from scratch (phase 3)" in trained
    rows = browser.evaluate("document.querySelectorAll('#nasflow-pareto-table tr').length")
    assert rows >= 2  # header and at least one Pareto trial
    _assert_captions_clear_of_plots(browser)
    _assert_offline_and_clean(browser, page)
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000


def test_a_measured_stack_renders_as_a_waterfall(browser, study_copy) -> None:
    copy = study_copy()
    study = optuna.load_study(study_name=copy.name, storage=copy.url)
    # Test data for the drawing only; a real record comes from the stack's measurement.
    study.set_user_attr(
        "nasflow:stack",
        {
            "baseline": "fp32 eager (test record)",
            "device": "test",
            "layers": [{"name": "layer a", "alone": 1.25, "cumulative": 1.25}],
            "end_to_end": 1.2,
        },
    )
    page = write_report(study, copy.out / "report.html")
    browser.open(page.as_uri())
    divs = _rendered(browser, expected=len(DATA_FIGURES) + 1)
    browser.screenshot(ARTIFACTS / "report-stack.png")
    assert divs["stack"]["points"] > 0 and "not measured" not in divs["stack"]["text"]
    assert "x1.25" in divs["stack"]["text"]
    _assert_offline_and_clean(browser, page)


@pytest.mark.slow
def test_a_study_whose_calibration_ran_shows_its_measured_waterfall(
    browser, calibrated_study, tmp_path
) -> None:
    stored = open_stored_study(calibrated_study.name, calibrated_study.url)
    assert stored.study.user_attrs["nasflow:stack"]["origin"]["kind"] == "calibrated"
    page = write_report(stored.study, tmp_path / "report.html")
    browser.open(page.as_uri())
    divs = _rendered(browser, expected=len(DATA_FIGURES) + 1)
    browser.screenshot(ARTIFACTS / "report-calibrated.png")
    stack = divs["stack"]
    assert stack["points"] > 0 and stack["traces"] > 0, stack  # bars, not the placeholder
    assert "not measured" not in stack["text"] and "no layer kept" not in stack["text"]
    for name in ("amp", "accumulation", "denormal", "threads", "product of layers"):
        assert name in stack["text"], name
    _assert_offline_and_clean(browser, page)


def test_the_checks_catch_console_errors_and_outside_requests(browser, tmp_path) -> None:
    # The page must not pass silently: a request to the network and a console error are
    # both seen (and the request goes nowhere: networking is cut off).
    page = tmp_path / "bad.html"
    page.write_text(
        '<html><body><img src="http://example.com/x.png">'
        '<script>console.error("boom")</script></body></html>'
    )
    browser.open(page.as_uri())
    assert any("boom" in e for e in browser.errors())
    assert "http://example.com/x.png" in browser.requested_urls()
    loaded = browser.evaluate("document.images[0].complete && document.images[0].naturalWidth")
    assert not loaded


@pytest.mark.slow
def test_a_one_shot_report_explains_its_panels_and_lists_its_ready_models(
    browser, oneshot_study, tmp_path
) -> None:
    stored = open_stored_study(oneshot_study.name, oneshot_study.url)
    page = write_report(stored.study, tmp_path / "report.html")
    browser.open(page.as_uri())
    divs = _rendered(browser, expected=len(DATA_FIGURES) + 1)
    browser.screenshot(ARTIFACTS / "report-oneshot.png")
    # The budget panel draws no empty axis: it says why there is nothing to show.
    budget = divs["budget"]
    assert budget["points"] == 0 and "no fine-tuning during the search" in budget["text"]
    # The cost model shows the calibration steps it was fitted on beside the one winner.
    cost = divs["costmodel"]
    assert cost["points"] > 1 and "calibration" in cost["text"], cost
    # The multipliers: a waterfall of five steps and the compounded bar, labelled.
    mult = divs["multipliers"]
    assert mult["points"] >= 6 and "compounded" in mult["text"], mult
    assert "MEASURED" in mult["text"] and "not measured" in mult["text"]
    assert "fine-tuned from the supernet (" in divs["pareto"]["text"]
    rows = browser.evaluate("document.querySelectorAll('#nasflow-ready-table tr').length")
    assert rows >= 2
    # The page opens with the result: above every figure, naming the kept trial, its
    # test accuracy and the export command.
    kept = stored.study.user_attrs["nasflow:kept"]["trial"]
    head = browser.evaluate(_HEADLINE)
    assert head["top"] < head["first_figure"], head
    assert f"keeps trial {kept}" in head["text"] and "on the test split" in head["text"]
    assert "nasflow export oneshot" in head["text"]
    # The kept model's ring is drawn, not a transparent marker (an open symbol is stroked
    # in the marker's colour), and the longest captions stay above their plots.
    assert float(browser.evaluate(_RING)) == 1.0
    _assert_captions_clear_of_plots(browser)
    _assert_offline_and_clean(browser, page)
