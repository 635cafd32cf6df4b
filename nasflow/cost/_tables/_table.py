"""The persisted latency table: SQLAlchemy tables in the study's database or a local cache.

Four tables, all keyed by the device fingerprint (``DeviceFingerprint.key``):

- ``nasflow_cost_devices``: one row per fingerprint, with its fields as JSON;
- ``nasflow_cost_ops``: the measured op instances (raw forward+backward and optimizer
  seconds, spread, FLOPs, parameters), unique per (device, op key);
- ``nasflow_cost_calibrations``: the fitted per-step overhead of a (space, input shape,
  batch size) context, unique per (device, context key);
- ``nasflow_cost_stability``: how steady the machine was while a context's ops and
  calibration were measured (``Stability``, as JSON), unique per (device, context key).

Rows are only ever inserted (``ON CONFLICT DO NOTHING``), so several workers that
measure the same op at once on PostgreSQL neither fail nor duplicate it; a calibration is
replaced in one transaction, and so are op rows measured again on request.

A study keeps its table in its own database. Besides it, a *shared* table
(``shared_table_url``: ``$NASFLOW_COST_CACHE``, else the local cache file) holds every
device's rows for every later study on the same fingerprint, so that a fresh study
reuses them instead of timing the ops again under whatever load is present then. The
tables, their creation and that sharing policy are the measurement store's
(``nasflow.cost._tables._store``), which the ``stack="auto"`` calibration table shares.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, Session, mapped_column

from nasflow import settings
from nasflow.cost._fingerprint import DeviceFingerprint
from nasflow.cost._measure import OpTiming
from nasflow.cost._tables._store import (
    Base,
    DeviceStore,
    default_cache_path,
    open_tables,
    resolve_url,
    shared_table_url,
)
from nasflow.cost._tables._store import now as _now

__all__ = [
    "SHARED_ENV",
    "Calibration",
    "CalibrationRow",
    "DeviceRow",
    "LatencyTable",
    "OpRow",
    "StabilityRow",
    "default_cache_path",
    "open_tables",
    "resolve_url",
    "shared_table_url",
]
#: Keys per ``IN (...)`` query.
_CHUNK = 500
#: Environment variable naming the shared cost table: a file path, ``sqlite:///FILE`` or
#: ``postgresql://...``; ``off`` shares nothing.
SHARED_ENV = settings.SHARED_TABLE_ENV


class DeviceRow(Base):
    __tablename__ = "nasflow_cost_devices"

    key: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=_now)


class OpRow(Base):
    __tablename__ = "nasflow_cost_ops"
    __table_args__ = (sa.UniqueConstraint("device_key", "op_key"),)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    device_key: Mapped[str] = mapped_column(
        sa.String(32), sa.ForeignKey("nasflow_cost_devices.key"), index=True
    )
    op_key: Mapped[str] = mapped_column(sa.String(64))
    description: Mapped[str] = mapped_column(sa.Text)
    fwd_bwd_seconds: Mapped[float] = mapped_column(sa.Float)
    optimizer_seconds: Mapped[float] = mapped_column(sa.Float)
    spread: Mapped[float] = mapped_column(sa.Float)
    samples: Mapped[int] = mapped_column(sa.Integer)
    flops: Mapped[int] = mapped_column(sa.BigInteger)
    params: Mapped[int] = mapped_column(sa.BigInteger)
    measured_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=_now)


class CalibrationRow(Base):
    __tablename__ = "nasflow_cost_calibrations"
    __table_args__ = (sa.UniqueConstraint("device_key", "context_key"),)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    device_key: Mapped[str] = mapped_column(
        sa.String(32), sa.ForeignKey("nasflow_cost_devices.key"), index=True
    )
    context_key: Mapped[str] = mapped_column(sa.String(64))
    slope: Mapped[float] = mapped_column(sa.Float)
    intercept: Mapped[float] = mapped_column(sa.Float)
    points: Mapped[str] = mapped_column(sa.Text)
    fitted_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=_now)


class StabilityRow(Base):
    __tablename__ = "nasflow_cost_stability"
    __table_args__ = (sa.UniqueConstraint("device_key", "context_key"),)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    device_key: Mapped[str] = mapped_column(
        sa.String(32), sa.ForeignKey("nasflow_cost_devices.key"), index=True
    )
    context_key: Mapped[str] = mapped_column(sa.String(64))
    record: Mapped[str] = mapped_column(sa.Text)
    stored_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=_now)


@dataclass(frozen=True)
class Calibration:
    """``step seconds = slope * (sum of op seconds) + intercept``, fitted on measured steps.

    Attributes:
        slope: Seconds of a step per second of summed op latency.
        intercept: Fixed seconds per step (loss, optimizer call, everything between ops).
        points: The fit's data: ``{"arch": json, "ops": seconds, "measured": seconds}``.
    """

    slope: float
    intercept: float
    points: tuple[dict, ...] = ()

    def predict(self, op_seconds: float) -> float:
        return self.slope * op_seconds + self.intercept


class LatencyTable(DeviceStore):
    """Measured op latencies of any number of devices, in one database.

    Args:
        url: Where: ``None`` for the local cache file (``default_cache_path()``), a file
            path, ``sqlite:///FILE`` or ``postgresql://...``.

    Raises:
        ValueError: An unsupported URL, or a database that cannot be opened (naming it,
            password redacted).
    """

    what = "cost table"

    def __init__(self, url: str | os.PathLike | None = None) -> None:
        super().__init__(url)
        self._known_devices: set[str] = set()

    # ------------------------------------------------------------------ inserts
    def _insert_ignore(self, session: Session, table: sa.Table, rows: list[dict]) -> int:
        if not rows:
            return 0
        name = session.get_bind().dialect.name
        if name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        key = next(iter(table.primary_key.columns))
        stmt = insert(table).on_conflict_do_nothing().returning(key)
        return len(session.execute(stmt, rows).all())

    def register(self, device: DeviceFingerprint) -> None:
        """Record a device fingerprint (idempotent)."""
        if device.key in self._known_devices:
            return
        with self.writes(), Session(self.engine) as s, s.begin():
            self._insert_ignore(
                s,
                DeviceRow.__table__,
                [{"key": device.key, "fingerprint": device.to_json(), "created_at": _now()}],
            )
        self._known_devices.add(device.key)

    def store(
        self,
        device: DeviceFingerprint,
        timings: Mapping[str, OpTiming],
        *,
        replace: bool = False,
    ) -> int:
        """Insert op timings; rows whose key is already stored are left alone, or, with
        ``replace``, replaced (in one transaction: measured again on request).

        Returns:
            The number of rows inserted.
        """
        self.register(device)
        now = _now()
        rows = [
            {
                "device_key": device.key,
                "op_key": key,
                "description": t.description,
                "fwd_bwd_seconds": float(t.fwd_bwd),
                "optimizer_seconds": float(t.optimizer),
                "spread": float(t.spread),
                "samples": int(t.samples),
                "flops": int(t.flops),
                "params": int(t.params),
                "measured_at": now,
            }
            for key, t in timings.items()
        ]
        with self.writes(), Session(self.engine) as s, s.begin():
            if replace:
                keys = sorted(timings)
                for i in range(0, len(keys), _CHUNK):
                    s.execute(
                        sa.delete(OpRow).where(
                            OpRow.device_key == device.key, OpRow.op_key.in_(keys[i : i + _CHUNK])
                        )
                    )
            return self._insert_ignore(s, OpRow.__table__, rows)

    # ------------------------------------------------------------------ look-ups
    def lookup(
        self, device: DeviceFingerprint, keys: Iterable[str] | None = None
    ) -> dict[str, OpTiming]:
        """Stored timings of ``device``: of ``keys``, or all of them when ``keys`` is None."""
        stmt = sa.select(OpRow).where(OpRow.device_key == device.key)
        found: dict[str, OpTiming] = {}
        chunks: list[list[str] | None] = [None]
        if keys is not None:
            wanted = sorted(set(keys))
            chunks = [wanted[i : i + _CHUNK] for i in range(0, len(wanted), _CHUNK)]
        with Session(self.engine) as s:
            for chunk in chunks:
                q = stmt if chunk is None else stmt.where(OpRow.op_key.in_(chunk))
                for row in s.scalars(q):
                    found[row.op_key] = OpTiming(
                        row.fwd_bwd_seconds,
                        row.optimizer_seconds,
                        row.spread,
                        row.samples,
                        row.flops,
                        row.params,
                        row.description,
                    )
        return found

    def count(self, device: DeviceFingerprint | None = None) -> int:
        """Stored op rows, of one device or of all."""
        stmt = sa.select(sa.func.count()).select_from(OpRow)
        if device is not None:
            stmt = stmt.where(OpRow.device_key == device.key)
        with Session(self.engine) as s:
            return int(s.scalar(stmt) or 0)

    def devices(self) -> list[DeviceFingerprint]:
        """Every device fingerprint stored."""
        with Session(self.engine) as s:
            return [
                DeviceFingerprint(**json.loads(r.fingerprint))
                for r in s.scalars(sa.select(DeviceRow).order_by(DeviceRow.created_at))
            ]

    # ------------------------------------------------------------------ calibrations
    def load_calibration(self, device: DeviceFingerprint, context: str) -> Calibration | None:
        """The stored calibration of a context on a device, if any."""
        row = self.load_row(CalibrationRow, device.key, context)
        if row is None:
            return None
        return Calibration(row.slope, row.intercept, tuple(json.loads(row.points)))

    def store_calibration(
        self, device: DeviceFingerprint, context: str, calibration: Calibration
    ) -> None:
        """Store (or replace) the calibration of a context on a device."""
        self._replace(
            device,
            CalibrationRow(
                device_key=device.key,
                context_key=context,
                slope=float(calibration.slope),
                intercept=float(calibration.intercept),
                points=json.dumps(list(calibration.points)),
            ),
        )

    def _replace(self, device: DeviceFingerprint, row: CalibrationRow | StabilityRow) -> None:
        """Store ``row`` in place of its device's row of the same context."""
        self.register(device)
        self.replace_row(row)

    # ------------------------------------------------------------------ stability
    def load_stability(self, device: DeviceFingerprint, context: str) -> dict | None:
        """The stored stability record of a context on a device (``Stability.to_dict()``
        plus where the table came from), if any."""
        row = self.load_row(StabilityRow, device.key, context)
        return None if row is None else json.loads(row.record)

    def store_stability(self, device: DeviceFingerprint, context: str, record: dict) -> None:
        """Store (or replace) the stability record of a context on a device."""
        row = StabilityRow(device_key=device.key, context_key=context, record=json.dumps(record))
        self._replace(device, row)
