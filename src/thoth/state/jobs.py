"""The deep-analysis agent's job queue: a table, claimed under a lease, recovered when orphaned.

A job is `queued` until a worker claims it (`running`, `claimed_by` the worker, `lease_until`
in the future), then ends `completed`, `partial` (an answer with gaps: its result and the
code of what it could not reach), `failed` or `cancelled`. What keeps one job to one
worker is the claim, one write transaction: on PostgreSQL `SELECT ... FOR UPDATE SKIP LOCKED`
picks the oldest queued row no other transaction holds; on SQLite the transaction holds the
database's write lock from BEGIN IMMEDIATE. In both the UPDATE is conditional on
`status = 'queued'` and its row count is checked, so even a claim that raced is refused by
the row itself.

Only the lease holder may extend the lease (`heartbeat`), append steps or finish the job: a
worker whose lease expired and whose job was recovered (or claimed again) is told so
(`JobLeaseLost`) and must stop. `recover_orphans` puts running jobs with an expired lease back
in the queue, or fails them when they used up their attempts.

The queue shares the engine of the `StateStore` it was made from (`JobQueue.on(store)`).
"""

from __future__ import annotations

import builtins
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, cast, get_args

from sqlalchemy import Row, func, insert, select, update
from sqlalchemy.engine import Connection

from thoth.errors import Problem
from thoth.state import lease
from thoth.state.core import (
    StateError,
    dump_json,
    load_json,
    now,
    parse_ts,
    require,
    ts,
)
from thoth.state.lease import (
    Leased,
    LeasedQueue,
    optional_result,
    optional_stamp,
    optional_ts,
)
from thoth.state.schema import agent_job_steps, agent_jobs

JobStatus = Literal["queued", "running", "completed", "partial", "failed", "cancelled"]
FinalStatus = Literal["completed", "partial", "failed", "cancelled"]
StepKind = Literal["model", "tool"]

FINISHED: Final = ("completed", "partial", "failed", "cancelled")


class JobNotFound(StateError):
    """No job with that id (or not one the asking caller submitted)."""

    code = "job_not_found"


class JobFinished(StateError):
    """The job already ended: it cannot be cancelled, its outcome is kept."""

    code = "job_finished"


class JobNotRetryable(StateError):
    """Only a job that ended partial or failed is run again."""

    code = "job_not_retryable"


@dataclass(frozen=True)
class Job:
    """One deep-analysis job as stored. `result` is set when `completed` or `partial`;
    `error_code` and `error` say why when `partial` (what the answer could not reach),
    `failed` or `cancelled`."""

    id: str
    workspace: str
    caller: str | None
    question: str
    request: dict[str, Any]  # labels, channel: the search context of the caller
    status: JobStatus
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    claimed_by: str | None
    lease_until: datetime | None
    heartbeat_at: datetime | None
    attempts: int
    cancel_requested: bool
    result: dict[str, Any] | None
    error_code: str | None
    error: str | None
    usage: dict[str, Any]  # tokens, turns, tool_calls, seconds

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def as_dict(self) -> dict[str, Any]:
        """The job as JSON: timestamps in ISO-8601 UTC, None where unset."""

        return {
            "id": self.id,
            "workspace": self.workspace,
            "caller": self.caller,
            "question": self.question,
            "request": self.request,
            "status": self.status,
            "created_at": optional_stamp(self.created_at),
            "started_at": optional_stamp(self.started_at),
            "finished_at": optional_stamp(self.finished_at),
            "claimed_by": self.claimed_by,
            "lease_until": optional_stamp(self.lease_until),
            "heartbeat_at": optional_stamp(self.heartbeat_at),
            "attempts": self.attempts,
            "cancel_requested": self.cancel_requested,
            "result": self.result,
            "error_code": self.error_code,
            "error": self.error,
            "usage": self.usage,
        }


