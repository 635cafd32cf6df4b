"""Storage URLs, redaction, reachability and concurrent schema creation on PostgreSQL."""

from __future__ import annotations

import multiprocessing as mp

import optuna
import pytest

from nasflow.storage import StorageError, check_reachable, open_storage, redact, resolve_storage


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("sqlite:///runs/x.db", "sqlite"),
        ("journal:///runs/x.log", "journal"),
        ("postgresql://u@127.0.0.1:5432/db", "postgresql"),
        ("postgresql+psycopg://u:pw@h/db", "postgresql"),
    ],
)
def test_supported_urls_resolve(url: str, kind: str) -> None:
    spec = resolve_storage(url, "default.db")
    assert spec.kind == kind
    assert "pw" not in spec.safe_url


def test_default_is_a_sqlite_file() -> None:
    spec = resolve_storage(None, "runs/s/study.db")
    assert spec.kind == "sqlite" and str(spec.path) == "runs/s/study.db"
    assert not spec.multi_worker


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("mysql://u:secret@h/db", "unknown storage 'mysql://u:\\*\\*\\*@h/db'"),
        ("redis://h", "unknown storage"),
        ("runs/study.db", "unknown storage 'runs/study.db'"),
        ("sqlite://", "needs a file path"),
        ("postgresql://u:secret@h", "names no database"),
    ],
)
def test_bad_urls_are_refused_with_the_url_redacted(url: str, match: str) -> None:
    with pytest.raises(StorageError, match=match) as info:
        resolve_storage(url, "default.db")
    assert "secret" not in str(info.value)


def test_redact_hides_passwords_only() -> None:
    assert redact("postgresql://alice:s3cr3t@db:5432/x") == "postgresql://alice:***@db:5432/x"
    assert redact("postgresql://alice@db/x") == "postgresql://alice@db/x"
    assert redact("sqlite:///a:b@c.db") == "sqlite:///a:b@c.db"


def test_unreachable_server_is_one_clear_error_without_the_password() -> None:
    # Port 9 (discard) on loopback: nothing listens there, the connection is refused.
    spec = resolve_storage("postgresql://postgres:topsecret@127.0.0.1:9/test", "unused")
    with pytest.raises(StorageError, match="cannot reach storage") as info:
        check_reachable(spec)
    assert "topsecret" not in str(info.value)
    assert "***" in str(info.value)


def _open_and_create(url: str, name: str, barrier: mp.synchronize.Barrier) -> None:
    barrier.wait(timeout=60)
    storage = open_storage(resolve_storage(url, "unused"))
    optuna.create_study(study_name=name, storage=storage, load_if_exists=True)


@pytest.mark.slow
def test_workers_starting_together_on_an_empty_database(postgres_url: str) -> None:
    """Optuna creates its schema without a lock; nasflow serialises it (advisory lock)."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(4)
    procs = [
        ctx.Process(target=_open_and_create, args=(postgres_url, "race", barrier))
        for _ in range(4)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    assert [s.study_name for s in optuna.get_all_study_summaries(postgres_url)] == ["race"]
