"""NAS-Bench-201 in tabular mode: compare samplers in seconds, no training.

Run with ``nasflow search studies/nb201_tabular.py`` (add ``--n-trials N --seed S``).

Each trial's cell is looked up in the NAS-Bench-201 table (all 15,625 cells with their
CIFAR-10 test accuracy after 200 epochs, mean over the benchmark's seeds); ``n_trials``
counts distinct cells, as the screening of a trained study does (a sampler proposing a
cell already looked up is asked again, then a random unseen cell is drawn). The run ends
with the best cell found and its regret to the table's optimum (94.37). The table holds
no validation accuracy, so the searched metric *is* the test accuracy: the numbers
compare search strategies with each other, not with methods that select on validation.

The table is ``NASFLOW_NB201_CSV`` if set, else ``../shared/data/nb201_cifar10.csv``
beside this repository (a CSV with columns ``arch`` and ``cifar10_test_acc_200ep``).
"""

from __future__ import annotations

import os
from pathlib import Path

from nasflow.search import StudySpec
from nasflow.search_spaces.nas_bench_201 import NASBench201Space
from nasflow.tabular import TabularBenchmark

DEFAULT_TABLE = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "nb201_cifar10.csv"
)
METRIC = "cifar10_test_acc_200ep"

space = NASBench201Space()

study = StudySpec(
    name="nb201_tabular",
    space=space,
    table=TabularBenchmark(
        os.environ.get("NASFLOW_NB201_CSV") or DEFAULT_TABLE, space, metric=METRIC
    ),
    objectives=("accuracy",),
    sampler="tpe",
    n_trials=100,
    seed=0,
)
