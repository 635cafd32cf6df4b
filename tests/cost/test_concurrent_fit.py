"""Two searches started together on an empty shared cost cache take one measurement: the
second waits for the first, reuses what it stored, and predicts the same cost for every
architecture; the cache holds the first's rows, not a mixture of both."""

from __future__ import annotations

import multiprocessing as mp
import os
import sqlite3
from pathlib import Path

import pytest

ARCHS = [{"l0": a, "l1": b} for a in ("skip", "small", "big") for b in ("small", "big")]


def _fit(study_db: str, cache: str, start: mp.synchronize.Barrier, out: mp.Queue) -> None:
    """A study's cost model over its own database and the shared ``cache``, fitted once
    both processes have built theirs (``start``: a barrier of the two); its predictions go
    to ``out``."""
    os.environ["NASFLOW_COST_CACHE"] = cache
    os.environ["OMP_NUM_THREADS"] = "1"
    from nasflow.cost import CostModel
    from tests.cost.test_model import ToyMLPSpace

    model = CostModel.for_space(ToyMLPSpace(), batch_size=16, storage_url=study_db, rounds=2)
    # Under the full suite's load the first fit can flag its table loaded and finish before
    # the second reaches the lock; the second, not having waited, then re-measures by
    # design (a loaded table is not passed on) and this test failed once in a full run
    # (2026-11-29). What is tested here is the lock: one measurement, nothing mixed; so
    # both take the shared table as stored, as a deterministic study does.
    model.keep_loaded = True
    start.wait(60)
    model.fit(n=3, rounds=1, iters=1)
    out.put((study_db, [model.predict_step_seconds(a) for a in ARCHS]))


def _ops(db: Path) -> dict[str, float]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT op_key, fwd_bwd_seconds FROM nasflow_cost_ops"))


@pytest.mark.slow
def test_two_fits_started_together_share_one_measurement(tmp_path: Path) -> None:
    cache = tmp_path / "shared" / "cost.db"
    dbs = [str(tmp_path / f"study-{i}.db") for i in range(2)]
    ctx = mp.get_context("spawn")
    # A barrier, not an event set by this process: under the full suite's load one child
    # could import, fit and release the lock before the other reached its fit, and the
    # second would then start alone (not together) and re-measure a table flagged loaded.
    start, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_fit, args=(db, str(cache), start, out)) for db in dbs]
    for p in procs:
        p.start()
    got = dict(out.get(timeout=600) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert got[dbs[0]] == got[dbs[1]]  # one prediction per architecture
    shared = _ops(cache)
    assert shared and _ops(Path(dbs[0])) == shared == _ops(Path(dbs[1]))  # not mixed
