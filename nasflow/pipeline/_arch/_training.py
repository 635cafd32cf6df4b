"""One stand-alone training of one architecture, the service every phase that trains from
scratch uses (the anchors, phase 3's retrains): the recipe an architecture trains with
(:func:`recipe_for`), the training itself (:func:`retrain_arch`), and the trained winner
saved with its record (:func:`train_winner`; its identity: :func:`winner_identity`)."""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from nasflow.data import DataBundle
from nasflow.pipeline._arch._winners import save_winner
from nasflow.pipeline._context import RunContext
from nasflow.record import WinnerRecord
from nasflow.search import RECIPE_KEYS, StudySpec
from nasflow.space import Arch
from nasflow.train import TrainConfig, TrainResult, train_standalone
from nasflow.train.stack import Stack, is_rank_zero

_LOG = logging.getLogger(__name__)


def winner_identity(
    spec: StudySpec, data: DataBundle, arch: Arch, stack: Stack | None
) -> dict[str, Any]:
    """What a from-scratch training of ``arch`` on ``data`` through ``stack`` is
    (``nasflow.record.WINNER_IDENTITY``): a saved winner with the same identity is reused
    instead of trained again."""
    splits = (data.train, data.val, data.test)
    return {
        "space": spec.space.name,
        "fingerprint": spec.space.fingerprint(),
        "arch": arch.to_dict(),
        "recipe": asdict(recipe_for(arch, spec.train)),
        "seed": spec.seed,
        "stack": (stack or Stack()).to_dict(),
        "data": {
            "name": data.name,
            "sizes": [getattr(d, "__len__", lambda: None)() for d in splits],
        },
    }


def train_winner(
    ctx: RunContext,
    data: DataBundle,
    number: int,
    arch: Arch,
    stack: Stack | None,
    identity: dict[str, Any],
    desc: str,
    predicted_train_cost: float | None = None,
    params: int | None = None,
    extra: dict[str, Any] | None = None,
) -> tuple[TrainResult, Path | None]:
    """Train trial ``number``'s ``arch`` from scratch on ``data`` with the study's recipe
    through ``stack``, score it, and save its weights and record (with ``extra``'s keys) in
    ``RUNS/NAME/winners/trial-N`` (rank 0; the folder, else ``None``).

    The training is checkpointed in ``RUNS/NAME/retraining/trial-N`` after every epoch and
    when a stop is requested (``ctx.stop``), resumed from there by the next run, and the
    checkpoints are removed once the weights are saved.

    Raises:
        TrainingInterrupted: A stop was requested (checkpointed).
    """
    epochs = recipe_for(arch, ctx.spec.train).epochs
    ctx.quiet_log(f"{desc}: training from scratch, {epochs} epochs")
    bar = ctx.bar(epochs, desc)
    checkpoints = ctx.folder.retraining(number) if is_rank_zero() else None
    try:
        net, _, res = retrain_arch(
            ctx.spec,
            arch,
            data,
            stack,
            ctx.device,
            on_epoch=lambda e, loss: ctx.advance(bar, e, loss),
            checkpoints=checkpoints,
            identity=json.dumps(identity, sort_keys=True),
            should_stop=ctx.stop.is_set,
            what=desc,
        )
    finally:
        ctx.close_bar(bar)
    if not is_rank_zero():
        return res, None
    record = WinnerRecord(
        identity=identity,
        study=ctx.spec.name,
        trial=number,
        test_accuracy=float(res.test_accuracy or 0.0),
        val_accuracy=res.val_accuracy,
        measured_train_cost=res.seconds,
        predicted_train_cost=predicted_train_cost,
        params=params,
        device=str(ctx.device),
    )
    folder = ctx.folder.winner(number)
    save_winner(folder, net, {**record.to_dict(), **(extra or {})})
    if checkpoints is not None:
        shutil.rmtree(checkpoints, ignore_errors=True)
        with contextlib.suppress(OSError):  # (another training's may be in progress there)
            checkpoints.parent.rmdir()
    return res, folder


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
            ``nasflow.train.train_standalone``, with ``identity``, ``should_stop`` and
            ``what``; its lines go to the ``nasflow`` logger).

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
        what=what,
    )
    return net, recipe, result
