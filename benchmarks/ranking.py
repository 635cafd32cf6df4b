"""B2: supernet ranking — does supernet accuracy rank architectures like stand-alone training?

For each seed, two supernets of a study's space (``--study``, default the default MNIST-1D
study; ``studies/mnist1d_front.py`` is the proving ground) are trained at *equal compute*
(the same number of path forward/backward passes): strictly fair sampling (``M`` paths per
step) for ``E`` epochs, and uniform single-path sampling (SPOS) for ``E * M`` epochs. Every
architecture of the ground-truth sample (``benchmarks/ground_truth.py``) is then scored the
way search scores it — BN statistics re-estimated on training batches, accuracy on the
validation split — and compared with its stand-alone accuracy: Kendall tau-b, the overlap
of the top-5 sets, and the recall of the true top-10 among the supernet's top-50.

With several ``--gt`` tables (the same architectures trained from different initial
weights, ``ground_truth.py --train-seed``), the stand-alone accuracy is their mean over the
architectures present in all of them, and the τ between two stand-alone trainings of the
same architectures is printed: the ceiling any predictor can reach against one training.
``--bn-batches 0 10 50`` scores every architecture with each number of BN recalibration
batches from the same trained supernet (0: the supernet's own running statistics).

Usage::

    python benchmarks/ranking.py --seeds 0 1 2            # full (about 15 min on 2 cores)
    python benchmarks/ranking.py --gt benchmarks/data/mnist1d_ground_truth.csv \
        benchmarks/data/mnist1d_ground_truth_seed1.csv --bn-batches 0 10 50
    python benchmarks/ranking.py --study studies/mnist1d_front.py --seeds 0 1 2 \
        --gt benchmarks/data/mnist1d_front_ground_truth.csv \
        benchmarks/data/mnist1d_front_ground_truth_seed1.csv --json b2_front.json
    python benchmarks/ranking.py --quick                  # CI smoke size
"""

from __future__ import annotations

import argparse
import copy
import csv
import functools
import itertools
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch
from scipy.stats import kendalltau, rankdata

from nasflow.search import StudySpec, TrustProbe, load_study_file, run_trust_probe
from nasflow.space import Arch
from nasflow.supernet import recalibrate_bn
from nasflow.train import SupernetTrainer
from nasflow.train.stack import Stack

ROOT = Path(__file__).resolve().parents[1]

GT = ROOT / "benchmarks/data/mnist1d_ground_truth.csv"
DEFAULT_STUDY = ROOT / "studies/mnist1d.py"


