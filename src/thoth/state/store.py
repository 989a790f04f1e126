"""The relational state store: which revision and index generation a workspace serves.

It records what Thoth publishes (revision activations, index generations, build runs); the
content itself stays in Git and in the index. SQLite (one file) by default, PostgreSQL when
several machines share the state. Every write is one short transaction.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, cast

from sqlalchemy import Engine, Row, create_engine, event, insert, select, text, update
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, SQLAlchemyError

from thoth.errors import ThothError
from thoth.sqlitewal import enable_wal
from thoth.state.schema import (
    ANSWER_STATUSES,
    BUILD_OUTCOMES,
    GENERATION_STATUSES,
    SCHEMA_VERSION,
    SYNC_STATUSES,
    answer_log,
    builds,
    generations,
    metadata,
    revision_activations,
    state_meta,
    sync_runs,
)

GenerationStatus = Literal["building", "candidate", "active", "retired", "failed"]
BuildOutcome = Literal["activated", "gate_failed", "failed", "interrupted"]
SyncStatus = Literal["running", "succeeded", "failed", "interrupted"]
RunKind = Literal["docs", "evidence"]


class _Unset(Enum):
    UNSET = "unset"


# "No expectation": `activate_generation` replaces whatever generation is active.
UNSET: Final = _Unset.UNSET

DEFAULT_SQLITE_PATH: Final = Path(".thoth") / "state.sqlite"

# What `mark_generation` may move a generation to, and from where. 'active' is absent on
# purpose: only `activate_generation` may set it, because it must retire the previous one
# in the same transaction.
_MARK_FROM: Final[dict[str, tuple[str, ...]]] = {
    "building": ("building",),  # progress: update counts while building
    "candidate": ("building",),
    "failed": ("building", "candidate"),
    "retired": ("candidate",),  # a candidate that will never be served
}
_ACTIVATABLE: Final = ("candidate", "retired")

# SQLite: a write transaction takes the write lock at BEGIN (IMMEDIATE), so two writers queue
# on busy_timeout instead of one failing with "database is locked" when it upgrades a read
# snapshot that another writer has already changed.
_WRITE_OPTION: Final = "thoth_write"
_SQLITE_BUSY_TIMEOUT_MS: Final = 15_000
# PostgreSQL: without a timeout libpq waits for an unreachable host for minutes.
_PG_CONNECT_TIMEOUT_S: Final = 10
# Serialises `create_all` across processes opening a fresh PostgreSQL database at once.
_PG_SCHEMA_LOCK: Final = 0x7406_5354_4154_4531

_OPEN_HINT: Final = "check [state].url in thoth.toml"


class StateError(ThothError):
    """A state-store operation failed; the message names the database, table/id and the fix."""


class SyncRunConflict(StateError):
    """Another `tht docs sync` of the workspace is running: this one refused to start."""

    exit_code = 4


@dataclass(frozen=True)
class Generation:
    """One immutable index build of a workspace revision."""

    id: str
    workspace: str
    revision: str
    status: GenerationStatus
    config: dict[str, Any]
    counts: dict[str, Any]
    created_at: datetime
    activated_at: datetime | None


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


@dataclass(frozen=True)
class LoggedAnswer:
    """One `ask` as it was served: `answer` is the full Answer.as_dict() (thoth.answer)."""

    id: str
    workspace: str
    created_at: datetime
    question: str
    request: dict[str, Any]
    status: str
    answer: dict[str, Any]
    error_code: str | None


def state_url(workspace_root: Path, configured: str | None) -> str:
    """The URL to open: `[state].url` when set, else SQLite in `<workspace>/.thoth/`."""
    if configured:
        return configured
    return f"sqlite:///{(workspace_root / DEFAULT_SQLITE_PATH).resolve()}"


def redact_url(url: str) -> str:
    """The URL fit for messages and logs: the password replaced by ***."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        # Not parseable by SQLAlchemy, but it may still carry user:password@.
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


