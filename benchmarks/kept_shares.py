"""The kept model's share of each ground's table, as recorded and under a replayed kept rule.

Issue 41's target reads the median share of the table the kept model beats, per ground,
over a study's search seeds. A run records the model it kept under the rule that shipped
when it ran; this reads every study run of the files given, per ground: each seed's share
as recorded and as the kept rule ``--rule ANCHOR/KEPT`` (``margins.decide``: the anchor's
and the fine-tuned weights' margins in standard errors) keeps it from the row's own
records, and the medians. A row the recorded rule does not reproduce, or that holds no
fine-tuning record, is an error: the replay would not be exact.

Usage::

    python benchmarks/kept_shares.py --runs benchmarks/data/shares41_scarce*.jsonl --rule 0/2
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import margins
from suite_runs import beats, load_rows, table_test


def shares(rows: Sequence[dict], rule: margins.Rule) -> dict[str, list[tuple[int, float, float]]]:
    """Per ground, ``(seed, recorded share, share under rule)`` for every study run, in the
    order read.

    Raises:
        ValueError: A row that cannot be replayed exactly, naming its ground and seed.
    """
    out: dict[str, list[tuple[int, float, float]]] = collections.defaultdict(list)
    for row in rows:
        if row.get("kind", "run") != "run" or row.get("config_kind", "study") != "study":
            continue
        why = margins.why_not(row)
        if why is not None:
            raise ValueError(f"{row.get('name')} seed {row.get('seed')}: {why}")
        table = table_test(row["study"])
        recorded = beats(margins.decide(row, *margins.RECORDED).test, table)
        replayed = beats(margins.decide(row, *rule).test, table)
        out[row["name"]].append((int(row["seed"]), recorded, replayed))
    return dict(out)


def report(per: dict[str, list[tuple[int, float, float]]], rule: margins.Rule) -> str:
    """One line per ground: the seeds, each share as recorded, both medians."""
    lines = [
        f"| ground | seeds | shares as recorded (%) | median, recorded | median, "
        f"{margins.rule_name(rule)} |",
        "|---|---:|---|---:|---:|",
    ]
    for name, runs in sorted(per.items()):
        rec = [r for _, r, _ in runs]
        rep = [r for _, _, r in runs]
        each = " ".join(f"{100 * r:.0f}" for r in rec)
        lines.append(
            f"| {name} | {len(runs)} | {each} | {100 * statistics.median(rec):.0f}% "
            f"| {100 * statistics.median(rep):.0f}% |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=Path, nargs="+", required=True, help="JSON-lines rows")
    p.add_argument("--rule", default="0/2", help="ANCHOR/KEPT margins to replay (default 0/2)")
    args = p.parse_args(argv)
    try:
        rule = margins.parse_rule(args.rule)
        per = shares(load_rows(args.runs), rule)
    except ValueError as exc:
        p.error(str(exc))
    if not per:
        p.error("no study run in the files given")
    print(report(per, rule))


if __name__ == "__main__":
    main()
