"""`tht index migrate`: a published workspace moved from Qdrant Edge to PostgreSQL + pgvector
(a real server, tests/pgvector.py) and back, its searches the same after each switch; the
refusals that leave the workspace on its backend, a publication during the migration among them;
a migration SIGKILLed half-way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from typer.testing import CliRunner

from tests.conftest import commit_all
from tests.fake_embeddings import FakeEmbeddingServer
from tests.publishing import activate_head, publish, published
from thoth.cli.main import app
from thoth.index.base import IndexRecord
from thoth.index.generations import EdgeBackend
from thoth.index.live import EdgeLiveCollection
from thoth.index.postgres import PostgresBackend, libpq_url
from thoth.index.reader import check_generations
from thoth.memory.index import COLLECTION, PAYLOAD_INDEXES
from thoth.runtime import make_live_collection, open_runtime
from thoth.workspace import Workspace

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

Make = Callable[..., Workspace]
QUERIES = [
    ("ricovero con pernottamento", "disambiguation"),
    ("età sotto i 18 anni", "sql_generation"),
    ("esito dimissione", "schema_linking"),
]
COMMENT = "# the index: moved by tht index migrate"
runner = CliRunner()


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


def _workspace(make_workspace: Make, fake: FakeEmbeddingServer) -> Path:
    """Published twice (an active and a retired generation), with a memory collection."""
    rt = published(make_workspace, fake.url)
    root = rt.ws.root
    (root / "touch.txt").write_text("second revision")
    commit_all(root)
    activate_head(rt)
    assert publish(rt).outcome == "activated"
    active = rt.state.active_generation(rt.ws.settings.workspace)
    assert active is not None
    store = rt.backend.open(active.id, active.counts)
    records = list(store.scroll())[:4]
    store.close()
    rt.close()
    memory = make_live_collection(rt.ws, COLLECTION)
    with memory.locked(exclusive=True):
        memory.create(8, PAYLOAD_INDEXES, {"embedder": "fake", "format": 1})
        live = memory.open()
        live.upsert(
            [
                IndexRecord(r.id, r.dense, r.sparse, {**r.payload, "record_kind": "memory"})
                for r in records
            ]
        )
        live.flush()
        live.close()
    config = root / "thoth.toml"
    config.write_text(config.read_text("utf-8").replace("[index]", f"{COMMENT}\n[index]"))
    commit_all(root)
    return root


def _answers(root: Path) -> list[list[tuple[str, float]]]:
    rt = open_runtime(Workspace.open(root))
    search = rt.search()
    try:
        out = []
        for query, purpose in QUERIES:
            outcome = search.search(query, purpose)
            assert outcome.available, outcome
            out.append(sorted((r.evidence_id, round(r.score, 6)) for r in outcome.results))
        return out
    finally:
        search.close()
        rt.close()


def _migrate(root: Path, *args: str) -> dict[str, object]:
    result = runner.invoke(app, ["index", "migrate", "-w", str(root), "--json", *args])
    return {"exit": result.exit_code, **json.loads(result.stdout)}


def _generations(root: Path) -> list[tuple[str, str]]:
    rt = open_runtime(Workspace.open(root))
    try:
        return [(g.id, g.status) for g in rt.state.list_generations(rt.ws.settings.workspace)]
    finally:
        rt.close()


def test_edge_to_postgres_and_back(
    make_workspace: Make, fake: FakeEmbeddingServer, pgvector_url: str, pgvector_schema: str
) -> None:
    root = _workspace(make_workspace, fake)
    before = _answers(root)
    gens = _generations(root)
    statuses = {s for _, s in gens}
    assert "active" in statuses and "retired" in statuses

    done = _migrate(root, "--to", "postgres", "--url", pgvector_url, "--schema", pgvector_schema)
    assert done["exit"] == 0 and done["ok"] is True, done
    assert done["source_left_in_place"] is True
    copied = done["generations"]
    assert isinstance(copied, list) and {g["id"] for g in copied} == {g for g, _ in gens}
    assert all(g["dense_queries"] == 5 and g["bm25_queries"] >= 1 for g in copied)
    assert done["live"] == {COLLECTION: {"memory": 4}}
    text = (root / "thoth.toml").read_text("utf-8")
    assert COMMENT in text and 'backend = "postgres"' in text

    rt = open_runtime(Workspace.open(root))
    try:
        assert isinstance(rt.backend, PostgresBackend)
        assert set(rt.backend.sealed()) == {g for g, _ in gens}
        assert make_live_collection(rt.ws, COLLECTION).exists()
        checks = check_generations(rt.state.list_generations(rt.ws.settings.workspace), rt.backend)
        assert len(checks) == len(gens) and all(c.ok for c in checks)
        assert not any(c.checked_files for c in checks)  # Edge's fingerprints removed
    finally:
        rt.close()
    assert _answers(root) == before
    assert _generations(root) == gens
    assert (root / ".thoth" / "index").is_dir()  # the source is left in place

    back = _migrate(root, "--to", "edge")
    assert back["exit"] == 0 and back["ok"] is True, back
    rt = open_runtime(Workspace.open(root))
    try:
        assert isinstance(rt.backend, EdgeBackend)
        checks = check_generations(rt.state.list_generations(rt.ws.settings.workspace), rt.backend)
        # The new shards' fingerprints were recorded: every generation checked file by file.
        assert len(checks) == len(gens) and all(c.ok and c.checked_files for c in checks)
    finally:
        rt.close()
    assert _answers(root) == before
    assert COMMENT in (root / "thoth.toml").read_text("utf-8")


def test_edge_to_a_qdrant_server_and_back(make_workspace: Make, fake: FakeEmbeddingServer) -> None:
    """The server backend in qdrant-client's local mode (no Qdrant server can run here)."""
    root = _workspace(make_workspace, fake)
    before = _answers(root)
    gens = _generations(root)
    done = _migrate(root, "--to", "server", "--path", "qdrant")
    assert done["exit"] == 0 and done["live"] == {COLLECTION: {"memory": 4}}, done
    assert 'backend = "server"' in (root / "thoth.toml").read_text("utf-8")
    rt = open_runtime(Workspace.open(root))
    try:
        assert set(rt.backend.sealed()) == {g for g, _ in gens}
    finally:
        rt.close()
    assert _answers(root) == before
    back = _migrate(root, "--to", "edge")
    assert back["exit"] == 0, back
    assert _answers(root) == before


