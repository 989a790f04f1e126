"""The PostgreSQL + pgvector adapter beyond the shared contract (test_index_contract.py): BM25
and dense scores equal to Qdrant Edge's, filtered dense queries never short, and the refusals
(no extension, a role that cannot create it, too old a version, another workspace's schema,
another dimension, a sealed generation written to). A real server: tests/pgvector.py."""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pydantic import ValidationError

import thoth.index.postgres as postgres_module
from tests.conftest import PG_HOST, PG_PORT
from thoth.config import IndexSettings
from thoth.errors import ConfigError
from thoth.index.base import Hit, IndexRecord, IndexUnavailable, SparseVec
from thoth.index.bm25 import Bm25Encoder
from thoth.index.build import GenerationBuild, GenerationBuilder
from thoth.index.generations import EdgeBackend
from thoth.index.postgres import (
    EXACT_BELOW,
    IndexDimensionMismatch,
    IndexSchemaForeign,
    PgvectorMissing,
    PgvectorNotPermitted,
    PgvectorTooOld,
    PostgresBackend,
    PostgresLiveCollection,
    PostgresStore,
    libpq_url,
)
from thoth.runtime import make_backend, make_live_collection
from thoth.state import StateError, StateStore
from thoth.workspace import Workspace

WS = "ws"
BM = Bm25Encoder("it", avg_len=8.0)
WORDS = [
    "paziente",
    "ricovero",
    "reparto",
    "dimissione",
    "triage",
    "codice",
    "pronto",
    "soccorso",
    "fascia",
    "pediatrica",
    "degenza",
    "diurno",
    "pernottamento",
    "trasferimento",
    "istituto",
    "decesso",
    "domicilio",
    "esito",
    "diagnosi",
    "intervento",
    "chirurgico",
    "ambulatorio",
    "visita",
    "prenotazione",
    "referto",
    "analisi",
    "laboratorio",
]


def uid(n: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"pg#{n}"))


def corpus(n: int, dim: int, seed: int = 7) -> list[IndexRecord]:
    """Random Italian word salads with random unit-ish vectors; every 13th without a sparse
    vector and every 17th with an empty one (neither counts in Qdrant's IDF)."""
    rng = random.Random(seed)
    records = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))
        sparse: SparseVec | None = BM.document(text)
        if i % 13 == 5:
            sparse = None
        elif i % 17 == 3:
            sparse = SparseVec([], [])
        records.append(
            IndexRecord(
                uid(i),
                [rng.uniform(-1, 1) for _ in range(dim)],
                sparse,
                {"n": i, "group": f"g{i % 5}", "tags": [f"t{i % 3}", f"t{i % 7}"]},
            )
        )
    return records


@pytest.fixture
def pg(pgvector_url: str, pgvector_schema: str) -> Iterator[PostgresBackend]:
    backend = PostgresBackend(pgvector_url, pgvector_schema, WS)
    yield backend
    backend.close()


def sealed(backend: PostgresBackend | EdgeBackend, records: list[IndexRecord], dim: int) -> object:
    store = backend.create("g1", dim)
    store.upsert(records)
    store.create_payload_indexes(["n", "group", "tags"])
    backend.seal("g1", store)
    return backend.open("g1")


# ---------------------------------------------------------------------- scores


def same_ranking(edge: list[Hit], pg: list[Hit]) -> int:
    """Rank for rank the same score (within 1e-4), each id the same score in both; ids in
    one list only are ties at the cut-off (equal scores: the engines order ties apart)."""
    assert len(edge) == len(pg)
    for a, b in zip(edge, pg, strict=True):
        assert abs(a.score - b.score) < 1e-4, (a, b)
    scores = {h.id: h.score for h in edge}
    for h in pg:
        if h.id in scores:
            assert abs(scores[h.id] - h.score) < 1e-4, h
        else:
            assert abs(h.score - pg[-1].score) < 1e-4, ("not a tie at the cut-off", h)
    return len(pg)


