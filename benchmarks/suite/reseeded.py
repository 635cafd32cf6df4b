"""Generalisation suite, variant ``reseeded``: the proving ground's generator settings, drawn with
other seeds (7 and 8).

The proving-ground study (space, recipes, budget) on MNIST-1D data nobody tuned it for;
2,000 training sequences unless said otherwise, 10,000 test sequences.
"""

from __future__ import annotations

from nasflow.data import MNIST1DVariant
from nasflow.studies.mnist1d_front import on_variant

study = on_variant("reseeded", MNIST1DVariant(train_samples=2000, seed=7, test_seed=8))
