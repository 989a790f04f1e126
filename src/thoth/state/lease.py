"""The leased queue both the agent's jobs (thoth.state.jobs) and the scheduled runs
(thoth.state.schedule) are: one row claimed by one worker under a lease, held while the lease
runs, put back in the queue (or failed) when its worker is lost.

The claim is one write transaction: on PostgreSQL `SELECT ... FOR UPDATE SKIP LOCKED` picks
the first queued row no other transaction holds; on SQLite the transaction holds the
database's write lock from BEGIN IMMEDIATE. In both the UPDATE is conditional on
`status = 'queued'` and its row count is checked, so even a claim that raced is refused by the
row itself. Only the holder (`status = 'running'`, `claimed_by` the worker) may extend the
lease or end the row; any other worker is told `JobLeaseLost` and must stop.

The functions here act on a connection the queue opened (its transaction and the label its
errors carry stay the queue's own); `Leased` says which table and how its messages name a row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, Self, cast

from sqlalchemy import ColumnElement, Row, Table, select, update
from sqlalchemy.engine import Connection

from thoth.state.core import StateError, StoreCore, now, parse_ts, require, ts

MAX_LIMIT: Final = 500  # the most rows a listing returns


class JobLeaseLost(StateError):
    """The worker no longer holds the job (its lease expired and it was recovered, or it was
    never claimed by this worker): it must stop working on it."""

    code = "job_lease_lost"


@dataclass(frozen=True)
class Leased:
    """A table of leased rows (columns id, status, claimed_by, started_at, heartbeat_at,
    lease_until, attempts, finished_at, error_code, error) and the words of its messages."""

    table: Table
    noun: str  # one row in a message: "job", "scheduled run"
    recovered: str  # how a lost row came back: "the job was recovered"
    missing: Callable[[str], StateError]  # the error for a key that names no row
    exhausted: str  # the hint of a row that used up its attempts

    @property
    def name(self) -> str:
        return self.table.name

    def check_claim(self, worker_id: str, lease_seconds: float) -> None:
        require("worker id", worker_id)
        self.check_lease(lease_seconds)

    def check_lease(self, lease_seconds: float) -> None:
        if not lease_seconds > 0:
            raise StateError(f"{self.name}: lease_seconds must be positive, got {lease_seconds}")

    def check_limit(self, limit: int) -> None:
        if not 1 <= limit <= MAX_LIMIT:
            raise StateError(f"{self.name}: limit must be 1 to {MAX_LIMIT}, got {limit}")

    def check_attempts(self, max_attempts: int) -> None:
        if max_attempts < 1:
            raise StateError(f"{self.name}: max_attempts must be at least 1, got {max_attempts}")


class LeasedQueue(StoreCore):
    """A queue of leased rows over a state store's engine (thread-safe)."""

    @classmethod
    def on(cls, store: StoreCore) -> Self:
        """The queue over `store`'s engine: closing either closes both."""
        return cls(store._engine, store.url)


def claim(
    conn: Connection,
    leased: Leased,
    worker_id: str,
    lease_seconds: float,
    *,
    where: Sequence[ColumnElement[bool]],
    order_by: Sequence[ColumnElement[Any]],
    at: datetime | None = None,
) -> str | None:
    """Take the first queued row (`where`, in `order_by`) for `worker_id` under a lease of
    `lease_seconds` from `at` (the clock's now once the row is picked when None): its id, or
    None when none is queued."""
    table = leased.table
    picked = conn.execute(
        select(table.c.id)
        .where(table.c.status == "queued", *where)
        .order_by(*order_by)
        .limit(1)
        .with_for_update(skip_locked=True)
    ).first()
    if picked is None:
        return None
    moment = now() if at is None else at
    taken = conn.execute(
        update(table)
        .where(table.c.id == picked.id, table.c.status == "queued")
        .values(
            status="running",
            claimed_by=worker_id,
            started_at=ts(moment),
            heartbeat_at=ts(moment),
            lease_until=ts(moment + timedelta(seconds=lease_seconds)),
            attempts=table.c.attempts + 1,
        )
    )
    if taken.rowcount != 1:  # pragma: no cover - the lock makes this unreachable
        return None
    return str(picked.id)


def holding(conn: Connection, leased: Leased, key: str, worker_id: str) -> Row[Any]:
    """The row, locked for this transaction, when `worker_id` holds it; else JobLeaseLost."""
    table = leased.table
    row = conn.execute(select(table).where(table.c.id == key).with_for_update()).first()
    if row is None:
        raise leased.missing(key)
    if row.status != "running" or row.claimed_by != worker_id:
        holder = f"held by {row.claimed_by}" if row.claimed_by else "held by no worker"
        raise JobLeaseLost(
            f"{leased.noun} {key} is {row.status} and {holder}, not by {worker_id} -> this "
            f"worker lost it (its lease expired and {leased.recovered}): stop working on it"
        )
    return row


def extend(conn: Connection, leased: Leased, key: str, lease_seconds: float, at: datetime) -> None:
    """Renew the lease of a row its worker holds (checked with `holding` first)."""
    table = leased.table
    conn.execute(
        update(table)
        .where(table.c.id == key)
        .values(heartbeat_at=ts(at), lease_until=ts(at + timedelta(seconds=lease_seconds)))
    )


def recover(
    conn: Connection,
    leased: Leased,
    max_attempts: int,
    stamp: str,
    *,
    where: Sequence[ColumnElement[bool]] = (),
    ended: Callable[[Row[Any], str], dict[str, Any] | None] = lambda row, lost: None,
) -> list[str]:
    """Running rows whose lease expired before `stamp`: ended as `ended(row, lost)` says when it
    says so, else failed (`attempts_exhausted`) after `max_attempts` claims, else queued again.
    Each update is conditional on the lease it read, so a row renewed meanwhile is left alone.
    Returns their ids."""
    table = leased.table
    rows = conn.execute(
        select(table)
        .where(table.c.status == "running", table.c.lease_until < stamp, *where)
        .with_for_update(skip_locked=True)
    ).all()
    for row in rows:
        lost = f"worker {row.claimed_by} lost its lease (until {row.lease_until})"
        values = ended(row, lost)
        if values is None and int(row.attempts) >= max_attempts:
            values = {
                "status": "failed",
                "finished_at": stamp,
                "error_code": "attempts_exhausted",
                "error": f"{lost} on attempt {int(row.attempts)} of {max_attempts}; no "
                f"attempt left -> {leased.exhausted}",
            }
        elif values is None:
            values = {"status": "queued", "claimed_by": None, "error": f"requeued: {lost}"}
        conn.execute(
            update(table)
            .where(
                table.c.id == row.id,
                table.c.status == "running",
                table.c.lease_until == row.lease_until,
            )
            .values(lease_until=None, **values)
        )
    return [str(row.id) for row in rows]


def optional_ts(stored: str | None) -> datetime | None:
    return None if stored is None else parse_ts(stored)


def optional_stamp(moment: datetime | None) -> str | None:
    return None if moment is None else ts(moment)


def optional_result(stored: str | None) -> dict[str, Any] | None:
    return None if stored is None else cast(dict[str, Any], json.loads(stored))
