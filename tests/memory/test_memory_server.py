"""Memories on the configured index backend: the memory index over a Qdrant server collection
(`<prefix>__memory`, qdrant-client's local mode standing in for a server: slow, so few tests),
and `tht memory migrate`, which copies the local Qdrant Edge shard of an earlier release into
it. The embedder is the real OpenAI-compatible client talking to a local fake server."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from qdrant_client import QdrantClient
from typer.testing import CliRunner

from tests.fake_embeddings import FakeEmbeddingServer
from tests.publishing import write_config
from thoth.cli import exitcodes
from thoth.cli.main import app
from thoth.embed.openai_compat import OpenAICompatEmbedder
from thoth.errors import PreconditionError
from thoth.index.base import IndexRecord, IndexUnavailable, record_from_point
from thoth.index.server_live import ServerLiveCollection
from thoth.memory import MemoryDraft, Registry
from thoth.memory.index import MemoryIndex, point_id
from thoth.memory.migrate import migrate
from thoth.runtime import index_prefix, memory_index_path, open_runtime, sessions_dir
from thoth.session import Session, SessionStore
from thoth.workflow.stores import MemoryStores
from thoth.workspace import Workspace

runner = CliRunner()
QUESTION = "Quante ablazioni per anno nel 2023?"
ABLAZIONE = "procedura con `ablazione_transcatetere = TRUE`, contata per paziente"
SERVER = 'backend = "server"\npath = "qdrant"\n'


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


def draft(seq: int, subject: str, detail: str = ABLAZIONE) -> MemoryDraft:
    return MemoryDraft(
        session_id="s-20240501-093000-a1b2c3",
        decision_seq=seq,
        type="concept_clarified",
        subject=subject,
        detail=detail,
        rationale="chiarito dal reviewer",
        question_context=QUESTION,
    )


def tht(*args: str) -> tuple[int, dict[str, object]]:
    result = runner.invoke(app, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def server_points(client: QdrantClient, collection: str) -> dict[str, IndexRecord]:
    found, _ = client.scroll(collection, limit=100, with_payload=True, with_vectors=True)
    return {str(p.id): record_from_point(p.id, p.vector, p.payload) for p in found}


# ---------------------------------------------------------------------- the server adapter


def test_memory_index_on_a_server_collection(tmp_path: Path, fake: FakeEmbeddingServer) -> None:
    embedder = OpenAICompatEmbedder(fake.url, "fake-e5", dim=8)
    client = QdrantClient(path=str(tmp_path / "qdrant"))
    try:
        index = MemoryIndex(ServerLiveCollection(client, "thoth_t", "memory"), language="it")
        registry = Registry(tmp_path / "registry.jsonl")
        assert not index.exists() and index.ids() == {}
        with pytest.raises(IndexUnavailable, match="tht memory reconcile"):
            index.search([0.1] * 8, index.query_sparse("x"), 5, embedder_identity=embedder.identity)

        first, _ = registry.add(draft(1, "ablazione"))
        second, _ = registry.add(draft(2, "ricovero", "permanenza con pernottamento"))
        assert index.upsert_many([first, second], embedder) == {
            first.id: "indexed",
            second.id: "indexed",
        }
        assert index.upsert(first, embedder) == "unchanged"
        assert client.collection_exists("thoth_t__memory")
        assert index.ids() == {first.id: first.content_sha256, second.id: second.content_sha256}

        query = "ablazione transcatetere"
        vec = [float(x) for x in embedder.embed_query(query)[0]]
        hits = index.search(vec, index.query_sparse(query), 5, embedder_identity=embedder.identity)
        assert {h.memory_id for h in hits} == {first.id, second.id}
        assert hits[0].memory_id == first.id  # BM25 agrees with the fake's vectors here
        near = index.similar([vec], 1, embedder_identity=embedder.identity)
        assert len(near) == 1 and len(near[0]) == 1

        other = OpenAICompatEmbedder(fake.url, "another-model", dim=8)
        with pytest.raises(IndexUnavailable, match="reconcile --rebuild"):
            index.search(vec, index.query_sparse(query), 5, embedder_identity=other.identity)
        with pytest.raises(IndexUnavailable, match="another-model"):
            index.upsert(first, other)

        assert index.delete([second.id, "mem-0999"]) == 1
        assert set(index.ids()) == {first.id}
        assert index.drop() is True and not index.exists()
    finally:
        client.close()


def test_an_unreachable_server_is_unavailable_never_empty(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    embedder = OpenAICompatEmbedder(fake.url, "fake-e5", dim=8)
    record, _ = Registry(tmp_path / "registry.jsonl").add(draft(1, "ablazione"))
    client = QdrantClient(url="http://127.0.0.1:9", timeout=2)  # nothing listens on port 9
    index = MemoryIndex(ServerLiveCollection(client, "thoth_t", "memory"), language="it")
    try:
        calls: list[Callable[[], object]] = [
            index.exists,
            index.ids,
            lambda: index.search([0.1] * 8, index.query_sparse("x"), 5, embedder_identity="e"),
            lambda: index.delete([record.id]),
            lambda: index.upsert(record, embedder),
            index.drop,
        ]
        for call in calls:
            with pytest.raises(IndexUnavailable, match="thoth_t__memory"):
                call()
    finally:
        client.close()


# ---------------------------------------------------------------------- a workspace on the server


@pytest.fixture
def workspace(make_workspace: Callable[..., Workspace], fake: FakeEmbeddingServer) -> Workspace:
    ws = make_workspace()
    write_config(ws.root, fake.url)
    return Workspace.open(ws.root)


def use_server(ws: Workspace, fake: FakeEmbeddingServer) -> Workspace:
    write_config(ws.root, fake.url, extra=SERVER)
    return Workspace.open(ws.root)


def promote(ws: Workspace, session: Session, subject: str, detail: str) -> str:
    entry = session.append(
        "clarification", "concept_clarified", subject=subject, detail=detail, rationale="chiarito"
    )
    root = str(ws.root)
    code, data = tht(
        "memory", "save-one", "--session", session.id, "--seq", str(entry.seq), "-w", root
    )
    assert code == exitcodes.OK, data
    return str(data["memory_id"])


def test_with_the_server_backend_memories_live_in_the_server_collection(
    workspace: Workspace, fake: FakeEmbeddingServer
) -> None:
    ws = use_server(workspace, fake)
    sessions = SessionStore(sessions_dir(ws))
    mem = promote(ws, sessions.create(QUESTION), "ablazione", ABLAZIONE)

    assert not memory_index_path(ws).exists()  # no local shard
    later = sessions.create("Numero di pazienti con ablazione transcatetere")
    root = str(ws.root)
    code, data = tht("memory", "search", "ablazione", "--session", later.id, "-w", root)
    assert code == exitcodes.OK
    assert [r["memory_id"] for r in data["results"]] == [mem]  # type: ignore[attr-defined]

    # The runtime's client is shared: qdrant-client's local mode allows one client per path.
    with open_runtime(ws) as rt, MemoryStores.for_runtime(rt) as stores:
        assert set(stores.index.ids()) == {mem}
        assert stores.index.where == f"Qdrant collection '{index_prefix(ws)}__memory'"
        with pytest.raises(IndexUnavailable, match="cannot open the Qdrant client"):
            MemoryStores(ws).index.exists()  # a second client on the same local path


def test_migrate_copies_the_local_shard_into_the_server_collection(
    workspace: Workspace, fake: FakeEmbeddingServer
) -> None:
    root = str(workspace.root)
    code, data = tht("memory", "migrate", "-w", root)
    assert code == exitcodes.PRECONDITION and "nothing to migrate" in str(data["error"])

    sessions = SessionStore(sessions_dir(workspace))
    s = sessions.create(QUESTION)
    first = promote(workspace, s, "ablazione", ABLAZIONE)
    second = promote(workspace, s, "ricovero", "permanenza con pernottamento")
    shard = MemoryStores(workspace).local_shard()
    _, local = shard.points()
    embedded = len(fake.requests)

    ws = use_server(workspace, fake)
    code, data = tht("memory", "migrate", "-w", root)

    assert code == exitcodes.OK, data
    assert data["copied"] == 2 and data["in_source"] == 2 and data["in_target"] == 2
    assert data["registry"] == 2 and data["repairs"] == [] and data["skipped"] == []
    assert data["source"] == str(memory_index_path(ws)) and data["source_left_in_place"] is True
    assert shard.exists() and set(shard.ids()) == {first, second}  # left in place, untouched
    assert len(fake.requests) == embedded  # vectors copied, nothing re-embedded
    client = QdrantClient(path=str(ws.root / "qdrant"))
    try:
        copied = server_points(client, f"{index_prefix(ws)}__memory")
    finally:
        client.close()
    assert copied == {p.id: p for p in local}  # same ids, vectors and payloads
    assert set(copied) == {point_id(first), point_id(second)}

    later = sessions.create("Numero di pazienti con ablazione transcatetere")
    code, data = tht("memory", "search", "ablazione", "--session", later.id, "-w", root)
    assert data["results"][0]["memory_id"] == first  # type: ignore[index]

    code, data = tht("memory", "migrate", "-w", root)  # again: the same points, no change
    assert code == exitcodes.OK and data["copied"] == 2 and data["in_target"] == 2


def test_migrate_refuses_a_shard_of_another_embedder_and_writes_nothing(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    registry = Registry(tmp_path / "registry.jsonl")
    record, _ = registry.add(draft(1, "ablazione"))
    shard = MemoryIndex(tmp_path / "shard", language="it")
    shard.upsert(record, OpenAICompatEmbedder(fake.url, "old-model", dim=8))
    client = QdrantClient(path=str(tmp_path / "qdrant"))
    try:
        target = MemoryIndex(ServerLiveCollection(client, "thoth_t", "memory"), language="it")
        with pytest.raises(PreconditionError, match="reconcile --rebuild"):
            migrate(
                registry=registry,
                source=shard,
                target=target,
                embedder=OpenAICompatEmbedder(fake.url, "fake-e5", dim=8),
            )
        assert not target.exists()
    finally:
        client.close()
