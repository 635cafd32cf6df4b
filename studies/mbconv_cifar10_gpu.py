"""MBConv (FairNAS / SPOS MobileNetV2 space) at full width on CIFAR-10 at 32x32, for a GPU.

The full-size ``MBConvSpace(image_size=32, num_classes=10)`` of the ``mbconv_cifar10``
study's docstring: 16 searchable layers (kernel 3/5/7 x expansion 3/6, plus skip where
shapes match) with the CIFAR strides, on the 50,000 CIFAR-10 training images (45,000
train / 5,000 validation, flips and crops) and the official 10,000 test images.

This is the CIFAR-scale study of the speedup stack's GPU measurement
(``nasflow measure-stack --study studies/mbconv_cifar10_gpu.py --device cuda``;
``benchmarks/results/b3-speedup-stack.md`` says which card and which candidate). Its
search settings follow SPOS/FairNAS in shape (fair supernet, 1,000 screened candidates,
fine-tuned finalists) but were not tuned end to end here: the project's machines have no
GPU, and on a CPU one supernet epoch of this space takes hours.

The data is ``NASFLOW_CIFAR10`` if set (an ``ImageFolder`` folder or zip with ``train/``
and ``test/``), else ``../shared/data/cifar10-jpg.zip`` beside this repository.
"""

from __future__ import annotations

import os
from pathlib import Path

from nasflow.data import DataBundle, load_cifar10
from nasflow.search import FineTuning, StudySpec
from nasflow.search_spaces.mbconv import MBConvSpace
from nasflow.train import SupernetConfig, TrainConfig

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cifar10-jpg.zip"
IMAGE_SIZE = 32


def data() -> DataBundle:
    """CIFAR-10 at 32x32: 45,000 train / 5,000 validation (augmented), 10,000 test."""
    return load_cifar10(
        os.environ.get("NASFLOW_CIFAR10") or DEFAULT_DATA,
        image_size=IMAGE_SIZE,
        val_fraction=0.1,
        augment=True,
        cache=True,
    )


study = StudySpec(
    name="mbconv_cifar10_gpu",
    space=MBConvSpace(image_size=IMAGE_SIZE, num_classes=10),
    data=data,
    objectives=("accuracy", "train_cost"),
    supernet=SupernetConfig(sampler="fair", epochs=100, batch_size=256, lr=3e-3),
    n_trials=1000,
    finetuning=FineTuning(finalists=8, rungs=(5, 15), keep=0.5),
    bn_batches=8,
    train=TrainConfig(epochs=100, batch_size=256, lr=3e-3, weight_decay=5e-2),
    retrain_top=1,
    seed=0,
)
