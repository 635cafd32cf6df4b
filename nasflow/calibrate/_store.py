"""The ``stack="auto"`` calibration, measured once per device and shared by every study.

Like the cost model's op-latency table (``nasflow.cost``), the calibration's record lives
in a SQLAlchemy table in the study's database (or the local cache file), and in the table
shared by every study of this user (``nasflow.cost.shared_table_url``:
``$NASFLOW_COST_CACHE``, else the local cache file; ``off`` shares nothing): one row per
(device fingerprint, context) in ``nasflow_stack_calibrations``. The device fingerprint
is the cost model's (``DeviceFingerprint``: torch version, CPU/GPU model, threads); the
context is what the measurement depends on besides the device: the space (name and
fingerprint), the input shape, the batch size, the candidate the calibration trains, the
recipe (learning rate, weight decay, planned batches) and the calibration's own settings.

The table is a measurement store (``nasflow.cost._tables._store.DeviceStore``: one declarative
base, one schema lock, one load/replace and one own -> shared -> copy-back policy with the
op-latency table). A study with the same device and context reuses the record stored in
its own database, else the shared one (copied into its database), and trains nothing; anything else
(another machine, torch version, thread count, batch size or space) calibrates, and so
does an explicit refresh
(``StudySpec(recalibrate_stack=True)``, ``nasflow search --recalibrate-stack`` or
``NASFLOW_RECALIBRATE_STACK=1``), which replaces the stored row.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
import torch
from sqlalchemy.orm import Mapped, Session, mapped_column

from nasflow.calibrate._auto import SCHEMA
from nasflow.calibrate._study import (
    STUDY_CALIBRATION_BATCHES,
    calibrate_for_space,
    calibration_candidate,
    study_candidates,
)
from nasflow.cost import (
    DeviceFingerprint,
    DeviceStore,
    MeasurementBase,
    from_shared,
    load_reasons,
    measured_now,
    store_everywhere,
)
from nasflow.errors import StudyRecordError
from nasflow.record import StackRecord
from nasflow.space import Arch, SearchSpace
from nasflow.train import Batches
from nasflow.train.stack import Stack

#: The table's name.
TABLE = "nasflow_stack_calibrations"


class StackCalibrationRow(MeasurementBase):
    __tablename__ = TABLE
    __table_args__ = (sa.UniqueConstraint("device_key", "context_key"),)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    device_key: Mapped[str] = mapped_column(sa.String(32), index=True)
    context_key: Mapped[str] = mapped_column(sa.String(64))
    fingerprint: Mapped[str] = mapped_column(sa.Text)
    context: Mapped[str] = mapped_column(sa.Text)
    record: Mapped[str] = mapped_column(sa.Text)
    measured_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=measured_now)


@dataclass(frozen=True)
class CalibrationContext:
    """What a stack calibration's measurement depends on besides the device.

    Attributes:
        space: The space's name.
        space_fingerprint: ``SearchSpace.fingerprint()``.
        input_shape: Shape of one input sample.
        batch_size: Training batch size.
        arch: The calibrated candidate, as JSON.
        lr: Peak learning rate of the calibration runs (the accuracy check).
        weight_decay: Their weight decay.
        planned_batches: Batches a candidate trains in the study (amortizes warm-up).
        calibration_batches: Batches each variant trains per phase.
        candidates: Layers considered, in stacking order.
    """

    space: str
    space_fingerprint: str
    input_shape: tuple[int, ...]
    batch_size: int
    arch: str
    lr: float
    weight_decay: float
    planned_batches: int
    calibration_batches: int
    candidates: tuple[str, ...]

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @property
    def key(self) -> str:
        """A stable 24-hex-digit hash of every field."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:24]


@dataclass(frozen=True)
class StoredCalibration:
    """A stored record and when it was measured."""

    record: dict[str, Any]
    measured_at: datetime


