"""The batched screening's write: Optuna's ``Study.add_trials`` against nasflow's
one-transaction writer (``nasflow.search.write_trials``), side by side.

Trials shaped like the proving ground's screened candidates (7 categorical parameters, 2
objective values, the 5 user attributes a scored candidate carries) are written in
batches of ``--batch`` to fresh SQLite studies, the two writers taking turns batch by
batch in one process (so machine load hits both alike). Printed: CPU and wall ms per
trial for each, their ratio, and the time of the last tenth of the batches against the
first (whether a write grows with the trials stored).

    python benchmarks/batch_write.py --trials 3000 --batch 32
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, create_trial

from nasflow.record import (
    ARCH_ATTR,
    PARAMS_ATTR,
    SCORE_SECONDS_ATTR,
    SUPERNET_ACCURACY_ATTR,
    TRAIN_COST_ATTR,
)
from nasflow.search import write_trials

OPS = ("k3_e2", "k5_e2", "k7_e2", "k5_e4", "skip")


def make_trials(n: int, seed: int = 0) -> list[FrozenTrial]:
    rng = np.random.default_rng(seed)
    dists = {f"s{s}/l{k}": CategoricalDistribution(OPS) for s in (1, 2) for k in range(3)}
    dists["width"] = CategoricalDistribution((0.25, 0.5, 0.75, 1.0))
    out = []
    for _ in range(n):
        params = {name: d.choices[int(rng.integers(len(d.choices)))] for name, d in dists.items()}
        acc, cost = float(rng.uniform(0.1, 0.95)), float(rng.uniform(0.5, 15))
        out.append(
            create_trial(
                values=[acc, cost],
                params=params,
                distributions=dists,
                user_attrs={
                    ARCH_ATTR: json.dumps(params, sort_keys=True),
                    PARAMS_ATTR: int(rng.integers(1_000, 100_000)),
                    TRAIN_COST_ATTR: cost,
                    SCORE_SECONDS_ATTR: float(rng.uniform(0.02, 0.1)),
                    SUPERNET_ACCURACY_ATTR: acc,
                },
            )
        )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=3000)
    p.add_argument("--batch", type=int, default=32)
    args = p.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    trials = make_trials(args.trials)
    batches = [trials[i : i + args.batch] for i in range(0, len(trials), args.batch)]
    writers = {
        "Study.add_trials": lambda study, batch: study.add_trials(batch),
        "write_trials": write_trials,
    }
    cpu: dict[str, list[float]] = {k: [] for k in writers}
    wall: dict[str, list[float]] = {k: [] for k in writers}
    with tempfile.TemporaryDirectory() as tmp:
        studies = {
            name: optuna.create_study(
                storage=f"sqlite:///{Path(tmp) / f'{i}.db'}",
                study_name="b",
                directions=["maximize", "minimize"],
            )
            for i, name in enumerate(writers)
        }
        for k, batch in enumerate(batches):
            order = list(writers) if k % 2 == 0 else list(writers)[::-1]
            for name in order:
                c0, w0 = time.process_time(), time.perf_counter()
                writers[name](studies[name], batch)
                cpu[name].append((time.process_time() - c0) / len(batch))
                wall[name].append((time.perf_counter() - w0) / len(batch))
        for name, study in studies.items():
            assert len(study.get_trials(deepcopy=False)) == len(trials), name
    tenth = max(1, len(batches) // 10)
    rows = {}
    for name in writers:
        rows[name] = {
            "cpu_ms_per_trial": round(1000 * statistics.fmean(cpu[name]), 2),
            "wall_ms_per_trial": round(1000 * statistics.fmean(wall[name]), 2),
            "cpu_ms_first_tenth": round(1000 * statistics.fmean(cpu[name][:tenth]), 2),
            "cpu_ms_last_tenth": round(1000 * statistics.fmean(cpu[name][-tenth:]), 2),
        }
        print(name, json.dumps(rows[name]))
    a, b = rows["Study.add_trials"], rows["write_trials"]
    print(
        f"{len(trials)} trials in batches of {args.batch}, SQLite: write_trials is "
        f"x{a['cpu_ms_per_trial'] / b['cpu_ms_per_trial']:.1f} cheaper in CPU, "
        f"x{a['wall_ms_per_trial'] / b['wall_ms_per_trial']:.1f} in wall time"
    )


if __name__ == "__main__":
    main()
