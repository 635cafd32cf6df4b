"""B6: the study as shipped, end to end, on every ground of the generalisation suite.

For every study file (the proving ground, ``benchmarks/suite/*.py``) and every search
seed, the study runs exactly as a user would run it (``StudyRunner``, its own supernet,
screening, trust probe, fine-tuning, from-scratch retrain of the kept finalist), in a
temporary folder, in this process. Measured per run:

- the kept model's test accuracy (retrained from scratch with the study's recipe) and the
  share of the ground's random-architecture table (``study.baseline``, the mean of its
  training seeds) whose stand-alone test accuracy it strictly beats;
- the trust probe's tau, interval and verdict, and the tau it estimates: this run's own
  supernet (its last checkpoint) scores every table architecture (BN re-estimated,
  validation split), Kendall tau against the table's test accuracy; "covered" says
  whether the probe's interval holds it;
- the process CPU-seconds of the run, the seconds of each phase and the trust probe's
  share of the run.

Usage::

    python benchmarks/suite_runs.py --studies studies/mnist1d_front.py \\
        benchmarks/suite/*.py --seeds 0 1 2 --json benchmarks/data/b6_runs.jsonl
    python benchmarks/suite_runs.py --from-json benchmarks/data/b6_runs.jsonl --markdown
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from scipy.stats import kendalltau, rankdata

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _trained import kept_model, trained_models
from ranking import load_ground_truth, merge_ground_truth

from nasflow.export._study import load_supernet
from nasflow.pipeline import (
    KEPT_MARGIN_SE,
    StudyRunner,
    full_recipe_choice,
    kept_weights,
    standard_error,
    validation_margin,
)
from nasflow.record import (
    FineTuneResult,
    StudyRecord,
    study_anchors,
    study_finetuned,
    study_kept,
    study_multipliers,
    study_trust,
)
from nasflow.search import Anchors, StudySpec, load_study_file
from nasflow.supernet import recalibrate_bn
from nasflow.train import evaluate
from nasflow.train.stack import Stack

#: The anchor margin (standard errors) the runs recorded before 2026-12-02 were kept under
#: (B8's rule); the pipeline has kept the best full training with no margin since
#: (``benchmarks/results/constants.md``). The replays of recorded rows here, in
#: ``finalists.py`` and in ``margins.py`` use it, so that they reproduce what those runs
#: kept and the pages that quote them stay reproducible.
RECORDED_ANCHOR_MARGIN_SE = 1.0


def beats(value: float, table: list[float]) -> float:
    """Share of the table's architectures strictly below ``value``."""
    return float(np.mean(np.asarray(table) < value))


def supernet_taus(spec, folder: Path, archs, gt_test: list[float]) -> dict[str, float]:
    """Kendall tau of this run's supernet scores of the table's archs against the table:
    by validation accuracy (``"accuracy"``), by cross-entropy (``"loss"``, lower ranks
    higher) and by the rank sum of both (``"rank_sum"``, what ``FineTuning.rank_by``
    names)."""
    supernet, _ = load_supernet(spec.space, folder)
    data = spec.data()
    train, val = data.batches("train", spec.train.batch_size, spec.seed), data.batches("val")
    accuracy, loss = [], []
    for arch in archs:
        net = supernet.extract(spec.space.path(arch))
        recalibrate_bn(net, train.epoch(0), spec.bn_batches)
        acc, ce = evaluate(net, val)
        accuracy.append(acc)
        loss.append(ce)
    return score_taus(accuracy, loss, gt_test)


def score_taus(accuracy: list[float], loss: list[float], gt_test: list[float]) -> dict[str, float]:
    """Kendall tau against ``gt_test`` of paths' validation accuracies, of their
    cross-entropies (lower ranks higher) and of the rank sum of both."""
    higher = [-v for v in loss]
    both = rankdata(accuracy) + rankdata(higher)
    return {
        name: float(kendalltau(s, gt_test).statistic)
        for name, s in (("accuracy", accuracy), ("loss", higher), ("rank_sum", both))
    }


def portable(line: str, runs: str) -> str:
    """A summary line as a stored row keeps it: the run's temporary folder as ``RUNS`` and
    the home folder (the default cache's) as ``~``, so rows name no machine's paths."""
    home = str(Path.home())
    line = line.replace(runs, "RUNS")
    return line.replace(home + "/", "~/") if home != "/" else line


