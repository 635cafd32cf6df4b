"""B4: storage overhead per trial, SQLite vs PostgreSQL, with 1, 2 and 4 worker processes.

Each worker process opens the storage exactly as ``nasflow search``/``worker`` do
(``nasflow.storage.open_storage``: RDB storage with heartbeats and the retry
callback) and runs trials whose objective does no work but writes what a nasflow trial
writes (the arch, params, train_cost and supernet_accuracy user attributes, two objective
values, one intermediate rung vector). What is measured is therefore the storage's cost:
wall seconds for all trials of the study, trials per second, and milliseconds of wall time
per trial (for W workers: W * wall / trials, the time one worker spends per trial).
SQLite takes one worker only (nasflow refuses more).

``--curve N`` measures instead how the search loop's own cost grows with the number of
finished trials: one process, the default study's sampler (``study_sampler``: TPE over the
default space's choices, two objectives) on SQLite, N trials whose objective returns a
synthetic (accuracy, cost) pair computed from the arch in microseconds, so that the time
per trial is the sampler's plus the storage's. It prints the time per trial in windows of
trials and the cumulative wall time.

Usage::

    python benchmarks/scaling.py                        # 200 trials per configuration
    python benchmarks/scaling.py --curve 1000           # search-loop cost vs trials
    python benchmarks/scaling.py --quick                # CI smoke size (both parts)
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
import uuid

POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


def _worker(url: str, name: str, n: int, barrier) -> None:  # type: ignore[no-untyped-def]
    import optuna

    from nasflow.record import rung_key
    from nasflow.storage import open_storage, resolve_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(resolve_storage(url, "unused"))
    study = optuna.load_study(study_name=name, storage=storage)

    def objective(trial: optuna.Trial) -> tuple[float, float]:
        x = trial.suggest_categorical("op", ["k3", "k5", "skip"])
        w = trial.suggest_categorical("width", [0.5, 0.75, 1.0])
        trial.set_user_attr("arch", f'{{"op":"{x}","width":{w}}}')
        trial.set_user_attr("params", 1000)
        trial.set_user_attr("train_cost", 1.0)
        trial.set_user_attr("supernet_accuracy", 0.9)
        trial.set_user_attr(rung_key(0), [0.9, 1.0])
        return 0.9, 1.0

    barrier.wait(timeout=120)
    study.optimize(
        objective,
        callbacks=[optuna.study.MaxTrialsCallback(n)],
        n_trials=n,
        gc_after_trial=False,
    )


def run(url: str, workers: int, trials: int) -> dict[str, float]:
    """Wall seconds for ``trials`` trials shared by ``workers`` processes on ``url``."""
    import optuna

    from nasflow.storage import open_storage, resolve_storage

    name = f"b4_{uuid.uuid4().hex[:8]}"
    storage = open_storage(resolve_storage(url, "unused"))
    optuna.create_study(study_name=name, storage=storage, directions=["maximize", "minimize"])
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(workers + 1)
    procs = [
        ctx.Process(target=_worker, args=(url, name, trials, barrier)) for _ in range(workers)
    ]
    for p in procs:
        p.start()
    barrier.wait(timeout=120)  # every worker has imported and opened the storage
    t0 = time.perf_counter()
    for p in procs:
        p.join(timeout=600)
    wall = time.perf_counter() - t0
    if any(p.exitcode != 0 for p in procs):
        raise SystemExit(f"a worker failed on {url} with {workers} workers")
    done = len(optuna.load_study(study_name=name, storage=storage).trials)
    optuna.delete_study(study_name=name, storage=storage)
    return {"trials": done, "wall": wall, "per_s": done / wall, "ms": 1000 * workers * wall / done}


def curve(n: int, windows: int, path: str) -> list[tuple[int, int, float, float, float]]:
    """Per window of trials: (first, last, wall ms per trial, CPU ms per trial, cumulative
    wall s) of the default study's sampler on SQLite."""
    import hashlib
    from dataclasses import replace

    import optuna

    from nasflow.search import study_sampler
    from nasflow.storage import open_storage, resolve_storage
    from nasflow.studies.mnist1d import study as spec

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(resolve_storage(f"sqlite:///{path}", "unused"))
    study = optuna.create_study(
        study_name="b4_curve",
        storage=storage,
        directions=["maximize", "minimize"],
        sampler=study_sampler(replace(spec, n_trials=n), seed=0),
    )
    op_cost = {"k3_e2": 1.0, "k5_e2": 1.3, "k7_e2": 1.6, "k5_e4": 2.2, "skip": 0.1}

    def objective(trial: optuna.Trial) -> tuple[float, float]:
        arch = spec.space.suggest(trial)
        noise = int(hashlib.sha256(arch.to_json().encode()).hexdigest()[:6], 16) / 16**6
        cost = sum(op_cost.get(str(v), 0.0) for v in arch.values()) * float(arch["width"])
        trial.set_user_attr("arch", arch.to_json())
        trial.set_user_attr("train_cost", cost)
        return 0.95 + 0.004 * cost + 0.01 * noise, cost

    ends: list[tuple[float, float]] = []
    t0 = (time.perf_counter(), time.process_time())
    study.optimize(
        objective,
        n_trials=n,
        callbacks=[lambda *_: ends.append((time.perf_counter(), time.process_time()))],
        gc_after_trial=False,
    )
    size = max(1, n // windows)
    rows, prev = [], t0
    for first in range(0, n, size):
        last = min(n, first + size) - 1
        end, count = ends[last], last - first + 1
        wall_ms = 1000 * (end[0] - prev[0]) / count
        cpu_ms = 1000 * (end[1] - prev[1]) / count
        rows.append((first, last, wall_ms, cpu_ms, end[0] - t0[0]))
        prev = end
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="storage overhead per trial")
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--postgres", default=POSTGRES)
    p.add_argument("--curve", type=int, metavar="N", help="search-loop cost over N trials")
    p.add_argument("--windows", type=int, default=10, help="windows of the --curve table")
    p.add_argument("--quick", action="store_true", help="20 trials, 1 and 2 workers")
    args = p.parse_args(argv)
    if args.curve is not None and args.curve < 1:
        p.error(f"--curve must be >= 1, got {args.curve}")
    if args.quick:
        args.trials = 20
        args.curve, args.windows = 30, 3
    if args.curve is not None:
        print("| trials | wall ms per trial | CPU ms per trial | cumulative wall s |")
        print("|---|---:|---:|---:|")
        with tempfile.TemporaryDirectory() as tmp:
            for first, last, ms, cpu, cum in curve(args.curve, args.windows, f"{tmp}/c.db"):
                print(f"| {first + 1}–{last + 1} | {ms:.1f} | {cpu:.1f} | {cum:.1f} |", flush=True)
        if not args.quick:
            return 0
    plan = [("sqlite", 1), ("postgresql", 1), ("postgresql", 2)]
    if not args.quick:
        plan.append(("postgresql", 4))
    print("| storage | workers | trials | wall s | trials/s | ms per trial per worker |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for kind, workers in plan:
            url = f"sqlite:///{tmp}/b4.db" if kind == "sqlite" else args.postgres
            r = run(url, workers, args.trials)
            print(
                f"| {kind} | {workers} | {r['trials']} | {r['wall']:.1f} | "
                f"{r['per_s']:.1f} | {r['ms']:.0f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
