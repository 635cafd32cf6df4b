"""The decision instrument: two configurations paired on every ground, judged by a rule.

Every default change is decided here, by a rule fixed before the runs that says whether
``b`` is adopted. Two configurations, ``--a`` and ``--b``, each ``NAME`` or ``NAME=JSON``
(``_overrides.py``: JSON overrides of the study by dotted path, ``{"supernet.epochs": 6,
"finetuning.finalists": 8, "retrain_top": 2}``), or one of two baselines: ``largest``
(B7: the space's largest architecture trained with the study's recipe; its kept model and
its one trained model) and ``ladder`` (the param ladder: the largest architecture at each
width, trained narrowest first; its trained models are the rungs, and it keeps the
widest, B7's training itself: on the MNIST-1D, CIFAR-10 and GPT-2 spaces the widest rung
is the space's largest architecture, trained from the same seeds, so one ladder run
answers both "above the largest" and "above the ladder"). ``--set JSON`` is applied to
both first (``--quick`` sets a tiny study this way).

For every search seed and ground (``--grounds``: study files, default every ground that
exists of the proving ground, ``benchmarks/suite/*.py``, CIFAR-10 and Shakespeare;
``--seeds``, default 0-5), ``a`` and ``b`` run one after the other in this process, in
alternating order so that a warm cache or a drift in the machine's load favours neither,
one torch thread each (``--threads``). A study runs end to end as B6 runs it
(``suite_runs.run_one``, without scoring the table with its supernet); a baseline trains
as B7 does (``ground_truth.train_one``, training seed ``s``: initialised from
``s * 100003 + 99999`` for the largest and the ladder's widest rung, one less for each
narrower rung). Each run is appended to ``--json`` as it ends (a killed benchmark loses
only the run in flight; ``--skip-done`` resumes), with its process CPU-seconds, the model
it keeps and every model it trained (``_trained.py``). The file's first row records the
command, both configurations, ``--set``, the rule and the hypervolume's budget; resuming
with others is refused.

The report (also ``--from-json FILES`` alone, which trains nothing): per ground and
pooled, the mean paired difference ``b - a`` with a 90% bootstrap interval and the pairs
where ``b`` is better / equal / worse, for the kept model's share of the ground's table,
its test accuracy, and the hypervolume of the trained models at the study's budget
(``_paired_stats.py`` defines them); each configuration's median share against 90% per
ground; and the rule's verdict (``_paired_rule.py``; ``--rule``, default ``adopt``:
``pooled share low > 0 and each share high >= 0``).

Usage::

    python benchmarks/paired.py --a shipped --b 'retrain2={"retrain_top": 2}' \\
        --rule adopt --json benchmarks/data/paired_retrain2.jsonl
    python benchmarks/paired.py --a ladder --b shipped --rule above-baselines \\
        --json benchmarks/data/paired_ladder.jsonl
    python benchmarks/paired.py --from-json benchmarks/data/paired_retrain2.jsonl
    # the ladder's side only, paired with another file's deterministic shipped runs (a
    # deterministic study repeats on one cost table; --same-cost-table reports only those):
    python benchmarks/paired.py --a ladder --b shipped --only a --set '{"deterministic": true}' \\
        --json ladder.jsonl
    python benchmarks/paired.py --from-json ladder.jsonl \\
        benchmarks/data/paired_mutate_shipped.jsonl
    python benchmarks/paired.py --quick --json paired_quick.jsonl   # smoke size
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _overrides import BASELINES, Config, OverrideError, apply_overrides, parse_config
from _paired_rule import PRESETS, Rule, RuleError, parse_rule
from _paired_stats import (
    METRICS,
    N_RESAMPLES,
    SHARE_BAR,
    GroundTable,
    Summary,
    pair_budget,
    proposals,
    run_values,
    summarise,
)
from _trained import cost_table_of, other_tables
from ground_truth import train_one
from largest import largest

from nasflow.errors import NasflowError
from nasflow.search import StudySpec, load_study_file
from nasflow.space import Arch, SearchSpace

ROOT = Path(__file__).resolve().parents[1]
#: Every ground, in the report's order (those whose study file exists are the default).
GROUNDS = (
    "studies/mnist1d_front.py",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "benchmarks" / "suite").glob("*.py")),
    "studies/cifar10_cpu.py",
    "studies/shakespeare_cpu.py",
)
#: The choice labels a param ladder steps through (the first the space has).
WIDTH_LABELS = ("width", "n_embd")
#: ``--quick``: one ground, two seeds, a study of seconds (applied as ``--set``).
QUICK_SET = {
    "n_trials": 8,
    "supernet.epochs": 1,
    "train.epochs": 1,
    "finetuning": {"finalists": 2, "rungs": [1], "top": 1},
    "trust": None,
    "anchors": {"n": 1, "sample": 8},
    "retrain_top": 1,
    "stack": None,
}
#: What a header must agree on for a file's runs to be resumed or added to.
HEADER_KEYS = ("a", "b", "set", "rule", "hv_budget", "only")


# ---------------------------------------------------------------------------- baselines
def ladder(space: SearchSpace) -> list[Arch]:
    """The param ladder: the largest architecture (``largest.largest``) at each value of
    the space's width choice (``WIDTH_LABELS``), narrowest first."""
    labels = {c.label: c for c in space.choices}
    label = next((w for w in WIDTH_LABELS if w in labels), None)
    if label is None:
        raise ValueError(
            f"space {space.name!r} has no width choice ({', '.join(WIDTH_LABELS)}) for the "
            f"param ladder; its choices: {', '.join(labels)}"
        )
    return [largest(space, {label: v})[0] for v in sorted(labels[label].values)]


