"""Switching a SQLite file to WAL when several processes may open it at the same moment."""

from __future__ import annotations

import sqlite3
import time
from typing import Any


def enable_wal(cursor: Any, timeout_s: float) -> str:
    """Run `PRAGMA journal_mode = WAL` on a sqlite3 connection or cursor; returns the mode.

    Switching a file to WAL needs an exclusive lock, and SQLite answers "database is locked" at
    once — without calling the busy handler — while another process is opening or switching
    the same new file. The switch is persistent, so retrying until the other opener is done
    (bounded by `timeout_s`) always converges; any other error is raised as it is."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return str(cursor.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)
