"""The device-keyed measurement store under every table nasflow measures into.

Two kinds of measurement are kept per device fingerprint (``DeviceFingerprint.key``) and
context: the cost model's op latencies, calibrations and stability records
(``nasflow.cost._tables._table.LatencyTable``) and the ``stack="auto"`` calibrations
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
import logging
import os
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import sqlalchemy as sa
from filelock import Timeout
from sqlalchemy.orm import DeclarativeBase, Session

from nasflow import settings
from nasflow._disk import write_error, writing
from nasflow._files import file_lock
from nasflow._logging import warn
from nasflow._urls import redact
from nasflow.errors import ConfigError

_LOG = logging.getLogger(__name__)

#: Key of the PostgreSQL advisory lock that serialises creating the measurement tables.
SCHEMA_LOCK_KEY = 0x6E666D65617375  # "nfmeasu"
#: Key of the PostgreSQL advisory lock held while a process measures into the tables.
MEASURE_LOCK_KEY = SCHEMA_LOCK_KEY + 1

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


#: Where the tables of an unusable cache live instead: in memory, for this process only.
MEMORY_URL = "sqlite://"
#: Caches found unusable by this process (:func:`check_cache`): URL -> the line said.
_UNUSABLE: dict[str, str] = {}
#: Caches :func:`check_cache` found usable.
_USABLE: set[str] = set()


def shared_table_url() -> str | None:
    """Where the measurement tables shared by every study of this user live:
    ``$NASFLOW_COST_CACHE`` (a file path, ``sqlite:///FILE`` or ``postgresql://...``, so a
    team's machines can share one), else ``default_cache_path()``; ``None`` when the
    variable is ``off`` (nothing is shared). A cache this process cannot use (see
    :func:`check_cache`, run here once) is replaced by ``MEMORY_URL``."""
    value = settings.shared_table_setting()
    if value == settings.OFF:
        return None
    url = resolve_url(value)
    path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else ""
    if path and not path.startswith("file:"):  # (a URI filename is SQLite's to open)
        _check_shared_file(Path(path))
    check_cache(url)
    return resolve_url(url)


def _check_shared_file(path: Path) -> None:
    """The shared cache is a cache: a file SQLite cannot read is moved aside (one warning
    line on stderr) and a new one is built (where it cannot be moved, this process keeps
    its tables in memory); a link, FIFO or device in its place is refused, unopened
    (opening a FIFO would wait forever)."""
    import sqlite3
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
        try:
            os.replace(path, aside)
        except OSError as moving:
            _unusable(
                f"sqlite:///{path}",
                f"is corrupt ({e}) and cannot be moved aside ({moving.strerror})",
                "delete it, or point $NASFLOW_COST_CACHE at another file (or 'off')",
            )
            return
        warn(
            _LOG,
            f"nasflow: warning: the shared cost cache {str(path)!r} is corrupt ({e}); moved "
            f"it to {str(aside)!r} and started a new one (op latencies are measured again)",
        )


def resolve_url(url: str | os.PathLike | None) -> str:
    """A SQLAlchemy URL for the tables (``MEMORY_URL`` for a cache this process found
    unusable, see :func:`check_cache`).

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
        text = f"sqlite:///{path}"
    else:
        text = str(url)
    scheme = text.split("://", 1)[0].split("+", 1)[0]
    if scheme not in ("sqlite", "postgresql"):
        raise ConfigError(
            f"cost table storage {redact(text)!r} is not a database; use None (a local "
            "cache file), a file path, sqlite:///FILE or postgresql://USER@HOST:PORT/DB"
        )
    if text in _UNUSABLE:
        return MEMORY_URL
    file = text[len("sqlite:///") :] if text.startswith("sqlite:///") else ""
    if scheme == "sqlite" and file and not file.startswith("file:"):  # (not a URI filename)
        with contextlib.suppress(OSError):  # (a folder this user cannot write: see check_cache)
            Path(file).parent.mkdir(parents=True, exist_ok=True)
    return text


def _unusable(url: str, why: str, fix: str) -> None:
    """Keep ``url``'s tables in memory from now on, saying why (once): a warning of the
    ``nasflow`` logger, or a line on stderr where the application routes it nowhere."""
    where = url[len("sqlite:///") :] if url.startswith("sqlite:///") else redact(url)
    line = (
        f"nasflow: warning: the cost cache {where!r} {why}; this run keeps op latencies "
        f"and stack calibrations in memory (nothing is shared with later studies): {fix}"
    )
    _UNUSABLE[url] = line
    warn(_LOG, line)


def cache_problem(url: str) -> tuple[str, str] | None:
    """Why the measurement tables at ``url`` cannot be used by this process, and how to fix
    it (``None``: usable): the database is opened, its tables created where missing, every
    table read with the columns nasflow declares, and a row written and rolled back."""
    engine = None
    try:
        engine = sa.create_engine(url, **_engine_kwargs(url))
        with engine.begin() as conn:
            Base.metadata.create_all(conn)
        with engine.connect() as conn:
            for table in Base.metadata.sorted_tables:
                conn.execute(sa.select(*table.columns).limit(0)).all()
        devices = Base.metadata.tables.get("nasflow_cost_devices")
        if devices is not None:
            with engine.connect() as conn:
                probe = conn.begin()  # a write that is rolled back: nothing is left
                try:
                    row = {"key": "nasflow-write-probe", "fingerprint": "", "created_at": now()}
                    conn.execute(sa.insert(devices).values(**row))
                finally:
                    probe.rollback()
    except sa.exc.SQLAlchemyError as e:
        orig = getattr(e, "orig", None)  # (the DBAPI's error, where SQLAlchemy wraps one)
        first = redact(str(orig or e).split("\n")[0], url)
        if write_error(url, e) is not None:
            return (
                f"cannot be written ({first})",
                "make it (and its folder) writable for this user, e.g. `sudo chown -R "
                "$(id -un) FOLDER` after a `sudo` run, or point $NASFLOW_COST_CACHE at "
                "another file (or 'off')",
            )
        if "column" in first or "constraint" in first.lower():  # (missing, extra NOT NULL)
            return (
                f"holds tables of another schema ({first})",
                "delete it (a cache: what it held is measured again), or point "
                "$NASFLOW_COST_CACHE at another file (or 'off')",
            )
        return (
            f"cannot be opened ({first[:200]})",
            "check it, or point $NASFLOW_COST_CACHE at another file (or 'off')",
        )
    finally:
        if engine is not None:
            engine.dispose()
    return None


def check_cache(url: str | None) -> bool:
    """Check, once per process, that the measurement tables at ``url`` (a resolved URL;
    ``None``: nothing to check) can be read and written with this schema; if not, keep
    them in memory from now on (:func:`resolve_url` gives ``MEMORY_URL`` for it) and say
    so in one line (see :func:`_unusable`) with how to fix it. Returns whether the
    cache is usable. Run by the study runner before anything trains."""
    if url is None or url == MEMORY_URL or url in _USABLE:
        return True
    if url in _UNUSABLE:
        return False
    problem = cache_problem(url)
    if problem is None:
        _USABLE.add(url)
        return True
    _unusable(url, *problem)
    return False


def _engine_kwargs(url: str) -> dict[str, Any]:
    if url.startswith("postgresql"):
        return {"pool_pre_ping": True, "connect_args": {"connect_timeout": 10}}
    if url == MEMORY_URL:  # one in-memory database, whichever thread asks
        return {"poolclass": sa.pool.StaticPool, "connect_args": {"check_same_thread": False}}
    return {}


def open_tables(url: str, metadata: sa.MetaData, lock_key: int, what: str) -> sa.Engine:
    """An engine on ``url`` with ``metadata``'s tables created (once, under a PostgreSQL
    advisory lock ``lock_key``, so concurrent processes do not race to create them).

    Raises:
        ValueError: The database cannot be opened; names ``what`` and the URL, password
            redacted (also where the driver echoes it).
    """
    try:
        engine = sa.create_engine(url, **_engine_kwargs(url))
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                # Released at commit: one process creates the tables, the others find them.
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": lock_key})
            metadata.create_all(conn)
    except sa.exc.SQLAlchemyError as e:
        failed = write_error(url, e, what)  # a full disk, a read-only file
        if failed is not None:
            raise failed from None
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

    @contextlib.contextmanager
    def measuring(self) -> Iterator[bool]:
        """Held while this process measures into the store: another process about to
        measure the same store waits, then finds the measurement stored, so two searches
        started together on an empty cache take one measurement, not two racing ones mixed
        row by row (a file lock beside a SQLite file, an advisory lock on PostgreSQL).
        Yields whether it had to wait (what is stored now was measured meanwhile)."""
        path = self.url[len("sqlite:///") :] if self.url.startswith("sqlite:///") else ""
        if path and not path.startswith("file:"):
            lock = file_lock(f"{path}.measuring.lock")
            try:
                lock.acquire(timeout=0)
                waited = False
            except Timeout:
                lock.acquire()
                waited = True
            try:
                yield waited
            finally:
                lock.release()
        elif self.url.startswith("postgresql"):
            key = {"k": MEASURE_LOCK_KEY}
            with self.engine.connect() as conn:
                waited = not conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), key).scalar()
                if waited:
                    conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), key)
                try:
                    yield waited
                finally:
                    conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), key)
                    conn.commit()
        else:  # (in memory: this process's alone)
            yield False

    def writes(self) -> contextlib.AbstractContextManager[None]:
        """Around a write: a full disk, a file-size limit or a read-only file is one
        ``WriteError`` naming this database and its disk."""
        return writing(self.url, self.what)

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
            with self.writes(), Session(self.engine) as s, s.begin():
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
