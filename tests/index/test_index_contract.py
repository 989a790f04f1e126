"""One contract, three adapters: Qdrant Edge (embedded), qdrant-client (local mode standing
in for a server) and PostgreSQL + pgvector (a real server, tests/pgvector.py). Kept small: local
mode is slow."""

from collections.abc import Iterator
from pathlib import Path

import pytest
import qdrant_edge as qe
from qdrant_client import QdrantClient

from thoth.index.base import (
    RRF_K,
    Exclude,
    Fusion,
    IndexRecord,
    IndexUnavailable,
    Match,
    SparseVec,
    where_conditions,
)
from thoth.index.bm25 import Bm25Encoder
from thoth.index.edge import EdgeStore
from thoth.index.generations import EdgeBackend, IndexBackend
from thoth.index.postgres import PostgresBackend
from thoth.index.server import ServerBackend

DIM = 4
TEXTS = {
    "a": ("la fascia pediatrica comprende i pazienti minorenni", [1.0, 0.0, 0.0, 0.0]),
    "b": ("ricovero ordinario con pernottamento in reparto", [0.0, 1.0, 0.0, 0.0]),
    "c": ("dimissione del paziente a domicilio", [0.0, 0.0, 1.0, 0.0]),
    "d": ("codice colore del triage in pronto soccorso", [0.0, 0.0, 0.0, 1.0]),
}
BM = Bm25Encoder("it", avg_len=6.0)


def uid(key: str) -> str:
    return f"00000000-0000-0000-0000-00000000000{ord(key) - 96}"


def records(kind: str = "evidence") -> list[IndexRecord]:
    return [
        IndexRecord(
            uid(k),
            vec,
            BM.document(text),
            {
                "record_kind": kind,
                "key": k,
                "purposes": ["p1", "p2"] if k != "d" else ["p2"],
                "text": text,
            },
        )
        for k, (text, vec) in TEXTS.items()
    ]


ADAPTERS = ["edge", "server", "postgres"]


def make(adapter: str, request: pytest.FixtureRequest, tmp_path: Path) -> IndexBackend:
    if adapter == "edge":
        return EdgeBackend(tmp_path / "index")
    if adapter == "server":
        return ServerBackend(QdrantClient(path=str(tmp_path / "qdrant")), "thoth_test")
    url = request.getfixturevalue("pgvector_url")
    return PostgresBackend(url, request.getfixturevalue("pgvector_schema"), "ws")


