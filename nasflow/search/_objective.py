"""Phase 2: scoring one candidate architecture from the trained supernet."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import optuna
import torch
from torch import nn

from nasflow.search._compat import set_constraints
from nasflow.search._spec import StudySpec
from nasflow.space import Arch, SearchSpace
from nasflow.supernet import Supernet, recalibrate_bn
from nasflow.train import (
    Batches,
    EpochTrainer,
    NonFiniteLossError,
    TrainConfig,
    evaluate,
    measure_step_time,
)

#: Hyper-parameter labels that override the training recipe when a space declares them.
RECIPE_KEYS = ("lr", "weight_decay", "batch_size")


class CandidateError(RuntimeError):
    """A candidate failed (out of memory, or an error in its network); the study goes on."""


def recipe_for(arch: Arch, base: TrainConfig) -> TrainConfig:
    """``base`` with any of ``RECIPE_KEYS`` that the arch carries as hyper-parameters."""
    changes = {k: arch[k] for k in RECIPE_KEYS if k in arch}
    return replace(base, **changes) if changes else base


def arch_summary(space: SearchSpace, arch: Arch) -> str:
    """A compact one-line view of an arch: path values, then ``label=value`` hypers."""
    parts = [str(arch[c.label]) for c in space.path_choices if c.kind != "value"]
    parts += [f"{c.label}={arch[c.label]}" for c in space.path_choices if c.kind == "value"]
    for c in space.hyper_choices:
        v = arch[c.label]
        parts.append(f"{c.label}={v:.3g}" if isinstance(v, float) else f"{c.label}={v}")
    return " ".join(parts)


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@dataclass
class CandidateScorer:
    """Scores trials: cost, budget gate, BN-recalibrated accuracy, optional fine-tuning.

    Attributes:
        spec: The study.
        supernet: The trained supernet (never modified: candidates are extracted copies).
        train: Training batches (BN recalibration, fine-tuning, step timing).
        val: Validation batches (the score; the test split is never used here).
        report: ``report(trial, values, step)`` hook given intermediate objective vectors;
            it raises ``optuna.TrialPruned`` to stop a trial.
        device: Where candidates run.
    """

    spec: StudySpec
    supernet: Supernet
    train: Batches
    val: Batches
    report: Callable[[optuna.Trial, Sequence[float], int], None]
    device: torch.device | str = "cpu"

    def __post_init__(self) -> None:
        x, y = next(iter(self.train.epoch(0)))
        self._timing_batch = (x.to(self.device), y.to(self.device))

    def predicted_train_cost(self, net: nn.Module, recipe: TrainConfig) -> float:
        """Seconds to train ``net`` stand-alone with ``recipe``: measured median step time of
        this candidate on this device times the recipe's number of steps."""
        x, y = self._timing_batch
        step = measure_step_time(net, x[: recipe.batch_size], y[: recipe.batch_size])
        steps_per_epoch = len(self.train.dataset) // recipe.batch_size  # type: ignore[arg-type]
        return step * steps_per_epoch * recipe.epochs

    def values(self, acc: float, cost: float, params: int) -> list[float]:
        table = {"accuracy": acc, "train_cost": cost, "params": float(params)}
        return [table[o] for o in self.spec.objectives]

    def __call__(self, trial: optuna.Trial) -> float | list[float]:
        spec = self.spec
        arch = spec.space.suggest(trial)
        trial.set_user_attr("arch", arch.to_json())
        try:
            return self._score(trial, arch)
        except NonFiniteLossError as e:
            trial.set_user_attr("fail_reason", f"non-finite loss: {e}")
            raise optuna.TrialPruned(f"non-finite loss: {e}") from None
        except torch.OutOfMemoryError as e:
            trial.set_user_attr("fail_reason", "out of memory")
            raise CandidateError(f"trial {trial.number}: out of memory: {e}") from None

    def _score(self, trial: optuna.Trial, arch: Arch) -> float | list[float]:
        spec = self.spec
        net = self.supernet.extract(spec.space.path(arch)).to(self.device)
        params = count_params(net)
        recipe = recipe_for(arch, spec.train)
        cost = self.predicted_train_cost(net, recipe)
        trial.set_user_attr("params", params)
        trial.set_user_attr("train_cost", cost)
        violations = spec.budget.violations(params, cost)
        if violations:
            set_constraints(trial, violations)
            over = {k: v for k, v in violations.items() if v > 0}
            if over:
                why = ", ".join(f"{k} {v:+.0%} over the limit" for k, v in over.items())
                trial.set_user_attr("skipped", f"over budget: {why}")
                raise optuna.TrialPruned(f"over budget: {why}")
        recalibrate_bn(net, self.train.epoch(0), spec.bn_batches, device=self.device)
        acc, _ = evaluate(net, self.val, device=self.device)
        trial.set_user_attr("supernet_accuracy", acc)
        if spec.finetune_epochs:
            ft = recipe_for(arch, replace(spec.finetune, epochs=spec.finetune_epochs))
            ft_batches = Batches(self.train.dataset, ft.batch_size, seed=spec.seed, drop_last=True)
            trainer = EpochTrainer(net, ft_batches, ft, self.device)
            for epoch in range(1, spec.finetune_epochs + 1):
                trainer.run_epoch()
                acc, _ = evaluate(net, self.val, device=self.device)
                trial.set_user_attr("epochs_trained", epoch)
                self.report(trial, self.values(acc, cost, params), epoch)
        if not math.isfinite(acc):
            raise NonFiniteLossError(f"validation accuracy is {acc}")
        values = self.values(acc, cost, params)
        return values[0] if len(values) == 1 else values


def make_reporter(
    spec: StudySpec, pruner: Any
) -> Callable[[optuna.Trial, Sequence[float], int], None]:
    """The per-epoch hook: Optuna's report/should_prune for one objective, else ours."""
    if len(spec.objectives) == 1:

        def report_single(trial: optuna.Trial, values: Sequence[float], step: int) -> None:
            trial.report(values[0], step)
            if trial.should_prune():
                raise optuna.TrialPruned(f"pruned at epoch {step}")

        return report_single

    def report_multi(trial: optuna.Trial, values: Sequence[float], step: int) -> None:
        if pruner is None:
            return
        pruner.check(trial, values, step)

    return report_multi
