"""B4 again: how screening's cost grows with the number of candidates, the per-trial loop
(``study.optimize`` on the study's storage) against the batched one (in-memory proposals,
batched writes, no repeated architecture).

On a study (default the proving ground, ``studies/mnist1d_front.py``, with its sampler:
multi-objective TPE, SQLite) one supernet is trained once (``--supernet-epochs``, default
2: the loop's cost does not depend on how well it is trained) and shared; then, in one
process with one torch thread, for each size the two loops run interleaved (per-trial,
then batched), each a fresh study on its own SQLite file, phase 2 only (no fine-tuning
phase, no trust probe, no retraining, fixed fp32 stack).

Per run, printed and written as a JSON row:

* wall seconds of phase 2 (the runner's ``search`` time) and process CPU seconds of the
  whole run (phase 2, plus loading the supernet checkpoint and the study records);
* per candidate (time between two trials' ends): the score (``score_seconds``: BN
  recalibration and validation; 0 for a repeat, which reuses a score) and the loop (the
  rest: sampler, storage, cost prediction, records), deciles of wall ms, and the mean
  wall ms of the loop and of the whole candidate over the first and the last tenth of the
  candidates (growth);
* peak resident memory during the run (Linux ``VmHWM``, reset before each run through
  ``/proc/self/clear_refs``; else ``ru_maxrss``, which never goes down);
* trials stored and distinct architectures among them.

    python benchmarks/screening_scale.py --sizes 300 1000 --json b4.json
    python benchmarks/screening_scale.py --sizes 3000 10000 --variants batched --sampler nsga2
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from nasflow.pipeline import StudyRunner
from nasflow.record import RunFolder, TrialRecord
from nasflow.search import load_study_file

ROOT = Path(__file__).resolve().parents[1]

VARIANTS = ("per-trial", "batched")


def _peak_reset() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _peak_mib() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _deciles(xs: list[float]) -> list[float]:
    if len(xs) < 2:
        return [round(1000 * x, 2) for x in xs]
    return [round(1000 * q, 2) for q in statistics.quantiles(xs, n=10)]


def run_one(spec: Any, runs: Path, supernet: Path, variant: str, n: int) -> dict[str, Any]:
    """One screening of ``n`` candidates with ``variant``'s loop; its measurements."""
    batch = spec.screen_batch if variant == "batched" else 0  # 0: the per-trial loop
    spec = spec.replace(name=f"{variant}-{n}", n_trials=n, screen_batch=batch)
    shutil.copytree(supernet, RunFolder.of(runs, spec.name).supernet)
    reset = _peak_reset()
    c0 = time.process_time()
    result = StudyRunner(spec, out_dir=runs, progress=False, log=lambda _: None).run(retrain=False)
    cpu = time.process_time() - c0
    peak = _peak_mib()
    trials = sorted(result.study.get_trials(deepcopy=False), key=lambda t: t.datetime_complete)
    records = [TrialRecord.from_trial(t) for t in trials]
    distinct = len({r.arch for r in records if r.arch is not None})
    # A candidate's time: from the previous candidate's end to its own (both loops stamp
    # a trial's end when it is told); its score is ``score_seconds`` (BN recalibration and
    # validation; a repeat reused an earlier score: 0), the rest is the loop's.
    ends = [t.datetime_complete.timestamp() for t in trials]
    per = [b - a for a, b in itertools.pairwise(ends)]
    scores = [(r.score_seconds or 0.0) if r.duplicate_of is None else 0.0 for r in records[1:]]
    loops = [max(0.0, p - s) for p, s in zip(per, scores, strict=True)]
    tenth = max(1, len(loops) // 10)
    return {
        "variant": variant,
        "sampler": spec.sampler if isinstance(spec.sampler, str) else type(spec.sampler).__name__,
        "threads": torch.get_num_threads(),
        "n_trials": n,
        "trials": len(trials),
        "distinct": distinct,
        "search_wall_s": round(result.seconds.get("search", 0.0), 1),
        "run_cpu_s": round(cpu, 1),
        "score_ms_deciles": _deciles(scores),
        "loop_ms_deciles": _deciles(loops),
        "loop_ms_first_tenth": round(1000 * statistics.fmean(loops[:tenth]), 1),
        "loop_ms_last_tenth": round(1000 * statistics.fmean(loops[-tenth:]), 1),
        # The whole per-candidate time (score + loop), first and last tenth, and the ratio.
        "candidate_ms_first_tenth": round(1000 * statistics.fmean(per[:tenth]), 1),
        "candidate_ms_last_tenth": round(1000 * statistics.fmean(per[-tenth:]), 1),
        "candidate_growth": round(
            statistics.fmean(per[-tenth:]) / statistics.fmean(per[:tenth]), 2
        ),
        "peak_mib": round(peak, 0),
        "peak_reset": reset,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--study", default=str(ROOT / "studies" / "mnist1d_front.py"))
    p.add_argument("--sizes", type=int, nargs="+", default=[300, 1000])
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    p.add_argument("--supernet-epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=32, help="StudySpec.screen_batch")
    p.add_argument(
        "--sampler", help="StudySpec.sampler (auto, tpe, nsga2, random, evolution); the study's"
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (1: CPU seconds comparable under load; the study's "
        "default is torch's, one per core)",
    )
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    base = load_study_file(args.study)
    base = base.replace(
        supernet=dataclasses.replace(base.supernet, epochs=args.supernet_epochs),
        finetuning=None,
        trust=None,
        stack=None,
        baseline=(),
        screen_batch=args.batch,
    )
    if args.sampler:
        base = base.replace(sampler=args.sampler)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        t0 = time.process_time()
        first = StudyRunner(
            base.replace(name="supernet", n_trials=1),
            out_dir=runs,
            progress=False,
            log=lambda _: None,
        ).run(retrain=False)
        supernet = RunFolder.of(runs, "supernet").supernet
        print(
            f"supernet ({args.supernet_epochs} epochs) + cost table: "
            f"{time.process_time() - t0:.0f} CPU-s, {first.seconds}",
            flush=True,
        )
        for n in args.sizes:
            for variant in args.variants:
                row = run_one(base, runs, supernet, variant, n)
                rows.append(row)
                print(json.dumps(row), flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
