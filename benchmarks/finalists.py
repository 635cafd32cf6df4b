"""Which fine-tuned finalist to keep: every last-rung finalist of B6 runs, retrained.

A B6 run (``benchmarks/suite_runs.py``) retrains one finalist from scratch: the one its
rule keeps (the best validation accuracy after the last fine-tuning rung). Whether
another rule would keep a better model cannot be read from that row. This benchmark
retrains *every* finalist that reached the last rung of each recorded run, exactly as
phase 3 retrains the kept one (``nasflow.search.retrain_arch``: the study's recipe, data
and search seed, through ``--stack``), and replays rules for choosing among them against
the ground's random-architecture table:

- ``shipped``: the best fine-tuned validation accuracy (what the study kept when the B6
  rows were recorded; the studies now ship ``best retrain val of 4``);
- ``largest within m SE``: the finalist with the most parameters among those whose
  fine-tuned validation accuracy is within ``m`` binomial standard errors of the best;
- ``largest``: the most parameters among the last rung's finalists;
- ``best retrain val of k``: retrain the ``k`` best fine-tuned finalists (``k - 1`` more
  trainings than phase 3 does) and keep the best retrained validation accuracy;
- ``best supernet score``: the first protected finalist (``FineTuning.rank_by`` order);
- ``oracle``: the best retrained test accuracy (the ceiling of any rule);
- with ``--second-seed`` retrains, ``2 seeds of k: ...``: the architecture whose two
  retrains validate best on average (with its better-validating seed's weights, or its
  first seed's), or the best single retrain of the ``2k``; and ``best retrain val of k,
  its better seed``: the ``best retrain val of k`` pick with the better-validating of its
  two retrains (one more training, not ``k``).

Every rule's pick then keeps its fine-tuned weights where they validate above its retrain
by the study's margin (``kept_weights``), and goes through B8's anchor rule (the best
zero-cost anchor replaces it when the anchor validates higher than the kept weights by
more than ``RECORDED_ANCHOR_MARGIN_SE`` standard errors, the rule the runs were recorded
under). The retrain of the row's own kept finalist is checked against the test accuracy
the run recorded (the replay's fidelity).

Usage::

    python benchmarks/finalists.py --runs benchmarks/data/b6_anchors.jsonl \\
        --stack '{"amp": "bf16"}' --json benchmarks/data/b6_finalists.jsonl
    python benchmarks/finalists.py --from-json benchmarks/data/b6_finalists.jsonl

Training-seed noise in the choice (``--second-seed``): the finalists of an earlier replay
that the ``best retrain val of k`` rule retrains (the ``k`` best fine-tuned), retrained
once more with the search seed plus ``OFFSET`` (weights and data order from that seed,
the same data and recipe), recorded as ``retrain2_val`` / ``retrain2_test``. The report
then adds rules that choose among the ``k`` on both retrains' validation::

    python benchmarks/finalists.py --second-seed 1000 --k 4 \\
        --from-json benchmarks/data/b6_finalists.jsonl --stack '{"amp": "bf16"}' \\
        --json benchmarks/data/b6_finalists_2seeds.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paired_stats import summarise
from scipy.stats import rankdata
from suite_runs import RECORDED_ANCHOR_MARGIN_SE, beats, kept, table_test, val_samples

from nasflow.cost._analytic import count_params
from nasflow.pipeline import retrain_arch, standard_error, validation_margin
from nasflow.record import FineTuneResult
from nasflow.search import load_study_file
from nasflow.space import Arch
from nasflow.train.stack import Stack

# Finalists whose fine-tuned validation accuracy is within this many standard errors of
# the best are "statistically tied" for the ``largest within m SE`` rules.
MARGINS = (1.0, 2.0)


def last_rung(record: dict) -> tuple[list, int]:
    """The finalists that reached the last rung, in the record's order (protected first),
    and the validation split's size."""
    result = FineTuneResult.from_dict(record)
    ready = result.ready
    most = max(c.epochs for c in ready)
    return [c for c in ready if c.epochs == most], result.val_samples or 0


