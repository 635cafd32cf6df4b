"""Retraining an exported architecture from scratch with its study's recipe and data."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass

import torch

from nasflow.export._format import ExportError
from nasflow.export._loader import Exported, read_export
from nasflow.export._study import find_study_spec
from nasflow.train import Batches, TrainConfig, TrainResult, train_standalone


@dataclass(frozen=True)
class Retrained:
    """A from-scratch retrain of an export.

    Attributes:
        exported: The export that was retrained (its weights are not used).
        recipe: The training recipe (the study's, with the arch's hyper-parameters).
        result: Accuracies and the measured training seconds.
        data: Which study provided the data and recipe.
    """

    exported: Exported
    recipe: TrainConfig
    result: TrainResult
    data: str


def retrain_exported(
    path: os.PathLike | str,
    epochs: int | None = None,
    study_file: str | None = None,
    device: torch.device | str = "cpu",
    on_epoch: Callable[[int, float], None] | None = None,
) -> Retrained:
    """Train the architecture of an export from freshly initialised weights.

    The data, seed and recipe come from the study: ``study_file`` (a path or a registered
    study name), else the registered study named like the exported trial's study, else the
    registered study of the space's name. Hyper-parameters searched with the architecture
    (``lr``, ``weight_decay``, ``batch_size``) override the recipe, as in the search.

    Args:
        path: The export directory.
        epochs: Epochs to train (default: the study's training budget).
        study_file: Where to take the data and recipe from.
        device: Where to train.
        on_epoch: Called with ``(epoch, mean loss)`` after each epoch.

    Raises:
        ValueError: ``epochs`` is not a positive int.
        ExportError: A bad export, no study found, or a study of another space or input.
    """
    from nasflow.search._objective import recipe_for

    if epochs is not None and (
        isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1
    ):
        raise ValueError(f"epochs must be an int >= 1, got {epochs!r}")
    exported = read_export(path)
    names = [n for n in (exported.info.study.get("name"), exported.space.name) if n]
    found = find_study_spec(study_file, *names)
    if found is None:
        raise ExportError(
            f"no study file to retrain {str(path)!r} with: pass --study STUDY_FILE "
            f"(no registered study named {names})"
        )
    spec, where = found
    if spec.space.name != exported.space.name:
        raise ExportError(
            f"{where} searches space {spec.space.name!r}, the export is of {exported.space.name!r}"
        )
    recipe = recipe_for(exported.arch, spec.train)
    if epochs is not None:
        recipe = dataclasses.replace(recipe, epochs=epochs)
    data = spec.data()
    if tuple(data.input_shape) != exported.info.input_shape:
        raise ExportError(
            f"{where} gives inputs of shape {list(data.input_shape)}, the export takes "
            f"{list(exported.info.input_shape)}"
        )
    train = Batches(data.train, recipe.batch_size, shuffle=True, seed=spec.seed, drop_last=True)
    val = Batches(data.val, 512, shuffle=False)
    test = Batches(data.test, 512, shuffle=False)
    torch.manual_seed(spec.seed)
    net = exported.space.build(exported.arch)
    result = train_standalone(net, train, val, recipe, test, device, on_epoch=on_epoch)
    return Retrained(exported, recipe, result, where)
