"""The device-keyed measurement store under every table nasflow measures into.

Two kinds of measurement are kept per device fingerprint (``DeviceFingerprint.key``) and
context: the cost model's op latencies, calibrations and stability records
(``nasflow.cost.LatencyTable``) and the ``stack="auto"`` calibrations
(``nasflow.calibrate.StackCalibrationTable``). Both are a :class:`DeviceStore`: SQLAlchemy
tables declared on one :class:`Base`, created under one PostgreSQL advisory lock, loaded
and replaced by (device, context) in one way, and shared between studies by one policy:

1. the study's own table (its database, or the local cache file);
2. else the table shared by every study of this user (``shared_table_url``:
   ``$NASFLOW_COST_CACHE``, else ``cost.db`` in the cache folder; ``off`` shares nothing),
   whose usable record is copied back into the study's own table
   (:func:`from_shared`);
3. else measured now and stored in both (:func:`store_everywhere`).

A table added later (another kind of measurement) declares its rows on :class:`Base` and
subclasses :class:`DeviceStore`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Session

from nasflow import settings
from nasflow._urls import redact
from nasflow.errors import ConfigError

#: Key of the PostgreSQL advisory lock that serialises creating the measurement tables.
SCHEMA_LOCK_KEY = 0x6E666D65617375  # "nfmeasu"

S = TypeVar("S", bound="DeviceStore")
T = TypeVar("T")


def now() -> datetime:
    """The current time, timezone-aware (UTC): when a row was measured."""
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    """The declarative base of every device-keyed measurement table."""


def default_cache_path() -> Path:
    """``cost.db`` in the cache folder (``nasflow.settings.cache_dir``, the one the data
    caches use too)."""
    return settings.cache_dir() / "cost.db"


def shared_table_url() -> str | None:
    """Where the measurement tables shared by every study of this user live:
    ``$NASFLOW_COST_CACHE`` (a file path, ``sqlite:///FILE`` or ``postgresql://...``, so a
    team's machines can share one), else ``default_cache_path()``; ``None`` when the
    variable is ``off`` (nothing is shared)."""
    value = settings.shared_table_setting()
    if value == settings.OFF:
        return None
    url = resolve_url(value)
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
            f"or point $NASFLOW_COST_CACHE at a database file (or 'off')"
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
    """A SQLAlchemy URL for the tables.

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
            raise ConfigError(f"cost table path {str(url)!r} is not a file path")
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{path}"
    text = str(url)
    scheme = text.split("://", 1)[0].split("+", 1)[0]
    if scheme not in ("sqlite", "postgresql"):
        raise ConfigError(
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
        raise ConfigError(
            f"cannot open {what} {redact(url)!r}: {redact(first, url)[:300]}"
        ) from None
    return engine


class DeviceStore:
    """One database of device-keyed measurement tables (every table on :class:`Base`).

    Rows are keyed by ``device_key`` and ``context_key`` columns; :meth:`load_row` reads
    one, :meth:`replace_row` stores one in place of the row of the same key.

    Args:
        url: ``None`` for the local cache file (``default_cache_path()``), a file path,
            ``sqlite:///FILE`` or ``postgresql://...``.

    Raises:
        ValueError: An unsupported URL, or a database that cannot be opened (naming it,
            password redacted).
    """

    #: What the store is called in messages.
    what: ClassVar[str] = "measurement table"

    def __init__(self, url: str | os.PathLike | None = None) -> None:
        self.url = resolve_url(url)
        self.engine = open_tables(self.url, Base.metadata, SCHEMA_LOCK_KEY, self.what)

    @property
    def safe_url(self) -> str:
        """The URL, password redacted."""
        return redact(self.url)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def shared_for(cls: type[S], own: DeviceStore | None) -> S | None:
        """The shared store (``shared_table_url()``) beside ``own``; ``None`` where nothing
        is shared or ``own`` is the shared one."""
        url = shared_table_url()
        if url is None or (own is not None and resolve_url(url) == own.url):
            return None
        return cls(url)

    def load_row(self, cls: type[Any], device_key: str, context_key: str) -> Any | None:
        """The row of ``cls`` stored for (device, context), if any (detached, loaded)."""
        stmt = sa.select(cls).where(cls.device_key == device_key, cls.context_key == context_key)
        with Session(self.engine) as s:
            return s.scalars(stmt).first()

    def replace_row(self, row: Any, before: Callable[[Session], None] | None = None) -> None:
        """Store ``row`` in place of the row of its (device, context), in one transaction
        (``before`` runs first in it); another worker storing its row of the same key at
        the same moment wins quietly."""
        cls = type(row)
        try:
            with Session(self.engine) as s, s.begin():
                if before is not None:
                    before(s)
                s.execute(
                    sa.delete(cls).where(
                        cls.device_key == row.device_key, cls.context_key == row.context_key
                    )
                )
                s.add(row)
        except sa.exc.IntegrityError:
            pass  # another worker stored its row of this context at the same moment


def from_shared(
    own: S,
    shared: S | None,
    load: Callable[[S], T | None],
    copy: Callable[[S, T], None] | None = None,
    usable: Callable[[T], bool] = bool,
) -> T | None:
    """Step 2 of the sharing policy: what ``load`` finds in ``shared`` if ``usable``, copied
    back into ``own`` with ``copy`` (``None``: not copied, e.g. a non-zero DDP rank)."""
    if shared is None:
        return None
    found = load(shared)
    if found is None or not usable(found):
        return None
    if copy is not None:
        copy(own, found)
    return found


def store_everywhere(own: S, shared: S | None, write: Callable[[S], None]) -> None:
    """Step 3 of the sharing policy: ``write`` a measurement into ``own`` and ``shared``."""
    write(own)
    if shared is not None:
        write(shared)