@dataclass(frozen=True)
class JobStep:
    """One step of a job's transcript: a model turn or a tool call with its result."""

    attempt: int
    seq: int
    at: datetime
    kind: StepKind
    data: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "seq": self.seq,
            "at": ts(self.at),
            "kind": self.kind,
            "data": self.data,
        }


def new_job_id() -> str:
    return f"job_{uuid.uuid4().hex[:24]}"


def _missing(job_id: str) -> StateError:
    return JobNotFound(f"job {job_id!r} not found -> pass the id claim() returned")


# The lease of a job is the one of thoth.state.lease, as a scheduled run's is.
LEASED: Final = Leased(
    table=agent_jobs,
    noun="job",
    recovered="the job was recovered",
    missing=_missing,
    exhausted="look at the transcript for the step it stopped at, then submit the question again",
)


class JobQueue(LeasedQueue):
    """The queue of deep-analysis jobs in the state database (thread-safe)."""

    # ------------------------------------------------------------------ callers' side

    def create(
        self, workspace: str, caller: str | None, question: str, request: dict[str, Any]
    ) -> Job:
        """Queue a job; `request` holds the caller's search context (labels, channel)."""
        require("workspace", workspace)
        require("question", question)
        job_id = new_job_id()
        values = {
            "id": job_id,
            "workspace": workspace,
            "caller": caller,
            "question": question,
            "request": dump_json(f"request of job {job_id}", request),
            "status": "queued",
            "created_at": ts(now()),
            "attempts": 0,
            "cancel_requested": False,
            "usage": "{}",
        }
        with self._write(f"agent_jobs: queueing a job of {workspace!r}") as conn:
            conn.execute(insert(agent_jobs).values(**values))
            return self._get(conn, job_id)

    def get(self, job_id: str, caller: str | None = None) -> Job:
        """One job; with `caller`, only that caller's jobs exist (JobNotFound otherwise)."""
        with self._read(f"agent_jobs: reading {job_id}") as conn:
            return self._get(conn, job_id, caller)

    def list(self, workspace: str, caller: str | None = None, limit: int = 50) -> list[Job]:
        """The workspace's newest jobs first; only `caller`'s when given."""
        LEASED.check_limit(limit)
        query = select(agent_jobs).where(agent_jobs.c.workspace == workspace)
        if caller is not None:
            query = query.where(agent_jobs.c.caller == caller)
        query = query.order_by(agent_jobs.c.created_at.desc(), agent_jobs.c.id.desc()).limit(limit)
        with self._read(f"agent_jobs: listing {workspace!r}") as conn:
            return [_job(r) for r in conn.execute(query).all()]

    def retry(self, job_id: str, caller: str | None = None) -> Job:
        """Run a partial or failed job afresh: a new queued job with the same question,
        caller and search context (`request.retry_of` names the old one). The old job, its
        result and its transcript are kept as they are. With `caller`, only that caller's
        jobs exist."""
        old = self.get(job_id, caller)
        if old.status not in ("partial", "failed"):
            raise JobNotRetryable(
                f"job {job_id} is {old.status!r}: only a partial or failed job is run again "
                "-> wait for it to end, or submit the question as a new job"
            )
        request = {k: v for k, v in old.request.items() if k != "retry_of"}
        return self.create(old.workspace, old.caller, old.question, {**request, "retry_of": job_id})

    def cancel(self, job_id: str, caller: str | None = None) -> Job:
        """Cancel a job: a queued one at once; a running one is asked to stop
        (`cancel_requested`), and its worker marks it cancelled at its next step. A finished
        job is refused (JobFinished). With `caller`, only that caller's jobs exist."""
        with self._write(f"agent_jobs: cancelling {job_id}") as conn:
            job = self._get(conn, job_id, caller)
            if job.finished:
                what = f"job {job_id} already ended as {job.status!r}; its outcome is kept"
                raise JobFinished(
                    what,
                    problems=[
                        Problem(
                            "",
                            what,
                            hint="nothing to cancel: submit a new job to ask again",
                            code=JobFinished.code,
                        )
                    ],
                )
            if job.status == "queued":
                conn.execute(
                    update(agent_jobs)
                    .where(agent_jobs.c.id == job_id, agent_jobs.c.status == "queued")
                    .values(
                        status="cancelled",
                        cancel_requested=True,
                        finished_at=ts(now()),
                        error_code="cancelled",
                        error="cancelled before a worker took it",
                    )
                )
            else:
                conn.execute(
                    update(agent_jobs)
                    .where(agent_jobs.c.id == job_id)
                    .values(cancel_requested=True)
                )
            return self._get(conn, job_id)

    def steps(self, job_id: str) -> builtins.list[JobStep]:
        """The job's transcript, in order (attempt, then step)."""
        with self._read(f"agent_job_steps: reading the steps of {job_id}") as conn:
            self._get(conn, job_id)
            rows = conn.execute(
                select(agent_job_steps)
                .where(agent_job_steps.c.job_id == job_id)
                .order_by(agent_job_steps.c.id)
            ).all()
        return [
            JobStep(
                attempt=int(r.attempt),
                seq=int(r.seq),
                at=parse_ts(r.at),
                kind=cast(StepKind, r.kind),
                data=load_json(r.data),
            )
            for r in rows
        ]

    # ------------------------------------------------------------------ workers' side

    def claim(self, worker_id: str, lease_seconds: float) -> Job | None:
        """Take the oldest queued job for `worker_id` under a lease of `lease_seconds`, or
        None when none is queued. Never gives one job to two workers (see the module)."""
        LEASED.check_claim(worker_id, lease_seconds)
        with self._write(f"agent_jobs: claiming a job for {worker_id}") as conn:
            taken = lease.claim(
                conn,
                LEASED,
                worker_id,
                lease_seconds,
                where=(),
                order_by=(agent_jobs.c.created_at, agent_jobs.c.id),
            )
            return None if taken is None else self._get(conn, taken)

    def heartbeat(self, job_id: str, worker_id: str, lease_seconds: float) -> Job:
        """Extend `worker_id`'s lease on the job; JobLeaseLost when it is no longer its own.
        The job returned says whether a cancel was requested."""
        LEASED.check_lease(lease_seconds)
        moment = now()
        with self._write(f"agent_jobs: heartbeat of {job_id} by {worker_id}") as conn:
            lease.holding(conn, LEASED, job_id, worker_id)
            lease.extend(conn, LEASED, job_id, lease_seconds, moment)
            return self._get(conn, job_id)

    def add_step(
        self,
        job_id: str,
        worker_id: str,
        kind: StepKind,
        data: dict[str, Any],
        usage: dict[str, Any],
    ) -> int:
        """Append one step to the transcript of the worker's current attempt and record the
        usage so far; returns the step's number. Only the lease holder may."""
        if kind not in get_args(StepKind):
            raise StateError(f"agent_job_steps: unknown kind {kind!r} -> use model or tool")
        data_text = dump_json(f"step of job {job_id}", data)
        usage_text = dump_json(f"usage of job {job_id}", usage)
        with self._write(f"agent_job_steps: recording a step of {job_id}") as conn:
            job = self._holding(conn, job_id, worker_id)
            last = conn.scalar(
                select(func.max(agent_job_steps.c.seq)).where(
                    agent_job_steps.c.job_id == job_id,
                    agent_job_steps.c.attempt == job.attempts,
                )
            )
            seq = 1 if last is None else int(last) + 1
            conn.execute(
                insert(agent_job_steps).values(
                    job_id=job_id,
                    attempt=job.attempts,
                    seq=seq,
                    at=ts(now()),
                    kind=kind,
                    data=data_text,
                )
            )
            conn.execute(
                update(agent_jobs).where(agent_jobs.c.id == job_id).values(usage=usage_text)
            )
        return seq

    def finish(
        self,
        job_id: str,
        worker_id: str,
        status: FinalStatus,
        *,
        result: dict[str, Any] | None = None,
        error_code: str | None = None,
        error: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> Job:
        """End the job, by its lease holder only: `completed` with a result, `partial` with a
        result and the code of what it could not reach, `failed` with an error code and
        message, or `cancelled` (only when a cancel was requested)."""
        if status not in FINISHED:
            raise StateError(
                f"agent_jobs: cannot finish {job_id} as {status!r} -> use completed, partial, "
                "failed or cancelled"
            )
        if status == "completed" and (result is None or error_code is not None):
            raise StateError(f"agent_jobs: job {job_id} completed needs a result and no error code")
        if status == "partial" and (result is None or not error_code):
            raise StateError(
                f"agent_jobs: job {job_id} partial needs a result and the code of its gap"
            )
        if status in ("failed", "cancelled") and (result is not None or not error_code):
            raise StateError(
                f"agent_jobs: job {job_id} {status} needs an error code and no result: a "
                "partial result is stored as partial, never as a failure's"
            )
        values: dict[str, Any] = {
            "status": status,
            "finished_at": ts(now()),
            "lease_until": None,
            "result": None if result is None else dump_json(f"result of {job_id}", result),
            "error_code": error_code,
            "error": error,
        }
        if usage is not None:
            values["usage"] = dump_json(f"usage of job {job_id}", usage)
        with self._write(f"agent_jobs: finishing {job_id} by {worker_id}") as conn:
            job = self._holding(conn, job_id, worker_id)
            if status == "cancelled" and not job.cancel_requested:
                raise StateError(
                    f"agent_jobs: job {job_id} was not asked to stop -> finish it as "
                    "completed or failed"
                )
            conn.execute(update(agent_jobs).where(agent_jobs.c.id == job_id).values(**values))
            return self._get(conn, job_id)

    def recover_orphans(self, max_attempts: int) -> builtins.list[Job]:
        """Running jobs whose lease expired (their worker died or hung): back to `queued`,
        or `failed` (error_code `attempts_exhausted`) when they were already claimed
        `max_attempts` times, or `cancelled` when a cancel was requested. Returns them as
        they are now."""
        LEASED.check_attempts(max_attempts)
        stamp = ts(now())

        def ended(row: Row[Any], lost: str) -> dict[str, Any] | None:
            if not row.cancel_requested:
                return None  # failed or queued again, as any leased row
            return {
                "status": "cancelled",
                "finished_at": stamp,
                "error_code": "cancelled",
                "error": f"cancelled; {lost}",
            }

        with self._write("agent_jobs: recovering orphaned jobs") as conn:
            ids = lease.recover(conn, LEASED, max_attempts, stamp, ended=ended)
            return [self._get(conn, job_id) for job_id in ids]

    # ------------------------------------------------------------------ helpers

    def _get(self, conn: Connection, job_id: str, caller: str | None = None) -> Job:
        row = conn.execute(select(agent_jobs).where(agent_jobs.c.id == job_id)).first()
        if row is None or (caller is not None and row.caller != caller):
            raise JobNotFound(
                f"job {job_id!r} not found -> check the id (`tht agent list` lists the jobs)"
            )
        return _job(row)

    def _holding(self, conn: Connection, job_id: str, worker_id: str) -> Job:
        """The job, locked for this transaction, when `worker_id` holds it; else JobLeaseLost."""
        return _job(lease.holding(conn, LEASED, job_id, worker_id))


def _job(row: Row[Any]) -> Job:
    return Job(
        id=row.id,
        workspace=row.workspace,
        caller=row.caller,
        question=row.question,
        request=load_json(row.request),
        status=cast(JobStatus, row.status),
        created_at=parse_ts(row.created_at),
        started_at=optional_ts(row.started_at),
        finished_at=optional_ts(row.finished_at),
        claimed_by=row.claimed_by,
        lease_until=optional_ts(row.lease_until),
        heartbeat_at=optional_ts(row.heartbeat_at),
        attempts=int(row.attempts),
        cancel_requested=bool(row.cancel_requested),
        result=optional_result(row.result),
        error_code=row.error_code,
        error=row.error,
        usage=load_json(row.usage),
    )
