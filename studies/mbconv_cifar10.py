"""MBConv (FairNAS / SPOS MobileNetV2 space) on a CIFAR-10 subset, sized for a CPU.

Run with ``nasflow search studies/mbconv_cifar10.py`` (or ``nasflow search mbconv_cifar10``).

The space is MobileNetV2 at half width and half depth (10 searchable layers, each kernel
3/5/7 x expansion 3/6, plus skip where shapes match: 1.1e8 architectures) with the CIFAR
strides on 32x32 images. Phase 1 trains its supernet with strictly fair sampling (7 paths
per step) on 1,800 training images (200 held out for validation) for 2 epochs: 56 fair
steps of 64 images. Phase 2 runs a multi-objective TPE study (BN-recalibrated validation
accuracy up, training cost predicted by the cost model down; the model measures this
space's op latencies once per machine and keeps them in the study's database) scored from
the supernet; phase 3 retrains the most accurate Pareto trial from scratch for 3 epochs and
reports its test accuracy on 1,000 test images. These sizes demonstrate the pipeline on a
CPU; they are far from a converged search. For a real one, raise the limits and epochs
below or use the full-size ``MBConvSpace(image_size=32, num_classes=10)`` on a GPU.

The data is ``NASFLOW_CIFAR10`` if set (an ``ImageFolder`` folder or zip with ``train/``
and ``test/``), else ``../shared/data/cifar10-jpg.zip`` beside this repository.
"""

from __future__ import annotations

import os
from pathlib import Path

from nasflow.data import DataBundle, load_cifar10
from nasflow.search import StudySpec
from nasflow.search_spaces.mbconv import MBConvSpace
from nasflow.train import SupernetConfig, TrainConfig

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cifar10-jpg.zip"


def data() -> DataBundle:
    """A class-balanced CIFAR-10 subset: 1,800 train / 200 validation / 1,000 test."""
    return load_cifar10(
        os.environ.get("NASFLOW_CIFAR10") or DEFAULT_DATA,
        train_limit=2_000,
        test_limit=1_000,
        val_fraction=0.1,
        augment=True,
    )


study = StudySpec(
    name="mbconv_cifar10",
    space=MBConvSpace(image_size=32, num_classes=10, width_mult=0.5, depth=0.5),
    data=data,
    objectives=("accuracy", "train_cost"),
    supernet=SupernetConfig(sampler="fair", epochs=2, batch_size=64, lr=3e-3),
    n_trials=20,
    bn_batches=4,
    train=TrainConfig(epochs=3, batch_size=64, lr=3e-3, weight_decay=1e-2),
    retrain_top=1,
    seed=0,
)
