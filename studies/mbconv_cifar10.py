"""MBConv (FairNAS / SPOS MobileNetV2 space) on a CIFAR-10 subset, sized for a CPU.

Run with ``nasflow search studies/mbconv_cifar10.py`` (or ``nasflow search mbconv_cifar10``).

The space is MobileNetV2 at half width and half depth (10 searchable layers, each kernel
3/5/7 x expansion 3/6, plus skip where shapes match: 1.1e8 architectures) with the CIFAR
strides, on CIFAR-10 downsampled to 16x16 like the image proving ground
(``studies/cifar10_cpu.py``, whose cached tensor file it shares): 1,600 training and 400
validation images of a class-balanced subset, the official 10,000 test images. Phase 1
trains its supernet with strictly fair sampling (7 paths per step) for 4 epochs; phase 2
scores 100 candidates one-shot (BN-recalibrated validation accuracy up, training cost
predicted by the cost model down); the 4 finalists are fine-tuned from their inherited
weights (1, then 2 epochs) and the best is retrained from scratch for 6 epochs.

An MBConv path costs several times the image proving ground's space per epoch on a CPU, so
this study is sized to finish in minutes; it has no ground-truth table, so it demonstrates
the MBConv space rather than measures the search. At this size its supernet barely leaves
chance, so its screening ranks little (its run, cost and winner:
``benchmarks/results/images.md``). The image proving ground, measured and ranking, is
``cifar10_cpu``. For a real search use the full-size
``MBConvSpace(image_size=32, num_classes=10)`` on a GPU.

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


IMAGE_SIZE = 16


def data() -> DataBundle:
    """A class-balanced CIFAR-10 subset at 16x16: 1,600 train / 400 validation / 10,000 test."""
    return load_cifar10(
        os.environ.get("NASFLOW_CIFAR10") or DEFAULT_DATA,
        image_size=IMAGE_SIZE,
        train_limit=2_000,
        val_fraction=0.2,
        augment=True,
        cache=True,
    )


study = StudySpec(
    name="mbconv_cifar10",
    space=MBConvSpace(image_size=IMAGE_SIZE, num_classes=10, width_mult=0.5, depth=0.5),
    data=data,
    objectives=("accuracy", "train_cost"),
    supernet=SupernetConfig(sampler="fair", epochs=4, batch_size=64, lr=3e-3),
    n_trials=100,
    finetuning=FineTuning(finalists=4, rungs=(1, 2)),
    bn_batches=4,
    train=TrainConfig(epochs=6, batch_size=64, lr=3e-3, weight_decay=1e-2),
    retrain_top=1,
    seed=0,
)
