"""The live collection on a Qdrant server (or qdrant-client's local mode): the collection
`<prefix>__<name>`, its metadata in the collection's own `metadata`. Apart from thoth.index.live
because qdrant-client is slow to import and only the server backend needs it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from qdrant_client import QdrantClient, models

from thoth.index.base import BM25, IndexUnavailable
from thoth.index.live import META_KEY, PAGE
from thoth.index.server import ServerStore


class ServerLiveStore(ServerStore):
    def payloads(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        try:
            points = self._client.retrieve(
                self.collection, list(ids), with_payload=True, with_vectors=False
            )
        except Exception as exc:  # qdrant-client raises several unrelated types: keep the cause
            raise IndexUnavailable(f"Qdrant {self.collection!r}: retrieve failed: {exc}") from exc
        return [dict(p.payload or {}) for p in points]

    def all_payloads(self) -> Iterator[dict[str, Any]]:
        offset: Any = None
        while True:
            try:
                points, offset = self._client.scroll(
                    self.collection,
                    limit=PAGE,
                    offset=offset,
                    with_payload=True,
                    with_vectors=False,
                )
            except Exception as exc:  # see payloads()
                raise IndexUnavailable(f"Qdrant {self.collection!r}: scroll failed: {exc}") from exc
            for p in points:
                yield dict(p.payload or {})
            if offset is None:
                return

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        try:
            self._client.delete(
                self.collection, points_selector=models.PointIdsList(points=list(ids)), wait=True
            )
        except Exception as exc:  # see payloads()
            raise IndexUnavailable(f"Qdrant {self.collection!r}: delete failed: {exc}") from exc


class ServerLiveCollection:
    """The collection `<prefix>__<name>`. The client is the caller's: closed by whoever made
    it (`owns_client=True` hands it over to this collection)."""

    def __init__(
        self, client: QdrantClient, prefix: str, name: str, *, owns_client: bool = False
    ) -> None:
        self._client = client
        self.name = name
        self.collection = f"{prefix}__{name}"
        self.where = f"Qdrant collection {self.collection!r}"
        self._owns_client = owns_client

    def exists(self) -> bool:
        try:
            return bool(self._client.collection_exists(self.collection))
        except Exception as exc:  # qdrant-client raises several unrelated types: keep the cause
            raise IndexUnavailable(f"{self.where}: cannot reach Qdrant ({exc})") from exc

    @contextmanager
    def locked(self, *, exclusive: bool) -> Iterator[None]:
        """The server serialises writes itself: nothing to lock."""
        yield

    def create(self, dim: int, payload_indexes: Sequence[str], meta: Mapping[str, Any]) -> None:
        try:
            self._client.create_collection(
                self.collection,
                vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE),
                sparse_vectors_config={
                    BM25: models.SparseVectorParams(modifier=models.Modifier.IDF)
                },
                metadata={META_KEY: dict(meta)},
            )
        except Exception as exc:  # see exists()
            if self._created_elsewhere():
                return  # another host created it meanwhile; meta() checks what it holds
            raise IndexUnavailable(f"{self.where}: cannot create it ({exc})") from exc
        try:
            for name in payload_indexes:
                self._client.create_payload_index(
                    self.collection, name, field_schema=models.PayloadSchemaType.KEYWORD
                )
        except Exception as exc:  # see exists()
            raise IndexUnavailable(
                f"{self.where}: created, but its payload indexes failed ({exc})"
            ) from exc

    def _created_elsewhere(self) -> bool:
        try:
            return self.exists()
        except IndexUnavailable:  # the creation error is the one reported, with its cause
            return False

    def meta(self) -> dict[str, Any]:
        try:
            info = self._client.get_collection(self.collection)
        except Exception as exc:  # see exists()
            raise IndexUnavailable(f"{self.where}: unavailable ({exc})") from exc
        meta = (info.config.metadata or {}).get(META_KEY)
        if not isinstance(meta, dict):
            raise IndexUnavailable(
                f"{self.where}: no Thoth metadata ({META_KEY!r}) in the collection's metadata"
            )
        return dict(meta)

    def open(self) -> ServerLiveStore:
        store = ServerLiveStore.open(self._client, self.collection)
        assert isinstance(store, ServerLiveStore)  # ServerStore.open builds `cls`
        return store

    def drop(self) -> bool:
        try:
            existed = bool(self._client.collection_exists(self.collection))
            if existed:
                self._client.delete_collection(self.collection)
        except Exception as exc:  # see exists()
            raise IndexUnavailable(f"{self.where}: cannot delete it ({exc})") from exc
        return existed

    def close(self) -> None:
        if self._owns_client:
            self._client.close()
