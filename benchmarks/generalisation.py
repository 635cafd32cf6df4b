"""B5: the generalisation suite — does the supernet rank, and what fixes it, on data it was
not tuned for?

For every study of the suite (``benchmarks/suite/*.py``, the proving ground, the image
ground) and every seed, one supernet is trained with the study's own recipe, and every
architecture of the study's random-architecture tables (``benchmarks/ground_truth.py``)
is measured the way a study would measure it:

- its supernet score (BN re-estimated on training batches, validation accuracy) after
  every ``--score-every`` supernet epochs: the Kendall tau against stand-alone test
  accuracy per epoch shows whether training longer helps, and the tau between successive
  checkpoints' rankings is the signal a stopping rule can read without a ground truth;
- fine-tuned from its inherited supernet weights for ``--ft-epochs`` epochs through the
  study's recipe (cosine schedule over those epochs): validation accuracy after each epoch,
  test accuracy at the end, CPU-seconds per epoch. Tau of each against the table, and the
  fine-tuned test accuracy against the same architecture trained from scratch.

From the measured rows it then replays, without training anything more:

- **trust**: ``k`` architectures spread over the supernet's ranking, their fine-tuned
  validation accuracy after ``e`` epochs as the proxy, a bootstrap interval of
  tau(supernet score, proxy) — does it contain the tau the table measures?
- **winner**: the ``K`` best-scored architectures fine-tuned, the one with the best
  fine-tuned validation accuracy kept — which share of the table does its fine-tuned test
  accuracy beat, against keeping the best supernet score?

Usage::

    python benchmarks/generalisation.py --studies benchmarks/suite/noisy.py \\
        studies/mnist1d_front.py --seeds 0 1 --json b5.json
    python benchmarks/generalisation.py --from-json b5.json   # replay only
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from scipy.stats import kendalltau

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ranking import load_ground_truth, load_params, merge_ground_truth

from nasflow.pipeline import bootstrap_tau, spread_over_ranking
from nasflow.search import load_study_file
from nasflow.supernet import recalibrate_bn
from nasflow.train import EpochTrainer, SupernetTrainer, evaluate


def tau(a, b) -> float:
    return float(kendalltau(a, b).statistic)


def score_all(supernet, study, archs, train, val) -> list[float]:
    out = []
    for arch in archs:
        net = supernet.extract(study.space.path(arch))
        recalibrate_bn(net, train.epoch(0), study.bn_batches)
        out.append(evaluate(net, val)[0])
    return out


def measure(
    study_path: Path,
    seed: int,
    ft_epochs: int,
    score_every: int,
    ft_lrs: list[float] | None,
    limit: int,
):
    """Train one supernet, score and fine-tune every table architecture; the raw rows."""
    study = load_study_file(study_path)
    ft_epochs = ft_epochs or study.train.epochs  # 0: the recipe's own epochs
    tables = [load_ground_truth(Path(p), limit) for p in study.baseline]
    archs, gt_val, gt_test = merge_ground_truth(tables)
    data = study.data()
    train = data.batches("train", study.train.batch_size, seed)
    val, test = data.batches("val"), data.batches("test")
    cfg = replace(study.supernet, seed=seed)
    trainer = SupernetTrainer(study.space, data.train, cfg)
    by_epoch: dict[int, list[float]] = {}

    def on_epoch(epoch: int, _loss: float) -> None:
        if epoch % score_every == 0 or epoch == cfg.epochs:
            by_epoch[epoch] = score_all(trainer.supernet, study, archs, train, val)
            trainer.supernet.train()

    c0 = time.process_time()
    result = trainer.fit(on_epoch=on_epoch)
    supernet_cpu = time.process_time() - c0  # includes scoring at the checkpoints
    fine_tuned = {}
    for lr in ft_lrs or [study.train.lr]:
        recipe = replace(
            study.train,
            epochs=ft_epochs,
            warmup_epochs=min(study.train.warmup_epochs, 0.5),
            lr=lr,
        )
        ft_val, ft_test, ft_cpu = [], [], []
        for i, arch in enumerate(archs):
            net = result.supernet.extract(study.space.path(arch))
            recalibrate_bn(net, train.epoch(0), study.bn_batches)
            batches = data.batches("train", recipe.batch_size, seed * 7919 + i)
            ep = EpochTrainer(net, batches, recipe)
            vals, cpus = [], []
            for _ in range(ft_epochs):
                c = time.process_time()
                ep.run_epoch()
                cpus.append(time.process_time() - c)
                vals.append(evaluate(net, val)[0])
            ft_val.append(vals)
            ft_cpu.append(cpus)
            ft_test.append(evaluate(net, test)[0])
        fine_tuned[f"{lr:g}"] = {"ft_val": ft_val, "ft_test": ft_test, "ft_cpu": ft_cpu}
    return {
        "study": str(study_path),
        "seed": seed,
        "n_archs": len(archs),
        "gt_tables": len(tables),
        "gt_val": gt_val,
        "gt_test": gt_test,
        "gt_cpu": [
            float(np.mean([float(r) for r in row]))
            for row in zip(
                *[[_cpu(p, i) for i in range(len(archs))] for p in study.baseline], strict=True
            )
        ],
        "scores_by_epoch": {str(k): v for k, v in by_epoch.items()},
        "supernet_cpu": supernet_cpu,
        "fine_tuned": fine_tuned,
    }


def _cpu(path, i: int) -> float:
    import csv

    with open(path, newline="") as f:
        rows = {int(r["index"]): r for r in csv.DictReader(f)}
    return float(rows[sorted(rows)[i]]["train_cpu_seconds"])


def beats(value: float, table: list[float]) -> float:
    """Share of the table's architectures strictly below ``value``."""
    return float(np.mean(np.asarray(table) < value))


