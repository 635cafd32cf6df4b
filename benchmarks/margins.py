"""One margin for both "validates higher" rules: a replay on recorded study runs.

The pipeline decides two things by a margin in binomial standard errors of a validation
accuracy (``nasflow.pipeline``): whether the kept finalist's fine-tuned weights are kept
over its retrain (``KEPT_MARGIN_SE``) and whether the best zero-cost anchor replaces the
search's choice (one standard error until 2026-12-02, none since). This script replays
both decisions on every recorded run whose row holds them (the kept finalist's retrain,
its fine-tuned record, the anchors), under the margins the rows were recorded under
(anchor 1, kept 2: the shipped ones until 2026-12-02) and under one margin ``m`` for
both, and prints, per ground and pooled, the paired difference (candidate − recorded) of
the kept model's share of the ground's table and of its test accuracy with a 90%
bootstrap interval over search seeds (``_paired_stats.summarise``: runs of one ground and
seed, from several files, are averaged into one pair first).

Rows left out, and counted: baselines, configurations with another anchor rule
(``anchors.fallback``) or without the fine-tuning phase (``finetuning: null``), rows
without a fine-tuning record or without the kept finalist in it, and rows whose recorded
kept model (``kept_record``) the recorded margins replayed do not reproduce.

``--recorded ANCHOR/KEPT``: the margins the runs were recorded under (default 1/2, the
rule until 2026-12-02; 0/2 since). ``--config NAME``: replay that configuration's rows only.

``--rules ANCHOR/KEPT`` replays two margins of one's own (``inf``: that rule never
replaces the retrain; ``1/inf`` keeps the best training from scratch, the fine-tuned
weights never).

Usage::

    python benchmarks/margins.py --runs benchmarks/data/paired_*.jsonl \
        benchmarks/data/b6_*.jsonl --margins 1 1.5 2
    python benchmarks/margins.py --runs benchmarks/data/paired_*.jsonl \
        benchmarks/data/b6_*.jsonl --margins --rules 1/inf
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import math
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paired_stats import Summary, summarise
from suite_runs import RECORDED_ANCHOR_MARGIN_SE, beats, load_rows, table_test, val_samples

from nasflow.pipeline import KEPT_MARGIN_SE, standard_error
from nasflow.record import FineTuneResult

#: The rule the replayed rows were recorded under (the base of every comparison).
RECORDED = (RECORDED_ANCHOR_MARGIN_SE, KEPT_MARGIN_SE)

#: Overrides that change what the two rules decide between, or replace the fine-tuning
#: phase: the anchors' rule (``anchors.fallback`` or the whole ``anchors``), no fine-tuning
#: phase (``finetuning: null``), the rung schedules (``rungs``).
OTHER_RULES = ("anchors.fallback", "anchors", "finetuning", "rungs")


@dataclasses.dataclass(frozen=True)
class Kept:
    """The model a replayed rule keeps: ``"retrained"``, ``"fine-tuned"`` or ``"anchor"``,
    and its test accuracy."""

    weights: str
    test: float


def replayable(row: dict) -> str | None:
    """Why ``row`` cannot be replayed (``None``: it can)."""
    if row.get("kind", "run") != "run" or row.get("config_kind", "study") != "study":
        return "not a study run"
    overrides = row.get("overrides") or {}
    if any(k in OTHER_RULES or k.startswith("rungs.") for k in overrides):
        return "another anchor rule or no fine-tuning phase"
    if not row.get("finetuned") or "kept_trial" not in row:
        return "no fine-tuning record"
    result = FineTuneResult.from_dict(row["finetuned"])
    rec = next((c for c in result.ready if c.trial == row["kept_trial"]), None)
    if rec is None or rec.test_accuracy is None or rec.val_accuracy is None:
        return "the kept finalist has no fine-tuned record"
    return None


def decide(row: dict, anchor_se: float, kept_se: float) -> Kept:
    """The kept model of ``row`` under the two margins (standard errors): the fine-tuned
    weights where they validate above the retrain by more than ``kept_se``, then the
    best-validating anchor where it validates above that by more than ``anchor_se``."""
    result = FineTuneResult.from_dict(row["finetuned"])
    n = result.val_samples or val_samples(row["study"])
    rec = next(c for c in result.ready if c.trial == row["kept_trial"])
    weights, val, test = "retrained", float(row["kept_val"]), float(row["kept_test"])
    ft_val = float(rec.val_accuracy)
    if ft_val > val + kept_se * standard_error(ft_val, val, n):
        weights, val, test = "fine-tuned", ft_val, float(rec.test_accuracy)
    trained = [a for a in row.get("anchors") or [] if a.get("val_accuracy") is not None]
    if trained:
        best = max(trained, key=lambda a: a["val_accuracy"])
        if best["val_accuracy"] > val + anchor_se * standard_error(best["val_accuracy"], val, n):
            return Kept("anchor", float(best["test_accuracy"]))
    return Kept(weights, test)


def agrees(row: dict, kept: Kept) -> bool:
    """Whether ``kept`` is the model the run recorded as kept (``True`` without a record)."""
    record = row.get("kept_record")
    if not record:
        return True
    if record["source"] == "anchor":
        return kept.weights == "anchor"
    return kept.weights == record["weights"]


#: A candidate rule: the anchor's and the kept weights' margins, in standard errors.
Rule = tuple[float, float]


def rule_name(rule: Rule) -> str:
    """``m = 1`` for one margin of both rules, else ``anchor 1 / kept inf``."""
    anchor_se, kept_se = rule
    if anchor_se == kept_se:
        return f"m = {anchor_se:g}"
    return f"anchor {anchor_se:g} / kept {kept_se:g}"


def parse_rule(text: str) -> Rule:
    """``ANCHOR/KEPT`` (standard errors, ``inf`` allowed) as a rule."""
    parts = text.split("/")
    if len(parts) != 2:
        raise ValueError(f"a rule is ANCHOR/KEPT in standard errors, got {text!r}")
    try:
        anchor_se, kept_se = (float(x) for x in parts)
    except ValueError:
        raise ValueError(f"a rule's margins are numbers (or inf), got {text!r}") from None
    if any(math.isnan(v) or v < 0 for v in (anchor_se, kept_se)):
        raise ValueError(f"a rule's margins must be >= 0 (or inf), got {text!r}")
    return anchor_se, kept_se


def why_not(row: dict, recorded: Rule = RECORDED) -> str | None:
    """Why ``row`` cannot be replayed exactly (:func:`replayable`, or the margins it was
    recorded under, ``recorded``, do not reproduce its kept model); ``None``: it can."""
    why = replayable(row)
    if why is None and not agrees(row, decide(row, *recorded)):
        why = "the recorded margins do not reproduce the recorded kept model"
    return why


def replay(
    rows: Sequence[dict],
    rules: Sequence[Rule],
    base: Rule = RECORDED,
    recorded: Rule = RECORDED,
) -> tuple[dict[Rule, dict[str, list[tuple[float, float]]]], dict[str, int], dict]:
    """Per candidate rule, per measure key ``"share:GROUND"`` / ``"test:GROUND"``: the
    (``base``, candidate) value pairs, one per (ground, search seed); the count of rows
    left out by reason; and how often each rule kept which weights. Rows are checked
    against the margins they were recorded under (``recorded``: :data:`RECORDED` for the
    runs before 2026-12-02's anchor change, ``(0, 2)`` after it) whatever ``base``."""
    skipped: collections.Counter[str] = collections.Counter()
    used: list[dict] = []
    for row in rows:
        why = why_not(row, recorded)
        if why is not None:
            skipped[why] += 1
        else:
            used.append(row)
    kinds: dict = {}
    out: dict[Rule, dict[str, list[tuple[float, float]]]] = {}
    kinds["recorded"] = collections.Counter(decide(r, *recorded).weights for r in used)
    if base != recorded:
        kinds[f"base ({rule_name(base)})"] = collections.Counter(
            decide(r, *base).weights for r in used
        )
    for rule in rules:
        kinds[rule_name(rule)] = collections.Counter(decide(r, *rule).weights for r in used)
    for rule in rules:
        cells: dict[tuple[str, int], list[tuple[float, float, float, float]]] = (
            collections.defaultdict(list)
        )
        for r in used:
            a = decide(r, *base)
            b = decide(r, *rule)
            table = table_test(r["study"])
            cells[(r["name"], int(r["seed"]))].append(
                (beats(a.test, table), beats(b.test, table), a.test, b.test)
            )
        pairs: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
        for (ground, _), vals in sorted(cells.items()):
            means = [statistics.mean(v) for v in zip(*vals, strict=True)]
            share_a, share_b, test_a, test_b = means
            pairs[f"share:{ground}"].append((share_a, share_b))
            pairs[f"test:{ground}"].append((test_a, test_b))
        out[rule] = dict(pairs)
    skipped["used"] = len(used)
    return out, dict(skipped), kinds


def _cell(s: Summary | None) -> str:
    return "—" if s is None else s.points()


def report(
    pairs: dict[str, list[tuple[float, float]]], rule: Rule, base: Rule = RECORDED
) -> tuple[str, bool]:
    """The table for candidate ``rule`` against ``base`` and whether it passes the
    registered rule."""
    share = {k.split(":", 1)[1]: v for k, v in pairs.items() if k.startswith("share:")}
    test = {k.split(":", 1)[1]: v for k, v in pairs.items() if k.startswith("test:")}
    per_s, pooled_s = summarise(share)
    per_t, pooled_t = summarise(test)
    lines = [
        f"{rule_name(rule)} − {'recorded' if base == RECORDED else 'base'} "
        f"(anchor {base[0]:g}, kept {base[1]:g}); points, 90% interval, (+/=/−) over "
        "search seeds",
        "| ground | seeds | share b−a | test b−a |",
        "|---|---:|---|---|",
    ]
    for g in sorted(share):
        lines.append(f"| {g} | {per_s[g].n} | {_cell(per_s[g])} | {_cell(per_t[g])} |")
    n = sum(s.n for s in per_s.values())
    lines.append(f"| pooled (stratified) | {n} | {_cell(pooled_s)} | {_cell(pooled_t)} |")
    every = all(not math.isnan(s.high) and s.high >= 0 for s in per_s.values())
    ok = (
        every
        and pooled_s is not None
        and pooled_s.mean >= 0
        and pooled_t is not None
        and pooled_t.mean >= 0
    )
    return "\n".join(lines), ok


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=Path, nargs="+", required=True, help="JSON-lines rows")
    p.add_argument(
        "--margins", type=float, nargs="*", default=[1.0, 1.5, 2.0], help="one margin for both"
    )
    p.add_argument("--rules", nargs="*", default=[], help="ANCHOR/KEPT margins (inf allowed)")
    p.add_argument(
        "--base", default=None, help="ANCHOR/KEPT to compare with (default: as recorded)"
    )
    p.add_argument(
        "--recorded",
        default=None,
        help="ANCHOR/KEPT the runs were recorded under (default 1/2: before 2026-12-02)",
    )
    p.add_argument("--config", default=None, help="replay this configuration's rows only")
    args = p.parse_args(argv)
    for m in args.margins:
        if not (math.isfinite(m) and m >= 0):
            p.error(f"--margins must be standard errors >= 0, got {m!r}")
    try:
        rules = [(m, m) for m in args.margins] + [parse_rule(t) for t in args.rules]
        recorded = RECORDED if args.recorded is None else parse_rule(args.recorded)
        base = recorded if args.base is None else parse_rule(args.base)
    except ValueError as exc:
        p.error(str(exc))
    if not rules:
        p.error("give --margins or --rules")
    rows = load_rows(args.runs)
    if args.config is not None:
        rows = [r for r in rows if r.get("config", args.config) == args.config]
        if not any(r.get("kind", "run") == "run" for r in rows):
            p.error(f"--config {args.config!r}: no run of that configuration in --runs")
    per_margin, skipped, kinds = replay(rows, rules, base, recorded)
    print(f"{len(rows)} rows read from {len(args.runs)} files; replayed {skipped.pop('used')}")
    for why, count in sorted(skipped.items()):
        print(f"  left out: {count} ({why})")
    for name, counts in kinds.items():
        print(f"  {name}: kept " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    passing = []
    for rule in rules:
        text, ok = report(per_margin[rule], rule, base)
        print()
        print(text)
        print(f"rule: {'passes' if ok else 'does not pass'}")
        if ok:
            share = {k: v for k, v in per_margin[rule].items() if k.startswith("share:")}
            pooled = summarise(share)[1]
            passing.append((pooled.mean if pooled else -math.inf, rule))
    print()
    if passing:
        best = max(passing)
        print(f"adopted by the registered rule: {rule_name(best[1])}")
    else:
        print("adopted by the registered rule: none (the base stays)")


if __name__ == "__main__":
    main()
