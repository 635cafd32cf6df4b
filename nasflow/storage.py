"""Where studies live: URL resolution, validation, redaction and the SQLite lock.

A public module beside ``nasflow.record`` (not inside ``nasflow.search``): the report, the
dashboard, export and the CLI open stored studies without importing the study runner.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from filelock import FileLock, Timeout

from nasflow import settings
from nasflow._compat import retry_callback_kwargs
from nasflow._disk import write_error
from nasflow._files import file_lock
from nasflow._urls import redact
from nasflow.errors import NasflowError, StudyRecordError, WriteError

#: Seconds between heartbeats of a running trial, and before a silent one is failed.
HEARTBEAT_INTERVAL = 10
GRACE_PERIOD = 30

_SCHEMES = ("sqlite", "postgresql", "journal")


class StorageError(NasflowError, ValueError):
    """A storage URL is malformed, of an unsupported kind, unreachable, or busy."""


@dataclass(frozen=True)
class StorageSpec:
    """A resolved storage.

    Attributes:
        url: The URL given to Optuna (may hold a password: never print it); empty for a
            storage object without one (``InMemoryStorage``, ``JournalStorage``).
        kind: ``"sqlite"``, ``"postgresql"``, ``"journal"``, ``"memory"`` or ``"rdb"``
            (an ``RDBStorage`` object of another database).
        path: The local file for SQLite and journal storages.
        given: The Optuna storage object the user passed, used as given.
    """

    url: str
    kind: str
    path: Path | None = None
    given: optuna.storages.BaseStorage | None = None

    @property
    def safe_url(self) -> str:
        if self.url:
            return redact(self.url)
        return f"{type(self.given).__name__} object"

    @property
    def multi_worker(self) -> bool:
        """Whether several processes may share it."""
        return self.kind not in ("sqlite", "memory")


def storage_failure(err: BaseException, spec: StorageSpec) -> WriteError | None:
    """A write to the study's storage that the disk or a permission refused (Optuna wraps
    SQLite's "database or disk is full" in a ``StorageInternalError`` about "invalid data
    ... exceeding max length") as one line naming the storage and its disk; ``None`` for
    any other failure."""
    where: str | Path = spec.path if spec.path is not None else spec.safe_url
    return write_error(where, err, "the study database" if spec.kind == "sqlite" else "")


def storage_of_object(storage: optuna.storages.BaseStorage) -> StorageSpec:
    """A ``StorageSpec`` for an Optuna storage object (its URL read where it has one, so
    that the SQLite lock and the cost tables beside the study still apply)."""
    # optuna.create_study wraps an RDBStorage in its private cache layer; see through it.
    backend = getattr(storage, "_backend", storage)
    if isinstance(backend, optuna.storages.RDBStorage):
        url = backend.url
        base = url.partition("://")[0].split("+", 1)[0]
        if base in ("sqlite", "postgresql"):
            resolved = resolve_storage(url, "")
            return StorageSpec(url, resolved.kind, resolved.path, storage)
        return StorageSpec(url, "rdb", None, storage)
    if isinstance(backend, optuna.storages.InMemoryStorage):
        return StorageSpec("", "memory", None, storage)
    if isinstance(backend, optuna.storages.JournalStorage):
        return StorageSpec("", "journal", None, storage)
    raise StorageError(f"unsupported Optuna storage {type(storage).__name__}")


def resolve_storage(
    url: str | os.PathLike | optuna.storages.BaseStorage | None, default_path: os.PathLike | str
) -> StorageSpec:
    """Turn a ``--storage`` value into a ``StorageSpec`` without touching anything.

    Args:
        url: ``None`` for the embedded default, ``sqlite:///FILE``,
            ``postgresql://USER[:PASS]@HOST[:PORT]/DB`` (also ``postgresql+psycopg2://``),
            ``journal:///FILE`` (Optuna's JournalStorage on a local file), or an Optuna
            storage object (used as given).
        default_path: The SQLite file used when ``url`` is ``None``.

    Raises:
        StorageError: Unknown scheme or malformed URL, naming it (redacted).
    """
    if isinstance(url, optuna.storages.BaseStorage):
        return storage_of_object(url)
    if isinstance(url, os.PathLike):
        url = os.fspath(url)
    if url is None:
        path = Path(default_path)
        return StorageSpec(f"sqlite:///{path}", "sqlite", path)
    if not isinstance(url, str):
        raise StorageError(
            f"storage must be a URL (sqlite:///FILE, journal:///FILE, postgresql://...), an "
            f"Optuna storage object or None, got {url!r} ({type(url).__name__})"
        )
    scheme, sep, rest = url.partition("://")
    base = scheme.split("+", 1)[0]
    if not sep or base not in _SCHEMES:
        raise StorageError(
            f"unknown storage {redact(url)!r}: use sqlite:///FILE, journal:///FILE or "
            "postgresql://USER@HOST:PORT/DB"
        )
    if base in ("sqlite", "journal"):
        if not rest.startswith("/") or rest == "/":
            raise StorageError(f"storage {redact(url)!r} needs a file path: {base}:///FILE")
        path = Path(rest[1:])
        return StorageSpec(url if base == "sqlite" else f"journal:///{path}", base, path)
    if "/" not in rest or not rest.split("/", 1)[1]:
        raise StorageError(f"storage {redact(url)!r} names no database: postgresql://HOST/DB")
    return StorageSpec(url, "postgresql")


def check_reachable(spec: StorageSpec) -> None:
    """Connect once to a database server, raising ``StorageError`` if it does not answer."""
    if spec.kind != "postgresql":
        return
    import sqlalchemy

    try:
        engine = sqlalchemy.create_engine(spec.url, connect_args={"connect_timeout": 5})
        with engine.connect():
            pass
        engine.dispose()
    except Exception as e:  # any driver or network error
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        reason = redact(first, spec.url)
        raise StorageError(f"cannot reach storage {spec.safe_url!r}: {reason}") from None


def open_storage(
    spec: StorageSpec,
    heartbeat_interval: int = HEARTBEAT_INTERVAL,
    grace_period: int = GRACE_PERIOD,
) -> optuna.storages.BaseStorage:
    """The Optuna storage: RDB with heartbeats and one retry of stale trials, or a journal.

    Args:
        spec: The resolved storage (a storage object the user gave is returned as is).
        heartbeat_interval: Seconds between heartbeats of a running trial (RDB only).
        grace_period: Seconds without a heartbeat before a trial counts as dead (RDB only).
    """
    if spec.given is not None:
        return spec.given
    if spec.kind == "journal":
        assert spec.path is not None
        spec.path.parent.mkdir(parents=True, exist_ok=True)
        backend = optuna.storages.journal.JournalFileBackend(
            str(spec.path), lock_obj=optuna.storages.journal.JournalFileOpenLock(str(spec.path))
        )
        return optuna.storages.JournalStorage(backend)
    if spec.kind == "sqlite":
        assert spec.path is not None
        spec.path.parent.mkdir(parents=True, exist_ok=True)
    kwargs: dict[str, Any] = {}
    if spec.kind == "postgresql":
        kwargs["engine_kwargs"] = {"pool_pre_ping": True, "connect_args": {"connect_timeout": 10}}
    try:
        with warnings.catch_warnings(), _schema_lock(spec):
            # Heartbeats and the retry callback are marked experimental; we rely on them.
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.storages.RDBStorage(
                spec.url,
                heartbeat_interval=heartbeat_interval,
                grace_period=grace_period,
                **retry_callback_kwargs(max_retry=1),
                **kwargs,
            )
    except Exception as e:
        raise StorageError(
            f"cannot open storage {spec.safe_url!r}: {redact(str(e), spec.url)[:300]}"
        ) from None


#: Tables every Optuna RDB storage has.
_OPTUNA_TABLES = frozenset({"studies", "trials", "version_info"})


def check_study_file(spec: StorageSpec) -> None:
    """Before reading a SQLite storage, check read-only that it is an Optuna database.

    Opening it with Optuna would create Optuna's tables in any SQLite file (a user's
    database given by mistake); a read-only command must write nothing there.

    Raises:
        StudyRecordError: The file is not a SQLite database, or holds no Optuna tables.
    """
    if spec.kind != "sqlite" or spec.path is None:
        return
    import sqlite3

    uri = spec.path.resolve().as_uri() + "?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            tables = {r[0] for r in rows}
    except sqlite3.Error as e:
        raise StudyRecordError(
            f"{str(spec.path)!r} is not a SQLite study file ({e}); nothing was written to it"
        ) from None
    if not _OPTUNA_TABLES.issubset(tables):
        raise StudyRecordError(
            f"{str(spec.path)!r} is not an Optuna study database (it has no Optuna tables); "
            "nothing was written to it"
        )


#: Key of the PostgreSQL advisory lock that serialises Optuna's schema creation.
_SCHEMA_LOCK_KEY = 0x6E6173666C6F77  # "nasflow"


@contextlib.contextmanager
def _schema_lock(spec: StorageSpec) -> Iterator[None]:
    """Serialise ``RDBStorage`` construction between processes on one PostgreSQL database.

    Optuna creates its tables (and PostgreSQL enum types) on first use without any lock, so
    workers that start together on an empty database race and one of them fails with a
    unique violation on ``pg_type``. A session-level advisory lock held while the storage is
    constructed lets exactly one of them create the schema; the others then find it.
    """
    if spec.kind != "postgresql":
        yield
        return
    import sqlalchemy

    engine = sqlalchemy.create_engine(spec.url, connect_args={"connect_timeout": 10})
    try:
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:k)"), {"k": _SCHEMA_LOCK_KEY})
            try:
                yield
            finally:
                conn.execute(
                    sqlalchemy.text("SELECT pg_advisory_unlock(:k)"), {"k": _SCHEMA_LOCK_KEY}
                )
    finally:
        engine.dispose()


def _also(given: Path, lock: Path) -> str:
    """`` (REAL)`` when the study file given is a link to another real path."""
    real = lock.with_name(lock.name[: -len(".lock")])
    return f" ({str(real)!r})" if real != given.absolute() else ""


def lock_dir() -> Path:
    """Where the locks keyed by a file's identity live: ``$NASFLOW_LOCK_DIR``, else
    ``nasflow-locks-UID`` in the temporary folder (one per user, mode 0700)."""
    given = settings.raw(settings.LOCK_DIR_ENV)
    if given:
        return Path(given)
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"nasflow-locks-{uid}"


def _identity_lock_path(db_path: Path) -> Path | None:
    """The lock of the file ``db_path`` by its device and inode (``None``: no file yet):
    every hard link to it meets this lock."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(db_path, flags)
    except FileNotFoundError:
        return None
    except OSError as e:
        why = e.strerror
        raise StorageError(f"cannot open the SQLite study file {str(db_path)!r}: {why}") from None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    folder = lock_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder / f"sqlite-{st.st_dev}-{st.st_ino}.lock"


