"""A corrupt shared cost cache is moved aside and rebuilt with one warning line; a FIFO
or link in its place is refused in one line, unopened."""

from __future__ import annotations

import logging
import os

import pytest

from nasflow._logging import LOGGER, warn
from nasflow._regular import SpecialFileError
from nasflow.cost._tables._table import LatencyTable, shared_table_url


def test_a_corrupt_shared_cache_is_moved_aside_and_rebuilt(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cost.db"
    cache.write_bytes(os.urandom(4096))
    monkeypatch.setenv("NASFLOW_COST_CACHE", str(cache))
    # (the nasflow logger routed nowhere, as in a program that configures no logging:
    # the warning is a line on stderr; pytest's own capture would route it)
    monkeypatch.setattr(LOGGER, "propagate", False)
    url = shared_table_url()
    with LatencyTable(url):
        pass
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "corrupt" in err and "moved it to" in err, err
    [aside] = tmp_path.glob("cost.db.corrupt-*")
    assert aside.stat().st_size == 4096
    assert shared_table_url() == url and capsys.readouterr().err == ""  # once only


def test_a_warning_goes_to_the_logger_where_the_application_routes_it(capsys, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="nasflow"):
        warn(logging.getLogger("nasflow.cost"), "nasflow: warning: routed")
    assert caplog.messages == ["nasflow: warning: routed"] and capsys.readouterr().err == ""


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