class StackCalibrationTable(DeviceStore):
    """Stored ``stack="auto"`` calibrations of any number of devices, in one database.

    Args:
        url: ``None`` for the local cache file (``nasflow.cost.default_cache_path()``), a
            file path, ``sqlite:///FILE`` or ``postgresql://...`` (the study's database).

    Raises:
        ValueError: An unsupported URL, or a database that cannot be opened (naming it,
            password redacted).
    """

    what = "the stack calibration table"

    def load(
        self, device: DeviceFingerprint, context: CalibrationContext
    ) -> StoredCalibration | None:
        """The stored record of ``context`` on ``device``, if any."""
        row = self.load_row(StackCalibrationRow, device.key, context.key)
        if row is None:
            return None
        return StoredCalibration(json.loads(row.record), row.measured_at)

    def store(
        self,
        device: DeviceFingerprint,
        context: CalibrationContext,
        record: dict[str, Any],
        measured_at: datetime | None = None,
    ) -> None:
        """Store (or replace) the record of ``context`` on ``device``, measured at
        ``measured_at`` (default: now; a record copied from another table keeps its own)."""
        self.replace_row(
            StackCalibrationRow(
                device_key=device.key,
                context_key=context.key,
                fingerprint=device.to_json(),
                context=context.to_json(),
                record=json.dumps(record),
                measured_at=measured_at or measured_now(),
            )
        )

    def count(self) -> int:
        """Stored records, of every device and context."""
        with Session(self.engine) as s:
            return int(s.scalar(sa.select(sa.func.count()).select_from(StackCalibrationRow)) or 0)


def usable(record: Any) -> bool:
    """Whether a stored record is a complete calibration of the current schema (read as
    the study reads it, ``StackRecord``)."""
    try:
        rec = StackRecord.from_dict(record)
    except StudyRecordError:
        return False
    if rec.schema != SCHEMA or rec.skipped or rec.stack is None:
        return False
    try:
        Stack.from_dict(dict(rec.stack))
    except (KeyError, TypeError, ValueError):
        return False
    return True


@dataclass(frozen=True)
class DeviceStack:
    """The stack a study trains with, from the device's record or a calibration now.

    Attributes:
        stack: The stack to train with.
        record: The record to copy into the study (``nasflow:stack``); its ``"origin"``
            says whether it was ``"reused"`` (with when it was measured) or ``"calibrated"``
            now, and a calibration that did not fit its budget carries ``"skipped"``.
        reused: Whether the record came from the table (no calibration ran).
        seconds: Time spent here (look-up, budget probe, calibration).
    """

    stack: Stack
    record: dict[str, Any]
    reused: bool
    seconds: float


def calibration_context(
    space: SearchSpace,
    arch: Arch,
    train: Batches,
    lr: float,
    weight_decay: float,
    planned_batches: int,
    device: torch.device | str = "cpu",
) -> CalibrationContext:
    """The context of a study's calibration of ``arch`` (see :class:`CalibrationContext`)."""
    x, _ = train.dataset[0]
    return CalibrationContext(
        space.name,
        space.fingerprint(),
        tuple(int(d) for d in x.shape),
        int(train.batch_size),
        arch.to_json(),
        float(lr),
        float(weight_decay),
        int(planned_batches),
        STUDY_CALIBRATION_BATCHES,
        study_candidates(device),
    )