def test_bm25_and_dense_scores_equal_qdrant_edge(pg: PostgresBackend, tmp_path: Path) -> None:
    """Qdrant's IDF, ln((N - df + 0.5) / (df + 0.5) + 1), over the points holding a non-empty
    sparse vector: every score within 1e-4 of Qdrant Edge's, the same ids in the same order."""
    records = corpus(300, 8)
    edge = EdgeBackend(tmp_path / "edge")
    stores = [sealed(edge, records, 8), sealed(pg, records, 8)]
    rng = random.Random(3)
    queries = ["paziente ricovero", "triage pronto soccorso", "fascia pediatrica degenza"]
    queries += [" ".join(rng.sample(WORDS, 3)) for _ in range(7)]
    checked = 0
    for text in queries:
        for where in ({}, {"group": ["g1", "g3"]}, {"tags": "t2"}):
            edge_hits, pg_hits = (s.query_sparse(BM.query(text), where, 25) for s in stores)  # type: ignore[attr-defined]
            checked += same_ranking(edge_hits, pg_hits)
    for _ in range(5):
        q = [rng.uniform(-1, 1) for _ in range(8)]
        edge_hits, pg_hits = (s.query_dense(q, {}, 20) for s in stores)  # type: ignore[attr-defined]
        same_ranking(edge_hits, pg_hits)
    assert checked > 300
    for s in stores:
        s.close()  # type: ignore[attr-defined]


def test_scroll_returns_what_qdrant_edge_returns(pg: PostgresBackend, tmp_path: Path) -> None:
    """The same records in the same order, as stored (float32; dense vectors scaled to length
    1, as Qdrant's cosine collections store them): what a migration or a build carrying
    records forward copies."""
    records = corpus(60, 8)
    edge = EdgeBackend(tmp_path / "edge")
    stores = [sealed(edge, records, 8), sealed(pg, records, 8)]
    edge_records, pg_records = (list(s.scroll()) for s in stores)  # type: ignore[attr-defined]
    for e, p in zip(edge_records, pg_records, strict=True):
        # To the last float32 bit or so: the two engines round the norm their own way.
        assert np.allclose(e.dense, p.dense, rtol=0, atol=1e-6), e.id
        assert (e.id, e.sparse, e.payload) == (p.id, p.sparse, p.payload)
    assert [r.id for r in pg_records] == sorted(r.id for r in records)
    for s in stores:
        s.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("payload_index", [False, True])
