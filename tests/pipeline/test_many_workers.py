"""Eight real processes x 20 trials on one PostgreSQL study through nasflow's storage."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from nasflow.storage import open_storage, resolve_storage

REPO = Path(__file__).resolve().parents[2]
WORKERS, TRIALS, ENQUEUED = 8, 20, 40

#: One worker: opens the storage the way nasflow does (schema lock, heartbeats, retry
#: callback), joins the study and runs its trials; the objective is trivial on purpose:
#: this test is about the storage, the tests around it about training.
WORKER = """
import os, sys
import optuna
from nasflow.storage import open_storage, resolve_storage

optuna.logging.set_verbosity(optuna.logging.WARNING)
storage = open_storage(resolve_storage(sys.argv[1], "unused"))
study = optuna.create_study(
    study_name=sys.argv[2], storage=storage, load_if_exists=True,
    sampler=optuna.samplers.RandomSampler(seed=os.getpid()),
)

def objective(trial):
    trial.set_user_attr("pid", os.getpid())
    return trial.suggest_float("x", 0.0, 1.0) ** 2 + trial.suggest_int("k", 0, 9)

study.optimize(objective, n_trials=int(sys.argv[3]))
"""


@pytest.mark.slow
def test_eight_workers_run_160_trials_with_unique_gap_free_numbers(
    postgres_url, unique_name
) -> None:
    # Trials queued beforehand must each run exactly once, whichever worker pops them.
    storage = open_storage(resolve_storage(postgres_url, "unused"))
    study = optuna.create_study(study_name=unique_name, storage=storage)
    queued = [{"x": i / ENQUEUED, "k": i % 10} for i in range(ENQUEUED)]
    for params in queued:
        study.enqueue_trial(params)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                textwrap.dedent(WORKER),
                postgres_url,
                unique_name,
                str(TRIALS),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
        )
        for _ in range(WORKERS)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    seconds = time.perf_counter() - t0
    try:
        for p, (out, err) in zip(procs, outputs, strict=True):
            assert p.returncode == 0, err
            text = (out + err).lower()
            for bad in ("database is locked", "deadlock", "traceback", "error"):
                assert bad not in text, out + err
        trials = study.get_trials()
        assert sorted(t.number for t in trials) == list(range(WORKERS * TRIALS))
        assert all(t.state == TrialState.COMPLETE for t in trials)
        assert len({t._trial_id for t in trials}) == len(trials)
        per_worker = Counter(t.user_attrs["pid"] for t in trials)
        assert sorted(per_worker.values()) == [TRIALS] * WORKERS
        ran = Counter((t.params["x"], t.params["k"]) for t in trials)
        assert all(ran[(q["x"], q["k"])] == 1 for q in queued)  # each queued trial once
        print(f"\n[{WORKERS} workers x {TRIALS} trials on PostgreSQL] {seconds:.1f}s")
    finally:
        optuna.delete_study(study_name=unique_name, storage=storage)