def run_one(
    path: Path,
    seed: int,
    n_trials: int | None = None,
    sampler: str | None = None,
    rank_by: str | None = None,
    anchors: int | None = None,
    split: str | None = None,
    split_from: float | None = None,
    stack: dict | None = None,
    spec: StudySpec | None = None,
    score_table: bool = True,
) -> dict:
    """One search seed of one study, end to end (``n_trials`` candidates screened,
    default the study's; ``sampler`` replaces the study's; ``rank_by`` its
    ``FineTuning.rank_by``; ``anchors`` its zero-cost anchors, 0 for none; ``split`` and
    ``split_from`` its supernet's few-shot split, ``"none"`` for none; ``stack``, Stack
    fields, a fixed speedup stack instead of the study's, so that no calibration made
    under the benchmark's own load decides it; ``spec``, the study to run instead of the
    file's, already changed; ``score_table=False`` skips scoring the table with the
    run's supernet: its taus are NaN); the measured row, with every model the run
    trained and the one it kept (``_trained.py``)."""
    spec = (load_study_file(path) if spec is None else spec).replace(seed=seed)
    if split is not None or split_from is not None:
        label = spec.supernet.split if split is None else None if split == "none" else split
        spec = spec.replace(
            supernet=dataclasses.replace(
                spec.supernet,
                split=label,
                split_from=spec.supernet.split_from if split_from is None else split_from,
            )
        )
    if stack is not None:
        spec = spec.replace(stack=Stack.from_dict(stack))
    if anchors is not None:
        spec = spec.replace(anchors=Anchors(n=anchors) if anchors else None)
    if sampler is not None:
        spec = spec.replace(sampler=sampler)
    if rank_by is not None and spec.finetuning is not None:
        spec = spec.replace(finetuning=dataclasses.replace(spec.finetuning, rank_by=rank_by))
    tables = [load_ground_truth(Path(p), None) for p in spec.baseline]
    archs, _, gt_test = merge_ground_truth(tables)
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        c0, w0 = time.process_time(), time.perf_counter()
        runner = StudyRunner(
            spec, out_dir=Path(tmp), progress=False, log=lambda x: lines.append(portable(x, tmp))
        )
        result = runner.run(n_trials=n_trials)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        trust = study_trust(result.study)
        taus = (
            supernet_taus(spec, Path(tmp) / spec.name / "supernet", archs, gt_test)
            if score_table
            else dict.fromkeys(("accuracy", "loss", "rank_sum"), float("nan"))
        )
    kept = search_choice(result)
    anchors = study_anchors(result.study)
    # (``Study.trials`` deep-copies every trial on each access: read them once.)
    trials = result.study.get_trials(deepcopy=False)
    score = trials[kept.number].values[0]
    row = {
        "study": str(path),
        "name": spec.name,
        "seed": seed,
        "n_trials": spec.n_trials if n_trials is None else n_trials,
        "sampler": type(result.study.sampler).__name__,
        "rank_by": spec.finetuning.rank_by if spec.finetuning is not None else None,
        "split": spec.supernet.split,
        "split_from": spec.supernet.split_from,
        "table_archs": len(archs),
        "table_median": statistics.median(gt_test),
        # "kept_*": the search's choice (its retrained finalist, ``result.winners[0]``),
        # before the kept-weights and anchor rules; the model the run keeps is
        # ``kept_model`` below (a share read from "kept_beats" misreads a run that kept
        # an anchor or fine-tuned weights; the names stay for the recorded files).
        "kept_trial": kept.number,
        "kept_test": kept.test_accuracy,
        "kept_val": kept.val_accuracy,
        "kept_beats": beats(kept.test_accuracy, gt_test),
        "supernet_tau": taus["accuracy"],
        # The same supernet ranked by cross-entropy and by the rank sum of both.
        "supernet_tau_loss": taus["loss"],
        "supernet_tau_rank_sum": taus["rank_sum"],
        "run_cpu_s": cpu,
        "run_wall_s": wall,
        "phase_seconds": result.seconds,
        "multipliers": _stored(study_multipliers(result.study)),
        "trust": None,
        "summary": lines,
        # What the kept model was chosen from: the fine-tuned finalists' records and the
        # screened candidates' supernet scores (for reading a losing row).
        "finetuned": _stored(study_finetuned(result.study)),
        "pareto": [t.number for t in result.pareto],
        # The run's own record of the model it keeps (trial, weights, search or anchor);
        # :func:`kept` replays the same rule from the records above, for older rows too.
        "kept_record": _stored(study_kept(result.study)),
        "kept_score_rank": 1 + sum(t.values is not None and t.values[0] > score for t in trials),
        # The zero-cost anchors (trained from scratch before the supernet), each with the
        # share of the table its test accuracy beats.
        "anchors": [
            {**a.to_dict(), "beats": beats(a.test_accuracy, gt_test)}
            for a in (anchors.anchors if anchors is not None else ())
            if a.test_accuracy is not None
        ],
        # Every model the run trained (its test accuracy, training seconds, when it was
        # ready) and the model it keeps, read from the study's records.
        "trained": trained_models(result.study, spec.train.epochs, cpu),
        "kept_model": kept_model(result.study),
    }
    if trust is not None:
        row["trust"] = {
            k: trust.to_dict()[k] for k in ("tau", "low", "high", "verdict", "seconds", "epochs")
        }
        covered = trust.low <= taus["accuracy"] <= trust.high
        row["covered"] = bool(covered) if score_table else None
        row["trust_share"] = trust_share(row)
    return row


