"""Runs: the builds of generations, and the sync runs whose running row is the workspace's run
lock (a partial unique index), held by a docs sync or an Evidence publication."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

from sqlalchemy import Row, Table, insert, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from thoth.state.backup import keep_previous
from thoth.state.core import (
    StateError,
    StoreCore,
    dump_json,
    load_json,
    now,
    parse_ts,
    require,
    ts,
)
from thoth.state.schema import BUILD_OUTCOMES, SYNC_STATUSES, builds, generations, sync_runs

BuildOutcome = Literal["activated", "gate_failed", "failed", "interrupted"]
SyncStatus = Literal["running", "succeeded", "failed", "interrupted"]
RunKind = Literal["docs", "evidence", "schema"]


class SyncRunConflict(StateError):
    """Another `tht docs sync` of the workspace is running: this one refused to start."""

    exit_code = 4


@dataclass(frozen=True)
class Build:
    """One run of the build pipeline; `finished_at is None` while it runs (or if it died)."""

    id: int
    workspace: str
    revision: str
    generation: str
    started_at: datetime
    finished_at: datetime | None
    duration_s: float | None
    outcome: BuildOutcome | None
    counts: dict[str, Any]
    message: str

    @property
    def finished(self) -> bool:
        return self.finished_at is not None


@dataclass(frozen=True)
class SyncRun:
    """One `tht docs sync` run; `status == 'running'` until it ends (or its process dies)."""

    id: int
    workspace: str
    status: SyncStatus
    started_at: datetime
    finished_at: datetime | None
    run_by: str
    host: str
    pid: int
    full: bool
    pipeline_version: int
    revisions: dict[str, Any]  # source name -> commit
    generation: str | None
    counts: dict[str, Any]
    changes: dict[str, Any]  # created/updated/deleted/labels_changed/... by name
    message: str
    kind: RunKind = "docs"  # "evidence": an Evidence publication holding the same lock


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` exists on this machine (signal 0 checks without sending)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by another user
    return True


class Runs(StoreCore):
    """Builds and sync runs (the run lock)."""

    def keep_previous(self) -> None:
        """Keep a copy of the SQLite file as it is now (`<name>.previous`), the way back of
        `tht state restore`; PostgreSQL has its own backups."""
        if self.file is not None:
            keep_previous(self.file)

    # ------------------------------------------------------------------ builds

    def start_build(self, workspace: str, revision: str, generation: str) -> int:
        """Record that a build of `revision` into `generation` started; returns the build id."""
        require("workspace", workspace)
        require("revision", revision)
        with self._write(f"builds: starting a build of {revision!r} for {workspace!r}") as conn:
            owner = conn.scalar(
                select(generations.c.workspace).where(generations.c.id == generation)
            )
            if owner != workspace:
                where = "not found" if owner is None else f"belongs to workspace {owner!r}"
                raise StateError(
                    f"state store {self.url}: builds: generation {generation} {where} "
                    f"-> call create_generation({workspace!r}, ...) first and pass its id"
                )
            result = conn.execute(
                insert(builds).values(
                    workspace=workspace,
                    revision=revision,
                    generation=generation,
                    started_at=ts(now()),
                    counts="{}",
                    message="",
                )
            )
            key = result.inserted_primary_key
        if key is None or key[0] is None:  # pragma: no cover - both backends return the id
            raise StateError(f"state store {self.url}: builds: the new build id was not returned")
        return int(key[0])

    def finish_build(
        self, build_id: int, outcome: BuildOutcome, counts: dict[str, Any], message: str
    ) -> None:
        """Close a build with its outcome; a build can be finished only once."""
        if outcome not in BUILD_OUTCOMES:
            raise StateError(
                f"builds: unknown outcome {outcome!r} for build {build_id} -> use one of "
                f"{', '.join(BUILD_OUTCOMES)}"
            )
        counts_text = dump_json(f"counts of build {build_id}", counts)
        with self._write(f"builds: finishing build {build_id}") as conn:
            row = conn.execute(
                select(builds.c.started_at, builds.c.finished_at, builds.c.outcome).where(
                    builds.c.id == build_id
                )
            ).first()
            if row is None:
                raise StateError(
                    f"state store {self.url}: build {build_id} not found in table builds "
                    "-> pass the id returned by start_build"
                )
            if row.finished_at is not None:
                raise StateError(
                    f"state store {self.url}: build {build_id} already finished at "
                    f"{row.finished_at} with outcome {row.outcome!r} -> start a new build"
                )
            moment = now()
            conn.execute(
                update(builds)
                .where(builds.c.id == build_id, builds.c.finished_at.is_(None))
                .values(
                    finished_at=ts(moment),
                    duration_s=(moment - parse_ts(row.started_at)).total_seconds(),
                    outcome=outcome,
                    counts=counts_text,
                    message=message,
                )
            )

    def mark_interrupted(self, workspace: str) -> int:
        """Close the workspace's unfinished builds as 'interrupted'; returns how many.

        Call it at the start of a build while holding the workspace's build lock: any build
        still open then belongs to a process that died. Their generations still 'building'
        can never complete, so they become 'failed'. The duration stays unknown (NULL).
        """
        stamp = ts(now())
        with self._write(f"builds: closing unfinished builds of {workspace!r}") as conn:
            open_builds = conn.execute(
                select(builds.c.id, builds.c.generation).where(
                    builds.c.workspace == workspace, builds.c.finished_at.is_(None)
                )
            ).all()
            if not open_builds:
                return 0
            conn.execute(
                update(builds)
                .where(builds.c.id.in_([b.id for b in open_builds]), builds.c.finished_at.is_(None))
                .values(
                    finished_at=stamp,
                    outcome="interrupted",
                    message=f"the build process ended without recording an outcome "
                    f"(found unfinished at {stamp})",
                )
            )
            conn.execute(
                update(generations)
                .where(
                    generations.c.id.in_([b.generation for b in open_builds]),
                    generations.c.status == "building",
                )
                .values(status="failed")
            )
        return len(open_builds)

    def list_builds(self, workspace: str, limit: int = 20) -> list[Build]:
        """The workspace's most recent builds, newest first."""
        return [_build(r) for r in self._newest(builds, workspace, limit)]

    # ------------------------------------------------------------------ sync runs

    def start_sync_run(
        self,
        workspace: str,
        run_by: str,
        full: bool,
        host: str,
        pid: int,
        pipeline_version: int = 0,
        kind: RunKind = "docs",
    ) -> int:
        """Record that a docs sync (or, `kind="evidence"`, an Evidence publication) of
        `workspace` starts; returns the run id. Both build generations from the active one, so
        they share the lock.

        The partial unique index ux_sync_runs_one_running is the overlap lock: while one run of
        the workspace is 'running', inserting another violates it, whichever process or
        machine tries; the refusal (SyncRunConflict) names the running run.

        A crashed process must not hold the lock forever: a running run of this same `host`
        whose `pid` no longer exists is closed as 'interrupted' before the insert. A run of
        another host cannot be checked from here: a sync on that host closes it, or an operator
        does, with `finish_sync_run(id, "interrupted", ...)` (`tht docs runs --interrupt ID`).
        """
        require("workspace", workspace)
        require("run_by", run_by)
        require("host", host)
        self.keep_previous()  # the state before this run: `tht state restore` goes back to it
        stamp = ts(now())
        what = f"sync_runs: starting a sync of {workspace!r}"
        try:
            with self._writer.begin() as conn:
                running = conn.execute(
                    select(sync_runs.c.id, sync_runs.c.pid).where(
                        sync_runs.c.workspace == workspace,
                        sync_runs.c.status == "running",
                        sync_runs.c.host == host,
                    )
                ).all()
                for row in running:
                    if pid_alive(int(row.pid)):
                        continue
                    conn.execute(
                        update(sync_runs)
                        .where(sync_runs.c.id == row.id, sync_runs.c.status == "running")
                        .values(
                            status="interrupted",
                            finished_at=stamp,
                            message=f"process {row.pid} on {host} ended without recording an "
                            f"outcome (found gone at {stamp})",
                        )
                    )
                result = conn.execute(
                    insert(sync_runs).values(
                        workspace=workspace,
                        status="running",
                        started_at=stamp,
                        run_by=run_by,
                        host=host,
                        pid=pid,
                        full_rebuild=full,
                        pipeline_version=pipeline_version,
                        revisions="{}",
                        generation=None,
                        counts="{}",
                        changes="{}",
                        message="",
                        kind=kind,
                    )
                )
                key = result.inserted_primary_key
        except IntegrityError as exc:
            other = self._running_sync(workspace)
            if other is None:
                if _is_run_lock(exc):  # the run holding the lock ended in between
                    raise StateError(
                        f"state store {self.url}: {what} failed: another run held the lock "
                        "and finished while this one started; nothing was done -> start it "
                        "again"
                    ) from exc
                raise self._failed(what, exc, written=True) from exc
            holder = "an Evidence publication" if other.kind == "evidence" else "a docs sync"
            raise SyncRunConflict(
                f"state store {self.url}: {holder} of {workspace!r} is already running: run "
                f"{other.id}, started by {other.run_by} on {other.host} (pid {other.pid}) at "
                f"{ts(other.started_at)}; nothing was done -> wait for it to finish (`tht docs "
                f"runs` shows it); if its process is gone, the next sync on {other.host} closes "
                f"it, or close it by hand with `tht docs runs --interrupt {other.id}`"
            ) from exc
        except SQLAlchemyError as exc:
            raise self._failed(what, exc, written=True) from exc
        if key is None or key[0] is None:  # pragma: no cover - both backends return the id
            raise StateError(f"state store {self.url}: sync_runs: the new run id was not returned")
        return int(key[0])

    def _running_sync(self, workspace: str) -> SyncRun | None:
        with self._read(f"sync_runs: reading the running sync of {workspace!r}") as conn:
            row = conn.execute(
                select(sync_runs).where(
                    sync_runs.c.workspace == workspace, sync_runs.c.status == "running"
                )
            ).first()
        return None if row is None else _sync_run(row)

    def finish_sync_run(
        self,
        run_id: int,
        status: SyncStatus,
        revisions: dict[str, Any],
        generation: str | None,
        counts: dict[str, Any],
        changes: dict[str, Any],
        message: str,
    ) -> None:
        """Close a running sync with how it ended; a run can be finished only once."""
        if status not in SYNC_STATUSES or status == "running":
            raise StateError(
                f"sync_runs: cannot finish run {run_id} as {status!r} -> use 'succeeded', "
                "'failed' or 'interrupted'"
            )
        values = {
            "status": status,
            "finished_at": ts(now()),
            "revisions": dump_json(f"revisions of sync run {run_id}", revisions),
            "generation": generation,
            "counts": dump_json(f"counts of sync run {run_id}", counts),
            "changes": dump_json(f"changes of sync run {run_id}", changes),
            "message": message,
        }
        with self._write(f"sync_runs: finishing run {run_id}") as conn:
            # Compare-and-set on 'running': a run closed as interrupted stays closed.
            done = conn.execute(
                update(sync_runs)
                .where(sync_runs.c.id == run_id, sync_runs.c.status == "running")
                .values(**values)
            )
            if done.rowcount == 1:
                return
            row = conn.execute(
                select(sync_runs.c.status, sync_runs.c.finished_at).where(sync_runs.c.id == run_id)
            ).first()
        if row is None:
            raise StateError(
                f"state store {self.url}: sync run {run_id} not found in table sync_runs "
                "-> pass the id returned by start_sync_run"
            )
        raise StateError(
            f"state store {self.url}: sync run {run_id} already finished at {row.finished_at} "
            f"as {row.status!r}; its outcome is kept -> start a new sync"
        )

    def get_sync_run(self, run_id: int) -> SyncRun | None:
        with self._read(f"sync_runs: reading run {run_id}") as conn:
            row = conn.execute(select(sync_runs).where(sync_runs.c.id == run_id)).first()
        return None if row is None else _sync_run(row)

    def list_sync_runs(self, workspace: str, limit: int = 20) -> list[SyncRun]:
        """The workspace's most recent sync runs, newest first."""
        return [_sync_run(r) for r in self._newest(sync_runs, workspace, limit)]

    def served_revisions(self, workspace: str, source: str) -> set[str]:
        """Every commit of `source` a succeeded `tht docs sync` of the workspace read: the
        revisions an answer can have been served from (an old link opens only these)."""
        query = select(sync_runs.c.revisions).where(
            sync_runs.c.workspace == workspace,
            sync_runs.c.status == "succeeded",
            sync_runs.c.kind == "docs",
        )
        with self._read(f"sync_runs: revisions served of {workspace!r}") as conn:
            rows = conn.execute(query).all()
        found = (load_json(r.revisions).get(source) for r in rows)
        return {r for r in found if isinstance(r, str)}

    def _newest(self, table: Table, workspace: str, limit: int) -> Sequence[Row[Any]]:
        """The workspace's last `limit` rows of `table` (builds, sync_runs), highest id first."""
        if limit < 1:
            raise StateError(f"{table.name}: limit must be at least 1, got {limit}")
        with self._read(f"{table.name}: listing {workspace!r}") as conn:
            return conn.execute(
                select(table)
                .where(table.c.workspace == workspace)
                .order_by(table.c.id.desc())
                .limit(limit)
            ).all()


