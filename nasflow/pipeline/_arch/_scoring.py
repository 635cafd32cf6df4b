"""Phase 2: scoring one candidate architecture from the trained supernet (or looking it up
in a benchmark table: :class:`TabularScorer`)."""

from __future__ import annotations

import json
import logging
import math
import shutil
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
import torch
from optuna.trial import TrialState
from torch import nn

from nasflow.data import Batches, DataBundle
from nasflow.errors import NasflowError
from nasflow.pipeline._arch._training import recipe_for
from nasflow.pipeline._cost import COST_ESTIMATORS
from nasflow.pipeline._recovery import (
    TrialInterrupted,
    TrialSwept,
    claim_folder,
    original_number,
    was_swept,
)
from nasflow.record import (
    ARCH_ATTR,
    EPOCHS_TRAINED_ATTR,
    FAIL_REASON_ATTR,
    PARAMS_ATTR,
    RESUMED_AT_ATTR,
    SCORE_SECONDS_ATTR,
    SCREEN_KEY,
    SCREENED_OUT_ATTR,
    SKIPPED_ATTR,
    SUPERNET_ACCURACY_ATTR,
    SUPERNET_LOSS_ATTR,
    TRACEBACK_ATTR,
    TRAIN_COST_ATTR,
    TrialRecord,
    reuse_score,
    set_constraints,
    trial_screen,
)
from nasflow.search import StudySpec, promoted
from nasflow.settings import remeasure_requested
from nasflow.space import Arch, SearchSpace
from nasflow.supernet import Supernet, recalibrate_bn
from nasflow.tabular import TabularObjective
from nasflow.train import (
    EpochTrainer,
    NonFiniteLossError,
    Progress,
    TrainConfig,
    TrainingInterrupted,
    evaluate,
    list_checkpoints,
    load_latest,
    save_checkpoint,
)
from nasflow.train.stack import Stack

_LOG = logging.getLogger(__name__)


class CandidateError(NasflowError, RuntimeError):
    """A candidate failed (out of memory, or an error in its network); the study goes on."""


