"""A candidate's training cost before it trains: predicted by the cost model, or measured.

``StudySpec.cost`` names one ``CostEstimator`` (``COST_ESTIMATORS``): ``"model"``
(``PredictedCost``) or ``"measure"`` (``MeasuredCost``). Both estimate one training step
of the study's speedup stack at its precision; the scorer multiplies it by the recipe's
number of steps."""

from __future__ import annotations

import abc
import dataclasses
import logging
from dataclasses import dataclass, field
from typing import ClassVar

import optuna
import torch

from nasflow.cost import CostModel, sees_ops
from nasflow.errors import ConfigError
from nasflow.pipeline._costtable import format_cost_table
from nasflow.record import (
    CalibrationStep,
    CostCalibration,
    CostTableRecord,
    study_cost_table,
    write_record,
)
from nasflow.space import Arch, SearchSpace
from nasflow.supernet import Supernet
from nasflow.train import measure_step_time
from nasflow.train.stack import Stack

_LOG = logging.getLogger(__name__)


@dataclass
class CostEstimator(abc.ABC):
    """Seconds of one training step of a candidate, and its parameter count.

    Attributes:
        space: The search space.
        supernet: The trained supernet (candidates are extracted copies).
        batch: A training batch ``(x, y)`` on ``device``: the input shape and dtype, and
            the samples a measured step trains on.
        device: Where candidates train.
        stack: The study's speedup stack (``None``: plain fp32 eager).
        storage: The cost model's table (see ``CandidateScorer.cost_storage``).
        remeasure: Measure the cost table again (see ``CandidateScorer.remeasure_costs``;
            the scorer folds ``$NASFLOW_REMEASURE_COSTS`` in once, at its construction).
        keep_stored: Take the stored cost table as it is, even one measured on a loaded
            machine (``StudySpec.deterministic``; ``CostModel.keep_loaded``).
    """

    #: The ``StudySpec.cost`` name that selects the estimator.
    kind: ClassVar[str]

    space: SearchSpace
    supernet: Supernet
    batch: tuple[torch.Tensor, torch.Tensor]
    device: torch.device | str
    stack: Stack | None
    storage: str | None = None
    remeasure: bool = False
    keep_stored: bool = False

    def prepare(self, study: optuna.Study, batch_size: int) -> None:  # noqa: B027
        """Set-up for estimates at ``batch_size`` in ``study``: called once per study and
        batch size, before its first estimate (nothing by default)."""

    @abc.abstractmethod
    def step(self, arch: Arch, batch_size: int, path: Arch | None = None) -> tuple[float, int]:
        """``(seconds of one training step of batch_size samples, parameter count)``;
        ``path`` is ``arch``'s supernet path where the caller has it already."""


def untraceable(space: SearchSpace) -> ConfigError:
    """The error for ``cost="model"`` on a space whose ops the cost model cannot trace."""
    return ConfigError(
        f"space {space.name!r}: the cost model's op tracer finds no op in its paths (its "
        "supernet computes with sliced weights, not choice modules), so cost='model' cannot "
        "predict its training cost; use cost='measure' (each candidate's steps timed)"
    )


def traces(model: CostModel) -> bool:
    """Whether the cost model's op tracer sees the ops of ``model``'s space: not for a space
    flagged ``cost_model_traceable = False``, nor where one path traces to no op (a
    sliced-weight supernet that is not flagged)."""
    space = model.space
    return space.cost_model_traceable and bool(model.units(space.sample(0)))


def check_cost_source(space: SearchSpace, cost: str, tabular: bool) -> None:
    """Refuse ``cost="model"`` for a space whose ops the cost model cannot trace, before
    anything trains (a tabular study looks its costs up): one flagged
    ``cost_model_traceable = False``, or one whose ``config["input_shape"]`` lets one
    path be traced now and it shows no op (a sliced-weight supernet not flagged). A space
    without that shape, or whose probe fails, is checked where the cost model is set up,
    on the data's own batch.

    Raises:
        ConfigError: That combination.
    """
    if cost != "model" or tabular:
        return
    if not space.cost_model_traceable:
        raise untraceable(space)
    shape = space.config.get("input_shape")
    if shape is None:
        return
    try:
        seen = sees_ops(space, shape)
    except Exception:  # a probe only: the set-up traces the real batch and says what fails
        return
    if not seen:
        raise untraceable(space)


@dataclass
class PredictedCost(CostEstimator):
    """The hardware-aware cost model (``nasflow.cost.CostModel``), one per batch size, for
    the stack's precision; nothing runs on the device once its table exists."""

    kind = "model"
    models: dict[int, CostModel] = field(default_factory=dict, init=False)

    def model(self, batch_size: int, *, remeasure: bool = False) -> CostModel:
        """The fitted cost model for ``batch_size`` (measures only what neither the
        study's nor the shared table has, or everything with ``remeasure``)."""
        if batch_size not in self.models:
            x = self.batch[0]
            model = CostModel.for_space(
                self.space,
                input_shape=tuple(x.shape[1:]),
                batch_size=batch_size,
                storage_url=self.storage,
                device=self.device,
                precision=self.stack.amp if self.stack and self.stack.amp else "fp32",
                input_dtype=x.dtype,
            )
            model.keep_loaded = self.keep_stored
            if not traces(model):  # (fit() would fail on "distinct x values")
                raise untraceable(self.space)
            self.models[batch_size] = model.fit(remeasure=remeasure)
        return self.models[batch_size]

    def prepare(self, study: optuna.Study, batch_size: int) -> None:
        """Fit the cost model of ``batch_size`` at its first use and record how stable
        its table is, and the measured steps its line was fitted on (``CostCalibration``),
        in the study (the first record only: a resumed study keeps its table, and is not
        re-measured)."""
        if batch_size in self.models:
            return
        stored = study_cost_table(study)
        wanted = self.remeasure
        if wanted and stored is not None:
            _LOG.debug("cost table: not re-measured (a study keeps the table it started with)")
        model = self.model(batch_size, remeasure=wanted and stored is None)
        calibration = None
        if model.calibration is not None:  # what the report draws the fit's points from
            cal = model.calibration
            steps = tuple(
                CalibrationStep(float(p["ops"]), float(p["measured"]), str(p.get("arch", "")))
                for p in cal.points
            )
            calibration = CostCalibration(
                float(cal.slope), float(cal.intercept), steps, batch_size
            )
        record = CostTableRecord.from_dict({**(model.stability or {}), "batch_size": batch_size})
        record = dataclasses.replace(record, calibration=calibration)
        if stored is None:
            write_record(study, record)
        for line in format_cost_table(record):
            _LOG.debug(line)

    def step(self, arch: Arch, batch_size: int, path: Arch | None = None) -> tuple[float, int]:
        model = self.model(batch_size)
        path = self.space.path(arch) if path is None else path
        return model.predict_step_seconds(path), model.params(path)


class MeasuredCost(CostEstimator):
    """The extracted candidate's median training step through the stack, timed now
    (``measure_step_time``: 2 warm-up and 5 timed steps)."""

    kind = "measure"

    def step(self, arch: Arch, batch_size: int, path: Arch | None = None) -> tuple[float, int]:
        path = self.space.path(arch) if path is None else path
        net = self.supernet.extract(path).to(self.device)
        x, y = self.batch
        seconds = measure_step_time(net, x[:batch_size], y[:batch_size], stack=self.stack)
        return seconds, sum(p.numel() for p in net.parameters())


#: ``StudySpec.cost`` name -> estimator.
COST_ESTIMATORS: dict[str, type[CostEstimator]] = {
    c.kind: c for c in (PredictedCost, MeasuredCost)
}