def _is_run_lock(exc: IntegrityError) -> bool:
    """Whether the violated constraint is ux_sync_runs_one_running (named so on PostgreSQL,
    by its column on SQLite)."""
    text = str(exc.orig)
    return "ux_sync_runs_one_running" in text or "sync_runs.workspace" in text


def _build(row: Row[Any]) -> Build:
    return Build(
        id=int(row.id),
        workspace=row.workspace,
        revision=row.revision,
        generation=row.generation,
        started_at=parse_ts(row.started_at),
        finished_at=None if row.finished_at is None else parse_ts(row.finished_at),
        duration_s=row.duration_s,
        outcome=cast(BuildOutcome | None, row.outcome),
        counts=load_json(row.counts),
        message=row.message,
    )


def _sync_run(row: Row[Any]) -> SyncRun:
    return SyncRun(
        id=int(row.id),
        workspace=row.workspace,
        status=cast(SyncStatus, row.status),
        started_at=parse_ts(row.started_at),
        finished_at=None if row.finished_at is None else parse_ts(row.finished_at),
        run_by=row.run_by,
        host=row.host,
        pid=int(row.pid),
        full=bool(row.full_rebuild),
        pipeline_version=int(row.pipeline_version),
        revisions=load_json(row.revisions),
        generation=row.generation,
        counts=load_json(row.counts),
        changes=load_json(row.changes),
        message=row.message,
        kind=cast(RunKind, row.kind),
    )
