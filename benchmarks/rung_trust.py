"""The trust verdict read from the rungs, against the trust probe: a replay on recorded runs.

Issue 43 asks whether the trust verdict can be read from the fine-tuning rungs for free
(the Kendall tau between a rung and the next) instead of the trust probe's trainings
(``TrustProbe``: 8 architectures spread over the supernet's ranking of 40 random ones,
fine-tuned 2 epochs). Both are replayed on every recorded B6 run that holds the probe's
record, the fine-tuning record and the supernet's measured tau on the ground's table
(``supernet_tau``: its scores of the table's random architectures against their test
accuracy, which the probe's interval is calibrated to cover):

- **probe**: the recorded tau and its interval (already widened by ``TrustProbe.margin``);
- **rungs**: the tau between the finalists' screening scores (rung 0) and their
  validation accuracy after the first fine-tuning epoch (rung 1, which every finalist
  reaches), its 90% bootstrap interval over the finalists widened by the same margin.

Per ground: how often each interval covers the table's tau, and how often each verdict
(``nasflow.pipeline.trust_verdict``) is the verdict the table's tau itself gives.

Usage::

    python benchmarks/rung_trust.py --runs benchmarks/data/b6_*.jsonl
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from nasflow.pipeline import bootstrap_tau
from nasflow.pipeline import trust_verdict as verdict
from nasflow.search import TrustProbe

MARGIN = TrustProbe().margin
BOOTSTRAP = 2000


def word(text: str) -> str:
    """A verdict's first word: ``trust``, ``screen``, ``weak`` or ``undetermined``."""
    return text.split(":")[0].split()[0]


def rung_tau(finetuned: dict, seed: int) -> tuple[float, float, float] | None:
    """Tau of the finalists' screening scores against their first fine-tuning epoch's
    validation accuracy, with the interval widened by ``MARGIN`` (``None``: fewer than
    four finalists with a first epoch)."""
    pairs = [
        (c["supernet_accuracy"], c["val_curve"][0])
        for c in finetuned["candidates"]
        if c.get("val_curve") and c.get("status") != "diverged"
    ]
    if len(pairs) < 4:
        return None
    tau, low, high = bootstrap_tau(*zip(*pairs, strict=True), BOOTSTRAP, seed)
    return tau, max(-1.0, low - MARGIN), min(1.0, high + MARGIN)


def replay(rows: Sequence[dict]) -> dict[str, list[dict]]:
    """Per ground, one entry per replayable run: the table's tau, each estimate's tau,
    whether its interval covers the table's, and whether its verdict is the table's."""
    out: dict[str, list[dict]] = collections.defaultdict(list)
    for row in rows:
        table, probe, ft = row.get("supernet_tau"), row.get("trust"), row.get("finetuned")
        if table is None or not probe or not ft or math.isnan(table):
            continue
        rungs = rung_tau(ft, int(row.get("seed", 0)))
        if rungs is None:
            continue
        truth = word(verdict(table, table))
        entry = {"table": table}
        for name, (tau, low, high) in (
            ("probe", (probe["tau"], probe["low"], probe["high"])),
            ("rungs", rungs),
        ):
            entry[name] = tau
            entry[f"{name}_covers"] = bool(low <= table <= high)
            entry[f"{name}_right"] = word(verdict(tau, low)) == truth
        out[row["name"]].append(entry)
    return dict(out)


def report(per: dict[str, list[dict]]) -> str:
    """One line per ground and one for all: runs, median taus, coverage and verdicts."""
    lines = [
        "| ground | runs | table τ (median) | probe τ | rung τ | probe covers | rungs cover "
        "| probe verdict right | rungs verdict right |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    every = [e for g in per.values() for e in g]
    for name, entries in [*sorted(per.items()), ("all", every)]:
        med = {k: float(np.median([e[k] for e in entries])) for k in ("table", "probe", "rungs")}
        count = {
            k: sum(e[k] for e in entries) for k in entries[0] if k.endswith(("_covers", "_right"))
        }
        n = len(entries)
        lines.append(
            f"| {name} | {n} | {med['table']:+.2f} | {med['probe']:+.2f} | {med['rungs']:+.2f} "
            f"| {count['probe_covers']}/{n} | {count['rungs_covers']}/{n} "
            f"| {count['probe_right']}/{n} | {count['rungs_right']}/{n} |"
        )
    table = np.array([e["table"] for e in every])
    for k in ("probe", "rungs"):
        est = np.array([e[k] for e in every])
        ok = ~np.isnan(est)
        if ok.sum() < 3 or np.ptp(est[ok]) == 0 or np.ptp(table[ok]) == 0:
            continue  # (undefined: too few runs, or one of them constant)
        r = float(np.corrcoef(est[ok], table[ok])[0, 1])
        lines.append(f"correlation of the {k} tau with the table's over the runs: {r:+.2f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=Path, nargs="+", required=True, help="B6 rows (JSON lines)")
    args = p.parse_args(argv)
    rows = [json.loads(x) for f in args.runs for x in f.read_text().splitlines() if x.strip()]
    per = replay(rows)
    if not per:
        p.error("no run holds a probe record, a fine-tuning record and the table's tau")
    print(f"{sum(map(len, per.values()))} runs of {len(rows)} rows; margin {MARGIN:g}")
    print(report(per))


if __name__ == "__main__":
    main()