def replay_run(row: dict, stack: Stack | None, top: int) -> dict:
    """Retrain every last-rung finalist of one B6 row; the measured rows."""
    spec = load_study_file(Path(row["study"])).replace(seed=row["seed"])
    data = spec.data()
    finalists, n = last_rung(row["finetuned"])
    order = [c.trial for c in FineTuneResult.from_dict(row["finetuned"]).candidates]
    out = []
    for c in finalists:
        arch = Arch.from_json(c.arch)
        c0 = time.process_time()
        net, _, result = retrain_arch(spec, arch, data, stack=stack)
        out.append(
            {
                "trial": c.trial,
                "arch": c.arch,
                "params": count_params(net),
                "protected": order.index(c.trial) < top,
                "supernet_accuracy": c.supernet_accuracy,
                "finetuned_val": c.val_accuracy,
                "finetuned_test": c.test_accuracy,
                "retrain_val": result.val_accuracy,
                "retrain_test": result.test_accuracy,
                "retrain_cpu_s": time.process_time() - c0,
            }
        )
    return {
        "study": row["study"],
        "name": row["name"],
        "seed": row["seed"],
        "val_samples": n or val_samples(row["study"]),
        "kept_trial": row["kept_trial"],
        "kept_test": row["kept_test"],
        "anchors": row.get("anchors") or [],
        "finalists": out,
    }


def by_finetuned_val(finalists: list[dict]) -> list[dict]:
    """The finalists, best fine-tuned validation first (stable: ties keep their order),
    the order in which ``retrain_top`` retrains them."""
    return sorted(finalists, key=lambda f: -f["finetuned_val"])


def second_seed(run: dict, offset: int, k: int, stack: Stack | None) -> dict:
    """Retrain the ``k`` best fine-tuned finalists of one replayed run once more, with the
    search seed plus ``offset``; the run with ``retrain2_*`` added to those finalists."""
    spec = load_study_file(Path(run["study"])).replace(seed=run["seed"])
    data = spec.data()
    other = spec.replace(seed=run["seed"] + offset)
    ranked = by_finetuned_val(run["finalists"])
    for f in ranked[:k]:
        c0 = time.process_time()
        _, _, result = retrain_arch(other, Arch.from_json(f["arch"]), data, stack=stack)
        f["retrain2_seed"] = run["seed"] + offset
        f["retrain2_val"] = result.val_accuracy
        f["retrain2_test"] = result.test_accuracy
        f["retrain2_cpu_s"] = time.process_time() - c0
    return run


def with_val_loss(run: dict, k: int, stack: Stack | None) -> dict:
    """Retrain the ``k`` best fine-tuned finalists of one replayed run again, exactly as
    the replay did (the search seed), and record their validation cross-entropy
    (``retrain_val_loss``). Where the retrain does not reproduce the replay's (image
    retrains are not bit-reproducible here), this retrain's accuracies replace the
    replay's, the replay's kept as ``retrain_val_first`` / ``retrain_test_first``, so that
    every rule judges the same weights."""
    spec = load_study_file(Path(run["study"])).replace(seed=run["seed"])
    data = spec.data()
    ranked = by_finetuned_val(run["finalists"])
    for f in ranked[:k]:
        _, _, result = retrain_arch(spec, Arch.from_json(f["arch"]), data, stack=stack)
        if (result.val_accuracy, result.test_accuracy) != (f["retrain_val"], f["retrain_test"]):
            f["retrain_val_first"], f["retrain_test_first"] = f["retrain_val"], f["retrain_test"]
            f["retrain_val"], f["retrain_test"] = result.val_accuracy, result.test_accuracy
        f["retrain_val_loss"] = result.val_loss
    return run


def _rank_sum(fs: list[dict]) -> dict:
    """The finalist with the lowest sum of its rank by retrained validation accuracy (high
    first) and by retrained validation cross-entropy (low first), ties sharing their mean
    rank, as ``FineTuning(rank_by="rank_sum")`` ranks supernet scores; then the higher
    accuracy, then the earlier finalist."""
    acc = rankdata([-f["retrain_val"] for f in fs])
    loss = rankdata([f["retrain_val_loss"] for f in fs])
    best = min(range(len(fs)), key=lambda i: (acc[i] + loss[i], -fs[i]["retrain_val"], i))
    return fs[best]


def _better_seed(f: dict) -> dict:
    """A finalist retrained twice, as the retrain whose validation is higher (the first
    on a tie): the weights a study that trained both seeds would keep."""
    if f["retrain2_val"] > f["retrain_val"]:
        return {**f, "retrain_val": f["retrain2_val"], "retrain_test": f["retrain2_test"]}
    return f


