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
reuses them instead of timing the ops again under whatever load is present then.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from nasflow._urls import redact
from nasflow.cost._fingerprint import DeviceFingerprint
from nasflow.cost._measure import OpTiming

#: Key of the PostgreSQL advisory lock that serialises creating these tables.
_SCHEMA_LOCK_KEY = 0x6E6673636F7374  # "nfscost"
#: Keys per ``IN (...)`` query.
_CHUNK = 500
#: Environment variable naming the shared cost table: a file path, ``sqlite:///FILE`` or
#: ``postgresql://...``; ``off`` shares nothing.
SHARED_ENV = "NASFLOW_COST_CACHE"


def _now() -> datetime:
    return datetime.now(timezone.utc)


class _Base(DeclarativeBase):
    pass


class DeviceRow(_Base):
    __tablename__ = "nasflow_cost_devices"

    key: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=_now)


class OpRow(_Base):
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


class CalibrationRow(_Base):
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


class StabilityRow(_Base):
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


def default_cache_path() -> Path:
    """``$NASFLOW_CACHE/cost.db`` (the cache folder MNIST-1D uses too), else
    ``$XDG_CACHE_HOME/nasflow/cost.db``, else ``~/.cache/nasflow/cost.db``."""
    root = os.environ.get("NASFLOW_CACHE")
    if root:
        return Path(root) / "cost.db"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "nasflow" / "cost.db"


def shared_table_url() -> str | None:
    """Where the cost table shared by every study of this user lives:
    ``$NASFLOW_COST_CACHE`` (a file path, ``sqlite:///FILE`` or ``postgresql://...``, so a
    team's machines can share one), else ``default_cache_path()``; ``None`` when the
    variable is ``off`` (nothing is shared)."""
    value = os.environ.get(SHARED_ENV, "").strip()
    if value.lower() == "off":
        return None
    url = resolve_url(value or None)
    if url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        _check_shared_file(Path(url[len("sqlite:///") :]))
    return url


def _check_shared_file(path: Path) -> None:
    """The shared cache is a cache: a file SQLite cannot read is moved aside (one warning
    line on stderr) and a new one is built; a link, FIFO or device in its place is
    refused, unopened (opening a FIFO would wait forever)."""
    import sqlite3
    import sys
    import time

    from nasflow._regular import SpecialFileError, file_kind

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    kind = file_kind(st.st_mode)
    if kind is not None:
        raise SpecialFileError(
            f"the shared cost cache {str(path)!r} is {kind}, not a regular file; remove it, "
            f"or point ${SHARED_ENV} at a database file (or 'off')"
        )
    if st.st_size == 0:
        return
    try:
        uri = path.resolve().as_uri() + "?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            conn.execute("SELECT name FROM sqlite_master").fetchall()
    except sqlite3.DatabaseError as e:
        aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        os.replace(path, aside)
        print(
            f"nasflow: warning: the shared cost cache {str(path)!r} is corrupt ({e}); moved "
            f"it to {str(aside)!r} and started a new one (op latencies are measured again)",
            file=sys.stderr,
        )


def resolve_url(url: str | os.PathLike | None) -> str:
    """A SQLAlchemy URL for the table.

    Args:
        url: ``None`` (the local cache file), a file path (SQLite),
            ``sqlite:///FILE`` or ``postgresql://...`` (a study's database).

    Raises:
        ValueError: Any other scheme (a journal file holds no tables), naming it.
    """
    if url is None:
        url = default_cache_path()
    if isinstance(url, os.PathLike) or "://" not in str(url):
        path = Path(url)
        if not str(path) or str(path) == ".":
            raise ValueError(f"cost table path {str(url)!r} is not a file path")
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{path}"
    text = str(url)
    scheme = text.split("://", 1)[0].split("+", 1)[0]
    if scheme not in ("sqlite", "postgresql"):
        raise ValueError(
            f"cost table storage {redact(text)!r} is not a database; use None (a local "
            "cache file), a file path, sqlite:///FILE or postgresql://USER@HOST:PORT/DB"
        )
    if scheme == "sqlite" and text.startswith("sqlite:///") and len(text) > len("sqlite:///"):
        Path(text[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
    return text


def open_tables(url: str, metadata: sa.MetaData, lock_key: int, what: str) -> sa.Engine:
    """An engine on ``url`` with ``metadata``'s tables created (once, under a PostgreSQL
    advisory lock ``lock_key``, so concurrent processes do not race to create them).

    Raises:
        ValueError: The database cannot be opened; names ``what`` and the URL, password
            redacted (also where the driver echoes it).
    """
    kwargs: dict = {}
    if url.startswith("postgresql"):
        kwargs = {"pool_pre_ping": True, "connect_args": {"connect_timeout": 10}}
    try:
        engine = sa.create_engine(url, **kwargs)
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                # Released at commit: one process creates the tables, the others find them.
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": lock_key})
            metadata.create_all(conn)
    except sa.exc.SQLAlchemyError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(
            f"cannot open {what} {redact(url)!r}: {redact(first, url)[:300]}"
        ) from None
    return engine


class LatencyTable:
    """Measured op latencies of any number of devices, in one database.

    Args:
        url: Where: ``None`` for the local cache file (``default_cache_path()``), a file
            path, ``sqlite:///FILE`` or ``postgresql://...``.

    Raises:
        ValueError: An unsupported URL, or a database that cannot be opened (naming it,
            password redacted).
    """

    def __init__(self, url: str | os.PathLike | None = None) -> None:
        self.url = resolve_url(url)
        self.engine = open_tables(self.url, _Base.metadata, _SCHEMA_LOCK_KEY, "cost table")
        self._known_devices: set[str] = set()

    @property
    def safe_url(self) -> str:
        return redact(self.url)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> LatencyTable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        with Session(self.engine) as s, s.begin():
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
        with Session(self.engine) as s, s.begin():
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
        stmt = sa.select(CalibrationRow).where(
            CalibrationRow.device_key == device.key, CalibrationRow.context_key == context
        )
        with Session(self.engine) as s:
            row = s.scalars(stmt).first()
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
        cls = type(row)
        try:
            with Session(self.engine) as s, s.begin():
                s.execute(
                    sa.delete(cls).where(
                        cls.device_key == device.key, cls.context_key == row.context_key
                    )
                )
                s.add(row)
        except sa.exc.IntegrityError:
            pass  # another worker stored its row of this context at the same moment

    # ------------------------------------------------------------------ stability
    def load_stability(self, device: DeviceFingerprint, context: str) -> dict | None:
        """The stored stability record of a context on a device (``Stability.to_dict()``
        plus where the table came from), if any."""
        stmt = sa.select(StabilityRow).where(
            StabilityRow.device_key == device.key, StabilityRow.context_key == context
        )
        with Session(self.engine) as s:
            row = s.scalars(stmt).first()
            return None if row is None else json.loads(row.record)

    def store_stability(self, device: DeviceFingerprint, context: str, record: dict) -> None:
        """Store (or replace) the stability record of a context on a device."""
        row = StabilityRow(device_key=device.key, context_key=context, record=json.dumps(record))
        self._replace(device, row)