def device_stack(
    space: SearchSpace,
    train: Batches,
    val: Batches,
    lr: float,
    weight_decay: float,
    planned_batches: int,
    storage_url: str | os.PathLike | None,
    device: torch.device | str = "cpu",
    seed: int = 0,
    budget: float | None = None,
    refresh: bool = False,
    store: bool = True,
    should_stop: Callable[[], bool] | None = None,
) -> DeviceStack:
    """Reuse this device's stored ``stack="auto"`` calibration, or calibrate and store it.

    A calibration taken while the machine looked loaded (its ``calibration["load"]``: a
    busy thread got less than ``nasflow.cost._measure.LOADED_SHARE`` of a core) is used
    for this study but not stored for the device (its ``origin["not_stored"]`` says why,
    and the study's stack line says it): a later study calibrates again rather than
    reuse multipliers that the load distorted.

    Args:
        space: The search space.
        train: Training batches (the study's batch size).
        val: Validation batches.
        lr: Peak learning rate of the calibration runs.
        weight_decay: Their weight decay.
        planned_batches: Batches a candidate trains in the study.
        storage_url: The database of the table (see :class:`StackCalibrationTable`).
        device: Where to train.
        seed: Picks the calibrated candidate and seeds its weights.
        budget: Seconds a calibration may take (see ``calibrate_for_space``).
        refresh: Calibrate even when a record is stored, and replace it.
        store: Write a new calibration to the table (false on non-zero DDP ranks).
        should_stop: Polled after every round of a calibration (see
            ``calibrate_for_space``); nothing is stored when it stops one.

    Raises:
        TrainingInterrupted: ``should_stop`` asked to stop a calibration.
    """
    t0 = time.perf_counter()
    device = torch.device(device)
    arch, _ = calibration_candidate(space, seed)
    context = calibration_context(space, arch, train, lr, weight_decay, planned_batches, device)
    fingerprint = DeviceFingerprint.current(device, "fp32")
    origin = {
        "device_key": fingerprint.key,
        "fingerprint": fingerprint.describe(),
        "context_key": context.key,
        "table": TABLE,
    }
    table = StackCalibrationTable(storage_url)
    shared = StackCalibrationTable.shared_for(table)  # None: the study's own is the shared one
    try:
        found = None if refresh else _stored(table, shared, fingerprint, context, store, origin)
        if found is not None:
            origin.update(kind="reused", measured_at=found.measured_at.isoformat())
            record = {**found.record, "origin": origin}
            stack = Stack.from_dict(record["stack"])
            return DeviceStack(stack, record, True, time.perf_counter() - t0)
        result = calibrate_for_space(
            space,
            train,
            val,
            lr,
            weight_decay,
            planned_batches=planned_batches,
            device=device,
            seed=seed,
            budget=budget,
            arch=arch,
            should_stop=should_stop,
        )
        record = dict(result.record)
        when = measured_now()
        refused = _refused(record)  # said in the study's stack line (``not_stored``)
        if refused:
            origin["not_stored"] = refused
        elif store and not record.get("skipped"):  # the next study on this device reuses it
            store_everywhere(table, shared, lambda t: t.store(fingerprint, context, record, when))
        origin.update(
            kind="skipped" if record.get("skipped") else "calibrated",
            measured_at=when.isoformat(),
        )
        record["origin"] = origin
        return DeviceStack(result.stack, record, False, time.perf_counter() - t0)
    finally:
        table.close()
        if shared is not None:
            shared.close()


def _stored(
    table: StackCalibrationTable,
    shared: StackCalibrationTable | None,
    fingerprint: DeviceFingerprint,
    context: CalibrationContext,
    store: bool,
    origin: dict[str, Any],
) -> StoredCalibration | None:
    """The usable record of ``context`` on this device: the study's table's, else the
    shared one's (copied into the study's where ``store``; ``origin["source"]`` says so)."""
    found = table.load(fingerprint, context)
    if found is not None and usable(found.record):
        return found
    found = from_shared(
        table,
        shared,
        lambda t: t.load(fingerprint, context),
        copy=(lambda t, f: t.store(fingerprint, context, f.record, f.measured_at))
        if store
        else None,
        usable=lambda f: usable(f.record),
    )
    if found is not None:
        origin["source"] = "the table shared by this user's studies"
    return found


def _refused(record: dict[str, Any]) -> str | None:
    """Why a calibration just taken is not stored for the device: the machine looked
    loaded while it ran (its ``calibration["load"]``); ``None`` where it may be stored."""
    load = record.get("calibration", {}).get("load") or {}
    if not load.get("loaded"):
        return None
    why = load_reasons(None, None, load.get("core_share"))
    return f"the machine looked loaded while it ran ({why}); the next study calibrates again"
