"""The offline HTML report: one file, plotly.js inlined once, nothing fetched."""

from __future__ import annotations

import html
import os
from datetime import datetime, timezone
from pathlib import Path

import optuna
from optuna.trial import TrialState

import nasflow
from nasflow import record
from nasflow._files import atomic_write
from nasflow.errors import ConfigError
from nasflow.report._figures import ready_cells, table_cells
from nasflow.report._records import ReadyModels
from nasflow.report._report import ReportData, ReportFigure, report_data, report_figures
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
"""


def _rows_html(header: list[str], rows: list[list[str]], empty: str) -> str:
    """Table rows: the header, one row per entry (the last column an architecture), or one
    row saying why there is none."""
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in header[:-1])
    lines = [f'<tr>{cells}<th class="arch">arch</th></tr>']
    for row in rows:
        tds = "".join(f"<td>{html.escape(t)}</td>" for t in row[:-1])
        lines.append(f'<tr>{tds}<td class="arch">{html.escape(row[-1])}</td></tr>')
    if not rows:
        lines.append(f'<tr><td colspan="{len(header)}">{html.escape(empty)}</td></tr>')
    return "".join(lines)


def _table_html(table: ParetoTable) -> str:
    header, rows = table_cells(table)
    body = _rows_html(list(header), [list(r) for r in rows], "no completed trial yet")
    return '<table id="nasflow-pareto-table">' + body + "</table>"


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
    lines = [
        f"storage: {storage_label}" if storage_label else "",
        f"space: {study.user_attrs.get(record.SPACE_KEY, '?')} "
        f"(fingerprint {study.user_attrs.get(record.FINGERPRINT_KEY, '?')})",
        f"objectives: {dirs}",
        f"trials: {counts or 'none'}",
    ]
    sup = study.user_attrs.get(record.SUPERNET_KEY)
    if isinstance(sup, dict):
        lines.append(
            f"supernet: {sup.get('sampler')} sampling, {sup.get('epochs')} epochs, "
            f"{float(sup.get('seconds', 0.0)):.1f} s"
        )
    secs = study.user_attrs.get(record.SECONDS_KEY)
    if isinstance(secs, dict):
        lines.append("time: " + ", ".join(f"{k} {float(v):.1f} s" for k, v in secs.items()))
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines.append(f"generated {when} by nasflow {nasflow.__version__}")
    return "<br>".join(html.escape(s) for s in lines if s)


def render_html(
    study: optuna.Study, data: ReportData, figures: list[ReportFigure], storage_label: str = ""
) -> str:
    """The whole page; plotly.js is inlined with the first figure only, no MathJax."""
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
        f'<p class="meta">{_meta_html(study, storage_label)}</p>'
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
) -> Path:
    """Write the self-contained HTML report of ``study`` to ``path`` (atomically).

    Args:
        study: The study.
        path: The HTML file; its folder is created if needed.
        space: The study's space, for architecture summaries (optional).
        storage_label: Where the study lives, as shown in the header (never a password).

    Returns:
        The path written.

    Raises:
        ValueError: ``path`` is an existing folder, or a study record is malformed.
    """
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"report path {str(path)!r} is a folder; give a file name")
    data = report_data(study, space)
    page = render_html(study, data, report_figures(data), storage_label)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, page)
    return path