@pytest.fixture(params=ADAPTERS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[IndexBackend]:
    made = make(request.param, request, tmp_path)
    yield made
    made.close()


def test_roundtrip_and_hybrid_query(backend: IndexBackend) -> None:
    store = backend.create("g1", DIM)
    store.upsert(records())
    store.create_payload_indexes(["record_kind", "key", "purposes"])
    backend.seal("g1", store)
    store = backend.open("g1")
    assert store.dim == DIM
    assert store.count() == 4 and store.count({"key": ["a", "b"]}) == 2
    scrolled = list(store.scroll())
    assert sorted(r.payload["key"] for r in scrolled) == ["a", "b", "c", "d"]
    assert all(r.sparse is not None and len(r.dense) == DIM for r in scrolled)

    query = "pazienti pediatrici"
    # Equal-weight RRF: "a" leads the dense branch and is second in BM25 (a BM25-weighted
    # fusion puts BM25's first, "c", ahead on this four-record toy).
    hybrid = store.query_hybrid(
        [0.9, 0.1, 0.0, 0.0],
        BM.query(query),
        {"purposes": "p1"},
        limit=3,
        prefetch_limit=10,
        fusion=Fusion("rrf", RRF_K),
    )
    assert hybrid[0].payload["key"] == "a"
    assert all(h.payload["key"] != "d" for h in hybrid)  # filtered out by purpose
    dense = store.query_dense([0.0, 0.0, 0.0, 1.0], {"purposes": "p2"}, limit=1)
    assert dense[0].payload["key"] == "d"
    sparse = store.query_sparse(BM.query("triage"), {}, limit=2)
    assert [h.payload["key"] for h in sparse] == ["d"]
    store.close()


def test_match_serves_only_records_whose_labels_are_all_allowed(backend: IndexBackend) -> None:
    labels = {"a": ["public"], "b": ["public", "confidential"], "c": [], "d": ["internal"]}
    store = backend.create("g1", DIM)
    store.upsert(
        [
            IndexRecord(r.id, r.dense, r.sparse, {**r.payload, "labels": labels[r.payload["key"]]})
            for r in records()
        ]
    )
    store.create_payload_indexes(["labels"])
    public = Match(any_of=("public",), none_of=("internal", "confidential"))
    everything = Match(any_of=("public", "internal", "confidential"))
    q = [0.25, 0.25, 0.25, 0.25]
    for where, expected in ((public, ["a"]), (everything, ["a", "b", "d"])):
        keys = {
            "dense": store.query_dense(q, {"labels": where}, limit=10),
            "hybrid": store.query_hybrid(q, BM.query("pazienti"), {"labels": where}, 10, 10),
        }
        assert sorted(h.payload["key"] for h in keys["dense"]) == expected
        assert store.count({"labels": where}) == len(expected)
    # "c" has no label: no condition can ever reach it.
    assert all(h.payload["key"] != "c" for h in store.query_dense(q, {"labels": everything}, 10))
    with pytest.raises(ValueError, match="any_of"):
        Match(any_of=())
    store.close()


def test_exclude_keeps_records_without_the_field(backend: IndexBackend) -> None:
    """The BM25 branch of the workspace language: every record not encoded in another
    language, records written without a language included."""
    languages = {"a": "english", "b": "german", "c": "italian"}  # "d": none
    store = backend.create("g1", DIM)
    store.upsert(
        [
            IndexRecord(
                r.id,
                r.dense,
                r.sparse,
                {**r.payload, **({"bm25_language": languages[k]} if k in languages else {})},
            )
            for r in records()
            for k in [r.payload["key"]]
        ]
    )
    store.create_payload_indexes(["bm25_language"])
    own = {"bm25_language": Exclude(("english", "german"))}
    q = [0.25, 0.25, 0.25, 0.25]
    assert sorted(h.payload["key"] for h in store.query_dense(q, own, 10)) == ["c", "d"]
    assert store.count(own) == 2 and store.count({"bm25_language": "english"}) == 1
    sparse = store.query_sparse(BM.query("paziente pediatrica"), own, 10)
    assert sorted(h.payload["key"] for h in sparse) == ["c"]  # "a" holds the words, in English
    store.close()


def test_same_fusion_on_every_adapter(
    pgvector_server: object, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Same vectors, same RRF k: the adapters rank identically."""
    backends = [make(a, request, tmp_path / a) for a in ADAPTERS]
    rankings = []
    for b in backends:
        store = b.create("g", DIM)
        store.upsert(records())
        b.seal("g", store)
        store = b.open("g")
        hits = store.query_hybrid(
            [0.6, 0.5, 0.1, 0.05], BM.query("ricovero del paziente"), {}, limit=4, prefetch_limit=10
        )
        rankings.append([h.payload["key"] for h in hits])
        store.close()
        b.close()
    assert rankings[0] == rankings[1] == rankings[2]


def test_unsealed_generation_is_invisible_and_discarded(backend: IndexBackend) -> None:
    store = backend.create("g2", DIM)
    store.upsert(records())
    with pytest.raises(IndexUnavailable):
        backend.open("g2")
    assert backend.sealed() == []
    store.close()
    assert backend.discard_unsealed() == ["g2"]
    with pytest.raises(IndexUnavailable):
        backend.open("g2")


def test_drop_removes_a_generation(backend: IndexBackend) -> None:
    store = backend.create("g3", DIM)
    backend.seal("g3", store)
    assert backend.sealed() == ["g3"]
    backend.drop("g3")
    assert backend.sealed() == []
    with pytest.raises(IndexUnavailable):
        backend.open("g3")


def test_missing_or_corrupt_edge_directory_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(IndexUnavailable, match="missing"):
        EdgeStore.open(tmp_path / "nowhere")
    backend = EdgeBackend(tmp_path / "idx")
    store = backend.create("g", DIM)
    store.upsert(records())
    backend.seal("g", store)
    (tmp_path / "idx" / "g" / "edge_config.json").write_text("{not json")
    with pytest.raises(IndexUnavailable, match="unreadable"):
        backend.open("g")


def test_a_locked_shard_is_unavailable(tmp_path: Path) -> None:
    """A shard written with a WAL (by another tool) is locked while open: reported, not hung."""
    path = tmp_path / "locked"
    holder = qe.EdgeShard.create(
        str(path), qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine))
    )
    try:
        with pytest.raises(IndexUnavailable, match="cannot open"):
            EdgeStore.open(path)
    finally:
        holder.close()


def test_sparse_vectors_match_between_encoders() -> None:
    """The same text always gives the same BM25 vector (client-side, for every adapter)."""
    a = Bm25Encoder("it", 6.0).document("Ricoveri pediatrici")
    b = Bm25Encoder("italian", 6.0).document("Ricoveri pediatrici")
    assert a == b and isinstance(a, SparseVec)
    with pytest.raises(ValueError, match="no BM25 stemmer"):
        Bm25Encoder("xx", 6.0)


def _mirror_pairs() -> list[IndexRecord]:
    """Pairs (A, B) where A is one place better in dense and B one place better in BM25: under
    RRF each pair ties exactly. Ids alternate which of the two is smaller, so any fixed engine
    tie-break (insertion order, internal offset, dense order) disagrees with id order somewhere."""
    records = []
    for rank in range(8):  # dense: strictly decreasing similarity to [1, 0, 0, 0]
        pair, second = divmod(rank, 2)
        tf = 2 * (4 - pair) - (0 if second else 1)  # BM25: B (second) beats A, pairs in order
        text = " ".join(["pediatrico"] * tf + ["nota"] * (10 - tf))
        low_id = (pair + second) % 2 == 0
        uid_n = 2 * pair + (0 if low_id else 1)
        records.append(
            IndexRecord(
                f"00000000-0000-0000-0000-{uid_n:012d}",
                [1.0, 0.1 * rank, 0.0, 0.0],
                BM.document(text),
                {"r": rank},
            )
        )
    return list(reversed(records))  # inserted worst first


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_fused_ranking_breaks_ties_by_id(
    adapter: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    backend = make(adapter, request, tmp_path)
    store = backend.create("g", DIM)
    store.upsert(_mirror_pairs())
    backend.seal("g", store)
    store = backend.open("g")
    hits = store.query_hybrid(  # RRF with equal weights: mirror-image ranks tie exactly
        [1.0, 0.0, 0.0, 0.0],
        BM.query("pediatrico"),
        {},
        limit=8,
        prefetch_limit=8,
        fusion=Fusion("rrf", RRF_K),
    )
    store.close()
    backend.close()
    assert len({h.score for h in hits}) == 4, "four exact ties"
    assert [(-h.score, h.id) for h in hits] == sorted((-h.score, h.id) for h in hits)


def test_where_conditions_is_the_one_reading_of_where_for_every_adapter() -> None:
    must, must_not = where_conditions(
        {
            "record_kind": "evidence",
            "ordinal": 3,
            "doc_id": ["a", "b"],
            "labels": Match(any_of=("public",), none_of=("internal",)),
        }
    )
    assert must == [
        ("record_kind", "evidence"),
        ("ordinal", 3),
        ("doc_id", ["a", "b"]),
        ("labels", ["public"]),
    ]
    assert must_not == [("labels", ["internal"])]
    assert where_conditions({"labels": Match(any_of=("public",))}) == ([("labels", ["public"])], [])
