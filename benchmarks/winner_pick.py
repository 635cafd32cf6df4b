"""Which retrained candidate should a one-shot study keep: the top supernet score, or the
best retrained *validation* accuracy among the top ``k``?

Per seed, the study (default the proving ground, ``studies/mnist1d_front.py``) runs once
with ``retrain_top=--top``: phase 3 retrains the ``--top`` most accurate Pareto trials
(supernet score vs predicted training cost) from scratch. Every rule then picks among the
same retrained networks, so the rules are compared on identical runs:

* ``top score``: the most accurate Pareto trial by supernet score (what the study keeps);
* ``val of top k``: of the ``k`` best by supernet score, the one with the highest retrained
  validation accuracy (ties: higher supernet score), for every ``k <= --top``.

Printed per seed: the retrained candidates (supernet score, retrained validation and test
accuracy), and per rule the kept network's test accuracy and the share of the ground
truth's random architectures (same recipe, test split) it beats.

    python benchmarks/winner_pick.py --seeds 0 1 2 3 4 5 --top 5 --json winner_pick.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import torch

from nasflow.pipeline import StudyRunner, read_baseline
from nasflow.search import load_study_file

ROOT = Path(__file__).resolve().parents[1]


def run_seed(spec, seed: int, top: int, runs: Path) -> list[dict]:
    """The study with ``seed`` and ``retrain_top=top``; its retrained candidates, best
    supernet score first."""
    spec = spec.replace(seed=seed, retrain_top=top)
    result = StudyRunner(spec, out_dir=runs, progress=False, log=lambda _: None).run()
    rows = []
    for w in result.winners:
        values = result.study.trials[w.number].values
        rows.append(
            {
                "trial": w.number,
                "supernet_score": values[0],
                "retrained_val": w.val_accuracy,
                "retrained_test": w.test_accuracy,
                "params": w.params,
            }
        )
    return sorted(rows, key=lambda r: -r["supernet_score"])


def pick(rows: list[dict], k: int) -> dict:
    """Of the ``k`` best by supernet score, the highest retrained validation accuracy."""
    return max(rows[:k], key=lambda r: (r["retrained_val"], r["supernet_score"]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--study", default=str(ROOT / "studies" / "mnist1d_front.py"))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--top", type=int, default=5, help="candidates retrained per seed")
    p.add_argument(
        "--stack",
        choices=("study", "none"),
        default="none",
        help="train through the study's stack, or plain fp32 (default: plain, no calibration)",
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", help="write every retrained candidate and pick here")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    spec = load_study_file(args.study)
    if args.stack == "none":
        spec = spec.replace(stack=None)
    accs = read_baseline(spec.baseline)[0] if spec.baseline else []

    def beats(acc: float) -> str:
        return f"{sum(a < acc for a in accs) / len(accs):.0%}" if accs else "-"

    rules = {"top score": 1, **{f"val of top {k}": k for k in range(2, args.top + 1)}}
    kept: dict[str, list[float]] = {r: [] for r in rules}
    out = []
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as tmp:
            rows = run_seed(spec, seed, args.top, Path(tmp))
        print(f"seed {seed}: retrained candidates (supernet score / retrained val / test)")
        for r in rows:
            print(
                f"  trial {r['trial']:>4}: {r['supernet_score']:.3f} / "
                f"{r['retrained_val']:.4f} / {r['retrained_test']:.4f}"
            )
        picks = {}
        for rule, k in rules.items():
            chosen = pick(rows, k)
            kept[rule].append(chosen["retrained_test"])
            picks[rule] = chosen["trial"]
            print(
                f"  {rule:>12}: trial {chosen['trial']}, test {chosen['retrained_test']:.4f} "
                f"(beats {beats(chosen['retrained_test'])} of random architectures)"
            )
        out.append({"seed": seed, "candidates": rows, "picks": picks})
    print(f"mean retrained test accuracy of the kept network over seeds {args.seeds}:")
    for rule, values in kept.items():
        print(f"  {rule:>12}: {statistics.mean(values):.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "seeds": out}, indent=1))


if __name__ == "__main__":
    main()
