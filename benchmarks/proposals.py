"""Issue 41.6: what the screening proposes when its sampler repeats itself, on a real table.

The batched screening asks the sampler for an architecture the study has not scored; when
the sampler keeps proposing scored ones (``1 + REASKS`` asks), the study proposes one in
its place (``StudySpec.repeat_fallback``): ``"random"``, drawn uniformly (shipped), or
``"mutate"``, an unseen architecture one or two choices away from the sampler's repeat.

Here both run through the study runner itself (``StudyRunner``, the batched loop and its
``TabularScorer``: the code a trained study screens with) on ``studies/nb201_tabular.py``:
all 15,625 NAS-Bench-201 cells with their CIFAR-10 test accuracy (one objective, the
runner's own TPE, no training), at ``--queries`` distinct cells, for ``--seeds`` search
seeds each. Per budget: each fallback's mean regret (table optimum minus the best cell
found, in points), the share of runs that found the optimum, the median share of
candidates the sampler proposed / mutated / drew at random, and the paired difference of
the regret (mutate - random, same seed) with its 90% bootstrap interval over the seeds.
Lower regret is better: a negative difference favours ``mutate``.

What this does not measure: the supernet's noise (the table is the truth), several
objectives, and what the kept model of a trained study gains; the decision instrument's
paired run 3 (``benchmarks/results/paired.md``) measures those.

Usage::

    python benchmarks/proposals.py --seeds 20 --queries 50 100 300 \\
        --json benchmarks/data/proposals_nb201.json
    python benchmarks/proposals.py --quick          # smoke size: 2 seeds, 30 queries
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paired_stats import interval, proposals

from nasflow.pipeline import StudyRunner
from nasflow.search import StudySpec, load_study_file

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "nb201_tabular.py"
FALLBACKS = ("random", "mutate")
#: What the report lists, each paired against ``random``: the fallbacks, and
#: ``random-noreask`` (``random`` with no re-asks: rows recorded for paired run 22 at
#: commit d70bd1b, whose ``StudySpec.reask`` was removed after it; ``--from-json`` only).
VARIANTS = (*FALLBACKS, "random-noreask")


def run_once(spec: StudySpec, fallback: str, queries: int, seed: int) -> dict:
    """One tabular search of ``queries`` distinct cells; its row."""
    assert spec.table is not None
    spec = spec.replace(n_trials=queries, seed=seed, repeat_fallback=fallback)
    lines: list[str] = []
    c0 = time.process_time()
    with tempfile.TemporaryDirectory() as out:
        result = StudyRunner(spec, out_dir=out, progress=False, log=lines.append).run()
        values = [t.values[0] for t in result.study.get_trials() if t.values]
    best = max(values)
    regret = spec.table.regret(best)
    made = proposals({"summary": lines})
    assert made is not None, "the screening printed no line of its proposals"
    return {
        "fallback": fallback,
        "queries": queries,
        "seed": seed,
        "best": best,
        "regret": regret,
        "optimum_found": regret <= 1e-9,
        "scored": made.scored,
        "mutated": made.mutated,
        "random": made.random,
        "cpu_s": time.process_time() - c0,
    }


def report(rows: list[dict]) -> list[str]:
    """The table of every budget: per fallback, then the paired difference."""
    out = [
        "| distinct cells | fallback | seeds | regret (points), mean | optimum found | "
        "proposed by sampler / mutated / random (median share) | CPU-s per run (median) |",
        "|---:|---|---:|---:|---:|---|---:|",
    ]
    diffs = []
    for q in sorted({r["queries"] for r in rows}):
        by = {f: {r["seed"]: r for r in rows if r["queries"] == q and r["fallback"] == f}
              for f in VARIANTS}  # fmt: skip
        for f in VARIANTS:
            rs = list(by[f].values())
            if not rs:
                continue
            share = {
                k: statistics.median(r[k] / r["scored"] for r in rs) for k in ("mutated", "random")
            }
            sampler = statistics.median(
                (r["scored"] - r["mutated"] - r["random"]) / r["scored"] for r in rs
            )
            out.append(
                f"| {q} | {f} | {len(rs)} | {statistics.mean(r['regret'] for r in rs):.3f} | "
                f"{sum(r['optimum_found'] for r in rs)}/{len(rs)} | {sampler:.0%} / "
                f"{share['mutated']:.0%} / {share['random']:.0%} | "
                f"{statistics.median(r['cpu_s'] for r in rs):.1f} |"
            )
        for f in VARIANTS[1:]:
            seeds = sorted(set(by["random"]) & set(by[f]))
            if not seeds:
                continue
            d = [by[f][s]["regret"] - by["random"][s]["regret"] for s in seeds]
            mean, lo, hi = interval([d])
            better = sum(x < 0 for x in d)
            worse = sum(x > 0 for x in d)
            diffs.append(
                f"- {q} distinct cells: regret {f} - random {mean:+.3f} points "
                f"[{lo:+.3f}, {hi:+.3f}] over {len(d)} seeds; {f} lower in {better}, "
                f"equal in {len(d) - better - worse}, higher in {worse}"
            )
    head = "Paired by seed (90% bootstrap interval; negative favours the variant over random):"
    return [*out, "", head, *diffs]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=20, help="search seeds 0..N-1")
    p.add_argument("--queries", type=int, nargs="+", default=[50, 100, 300])
    p.add_argument("--json", type=Path, help="write every run's row here")
    p.add_argument("--from-json", type=Path, help="report these rows, run nothing")
    p.add_argument("--quick", action="store_true", help="smoke size: 2 seeds, 30 queries")
    p.add_argument(
        "--fallbacks",
        nargs="+",
        choices=FALLBACKS,
        default=list(FALLBACKS),
        help="what to compare (the first is run first on even seeds); pairs are against random",
    )
    args = p.parse_args(argv)
    if args.from_json:
        rows = json.loads(args.from_json.read_text())
    else:
        spec = load_study_file(STUDY)
        seeds = range(2 if args.quick else args.seeds)
        rows = []
        for q in [30] if args.quick else args.queries:
            for seed in seeds:
                # Alternating which runs first: a drift of the machine favours neither.
                for f in args.fallbacks if seed % 2 == 0 else args.fallbacks[::-1]:
                    rows.append(run_once(spec, f, q, seed))
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(report(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
