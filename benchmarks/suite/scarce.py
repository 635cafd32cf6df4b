"""Generalisation suite, variant ``scarce``: scarce data: 800 training sequences (600 train / 200 validation).

The proving-ground study (space, recipes, budget) on MNIST-1D data nobody tuned it for;
2,000 training sequences unless said otherwise, 10,000 test sequences.
"""

from __future__ import annotations

import sys
from pathlib import Path

from nasflow.data import MNIST1DVariant

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _variant import variant_study

study = variant_study("scarce", MNIST1DVariant(train_samples=800))
