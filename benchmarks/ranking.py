"""B2: supernet ranking — does supernet accuracy rank architectures like stand-alone training?

For each seed, two supernets of the default MNIST-1D space are trained at *equal compute*
(the same number of path forward/backward passes): strictly fair sampling (``M`` paths per
step) for ``E`` epochs, and uniform single-path sampling (SPOS) for ``E * M`` epochs. Every
architecture of the ground-truth sample (``benchmarks/ground_truth.py``) is then scored the
way search scores it — BN statistics re-estimated on training batches, accuracy on the
validation split — and compared with its stand-alone accuracy: Kendall tau-b and the overlap
of the top-5 sets.

Usage::

    python benchmarks/ranking.py --seeds 0 1 2            # full (about 15 min on 2 cores)
    python benchmarks/ranking.py --quick                  # CI smoke size
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch
from scipy.stats import kendalltau

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nasflow.space import Arch  # noqa: E402
from nasflow.supernet import recalibrate_bn  # noqa: E402
from nasflow.train import Batches, SupernetTrainer, evaluate  # noqa: E402
from studies.mnist1d import study  # noqa: E402

GT = ROOT / "benchmarks/data/mnist1d_ground_truth.csv"


def load_ground_truth(path: Path, limit: int | None) -> list[tuple[Arch, float, float]]:
    """``(arch, stand-alone val accuracy, stand-alone test accuracy)`` rows."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"{path} holds no rows; run benchmarks/ground_truth.py first")
    out = [
        (Arch.from_json(r["arch"]), float(r["val_accuracy"]), float(r["test_accuracy"]))
        for r in rows
    ]
    return out[:limit] if limit else out


def top_overlap(a: list[float], b: list[float], k: int = 5) -> int:
    """How many of the ``k`` best by ``a`` are among the ``k`` best by ``b``."""
    top_a = set(sorted(range(len(a)), key=lambda i: -a[i])[:k])
    top_b = set(sorted(range(len(b)), key=lambda i: -b[i])[:k])
    return len(top_a & top_b)


def supernet_scores(sampler: str, epochs: int, seed: int, archs: list[Arch], data) -> dict:
    """Train one supernet and score every arch; returns scores and costs."""
    cfg = replace(
        study.supernet,
        sampler=sampler,
        epochs=epochs,
        seed=seed,
        warmup_epochs=study.supernet.warmup_epochs * epochs / study.supernet.epochs,
    )
    trainer = SupernetTrainer(study.space, data.train, cfg)
    t0 = time.perf_counter()
    result = trainer.fit()
    train_s = time.perf_counter() - t0
    passes = epochs * len(trainer.batches) * trainer.sampler.paths_per_step
    train = Batches(data.train, study.train.batch_size, seed=seed, drop_last=True)
    val = Batches(data.val, 512, shuffle=False)
    scores, t1 = [], time.perf_counter()
    for arch in archs:
        net = result.supernet.extract(study.space.path(arch))
        recalibrate_bn(net, train.epoch(0), study.bn_batches)
        scores.append(evaluate(net, val)[0])
    return {
        "scores": scores,
        "train_seconds": train_s,
        "eval_seconds": time.perf_counter() - t1,
        "path_passes": passes,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="supernet ranking: fair vs uniform")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--epochs", type=int, default=study.supernet.epochs, help="fair epochs")
    p.add_argument("--gt", type=Path, default=GT)
    p.add_argument("--limit", type=int, help="use only the first N ground-truth archs")
    p.add_argument("--quick", action="store_true", help="smoke size: 1 seed, 1 epoch, 8 archs")
    p.add_argument("--json", type=Path, help="write the results here")
    args = p.parse_args(argv)
    if args.quick:
        args.seeds, args.epochs, args.limit = [0], 1, args.limit or 8
    torch.set_num_threads(1)
    rows = load_ground_truth(args.gt, args.limit)
    archs = [a for a, _, _ in rows]
    sa_val = [v for _, v, _ in rows]
    sa_test = [t for _, _, t in rows]
    data = study.data()
    m = max(len(c.values) for c in study.space.path_choices)
    results: dict[str, list[dict]] = {"fair": [], "uniform": []}
    for seed in args.seeds:
        for sampler, epochs in (("fair", args.epochs), ("uniform", args.epochs * m)):
            r = supernet_scores(sampler, epochs, seed, archs, data)
            r["seed"] = seed
            r["tau_test"] = float(kendalltau(r["scores"], sa_test).statistic)
            r["tau_val"] = float(kendalltau(r["scores"], sa_val).statistic)
            r["top5"] = top_overlap(r["scores"], sa_test)
            results[sampler].append(r)
            print(
                f"seed {seed} {sampler:7s} epochs {epochs:3d} passes {r['path_passes']:6d} "
                f"train {r['train_seconds']:6.1f}s  tau(test) {r['tau_test']:+.3f} "
                f"tau(val) {r['tau_val']:+.3f}  top-5 overlap {r['top5']}/5",
                flush=True,
            )
    noise = float(kendalltau(sa_val, sa_test).statistic)
    print(f"\n{len(archs)} architectures; stand-alone val vs test tau: {noise:+.3f}")
    print("| sampler | epochs | tau vs stand-alone test (mean ± std) | tau vs val | top-5 |")
    print("|---|---|---|---|---|")
    for sampler, rs in results.items():
        taus = [r["tau_test"] for r in rs]
        sd = statistics.stdev(taus) if len(taus) > 1 else 0.0
        print(
            f"| {sampler} | {args.epochs if sampler == 'fair' else args.epochs * m} "
            f"| {statistics.mean(taus):+.3f} ± {sd:.3f} "
            f"| {statistics.mean(r['tau_val'] for r in rs):+.3f} "
            f"| {statistics.mean(r['top5'] for r in rs):.1f}/5 |"
        )
    if args.json:
        args.json.write_text(json.dumps({"noise_tau": noise, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