#: What holds a study file's lock, by ``SQLiteLock`` role: who, and what to do about it.
_HOLDERS = {
    "worker": (
        "another nasflow worker",
        "SQLite supports one worker: use --storage postgresql://... or "
        "--storage journal:///FILE for several workers",
    ),
    "dashboard": (
        "a nasflow dashboard",
        "stop it (Ctrl-C) first, or serve the dashboard from a postgresql:// or "
        "journal:/// storage, which a search may share",
    ),
}


class StudyFileBusy(StorageError):
    """Another process holds a SQLite study file's lock.

    Attributes:
        holder: Who, in words ("another nasflow worker (process 123)").
    """

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message)
        self.holder = holder


def _busy(db_path: Path, also: str, lock_path: Path | None = None) -> StudyFileBusy:
    """The refusal of a study file whose lock is held, naming who holds it (the holder
    file the lock's holder wrote, else a worker)."""
    role, pid = "worker", ""
    if lock_path is not None:
        with contextlib.suppress(OSError, ValueError):
            role, pid = _holder_file(lock_path).read_text().split()
    who, advice = _HOLDERS.get(role, _HOLDERS["worker"])
    who += f" (process {pid})" if pid.isdigit() else ""
    message = f"{who} is using the SQLite study file {str(db_path)!r}{also}; {advice}"
    return StudyFileBusy(message, who)


