"""The saturated space: MNIST-1D, fair supernet, accuracy vs training cost, fine-tuning.

Run with ``nasflow search mnist1d`` (or ``nasflow search studies/mnist1d.py``). It was the
default study until the proving ground (``studies/mnist1d_front.py``) replaced it: on this
space random architectures test within the noise of one training of each other, so the
search cannot show its worth here (``benchmarks/results/b1-search-efficiency.md`` and
``b2-ranking.md``, the saturated default space). It stays as the study that
exercises phase 2's fine-tuning under the Pareto successive-halving pruner.

Phase 1 trains the weight-sharing supernet of the default space with strictly fair
sampling; phase 2 runs a multi-objective TPE study (validation accuracy up, predicted
training cost down) where each candidate inherits its weights, is BN-recalibrated, and is
fine-tuned for up to ``finetune.epochs`` epochs under the Pareto-aware successive-halving
pruner (Optuna's Hyperband refuses multi-objective studies); phase 3 retrains the most
accurate Pareto trial from scratch and reports its test accuracy.

Every phase trains with ``stack="auto"``: the speedup-stack layers that measurably pay off
on this machine. The calibration is measured once per device (and space, batch size and
candidate) and stored in the study's database, so later studies there reuse it; it is
held to ``stack_budget`` seconds, and skipped (training plain fp32 eager, which the
summary says) when a probe estimates it would not fit. On a 2-core CPU it may keep no
layer at all; the summary and the report's waterfall show what each layer measured.
"""

from __future__ import annotations

from pathlib import Path

from nasflow.data import load_mnist1d
from nasflow.search import StudySpec
from nasflow.search_spaces.mnist1d import MNIST1DSpace
from nasflow.train import SupernetConfig, TrainConfig

#: Random architectures of this space trained stand-alone with this recipe (source
#: checkouts only): the summary compares the winner with their median.
GROUND_TRUTH = Path(__file__).resolve().parents[1] / "benchmarks" / "data"

study = StudySpec(
    name="mnist1d",
    space=MNIST1DSpace(),
    data=load_mnist1d,
    objectives=("accuracy", "train_cost"),
    supernet=SupernetConfig(sampler="fair", epochs=8, batch_size=64, lr=3e-3),
    n_trials=40,
    bn_batches=10,
    finetune=TrainConfig(epochs=3, batch_size=64, lr=1e-3, warmup_epochs=0),
    train=TrainConfig(epochs=20, batch_size=64, lr=3e-3, weight_decay=1e-2),
    retrain_top=1,
    seed=0,
    stack="auto",
    stack_budget=45.0,
    baseline=(
        GROUND_TRUTH / "mnist1d_ground_truth.csv",
        GROUND_TRUTH / "mnist1d_ground_truth_seed1.csv",
    ),
)