class _Choice(NamedTuple):
    number: int
    val_accuracy: float
    test_accuracy: float


def search_choice(result: Any) -> _Choice:
    """The search's choice of a finished run (``StudyRunner.run``'s result): its first
    retrained finalist, or, with no retrain by score (the top rung from inherited weights,
    ``retrain_top=0``, and no spread retrains), the best-validating finalist that trained
    the whole recipe, its fine-tuned figures (``full_recipe_choice``, as the pipeline).

    Raises:
        ValueError: The run holds neither (nothing it could keep by search).
    """
    winners = [w for w in result.winners if not w.spread]
    if winners:
        w = winners[0]
        return _Choice(w.number, w.val_accuracy, w.test_accuracy)
    finetuned = study_finetuned(result.study)
    top = None if finetuned is None else full_recipe_choice(finetuned)
    if top is None or top.test_accuracy is None:
        raise ValueError("the run retrained no finalist and fine-tuned none to the recipe")
    return _Choice(top.trial, top.val_accuracy, top.test_accuracy)


def _stored(record: StudyRecord | None) -> dict | None:
    """A study record as the study stores it (``None``: the study holds none)."""
    return None if record is None else record.to_dict()


def trust_share(row: dict) -> float:
    """The trust phase's share of the run's wall time: the whole phase (scoring its pool
    of random architectures from the supernet and fine-tuning the probe's architectures),
    not only the probe's trainings that its record times."""
    seconds = row["phase_seconds"]
    return seconds.get("trust", 0.0) / seconds["total"]


_TABLES: dict[str, list[float]] = {}


def table_test(study: str) -> list[float]:
    """The stand-alone test accuracies (mean over training seeds) of a study's table."""
    if study not in _TABLES:
        spec = load_study_file(Path(study))
        tables = [load_ground_truth(Path(p), None) for p in spec.baseline]
        _TABLES[study] = list(merge_ground_truth(tables)[2])
    return _TABLES[study]


_VAL_SAMPLES: dict[str, int] = {}


def val_samples(study: str) -> int:
    """The size of a study's validation split (for rows recorded before the fine-tuning
    record kept it)."""
    if study not in _VAL_SAMPLES:
        _VAL_SAMPLES[study] = len(load_study_file(Path(study)).data().val)
    return _VAL_SAMPLES[study]


def kept(row: dict) -> tuple[str, float, float]:
    """``(weights, test accuracy, share of the table beaten)`` of the model the study keeps
    under today's rule (what the summary's "kept model" line says): the search's choice
    (:func:`kept_weights_of`), or the best zero-cost anchor where the run trained anchors
    and it validates above that choice by more than ``RECORDED_ANCHOR_MARGIN_SE`` standard errors
    (``nasflow.search.kept_anchor``)."""
    return with_anchors(row, RECORDED_ANCHOR_MARGIN_SE)


def kept_weights_of(row: dict) -> tuple[str, float, float]:
    """``(weights, test accuracy, share of the table beaten)`` of the search's own choice
    under today's rule (``nasflow.search.kept_weights``): the kept finalist's fine-tuned
    weights where they validate above its retrain by the margin, else the retrain. Rows
    recorded before the record kept the validation split's size are replayed with the
    study's split size."""
    record = row.get("finetuned")
    choice = None
    if record:
        result = FineTuneResult.from_dict(record)
        if result.val_samples is None:
            result = dataclasses.replace(result, val_samples=val_samples(row["study"]))
        choice = kept_weights(row["kept_trial"], row["kept_val"], row["kept_test"], result)
    if choice is None or choice.kind == "retrained" or choice.test_accuracy is None:
        return "retrained", row["kept_test"], row["kept_beats"]
    test = choice.test_accuracy
    return "fine-tuned", test, beats(test, table_test(row["study"]))


