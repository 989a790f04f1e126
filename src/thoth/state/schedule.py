"""The runs of the `[schedule]` routines: queued once per key, claimed under a lease.

A run's id is its key, `<workspace>/<routine>@<due instant>` (a webhook's is
`<workspace>/<routine>@<commit>`): every scheduler that finds the run due inserts the same
key and all but the first insert do nothing, whichever process or host they run on. A queued
run is taken by one worker exactly as an agent job is (thoth.state.jobs): one write transaction,
`FOR UPDATE SKIP LOCKED` on PostgreSQL, the write lock of BEGIN IMMEDIATE on SQLite, the UPDATE
conditional on `status = 'queued'`. The worker holds it while `lease_until` is in the future
and extends it by heartbeats; `recover_orphans` puts a running run whose lease expired (its
worker died) back in the queue, or fails it when its attempts are used up.

Every method takes the instant it acts at (`at`) instead of reading the system clock: the
scheduler passes its clock's, and tests pass a clock they control.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, cast

from sqlalchemy import Row, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from thoth.state import lease
from thoth.state.core import StateError, dump_json, load_json, parse_ts, require, ts
from thoth.state.lease import (
    Leased,
    LeasedQueue,
    optional_result,
    optional_stamp,
    optional_ts,
)
from thoth.state.schema import schedule_runs

ScheduleStatus = Literal["queued", "running", "succeeded", "failed"]
Outcome = Literal["succeeded", "failed"]


class ScheduleRunNotFound(StateError):
    """No scheduled run with that key."""

    code = "schedule_run_not_found"


@dataclass(frozen=True)
class ScheduleRun:
    """One run of a routine as stored; `result` when it succeeded, `error_code` and `error`
    when it failed. Without `error_code`, `error` is the note of an attempt whose worker was
    lost (the run was queued again)."""

    id: str
    workspace: str
    routine: str
    kind: str
    due_at: datetime
    status: ScheduleStatus
    created_at: datetime
    enqueued_by: str
    started_at: datetime | None
    finished_at: datetime | None
    claimed_by: str | None
    lease_until: datetime | None
    attempts: int
    request: dict[str, Any]
    result: dict[str, Any] | None
    error_code: str | None
    error: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "routine": self.routine,
            "kind": self.kind,
            "due_at": optional_stamp(self.due_at),
            "status": self.status,
            "created_at": optional_stamp(self.created_at),
            "enqueued_by": self.enqueued_by,
            "started_at": optional_stamp(self.started_at),
            "finished_at": optional_stamp(self.finished_at),
            "claimed_by": self.claimed_by,
            "lease_until": optional_stamp(self.lease_until),
            "attempts": self.attempts,
            "request": self.request,
            "result": self.result,
            "error_code": self.error_code,
            "error": self.error,
        }


def run_key(workspace: str, routine: str, occurrence: str) -> str:
    """The key of a run: the same for every scheduler that finds it due."""
    return f"{workspace}/{routine}@{occurrence}"


def _missing(key: str) -> StateError:
    return ScheduleRunNotFound(f"scheduled run {key!r} not found -> pass claim()'s id")


# The lease of a run is the agent job queue's (thoth.state.lease), as issue 50 asks.
LEASED: Final = Leased(
    table=schedule_runs,
    noun="scheduled run",
    recovered="it was recovered",
    missing=_missing,
    exhausted="read the worker's log for why it stopped; the next due run of the routine "
    "runs as usual",
)


class ScheduleQueue(LeasedQueue):
    """The scheduled runs of the state database (thread-safe)."""

    def enqueue(
        self,
        *,
        key: str,
        workspace: str,
        routine: str,
        kind: str,
        due_at: datetime,
        at: datetime,
        by: str,
        request: dict[str, Any] | None = None,
    ) -> tuple[ScheduleRun, bool]:
        """Queue the run `key` unless a run with that key exists (queued, running or ended):
        returns the run as stored and whether this call queued it."""
        require("workspace", workspace)
        require("routine", routine)
        values = {
            "id": key,
            "workspace": workspace,
            "routine": routine,
            "kind": kind,
            "due_at": ts(due_at),
            "status": "queued",
            "created_at": ts(at),
            "enqueued_by": by,
            "attempts": 0,
            "request": dump_json(f"request of scheduled run {key}", request or {}),
        }
        dialect = postgresql if self._engine.dialect.name == "postgresql" else sqlite
        statement = dialect.insert(schedule_runs).values(**values).on_conflict_do_nothing()
        with self._write(f"schedule_runs: queueing {key}") as conn:
            done = conn.execute(statement)
            return self._get(conn, key), done.rowcount == 1

    def latest_enqueued(self, workspace: str) -> datetime | None:
        """The latest instant any scheduler queued a run of the workspace at: a clock behind it
        went back (or is behind another host's)."""
        with self._read(f"schedule_runs: latest of {workspace!r}") as conn:
            stamp = conn.scalar(
                select(func.max(schedule_runs.c.created_at)).where(
                    schedule_runs.c.workspace == workspace
                )
            )
        return None if stamp is None else parse_ts(stamp)

    def get(self, key: str) -> ScheduleRun:
        with self._read(f"schedule_runs: reading {key}") as conn:
            return self._get(conn, key)

    def find(self, key: str) -> ScheduleRun | None:
        with self._read(f"schedule_runs: reading {key}") as conn:
            row = conn.execute(select(schedule_runs).where(schedule_runs.c.id == key)).first()
        return None if row is None else _run(row)

    def list(
        self, workspace: str, routine: str | None = None, limit: int = 50
    ) -> builtins.list[ScheduleRun]:
        """The workspace's runs, the latest due first; only `routine`'s when given."""
        LEASED.check_limit(limit)
        query = select(schedule_runs).where(schedule_runs.c.workspace == workspace)
        if routine is not None:
            query = query.where(schedule_runs.c.routine == routine)
        query = query.order_by(schedule_runs.c.due_at.desc(), schedule_runs.c.id.desc())
        with self._read(f"schedule_runs: listing {workspace!r}") as conn:
            return [_run(r) for r in conn.execute(query.limit(limit)).all()]

    def last_succeeded(self, workspace: str, routine: str) -> ScheduleRun | None:
        """The routine's succeeded run of the latest due instant."""
        query = (
            select(schedule_runs)
            .where(
                schedule_runs.c.workspace == workspace,
                schedule_runs.c.routine == routine,
                schedule_runs.c.status == "succeeded",
            )
            .order_by(schedule_runs.c.due_at.desc(), schedule_runs.c.id.desc())
            .limit(1)
        )
        with self._read(f"schedule_runs: last success of {routine!r}") as conn:
            row = conn.execute(query).first()
        return None if row is None else _run(row)

    def oldest_waiting(self, workspace: str, routine: str) -> ScheduleRun | None:
        """The routine's queued or running run due first."""
        query = (
            select(schedule_runs)
            .where(
                schedule_runs.c.workspace == workspace,
                schedule_runs.c.routine == routine,
                schedule_runs.c.status.in_(("queued", "running")),
            )
            .order_by(schedule_runs.c.due_at, schedule_runs.c.id)
            .limit(1)
        )
        with self._read(f"schedule_runs: waiting run of {routine!r}") as conn:
            row = conn.execute(query).first()
        return None if row is None else _run(row)

    def last_finished(self, workspace: str, routine: str) -> ScheduleRun | None:
        """The routine's run that ended last (succeeded or failed)."""
        query = (
            select(schedule_runs)
            .where(
                schedule_runs.c.workspace == workspace,
                schedule_runs.c.routine == routine,
                schedule_runs.c.finished_at.is_not(None),
            )
            .order_by(schedule_runs.c.finished_at.desc(), schedule_runs.c.id.desc())
            .limit(1)
        )
        with self._read(f"schedule_runs: last run of {routine!r}") as conn:
            row = conn.execute(query).first()
        return None if row is None else _run(row)

    def totals(self, workspace: str) -> builtins.list[tuple[str, str, int]]:
        """(routine, status, runs) of the workspace, sorted."""
        query = (
            select(schedule_runs.c.routine, schedule_runs.c.status, func.count())
            .where(schedule_runs.c.workspace == workspace)
            .group_by(schedule_runs.c.routine, schedule_runs.c.status)
        )
        with self._read(f"schedule_runs: totals of {workspace!r}") as conn:
            return sorted((str(r[0]), str(r[1]), int(r[2])) for r in conn.execute(query).all())

    def routine_names(self, workspace: str, prefix: str) -> builtins.list[str]:
        """The routine names of the workspace's runs that start with `prefix`, sorted."""
        query = (
            select(schedule_runs.c.routine)
            .where(
                schedule_runs.c.workspace == workspace,
                schedule_runs.c.routine.startswith(prefix, autoescape=True),
            )
            .distinct()
        )
        with self._read(f"schedule_runs: routines of {workspace!r}") as conn:
            return sorted(str(r.routine) for r in conn.execute(query).all())

    # ------------------------------------------------------------------ workers' side

    def claim(
        self, workspace: str, worker_id: str, lease_seconds: float, at: datetime
    ) -> ScheduleRun | None:
        """Take the workspace's queued run due first, for `worker_id` under a lease of
        `lease_seconds` from `at`; None when none is queued. One run, one worker."""
        LEASED.check_claim(worker_id, lease_seconds)
        with self._write(f"schedule_runs: claiming a run for {worker_id}") as conn:
            taken = lease.claim(
                conn,
                LEASED,
                worker_id,
                lease_seconds,
                where=(schedule_runs.c.workspace == workspace,),
                order_by=(schedule_runs.c.due_at, schedule_runs.c.id),
                at=at,
            )
            return None if taken is None else self._get(conn, taken)

    def heartbeat(
        self, key: str, worker_id: str, lease_seconds: float, at: datetime
    ) -> ScheduleRun:
        """Extend `worker_id`'s lease; JobLeaseLost when the run is no longer its own."""
        LEASED.check_lease(lease_seconds)
        with self._write(f"schedule_runs: heartbeat of {key} by {worker_id}") as conn:
            lease.holding(conn, LEASED, key, worker_id)
            lease.extend(conn, LEASED, key, lease_seconds, at)
            return self._get(conn, key)

    def finish(
        self,
        key: str,
        worker_id: str,
        status: Outcome,
        at: datetime,
        *,
        result: dict[str, Any] | None = None,
        error_code: str | None = None,
        error: str | None = None,
    ) -> ScheduleRun:
        """End the run, by its lease holder only: `succeeded` with a result, `failed` with an
        error code and message."""
        if status == "succeeded" and (result is None or error_code is not None):
            raise StateError(f"schedule_runs: run {key} succeeded needs a result, no error code")
        if status == "failed" and (result is not None or not error_code):
            raise StateError(f"schedule_runs: run {key} failed needs an error code, no result")
        if status not in ("succeeded", "failed"):
            raise StateError(f"schedule_runs: cannot finish {key} as {status!r}")
        values = {
            "status": status,
            "finished_at": ts(at),
            "lease_until": None,
            "result": None if result is None else dump_json(f"result of {key}", result),
            "error_code": error_code,
        }
        if status == "failed":  # a succeeded run keeps the note of an attempt lost before
            values["error"] = error
        with self._write(f"schedule_runs: finishing {key} by {worker_id}") as conn:
            lease.holding(conn, LEASED, key, worker_id)
            conn.execute(update(schedule_runs).where(schedule_runs.c.id == key).values(**values))
            return self._get(conn, key)

    def recover_orphans(
        self, workspace: str, max_attempts: int, at: datetime
    ) -> builtins.list[ScheduleRun]:
        """Running runs whose lease expired by `at` (their worker died or hung): back to
        `queued`, or `failed` (`attempts_exhausted`) after `max_attempts` claims."""
        LEASED.check_attempts(max_attempts)
        stamp = ts(at)
        with self._write("schedule_runs: recovering orphaned runs") as conn:
            keys = lease.recover(
                conn,
                LEASED,
                max_attempts,
                stamp,
                where=(schedule_runs.c.workspace == workspace,),
            )
            return [self._get(conn, key) for key in keys]

    # ------------------------------------------------------------------ helpers

    def _get(self, conn: Connection, key: str) -> ScheduleRun:
        row = conn.execute(select(schedule_runs).where(schedule_runs.c.id == key)).first()
        if row is None:
            raise ScheduleRunNotFound(
                f"scheduled run {key!r} not found -> `tht schedule list --json` lists the runs"
            )
        return _run(row)


def _run(row: Row[Any]) -> ScheduleRun:
    return ScheduleRun(
        id=row.id,
        workspace=row.workspace,
        routine=row.routine,
        kind=row.kind,
        due_at=parse_ts(row.due_at),
        status=cast(ScheduleStatus, row.status),
        created_at=parse_ts(row.created_at),
        enqueued_by=row.enqueued_by,
        started_at=optional_ts(row.started_at),
        finished_at=optional_ts(row.finished_at),
        claimed_by=row.claimed_by,
        lease_until=optional_ts(row.lease_until),
        attempts=int(row.attempts),
        request=load_json(row.request),
        result=optional_result(row.result),
        error_code=row.error_code,
        error=row.error,
    )
