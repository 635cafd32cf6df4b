"""Phase 3: training a winner from scratch with the study's recipe, data, seed and stack.

The search's phase 3 and ``nasflow retrain`` both train here, so the training cost that
``nasflow retrain`` measures is that of the run the search measured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import torch
from torch import nn

from nasflow.data import DataBundle
from nasflow.search._spec import RECIPE_KEYS, StudySpec
from nasflow.space import Arch
from nasflow.train import TrainConfig, TrainResult, train_standalone
from nasflow.train.stack import Stack


def recipe_for(arch: Arch, base: TrainConfig) -> TrainConfig:
    """``base`` with any of ``RECIPE_KEYS`` that the arch carries as hyper-parameters."""
    changes = {k: arch[k] for k in RECIPE_KEYS if k in arch}
    return replace(base, **changes) if changes else base


def retrain_arch(
    spec: StudySpec,
    arch: Arch,
    data: DataBundle,
    stack: Stack | None = None,
    device: torch.device | str = "cpu",
    epochs: int | None = None,
    on_epoch: Callable[[int, float], None] | None = None,
    *,
    checkpoints: Path | None = None,
    identity: str = "",
    should_stop: Callable[[], bool] | None = None,
    log: Callable[[str], None] | None = None,
    what: str = "training",
) -> tuple[nn.Module, TrainConfig, TrainResult]:
    """Train ``arch`` from freshly initialised weights and score it on validation and test.

    The recipe is the study's training budget with the arch's searched hyper-parameters
    (:func:`recipe_for`); the weights are initialised and the training data shuffled from
    ``spec.seed``; every batch goes through ``stack``.

    Args:
        spec: The study (space, recipe, seed).
        arch: The architecture.
        data: The study's data.
        stack: The speedup stack (``None``: plain fp32 eager).
        device: Where to train.
        epochs: Train this many epochs instead of the recipe's.
        on_epoch: Called with ``(epoch, mean loss)`` after each epoch.
        checkpoints: Checkpoint the training there and resume from there (see
            ``nasflow.train.train_standalone``, with ``identity``, ``should_stop``,
            ``log`` and ``what``).

    Returns:
        ``(network, recipe, result)``; ``result.seconds`` is the measured training cost.

    Raises:
        TrainingInterrupted: ``should_stop`` asked to stop (checkpointed).
    """
    recipe = recipe_for(arch, spec.train)
    if epochs is not None:
        recipe = replace(recipe, epochs=epochs)
    train = data.batches("train", recipe.batch_size, spec.seed)
    torch.manual_seed(spec.seed)
    net = spec.space.build(arch)
    result = train_standalone(
        net,
        train,
        data.batches("val"),
        recipe,
        data.batches("test"),
        device,
        on_epoch=on_epoch,
        stack=stack,
        checkpoints=checkpoints,
        identity=identity,
        should_stop=should_stop,
        log=log,
        what=what,
    )
    return net, recipe, result
