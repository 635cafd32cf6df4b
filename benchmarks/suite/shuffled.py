"""Generalisation suite, variant ``shuffled``: no locality: every sequence's positions permuted by
one fixed permutation.

The proving-ground study (space, recipes, budget) on MNIST-1D data nobody tuned it for;
2,000 training sequences unless said otherwise, 10,000 test sequences.
"""

from __future__ import annotations

from nasflow.data import MNIST1DVariant
from nasflow.studies.mnist1d_front import on_variant

study = on_variant("shuffled", MNIST1DVariant(train_samples=2000, shuffle_seq=True))