def _refused(root: Path, code: str, *args: str) -> None:
    config = (root / "thoth.toml").read_text("utf-8")
    gens = _generations(root)
    before = _answers(root)
    done = _migrate(root, *args)
    assert done["exit"] != 0 and done["ok"] is False, done
    assert code in json.dumps(done), done
    assert (root / "thoth.toml").read_text("utf-8") == config
    assert _generations(root) == gens
    assert _answers(root) == before


def test_refusals_leave_the_workspace_on_its_backend(
    make_workspace: Make,
    fake: FakeEmbeddingServer,
    pgvector_url: str,
    pgvector_schema: str,
    pg_user: str,
) -> None:
    root = _workspace(make_workspace, fake)
    _refused(root, "index_migration_same_backend", "--to", "edge")
    _refused(
        root,
        "index_migration_target_unavailable",
        "--to",
        "postgres",
        "--url",
        "postgresql://x@127.0.0.1:9/x",
    )
    no_pgvector = f"postgresql://{pg_user}@127.0.0.1:5432/test"
    _refused(root, "pgvector_", "--to", "postgres", "--url", no_pgvector, "--schema", "pgmigrate_x")
    PostgresBackend(pgvector_url, pgvector_schema, "another").close()  # claims the schema
    other = PostgresBackend(pgvector_url, pgvector_schema, "another")
    other.sealed()
    other.close()
    _refused(
        root,
        "index_schema_foreign",
        "--to",
        "postgres",
        "--url",
        pgvector_url,
        "--schema",
        pgvector_schema,
    )
    config = root / "thoth.toml"
    config.write_text(config.read_text("utf-8").replace("dim = 8", "dim = 16"))
    done = _migrate(
        root, "--to", "postgres", "--url", pgvector_url, "--schema", pgvector_schema + "_d"
    )
    assert done["exit"] != 0 and "index_dimension_mismatch" in json.dumps(done), done
    assert 'backend = "postgres"' not in config.read_text("utf-8")
    with psycopg.connect(libpq_url(pgvector_url), autocommit=True) as conn:
        created = conn.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = %s", [pgvector_schema + "_d"]
        ).fetchone()
    assert created is None  # refused before the target was touched


CHILD = """
import sys
from thoth.cli.main import main
sys.argv = ["tht", *sys.argv[1:]]
main()
"""


def _waiting_on_lock(url: str, table: str) -> bool:
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query LIKE %s",
            [f"%{table}%"],
        ).fetchone()
    return bool(row and row[0])