def run_baseline(kind: str, spec: StudySpec, seed: int) -> dict[str, Any]:
    """Train ``kind``'s architectures (``largest``: one; ``ladder``: every rung,
    narrowest first) with the study's recipe and training seed ``seed``; the run's row:
    every model (ready at the CPU-seconds the trainings had taken, the data's loading
    included) and the one kept (the last: the largest, or the ladder's widest rung)."""
    archs = [largest(spec.space)[0]] if kind == "largest" else ladder(spec.space)
    c0, w0 = time.process_time(), time.perf_counter()
    data = spec.data()
    models = []
    for i, arch in enumerate(archs):
        init = seed * 100_003 + 99_999 - (len(archs) - 1 - i)
        r = train_one(spec, arch, data, spec.train, init, spec.train.seed + seed, set())
        models.append(
            {
                "kind": kind,
                "trial": None,
                "arch": arch.to_json(),
                "val": float(r["val_accuracy"]),
                "test": float(r["test_accuracy"]),
                "cost": float(r["train_seconds"]),
                "cost_measured": True,
                "ready_cpu": time.process_time() - c0,
            }
        )
    kept = models[-1]
    return {
        "kept_model": {"trial": None, "weights": "retrained", "source": kind,
                       "val": kept["val"], "test": kept["test"], "arch": kept["arch"]},
        "trained": models,
        "run_cpu_s": time.process_time() - c0,
        "run_wall_s": time.perf_counter() - w0,
    }  # fmt: skip


def run_config(config: Config, path: Path, spec: StudySpec, seed: int) -> dict[str, Any]:
    """One run of one configuration on one ground and search seed: its row."""
    if config.kind == "study":
        import suite_runs

        row = suite_runs.run_one(path, seed, spec=spec, score_table=False)
    else:
        row = run_baseline(config.kind, spec.replace(seed=seed), seed)
    return {
        **row,
        "kind": "run",
        "config": config.name,
        "config_kind": config.kind,
        "overrides": dict(config.overrides),
        "study": str(path),
        "name": spec.name,
        "seed": seed,
    }


