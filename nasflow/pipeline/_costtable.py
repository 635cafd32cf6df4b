"""The cost table's record in a study: where its numbers came from and how steady they are.

The scorer copies ``CostModel.stability`` of the first fitted cost model to the study's
user attribute ``nasflow:cost_table``; the summary and the scorer's log print it with
``format_cost_table``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nasflow import settings
from nasflow.cost import load_reasons


def check_caches(tables_url: str | None, log: Callable[[str], None]) -> None:
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
        check_cache(url, log)


def format_cost_table(record: Any) -> list[str]:
    """Summary lines for a ``nasflow:cost_table`` record (none for a missing one)."""
    if not isinstance(record, dict):
        return []
    source = record.get("source")
    when = record.get("measured_at") or record.get("calibrated_at") or "an unknown time"
    if source == "measured now":
        where = "measured by this study"
        if record.get("remeasured"):
            why = record["remeasured"]
            where += f" (re-measured {why})" if why == "on request" else f" (re-measured: {why})"
    elif source == "shared table":
        where = f"reused from the shared table {record.get('shared_table')} (measured {when})"
    else:
        where = f"kept in this study's database (measured {when})"
    clock = record.get("clock", "?")
    parts = [f"best of rounds, {clock}"]
    if record.get("precision"):
        parts.append(f"predicts {record['precision']} training steps")
    if isinstance(record.get("reference_seconds"), (int, float)):
        parts.append(
            f"reference op {1e3 * record['reference_seconds']:.3f} ms measured, typical "
            f"round {record['ratio']:.2f}x the best of {record['rounds']}"
        )
    if isinstance(record.get("calibration_ratio"), (int, float)):
        ratio = record["calibration_ratio"]
        parts.append(f"calibration steps: typical round {ratio:.2f}x the best")
    lines = [f"cost table ({record.get('device', 'this device')}): {where}; " + "; ".join(parts)]
    if clock != "wall time":
        lines.append(
            f"  predicted training costs are {clock} of undisturbed steps (best of rounds); "
            "a measured training cost is wall time, longer on a loaded machine"
        )
    share = record.get("core_share")
    if record.get("loaded"):
        why = load_reasons(record.get("ratio"), record.get("rounds"), share)
        lines.append(
            f"  WARNING: the machine looked loaded while the cost table was measured "
            f"({why or 'the reference op timed unevenly'}); predicted costs may be off: "
            "re-measure on a quieter machine with `nasflow search --remeasure-costs`"
        )
    elif isinstance(record.get("ratio"), (int, float)):
        got = f" (a busy thread got {share:.0%} of a core)" if isinstance(share, float) else ""
        lines.append(f"  the machine looked steady while it was measured{got}")
    if source == "measured now" and record.get("shared_table"):
        lines.append(f"  shared with later studies on this device: {record['shared_table']}")
    return lines
