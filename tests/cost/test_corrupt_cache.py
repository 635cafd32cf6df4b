"""A corrupt shared cost cache is moved aside and rebuilt with one warning line; a FIFO
or link in its place is refused in one line, unopened."""

from __future__ import annotations

import os

import pytest

from nasflow._regular import SpecialFileError
from nasflow.cost._table import LatencyTable, shared_table_url


def test_a_corrupt_shared_cache_is_moved_aside_and_rebuilt(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cost.db"
    cache.write_bytes(os.urandom(4096))
    monkeypatch.setenv("NASFLOW_COST_CACHE", str(cache))
    url = shared_table_url()
    with LatencyTable(url):
        pass
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "corrupt" in err and "moved it to" in err, err
    [aside] = tmp_path.glob("cost.db.corrupt-*")
    assert aside.stat().st_size == 4096
    assert shared_table_url() == url and capsys.readouterr().err == ""  # once only


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_fifo_or_link_as_the_shared_cache_is_refused(tmp_path, monkeypatch, kind) -> None:
    cache = tmp_path / "cost.db"
    if kind == "fifo":
        os.mkfifo(cache)
    else:
        cache.symlink_to(tmp_path / "elsewhere.db")
    monkeypatch.setenv("NASFLOW_COST_CACHE", str(cache))
    with pytest.raises(SpecialFileError, match="NASFLOW_COST_CACHE"):
        shared_table_url()