def replay_agrees(row: dict) -> bool:
    """Whether :func:`kept` (today's rule replayed on the row's records) keeps the model
    the run itself recorded (``nasflow:kept``): same weights, same source, and for the
    search's choice the same trial."""
    record = row["kept_record"]
    weights, _, _ = kept(row)
    if record["source"] == "anchor":
        return weights == "anchor"
    return weights == record["weights"] and record["trial"] == row["kept_trial"]


def with_anchors(row: dict, margin_se: float) -> tuple[str, float, float]:
    """``(weights, test, share beaten)`` when the best zero-cost anchor replaces the kept
    model where it validates above it by more than ``margin_se`` standard errors."""
    weights, test, share = kept_weights_of(row)
    anchors = row.get("anchors") or []
    if not anchors:
        return weights, test, share
    best = max(anchors, key=lambda a: a["val_accuracy"])
    kept_val = row["kept_val"]
    if weights == "fine-tuned":
        record = FineTuneResult.from_dict(row["finetuned"])
        kept_val = next(c.val_accuracy for c in record.ready if c.trial == row["kept_trial"])
    n = (row.get("finetuned") or {}).get("val_samples") or val_samples(row["study"])
    if best["val_accuracy"] > kept_val + margin_se * standard_error(
        best["val_accuracy"], kept_val, n
    ):
        return "anchor", best["test_accuracy"], best["beats"]
    return weights, test, share


def anchor_margins(rows: list[dict], margins: list[float]) -> str:
    """Replay "the best anchor replaces the kept model when it validates higher by more
    than m standard errors" for each margin m: per ground, the median share of the table
    the kept model beats; overall mean, minimum, and how often the anchor was kept."""
    rows = [r for r in rows if r.get("anchors")]
    grounds = sorted({r["name"] for r in rows})
    head = "| rule | runs | anchor kept | mean share | min | " + " | ".join(grounds) + " |"
    lines = [head, "|" + "---|" * (5 + len(grounds))]

    def line(label: str, picks: list[tuple[dict, tuple[str, float, float]]]) -> str:
        shares = [p[1][2] for p in picks]
        per = []
        for g in grounds:
            per.append(f"{statistics.median(p[1][2] for p in picks if p[0]['name'] == g):.0%}")
        n_anchor = sum(p[1][0] == "anchor" for p in picks)
        return (
            f"| {label} | {len(picks)} | {n_anchor} | {statistics.mean(shares):.1%} | "
            f"{min(shares):.0%} | " + " | ".join(per) + " |"
        )

    lines.append(line("search only (no anchor kept)", [(r, kept_weights_of(r)) for r in rows]))
    for m in margins:
        lines.append(line(f"anchor if > {m:g} SE", [(r, with_anchors(r, m)) for r in rows]))
    alone = []
    for r in rows:
        a = max(r["anchors"], key=lambda a: a["val_accuracy"])
        alone.append((r, ("anchor", a["test_accuracy"], a["beats"])))
    lines.append(line("best anchor alone", alone))
    return "\n".join(lines)