# ---------------------------------------------------------------------------- the file
def load_rows(files: list[Path]) -> tuple[list[dict], list[dict]]:
    """``(headers, runs)`` of JSON-lines files."""
    headers, runs = [], []
    for f in files:
        for line in f.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                (headers if row.get("kind") == "header" else runs).append(row)
    return headers, runs


def aliased(runs: list[dict], aliases: Sequence[str]) -> list[dict]:
    """``runs`` with each ``OLD=NEW`` of ``aliases`` applied to their configuration names.

    Raises:
        ValueError: An alias is not ``OLD=NEW`` with two different names, or names a
            configuration no run has.
    """
    rename: dict[str, str] = {}
    for text in aliases:
        old, sep, new = text.partition("=")
        if not sep or not old or not new or old == new:
            raise ValueError(f"--alias must be OLD=NEW with two different names, got {text!r}")
        rename[old] = new
    names = {r["config"] for r in runs}
    missing = sorted(set(rename) - names)
    if missing:
        raise ValueError(
            f"--alias names configurations {missing} no run has (runs: {sorted(names)})"
        )
    return [{**r, "config": rename.get(r["config"], r["config"])} for r in runs]


def check_header(path: Path, header: dict, skip_done: bool) -> set[tuple[str, str, int]] | None:
    """The (config, ground, seed) runs ``path`` holds once its header agrees with this
    comparison's (``None``: a new file).

    Raises:
        ValueError: The file holds another comparison, no header, or runs of this one
            without ``--skip-done``.
    """
    if not path.exists() or not path.read_text().strip():
        return None
    headers, runs = load_rows([path])
    if not headers:
        raise ValueError(f"{path} holds rows without a paired header; write to another file")
    for key in HEADER_KEYS:
        if headers[0].get(key) != header[key]:
            raise ValueError(
                f"{path} holds another comparison: its {key} is {headers[0].get(key)!r}, this "
                f"one's {header[key]!r} (a rule and its configurations are fixed before the "
                "runs); write to another file"
            )
    if not skip_done:
        raise ValueError(f"{path} already holds this comparison; pass --skip-done to resume it")
    return {(r["config"], r["name"], r["seed"]) for r in runs}


def _append(path: Path, row: dict) -> None:
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
    except OSError:
        return None
    return out.stdout.strip() or None


