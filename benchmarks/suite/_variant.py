"""Shared by the suite's study files: the proving-ground study on another MNIST-1D variant."""

from __future__ import annotations

import functools
from pathlib import Path

from nasflow.data import MNIST1DVariant, load_mnist1d
from nasflow.search import StudySpec
from nasflow.studies.mnist1d_front import study as proving_ground

#: Where each variant's random-architecture tables live.
TABLES = Path(__file__).resolve().parents[1] / "data" / "suite"


def variant_study(name: str, variant: MNIST1DVariant) -> StudySpec:
    """The proving-ground study (space, recipe, budget) on ``variant``'s data.

    Its baseline is the variant's random-architecture tables where they exist
    (``benchmarks/data/suite/<name>_seed<K>.csv``), so the summary ranks the winner there.
    """
    tables = tuple(sorted(TABLES.glob(f"{name}_seed*.csv")))
    return proving_ground.replace(
        name=f"suite_{name}",
        data=functools.partial(load_mnist1d, variant=variant, val_fraction=0.25),
        baseline=tables,
    )