def kept_margins(rows: list[dict], margins: list[float]) -> str:
    """Replay the choice between the kept finalist's fine-tuned weights and its retrain on
    measured rows, for several margins (standard errors of a validation accuracy): how
    often each keeps the weights that test lower, and the mean share of the table beaten."""
    out = [
        "| margin (SE) | runs | fine-tuned kept | kept the lower-testing weights "
        "| mean share beaten | min |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for m in margins:
        picks: list[tuple[bool, bool, float]] = []
        for r in rows:
            record = r.get("finetuned")
            if not record:
                continue
            result = FineTuneResult.from_dict(record)
            n = result.val_samples or val_samples(r["study"])
            rec = next((c for c in result.ready if c.trial == r["kept_trial"]), None)
            if rec is None or rec.test_accuracy is None:
                continue
            # One standard error of a validation accuracy, as the study's rule measures it.
            se = validation_margin(rec.val_accuracy, r["kept_val"], n) / KEPT_MARGIN_SE
            use_ft = rec.val_accuracy > r["kept_val"] + m * se
            test = rec.test_accuracy if use_ft else r["kept_test"]
            worse = (
                (rec.test_accuracy < r["kept_test"])
                if use_ft
                else (rec.test_accuracy > r["kept_test"])
            )
            picks.append((use_ft, worse, beats(test, table_test(r["study"]))))
        shares = [s for _, _, s in picks]
        out.append(
            f"| {m:g} | {len(picks)} | {sum(u for u, _, _ in picks)} "
            f"| {sum(w for _, w, _ in picks)} | {statistics.mean(shares):.1%} "
            f"| {min(shares):.0%} |"
        )
    return "\n".join(out)


def markdown(rows: list[dict]) -> str:
    out = [
        "| ground | seed | retrained test | table median | retrained beats | kept weights "
        "| kept test | kept beats | supernet τ (table) | probe τ [interval] | covered | verdict "
        "| trust share | run CPU-s | run wall s |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---|---|---|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (r["name"], r["seed"])):
        t = r.get("trust")
        probe = f"{t['tau']:+.2f} [{t['low']:+.2f}, {t['high']:+.2f}]" if t else "—"
        verdict = t["verdict"].split(":")[0] if t else "—"
        kind, test, share = kept(r)
        out.append(
            f"| {r['name']} | {r['seed']} | {r['kept_test']:.1%} | {r['table_median']:.1%} "
            f"| {r['kept_beats']:.0%} | {kind} | {test:.1%} | {share:.0%} "
            f"| {r['supernet_tau']:+.2f} | {probe} "
            f"| {'yes' if r.get('covered') else 'no'} | {verdict} "
            f"| {trust_share(r):.0%} | {r['run_cpu_s']:.0f} | {r['run_wall_s']:.0f} |"
        )
    return "\n".join(out)


def summary(rows: list[dict]) -> str:
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["name"], []).append(r)
    lines = [
        "per ground: median share of the table beaten by the retrained finalist / by the kept "
        "weights (seeds)"
    ]
    for name, rs in by.items():
        shares = [r["kept_beats"] for r in rs]
        kept_shares = [kept(r)[2] for r in rs]
        lines.append(
            f"  {name}: {statistics.median(shares):.0%} "
            f"({', '.join(f'{s:.0%}' for s in shares)}) / "
            f"{statistics.median(kept_shares):.0%} "
            f"({', '.join(f'{s:.0%}' for s in kept_shares)}); {len(rs)} seeds"
        )
        taus = {k: [r[k] for r in rs if k in r] for k in ("supernet_tau", "supernet_tau_rank_sum")}
        if taus["supernet_tau_rank_sum"]:
            lines.append(
                "    supernet tau (table), by accuracy / by the rank sum of accuracy and "
                f"cross-entropy: {statistics.mean(taus['supernet_tau']):+.3f} / "
                f"{statistics.mean(taus['supernet_tau_rank_sum']):+.3f} (mean)"
            )
    recorded = [r for r in rows if r.get("kept_record")]
    if recorded:
        agree = sum(replay_agrees(r) for r in recorded)
        lines.append(
            f"kept record: the replayed rule keeps what the run itself recorded in {agree} of "
            f"{len(recorded)} runs"
        )
    probed = [r for r in rows if r.get("trust")]
    if probed:
        n = sum(r["covered"] for r in probed)
        lines.append(f"trust coverage: {n}/{len(probed)} runs hold their supernet's table tau")
        shares = [trust_share(r) for r in probed]
        lines.append(
            f"trust share of the run: median {statistics.median(shares):.0%}, "
            f"max {max(shares):.0%}"
        )
    return "\n".join(lines)


#: Issue 24's and 25's bars on the kept model's share of the table (per ground, the median
#: over the search seeds): 90% on the two proving grounds, 80% on every suite variant.
BARS = {"mnist1d_front": 0.9, "cifar10_cpu": 0.9}
DEFAULT_BAR = 0.8


def load_rows(files: list[Path]) -> list[dict]:
    """The runs of these JSON-lines files, in order."""
    rows: list[dict] = []
    for f in files:
        rows += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return rows


def paired(base: list[dict], other: list[dict], labels: tuple[str, str]) -> str:
    """Pair two batches' runs by (ground, search seed) and compare the models they keep
    (:func:`kept`): the mean share of the table beaten over the pairs, how many pairs are
    better / worse / equal, and per ground the median share and whether it meets its bar
    (``BARS``). Runs without a partner are left out (and counted)."""
    a = {(r["name"], r["seed"]): r for r in base}
    b = {(r["name"], r["seed"]): r for r in other}
    keys = sorted(set(a) & set(b))
    if not keys:
        raise ValueError("the two batches share no (ground, seed) pair")
    share = {k: (kept(a[k])[2], kept(b[k])[2]) for k in keys}
    better = sum(y > x for x, y in share.values())
    worse = sum(y < x for x, y in share.values())
    lines = [
        f"{len(keys)} pairs ({len(a) - len(keys)} + {len(b) - len(keys)} runs unpaired); "
        f"mean share beaten: {labels[0]} {statistics.mean(x for x, _ in share.values()):.1%}, "
        f"{labels[1]} {statistics.mean(y for _, y in share.values()):.1%}; "
        f"{labels[1]} better in {better}, worse in {worse}, equal in "
        f"{len(keys) - better - worse}",
        f"| ground | bar | {labels[0]}: median (seeds) | {labels[1]}: median (seeds) |",
        "|---|---:|---|---|",
    ]
    met = [0, 0]
    for g in sorted({k[0] for k in keys}):
        bar = BARS.get(g, DEFAULT_BAR)
        cells = []
        for i in (0, 1):
            v = [share[k][i] for k in keys if k[0] == g]
            ok = statistics.median(v) >= bar - 1e-9
            met[i] += ok
            seeds = ", ".join(f"{x:.0%}" for x in v)
            cells.append(f"{statistics.median(v):.0%}{'' if ok else ' (missed)'} ({seeds})")
        lines.append(f"| {g} | {bar:.0%} | {cells[0]} | {cells[1]} |")
    lines.append(f"bars met: {labels[0]} {met[0]}, {labels[1]} {met[1]}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--studies", type=Path, nargs="+", default=[])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--n-trials", type=int, help="candidates screened (default: the study's)")
    p.add_argument("--sampler", help="StudySpec.sampler for every run (default: the study's)")
    p.add_argument("--rank-by", help="FineTuning.rank_by for every run (default: the study's)")
    p.add_argument("--json", type=Path, help="append every run here (JSON lines)")
    p.add_argument("--from-json", type=Path, nargs="+", help="report these runs only")
    p.add_argument("--markdown", action="store_true")
    p.add_argument(
        "--kept-margins",
        type=float,
        nargs="+",
        help="replay the fine-tuned-or-retrained choice with these margins (standard errors)",
    )
    p.add_argument(
        "--anchor-margins",
        type=float,
        nargs="+",
        help="replay keeping the best zero-cost anchor when it validates higher by these "
        "margins (standard errors)",
    )
    p.add_argument("--anchors", type=int, help="zero-cost anchors per run (0: none)")
    p.add_argument("--split", help="the supernet's few-shot split label ('none': no split)")
    p.add_argument("--split-from", type=float, help="fraction of supernet epochs before it")
    p.add_argument(
        "--stack",
        type=json.loads,
        help='a fixed speedup stack for every run, Stack fields in JSON (\'{"amp": "bf16"}\')',
    )
    p.add_argument("--skip-done", action="store_true", help="skip runs already in --json")
    p.add_argument(
        "--paired",
        type=Path,
        nargs="+",
        help="with --from-json: pair these runs with those by (ground, seed) and compare "
        "the kept models",
    )
    args = p.parse_args()
    if args.paired:
        if not args.from_json:
            p.error("--paired compares with the runs of --from-json")
        base, other = load_rows(args.from_json), load_rows(args.paired)
        print(paired(base, other, ("from-json", "paired")))
        return
    torch.set_num_threads(args.threads)
    rows: list[dict] = []
    if args.from_json:
        rows = load_rows(args.from_json)
    else:
        done = set()
        if args.skip_done and args.json and args.json.exists():
            for line in args.json.read_text().splitlines():
                r = json.loads(line)
                # Rows record the rank_by the study used; without --rank-by any matches.
                done.add((r["study"], r["seed"], args.rank_by and r.get("rank_by", "accuracy")))
        for seed in args.seeds:
            for path in args.studies:
                if (str(path), seed, args.rank_by) in done:
                    continue
                row = run_one(
                    path,
                    seed,
                    args.n_trials,
                    args.sampler,
                    args.rank_by,
                    args.anchors,
                    args.split,
                    args.split_from,
                    args.stack,
                )
                rows.append(row)
                if args.json:
                    with args.json.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                print(markdown([row]).splitlines()[-1], flush=True)
    if args.kept_margins:
        print(kept_margins(rows, args.kept_margins))
        return
    if args.anchor_margins:
        print(anchor_margins(rows, args.anchor_margins))
        return
    print(markdown(rows) if args.markdown else summary(rows))


if __name__ == "__main__":
    main()