class StateStore:
    """Thread-safe handle on the state database; open with `StateStore.open(url)`."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self._writer = engine.execution_options(**{_WRITE_OPTION: True})
        self.url = url  # redacted: safe to print

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def open(cls, url: str) -> StateStore:
        """Connect, create missing tables and check the schema version."""
        shown = redact_url(url)
        try:
            sa_url = make_url(url)
        except ArgumentError as exc:
            raise StateError(
                f"cannot open state store {shown}: not a database URL ({exc}) -> {_OPEN_HINT}"
                " (sqlite:///path/state.sqlite or postgresql+psycopg://user@host/db)"
            ) from exc
        backend = sa_url.get_backend_name()
        kwargs: dict[str, Any] = {}
        if backend == "sqlite":
            database = sa_url.database or ""
            if database in ("", ":memory:") or database.startswith("file::memory:"):
                raise StateError(
                    f"cannot open state store {shown}: an in-memory SQLite database would be "
                    f"lost when the process exits -> {_OPEN_HINT} with a file path"
                )
            try:
                Path(database).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StateError(
                    f"cannot open state store {shown}: cannot create the directory of "
                    f"{database} ({exc}) -> {_OPEN_HINT} or fix the permissions"
                ) from exc
        elif backend == "postgresql":
            if "connect_timeout" not in sa_url.query:
                kwargs["connect_args"] = {"connect_timeout": _PG_CONNECT_TIMEOUT_S}
        else:
            raise StateError(
                f"cannot open state store {shown}: backend {backend!r} is not supported"
                f" -> {_OPEN_HINT}: use sqlite:///... or postgresql+psycopg://..."
            )
        try:
            engine = create_engine(sa_url, **kwargs)
        except (ArgumentError, ImportError) as exc:
            raise StateError(
                f"cannot open state store {shown}: {exc} -> {_OPEN_HINT}"
                " (the PostgreSQL driver is psycopg: postgresql+psycopg://...)"
            ) from exc
        if backend == "sqlite":
            _configure_sqlite(engine)
        store = cls(engine, shown)
        try:
            store._initialise()
        except StateError:
            engine.dispose()
            raise
        except SQLAlchemyError as exc:
            engine.dispose()
            raise StateError(
                f"cannot open state store {shown}: {_reason(exc)} -> {_OPEN_HINT}"
            ) from exc
        return store

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> StateStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"StateStore({self.url!r})"

    def _initialise(self) -> None:
        # Raw SQLAlchemy errors propagate to `open`, which words them as "cannot open".
        with self._writer.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_SCHEMA_LOCK})
            metadata.create_all(conn)
            found = conn.scalar(
                select(state_meta.c.value).where(state_meta.c.key == "schema_version")
            )
            if found is None:
                conn.execute(
                    insert(state_meta).values(key="schema_version", value=str(SCHEMA_VERSION))
                )
            elif found != str(SCHEMA_VERSION):
                raise StateError(
                    f"state store {self.url}: table state_meta says schema version {found}, "
                    f"this Thoth uses {SCHEMA_VERSION} -> use the Thoth version that created it, "
                    "or point [state].url to a new database"
                )

    @contextmanager
    def _write(
        self, what: str, hint: str = "retry; if it persists, check the database"
    ) -> Iterator[Connection]:
        """One write transaction; database failures become a StateError naming `what`."""
        try:
            with self._writer.begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise StateError(
                f"state store {self.url}: {what} failed: {_reason(exc)} -> {hint}"
            ) from exc

    @contextmanager
    def _read(self, what: str) -> Iterator[Connection]:
        try:
            with self._engine.connect() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise StateError(
                f"state store {self.url}: {what} failed: {_reason(exc)} "
                "-> check that the database is reachable and retry"
            ) from exc

    # ------------------------------------------------------------------ revisions

    def activate_revision(self, workspace: str, revision: str, activated_by: str) -> None:
        """Record that `revision` is now the Git revision the runtime must serve."""
        _require("workspace", workspace)
        _require("revision", revision)
        _require("activated_by", activated_by)
        with self._write(
            f"revision_activations: activating {revision!r} for {workspace!r}"
        ) as conn:
            conn.execute(
                insert(revision_activations).values(
                    workspace=workspace,
                    revision=revision,
                    activated_by=activated_by,
                    activated_at=_ts(_now()),
                )
            )

    def active_revision(self, workspace: str) -> str | None:
        with self._read(
            f"revision_activations: reading the active revision of {workspace!r}"
        ) as conn:
            return conn.scalar(
                select(revision_activations.c.revision)
                .where(revision_activations.c.workspace == workspace)
                .order_by(revision_activations.c.id.desc())
                .limit(1)
            )

    # ------------------------------------------------------------------ generations

    def create_generation(self, workspace: str, revision: str, config: dict[str, Any]) -> str:
        """Register a new generation in status 'building'; returns its id."""
        _require("workspace", workspace)
        _require("revision", revision)
        config_text = _dump_json("generation config", config)
        now = _now()
        gen_id = f"g{now:%Y%m%d%H%M%S}-{secrets.token_hex(3)}"
        with self._write(f"generations: creating {gen_id} for {workspace!r}") as conn:
            conn.execute(
                insert(generations).values(
                    id=gen_id,
                    workspace=workspace,
                    revision=revision,
                    status="building",
                    config=config_text,
                    counts="{}",
                    created_at=_ts(now),
                    activated_at=None,
                )
            )
        return gen_id

    def mark_generation(
        self, gen_id: str, status: GenerationStatus, counts: dict[str, Any] | None = None
    ) -> None:
        """Move a generation to 'candidate', 'failed' or 'retired' (or update its counts)."""
        if status == "active":
            raise StateError(
                f"generations: cannot mark {gen_id} 'active' directly -> use "
                "activate_generation, which also retires the generation being replaced"
            )
        sources = _MARK_FROM.get(status)
        if sources is None:
            raise StateError(
                f"generations: unknown status {status!r} for {gen_id} -> use one of "
                f"{', '.join(GENERATION_STATUSES)}"
            )
        values: dict[str, Any] = {"status": status}
        if counts is not None:
            values["counts"] = _dump_json(f"counts of generation {gen_id}", counts)
        with self._write(f"generations: marking {gen_id} {status!r}") as conn:
            # Compare-and-set on the current status: a concurrent activation cannot be undone.
            done = conn.execute(
                update(generations)
                .where(generations.c.id == gen_id, generations.c.status.in_(sources))
                .values(**values)
            )
            if done.rowcount == 1:
                return
            current = conn.scalar(select(generations.c.status).where(generations.c.id == gen_id))
        if current is None:
            raise StateError(
                f"state store {self.url}: generation {gen_id} not found in table generations "
                "-> check the id (list_generations shows the existing ones)"
            )
        raise StateError(
            f"state store {self.url}: generation {gen_id} is {current!r}; it cannot become "
            f"{status!r} (only from {' or '.join(repr(s) for s in sources)})"
        )

    def get_generation(self, gen_id: str) -> Generation | None:
        with self._read(f"generations: reading {gen_id}") as conn:
            row = conn.execute(select(generations).where(generations.c.id == gen_id)).first()
        return None if row is None else _generation(row)

    def list_generations(self, workspace: str) -> list[Generation]:
        """All generations of the workspace, newest first."""
        with self._read(f"generations: listing {workspace!r}") as conn:
            rows = conn.execute(
                select(generations)
                .where(generations.c.workspace == workspace)
                .order_by(generations.c.created_at.desc(), generations.c.id.desc())
            ).all()
        return [_generation(r) for r in rows]

    def active_generation(self, workspace: str) -> Generation | None:
        with self._read(f"generations: reading the active one of {workspace!r}") as conn:
            row = conn.execute(
                select(generations).where(
                    generations.c.workspace == workspace, generations.c.status == "active"
                )
            ).first()
        return None if row is None else _generation(row)

    def activate_generation(
        self,
        workspace: str,
        gen_id: str,
        expected_previous: str | _Unset | None = UNSET,
    ) -> str | None:
        """Serve `gen_id` from now on; retire the one it replaces. Returns the replaced id.

        One transaction: readers see either the old or the new active generation, never none
        or two. `gen_id` must be a 'candidate' or a 'retired' one (rollback).

        `expected_previous` (compare-and-swap): the generation the caller built from (None: no
        generation was active). If another one is active by now, nothing changes and a
        StateError says so: a build that carried records forward from a generation must not
        replace a newer one, whose records it would silently drop.
        """
        what = f"generations: activating {gen_id} for {workspace!r}"
        with self._write(what, hint="retry the activation") as conn:
            # Lock every generation row of the workspace (in id order, so two activations
            # cannot deadlock): a concurrent activation waits here and then sees this one's
            # result, instead of both retiring the same old row. SQLite has no FOR UPDATE;
            # there BEGIN IMMEDIATE already serialises writers.
            locked = conn.execute(
                select(generations.c.id, generations.c.status)
                .where(generations.c.workspace == workspace)
                .order_by(generations.c.id)
                .with_for_update()
            ).all()
            statuses = {row.id: row.status for row in locked}
            if gen_id not in statuses:
                owner = conn.scalar(
                    select(generations.c.workspace).where(generations.c.id == gen_id)
                )
                if owner is None:
                    raise StateError(
                        f"state store {self.url}: generation {gen_id} not found in table "
                        "generations -> check the id (list_generations shows the existing ones)"
                    )
                raise StateError(
                    f"state store {self.url}: generation {gen_id} belongs to workspace "
                    f"{owner!r}, not {workspace!r} -> activate it in its own workspace"
                )
            status = statuses[gen_id]
            if status not in _ACTIVATABLE:
                raise StateError(
                    f"state store {self.url}: generation {gen_id} is {status!r}; only a "
                    "'candidate' or a 'retired' generation can be activated -> "
                    + (
                        "it is already active, nothing to do"
                        if status == "active"
                        else "activate a candidate that passed the gate, or a retired one"
                    )
                )
            previous = next((gid for gid, st in statuses.items() if st == "active"), None)
            if not isinstance(expected_previous, _Unset) and previous != expected_previous:
                raise StateError(
                    f"state store {self.url}: generation {gen_id} was built from "
                    f"{expected_previous or 'no active generation'}, but {previous or 'none'} "
                    f"is active now (another build of {workspace!r} finished first); nothing "
                    "was activated -> run the build again: it starts from the new one"
                )
            if previous is not None:
                conn.execute(
                    update(generations).where(generations.c.id == previous).values(status="retired")
                )
            conn.execute(
                update(generations)
                .where(generations.c.id == gen_id)
                .values(status="active", activated_at=_ts(_now()))
            )
        return previous

    # ------------------------------------------------------------------ builds

    def start_build(self, workspace: str, revision: str, generation: str) -> int:
        """Record that a build of `revision` into `generation` started; returns the build id."""
        _require("workspace", workspace)
        _require("revision", revision)
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
                    started_at=_ts(_now()),
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
        counts_text = _dump_json(f"counts of build {build_id}", counts)
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
            now = _now()
            conn.execute(
                update(builds)
                .where(builds.c.id == build_id, builds.c.finished_at.is_(None))
                .values(
                    finished_at=_ts(now),
                    duration_s=(now - _parse(row.started_at)).total_seconds(),
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
        now = _ts(_now())
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
                    finished_at=now,
                    outcome="interrupted",
                    message=f"the build process ended without recording an outcome "
                    f"(found unfinished at {now})",
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
        if limit < 1:
            raise StateError(f"builds: limit must be at least 1, got {limit}")
        with self._read(f"builds: listing {workspace!r}") as conn:
            rows = conn.execute(
                select(builds)
                .where(builds.c.workspace == workspace)
                .order_by(builds.c.id.desc())
                .limit(limit)
            ).all()
        return [_build(r) for r in rows]

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
        _require("workspace", workspace)
        _require("run_by", run_by)
        _require("host", host)
        now = _ts(_now())
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
                            finished_at=now,
                            message=f"process {row.pid} on {host} ended without recording an "
                            f"outcome (found gone at {now})",
                        )
                    )
                result = conn.execute(
                    insert(sync_runs).values(
                        workspace=workspace,
                        status="running",
                        started_at=now,
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
            if other is None:  # not the lock: some other constraint
                raise StateError(
                    f"state store {self.url}: sync_runs: starting a sync of {workspace!r} "
                    f"failed: {_reason(exc)} -> retry; if it persists, check the database"
                ) from exc
            what = "an Evidence publication" if other.kind == "evidence" else "a docs sync"
            raise SyncRunConflict(
                f"state store {self.url}: {what} of {workspace!r} is already running: run "
                f"{other.id}, started by {other.run_by} on {other.host} (pid {other.pid}) at "
                f"{_ts(other.started_at)}; nothing was done -> wait for it to finish (`tht docs "
                f"runs` shows it); if its process is gone, the next sync on {other.host} closes "
                f"it, or close it by hand with `tht docs runs --interrupt {other.id}`"
            ) from exc
        except SQLAlchemyError as exc:
            raise StateError(
                f"state store {self.url}: sync_runs: starting a sync of {workspace!r} failed: "
                f"{_reason(exc)} -> retry; if it persists, check the database"
            ) from exc
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
            "finished_at": _ts(_now()),
            "revisions": _dump_json(f"revisions of sync run {run_id}", revisions),
            "generation": generation,
            "counts": _dump_json(f"counts of sync run {run_id}", counts),
            "changes": _dump_json(f"changes of sync run {run_id}", changes),
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
        if limit < 1:
            raise StateError(f"sync_runs: limit must be at least 1, got {limit}")
        with self._read(f"sync_runs: listing {workspace!r}") as conn:
            rows = conn.execute(
                select(sync_runs)
                .where(sync_runs.c.workspace == workspace)
                .order_by(sync_runs.c.id.desc())
                .limit(limit)
            ).all()
        return [_sync_run(r) for r in rows]

    # ------------------------------------------------------------------ answers

    def log_answer(
        self,
        answer_id: str,
        workspace: str,
        question: str,
        request: dict[str, Any],
        status: str,
        answer: dict[str, Any],
        error_code: str | None = None,
    ) -> None:
        """Record one served answer (or failure); an id can be logged only once."""
        _require("answer id", answer_id)
        _require("workspace", workspace)
        if status not in ANSWER_STATUSES:
            raise StateError(
                f"answer_log: unknown status {status!r} for {answer_id} -> use one of "
                f"{', '.join(ANSWER_STATUSES)}"
            )
        values = {
            "id": answer_id,
            "workspace": workspace,
            "created_at": _ts(_now()),
            "question": question,
            "request": _dump_json(f"request of answer {answer_id}", request),
            "status": status,
            "answer": _dump_json(f"answer {answer_id}", answer),
            "error_code": error_code,
        }
        with self._write(f"answer_log: recording {answer_id}") as conn:
            conn.execute(insert(answer_log).values(**values))

    def get_answer(self, answer_id: str) -> LoggedAnswer:
        with self._read(f"answer_log: reading {answer_id}") as conn:
            row = conn.execute(select(answer_log).where(answer_log.c.id == answer_id)).first()
        if row is None:
            raise StateError(
                f"state store {self.url}: answer {answer_id!r} not found in table answer_log "
                "-> check the id (`tht answers log` lists the logged answers)"
            )
        return _logged_answer(row)

    def list_answers(
        self, workspace: str, limit: int = 20, status: str | None = None
    ) -> list[LoggedAnswer]:
        """The workspace's most recent answers, newest first, optionally of one status."""
        if limit < 1:
            raise StateError(f"answer_log: limit must be at least 1, got {limit}")
        if status is not None and status not in ANSWER_STATUSES:
            raise StateError(
                f"answer_log: unknown status {status!r} -> use one of {', '.join(ANSWER_STATUSES)}"
            )
        query = select(answer_log).where(answer_log.c.workspace == workspace)
        if status is not None:
            query = query.where(answer_log.c.status == status)
        with self._read(f"answer_log: listing {workspace!r}") as conn:
            rows = conn.execute(
                query.order_by(answer_log.c.created_at.desc(), answer_log.c.id.desc()).limit(limit)
            ).all()
        return [_logged_answer(r) for r in rows]


