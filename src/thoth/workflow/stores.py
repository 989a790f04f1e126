"""The one place that opens a workspace's memory stores: the sessions directory, the memory
registry, the memory index on the configured backend (`thoth.runtime.make_live_collection`)
and the embedder, each opened when first used. The CLI, the LLM driver and the benchmarks all
open them here, so they never disagree on where memories live.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Final

from thoth.embed.base import Embedder, EmbedderError
from thoth.index.live import EdgeLiveCollection
from thoth.memory.index import COLLECTION, MemoryEmbeddingFailed, MemoryIndex
from thoth.memory.registry import Registry
from thoth.runtime import (
    Runtime,
    make_live_collection,
    memory_index_path,
    memory_registry_path,
    open_embedder,
    sessions_dir,
)
from thoth.session import Session, SessionStore
from thoth.workspace import Workspace

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

MEMORY_COLLECTION: Final = COLLECTION


class MemoryStores:
    """`embedder`: one already open (the runtime's) instead of the configured one; `client`: the
    server client to share (qdrant-client's local mode allows one per path), else the index
    opens its own and `close` closes it."""

    def __init__(
        self, ws: Workspace, embedder: Embedder | None = None, *, client: QdrantClient | None = None
    ) -> None:
        self.ws = ws
        self._embedder = embedder
        self._client = client

    @classmethod
    def for_runtime(cls, runtime: Runtime) -> MemoryStores:
        """The stores of the runtime's workspace, sharing its embedder and server client."""
        return cls(runtime.ws, runtime.embedder, client=runtime.qdrant)

    @cached_property
    def sessions(self) -> SessionStore:
        return SessionStore(sessions_dir(self.ws))

    def session(self, session_id: str) -> Session:
        return self.sessions.open(session_id)

    @cached_property
    def registry(self) -> Registry:
        return Registry(memory_registry_path(self.ws))

    @cached_property
    def index(self) -> MemoryIndex:
        collection = make_live_collection(self.ws, MEMORY_COLLECTION, self._client)
        return MemoryIndex(collection, language=self.ws.settings.language)

    def local_shard(self) -> MemoryIndex:
        """The Qdrant Edge memory shard of this workspace, whatever the configured backend:
        with the server backend, what an earlier release left behind (`tht memory migrate`)."""
        return MemoryIndex(
            EdgeLiveCollection(memory_index_path(self.ws), MEMORY_COLLECTION),
            language=self.ws.settings.language,
        )

    @cached_property
    def embedder(self) -> Embedder:
        if self._embedder is not None:
            return self._embedder
        try:
            return open_embedder(self.ws)
        except EmbedderError as exc:
            raise MemoryEmbeddingFailed(
                f"workspace {self.ws.root}: the embedder cannot start ({exc}) -> check "
                "[embedding] in thoth.toml"
            ) from exc

    def close(self) -> None:
        """Close what was opened (a server client of the index's own)."""
        index = self.__dict__.get("index")
        if isinstance(index, MemoryIndex):
            index.close()

    def __enter__(self) -> MemoryStores:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
