"""Screen many, fine-tune few: does fine-tuning the top screened candidates pick a better
winner than the one-shot score alone, and at what CPU cost?

On a study (default the proving ground, ``studies/mnist1d_front.py``), per seed, two
variants run side by side in one process with one torch thread, sharing one supernet
(trained once per seed; the second variant loads its final checkpoint):

* ``one-shot``: the study as it is: every candidate scored from the supernet, the most
  accurate Pareto trial retrained from scratch.
* ``screen+finetune``: the same candidates budget, but each candidate whose supernet
  score ranks in the top ``--keep`` of those scored so far is fine-tuned for
  ``--finetune-epochs`` epochs under the study's pruner (Pareto successive halving), and
  the winner is the most accurate fine-tuned Pareto trial (``StudySpec(screen_keep=...)``).

Printed per run: the winner, its retrained test accuracy (the study's recipe, test
split), where it stands among the ground truth's random architectures (test accuracy of
the same recipe), how many candidates were fine-tuned, and the process CPU-seconds of
phase 2 and of phase 3 (the supernet's are the same for both and printed once).

    python benchmarks/screening.py --seeds 0 1 2 --json screening.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import torch

from nasflow.pipeline import StudyRunner, read_baseline
from nasflow.record import RunFolder, TrialRecord
from nasflow.search import load_study_file
from nasflow.train import TrainConfig

ROOT = Path(__file__).resolve().parents[1]


def run_variant(spec, runs: Path, supernet_from: Path | None) -> dict:
    """Run one study; CPU-seconds of each phase measured as process time around it."""
    if supernet_from is not None:  # the same supernet: load its final checkpoint
        shutil.copytree(supernet_from, RunFolder.of(runs, spec.name).supernet)
    runner = StudyRunner(spec, out_dir=runs, progress=False, log=lambda _: None)
    cpu0 = time.process_time()
    result = runner.run()
    cpu = time.process_time() - cpu0
    trials = result.study.get_trials(deepcopy=False)
    (w,) = result.winners
    return {
        "winner": w.number,
        "test_accuracy": w.test_accuracy,
        "finetuned": sum((TrialRecord.from_trial(t).epochs_trained or 0) > 0 for t in trials),
        "candidates": len(trials),
        "wall": result.seconds,
        "cpu_total": cpu,
        "retrain_wall": result.seconds.get("retrain", 0.0),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--study", default=str(ROOT / "studies" / "mnist1d_front.py"))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--keep", type=float, default=0.05, help="screen_keep (default 0.05)")
    p.add_argument("--finetune-epochs", type=int, default=3)
    p.add_argument("--n-trials", type=int, help="candidates (default: the study's)")
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args()
    torch.set_num_threads(1)
    base = load_study_file(args.study)
    if args.n_trials:
        base = base.replace(n_trials=args.n_trials)
    accs, _, _ = read_baseline(base.baseline)
    rows = []
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as tmp:
            runs = Path(tmp)
            one = base.replace(name=f"oneshot-{seed}", seed=seed)
            scr = base.replace(
                name=f"screen-{seed}",
                seed=seed,
                finetune=TrainConfig(epochs=args.finetune_epochs, lr=1e-3, warmup_epochs=0),
                screen_keep=args.keep,
            )
            for variant, spec, src in (
                ("one-shot", one, None),
                ("screen+finetune", scr, RunFolder.of(runs, one.name).supernet),
            ):
                row = {"seed": seed, "variant": variant, **run_variant(spec, runs, src)}
                t = row["test_accuracy"]
                row["beats_random"] = sum(a < t for a in accs) / len(accs) if accs else None
                rows.append(row)
                print(
                    f"seed {seed} {variant:>15}: winner trial {row['winner']}, retrained test "
                    f"accuracy {t:.4f} (beats {row['beats_random']:.0%} of {len(accs)} random "
                    f"trainings), fine-tuned {row['finetuned']}/{row['candidates']}, wall s "
                    f"{ {k: round(v) for k, v in row['wall'].items()} }, process CPU "
                    f"{row['cpu_total']:.0f} s",
                    flush=True,
                )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