def picks(run: dict) -> dict[str, dict]:
    """Each rule's choice among the run's retrained finalists."""
    fs, n = run["finalists"], run["val_samples"]
    best_val = max(f["finetuned_val"] for f in fs)
    shipped = next(f for f in fs if f["finetuned_val"] == best_val)
    out = {"shipped": shipped}
    for m in MARGINS:
        se = standard_error(best_val, best_val, n)
        tied = [f for f in fs if f["finetuned_val"] >= best_val - m * se]
        out[f"largest within {m:g} SE"] = max(tied, key=lambda f: f["params"])
    out["largest"] = max(fs, key=lambda f: f["params"])
    # Retrain the k best fine-tuned finalists (k - 1 more trainings than phase 3 does
    # today) and keep the best retrained validation accuracy.
    ranked = by_finetuned_val(fs)
    for k in sorted({2, 3, 4, 5, len(fs)}):
        label = "all" if k == len(fs) else str(k)
        out[f"best retrain val of {label}"] = max(ranked[:k], key=lambda f: f["retrain_val"])
    twice = [f for f in ranked if "retrain2_val" in f]
    if twice:
        k = len(twice)
        # Two seeds of each of the k: the architecture by the mean of its two retrains'
        # validation, then the seed that validates higher; or the best single retrain of
        # the 2k; or the first seed only (the shipped rule on the same k, as a check).
        mean = max(twice, key=lambda f: f["retrain_val"] + f["retrain2_val"])
        out[f"2 seeds of {k}: best mean val, better seed"] = _better_seed(mean)
        out[f"2 seeds of {k}: best mean val, first seed"] = mean
        out[f"2 seeds of {k}: best single val"] = max(
            (_better_seed(f) for f in twice), key=lambda f: f["retrain_val"]
        )
        # One more training only: the shipped rule's pick, retrained with a second seed.
        first = max(twice, key=lambda f: f["retrain_val"])
        out[f"best retrain val of {k}, its better seed"] = _better_seed(first)
    with_loss = [f for f in ranked[:4] if f.get("retrain_val_loss") is not None]
    if len(with_loss) == min(4, len(ranked)):
        out["rank sum of retrain val accuracy and cross-entropy of 4"] = _rank_sum(with_loss)
    protected = [f for f in fs if f["protected"]] or fs
    out["best supernet score"] = protected[0]
    out["oracle"] = max(fs, key=lambda f: f["retrain_test"])
    return out


def kept_test(run: dict, pick: dict) -> float:
    """The test accuracy kept, given the search's ``pick``: its fine-tuned weights where
    they validate above its retrain by more than ``KEPT_MARGIN_SE`` standard errors
    (``nasflow.search.kept_weights``), else its retrain; then B8's anchor rule."""
    n = run["val_samples"]
    val, test = pick["retrain_val"], pick["retrain_test"]
    ft_val, ft_test = pick.get("finetuned_val"), pick.get("finetuned_test")
    if (
        ft_val is not None
        and ft_test is not None
        and ft_val > val + validation_margin(ft_val, val, n)
    ):
        val, test = ft_val, ft_test
    anchors = run["anchors"]
    if anchors:
        best = max(anchors, key=lambda a: a["val_accuracy"])
        margin = RECORDED_ANCHOR_MARGIN_SE * standard_error(best["val_accuracy"], val, n)
        if best["val_accuracy"] > val + margin:
            return best["test_accuracy"]
    return test


def _trainings(f: dict) -> dict[str, tuple[float, float]]:
    """A finalist's three retrains as ``{name: (validation, test)}``: ``first`` (the
    replay's, the search seed), ``again`` (``--val-loss``'s rerun of the same seed, on
    whatever CPU it ran; the same numbers where it reproduced) and ``second``
    (``--second-seed``'s)."""
    again = (f["retrain_val"], f["retrain_test"])
    first = (f.get("retrain_val_first", again[0]), f.get("retrain_test_first", again[1]))
    return {"first": first, "again": again, "second": (f["retrain2_val"], f["retrain2_test"])}


