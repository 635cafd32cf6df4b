"""The decision rule of a paired benchmark, written before its runs.

A rule is clauses joined by ``and``; ``b`` is adopted when every clause holds. A clause
tests one statistic of one measure's paired difference ``b - a`` (``_paired_stats``):

- ``pooled MEASURE STAT OP X``: the pooled figure (the mean of the grounds' means and its
  stratified interval);
- ``each MEASURE STAT OP X``: on every ground with pairs;
- ``count(MEASURE STAT OP X) OP N``: the number of grounds on which it holds.

``MEASURE`` is ``share``, ``test`` or ``hv``; ``STAT`` is ``mean``, ``low`` or ``high`` (the
difference and its 90% interval), or ``a_median`` / ``b_median`` (each configuration's
median value); ``OP`` is ``>``, ``>=``, ``<`` or ``<=``; ``X`` a number (shares and
accuracies are fractions: ``0.01`` is one point). A statistic that is not defined (an
interval from fewer than two pairs) holds nothing.

Named rules (``PRESETS``) stand for their text, which is what the runs' file records.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from _paired_stats import METRICS, Summary

STATS = ("mean", "low", "high", "a_median", "b_median")
OPS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
PRESETS = {
    # Adopt b where the kept model's share rises pooled over the grounds (interval above
    # 0) and falls on none (no ground's interval below 0).
    "adopt": "pooled share low > 0 and each share high >= 0",
    # Issue 41's target against B7 (a = largest, b = the study): above on >= 8 of 10
    # grounds with the interval, below on none.
    "above-largest": "count(share low > 0) >= 8 and count(share high < 0) <= 0",
    # The front against the param ladder (a = ladder, b = the study), the same shape.
    "above-ladder": "count(hv low > 0) >= 8 and count(hv high < 0) <= 0",
    # Both, from one ladder run (its kept model is the largest architecture, B7's).
    "above-baselines": "count(share low > 0) >= 8 and count(share high < 0) <= 0 and "
    "count(hv low > 0) >= 8 and count(hv high < 0) <= 0",
}
GRAMMAR = (
    "clauses joined by 'and': 'pooled MEASURE STAT OP X', 'each MEASURE STAT OP X' or "
    f"'count(MEASURE STAT OP X) OP N'; MEASURE one of {', '.join(METRICS)}; STAT one of "
    f"{', '.join(STATS)}; OP one of {' '.join(OPS)}; or a named rule: {', '.join(PRESETS)}"
)


class RuleError(ValueError):
    """A decision rule that does not parse."""


@dataclass(frozen=True)
class Test:
    """``MEASURE STAT OP X``."""

    metric: str
    stat: str
    op: str
    value: float

    def holds(self, s: Summary | None) -> bool:
        v = math.nan if s is None else s.stat(self.stat)
        return not math.isnan(v) and OPS[self.op](v, self.value)

    def __str__(self) -> str:
        return f"{self.metric} {self.stat} {self.op} {self.value:g}"


@dataclass(frozen=True)
class Clause:
    """``pooled TEST``, ``each TEST`` or ``count(TEST) OP N``."""

    scope: str
    test: Test
    op: str = ""
    count: int = 0

    def evaluate(
        self, per: Mapping[str, Mapping[str, Summary]], pooled: Mapping[str, Summary | None]
    ) -> tuple[bool, str]:
        """Whether it holds, and the line that says why (``per``: measure -> ground ->
        summary; ``pooled``: measure -> summary)."""
        t = self.test
        if self.scope == "pooled":
            s = pooled.get(t.metric)
            v = math.nan if s is None else s.stat(t.stat)
            ok = t.holds(s)
            return ok, f"pooled {t}: {t.metric} {t.stat} = {v:+.4f}: {_yes(ok)}"
        grounds = per.get(t.metric, {})
        failing = sorted(g for g, s in grounds.items() if not t.holds(s))
        if self.scope == "each":
            ok = bool(grounds) and not failing
            why = f"fails on {', '.join(failing)}" if failing else f"{len(grounds)} grounds"
            return ok, f"each {t}: {_yes(ok)} ({why})"
        n = len(grounds) - len(failing)
        ok = OPS[self.op](n, self.count)
        return ok, f"count({t}) {self.op} {self.count}: {n} of {len(grounds)}: {_yes(ok)}"


def _yes(ok: bool) -> str:
    return "yes" if ok else "no"


@dataclass(frozen=True)
class Rule:
    """A parsed decision rule and its text."""

    text: str
    clauses: tuple[Clause, ...]

    def verdict(
        self, per: Mapping[str, Mapping[str, Summary]], pooled: Mapping[str, Summary | None]
    ) -> tuple[bool, list[str]]:
        """Whether every clause holds (adopt ``b``), and one line per clause."""
        results = [c.evaluate(per, pooled) for c in self.clauses]
        return all(ok for ok, _ in results), [line for _, line in results]


def parse_rule(text: str) -> Rule:
    """A rule's text, or a named rule (``PRESETS``), parsed.

    Raises:
        RuleError: The rule does not parse; the message names the bad part and the grammar.
    """
    text = PRESETS.get(text.strip(), text).strip()
    if not text:
        raise RuleError(f"an empty rule; write {GRAMMAR}")
    clauses = []
    for part in re.split(r"\s+and\s+", text):
        tokens = part.replace("(", " ( ").replace(")", " ) ").split()
        clauses.append(_clause(tokens, part))
    return Rule(text, tuple(clauses))


def _clause(tokens: list[str], part: str) -> Clause:
    if tokens and tokens[0] in ("pooled", "each") and len(tokens) == 5:
        return Clause(tokens[0], _test(tokens[1:], part))
    if tokens[:2] == ["count", "("] and len(tokens) == 9 and tokens[6] == ")":
        op, n = tokens[7], tokens[8]
        if op not in OPS or not n.isdigit():
            raise RuleError(f"clause {part!r}: count(...) OP N, N a whole number; {GRAMMAR}")
        return Clause("count", _test(tokens[2:6], part), op, int(n))
    raise RuleError(f"clause {part!r} does not parse; {GRAMMAR}")


def _test(tokens: list[str], part: str) -> Test:
    metric, stat, op, value = tokens
    if metric not in METRICS:
        raise RuleError(f"clause {part!r}: unknown measure {metric!r}; {GRAMMAR}")
    if stat not in STATS:
        raise RuleError(f"clause {part!r}: unknown statistic {stat!r}; {GRAMMAR}")
    if op not in OPS:
        raise RuleError(f"clause {part!r}: unknown comparison {op!r}; {GRAMMAR}")
    try:
        number = float(value)
    except ValueError:
        raise RuleError(f"clause {part!r}: {value!r} is not a number; {GRAMMAR}") from None
    if not math.isfinite(number):
        raise RuleError(f"clause {part!r}: {value!r} is not a finite number")
    return Test(metric, stat, op, number)