class TabularScorer(TabularObjective):
    """A tabular study's scorer in the screening loops: an architecture the table has no
    row for raises ``CandidateError`` (its trial fails with ``fail_reason``, the study
    goes on) instead of returning NaN, which Optuna would warn about."""

    def score(self, trial: optuna.Trial, arch: Arch) -> float:
        value = super().score(trial, arch)
        if math.isnan(value):
            raise CandidateError(str(TrialRecord.from_trial(trial).fail_reason))
        return value


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is an allocation failure (CUDA OOM, ``MemoryError``, or the CPU
    allocator's ``RuntimeError``, which torch does not type)."""
    if isinstance(error, (torch.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(error, RuntimeError) and "can't allocate memory" in str(error)


def arch_summary(space: SearchSpace, arch: Arch) -> str:
    """A compact one-line view of an arch: path values, then ``label=value`` hypers."""
    parts = [str(arch[c.label]) for c in space.path_choices if c.kind != "value"]
    parts += [f"{c.label}={arch[c.label]}" for c in space.path_choices if c.kind == "value"]
    for c in space.hyper_choices:
        v = arch[c.label]
        parts.append(f"{c.label}={v:.3g}" if isinstance(v, float) else f"{c.label}={v}")
    return " ".join(parts)


@dataclass
class CandidateScorer:
    """Scores trials: cost, budget gate, BN-recalibrated accuracy, optional fine-tuning.

    The cost comes from the ``CostEstimator`` that ``spec.cost`` names (``estimator``),
    for ``spec.stack`` (a resolved ``Stack`` or ``None``) and its precision.

    An architecture already scored in the study (a COMPLETE trial with the same ``arch``)
    is not scored again: the trial reuses its values and records ``duplicate_of``.

    Attributes:
        spec: The study.
        supernet: The trained supernet (never modified: candidates are extracted copies).
        data: The study's data (fine-tuning reads the training split at its own batch
            size; the validation split is the score; the test split is never used here).
        report: ``report(trial, values, step)`` hook given intermediate objective vectors;
            it raises ``optuna.TrialPruned`` to stop a trial.
        device: Where candidates run.
        checkpoint_dir: Fine-tuning checkpoints go to ``checkpoint_dir/trial-N`` (``N`` the
            original trial of a retry), so a retried or resumed trial continues where the
            first attempt stopped; the folder is removed when the trial finishes.
        should_stop: Polled after every fine-tuning step; when true the trial finishes the
            step, checkpoints and raises ``TrialInterrupted``.
        cost_storage: The cost model's table (the study's database; ``None``: the local
            cache file). Tables measured by earlier studies on this device are reused
            from the shared table (``nasflow.cost.shared_table_url``).
        remeasure_costs: Measure the cost table again and replace the stored one (also
            ``$NASFLOW_REMEASURE_COSTS``); a study that already recorded its table keeps it.
    """

    spec: StudySpec
    supernet: Supernet
    data: DataBundle
    report: Callable[[optuna.Trial, Sequence[float], int], None]
    device: torch.device | str = "cpu"
    checkpoint_dir: Path | None = None
    should_stop: Callable[[], bool] | None = None
    cost_storage: str | None = None
    remeasure_costs: bool = False
    #: The number of the trial last stopped on request (set by ``__call__``).
    interrupted: int | None = field(default=None, init=False)
    #: The number of the trial last found failed by another worker's sweep while this
    #: one fine-tuned it (set by ``score``).
    swept: int | None = field(default=None, init=False)
    #: Training batches at the training budget's batch size (BN recalibration, step
    #: timing) and validation batches, from ``data``.
    train: Batches = field(init=False, repr=False)
    val: Batches = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.train = self.data.batches("train", self.spec.train.batch_size, self.spec.seed)
        self.val = self.data.batches("val")
        x, y = next(iter(self.train.epoch(0)))
        self.estimator = COST_ESTIMATORS[self.spec.cost](
            self.spec.space,
            self.supernet,
            (x.to(self.device), y.to(self.device)),
            self.device,
            self.spec.stack if isinstance(self.spec.stack, Stack) else None,
            storage=self.cost_storage,
            remeasure=self.remeasure_costs or remeasure_requested(),
            keep_stored=self.spec.deterministic,
        )
        #: Batch sizes whose estimator set-up ran (once per study and batch size).
        self._prepared: set[int] = set()
        #: The study the estimator records its tables with (``setup``; else the trial's:
        #: a batched screening scores on an in-memory copy of the study).
        self._study: optuna.Study | None = None

    def setup(self, study: optuna.Study) -> None:
        """Once per study, before its first trial: set the cost estimator up for the
        study's batch size (where the space does not search the batch size; else each
        batch size is set up at its first use)."""
        self._study = study
        if "batch_size" not in self.spec.space.labels:
            self._prepare(study, self.spec.train.batch_size)

    def _prepare(self, study: optuna.Study, batch_size: int) -> None:
        if batch_size not in self._prepared:
            self.estimator.prepare(study, batch_size)
            self._prepared.add(batch_size)

    def _steps(self, recipe: TrainConfig) -> int:
        return len(self.train.dataset) // recipe.batch_size * recipe.epochs  # type: ignore[arg-type]

    def predicted_cost(
        self, arch: Arch, recipe: TrainConfig, path: Arch | None = None
    ) -> tuple[float, int]:
        """``(training cost in seconds, parameter count)`` of ``arch`` (its supernet
        ``path`` where known), before any training: the estimator's step time
        (``spec.cost``: predicted or measured) times the recipe's number of steps."""
        step, params = self.estimator.step(arch, recipe.batch_size, path)
        return step * self._steps(recipe), params

    def values(self, acc: float, cost: float, params: int, loss: float) -> list[float]:
        ppl = math.inf if loss > 700 else math.exp(loss)  # (math.exp overflows past ~709)
        table = {"accuracy": acc, "perplexity": ppl, "train_cost": cost, "params": float(params)}
        return [table[o] for o in self.spec.objectives]

    def __call__(self, trial: optuna.Trial) -> float | list[float]:
        spec = self.spec
        arch = spec.space.suggest(trial)
        trial.set_user_attr(ARCH_ATTR, arch.to_json())
        reused = reuse_score(trial, arch)
        if reused is not None:  # already scored in this study: nothing is trained again
            return reused
        return self.score(trial, arch)

    def score(self, trial: optuna.Trial, arch: Arch) -> float | list[float]:
        """Score ``arch`` on ``trial`` (its ``arch`` attribute set) without looking for an
        earlier score of it: the batched screening (``_screening``) never proposes
        an architecture the study has scored, and a look-up would grow with the study.

        Raises:
            optuna.TrialPruned: Over budget, screened out, pruned, or a non-finite loss.
            CandidateError: Out of memory (the study goes on).
            TrialInterrupted: Fine-tuning stopped on request (checkpointed).
        """
        folder = self._folder(trial)
        with claim_folder(folder):  # (the folder goes before it is released)
            return self._score_held(trial, arch, folder)

    def _score_held(
        self, trial: optuna.Trial, arch: Arch, folder: Path | None
    ) -> float | list[float]:
        """:meth:`score` with the trial's checkpoint folder held."""
        keep = False
        try:
            return self._score(trial, arch, folder)
        except TrialInterrupted as e:
            keep = True  # the queued resumption continues from the checkpoint
            self.interrupted = e.trial_number
            raise
        except TrialSwept as e:
            keep = True  # its retry (another worker's, or ours) resumes from the checkpoint
            self.swept = e.trial_number
            raise
        except NonFiniteLossError as e:
            trial.set_user_attr(FAIL_REASON_ATTR, f"non-finite loss: {e}")
            raise optuna.TrialPruned(f"non-finite loss: {e}") from None
        except optuna.TrialPruned:
            raise
        except Exception as e:
            # Optuna keeps no reason for a failed trial: store it, with the traceback.
            trial.set_user_attr(TRACEBACK_ATTR, traceback.format_exc()[-8000:])
            if is_out_of_memory(e):
                trial.set_user_attr(FAIL_REASON_ATTR, f"out of memory: {str(e)[:300]}")
                raise CandidateError(f"trial {trial.number}: out of memory: {e}") from None
            trial.set_user_attr(FAIL_REASON_ATTR, f"{type(e).__name__}: {str(e)[:500]}")
            raise
        finally:
            if folder is not None and not keep:
                shutil.rmtree(folder, ignore_errors=True)

    def _folder(self, trial: optuna.Trial) -> Path | None:
        if self.checkpoint_dir is None or not self.spec.finetune_epochs:
            return None
        return self.checkpoint_dir / f"trial-{original_number(trial)}"

    @staticmethod
    def _log(msg: str) -> None:
        """Per-candidate detail (fine-tuning progress)."""
        _LOG.debug(msg)

    def _score(self, trial: optuna.Trial, arch: Arch, folder: Path | None) -> float | list[float]:
        spec = self.spec
        recipe = recipe_for(arch, spec.train)
        path = spec.space.path(arch)  # once per candidate: cost and score share it
        self._prepare(self._study or trial.study, recipe.batch_size)
        cost, params = self.predicted_cost(arch, recipe, path)
        trial.set_user_attr(PARAMS_ATTR, params)
        trial.set_user_attr(TRAIN_COST_ATTR, cost)
        violations = spec.budget.violations(params, cost)
        if violations:
            set_constraints(trial, violations)
            over = {k: v for k, v in violations.items() if v > 0}
            if over:
                why = ", ".join(f"{k} {v:+.0%} over the limit" for k, v in over.items())
                trial.set_user_attr(SKIPPED_ATTR, f"over budget: {why}")
                raise optuna.TrialPruned(f"over budget: {why}")
        # The one-shot score: extract the path's weights, re-estimate BN, validate.
        t0 = time.perf_counter()
        net = self.supernet.extract(path).to(self.device)
        bn = self.train.fixed(spec.bn_batches)  # the same images for every path
        recalibrate_bn(net, bn, spec.bn_batches, device=self.device)
        acc, loss = evaluate(net, self.val, device=self.device)
        trial.set_user_attr(SCORE_SECONDS_ATTR, time.perf_counter() - t0)
        trial.set_user_attr(SUPERNET_ACCURACY_ATTR, acc)
        if math.isfinite(loss):  # (JSON storages keep no inf/NaN; the accuracy says enough)
            trial.set_user_attr(SUPERNET_LOSS_ATTR, loss)
        values = self.values(acc, cost, params, loss)
        if spec.finetune_epochs:
            if spec.screen_keep < 1:
                self._screen(trial, values, folder)
            values = self._finetune(trial, arch, net, cost, params, folder)
        if not math.isfinite(values[0]):
            raise NonFiniteLossError(f"validation accuracy is {values[0]}")
        return values[0] if len(values) == 1 else values

    def _screen(self, trial: optuna.Trial, values: list[float], folder: Path | None) -> None:
        """Fine-tune only candidates whose supernet score ranks in the top ``screen_keep``
        of those scored so far; prune the others (a resumed fine-tuning always goes on)."""
        trial.set_user_attr(SCREEN_KEY, values)
        if folder is not None and list_checkpoints(folder):
            return
        factor = max(2, round(1 / self.spec.screen_keep))
        states = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
        trials = trial.study.get_trials(deepcopy=False, states=states)
        others = [trial_screen(t) for t in trials if t.number != trial.number]
        directions = trial.study.directions
        # Not the whole first front: in a multi-objective study new candidates often extend
        # it, and keeping it all fine-tuned 198 of 300 candidates at screen_keep=0.05 on
        # the proving ground; by front and crowding distance the share stays bounded.
        keep = promoted(values, others, directions, factor, factor - 1, keep_front=False)
        if keep:
            return
        scored = sum(isinstance(o, list) for o in others) + 1
        why = (
            f"screened out: its supernet score ranks outside the top {self.spec.screen_keep:.0%} "
            f"of the {scored} candidates scored so far"
            if scored >= factor
            else f"screened out: fewer than {factor} candidates scored yet to rank it among"
        )
        trial.set_user_attr(SCREENED_OUT_ATTR, why)
        raise optuna.TrialPruned(why)

    def _finetune(
        self,
        trial: optuna.Trial,
        arch: Arch,
        net: nn.Module,
        cost: float,
        params: int,
        folder: Path | None,
    ) -> list[float]:
        """Fine-tune with inherited weights, one Optuna step per epoch, checkpointing each
        epoch (and on a stop request) so a retry or resumption continues exactly there.
        Returns the objective values after the last epoch."""
        spec = self.spec
        ft = recipe_for(arch, spec.finetune)  # type: ignore[arg-type]
        ft_batches = self.data.batches("train", ft.batch_size, spec.seed)
        # Seeded steps: a candidate's dropout does not depend on what the process scored
        # and trained before it (nor on the worker that trains it).
        trainer = EpochTrainer(net, ft_batches, ft, self.device, stack=spec.stack, seed=spec.seed)
        history = self._restore(trial, arch, trainer, folder)
        for epoch, values in enumerate(history, 1):  # the pruner judges resumed epochs too
            self.report(trial, values, epoch)
        stop = self.should_stop or (lambda: False)
        while trainer.epoch < ft.epochs:
            try:
                trainer.run_epoch(stop)
            except TrainingInterrupted:
                raise self._interrupted(trial, trainer, arch, history, folder) from None
            acc, loss = evaluate(net, self.val, device=self.device)
            history.append(self.values(acc, cost, params, loss))
            self._save(folder, trainer, arch, history)
            trial.set_user_attr(EPOCHS_TRAINED_ATTR, trainer.epoch)
            self._log(f"trial {trial.number}: fine-tuned epoch {trainer.epoch}/{ft.epochs}")
            if was_swept(trial):  # another worker failed it meanwhile and queued its retry
                raise TrialSwept(trial.number)
            self.report(trial, history[-1], trainer.epoch)
            if trainer.epoch < ft.epochs and stop():
                raise self._interrupted(trial, trainer, arch, history, folder)
        return history[-1]  # at least one epoch was trained or restored

    def _interrupted(
        self,
        trial: optuna.Trial,
        trainer: EpochTrainer,
        arch: Arch,
        history: list[list[float]],
        folder: Path | None,
    ) -> TrialInterrupted:
        path = self._save(folder, trainer, arch, history)
        trial.set_user_attr(FAIL_REASON_ATTR, "stopped on request; queued to be resumed")
        where = f"epoch {trainer.epoch + 1}, batch {trainer.batch}"
        return TrialInterrupted(trial.number, f"trial {trial.number} fine-tuning at {where}", path)

    def _save(
        self, folder: Path | None, trainer: EpochTrainer, arch: Arch, history: list[list[float]]
    ) -> Path | None:
        """Checkpoint fine-tuning; keep the newest two files (one as a fallback)."""
        if folder is None:
            return None
        at = Progress(trainer.epoch, trainer.batch)
        state = {"arch": arch.to_json(), "trainer": trainer.state_dict()}
        path = save_checkpoint(folder / at.filename(), {**state, "history": json.dumps(history)})
        for _, old in list_checkpoints(folder)[2:]:
            old.unlink(missing_ok=True)
        return path

    def _restore(
        self, trial: optuna.Trial, arch: Arch, trainer: EpochTrainer, folder: Path | None
    ) -> list[list[float]]:
        """Load the newest valid fine-tuning checkpoint of this trial; its report history."""
        if folder is None:
            return []
        found = load_latest(folder, on_bad=lambda e: self._log(f"trial {trial.number}: {e}"))
        if found is None:
            return []
        at, state = found
        if state.get("arch") != arch.to_json():
            self._log(f"trial {trial.number}: ignoring {folder}: it is for another architecture")
            return []
        trainer.load_state_dict(state["trainer"])
        trial.set_user_attr(RESUMED_AT_ATTR, [at.epoch, at.batch])
        self._log(
            f"trial {trial.number}: resumed fine-tuning from {folder.name} at epoch "
            f"{at.epoch}, batch {at.batch}"
        )
        return json.loads(state["history"])


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
