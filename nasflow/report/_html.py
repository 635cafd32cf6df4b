"""The offline HTML report: one file, plotly.js inlined once, nothing fetched."""

from __future__ import annotations

import html
import os
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

import optuna
from optuna.trial import TrialState

import nasflow
from nasflow import names, record
from nasflow._files import atomic_write
from nasflow.errors import ConfigError
from nasflow.pipeline import Headline, baseline_words
from nasflow.report._records import ReadyModels
from nasflow.report._report import ReportData, ReportFigure, report_data, report_figures
from nasflow.report._study import generic_summary, summarizer
from nasflow.report._tables import TRAINED_AS, ready_cells, table_cells, table_note
from nasflow.report._trials import ParetoTable
from nasflow.space import SearchSpace

#: The page may run its own inline scripts and styles and nothing else: no request leaves it.
CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1200px;
       color: #222; padding: 0 16px; }
h1 { font-size: 1.5em; margin-bottom: 4px; }
.meta { color: #555; font-size: 0.9em; line-height: 1.5; }
section { margin: 28px 0; border-top: 1px solid #ddd; padding-top: 8px; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 4px 10px; text-align: right; }
td.arch, th.arch { text-align: left; font-family: ui-monospace, monospace; }
td.words, th.words { text-align: left; }
tr.kept td { font-weight: 600; background: #fff4d6; }
#nasflow-headline { border: 2px solid #222; border-radius: 6px; padding: 8px 18px 14px;
                    margin: 16px 0 24px; }
#nasflow-headline h2 { margin: 6px 0; }
#nasflow-headline .lead { font-size: 1.15em; margin: 6px 0 10px; }
#nasflow-headline th { text-align: left; vertical-align: top; white-space: nowrap;
                       color: #555; font-weight: normal; }
#nasflow-headline td { text-align: left; }
code { background: #f3f3f3; padding: 2px 5px; border-radius: 3px; }
"""


#: Columns of words, not numbers.
_WORDS = frozenset({TRAINED_AS, "status"})


def _rows_html(
    header: list[str], rows: list[list[str]], empty: str, marked: frozenset[int] = frozenset()
) -> str:
    """Table rows: the header, one row per entry (the last column an architecture; the
    rows at indices ``marked`` of class ``kept``), or one row saying why there is none."""
    words = {i for i, h in enumerate(header) if h in _WORDS}  # left-aligned, as text is

    def cell(tag: str, i: int) -> str:
        return f'<{tag} class="words">' if i in words else f"<{tag}>"

    cells = "".join(f"{cell('th', i)}{html.escape(h)}</th>" for i, h in enumerate(header[:-1]))
    lines = [f'<tr>{cells}<th class="arch">arch</th></tr>']
    for i, row in enumerate(rows):
        tds = "".join(f"{cell('td', j)}{html.escape(t)}</td>" for j, t in enumerate(row[:-1]))
        tr = '<tr class="kept">' if i in marked else "<tr>"
        lines.append(f'{tr}{tds}<td class="arch">{html.escape(row[-1])}</td></tr>')
    if not rows:
        lines.append(f'<tr><td colspan="{len(header)}">{html.escape(empty)}</td></tr>')
    return "".join(lines)


def _table_html(table: ParetoTable) -> str:
    header, rows = table_cells(table)
    kept = frozenset(i for i, r in enumerate(table.rows) if r.kept)
    body = _rows_html(list(header), [list(r) for r in rows], "no completed trial yet", kept)
    note = f'<p class="meta">{html.escape(table_note(table))}</p>'
    return note + '<table id="nasflow-pareto-table">' + body + "</table>"


def _headline_html(h: Headline | None, summarize: Callable[[str], str]) -> str:
    """The result, first: the kept model, its numbers, what it beats, the verdicts and the
    export command (the same reading of the study as the search's closing lines)."""
    if h is None:
        return ""
    esc = html.escape
    facts: list[tuple[str, str]] = []
    arch = esc(summarize(h.arch)) if h.arch else "not recorded"
    if h.kept is None:
        lead = f"Study <b>{esc(h.study)}</b> keeps no model: {esc(h.why_none)}."
        if h.score is not None:
            metric, value = h.score
            facts.append(
                (
                    f"best by {metric}",
                    f"trial {h.trial}: {value:.4f} ({names.MEANINGS.get(metric, metric)}; "
                    "not a trained model's accuracy)",
                )
            )
            facts.append(("architecture", f'<span class="arch">{arch}</span>'))
    else:
        lead = f"Study <b>{esc(h.study)}</b> keeps <b>trial {h.trial}</b>: {esc(h.weights)}."
        test = "not measured" if h.test_accuracy is None else f"<b>{h.test_accuracy:.4f}</b>"
        val = (
            ""
            if h.val_accuracy is None
            else f"; validation accuracy {h.val_accuracy:.4f} chose it"
        )
        facts.append(("test accuracy", f"{test} on the test split (it chose nothing{val})"))
        facts.append(("architecture", f'<span class="arch">{arch}</span>'))
        size = [] if h.params is None else [f"{h.params:,} parameters"]
        if h.seconds is not None:
            size.append(f"training {h.seconds:.1f} s measured ({esc(h.seconds_what)})")
        facts.append(("size and cost", "; ".join(size) or "not recorded"))
        facts.append(("vs random architectures", esc(baseline_words(h))))
        facts.append(
            ("vs zero-cost anchors", esc(h.anchors or "none trained (StudySpec.anchors)"))
        )
    facts.append(("trust in the ranking", esc(h.trust or "no trust probe ran (StudySpec.trust)")))
    if h.ranker:
        facts.append(("finalists chosen by", esc(h.ranker)))
    if h.export:
        facts.append(("export", f"<code>{esc(h.export)}</code>"))
    rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
    return (
        '<section id="nasflow-headline"><h2>Result</h2>'
        f'<p class="lead">{lead}</p><table>{rows}</table></section>'
    )


def _ready_html(ready: ReadyModels) -> str:
    header, rows = ready_cells(ready)
    why = ready.error or "no candidate of the fine-tuning phase kept weights"
    lines = [_rows_html(list(header), [list(r) for r in rows], why)]
    note = (
        "The fine-tuning phase's models with weights (fine-tuned from the inherited supernet "
        "weights for the epochs shown): accuracies measured on those weights; the cost is "
        "the measured seconds of their fine-tuning epochs, not a stand-alone training. Best "
        "validation accuracy first."
    )
    return (
        f'<p class="meta">{html.escape(note)}</p>'
        '<table id="nasflow-ready-table">' + "".join(lines) + "</table>"
    )


def _meta_html(study: optuna.Study, storage_label: str) -> str:
    names = record.study_metric_names(study)
    pairs = zip(names, study.directions, strict=True)
    dirs = ", ".join(f"{n} ({d.name.lower()})" for n, d in pairs)
    states = [t.state for t in study.get_trials(deepcopy=False)]
    counts = ", ".join(f"{states.count(s)} {s.name.lower()}" for s in TrialState if s in states)
    space, fingerprint = record.study_space_identity(study)
    lines = [
        f"storage: {storage_label}" if storage_label else "",
        f"space: {space or '?'} (fingerprint {fingerprint or '?'})",
        f"objectives: {dirs}",
        f"trials: {counts or 'none'}",
    ]
    sup = record.study_supernet(study)
    if sup is not None:
        lines.append(
            f"supernet: {sup.sampler} sampling, {sup.epochs} epochs, {sup.seconds or 0.0:.1f} s"
        )
    secs = record.study_seconds(study)
    if secs:
        lines.append(
            "time, the study's finished runs together: "
            + ", ".join(f"{k} {v:.1f} s" for k, v in secs.items())
        )
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines.append(f"generated {when} by nasflow {nasflow.__version__}")
    return "<br>".join(html.escape(s) for s in lines if s)


def render_html(
    study: optuna.Study,
    data: ReportData,
    figures: list[ReportFigure],
    storage_label: str = "",
    summarize: Callable[[str], str] = generic_summary,
) -> str:
    """The whole page, the result first; plotly.js is inlined with the first figure only,
    no MathJax. ``summarize`` names the headline's architecture from its JSON."""
    parts = []
    first = True
    for f in figures:
        if f.key == "table":
            continue  # drawn as a plain HTML table below
        div = f.figure.to_html(
            full_html=False,
            include_plotlyjs=first,
            include_mathjax=False,
            div_id=f"nasflow-{f.key}",
            config={"displaylogo": False, "responsive": True},
        )
        first = False
        parts.append(
            f'<section class="figure" data-has-data="{str(f.has_data).lower()}">{div}</section>'
        )
    parts.append(f"<section><h2>Pareto set</h2>{_table_html(data.table)}</section>")
    if data.ready.recorded:
        ready = _ready_html(data.ready)
        parts.append(f"<section><h2>Ready models (fine-tuned)</h2>{ready}</section>")
    name = html.escape(study.study_name)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>nasflow report: {name}</title><style>{_STYLE}</style></head><body>"
        f"<h1>nasflow report: study {name}</h1>"
        + _headline_html(data.headline, summarize)
        + f'<p class="meta">{_meta_html(study, storage_label)}</p>'
        + "".join(parts)
        + "</body></html>\n"
    )


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temp file in the same folder, fsync,
    replace (``nasflow._files.atomic_write``)."""
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def write_report(
    study: optuna.Study,
    path: os.PathLike | str,
    *,
    space: SearchSpace | None = None,
    storage_label: str = "",
    location: Sequence[str] = (),
) -> Path:
    """Write the self-contained HTML report of ``study`` to ``path`` (atomically).

    Args:
        study: The study.
        path: The HTML file; its folder is created if needed.
        space: The study's space, for architecture summaries (optional).
        storage_label: Where the study lives, as shown in the header (never a password).
        location: The ``--storage``/``--runs`` arguments the headline's export command
            needs (none where the defaults find the study).

    Returns:
        The path written.

    Raises:
        ValueError: ``path`` is an existing folder, or a study record is malformed.
    """
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"report path {str(path)!r} is a folder; give a file name")
    data = report_data(study, space, location)
    page = render_html(study, data, report_figures(data), storage_label, summarizer(study, space))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, page)
    return path