# ---------------------------------------------------------------------------- report
def report(
    runs: list[dict],
    a: str,
    b: str,
    tables: Mapping[str, GroundTable],
    rule: Rule,
    hv_budget: str = "study",
    n_resamples: int = N_RESAMPLES,
    late_rule: Rule | None = None,
    same_table: bool = False,
) -> str:
    """The paired comparison of configurations ``a`` and ``b`` among ``runs``: per
    ground and pooled, each measure's mean difference ``b - a``, its interval and the
    pairs where ``b`` is better / equal / worse; the median shares against the bar; the
    rule's verdict (and ``late_rule``'s, marked as given after the runs).

    A deterministic study screens identically only on one cost table (its predicted costs
    are objectives the sampler reads): the report counts the pairs whose two runs used
    different tables (another machine, or a table measured again), and ``same_table``
    leaves them out."""
    if a == b:
        raise ValueError(f"configurations a and b are both {a!r}")
    by: dict[tuple[str, str, int], dict] = {}
    for r in runs:
        by.setdefault((r["config"], r["name"], r["seed"]), r)
    keys = sorted({(g, s) for c, g, s in by if c in (a, b)})
    paired = [(g, s) for g, s in keys if (a, g, s) in by and (b, g, s) in by]
    tables_of = {k: (cost_table_of(by[(a, *k)]), cost_table_of(by[(b, *k)])) for k in paired}
    crossed = [k for k, (ta, tb) in tables_of.items() if other_tables(ta, tb)]
    if same_table:
        paired = [k for k in paired if k not in crossed]
    if not paired:
        raise ValueError(f"no ground and seed holds runs of both {a!r} and {b!r}")
    values: dict[str, dict[str, list[tuple[float, float]]]] = {m: {} for m in METRICS}
    cpu: dict[str, tuple[list[float], list[float]]] = {}
    for g, s in paired:
        ra, rb = by[(a, g, s)], by[(b, g, s)]
        budget = pair_budget(ra, rb, hv_budget)
        va, vb = run_values(ra, tables[g], budget), run_values(rb, tables[g], budget)
        for m in METRICS:
            if va[m] is not None and vb[m] is not None:
                values[m].setdefault(g, []).append((float(va[m]), float(vb[m])))
        cpu.setdefault(g, ([], []))[0].append(ra["run_cpu_s"])
        cpu[g][1].append(rb["run_cpu_s"])
    per: dict[str, dict[str, Summary]] = {}
    pooled: dict[str, Summary | None] = {}
    for m in METRICS:
        per[m], pooled[m] = summarise(values[m], n_resamples)
    grounds = sorted({g for g, _ in paired})
    lines = _head(runs, a, b, paired, len(keys), hv_budget, tables, grounds)
    lines += _table(per, pooled, grounds, cpu, tables)
    lines.append(f"median share of the table beaten, against {SHARE_BAR:.0%}:")
    for g in grounds:
        s = per["share"].get(g)
        if s is not None:
            lines.append(
                f"  {g}: {a} {s.a_median:.0%} ({_yes(s.a_median >= SHARE_BAR)}), "
                f"{b} {s.b_median:.0%} ({_yes(s.b_median >= SHARE_BAR)})"
            )
    lines += _per_ground_lines(
        by, paired, grounds, (a, b), _proposal_cell,
        "screened candidates proposed by the sampler / mutated from its repeats / drawn at "
        "random (median share over the pairs' runs):",
    )  # fmt: skip
    lines += _per_ground_lines(
        by, paired, grounds, (a, b), _source_cell,
        "kept models chosen by the search / kept from a zero-cost anchor:",
    )  # fmt: skip
    if crossed:
        where = ", ".join(f"{g} seed {s}" for g, s in crossed)
        lines.append(
            "pairs whose two runs predicted costs with different cost tables (another machine "
            "or table: their screenings differ; each is two independent runs of the seed): "
            + ("left out (--same-cost-table): " if same_table else "")
            + where
        )
    for r, label in ((rule, "fixed before the runs"), (late_rule, "given after the runs")):
        if r is None:
            continue
        ok, why = r.verdict(per, pooled)
        lines.append(f"rule ({label}): {r.text}")
        lines += [f"  {w}" for w in why]
        lines.append(f"verdict: {'adopt b' if ok else 'keep a'} ({b if ok else a})")
    return "\n".join(lines)


def _per_ground_lines(
    by: Mapping[tuple[str, str, int], dict],
    paired: list[tuple[str, int]],
    grounds: list[str],
    configs: tuple[str, str],
    cell: Callable[[list[dict]], str | None],
    head: str,
) -> list[str]:
    """``head``, then per ground each configuration's ``cell`` of its paired runs
    (``None``: nothing to say for it); no lines where no ground has a cell."""
    out: list[str] = []
    for g in grounds:
        cells = []
        for c in configs:
            text = cell([by[(c, g, s)] for gg, s in paired if gg == g])
            if text is not None:
                cells.append(f"{c} {text}")
        if cells:
            out.append(f"  {g}: {'; '.join(cells)}")
    return [head, *out] if out else []


def _proposal_cell(runs: list[dict]) -> str | None:
    """The median share of screened candidates the sampler proposed, mutated from its
    repeats and drew at random (``None``: no run screened)."""
    seen = [p for p in map(proposals, runs) if p is not None and p.scored]
    if not seen:
        return None
    share = {
        k: statistics.median(getattr(p, k) / p.scored for p in seen)
        for k in ("sampler", "mutated", "random")
    }
    return f"{share['sampler']:.0%} / {share['mutated']:.0%} / {share['random']:.0%}"