def load_ground_truth(path: Path, limit: int | None) -> list[tuple[Arch, float, float]]:
    """``(arch, stand-alone val accuracy, stand-alone test accuracy)`` rows."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"{path} holds no rows; run benchmarks/ground_truth.py first")
    rows.sort(key=lambda r: int(r["index"]))
    out = [
        (Arch.from_json(r["arch"]), float(r["val_accuracy"]), float(r["test_accuracy"]))
        for r in rows
    ]
    return out[:limit] if limit else out


def load_params(path: Path, n: int) -> list[float]:
    """The ``params`` column of a ground-truth table (its first ``n`` rows by index)."""
    with path.open(newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["index"]))
    return [float(r["params"]) for r in rows[:n]]


def baseline_lines(
    archs: list[Arch],
    params: list[float],
    sa_test: list[float],
    supernets: list[list[float]],
    retrains: list[tuple[list[float], list[float]]],
) -> list[str]:
    """The zero-cost baselines a supernet has to beat: Kendall tau of the parameter count
    (and of the ``width`` choice, where the space has one) against stand-alone test
    accuracy; then, within each width, the mean tau of the supernet scores, of the
    parameter count and of one retrain against another (the ranking at equal width, where
    capacity says least)."""
    lines = [f"zero-cost baseline: tau(test) by parameter count {tau(params, sa_test):+.3f}"]
    widths = [a.get("width") for a in archs] if all("width" in a for a in archs) else None
    if widths is None:
        return lines
    lines[0] += f", by width {tau(widths, sa_test):+.3f}"
    groups = [
        [i for i, w in enumerate(widths) if w == v]
        for v in sorted(set(widths))  # type: ignore[type-var]
    ]
    groups = [g for g in groups if len(g) > 5]
    if not groups:  # a small sample (--quick, --limit): no width holds enough archs
        return lines

    def within(score: list[float], truth: list[float]) -> float:
        return statistics.mean(tau([score[i] for i in g], [truth[i] for i in g]) for g in groups)

    sup = [within(sc, sa_test) for sc in supernets]
    line = (
        f"within each width ({len(groups)} groups of > 5 archs), mean tau(test): "
        f"supernet {', '.join(f'{t:+.3f}' for t in sup)}; "
        f"parameter count {within(params, sa_test):+.3f}"
    )
    if retrains:
        line += "; a retrain vs another " + ", ".join(f"{within(a, b):+.3f}" for a, b in retrains)
    lines.append(line)
    return lines


def merge_ground_truth(
    tables: list[list[tuple[Arch, float, float]]],
) -> tuple[list[Arch], list[float], list[float]]:
    """Archs present in every table (their common prefix) and their mean val/test accuracy."""
    n = min(len(t) for t in tables)
    for t in tables[1:]:
        for i in range(n):
            if t[i][0] != tables[0][i][0]:
                raise SystemExit(f"ground-truth tables disagree on architecture {i}")
    archs = [a for a, _, _ in tables[0][:n]]
    val = [statistics.mean(t[i][1] for t in tables) for i in range(n)]
    test = [statistics.mean(t[i][2] for t in tables) for i in range(n)]
    return archs, val, test


def top_overlap(a: list[float], b: list[float], k: int = 5) -> int:
    """How many of the ``k`` best by ``a`` are among the ``k`` best by ``b``."""
    top_a = set(sorted(range(len(a)), key=lambda i: -a[i])[:k])
    top_b = set(sorted(range(len(b)), key=lambda i: -b[i])[:k])
    return len(top_a & top_b)


def top_recall(score: list[float], truth: list[float], k: int = 10, m: int = 50) -> int:
    """How many of the ``k`` best by ``truth`` are among the ``m`` best by ``score``."""
    top_true = set(sorted(range(len(truth)), key=lambda i: -truth[i])[:k])
    top_score = set(sorted(range(len(score)), key=lambda i: -score[i])[:m])
    return len(top_true & top_score)


def _frozen_bn_supernet(space) -> torch.nn.Module:
    """``space``'s supernet with every batch norm's affine parameters frozen at 1 and 0."""
    net = space.supernet()
    for m in net.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.affine:
            m.weight.requires_grad_(False)
            m.bias.requires_grad_(False)
    return net


def supernet_scores(
    study: StudySpec,
    sampler: str,
    epochs: int,
    seed: int,
    archs: list[Arch],
    data,
    bn_batches: list[int],
    lr: float | None = None,
    probe: TrustProbe | None = None,
    stack: Stack | None = None,
    weight_decay: float | None = None,
    frozen_bn_affine: bool = False,
    split: str | None = None,
    split_from: float = 0.0,
) -> dict:
    """Train one supernet and score every arch with each BN recalibration size; with
    ``probe``, also run the study's trust probe on the scored sample (at the first BN
    size) and record its tau and interval. ``stack``: the speedup stack the supernet trains
    through (``None``: plain fp32 eager, as ``Stack()``). ``weight_decay`` replaces the
    study's supernet weight decay (every parameter); ``frozen_bn_affine`` keeps every batch
    norm's scale and shift at their initial 1 and 0 (a non-affine BN, as DARTS and
    NAS-Bench-201's supernets use). ``split``: the label the supernet is split on
    (few-shot; ``"none"``: no split, ``None``: the study's), from the ``split_from``
    fraction of the epochs."""
    cfg = replace(
        study.supernet,
        sampler=sampler,
        epochs=epochs,
        seed=seed,
        warmup_epochs=study.supernet.warmup_epochs * epochs / study.supernet.epochs,
        lr=study.supernet.lr if lr is None else lr,
        weight_decay=study.supernet.weight_decay if weight_decay is None else weight_decay,
        split=study.supernet.split if split is None else None if split == "none" else split,
        split_from=study.supernet.split_from if split is None else split_from,
    )
    space = study.space
    if frozen_bn_affine:
        space = copy.copy(space)
        space.supernet = functools.partial(_frozen_bn_supernet, study.space)
    trainer = SupernetTrainer(space, data.train, cfg, stack=stack)
    t0 = time.perf_counter()
    result = trainer.fit()
    train_s = time.perf_counter() - t0
    passes = epochs * len(trainer.batches) * trainer.sampler.paths_per_step
    train = data.batches("train", study.train.batch_size, seed)
    val = data.batches("val")
    scores: dict[int, list[float]] = {n: [] for n in bn_batches}
    loss_scores: dict[int, list[float]] = {n: [] for n in bn_batches}
    soft_scores: dict[int, list[float]] = {n: [] for n in bn_batches}
    # The same BN batches for every path, augmented once (where the data augments):
    # the others draw a new augmentation per path.
    fixed = list(itertools.islice(train.epoch(0), max(bn_batches)))
    fixed_scores: dict[int, list[float]] = {n: [] for n in bn_batches if n}
    t1 = time.perf_counter()
    for arch in archs:
        for n in bn_batches:
            net = result.supernet.extract(study.space.path(arch))
            if n:
                recalibrate_bn(net, train.epoch(0), n)
            acc, loss, soft = three_scores(net, val)
            scores[n].append(acc)
            loss_scores[n].append(-loss)  # higher is better, as accuracy
            soft_scores[n].append(soft)
            if n:
                recalibrate_bn(net, fixed, n)
                fixed_scores[n].append(three_scores(net, val)[0])
    out = {
        "scores": scores,
        "loss_scores": loss_scores,
        "soft_scores": soft_scores,
        "fixed_bn_scores": fixed_scores,
        "train_seconds": train_s,
        "eval_seconds": time.perf_counter() - t1,
        "path_passes": passes,
    }
    if probe is not None:
        res = run_trust_probe(
            study.space,
            list(zip(archs, scores[bn_batches[0]], strict=True)),
            train,
            val,
            study.train,
            probe,
            seed=seed,
        )
        out["probe"] = {"tau": res.tau, "low": res.low, "high": res.high, "seconds": res.seconds}
    return out


@torch.no_grad()
def three_scores(net: torch.nn.Module, val) -> tuple[float, float, float]:
    """Validation accuracy, mean cross-entropy, and mean probability of the true class
    (the accuracy of a classifier that samples its softmax: continuous, fewer ties)."""
    net.eval()
    correct, total, loss_sum, p_sum = 0, 0, 0.0, 0.0
    for x, y in val.epoch(0):
        logits = net(x)
        logp = torch.log_softmax(logits, -1)
        loss_sum += float(-logp.gather(1, y[:, None]).sum())
        p_sum += float(logp.gather(1, y[:, None]).exp().sum())
        correct += int((logits.argmax(-1) == y).sum())
        total += y.numel()
    return correct / total, loss_sum / total, p_sum / total


def main(argv: list[str] | None = None) -> int:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--study", type=Path, default=DEFAULT_STUDY)
    study = load_study_file(pre.parse_known_args(argv)[0].study)
    p = argparse.ArgumentParser(description="supernet ranking: fair vs uniform")
    p.add_argument("--study", type=Path, default=DEFAULT_STUDY, help="the study file")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--epochs", type=int, default=study.supernet.epochs, help="fair epochs")
    p.add_argument("--gt", type=Path, nargs="+", default=[GT], help="ground-truth table(s)")
    p.add_argument(
        "--bn-batches",
        type=int,
        nargs="+",
        default=[study.bn_batches],
        help="BN recalibration batches to score with (0: none)",
    )
    p.add_argument("--limit", type=int, help="use only the first N ground-truth archs")
    p.add_argument("--lr", type=float, help="supernet learning rate (default: the study's)")
    p.add_argument(
        "--probe",
        type=int,
        default=0,
        help="also run the trust probe with this many archs (0: no probe)",
    )
    p.add_argument("--probe-epochs", type=int, default=3, help="the probe's short recipe")
    p.add_argument(
        "--samplers",
        nargs="+",
        choices=("fair", "uniform"),
        default=["fair", "uniform"],
        help="which supernets to train (uniform at equal compute)",
    )
    p.add_argument(
        "--stack",
        type=json.loads,
        default=None,
        help="train the supernets through this speedup stack, as Stack fields in JSON, e.g. "
        '\'{"amp": "bf16", "accumulation": 2}\' (default: plain fp32 eager)',
    )
    p.add_argument(
        "--weight-decay", type=float, help="supernet weight decay (default: the study's)"
    )
    p.add_argument(
        "--frozen-bn-affine",
        action="store_true",
        help="keep the supernet's batch-norm scale/shift at 1/0 (non-affine BN)",
    )
    p.add_argument(
        "--split",
        metavar="LABEL",
        help="few-shot: one sub-supernet per value of this choice ('none': never split)",
    )
    p.add_argument(
        "--split-from", type=float, default=0.0, help="fraction of epochs trained before it"
    )
    p.add_argument("--quick", action="store_true", help="smoke size: 1 seed, 1 epoch, 8 archs")
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument(
        "--from-json",
        type=Path,
        help="train nothing: score the supernets of this earlier --json against --gt",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.seeds, args.epochs, args.limit = [0], 1, args.limit or 8
    if any(n < 0 for n in args.bn_batches):
        p.error(f"--bn-batches must be >= 0, got {args.bn_batches}")
    try:
        stack = None if args.stack is None else Stack.from_dict(args.stack)
    except (TypeError, ValueError) as e:
        p.error(f"--stack {args.stack!r}: {e}")
    torch.set_num_threads(1)
    tables = [load_ground_truth(path, args.limit) for path in args.gt]
    archs, sa_val, sa_test = merge_ground_truth(tables)
    data = None if args.from_json else study.data()
    m = max(len(c.values) for c in study.space.path_choices)
    results: dict[str, list[dict]] = {"fair": [], "uniform": []}
    runs = []
    if args.from_json:  # the supernets' scores of an earlier run, against these tables
        old = json.loads(args.from_json.read_text())
        args.bn_batches = sorted(
            {int(n) for rs in old["results"].values() if rs for n in rs[0]["scores"]}
        )
        args.epochs = old.get("epochs", args.epochs)
        for sampler, rs in old["results"].items():
            for r in rs:
                for key in ("scores", "loss_scores", "soft_scores", "fixed_bn_scores"):
                    if key in r:
                        r[key] = {int(n): sc[: len(archs)] for n, sc in r[key].items()}
                if len(next(iter(r["scores"].values()))) < len(archs):
                    raise SystemExit(f"{args.from_json} scored fewer archs than the tables hold")
                runs.append((r["seed"], sampler, r["epochs"], r))
    else:
        runs = [
            (seed, sampler, epochs, None)
            for seed in args.seeds
            for sampler, epochs in (("fair", args.epochs), ("uniform", args.epochs * m))
            if sampler in args.samplers
        ]
    for seed, sampler, epochs, r in runs:
        if r is None:
            probe = TrustProbe(args.probe, args.probe_epochs) if args.probe else None
            r = supernet_scores(
                study,
                sampler,
                epochs,
                seed,
                archs,
                data,
                args.bn_batches,
                args.lr,
                probe,
                stack,
                args.weight_decay,
                args.frozen_bn_affine,
                args.split,
                args.split_from,
            )
        r["seed"], r["epochs"] = seed, epochs
        r["tau_test"] = {n: tau(sc, sa_test) for n, sc in r["scores"].items()}
        r["tau_val"] = {n: tau(sc, sa_val) for n, sc in r["scores"].items()}
        r["top5"] = {n: top_overlap(sc, sa_test) for n, sc in r["scores"].items()}
        r["recall10_50"] = {n: top_recall(sc, sa_test) for n, sc in r["scores"].items()}
        # The same paths scored by validation cross-entropy instead of accuracy (a
        # continuous score: fewer ties on a small validation split).
        r["tau_test_loss"] = {
            int(n): tau(sc, sa_test) for n, sc in r.get("loss_scores", {}).items()
        }
        r["tau_test_fixed_bn"] = {
            int(n): tau(sc, sa_test) for n, sc in r.get("fixed_bn_scores", {}).items()
        }
        # Accuracy and cross-entropy together: the sum of the path's two ranks.
        r["tau_test_rank_sum"] = {
            int(n): tau(rankdata(r["scores"][int(n)]) + rankdata(sc), sa_test)
            for n, sc in r.get("loss_scores", {}).items()
        }
        r["tau_test_soft"] = {
            int(n): tau(sc, sa_test) for n, sc in r.get("soft_scores", {}).items()
        }
        results[sampler].append(r)
        for n in args.bn_batches:
            print(
                f"seed {seed} {sampler:7s} epochs {epochs:3d} bn {n:3d} "
                f"passes {r['path_passes']:6d} train {r['train_seconds']:6.1f}s  "
                f"tau(test) {r['tau_test'][n]:+.3f} tau(val) {r['tau_val'][n]:+.3f}  "
                f"top-5 overlap {r['top5'][n]}/5  top-10 in top-50 {r['recall10_50'][n]}/10"
                + (
                    f"  tau(test) by val loss {r['tau_test_loss'][n]:+.3f}"
                    if n in r["tau_test_loss"]
                    else ""
                )
                + (
                    f"  by p(true class) {r['tau_test_soft'][n]:+.3f}"
                    if n in r["tau_test_soft"]
                    else ""
                )
                + (
                    f"  by rank sum (accuracy, loss) {r['tau_test_rank_sum'][n]:+.3f}"
                    if n in r["tau_test_rank_sum"]
                    else ""
                )
                + (
                    f"  fixed BN batches {r['tau_test_fixed_bn'][n]:+.3f}"
                    if n in r["tau_test_fixed_bn"]
                    else ""
                ),
                flush=True,
            )
    probed = [
        (r["probe"], r["tau_test"][args.bn_batches[0]])
        for rs in results.values()
        for r in rs
        if "probe" in r
    ]
    if probed:
        print("\ntrust probe vs the full ground truth (first BN size):")
        for pr, full in probed:
            print(
                f"  probe tau {pr['tau']:+.3f} [{pr['low']:+.3f}, {pr['high']:+.3f}] "
                f"({pr['seconds']:.0f}s)  vs tau on all archs {full:+.3f}"
            )
        inside = sum(pr["low"] <= full <= pr["high"] for pr, full in probed)
        print(f"  the full tau lies inside the probe's interval in {inside}/{len(probed)} runs")
    noise = tau(sa_val, sa_test)
    print(f"\n{len(archs)} architectures; stand-alone val vs test tau: {noise:+.3f}")
    ceilings = [
        tau([t[i][2] for i in range(len(archs))], [u[i][2] for i in range(len(archs))])
        for j, t in enumerate(tables)
        for u in tables[j + 1 :]
    ]
    if ceilings:
        print(
            f"stand-alone test vs a retrain's test tau: {', '.join(f'{c:+.3f}' for c in ceilings)}"
        )
    params = load_params(args.gt[0], len(archs))
    n0 = args.bn_batches[0]
    fair_scores = [r["scores"][n0] for r in results["fair"]]
    test_of = [[row[2] for row in t[: len(archs)]] for t in tables]
    pairs = [(a, b) for j, a in enumerate(test_of) for b in test_of[j + 1 :]]
    for line in baseline_lines(archs, params, sa_test, fair_scores, pairs):
        print(line)
    print(
        "| sampler | epochs | BN batches | tau vs stand-alone test (mean ± std) | tau vs val "
        "| top-5 | true top-10 in top-50 |"
    )
    print("|---|---|---|---|---|---|---|")
    for sampler, rs in results.items():
        if not rs:
            continue
        for n in args.bn_batches:
            taus = [r["tau_test"][n] for r in rs]
            sd = statistics.stdev(taus) if len(taus) > 1 else 0.0
            print(
                f"| {sampler} | {args.epochs if sampler == 'fair' else args.epochs * m} | {n} "
                f"| {statistics.mean(taus):+.3f} ± {sd:.3f} "
                f"| {statistics.mean(r['tau_val'][n] for r in rs):+.3f} "
                f"| {statistics.mean(r['top5'][n] for r in rs):.1f}/5 "
                f"| {statistics.mean(r['recall10_50'][n] for r in rs):.1f}/10 |"
            )
    if args.json:
        record = {
            "archs": len(archs),
            "epochs": args.epochs,
            "lr": args.lr,
            "stack": args.stack,
            "weight_decay": args.weight_decay,
            "frozen_bn_affine": args.frozen_bn_affine,
            "split": args.split,
            "split_from": args.split_from,
            "noise_tau": noise,
            "retrain_tau": ceilings,
        }
        args.json.write_text(json.dumps({**record, "results": results}, indent=1))
    return 0


def tau(a: list[float], b: list[float]) -> float:
    """Kendall tau-b (ties in both lists are common: accuracies on a 400/1000-sample split)."""
    return float(kendalltau(a, b).statistic)


if __name__ == "__main__":
    sys.exit(main())
