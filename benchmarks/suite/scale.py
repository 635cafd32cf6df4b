"""Generalisation suite, variant ``scale``: stronger rescaling and shear of the digit templates:
0.8 and 1.5 (published 0.4, 0.75).

The proving-ground study (space, recipes, budget) on MNIST-1D data nobody tuned it for;
2,000 training sequences unless said otherwise, 10,000 test sequences.
"""

from __future__ import annotations

from nasflow.data import MNIST1DVariant
from nasflow.studies.mnist1d_front import on_variant

study = on_variant("scale", MNIST1DVariant(train_samples=2000, scale_coeff=0.8, shear_scale=1.5))