def _source_cell(runs: list[dict]) -> str | None:
    """How many kept models the search chose and how many a zero-cost anchor (``None``:
    no run recorded it: baselines)."""
    sources = [(r.get("kept_record") or {}).get("source") for r in runs]
    if not any(sources):
        return None
    n = {k: sum(src == k for src in sources) for k in ("search", "anchor")}
    missing = len(sources) - n["search"] - n["anchor"]
    return f"{n['search']} / {n['anchor']}" + (f" ({missing} not recorded)" if missing else "")


def _yes(ok: bool) -> str:
    return "yes" if ok else "no"


def _head(
    runs: list[dict],
    a: str,
    b: str,
    paired: list[tuple[str, int]],
    n_keys: int,
    hv_budget: str,
    tables: Mapping[str, GroundTable],
    grounds: list[str],
) -> list[str]:
    def describe(name: str) -> str:
        r = next(r for r in runs if r["config"] == name)
        return f"{name} ({r['config_kind']}; overrides {json.dumps(r.get('overrides') or {})})"

    budget = (
        "models ready within the CPU-seconds of the pair's study run (a's where both are)"
        if hv_budget == "study"
        else "every model the run trained"
    )
    clocks = sorted({tables[g].clock for g in grounds})
    return [
        f"b = {describe(b)} against a = {describe(a)}: {len(paired)} pairs on "
        f"{len(grounds)} grounds ({n_keys - len(paired)} ground-seeds with one side only)",
        "differences b - a: mean over the search seeds [90% bootstrap interval, seeds "
        "resampled within the ground; pooled: the mean of the grounds' means, resampled "
        "within each ground]; +/=/-: pairs where b is higher / equal / lower",
        "share and test: the kept model's share of the table beaten and its test accuracy "
        "(measured), in points; HV: hypervolume of test accuracy (measured) against training "
        f"seconds ({', '.join(clocks)}; fine-tuned models' an ESTIMATE) of {budget}, over "
        "the table's own (reference: its lowest mean test accuracy, 1.1 x its largest "
        "mean training seconds)",
    ]


def _cell(s: Summary | None, scale: float, fmt: str) -> tuple[str, str]:
    if s is None:
        return "—", "—"
    lo = "—" if s.low != s.low else f"{scale * s.low:{fmt}}"
    hi = "—" if s.high != s.high else f"{scale * s.high:{fmt}}"
    return f"{scale * s.mean:{fmt}} [{lo}, {hi}]", f"{s.better}/{s.equal}/{s.worse}"