def _holder_file(lock_path: Path) -> Path:
    """Where a lock's holder says who it is: in :func:`lock_dir`, keyed by the lock's path
    (the lock file itself is truncated by every process that tries it)."""
    key = hashlib.sha256(str(lock_path).encode()).hexdigest()[:24]
    return lock_dir() / f"holder-{key}"


def _unlockable(db_path: Path, lock_path: Path) -> StorageError | None:
    """The refusal of a study file whose lock file cannot even be created (a read-only or
    virtual folder such as ``/proc``), or ``None`` where it can."""
    try:
        os.close(os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644))
    except OSError as e:
        return StorageError(
            f"cannot lock the SQLite study file {str(db_path)!r}: its lock file "
            f"{str(lock_path)!r} cannot be created ({e.strerror}); put the study file in a "
            "folder this user can write"
        )
    return None


class SQLiteLock:
    """An exclusive lock of a SQLite study file: one worker process at a time.

    SQLite through Optuna is for one process (concurrent writers hit "database is
    locked"). The locks (``filelock``, an ``flock`` on Unix) are held for the life of the
    worker, so they are released even when the process is killed. One sits next to the
    study file's real path (symbolic links resolved), so a link to the file, or to a
    folder above it, meets the same lock; one is keyed by the file's device and inode
    (in :func:`lock_dir`), so a hard link to it meets the same lock too.
    """

    def __init__(self, db_path: Path, role: str = "worker") -> None:
        self.db_path = Path(db_path)
        real = Path(os.path.realpath(self.db_path))
        self.path = real.with_name(real.name + ".lock")
        #: Who holds it: ``"worker"`` (a search or worker) or ``"dashboard"``.
        self.role = role
        self._lock: FileLock | None = None
        self._inode_lock: FileLock | None = None

    def acquire(self) -> None:
        """Take the lock, or refuse in one line naming who holds it (or why it cannot be
        taken at all)."""
        lock = file_lock(self.path)
        try:
            lock.acquire(timeout=0)
        except Timeout:  # (filelock also times out on a lock file it cannot create)
            unlockable = _unlockable(self.db_path, self.path)
            if unlockable is not None:
                raise unlockable from None
            raise _busy(self.db_path, _also(self.db_path, self.path), self.path) from None
        with contextlib.suppress(OSError):  # (only a refused process reads it)
            holder = _holder_file(self.path)
            holder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            holder.write_text(f"{self.role} {os.getpid()}\n")
        self._lock = lock
        try:
            self.lock_identity()
        except BaseException:
            self.release()
            raise

    def lock_identity(self) -> None:
        """Also lock the study file by its device and inode, once it exists (call it again
        once Optuna has created a new file); a no-op while held or while there is no file.

        Raises:
            StorageError: Another worker holds it through a hard link to the same file.
        """
        if self._inode_lock is not None:
            return
        where = _identity_lock_path(self.db_path)
        if where is None:
            return
        inode_lock = file_lock(where)
        try:
            inode_lock.acquire(timeout=0)
        except Timeout:
            raise _busy(self.db_path, " (through a hard link: the same file)") from None
        self._inode_lock = inode_lock

    def release(self) -> None:
        if self._inode_lock is not None:
            self._inode_lock.release()
            self._inode_lock = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> SQLiteLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
