"""Generalisation suite, variant ``scarce``: scarce data: 800 training sequences (600 train / 200
validation).

The proving-ground study (space, recipes, budget) on MNIST-1D data nobody tuned it for;
2,000 training sequences unless said otherwise, 10,000 test sequences.
"""

from __future__ import annotations

from nasflow.data import MNIST1DVariant
from nasflow.studies.mnist1d_front import on_variant

study = on_variant("scarce", MNIST1DVariant(train_samples=800))