def test_sigkill_half_way_leaves_the_old_backend_and_a_rerun_completes(
    make_workspace: Make, fake: FakeEmbeddingServer, pgvector_url: str, pgvector_schema: str
) -> None:
    root = _workspace(make_workspace, fake)
    before = _answers(root)
    done = _migrate(root, "--to", "postgres", "--url", pgvector_url, "--schema", pgvector_schema)
    assert done["exit"] == 0, done
    on_postgres = (root / "thoth.toml").read_text("utf-8")
    gens = _generations(root)
    retired = next(g for g, s in gens if s == "retired")  # copied after the active one

    # Hold the retired generation's table: the migration copies the active one, then waits.
    holder = psycopg.connect(libpq_url(pgvector_url))
    try:
        tag = holder.execute(
            sql.SQL("SELECT tag FROM {}.thoth_generations WHERE gen_id = %s").format(
                sql.Identifier(pgvector_schema)
            ),
            [retired],
        ).fetchone()
        assert tag is not None
        holder.execute(
            sql.SQL("LOCK TABLE {}.{} IN ACCESS EXCLUSIVE MODE").format(
                sql.Identifier(pgvector_schema), sql.Identifier(f"g{tag[0]}_points")
            )
        )
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, "index", "migrate", "--to", "edge", "-w", str(root)],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while not _waiting_on_lock(pgvector_url, f"g{tag[0]}_points"):
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the migration never reached the lock"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=60)
    finally:
        holder.rollback()
        holder.close()

    # The killed run copied part of it to Edge; nothing of it is used.
    assert (root / "thoth.toml").read_text("utf-8") == on_postgres
    assert _generations(root) == gens
    assert _answers(root) == before
    rt = open_runtime(Workspace.open(root))
    assert isinstance(rt.backend, PostgresBackend)
    rt.close()

    again = _migrate(root, "--to", "edge")
    assert again["exit"] == 0, again
    rt = open_runtime(Workspace.open(root))
    try:
        assert isinstance(rt.backend, EdgeBackend)
        assert all(
            c.ok
            for c in check_generations(
                rt.state.list_generations(rt.ws.settings.workspace), rt.backend
            )
        )
    finally:
        rt.close()
    assert _answers(root) == before


def _blocked_on(path: Path) -> bool:
    """Whether some process waits for a `flock` on `path` (Linux: /proc/locks marks a blocked
    request with `->`, followed by the file's device and inode)."""
    inode = os.stat(path).st_ino
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and fields[-3].rsplit(":", 1)[-1] == str(inode):
            return True
    return False


def test_a_generation_published_during_the_migration_refuses_the_switch(
    make_workspace: Make, fake: FakeEmbeddingServer, pgvector_url: str, pgvector_schema: str
) -> None:
    """A publication that activates a generation after the migration listed what to copy:
    the copy misses it, so `index_migration_raced`, and the workspace stays on Edge with the
    new generation serving. The migration runs in a child process; the test holds the memory
    collection's lock (the migration reads it after listing the generations) and publishes
    for real while the child waits on it."""
    root = _workspace(make_workspace, fake)
    config = (root / "thoth.toml").read_text("utf-8")
    (root / "third.txt").write_text("third revision")
    commit_all(root)
    rt = open_runtime(Workspace.open(root))
    try:
        activate_head(rt)
        name = rt.ws.settings.workspace
        before = rt.state.active_generation(name)
        assert before is not None
        memory = make_live_collection(rt.ws, COLLECTION)
        assert isinstance(memory, EdgeLiveCollection)
        lock_path = memory.lock_path
        with memory.locked(exclusive=True):
            child = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    CHILD,
                    "index",
                    "migrate",
                    "--to",
                    "postgres",
                    "--url",
                    pgvector_url,
                    "--schema",
                    pgvector_schema,
                    "--json",
                    "-w",
                    str(root),
                ],
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            deadline = time.monotonic() + 120
            while not _blocked_on(lock_path):
                assert child.poll() is None, child.communicate()
                assert time.monotonic() < deadline, "the migration never reached the lock"
                time.sleep(0.05)
            assert publish(rt).outcome == "activated"  # the concurrent publication
        memory.close()
        stdout, stderr = child.communicate(timeout=300)
        after = rt.state.active_generation(name)
        assert after is not None and after.id != before.id
    finally:
        rt.close()
    assert child.returncode != 0, (stdout, stderr)
    refused = json.loads(stdout)
    assert refused["ok"] is False and "index_migration_raced" in stdout, refused
    assert "nothing was switched" in stdout and "run `tht index migrate` again" in stdout
    assert (root / "thoth.toml").read_text("utf-8") == config  # still on Edge
    rt = open_runtime(Workspace.open(root))
    try:
        assert isinstance(rt.backend, EdgeBackend)
        active = rt.state.active_generation(name)
        assert active is not None and active.id == after.id
        assert all(c.ok for c in check_generations(rt.state.list_generations(name), rt.backend))
    finally:
        rt.close()
    # Run again, it copies the new generation too and switches.
    again = _migrate(root, "--to", "postgres", "--url", pgvector_url, "--schema", pgvector_schema)
    assert again["exit"] == 0, again
    generations = again["generations"]
    assert isinstance(generations, list) and after.id in {g["id"] for g in generations}