# ---------------------------------------------------------------------- helpers


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # The sqlite3 module's own implicit BEGIN is skipped for SELECT; SQLAlchemy emits
        # BEGIN itself (below) so reads are repeatable and writes take the lock up front.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        try:
            # busy_timeout first: switching to WAL needs a lock another opener may hold.
            cursor.execute(f"PRAGMA busy_timeout = {_SQLITE_BUSY_TIMEOUT_MS}")
            enable_wal(cursor, _SQLITE_BUSY_TIMEOUT_MS / 1000)
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(_WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _reason(exc: SQLAlchemyError) -> str:
    """The driver's own message, first line only (SQLAlchemy appends SQL and a help link)."""
    prefix = "constraint violated: " if isinstance(exc, IntegrityError) else ""
    source: BaseException = exc.orig if isinstance(exc, DBAPIError) and exc.orig else exc
    lines = [line.strip() for line in str(source).strip().splitlines() if line.strip()]
    return prefix + (lines[0] if lines else type(source).__name__)


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


def _sync_run(row: Row[Any]) -> SyncRun:
    return SyncRun(
        id=int(row.id),
        workspace=row.workspace,
        status=cast(SyncStatus, row.status),
        started_at=_parse(row.started_at),
        finished_at=None if row.finished_at is None else _parse(row.finished_at),
        run_by=row.run_by,
        host=row.host,
        pid=int(row.pid),
        full=bool(row.full_rebuild),
        pipeline_version=int(row.pipeline_version),
        revisions=_load_json(row.revisions),
        generation=row.generation,
        counts=_load_json(row.counts),
        changes=_load_json(row.changes),
        message=row.message,
        kind=cast(RunKind, row.kind),
    )


def _require(name: str, value: str) -> None:
    if not value or not value.strip():
        raise StateError(f"state store: {name} is empty -> pass a non-empty {name}")


def _now() -> datetime:
    return datetime.now(UTC)


def _ts(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _parse(stored: str) -> datetime:
    return datetime.fromisoformat(stored)


def _dump_json(what: str, value: dict[str, Any]) -> str:
    if not isinstance(value, dict):
        raise StateError(f"{what} must be a dict, got {type(value).__name__}")
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StateError(
            f"{what} cannot be stored as JSON ({exc}) -> pass only str, int, float, bool, "
            "None, list and dict values"
        ) from exc


def _load_json(stored: str) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(stored))


def _generation(row: Row[Any]) -> Generation:
    return Generation(
        id=row.id,
        workspace=row.workspace,
        revision=row.revision,
        status=cast(GenerationStatus, row.status),
        config=_load_json(row.config),
        counts=_load_json(row.counts),
        created_at=_parse(row.created_at),
        activated_at=None if row.activated_at is None else _parse(row.activated_at),
    )


def _build(row: Row[Any]) -> Build:
    return Build(
        id=int(row.id),
        workspace=row.workspace,
        revision=row.revision,
        generation=row.generation,
        started_at=_parse(row.started_at),
        finished_at=None if row.finished_at is None else _parse(row.finished_at),
        duration_s=row.duration_s,
        outcome=cast(BuildOutcome | None, row.outcome),
        counts=_load_json(row.counts),
        message=row.message,
    )


def _logged_answer(row: Row[Any]) -> LoggedAnswer:
    return LoggedAnswer(
        id=row.id,
        workspace=row.workspace,
        created_at=_parse(row.created_at),
        question=row.question,
        request=_load_json(row.request),
        status=row.status,
        answer=_load_json(row.answer),
        error_code=row.error_code,
    )
