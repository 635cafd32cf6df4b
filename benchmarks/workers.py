"""Workers: a study run by two processes with one torch thread each, against one process
with one thread, on PostgreSQL (issue 42.6 and 44's two-worker targets).

Each repetition runs the study twice, one after the other, each on a new database with a
cold cost cache of its own, every process with ``OMP_NUM_THREADS=1``: once ``nasflow
search`` alone, once ``nasflow search`` with one ``nasflow worker`` started two seconds
later (both share one ``--runs`` folder). It prints, per run, the wall seconds of the whole
study (from the start of ``search`` to the end of the last process), the study's own
phase timings (the ``nasflow:seconds`` record of the deciding process: stack calibration,
anchors, supernet, screening, trust probe, fine-tuning, retrains), the wall seconds after
the supernet (screening and every later phase), what each process trained after screening,
and the integrity checks: no training after screening ran twice (every task key finished
once), no screening trial is missing or doubled. The ratio one / two is the speed-up. Beside
each pair it measures the machine's own ceiling for two one-thread processes (``ceiling``:
one fixed training alone, then two at once); on a shared 2-core VM it is not 2.

Usage::

    python benchmarks/workers.py --reps 3 --out TABLE.md --logs DIR
    python benchmarks/workers.py --quick     # a small study, one repetition (smoke size)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

SERVER = "postgresql://postgres@127.0.0.1:5432"
REPO = Path(__file__).resolve().parents[1]
#: The phases after the supernet, as the study's seconds record names them.
AFTER = ("search", "trust", "finetune", "retrain")

QUICK_STUDY = """
from nasflow.search import FineTuning, TrustProbe
from studies.mnist1d_front import study

study = study.replace(
    n_trials=30,
    trust=TrustProbe(archs=4, epochs=1, schedule_epochs=2, pool=0, bootstrap=100),
    finetuning=FineTuning(finalists=4, rungs=(1, 2), keep=0.5),
    retrain_top=2,
)
"""


def _database(name: str) -> str:
    import sqlalchemy

    admin = sqlalchemy.create_engine(SERVER + "/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return f"{SERVER}/{name}"


def _drop(name: str) -> None:
    import sqlalchemy

    admin = sqlalchemy.create_engine(SERVER + "/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sqlalchemy.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def run_once(study: str, processes: int, folder: Path, logs: Path | None = None) -> dict:
    """The study run by ``processes`` processes (``search`` + workers), one thread each
    (each process's output saved in ``logs`` when given)."""
    import optuna

    from nasflow.pipeline import TASKS_SUFFIX
    from nasflow.record import study_seconds, task_key, task_result

    db = f"bench_workers_{uuid.uuid4().hex[:10]}"
    url = _database(db)
    runs, cache = folder / "runs", folder / "cache"
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NASFLOW_CACHE": str(cache),
        "PYTHONPATH": str(REPO),
    }
    common = [study, "--storage", url, "--runs", str(runs), "--no-progress"]
    cmd = [sys.executable, "-m", "nasflow.cli"]
    t0 = time.perf_counter()

    def start(command: str) -> subprocess.Popen:
        return subprocess.Popen(
            [*cmd, command, *common],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=REPO,
        )

    procs = [start("search")]
    for _ in range(processes - 1):
        time.sleep(2)
        procs.append(start("worker"))
    texts = [p.communicate()[0] for p in procs]
    wall = time.perf_counter() - t0
    if logs is not None:
        logs.mkdir(parents=True, exist_ok=True)
        for i, text in enumerate(texts):
            who = "search" if i == 0 else f"worker{i}"
            (logs / f"{folder.name}-{who}.log").write_text(text)
    try:
        for p, text in zip(procs, texts, strict=True):
            if p.returncode != 0:
                raise SystemExit(f"a process failed ({p.returncode}):\n{text[-3000:]}")
        names = [s.study_name for s in optuna.get_all_study_summaries(url)]
        main = optuna.load_study(study_name=next(n for n in names if ":" not in n), storage=url)
        seconds = study_seconds(main) or {}
        numbers = sorted(t.number for t in main.get_trials())
        by: Counter[str] = Counter()
        twice = 0
        if main.study_name + TASKS_SUFFIX in names:
            tasks = optuna.load_study(study_name=main.study_name + TASKS_SUFFIX, storage=url)
            done = [t for t in tasks.get_trials() if t.state.name == "COMPLETE"]
            keys = Counter(task_key(t) for t in done)
            twice = sum(n > 1 for n in keys.values())
            for t in done:
                kind = json.loads(task_key(t) or "{}")["kind"]
                mine = (task_result(t) or {})["by"].endswith(f":{procs[0].pid}")
                who = "search" if mine else "worker"
                by[f"{who} {kind}"] += 1
        return {
            "processes": processes,
            "wall": wall,
            "seconds": seconds,
            "after": sum(seconds.get(k, 0.0) for k in AFTER),
            "by": dict(by),
            "twice": twice,
            "trials_gap_free": numbers == list(range(len(numbers))),
        }
    finally:
        _drop(db)