_PARAMS: dict[str, list[float]] = {}


def table_params(run: dict) -> list[float]:
    """Parameter counts of a run's table architectures (its study's first table)."""
    if run["study"] not in _PARAMS:
        table = load_study_file(Path(run["study"])).baseline[0]
        _PARAMS[run["study"]] = load_params(Path(table), run["n_archs"])
    return _PARAMS[run["study"]]


def tuned_lr(run: dict, lr: str) -> str:
    """The peak lr whose fine-tuned rows a run is read at: ``lr``, or where the run was
    fine-tuned at one other lr only (the study's own, no ``--ft-lr``) that one."""
    if "fine_tuned" not in run:  # runs measured before several fine-tuning lrs
        run["fine_tuned"] = {"0.003": {k: run[k] for k in ("ft_val", "ft_test", "ft_cpu")}}
    if lr not in run["fine_tuned"] and len(run["fine_tuned"]) == 1:
        return next(iter(run["fine_tuned"]))
    return lr


def tuned_at(run: dict, lr: str) -> dict:
    """A run's fine-tuned rows (``ft_val``, ``ft_test``, ``ft_cpu``) at :func:`tuned_lr`."""
    return run["fine_tuned"][tuned_lr(run, lr)]


def replay(run: dict, k: int, top: int, proxy_epochs: int, lr: str, boot: int = 1000) -> dict:
    """Trust coverage and winner choice from one run's measured rows (fine-tuned at ``lr``)."""
    run = {**run, **tuned_at(run, lr)}
    gt = run["gt_test"]
    epochs = sorted(int(e) for e in run["scores_by_epoch"])
    scores = run["scores_by_epoch"][str(epochs[-1])]
    # (a run fine-tuned fewer epochs than asked reads its last: the per-run lines only)
    proxy = [v[min(proxy_epochs, len(v)) - 1] for v in run["ft_val"]]
    scored = list(zip(range(len(scores)), scores, strict=True))
    picks = spread_over_ranking(scored, k)
    t, lo, hi = bootstrap_tau([scores[i] for i in picks], [proxy[i] for i in picks], boot, 0)
    true_tau = tau(scores, gt)
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    finalists = order[:top]
    pick = max(finalists, key=lambda i: proxy[i])
    # The zero-cost baseline: the same choice among the largest parameter counts.
    params = table_params(run)
    by_params = sorted(range(len(scores)), key=lambda i: -params[i])[:top]
    pick_params = max(by_params, key=lambda i: proxy[i])
    return {
        "tau_supernet": true_tau,
        "tau_by_epoch": {e: tau(run["scores_by_epoch"][str(e)], gt) for e in epochs},
        "tau_between_checkpoints": [
            tau(run["scores_by_epoch"][str(a)], run["scores_by_epoch"][str(b)])
            for a, b in itertools.pairwise(epochs)
        ],
        "tau_ft": [tau([v[e] for v in run["ft_val"]], gt) for e in range(len(run["ft_val"][0]))],
        "tau_ft_test": tau(run["ft_test"], gt),
        "tau_val_test_table": tau(run["gt_val"], gt),
        "ft_minus_scratch": float(np.mean(np.subtract(run["ft_test"], gt))),
        "ft_cpu_per_epoch": float(np.mean(run["ft_cpu"])),
        "scratch_cpu": float(np.mean(run["gt_cpu"])),
        "probe_tau": t,
        "probe_interval": [lo, hi],
        "covered": bool(lo <= true_tau <= hi),
        "winner_ft_beats": beats(run["ft_test"][pick], gt),
        "winner_scratch_beats": beats(gt[pick], gt),
        "params_winner_scratch_beats": beats(gt[pick_params], gt),
        "top1_supernet_beats": beats(gt[order[0]], gt),
        "top1_supernet_ft_beats": beats(run["ft_test"][order[0]], gt),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--studies", type=Path, nargs="+", default=[])
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument(
        "--ft-epochs",
        type=int,
        default=4,
        help="fine-tuning epochs (0: each study's recipe epochs, the top rung from inherited "
        "weights against the table's trainings from scratch)",
    )
    p.add_argument(
        "--ft-lr", type=float, nargs="+", help="fine-tuning peak lrs (default: the recipe's)"
    )
    p.add_argument("--score-every", type=int, default=3, help="score every N supernet epochs")
    p.add_argument("--k", type=int, nargs="+", default=[6, 8, 10], help="trust probe sizes")
    p.add_argument("--top", type=int, nargs="+", default=[1, 3, 5, 8], help="finalists")
    p.add_argument("--proxy-epochs", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--json", type=Path, help="append measured runs here (JSON lines)")
    p.add_argument("--from-json", type=Path, nargs="+", help="replay these runs only")
    p.add_argument("--markdown", action="store_true", help="per-run rows as a Markdown table")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--limit", type=int, default=40, help="the first N table architectures")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    runs = []
    if args.from_json:
        for path in args.from_json:
            runs += [json.loads(line) for line in path.read_text().splitlines() if line]
    for study in args.studies:
        for seed in args.seeds:
            t0 = time.perf_counter()
            run = measure(study, seed, args.ft_epochs, args.score_every, args.ft_lr, args.limit)
            print(f"measured {study} seed {seed} in {time.perf_counter() - t0:.0f}s", flush=True)
            runs.append(run)
            if args.json:
                with args.json.open("a") as f:
                    f.write(json.dumps(run) + "\n")
    lrs = [f"{v:g}" for v in args.ft_lr] if args.ft_lr else ["0.003"]
    if args.markdown:
        print(markdown(runs, lrs[0]))
        return 0
    for run, lr in [(run, lr) for run in runs for lr in lrs]:
        r = replay(run, args.k[0], args.top[0], args.proxy_epochs[-1], lr)
        name = Path(run["study"]).stem
        print(
            f"{name:<14} seed {run['seed']} lr {tuned_lr(run, lr)} n={run['n_archs']} "
            f"tau supernet {r['tau_supernet']:+.2f} by epoch "
            + " ".join(f"{e}:{t:+.2f}" for e, t in r["tau_by_epoch"].items())
            + " | ckpt-vs-ckpt "
            + " ".join(f"{t:+.2f}" for t in r["tau_between_checkpoints"])
            + " | ft val tau by epoch "
            + " ".join(f"{t:+.2f}" for t in r["tau_ft"])
            + f" ft test {r['tau_ft_test']:+.2f} | table val-test {r['tau_val_test_table']:+.2f}"
            + f" | ft-scratch test {r['ft_minus_scratch'] * 100:+.1f} pts,"
            f" ft {r['ft_cpu_per_epoch']:.2f} CPU-s/epoch vs scratch {r['scratch_cpu']:.1f}"
        )
    for lr in lrs:
        # The replays' rungs reach 4 epochs: runs fine-tuned fewer (the recipe's own epochs
        # on a short recipe, --ft-epochs 0) are read by the top rung's lines only.
        need = max(4, *args.proxy_epochs)
        long = [r for r in runs if len(tuned_at(r, lr)["ft_val"][0]) >= need]
        if len(long) < len(runs):
            print(
                f"\n(the replays below leave out {len(runs) - len(long)} runs fine-tuned "
                f"fewer than {need} epochs)"
            )
        if long:
            summarize(long, args, lr)
        top_rung(runs, lr)
    return 0


def top_rung(runs: list[dict], lr: str) -> None:
    """Per ground, the fine-tuned test accuracy minus the same architecture's from-scratch
    test accuracy (the table's mean over its training seeds): the mean over the runs'
    architectures with a 90% bootstrap interval (architectures resampled within each run),
    and how many architectures are higher / lower. With ``--ft-epochs 0`` this is issue 43's
    choice of the top rung per ground type: the recipe from the inherited weights, or from
    scratch."""
    from _paired_stats import interval

    print(
        f"\nfine-tuned - from scratch, test accuracy (points; lr {lr}, or a run's only lr; "
        "per ground):"
    )
    by_ground: dict[str, list[dict]] = {}
    for run in runs:
        by_ground.setdefault(Path(run["study"]).stem, []).append(run)
    for ground, rs in sorted(by_ground.items()):
        tuned = [tuned_at(run, lr) for run in rs]
        diffs = [
            np.subtract(t["ft_test"], run["gt_test"]) for t, run in zip(tuned, rs, strict=True)
        ]
        flat = [float(d) for ds in diffs for d in ds]
        mean, low, high = interval(diffs)
        epochs = {len(t["ft_val"][0]) for t in tuned}
        cpu = np.mean([np.sum(c) for t in tuned for c in t["ft_cpu"]])
        scratch = np.mean([c for run in rs for c in run["gt_cpu"]])
        print(
            f"  {ground:<16} {len(rs)} run(s), {len(flat)} archs, {sorted(epochs)} epochs: "
            f"{100 * mean:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}], "
            f"higher {sum(d > 0 for d in flat)} / lower {sum(d < 0 for d in flat)}; "
            f"CPU-s per training {cpu:.1f} inherited vs {scratch:.1f} scratch (the table's)"
        )


def _front(scores: list[float], cost: list[float]) -> list[int]:
    """Indices non-dominated on (score up, cost down), best score first."""
    idx = [
        i
        for i in range(len(scores))
        if not any(
            scores[j] >= scores[i]
            and cost[j] <= cost[i]
            and (scores[j] > scores[i] or cost[j] < cost[i])
            for j in range(len(scores))
        )
    ]
    return sorted(idx, key=lambda i: -scores[i])


def replay_rule(run: dict, lr: str, n: int, top: int, rungs=(1, 2, 4), keep=0.5) -> int:
    """The fine-tuning phase's choice of the kept architecture, replayed on measured rows.

    Finalists: the ``top`` best supernet scores (protected: they go to the last rung, the
    winner is chosen among them), then the Pareto set of (supernet score, stand-alone
    CPU-s: the study's predicted-cost objective stands in) best score first, then the best
    scores, up to ``n``. Unprotected ones are promoted by non-dominated rank of (fine-tuned
    validation up, fine-tuning CPU-s per epoch down), then validation, as ``promote`` does.
    ``top=0`` is the rule the study shipped with. Returns the index of the kept
    architecture: the best fine-tuned validation among those trained the most epochs.
    """
    ft = tuned_at(run, lr)
    scores = run["scores_by_epoch"][str(max(int(e) for e in run["scores_by_epoch"]))]
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    protected = order[:top]
    chosen = list(protected)
    for i in _front(scores, run["gt_cpu"]) + order:
        if len(chosen) >= n:
            break
        if i not in chosen:
            chosen.append(i)
    alive = [i for i in chosen if i not in protected]
    for r_prev in rungs[:-1]:
        points = [
            (ft["ft_val"][i][r_prev - 1], float(np.mean(ft["ft_cpu"][i][:r_prev]))) for i in alive
        ]
        ranks = [
            sum(
                1 for q in points if q[0] >= p[0] and q[1] <= p[1] and (q[0] > p[0] or q[1] < p[1])
            )
            for p in points
        ]
        k = max(1, int(np.ceil(keep * len(alive)))) if alive else 0
        alive = [
            alive[j]
            for j in sorted(range(len(alive)), key=lambda j: (ranks[j], -points[j][0]))[:k]
        ]
    last = protected + alive
    return max(last, key=lambda i: ft["ft_val"][i][rungs[-1] - 1])


def markdown(runs: list[dict], lr: str) -> str:
    """One row per measured run: the rankings, the fine-tuning cost and the trust probe."""
    head = (
        "| ground | seed | archs | supernet τ | fine-tuned val τ (1/2/4 ep) | table val-test τ "
        "| fine-tuned 4 ep − scratch (test) | ft CPU-s/epoch | scratch CPU-s "
        "| probe τ [90% bootstrap] (k=8, 2 ep) | covered |\n"
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---|---|"
    )
    rows = []
    for run in runs:
        if lr not in run.get("fine_tuned", {"0.003": None}):
            continue
        r = replay(run, 8, 1, 2, lr)
        ft = "/".join(f"{t:+.2f}" for i, t in enumerate(r["tau_ft"]) if i in (0, 1, 3))
        lo, hi = r["probe_interval"]
        rows.append(
            f"| {Path(run['study']).stem} | {run['seed']} | {run['n_archs']} "
            f"| {r['tau_supernet']:+.2f} | {ft} | {r['tau_val_test_table']:+.2f} "
            f"| {r['ft_minus_scratch'] * 100:+.1f} pts | {r['ft_cpu_per_epoch']:.2f} "
            f"| {r['scratch_cpu']:.1f} | {r['probe_tau']:+.2f} [{lo:+.2f}, {hi:+.2f}] "
            f"| {'yes' if r['covered'] else 'no'} |"
        )
    return "\n".join([head, *rows])


def summarize(runs: list[dict], args: argparse.Namespace, lr: str) -> None:
    print(f"\nfine-tuning lr {lr}; trust coverage (interval contains the table's tau):")
    for k in args.k:
        for e in args.proxy_epochs:
            rs = [replay(run, k, 1, e, lr) for run in runs]
            cov = np.mean([r["covered"] for r in rs])
            width = np.mean([r["probe_interval"][1] - r["probe_interval"][0] for r in rs])
            err = np.mean([r["probe_tau"] - r["tau_supernet"] for r in rs])
            print(
                f"  k={k:<3} proxy {e} ft epochs: {cov:.0%} of {len(rs)}, width {width:.2f},"
                f" bias {err:+.2f}"
            )
    print("\ncalibrated margin (k=8, 2 fine-tuning epochs, the study's TrustProbe()):")
    rs = [replay(run, 8, 1, 2, lr) for run in runs]
    for m in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3):
        cov = np.mean(
            [
                r["probe_interval"][0] - m <= r["tau_supernet"] <= r["probe_interval"][1] + m
                for r in rs
            ]
        )
        print(f"  margin {m:.2f}: covers {cov:.0%} of {len(rs)} runs")
    print("\nwinner (median share of the table beaten; per run):")
    for top in args.top:
        for e in args.proxy_epochs:
            rs = [replay(run, args.k[0], top, e, lr) for run in runs]
            ft = [r["winner_ft_beats"] for r in rs]
            sc = [r["winner_scratch_beats"] for r in rs]
            pp = [r["params_winner_scratch_beats"] for r in rs]
            print(
                f"  top {top:<2} picked by {e}-epoch ft val: fine-tuned {np.median(ft):.0%}"
                f" (min {min(ft):.0%}), same arch from scratch {np.median(sc):.0%}"
                f" (mean {np.mean(sc):.0%}); the top {top} by parameter count instead"
                f" {np.median(pp):.0%} (mean {np.mean(pp):.0%}) | "
                + " ".join(f"{v:.0%}" for v in ft)
            )
    print(
        "\nthe fine-tuning phase's rule, replayed (8 finalists, rungs 1/2/4, keep 0.5; "
        "share of the table the kept architecture's from-scratch training beats):"
    )
    for top in (0, 2, 3, 4, 5, 8):
        shares = [
            beats(run["gt_test"][replay_rule(run, lr, 8, top)], run["gt_test"]) for run in runs
        ]
        label = "Pareto set first (shipped)" if top == 0 else f"top {top} protected"
        print(
            f"  {label:<28} median {np.median(shares):.0%} (min {min(shares):.0%}) | "
            + " ".join(f"{v:.0%}" for v in shares)
        )
    rs = [replay(run, args.k[0], 1, 1, lr) for run in runs]
    print(
        "  top supernet score alone: from scratch "
        f"{np.median([r['top1_supernet_beats'] for r in rs]):.0%}, fine-tuned "
        f"{np.median([r['top1_supernet_ft_beats'] for r in rs]):.0%}"
    )


if __name__ == "__main__":
    sys.exit(main())
