"""Training: supernet steps and trainer, plain loops, checkpoints."""

from __future__ import annotations

from nasflow.data import Batches
from nasflow.train._checkpoint import (
    Progress,
    list_checkpoints,
    load_checkpoint,
    load_latest,
    save_checkpoint,
)
from nasflow.train._errors import CheckpointError, NonFiniteLossError, TrainingInterrupted
from nasflow.train._loop import evaluate, make_optimizer, warmup_cosine
from nasflow.train._recipe import Recipe, SupernetConfig, TrainConfig
from nasflow.train._standalone import (
    EpochTrainer,
    TrainResult,
    train_epochs,
    train_standalone,
)
from nasflow.train._supernet import SupernetTrainer, supernet_step
from nasflow.train.stack._timer import measure_step_time

__all__ = [
    "Batches",
    "CheckpointError",
    "EpochTrainer",
    "NonFiniteLossError",
    "Progress",
    "Recipe",
    "SupernetConfig",
    "SupernetTrainer",
    "TrainConfig",
    "TrainResult",
    "TrainingInterrupted",
    "evaluate",
    "list_checkpoints",
    "load_checkpoint",
    "load_latest",
    "make_optimizer",
    "measure_step_time",
    "save_checkpoint",
    "supernet_step",
    "train_epochs",
    "train_standalone",
    "warmup_cosine",
]
