"""Qdrant Edge adapter: the Qdrant engine in-process, one shard directory per collection.

Shards are created with the write-ahead log disabled. That is deliberate: Qdrant Edge locks a
shard's WAL, so a shard with a WAL can be opened by one handle only; without it any number of
processes can read a shard at once. Thoth writes a shard once (a generation), flushes it,
seals it, and never writes it again — see thoth.index.generations.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from thoth.index.base import (
    BM25,
    Hit,
    IndexConfigError,
    IndexRecord,
    IndexUnavailable,
    SparseVec,
    Where,
    hits_from_points,
    record_from_point,
    where_conditions,
)
from thoth.index.fusion import FusedBranches

_CONFIG_FILE = "edge_config.json"


def _condition(key: str, value: str | int | list[str]) -> qe.FieldCondition:
    match = qe.MatchAny(value) if isinstance(value, list) else qe.MatchValue(value)
    return qe.FieldCondition(key=key, match=match)


def _filter(where: Where | None) -> qe.Filter | None:
    if not where:
        return None
    must, must_not = where_conditions(where)
    return qe.Filter(
        must=[_condition(k, v) for k, v in must],
        must_not=[_condition(k, v) for k, v in must_not] or None,
    )


def _sparse(vec: SparseVec) -> qe.SparseVector:
    return qe.SparseVector(indices=list(vec.indices), values=list(vec.values))


class EdgeStore(FusedBranches):
    def __init__(self, shard: Any, path: Path, dim: int, *, private: bool = False) -> None:
        self._shard = shard
        self.path = path
        self.dim = dim
        self._private = private  # a reader's private copy: removed on close

    @classmethod
    def create(cls, path: Path, dim: int) -> EdgeStore:
        if path.exists() and any(path.iterdir()):
            raise IndexConfigError(f"{path}: a shard already exists there; refusing to overwrite")
        config = qe.EdgeConfig(
            vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine),
            sparse_vectors={BM25: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            wal_enabled=False,
        )
        try:
            shard = qe.EdgeShard.create(str(path), config)
        except Exception as exc:
            raise IndexUnavailable(f"{path}: cannot create the Qdrant Edge shard: {exc}") from exc
        return cls(shard, path, dim)

    @classmethod
    def open(cls, path: Path, *, private: bool = False) -> EdgeStore:
        """The shard at `path`. The engine writes into a shard it opens: a sealed generation is
        opened only through a private copy (`private=True`: the copy is removed on close)."""
        config_path = path / _CONFIG_FILE
        if not config_path.is_file():
            raise IndexUnavailable(
                f"{path}: index directory missing or incomplete (no {_CONFIG_FILE})"
            )
        try:
            config = json.loads(config_path.read_text("utf-8"))
            dim = int(config["vectors"][""]["size"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise IndexUnavailable(f"{path}: unreadable shard configuration: {exc}") from exc
        try:
            shard = qe.EdgeShard.load(str(path))
        except Exception as exc:
            raise IndexUnavailable(f"{path}: cannot open the Qdrant Edge shard: {exc}") from exc
        return cls(shard, path, dim, private=private)

    def _run(self, op: Any) -> None:
        try:
            self._shard.update(op)
        except Exception as exc:
            raise IndexUnavailable(f"{self.path}: update failed: {exc}") from exc

    def create_payload_indexes(self, fields: Sequence[str]) -> None:
        for name in fields:
            self._run(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword))

    def upsert(self, records: Sequence[IndexRecord]) -> None:
        points = []
        for r in records:
            vector: dict[str, Any] = {"": list(r.dense)}
            if r.sparse is not None:
                vector[BM25] = _sparse(r.sparse)
            points.append(qe.Point(r.id, vector, r.payload))
        if points:
            self._run(qe.UpdateOperation.upsert_points(points))

    def _query(self, request: Any) -> list[Hit]:
        try:
            return hits_from_points(self._shard.query(request))
        except Exception as exc:
            raise IndexUnavailable(f"{self.path}: query failed: {exc}") from exc

    def query_dense(self, dense: Sequence[float], where: Where, limit: int) -> list[Hit]:
        return self._query(
            qe.QueryRequest(
                limit=limit,
                query=qe.Query.Nearest(list(dense)),
                filter=_filter(where),
                with_payload=True,
            )
        )

    def query_sparse(self, sparse: SparseVec, where: Where, limit: int) -> list[Hit]:
        return self._query(
            qe.QueryRequest(
                limit=limit,
                query=qe.Query.Nearest(_sparse(sparse), using=BM25),
                filter=_filter(where),
                with_payload=True,
            )
        )

    def count(self, where: Where | None = None) -> int:
        try:
            return int(self._shard.count(qe.CountRequest(exact=True, filter=_filter(where))))
        except Exception as exc:
            raise IndexUnavailable(f"{self.path}: count failed: {exc}") from exc

    def scroll(self, where: Where | None = None) -> Iterator[IndexRecord]:
        offset: Any = None
        while True:
            try:
                records, offset = self._shard.scroll(
                    qe.ScrollRequest(
                        offset=offset,
                        limit=256,
                        filter=_filter(where),
                        with_payload=True,
                        with_vector=True,
                    )
                )
            except Exception as exc:
                raise IndexUnavailable(f"{self.path}: scroll failed: {exc}") from exc
            for rec in records:
                yield record_from_point(rec.id, rec.vector, rec.payload)
            if offset is None:
                return

    def flush(self) -> None:
        try:
            self._shard.flush()
        except Exception as exc:
            raise IndexUnavailable(f"{self.path}: flush failed: {exc}") from exc

    def close(self) -> None:
        try:
            self._shard.close()
        finally:
            if self._private:
                self._private = False
                shutil.rmtree(self.path, ignore_errors=True)  # our own copy; swept if left
