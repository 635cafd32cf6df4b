"""Generalisation suite, variant ``hard``: noise and translation raised together (correlated
0.5, per-point 0.05, translation up to 60), generator seeds 11 and 12.

The proving-ground study (space, recipes, budget) on MNIST-1D data nobody tuned it for;
2,000 training sequences, 10,000 test sequences. The combination is the kind of held-out
data on which an earlier default study picked a below-median architecture.
"""

from __future__ import annotations

from nasflow.data import MNIST1DVariant
from nasflow.studies.mnist1d_front import on_variant

study = on_variant(
    "hard",
    MNIST1DVariant(
        train_samples=2000,
        corr_noise_scale=0.5,
        iid_noise_scale=0.05,
        max_translation=60,
        seed=11,
        test_seed=12,
    ),
)
