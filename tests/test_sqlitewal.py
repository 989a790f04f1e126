"""Several processes opening the same new SQLite file at once (a sync, an ask and a publication
all open the embedding cache and the state store): none may fail with "database is locked"."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from pathlib import Path
from typing import Any

from thoth.sqlitewal import enable_wal

PROCESSES = 4
TRIALS = 20


def _open(path: str, barrier: Any) -> None:
    db = sqlite3.connect(path, timeout=60, isolation_level=None)
    db.execute("PRAGMA busy_timeout = 60000")
    barrier.wait()  # everybody switches the brand-new file at the same moment
    assert enable_wal(db, 60) == "wal"
    db.execute("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY)")
    db.close()


def test_concurrent_first_openers_all_get_wal(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    failures = 0
    with ctx.Manager() as manager:
        for trial in range(TRIALS):
            path = str(tmp_path / f"race-{trial}.sqlite")
            barrier = manager.Barrier(PROCESSES)
            procs = [ctx.Process(target=_open, args=(path, barrier)) for _ in range(PROCESSES)]
            for proc in procs:
                proc.start()
            for proc in procs:
                proc.join(timeout=120)
            failures += sum(proc.exitcode != 0 for proc in procs)
    assert failures == 0, f"{failures} of {PROCESSES * TRIALS} openings failed"


def test_other_errors_are_not_retried(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.sqlite")
    db.close()
    try:
        enable_wal(db, 60)
    except sqlite3.ProgrammingError as exc:  # a closed connection: raised at once
        assert "closed" in str(exc)
    else:
        raise AssertionError("a closed connection must raise")