def trainings_report(runs: list[dict], k: int = 4) -> str:
    """Where the ``k`` retrained finalists of every run were trained three times (the
    replay, ``--val-loss``'s rerun, ``--second-seed``'s): each one-training choice (the
    best validation of the ``k``) against each two-training one (the best mean validation,
    the better-validating of its two trainings kept), and "one more" (the one-training
    pick, trained once more, the better of its two kept), for every pairing of the three
    trainings; mean share of the table beaten over the runs."""
    runs = [
        r
        for r in runs
        if all(
            "retrain2_val" in f and "retrain_val_loss" in f
            for f in by_finetuned_val(r["finalists"])[:k]
        )
    ]
    if not runs:
        return ""

    def top(r: dict) -> list[dict]:
        return by_finetuned_val(r["finalists"])[:k]

    def as_pick(f: dict, names: tuple[str, ...]) -> dict:
        val, test = max((_trainings(f)[n] for n in names), key=lambda t: t[0])
        return {**f, "retrain_val": val, "retrain_test": test}

    def share(r: dict, pick: dict) -> float:
        return beats(kept_test(r, pick), table_test(r["study"]))

    def one(r: dict, x: str) -> dict:
        """The finalist (as recorded) whose training ``x`` validates best."""
        return max(top(r), key=lambda f: _trainings(f)[x][0])

    names = ("first", "again", "second")
    lines = ["| trainings | one training: mean share | two: best mean val | one more |"]
    lines.append("|---|---|---|---|")
    for i, x in enumerate(names):
        for y in names[i + 1 :]:
            singles = [
                statistics.mean(share(r, as_pick(one(r, n), (n,))) for r in runs) for n in (x, y)
            ]
            two = statistics.mean(
                share(
                    r,
                    as_pick(
                        max(top(r), key=lambda f: _trainings(f)[x][0] + _trainings(f)[y][0]),
                        (x, y),
                    ),
                )
                for r in runs
            )
            more = [
                statistics.mean(share(r, as_pick(one(r, a), (a, b))) for r in runs)
                for a, b in ((x, y), (y, x))
            ]
            lines.append(
                f"| {x} + {y} | {singles[0]:.1%} / {singles[1]:.1%} | {two:.1%} "
                f"| {more[0]:.1%} / {more[1]:.1%} |"
            )
    diffs = {
        pair: statistics.median(
            abs(_trainings(f)[pair[0]][0] - _trainings(f)[pair[1]][0]) * 100
            for r in runs
            for f in top(r)
        )
        for pair in (("first", "again"), ("again", "second"))
    }
    lines.append(
        f"\n{len(runs)} runs; median |validation difference| between the first retrain and "
        f"its rerun {diffs[('first', 'again')]:.2f} points, between the rerun and the second "
        f"seed {diffs[('again', 'second')]:.2f} points"
    )
    return "\n".join(lines)


def kept_second_seed(row: dict, offset: int, stack: Stack | None) -> dict:
    """One B6 row's kept pick (phase 3's first winner) retrained once more with the search
    seed plus ``offset``; the row's kept model (:func:`suite_runs.kept`) against the same
    rule given the better-validating of the pick's two retrains ("one more training")."""
    spec = load_study_file(Path(row["study"])).replace(seed=row["seed"])
    record = FineTuneResult.from_dict(row["finetuned"])
    arch = next(c.arch for c in record.candidates if c.trial == row["kept_trial"])
    c0 = time.process_time()
    _, _, result = retrain_arch(
        spec.replace(seed=row["seed"] + offset), Arch.from_json(arch), spec.data(), stack=stack
    )
    out = {k: row[k] for k in ("study", "name", "seed", "kept_trial", "kept_val", "kept_test")}
    out.update(
        second_seed=row["seed"] + offset,
        second_val=result.val_accuracy,
        second_test=result.test_accuracy,
        second_cpu_s=time.process_time() - c0,
    )
    return one_more(out, row)


def one_more(out: dict, row: dict) -> dict:
    """``out`` with the kept model's share under today's rule (``base_share``) and under
    "one more training" (``one_more_share``: the pick's better-validating retrain, the
    first on a tie, then the same kept-weights and anchor rules)."""
    out["base_weights"], _, out["base_share"] = kept(row)
    better = dict(row)
    if out["second_val"] > row["kept_val"]:
        better.update(
            kept_val=out["second_val"],
            kept_test=out["second_test"],
            kept_beats=beats(out["second_test"], table_test(row["study"])),
        )
    out["one_more_weights"], _, out["one_more_share"] = kept(better)
    return out


