"""What a cost model reports besides predictions: its spending, where its table came
from, and the errors and warnings it raises."""

from __future__ import annotations

from dataclasses import dataclass

from nasflow.errors import NasflowError


class MissingLatencyError(NasflowError, LookupError):
    """An op instance is not in the table and the model may not measure it."""


class LoadedMachineWarning(UserWarning):
    """The machine looked loaded while the table was measured (a busy thread got less
    than its share of a core, or the reference op's rounds disagreed): the table's
    best-of-rounds figures resist that, but re-measuring on a quiet machine,
    ``fit(remeasure=True)``, is safer."""


#: ``CostModel.stability["source"]`` values.
MEASURED, SHARED, STORED = "measured now", "shared table", "study database"


@dataclass
class CostStats:
    """What a model has spent on the device so far (in this process)."""

    measured_ops: int = 0
    measured_steps: int = 0
    seconds_measuring: float = 0.0