def test_a_filtered_dense_query_is_never_short(
    pg: PostgresBackend, payload_index: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pgvector 0.6 filters HNSW candidates after the scan. Half the records ("far") point away
    from the query: the planner expects half the rows to pass and scans the HNSW index, whose
    candidates are all "near" — filtered to nothing. The adapter sees the short answer, finds
    more matching rows, and answers exactly: the true top 10 of "far". (The HNSW path at 3,000
    points: the exact threshold lowered to 0.)"""
    monkeypatch.setattr(postgres_module, "EXACT_BELOW", 0)
    rng = np.random.default_rng(5)
    dim = 16
    vectors = rng.normal(size=(3000, dim))
    vectors[:, 0] = np.abs(vectors[:, 0]) + 2.0  # towards the query ...
    far = list(range(0, 3000, 2))
    vectors[far, 0] = -5.0  # ... except every other one
    records = [
        IndexRecord(uid(i), [float(x) for x in v], None, {"group": "far" if i % 2 == 0 else "near"})
        for i, v in enumerate(vectors)
    ]
    store = pg.create("g1", dim)
    store.upsert(records)
    if payload_index:
        store.create_payload_indexes(["group"])
    pg.seal("g1", store)
    store = pg.open("g1")
    query = [1.0] + [0.0] * (dim - 1)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    exact = sorted(far, key=lambda i: (-float(unit[i] @ np.array(query)), uid(i)))[:10]
    assert [h.id for h in store.query_dense(query, {"group": "far"}, 10)] == [uid(i) for i in exact]
    assert len(store.query_dense(query, {"group": "near"}, 50)) == 50  # the HNSW path, whole
    store.close()


# ---------------------------------------------------------------------- refusals


def test_a_server_without_pgvector_is_a_coded_refusal(pg_user: str) -> None:
    """The local server at 127.0.0.1:5432 has no pgvector: nothing is created there."""
    schema = f"pgindex_{uuid.uuid4().hex[:8]}"
    url = f"postgresql://{pg_user}@{PG_HOST}:{PG_PORT}/test"
    with pytest.raises(PgvectorMissing) as info:
        PostgresBackend(url, schema, WS)
    assert info.value.code == "pgvector_missing"
    assert "install pgvector >= 0.5.0" in str(info.value) and "CREATE EXTENSION" in str(info.value)
    with psycopg.connect(url) as conn:
        assert (
            conn.execute(
                "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", [schema]
            ).fetchone()
            is None
        )


def _database(url: str, name: str, user: str | None = None) -> str:
    parts = {k: v for k, v in conninfo_to_dict(libpq_url(url)).items() if v is not None}
    parts["dbname"] = name
    if user:
        parts["user"] = user
        parts.pop("password", None)
    return make_conninfo(**{k: str(v) for k, v in parts.items()})


@pytest.fixture
def scratch_db(pgvector_url: str) -> Iterator[str]:
    """A database of its own on the pgvector server, without the extension created."""
    name = f"pgindex_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(libpq_url(pgvector_url), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield name
    with psycopg.connect(libpq_url(pgvector_url), autocommit=True) as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def test_a_role_that_cannot_create_the_extension_is_told_who_can(
    pgvector_url: str, scratch_db: str
) -> None:
    role = f"pgindex_weak_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(_database(pgvector_url, scratch_db), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        admin.execute(
            sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
                sql.Identifier(scratch_db), sql.Identifier(role)
            )
        )
    try:
        with pytest.raises(PgvectorNotPermitted) as info:
            PostgresBackend(_database(pgvector_url, scratch_db, role), "idx", WS)
        assert info.value.code == "pgvector_not_permitted"
        assert "superuser to run CREATE EXTENSION vector" in str(info.value)
        # A superuser creates it; the same role then opens the index.
        PostgresBackend(_database(pgvector_url, scratch_db), "other", "ws-admin").close()
        PostgresBackend(_database(pgvector_url, scratch_db, role), "idx", WS).close()
    finally:
        with psycopg.connect(libpq_url(pgvector_url), autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(scratch_db)
                )
            )
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_too_old_a_pgvector_is_a_coded_refusal(pgvector_url: str, scratch_db: str) -> None:
    """A database whose pgvector says 0.4.4 (the catalog edited in a throw-away database:
    wheels of pgvector before HNSW do not exist for this server)."""
    url = _database(pgvector_url, scratch_db)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("CREATE EXTENSION vector")
        admin.execute("UPDATE pg_extension SET extversion = '0.4.4' WHERE extname = 'vector'")
    with pytest.raises(PgvectorTooOld) as info:
        PostgresBackend(url, "idx", WS)
    assert info.value.code == "pgvector_too_old" and "ALTER EXTENSION vector UPDATE" in str(
        info.value
    )


def test_another_workspaces_schema_is_refused_and_left_alone(
    pg: PostgresBackend, pgvector_url: str, pgvector_schema: str
) -> None:
    sealed(pg, corpus(10, 4), 4)
    with pytest.raises(IndexSchemaForeign) as info:
        PostgresBackend(pgvector_url, pgvector_schema, "someone-else")
    assert info.value.code == "index_schema_foreign" and "'ws'" in str(info.value)
    assert pg.sealed() == ["g1"] and pg.open("g1").count() == 10


def test_a_schema_of_other_tables_is_refused(pgvector_url: str, pgvector_schema: str) -> None:
    with psycopg.connect(libpq_url(pgvector_url), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(pgvector_schema)))
        admin.execute(
            sql.SQL("CREATE TABLE {}.invoices (id int)").format(sql.Identifier(pgvector_schema))
        )
    with pytest.raises(IndexSchemaForeign, match="invoices"):
        PostgresBackend(pgvector_url, pgvector_schema, WS)


def test_another_dimension_is_refused_and_changes_nothing(pg: PostgresBackend) -> None:
    store = pg.create("g1", 4)
    store.upsert(corpus(5, 4))
    bad = [*corpus(3, 4, seed=9), IndexRecord(uid(99), [1.0, 0.0, 0.0], None, {})]
    with pytest.raises(IndexDimensionMismatch) as info:
        store.upsert(bad)
    assert info.value.code == "index_dimension_mismatch" and "dimension 3" in str(info.value)
    assert store.count() == 5
    with pytest.raises(IndexDimensionMismatch):
        store.query_dense([1.0, 0.0], {}, 3)
    with pytest.raises(IndexDimensionMismatch, match="1 to 2000"):
        pg.create("g2", 3072)
    store.close()


def test_a_sealed_generation_is_opened_read_only(pg: PostgresBackend) -> None:
    store = sealed(pg, corpus(5, 4), 4)
    assert isinstance(store, PostgresStore)
    with pytest.raises(IndexUnavailable, match="read-only"):
        store.upsert(corpus(1, 4, seed=2))
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        store.db.conn.execute(sql.SQL("DELETE FROM {}").format(store.points))
    assert store.count() == 5
    store.close()


# ---------------------------------------------------------------------- live collections


def test_live_collection_writes_reads_deletes_and_is_created_once(
    pgvector_url: str, pgvector_schema: str
) -> None:
    one = PostgresLiveCollection(pgvector_url, pgvector_schema, WS, "memory")
    two = PostgresLiveCollection(pgvector_url, pgvector_schema, WS, "memory")
    assert not one.exists()
    one.create(4, ["record_kind"], {"embedder": "e1"})
    two.create(4, ["record_kind"], {"embedder": "e2"})  # another host, later: kept the first
    assert two.exists() and two.meta() == {"embedder": "e1"}
    store = one.open()
    records = corpus(20, 4)
    store.upsert(records)
    assert store.count() == 20
    assert sorted(p["n"] for p in store.payloads([uid(3), uid(1), str(uuid.uuid4())])) == [1, 3]
    store.delete([uid(0), uid(1)])
    assert store.count() == 20 - 2 and len(list(store.all_payloads())) == 18
    hits = store.query_sparse(BM.query("paziente ricovero"), {}, 50)
    assert hits and uid(0) not in {h.id for h in hits}
    store.close()
    assert two.drop() and not one.exists() and not one.drop()
    one.close()
    two.close()


# ---------------------------------------------------------------------- activation


class _Embedder:
    identity = "test:fixed-4"
    dim = 4

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), self.dim), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.ones((1, self.dim), dtype=np.float32)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), self.dim), dtype=np.float32)


def test_two_racing_activations_leave_one_active(
    pg: PostgresBackend, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Activation is the state store's compare-and-swap; on this backend too, of two builds
    from the same source exactly one is served, and the loser's tables are dropped. (The two
    overlap as if the run lock had failed: neither discards the other's build.)"""
    monkeypatch.setattr(GenerationBuilder, "discard_crashed", lambda _self: [])
    with StateStore.open(pg_url) as state, StateStore.open(pg_url) as state2:

        def build(st: StateStore, n: int, source: str | None) -> GenerationBuild:
            b = GenerationBuilder(st, pg, WS, _Embedder()).begin(  # type: ignore[arg-type]
                "rev", {}, source=source, payload_indexes=["n"]
            )
            b.write(corpus(n, 4, seed=n))
            b.verify()
            b.seal()
            b.mark_candidate({})
            return b

        first = build(state, 3, None)
        with first:
            first.activate()
        left, right = build(state, 4, first.gen_id), build(state2, 5, first.gen_id)
        barrier = threading.Barrier(2)

        def activate(b: GenerationBuild) -> str:
            barrier.wait(timeout=10)
            try:
                with b:
                    b.activate()
                return "activated"
            except StateError:
                return "refused"

        with ThreadPoolExecutor(max_workers=2) as pool:
            outcomes = list(pool.map(activate, [left, right]))
        assert sorted(outcomes) == ["activated", "refused"]
        winner, loser = (left, right) if outcomes[0] == "activated" else (right, left)
        active = state.active_generation(WS)
        assert active is not None and active.id == winner.gen_id
        assert loser.gen_id not in pg.sealed() and winner.gen_id in pg.sealed()
        assert pg.open(winner.gen_id).count() == (4 if winner is left else 5)


# ---------------------------------------------------------------------- settings


def _with_index(ws: Workspace, index: str) -> Workspace:
    """The workspace with its `[index]` section replaced by `index`."""
    config = ws.root / "thoth.toml"
    text = config.read_text("utf-8")
    start = text.index("[index]")
    end = text.index("\n[", start + 1)
    config.write_text(text[:start] + "[index]\n" + index + "\n" + text[end:], encoding="utf-8")
    return Workspace.open(ws.root)


def test_the_settings_ask_for_one_url_and_keep_postgres_keys_to_postgres() -> None:
    ok = IndexSettings.model_validate({"backend": "postgres", "url_env": "X", "schema": "idx"})
    assert ok.schema_name == "idx" and ok.url is None
    for bad, said in (
        ({"backend": "postgres"}, "exactly one of url or url_env"),
        ({"backend": "postgres", "url": "postgresql://h/d", "url_env": "X"}, "exactly one"),
        ({"backend": "postgres", "url_env": "X", "schema": "Bad-Name"}, "schema"),
        ({"backend": "edge", "schema": "idx"}, 'backend = "postgres" only'),
        ({"backend": "postgres", "url_env": "X", "path": "p"}, "Qdrant settings"),
    ):
        with pytest.raises(ValidationError, match=said):
            IndexSettings.model_validate(bad)


def test_runtime_opens_the_postgres_backend_from_the_environment(
    make_workspace: Callable[..., Workspace],
    pgvector_url: str,
    pgvector_schema: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ws = _with_index(
        make_workspace(),
        f'backend = "postgres"\nurl_env = "THOTH_TEST_INDEX_URL"\nschema = "{pgvector_schema}"',
    )
    monkeypatch.delenv("THOTH_TEST_INDEX_URL", raising=False)
    with pytest.raises(ConfigError, match="THOTH_TEST_INDEX_URL"):
        make_backend(ws)
    monkeypatch.setenv("THOTH_TEST_INDEX_URL", pgvector_url)
    backend = make_backend(ws)
    assert isinstance(backend, PostgresBackend) and backend.schema == pgvector_schema
    backend.close()
    live = make_live_collection(ws, "memory")
    assert isinstance(live, PostgresLiveCollection) and not live.exists()
    live.close()
    # Another workspace pointed at the same schema is refused.
    other = _with_index(
        make_workspace(),
        f'backend = "postgres"\nurl_env = "THOTH_TEST_INDEX_URL"\nschema = "{pgvector_schema}"',
    )
    with pytest.raises(IndexSchemaForeign):
        make_backend(other)


def test_a_replaced_point_leaves_no_postings_behind(pg: PostgresBackend) -> None:
    store = pg.create("g1", 4)
    first = IndexRecord(uid(1), [1.0, 0, 0, 0], BM.document("triage pronto soccorso"), {"v": 1})
    store.upsert([first, IndexRecord(uid(2), [0, 1.0, 0, 0], BM.document("reparto"), {})])
    store.upsert([IndexRecord(uid(1), [1.0, 0, 0, 0], BM.document("dimissione"), {"v": 2})])
    assert store.count() == 2
    assert store.query_sparse(BM.query("triage"), {}, 5) == []
    assert [h.payload["v"] for h in store.query_sparse(BM.query("dimissione"), {}, 5)] == [2]
    store.close()


def test_a_broken_connection_fails_one_call_and_the_next_reconnects(
    pg: PostgresBackend, pgvector_url: str
) -> None:
    """A server restart or failover: the call that meets the dead connection is unavailable
    (never an empty answer), the next one opens a new connection."""
    store = sealed(pg, corpus(10, 4), 4)
    assert isinstance(store, PostgresStore)
    with psycopg.connect(libpq_url(pgvector_url), autocommit=True) as admin:
        for db in (pg.db, store.db):
            admin.execute("SELECT pg_terminate_backend(%s)", [db.conn.info.backend_pid])
    with pytest.raises(IndexUnavailable, match="failed"):
        pg.sealed()
    with pytest.raises(IndexUnavailable, match="failed"):
        store.count()
    assert pg.sealed() == ["g1"] and store.count() == 10
    store.close()


def test_dense_search_is_exact_up_to_the_exact_threshold(pg: PostgresBackend) -> None:
    """Below EXACT_BELOW points the dense branch is exact, as Qdrant Edge's (whose shards are
    never HNSW-indexed): the same top 10 as brute force, for queries an HNSW graph finds hard
    (directions away from every cluster of the corpus)."""
    rng = np.random.default_rng(11)
    n, dim = 8000, 384
    centres = rng.normal(size=(64, dim))
    vectors = centres[rng.integers(0, 64, n)] + 0.25 * rng.normal(size=(n, dim))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert n < EXACT_BELOW
    store = pg.create("g1", dim)
    store.upsert([IndexRecord(uid(i), vectors[i].tolist(), None, {"k": "x"}) for i in range(n)])
    store.create_payload_indexes(["k"])
    pg.seal("g1", store)
    store = pg.open("g1")
    missed = 0
    for q in rng.normal(size=(30, dim)):
        q = q / np.linalg.norm(q)
        truth = {uid(i) for i in np.argsort(-(vectors @ q))[:10]}
        for where in ({}, {"k": "x"}):
            missed += len(truth - {h.id for h in store.query_dense(q.tolist(), where, 10)})
    assert missed == 0
    store.close()


def test_an_index_url_env_unset_is_a_coded_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[index].url_env read as [state].url_env is (thoth.config.url_from_environment)."""
    from thoth.errors import ConfigError
    from thoth.runtime import postgres_index
    from thoth.workspace import Workspace

    (tmp_path / "thoth.toml").write_text(
        'workspace = "w"\n\n[index]\nbackend = "postgres"\nurl_env = "THOTH_TEST_INDEX_URL"\n'
    )
    monkeypatch.delenv("THOTH_TEST_INDEX_URL", raising=False)
    with pytest.raises(ConfigError) as info:
        postgres_index(Workspace.open(tmp_path))
    assert info.value.code == "index_url_env_unset"
    assert "THOTH_TEST_INDEX_URL" in str(info.value)
    monkeypatch.setenv("THOTH_TEST_INDEX_URL", "postgresql://h/d")
    assert postgres_index(Workspace.open(tmp_path))[0] == "postgresql://h/d"