def one_more_report(rows: list[dict]) -> str:
    """Paired: each run's kept model against "one more training", per ground medians."""
    grounds = sorted({r["name"] for r in rows})
    base = [r["base_share"] for r in rows]
    more = [r["one_more_share"] for r in rows]
    better = sum(m > b for b, m in zip(base, more, strict=True))
    worse = sum(m < b for b, m in zip(base, more, strict=True))
    lines = ["| rule | runs | better / worse | mean share | min | " + " | ".join(grounds) + " |"]
    lines.append("|---" * (5 + len(grounds)) + "|")
    for label, key in (
        ("the run's own kept model", "base_share"),
        ("one more training", "one_more_share"),
    ):
        med = " | ".join(
            f"{statistics.median(r[key] for r in rows if r['name'] == g):.0%}" for g in grounds
        )
        vals = [r[key] for r in rows]
        bw = "—" if key == "base_share" else f"{better} / {worse}"
        lines.append(
            f"| {label} | {len(rows)} | {bw} | {statistics.mean(vals):.1%} | {min(vals):.0%} "
            f"| {med} |"
        )
    cpu = statistics.median(r["second_cpu_s"] for r in rows)
    lines.append(f"\nthe second retrain: median {cpu:.1f} CPU-s")
    return "\n".join(lines)


def report(runs: list[dict], against: str = "shipped") -> str:
    """One line per rule: mean and minimum share of the table beaten, per-ground medians,
    and the paired count against the rule ``against`` (``shipped``: the best fine-tuned
    validation, the rule the B6 rows were recorded under)."""
    grounds = sorted({r["name"] for r in runs})
    rules = list(picks(runs[0]))
    if against not in rules:
        raise ValueError(f"--against {against!r} is not a rule here; the rules: {rules}")
    header = f"| rule | runs | differs from {against} | better / worse | mean share | min | "
    header += " | ".join(grounds) + " |"
    out = [header, "|---" * (6 + len(grounds)) + "|"]
    for rule in rules:
        shares: dict[str, list[float]] = {g: [] for g in grounds}
        every, diff, better, worse = [], 0, 0, 0
        for r in runs:
            p = picks(r)
            table = table_test(r["study"])
            share = beats(kept_test(r, p[rule]), table)
            base = beats(kept_test(r, p[against]), table)
            shares[r["name"]].append(share)
            every.append(share)
            diff += p[rule]["trial"] != p[against]["trial"]
            better += share > base
            worse += share < base
        medians = " | ".join(f"{statistics.median(shares[g]):.0%}" for g in grounds)
        out.append(
            f"| {rule} | {len(every)} | {diff} | {better} / {worse} "
            f"| {statistics.mean(every):.1%} | {min(every):.0%} | {medians} |"
        )
    fidelity = [
        f["retrain_test"] - r["kept_test"]
        for r in runs
        for f in r["finalists"]
        if f["trial"] == r["kept_trial"]
    ]
    if fidelity:
        out.append(
            f"\nreplayed retrain of each run's kept finalist minus the run's own: "
            f"median {statistics.median(fidelity) * 100:+.2f} points, "
            f"largest |difference| {max(map(abs, fidelity)) * 100:.2f} ({len(fidelity)} runs)"
        )
    return "\n".join(out)