def _table(
    per: Mapping[str, Mapping[str, Summary]],
    pooled: Mapping[str, Summary | None],
    grounds: list[str],
    cpu: Mapping[str, tuple[list[float], list[float]]],
    tables: Mapping[str, GroundTable],
) -> list[str]:
    scales = {"share": (100.0, "+.1f"), "test": (100.0, "+.2f"), "hv": (1.0, "+.3f")}
    out = [
        "| ground | table archs | pairs | share b-a (pts) | +/=/- | test b-a (pts) | +/=/- "
        "| HV b-a | +/=/- | run CPU-s a / b (median) |",
        "|---|---:|---:|---|---|---|---|---|---|---:|",
    ]
    for g in grounds:
        cells = [c for m in METRICS for c in _cell(per[m].get(g), *scales[m])]
        ca, cb = (sorted(v)[len(v) // 2] for v in cpu[g])
        out.append(
            f"| {g} | {len(tables[g].test)} | {len(cpu[g][0])} | {' | '.join(cells)} "
            f"| {ca:.0f} / {cb:.0f} |"
        )
    cells = [c for m in METRICS for c in _cell(pooled[m], *scales[m])]
    n = pooled["share"].n if pooled["share"] is not None else 0
    out.append(f"| pooled (stratified) | | {n} | {' | '.join(cells)} | |")
    return out


# ---------------------------------------------------------------------------- main
def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--a", help="configuration a: NAME or NAME=JSON (or largest, ladder)")
    p.add_argument("--b", help="configuration b (the one the rule would adopt)")
    p.add_argument("--set", default="{}", help="JSON overrides applied to both first")
    p.add_argument("--grounds", type=Path, nargs="+", help="study files (default: every one)")
    p.add_argument("--seeds", type=int, nargs="+", help="search seeds (default 0-5)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per run")
    p.add_argument("--json", type=Path, help="append every run here (JSON lines)")
    p.add_argument("--skip-done", action="store_true", help="skip runs already in --json")
    p.add_argument("--rule", help=f"the decision rule, or one of {', '.join(PRESETS)}")
    p.add_argument("--hv-budget", choices=("study", "none"), help="default: study")
    p.add_argument("--from-json", type=Path, nargs="+", help="report these runs only")
    p.add_argument(
        "--alias",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="with --from-json: read configuration OLD's runs as NEW's (a configuration "
        "adopted since, now the shipped one); of two runs of one configuration, ground and "
        "seed, the first file's counts",
    )
    p.add_argument("--n-resamples", type=int, default=N_RESAMPLES)
    p.add_argument("--quick", action="store_true", help="smoke size: 1 ground, 2 seeds")
    p.add_argument(
        "--same-cost-table",
        action="store_true",
        help="report only pairs whose two runs predicted costs with one cost table",
    )
    p.add_argument(
        "--only",
        choices=("a", "b"),
        help="run one side only: the other's rows come from another file given to "
        "--from-json with this one (a deterministic configuration run by another "
        "comparison on the same grounds and seeds, on this machine: another VM trains "
        "differently, run 22; the header says so)",
    )
    args = p.parse_args(argv)
    args.error = p.error
    return args


def _tables(runs: list[dict]) -> dict[str, GroundTable]:
    out = {}
    for r in runs:
        if r["name"] not in out:
            out[r["name"]] = ground_table(load_study_file(_study_path(r["study"])))
    return out


def _study_path(study: str) -> Path:
    path = Path(study)
    return path if path.exists() or path.is_absolute() else ROOT / path


def ground_table(spec: StudySpec) -> GroundTable:
    return GroundTable.from_files(spec.name, [Path(p) for p in spec.baseline])


def _report_only(args: argparse.Namespace) -> int:
    headers, runs = load_rows(args.from_json)
    runs = aliased(runs, args.alias)
    head = headers[0] if headers else {}
    a = parse_config(args.a).name if args.a else (head.get("a") or {}).get("name")
    b = parse_config(args.b).name if args.b else (head.get("b") or {}).get("name")
    if not a or not b:
        args.error("--from-json without a header needs --a and --b (the names to pair)")
    fixed = head.get("rule")
    rule = parse_rule(fixed or args.rule or "adopt")
    late = parse_rule(args.rule) if fixed and args.rule else None
    if late is not None and late.text == rule.text:
        late = None
    budget = args.hv_budget or head.get("hv_budget") or "study"
    print(report(runs, a, b, _tables(runs), rule, budget, args.n_resamples, late,
                 args.same_cost_table))  # fmt: skip
    return 0


class Plan(NamedTuple):
    """A run of the instrument, checked before anything trains."""

    a: Config
    b: Config
    rule: Rule
    hv_budget: str
    grounds: list[Path]
    seeds: list[int]
    specs: dict[tuple[str, Path], StudySpec]
    tables: dict[str, GroundTable]
    header: dict[str, Any]
    done: set[tuple[str, str, int]] | None


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    try:
        if args.from_json:
            return _report_only(args)
        plan = _prepare(args, sys.argv[1:] if argv is None else argv)
    except (OverrideError, RuleError, NasflowError, ValueError) as e:
        args.error(str(e))
    _execute(plan, args)
    return 0


def _prepare(args: argparse.Namespace, argv: list[str]) -> Plan:
    """The plan, with everything checked: the configurations, the rule, the studies and
    their tables, every override on every ground, the ladder's width choice, the file."""
    if args.quick:
        args.a, args.b = args.a or "shipped", args.b or "ladder"
        args.grounds = args.grounds or [Path("studies/mnist1d_front.py")]
        args.seeds = args.seeds or [0, 1]
    if not (args.a and args.b and args.json):
        raise ValueError("a run needs --a, --b and --json (or --from-json FILES to report)")
    a, b = parse_config(args.a), parse_config(args.b)
    if a.name == b.name:
        raise ValueError(f"configurations a and b are both named {a.name!r}")
    seeds = args.seeds if args.seeds is not None else list(range(6))
    if any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds must be distinct search seeds >= 0, got {seeds}")
    if args.threads < 1 or args.n_resamples < 1:
        raise ValueError("--threads and --n-resamples must be >= 1")
    base = parse_config(f"set={args.set}").overrides
    if args.quick:
        base = {**QUICK_SET, **base}
    rule = parse_rule(args.rule or "adopt")
    budget = args.hv_budget or "study"
    grounds = args.grounds or [Path(g) for g in GROUNDS if (ROOT / g).is_file()]
    specs: dict[tuple[str, Path], StudySpec] = {}
    tables = {}
    for path in grounds:
        spec = load_study_file(_study_path(str(path)))
        tables[spec.name] = ground_table(spec)
        for c in (a, b):
            specs[(c.name, path)] = apply_overrides(apply_overrides(spec, base), c.overrides)
            if c.kind == "ladder":
                ladder(spec.space)
    header = {
        "kind": "header",
        "command": shlex.join(["python", "benchmarks/paired.py", *argv]),
        "a": a.to_dict(),
        "b": b.to_dict(),
        "set": dict(base),
        "rule": rule.text,
        "hv_budget": budget,
        "grounds": [str(g) for g in grounds],
        "seeds": seeds,
        "threads": args.threads,
        "only": args.only,
        "commit": _commit(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "baselines": {k: BASELINES[k] for k in sorted({a.kind, b.kind} & set(BASELINES))},
    }
    done = check_header(args.json, header, args.skip_done)
    return Plan(a, b, rule, budget, grounds, seeds, specs, tables, header, done)


def _execute(plan: Plan, args: argparse.Namespace) -> None:
    """Run the plan: a and b interleaved per (seed, ground), alternating which goes first,
    each run appended as it ends; then the report of every run in the file."""
    if plan.done is None:
        _append(args.json, plan.header)
    done = plan.done or set()
    torch.set_num_threads(args.threads)
    pairs = [(s, g) for s in plan.seeds for g in plan.grounds]
    skip = {"a": plan.b.name, "b": plan.a.name}.get(args.only or "")
    for i, (seed, path) in enumerate(pairs):
        for c in (plan.a, plan.b) if i % 2 == 0 else (plan.b, plan.a):
            spec = plan.specs[(c.name, path)]
            if (c.name, spec.name, seed) in done or c.name == skip:
                continue
            row = run_config(c, path, spec, seed)
            _append(args.json, row)
            v = run_values(row, plan.tables[spec.name], row["run_cpu_s"])
            test = "—" if v["test"] is None else f"{v['test']:.4f}"
            share = "—" if v["share"] is None else f"{v['share']:.0%}"
            print(
                f"{spec.name} seed {seed} {c.name}: kept model test {test} (measured), beats "
                f"{share} of the table; {len(row['trained'])} models trained, their HV "
                f"{v['hv']:.3f} of the table's; run {row['run_cpu_s']:.0f} CPU-s",
                flush=True,
            )
    _, runs = load_rows([args.json])
    if skip is not None:
        print(
            f"{args.json} holds {args.only}'s runs only ({skip}'s are in another file); "
            f"report with --from-json {args.json} OTHER"
        )
        return
    missing = [r for r in runs if r["name"] not in plan.tables]
    tables = {**_tables(missing), **plan.tables}
    print(report(runs, plan.a.name, plan.b.name, tables, plan.rule, plan.hv_budget,
                 args.n_resamples, same_table=args.same_cost_table))  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
