"""Memories on the PostgreSQL backend: the memory index over the live collection `memory` of
the workspace's index schema (a real PostgreSQL + pgvector, tests/pgvector.py), and `tht memory
migrate` copying the local Qdrant Edge shard of an earlier release into it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.fake_embeddings import FakeEmbeddingServer
from tests.memory.test_memory_server import ABLAZIONE, QUESTION, draft, promote, tht
from tests.publishing import write_config
from thoth.cli import exitcodes
from thoth.embed.openai_compat import OpenAICompatEmbedder
from thoth.index.base import IndexUnavailable
from thoth.index.postgres import PostgresLiveCollection
from thoth.memory import Registry
from thoth.memory.index import MemoryIndex, point_id
from thoth.runtime import memory_index_path, sessions_dir
from thoth.session import SessionStore
from thoth.workflow.stores import MemoryStores
from thoth.workspace import Workspace

URL_ENV = "THOTH_TEST_MEMORY_INDEX_URL"


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


def test_memory_index_on_postgres(
    pgvector_url: str, pgvector_schema: str, fake: FakeEmbeddingServer, tmp_path: object
) -> None:
    embedder = OpenAICompatEmbedder(fake.url, "fake-e5", dim=8)
    index = MemoryIndex(
        PostgresLiveCollection(pgvector_url, pgvector_schema, "ws", "memory"), language="it"
    )
    try:
        registry = Registry(tmp_path / "registry.jsonl")  # type: ignore[operator]
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
        assert index.ids() == {first.id: first.content_sha256, second.id: second.content_sha256}
        query = "ablazione transcatetere"
        vec = [float(x) for x in embedder.embed_query(query)[0]]
        hits = index.search(vec, index.query_sparse(query), 5, embedder_identity=embedder.identity)
        assert {h.memory_id for h in hits} == {first.id, second.id}
        assert hits[0].memory_id == first.id
        other = OpenAICompatEmbedder(fake.url, "another-model", dim=8)
        with pytest.raises(IndexUnavailable, match="reconcile --rebuild"):
            index.search(vec, index.query_sparse(query), 5, embedder_identity=other.identity)
        assert index.delete([second.id, "mem-0999"]) == 1
        assert set(index.ids()) == {first.id}
        assert index.drop() is True and not index.exists()
    finally:
        index.close()


def test_migrate_copies_the_local_shard_into_postgres(
    make_workspace: Callable[..., Workspace],
    fake: FakeEmbeddingServer,
    pgvector_url: str,
    pgvector_schema: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workspace = make_workspace()
    write_config(workspace.root, fake.url)
    workspace = Workspace.open(workspace.root)
    root = str(workspace.root)
    sessions = SessionStore(sessions_dir(workspace))
    s = sessions.create(QUESTION)
    first = promote(workspace, s, "ablazione", ABLAZIONE)
    second = promote(workspace, s, "ricovero", "permanenza con pernottamento")
    embedded = len(fake.requests)

    monkeypatch.setenv(URL_ENV, pgvector_url)
    postgres = f'backend = "postgres"\nurl_env = "{URL_ENV}"\nschema = "{pgvector_schema}"\n'
    write_config(workspace.root, fake.url, extra=postgres)
    ws = Workspace.open(workspace.root)
    code, data = tht("memory", "migrate", "-w", root)
    assert code == exitcodes.OK, data
    assert data["copied"] == 2 and data["in_target"] == 2 and data["skipped"] == []
    assert data["source"] == str(memory_index_path(ws))
    assert len(fake.requests) == embedded  # vectors copied, nothing re-embedded
    with MemoryStores(ws) as stores:
        assert isinstance(stores.index.collection, PostgresLiveCollection)
        assert set(stores.index.ids()) == {first, second}
        _, local = stores.local_shard().points()
        _, copied = stores.index.points()
        assert {p.id: p for p in copied} == {p.id: p for p in local}
        assert {p.id for p in copied} == {point_id(first), point_id(second)}
    later = sessions.create("Numero di pazienti con ablazione transcatetere")
    code, data = tht("memory", "search", "ablazione", "--session", later.id, "-w", root)
    assert code == exitcodes.OK and data["results"][0]["memory_id"] == first  # type: ignore[index]