def paired_report(runs: list[dict], against: str, rules: list[str]) -> str:
    """Each of ``rules`` paired with ``against`` on the same runs: per ground and pooled,
    the mean difference of the kept model's share of the table and of its test accuracy
    (points), with a 90% bootstrap interval over search seeds (runs of one ground and
    seed averaged into one pair first; ``_paired_stats.summarise``)."""
    known = list(picks(runs[0]))
    for rule in (against, *rules):
        if rule not in known:
            raise ValueError(f"{rule!r} is not a rule here; the rules: {known}")
    out = []
    for rule in rules:
        cells: dict[tuple[str, int], list[tuple[float, float, float, float]]] = {}
        for r in runs:
            p, table = picks(r), table_test(r["study"])
            a, b = kept_test(r, p[against]), kept_test(r, p[rule])
            cell = (beats(a, table), beats(b, table), a, b)
            cells.setdefault((r["name"], int(r["seed"])), []).append(cell)
        share: dict[str, list[tuple[float, float]]] = {}
        test: dict[str, list[tuple[float, float]]] = {}
        for (ground, _), vals in sorted(cells.items()):
            sa, sb, ta, tb = (statistics.mean(v) for v in zip(*vals, strict=True))
            share.setdefault(ground, []).append((sa, sb))
            test.setdefault(ground, []).append((ta, tb))
        per_s, pooled_s = summarise(share)
        per_t, pooled_t = summarise(test)
        out += [
            f"{rule} − {against} (points; 90% interval; +/=/− over search seeds)",
            "| ground | seeds | share | test |",
            "|---|---:|---|---|",
        ]
        for g in sorted(per_s):
            out.append(f"| {g} | {per_s[g].n} | {per_s[g].points()} | {per_t[g].points()} |")
        assert pooled_s is not None and pooled_t is not None  # (a ground has two seeds)
        n = sum(s.n for s in per_s.values())
        out.append(f"| pooled (stratified) | {n} | {pooled_s.points()} | {pooled_t.points()} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=Path, nargs="+", default=[], help="B6 rows (JSON lines)")
    p.add_argument(
        "--stack",
        type=json.loads,
        default=None,
        help="the runs' speedup stack, as Stack fields in JSON (default: plain fp32 eager)",
    )
    p.add_argument("--top", type=int, default=5, help="the runs' FineTuning.top")
    p.add_argument("--limit", type=int, help="replay only the first N runs")
    p.add_argument("--json", type=Path, help="append every replayed run here (JSON lines)")
    p.add_argument("--from-json", type=Path, nargs="+", help="report these replays only")
    p.add_argument(
        "--second-seed",
        type=int,
        metavar="OFFSET",
        help="retrain the --k best fine-tuned finalists of the --from-json replays once "
        "more, with the search seed + OFFSET, and write the runs to --json",
    )
    p.add_argument(
        "--val-loss",
        action="store_true",
        help="retrain the --k best fine-tuned finalists of the --from-json replays again "
        "(the search seed), record their validation cross-entropy, write the runs to --json",
    )
    p.add_argument(
        "--k", type=int, default=4, help="how many finalists --second-seed / --val-loss retrain"
    )
    p.add_argument(
        "--kept-second-seed",
        type=int,
        metavar="OFFSET",
        help="retrain each --runs row's kept pick once more (search seed + OFFSET), write "
        "the paired rows to --json, and report the rows of --from-json or this run",
    )
    p.add_argument(
        "--against",
        default="shipped",
        help="the rule the report pairs every other rule with (default: shipped)",
    )
    p.add_argument(
        "--paired",
        nargs="+",
        metavar="RULE",
        help="with --from-json: pair each RULE with --against, per ground, with intervals",
    )
    args = p.parse_args(argv)
    if args.kept_second_seed is not None:
        if args.runs:
            if not args.json:
                p.error("--kept-second-seed with --runs needs --json (the output)")
            stack = Stack.from_dict(args.stack) if args.stack is not None else None
            rows = [json.loads(line) for f in args.runs for line in f.open() if line.strip()]
            rows = rows[: args.limit]
            out = []
            for i, row in enumerate(rows, 1):
                out.append(kept_second_seed(row, args.kept_second_seed, stack))
                print(f"[{i}/{len(rows)}] {row['name']} seed {row['seed']}", flush=True)
                with args.json.open("a") as f:
                    f.write(json.dumps(out[-1]) + "\n")
        else:
            files = args.from_json or []
            out = [json.loads(line) for f in files for line in f.open() if line.strip()]
        print(one_more_report(out))
        return
    if args.second_seed is not None or args.val_loss:
        if not args.from_json or not args.json:
            p.error("--second-seed / --val-loss need --from-json (the replays) and --json")
        if args.second_seed == 0:
            p.error("--second-seed 0 would retrain with the first seed again")
        stack = Stack.from_dict(args.stack) if args.stack is not None else None
        runs = [json.loads(line) for f in args.from_json for line in f.open() if line.strip()]
        runs = runs[: args.limit]
        for i, run in enumerate(runs, 1):
            if args.second_seed is not None:
                second_seed(run, args.second_seed, args.k, stack)
            if args.val_loss:
                with_val_loss(run, args.k, stack)
            print(f"[{i}/{len(runs)}] {run['name']} seed {run['seed']}", flush=True)
            with args.json.open("a") as f:
                f.write(json.dumps(run) + "\n")
        print(report(runs, args.against))
        print(trainings_report(runs))
        return
    if args.from_json:
        runs = [json.loads(line) for f in args.from_json for line in f.open() if line.strip()]
        if args.paired:
            print(paired_report(runs, args.against, args.paired))
            return
        print(report(runs, args.against))
        print(trainings_report(runs))
        return
    rows = [json.loads(line) for f in args.runs for line in f.open() if line.strip()]
    rows = [r for r in rows if r.get("finetuned")][: args.limit]
    stack = Stack.from_dict(args.stack) if args.stack is not None else None
    runs = []
    for i, row in enumerate(rows, 1):
        run = replay_run(row, stack, args.top)
        runs.append(run)
        print(f"[{i}/{len(rows)}] {run['name']} seed {run['seed']}", flush=True)
        if args.json:
            with args.json.open("a") as f:
                f.write(json.dumps(run) + "\n")
    print(report(runs))


if __name__ == "__main__":
    main()