CEILING = r"""
import sys, time, torch
from nasflow.search_spaces.mnist1d import MNIST1DSpace
torch.set_num_threads(1)
space = MNIST1DSpace()
net = space.build(space.sample(0))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
x, y = torch.randn(128, 1, 40), torch.randint(0, 10, (128,))
for _ in range(5):  # warm-up
    torch.nn.functional.cross_entropy(net(x), y).backward()
t0 = time.perf_counter()
for _ in range(int(sys.argv[1])):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(net(x), y).backward()
    opt.step()
print(time.perf_counter() - t0)
"""


def ceiling(steps: int = 400) -> dict[str, float]:
    """This machine's ceiling for two one-thread processes: the same fixed training (one
    architecture of the default space, ``steps`` steps) run alone, then twice at once; the
    ratio of the two processes' throughput to one's (2.0: two independent cores)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}

    def launch() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", CEILING, str(steps)],
                                stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)  # fmt: skip

    alone = float(launch().communicate()[0])
    pair = [launch(), launch()]
    together = max(float(p.communicate()[0]) for p in pair)
    return {"alone": alone, "together": together, "ratio": 2 * alone / together}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--study", default="mnist1d_front", help="study name or file")
    p.add_argument("--reps", type=int, default=2, help="pairs, run one after the other")
    p.add_argument("--quick", action="store_true", help="a 30-trial study, one repetition")
    p.add_argument("--out", help="also write the table to this markdown file")
    p.add_argument("--logs", help="keep each process's output in this folder")
    p.add_argument("--ceiling", action="store_true", help="only the machine's two-process ceiling")
    args = p.parse_args(argv)
    study, reps = args.study, args.reps
    if args.ceiling:
        for _ in range(max(1, reps)):
            c = ceiling()
            print(
                f"one process alone {c['alone']:.1f}s, two at once {c['together']:.1f}s: "
                f"two processes do x{c['ratio']:.2f} the work of one in the same time"
            )
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        if args.quick:
            study_file = Path(tmp) / "quick_study.py"
            study_file.write_text(QUICK_STUDY)
            study, reps = str(study_file), 1
        rows, ceilings = [], []
        for rep in range(reps):
            ceilings.append(ceiling())  # (the machine's, measured beside each pair)
            print(json.dumps({"rep": rep, "ceiling": ceilings[-1]}), flush=True)
            for processes in (1, 2):
                folder = Path(tmp) / f"r{rep}p{processes}"
                logs = Path(args.logs) if args.logs else None
                r = run_once(study, processes, folder, logs)
                shutil.rmtree(folder, ignore_errors=True)
                rows.append(r)
                print(json.dumps({"rep": rep, **r}), flush=True)
    lines = [
        "| rep | processes | whole study, wall s | after the supernet, s | "
        "calibration + anchors + supernet, s | trained after screening | run twice |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rows):
        s = r["seconds"]
        before = sum(s.get(k, 0.0) for k in ("calibration", "anchors", "supernet"))
        by = ", ".join(f"{k} {v}" for k, v in sorted(r["by"].items())) or "-"
        lines.append(
            f"| {i // 2} | {r['processes']} | {r['wall']:.0f} | {r['after']:.0f} | "
            f"{before:.0f} | {by} | {r['twice']} |"
        )
    for rep in range(len(rows) // 2):
        one, two = rows[2 * rep], rows[2 * rep + 1]
        lines.append("")
        lines.append(
            f"rep {rep}: one / two processes: whole study x{one['wall'] / two['wall']:.2f}, "
            f"after the supernet x{one['after'] / max(two['after'], 1e-9):.2f}; the "
            f"machine's two-process ceiling beside them x{ceilings[rep]['ratio']:.2f}"
        )
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
