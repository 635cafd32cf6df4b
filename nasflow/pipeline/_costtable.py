"""The cost table's record in a study: where its numbers came from and how steady they are.

The scorer copies ``CostModel.stability`` of the first fitted cost model to the study's
user attribute ``nasflow:cost_table``; the summary and the scorer's log print it with
``format_cost_table``."""

from __future__ import annotations

import logging

from nasflow import settings
from nasflow.cost import load_reasons
from nasflow.record import CostTableRecord

_LOG = logging.getLogger(__name__)


def check_caches(tables_url: str | None) -> None:
    """Before anything trains: the measurement caches this run writes (the shared cost
    cache, and the per-user cache file where the study's storage holds no tables,
    ``tables_url`` ``None``) must be readable and writable with this schema. One that is
    not (a read-only file, a folder left by a ``sudo`` run, tables of another schema) is
    replaced by an in-memory table for this run, with one line on ``log`` saying why and
    how to fix it (``nasflow.cost.check_cache``)."""
    import nasflow.calibrate  # noqa: F401 (declares the stack calibration table)
    from nasflow.cost import check_cache, resolve_url

    setting = settings.shared_table_setting()
    urls = [] if setting == settings.OFF else [resolve_url(setting)]
    if tables_url is None:
        urls.append(resolve_url(None))
    for url in dict.fromkeys(urls):
        check_cache(url)


def format_cost_table(record: CostTableRecord | None) -> list[str]:
    """Summary lines for a ``nasflow:cost_table`` record (none for a missing one)."""
    if record is None:
        return []
    source = record.source
    when = record.measured_at or record.calibrated_at or "an unknown time"
    if source == "measured now":
        where = "measured by this study"
        if record.remeasured:
            why = record.remeasured
            where += f" (re-measured {why})" if why == "on request" else f" (re-measured: {why})"
    elif source == "shared table":
        where = f"reused from the shared table {record.shared_table} (measured {when})"
    else:
        where = f"kept in this study's database (measured {when})"
    clock = "?" if record.clock is None else record.clock
    parts = [f"best of rounds, {clock}"]
    if record.precision:
        parts.append(f"predicts {record.precision} training steps")
    if record.reference_seconds is not None:
        parts.append(
            f"reference op {1e3 * record.reference_seconds:.3f} ms measured, typical "
            f"round {record.ratio:.2f}x the best of {record.rounds}"
        )
    if record.calibration_ratio is not None:
        parts.append(f"calibration steps: typical round {record.calibration_ratio:.2f}x the best")
    device = "this device" if record.device is None else record.device
    lines = [f"cost table ({device}): {where}; " + "; ".join(parts)]
    if clock != "wall time":
        lines.append(
            f"  predicted training costs are {clock} of undisturbed steps (best of rounds); "
            "a measured training cost is wall time, longer on a loaded machine"
        )
    share = record.core_share
    if record.loaded:
        why = load_reasons(record.ratio, record.rounds, share)
        lines.append(
            f"  WARNING: the machine looked loaded while the cost table was measured "
            f"({why or 'the reference op timed unevenly'}); predicted costs may be off: "
            "re-measure on a quieter machine with `nasflow search --remeasure-costs`"
        )
    elif record.ratio is not None:
        got = f" (a busy thread got {share:.0%} of a core)" if share is not None else ""
        lines.append(f"  the machine looked steady while it was measured{got}")
    if source == "measured now" and record.shared_table:
        lines.append(f"  shared with later studies on this device: {record.shared_table}")
    return lines
