"""Qdrant server adapter (qdrant-client): the same collection layout on a Qdrant server or
cluster, and the backend of its generations (`ServerBackend`). In tests qdrant-client's local
mode stands in for a server. Imported only where `[index].backend = "server"` is used:
qdrant-client takes about a second to import."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from qdrant_client import QdrantClient, models

from thoth.index.base import (
    BM25,
    Hit,
    IndexConfigError,
    IndexRecord,
    IndexStore,
    IndexUnavailable,
    SparseVec,
    Where,
    hits_from_points,
    record_from_point,
    where_conditions,
)
from thoth.index.fusion import FusedBranches


def _condition(key: str, value: str | int | list[str]) -> models.FieldCondition:
    if isinstance(value, list):
        return models.FieldCondition(key=key, match=models.MatchAny(any=value))
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def _filter(where: Where | None) -> models.Filter | None:
    if not where:
        return None
    must, must_not = where_conditions(where)
    return models.Filter(
        must=[_condition(k, v) for k, v in must],
        must_not=[_condition(k, v) for k, v in must_not] or None,
    )


def _sparse(vec: SparseVec) -> models.SparseVector:
    return models.SparseVector(indices=list(vec.indices), values=list(vec.values))


class ServerStore(FusedBranches):
    def __init__(self, client: QdrantClient, collection: str, dim: int) -> None:
        self._client = client
        self.collection = collection
        self.dim = dim

    @classmethod
    def create(cls, client: QdrantClient, collection: str, dim: int) -> ServerStore:
        try:
            if client.collection_exists(collection):
                raise IndexConfigError(
                    f"collection {collection!r} already exists; refusing to overwrite it"
                )
            client.create_collection(
                collection,
                vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE),
                sparse_vectors_config={
                    BM25: models.SparseVectorParams(modifier=models.Modifier.IDF)
                },
            )
        except IndexConfigError:
            raise
        except Exception as exc:
            raise IndexUnavailable(
                f"Qdrant: cannot create collection {collection!r}: {exc}"
            ) from exc
        return cls(client, collection, dim)

    @classmethod
    def open(cls, client: QdrantClient, collection: str) -> ServerStore:
        try:
            info = client.get_collection(collection)
        except Exception as exc:
            raise IndexUnavailable(f"Qdrant: collection {collection!r} unavailable: {exc}") from exc
        vectors = info.config.params.vectors
        if not isinstance(vectors, models.VectorParams):
            raise IndexConfigError(
                f"collection {collection!r}: expected one unnamed dense vector (the default vector)"
            )
        return cls(client, collection, vectors.size)

    def create_payload_indexes(self, fields: Sequence[str]) -> None:
        for name in fields:
            self._client.create_payload_index(
                self.collection, name, field_schema=models.PayloadSchemaType.KEYWORD
            )

    def upsert(self, records: Sequence[IndexRecord]) -> None:
        points = []
        for r in records:
            vector: dict[str, Any] = {"": list(r.dense)}
            if r.sparse is not None:
                vector[BM25] = _sparse(r.sparse)
            points.append(models.PointStruct(id=r.id, vector=vector, payload=r.payload))
        if points:
            try:
                self._client.upsert(self.collection, points=points, wait=True)
            except Exception as exc:
                raise IndexUnavailable(f"Qdrant {self.collection!r}: upsert failed: {exc}") from exc

    def _query(self, **kwargs: Any) -> list[Hit]:
        try:
            result = self._client.query_points(self.collection, with_payload=True, **kwargs)
        except Exception as exc:
            raise IndexUnavailable(f"Qdrant {self.collection!r}: query failed: {exc}") from exc
        return hits_from_points(result.points)

    def query_dense(self, dense: Sequence[float], where: Where, limit: int) -> list[Hit]:
        return self._query(query=list(dense), query_filter=_filter(where), limit=limit)

    def query_sparse(self, sparse: SparseVec, where: Where, limit: int) -> list[Hit]:
        return self._query(
            query=_sparse(sparse), using=BM25, query_filter=_filter(where), limit=limit
        )

    def count(self, where: Where | None = None) -> int:
        try:
            return int(
                self._client.count(self.collection, count_filter=_filter(where), exact=True).count
            )
        except Exception as exc:
            raise IndexUnavailable(f"Qdrant {self.collection!r}: count failed: {exc}") from exc

    def scroll(self, where: Where | None = None) -> Iterator[IndexRecord]:
        offset: Any = None
        while True:
            records, offset = self._client.scroll(
                self.collection,
                scroll_filter=_filter(where),
                limit=256,
                offset=offset,
                with_payload=True,
                with_vectors=True,
            )
            for rec in sorted(records, key=lambda r: str(r.id)):
                yield record_from_point(rec.id, rec.vector, rec.payload)
            if offset is None:
                return

    def flush(self) -> None:
        """The server persists on its own; upserts above wait for acknowledgement."""

    def close(self) -> None:
        """The client is shared by the backend, which closes it."""


class ServerBackend:
    name = "server"

    def __init__(self, client: QdrantClient, prefix: str) -> None:
        self._client = client
        self.prefix = prefix

    def _name(self, gen_id: str) -> str:
        return f"{self.prefix}__{gen_id}"

    def create(self, gen_id: str, dim: int) -> IndexStore:
        return ServerStore.create(self._client, self._name(gen_id) + "__building", dim)

    def seal(self, gen_id: str, store: IndexStore) -> dict[str, Any]:
        store.flush()
        self._client.update_collection_aliases(
            change_aliases_operations=[
                models.CreateAliasOperation(
                    create_alias=models.CreateAlias(
                        collection_name=self._name(gen_id) + "__building",
                        alias_name=self._name(gen_id),
                    )
                )
            ]
        )
        return {}  # a server collection has no files Thoth can check; counts still are

    def open(self, gen_id: str, sealed: Mapping[str, Any] | None = None) -> IndexStore:
        aliases = {a.alias_name for a in self._client.get_aliases().aliases}
        if self._name(gen_id) not in aliases:
            raise IndexUnavailable(
                f"Qdrant: generation {gen_id} has no sealed collection "
                f"(alias {self._name(gen_id)!r} missing)"
            )
        return ServerStore.open(self._client, self._name(gen_id))

    def drop(self, gen_id: str) -> None:
        aliases = {a.alias_name for a in self._client.get_aliases().aliases}
        if self._name(gen_id) in aliases:
            self._client.update_collection_aliases(
                change_aliases_operations=[
                    models.DeleteAliasOperation(
                        delete_alias=models.DeleteAlias(alias_name=self._name(gen_id))
                    )
                ]
            )
        if self._client.collection_exists(self._name(gen_id) + "__building"):
            self._client.delete_collection(self._name(gen_id) + "__building")

    def sealed(self) -> list[str]:
        head = f"{self.prefix}__"
        return sorted(
            a.alias_name.removeprefix(head)
            for a in self._client.get_aliases().aliases
            if a.alias_name.startswith(head)
        )

    def discard_unsealed(self) -> list[str]:
        sealed = set(self.sealed())
        head = f"{self.prefix}__"
        removed = []
        for c in self._client.get_collections().collections:
            if c.name.startswith(head) and c.name.endswith("__building"):
                gen_id = c.name.removeprefix(head).removesuffix("__building")
                if gen_id not in sealed:
                    self._client.delete_collection(c.name)
                    removed.append(gen_id)
        return removed

    def close(self) -> None:
        self._client.close()
