"""Retraining an exported architecture from scratch with its study's recipe and data."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from nasflow.errors import ConfigError
from nasflow.export._format import ONNX_FILE, ExportError, ExportInfo, retrained_notes
from nasflow.export._loader import Exported, read_export
from nasflow.export._study import find_study_spec, study_data_spec
from nasflow.export._writer import (
    atomic_dir,
    check_target,
    not_replaceable,
    prepare_trained,
    write_export,
)
from nasflow.train import TrainConfig, TrainResult
from nasflow.train.stack import Stack


@dataclass(frozen=True)
class Retrained:
    """A from-scratch retrain of an export.

    Attributes:
        exported: The export that was retrained (its weights are not used).
        recipe: The training recipe (the study's, with the arch's hyper-parameters).
        result: Accuracies and the measured training seconds.
        data: Which study provided the data and recipe.
        net: The retrained network.
        seed: The seed it was initialised and its data shuffled with (the study's).
        stack: The speedup stack it trained with.
    """

    exported: Exported
    recipe: TrainConfig
    result: TrainResult
    data: str
    net: nn.Module
    seed: int
    stack: Stack


def retrain_exported(
    path: os.PathLike | str,
    epochs: int | None = None,
    study_file: str | None = None,
    device: torch.device | str = "cpu",
    on_epoch: Callable[[int, float], None] | None = None,
) -> Retrained:
    """Train the architecture of an export from freshly initialised weights.

    The data, seed and recipe come from the study: ``study_file`` (a path or a registered
    study name), else the registered study named like the exported trial's study when its
    data is the data that study recorded (never another study of the same space). It
    trains through the search's phase 3 (:func:`nasflow.search.retrain_arch`):
    hyper-parameters searched with the architecture (``lr``, ``weight_decay``,
    ``batch_size``) override the recipe, and every batch goes
    through the study's speedup stack: its ``Stack``, or with ``stack="auto"`` the stack
    the export's weights were trained with where it records one (phase 3's winners, and
    supernet weights of a study that recorded its resolved stack), else plain fp32 eager.

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
    from nasflow.data import data_fingerprint
    from nasflow.pipeline import retrain_arch

    if epochs is not None and (
        isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1
    ):
        raise ConfigError(f"epochs must be an int >= 1, got {epochs!r}")
    given = find_study_spec(study_file) if study_file is not None else None
    # A study file brings its own space (one no registry knows, say); its name and
    # fingerprint are still checked against the export.
    exported = read_export(path, given[0].space if given is not None else None)
    name = exported.info.study.get("name")
    found = given
    if found is None and isinstance(name, str):  # never another study of the same space
        found = study_data_spec(name, exported.info.study.get("data_fingerprint"))
    if found is None:
        raise ExportError(
            f"no study file to retrain {str(path)!r} with: pass --study STUDY_FILE (the "
            f"study file that ran study {name!r}; no ready study of that name has its data)"
        )
    spec, where = found
    if spec.space.name != exported.space.name:
        raise ExportError(
            f"{where} searches space {spec.space.name!r}, the export is of {exported.space.name!r}"
        )
    data = spec.data()
    if tuple(data.input_shape) != exported.info.input_shape:
        raise ExportError(
            f"{where} gives inputs of shape {list(data.input_shape)}, the export takes "
            f"{list(exported.info.input_shape)}"
        )
    recorded, have = exported.info.study.get("data_fingerprint"), data_fingerprint(data)
    if recorded is not None and have != recorded:  # (as `nasflow export` refuses it)
        raise ExportError(
            f"the data of {where} (fingerprint {have!r}) is not the data "
            f"study {name!r} was searched on ({recorded!r}); pass --study with the study "
            "file that ran it"
        )
    if study_file is not None and Path(study_file).exists():  # the record names no path
        where = f"study file {Path(study_file).name!r}"
    if spec.space is not exported.space:  # the same name; build what the export describes
        spec = spec.replace(space=exported.space)
    stack = study_stack(spec.stack, exported.info.weights.get("stack"))
    net, recipe, result = retrain_arch(
        spec, exported.arch, data, stack, device, epochs=epochs, on_epoch=on_epoch
    )
    return Retrained(exported, recipe, result, where, net, spec.seed, stack)


