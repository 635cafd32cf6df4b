"""Generalisation suite, variant ``noisy``: stronger noise: correlated 0.5 (published 0.25), per-
point 0.05 (0.02).

The proving-ground study (space, recipes, budget) on MNIST-1D data nobody tuned it for;
2,000 training sequences unless said otherwise, 10,000 test sequences.
"""

from __future__ import annotations

from nasflow.data import MNIST1DVariant
from nasflow.studies.mnist1d_front import on_variant

study = on_variant(
    "noisy", MNIST1DVariant(train_samples=2000, corr_noise_scale=0.5, iid_noise_scale=0.05)
)