def study_stack(stack: Stack | str | None, recorded: object) -> Stack:
    """The speedup stack a study trains with: its ``Stack``; for ``"auto"`` the stack
    ``recorded`` (a ``Stack.to_dict()``, e.g. a phase-3 winner's) when there is one; else
    plain fp32 eager."""
    if isinstance(stack, Stack):
        return stack
    if stack == "auto" and isinstance(recorded, dict):
        return Stack.from_dict(recorded)
    return Stack()


def retrain_target(path: os.PathLike | str, out: os.PathLike | str | None, force: bool) -> Path:
    """Where ``nasflow retrain PATH`` writes (``out``, default ``path`` itself), checked
    before anything is trained: a folder other than ``path`` must be empty or absent, or an
    export replaced with ``force``; ``path`` itself is an export, updated in place.

    Raises:
        ExportError: ``out`` exists and cannot be written to, or lies inside ``path``.
    """
    target = Path(out) if out is not None else Path(path)
    if target.resolve() != Path(path).resolve():
        if target.resolve().is_relative_to(Path(path).resolve()):
            raise ExportError(
                f"--out {str(target)!r} is inside the export {str(path)!r}; give a folder "
                "outside it, or no --out to update the export in place"
            )
        check_target(target, force)
    elif target.is_dir():  # in place: it must be an export nasflow may replace, as written
        why = not_replaceable(target)
        if why is not None:
            raise ExportError(
                f"{str(target)!r} cannot be updated in place ({why}); give --out DIR for the "
                "retrained export"
            )
    return target


def write_retrained(
    done: Retrained, out: os.PathLike | str, force: bool = False, onnx: bool | None = None
) -> ExportInfo:
    """Write an export of the retrained network: weights, ``arch.json``, model card.

    ``arch.json`` and ``README.md`` report the test and validation accuracy and the
    measured training time of the retrained weights only. Writing to the retrained
    export's own folder replaces it (all or nothing); another folder follows
    ``nasflow export``'s rules (empty or absent, or an export replaced with ``force``).

    Args:
        done: What ``retrain_exported`` returned.
        out: The export directory to write.
        force: Replace an existing export at ``out``.
        onnx: Also write and check ``model.onnx`` (default: when the retrained export had
            one).

    Returns:
        The record written to ``arch.json``.
    """
    src = done.exported
    out = retrain_target(src.path, out, force)
    in_place = out.resolve() == src.path.resolve()
    if onnx is None:
        onnx = (src.path / ONNX_FILE).is_file()
    res, recipe = done.result, done.recipe
    how = f"`nasflow retrain` ({recipe.epochs} epochs, data of {done.data})"
    study = {k: v for k, v in src.info.study.items() if k != "data"}
    if "train_cost" in src.info.metrics and "train_cost_predicted_s" not in study:
        study["train_cost_predicted_s"] = src.info.metrics["train_cost"]  # older exports
    net, info = prepare_trained(
        src.space,
        src.arch,
        {k: v.detach().cpu() for k, v in done.net.state_dict().items()},
        metrics={
            "test_accuracy": float(res.test_accuracy or 0.0),
            "val_accuracy": float(res.val_accuracy),
            "train_seconds_measured": float(res.seconds),
        },
        notes=retrained_notes(how),
        study={**study, "data": done.data},
        weights={
            "source": how,
            "recipe": dataclasses.asdict(recipe),
            "seed": done.seed,
            "stack": done.stack.to_dict(),
        },
        input_shape=src.info.input_shape,
    )
    with atomic_dir(out, force or in_place) as tmp:
        return write_export(tmp, src.space, net, info, onnx)
