"""The memory index: one live Qdrant Edge shard per workspace, a searchable projection of the
memory registry (the registry stays canonical; `thoth.memory.reconcile` rebuilds this from it).

    <workspace>/.thoth/index/<workspace>/memory/        the shard (+ thoth_memory.json)
    <workspace>/.thoth/index/<workspace>/memory.lock    the lock every access takes

Same layout as an Evidence generation: a default dense vector (cosine) and the sparse `bm25`
vector with IDF, created by `EdgeStore.create`, WAL-less so several processes may open it.
Unlike a generation it is written after creation, one promotion at a time, so:

- writers take the lock exclusively, open the shard, write, flush and close;
- readers take it shared and open the shard per search, so they see every flushed write.
  Readers lock too because opening and closing a Qdrant Edge shard rewrites some of its files
  (configuration, segment metadata): measured, a reader opening the shard during a write made
  the writer's flush fail with a torn tracker journal.

A new shard is built in a hidden directory beside it and renamed into place, so the index is
complete or absent, never a half-created directory that every later open would trip over.

Point id: uuid5 of `memory:mem-XXXX`. Every fault (missing, unreadable, built with another
embedder, failing) raises IndexUnavailable; a search never turns a fault into an empty result.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import qdrant_edge as qe

from thoth.embed.base import Embedder
from thoth.errors import ThothError
from thoth.index.base import Hit, IndexRecord, IndexUnavailable, SparseVec
from thoth.index.bm25 import Bm25Encoder
from thoth.index.edge import EdgeStore
from thoth.memory.registry import MemoryRecord
from thoth.session.ledger import file_lock, fsync_dir

RECORD_KIND: Final = "memory"
META_FILE: Final = "thoth_memory.json"
PAYLOAD_INDEXES: Final = ("record_kind", "memory_id", "content_sha256", "session_id", "type")
# BM25 document lengths are relative to this. A live index cannot recompute it from the corpus
# on every promotion (every stored vector would change), so it is fixed: about the length in
# words of a memory's canonical text (type, subject, detail, rationale, question).
BM25_AVG_LEN: Final = 60.0
EMBED_BATCH: Final = 32
_FORMAT: Final = 1
_POINTS: Final = uuid.UUID("3b9d7c52-8e0a-4f61-a2d4-5c7e9f1b0a86")  # namespace of point ids
_REBUILD: Final = "run `tht memory reconcile --rebuild` to rebuild it from the registry"

UpsertResult = Literal["indexed", "unchanged"]


def memory_ref(memory_id: str) -> str:
    return f"memory:{memory_id}"


def point_id(memory_id: str) -> str:
    return str(uuid.uuid5(_POINTS, memory_ref(memory_id)))


def memory_payload(record: MemoryRecord) -> dict[str, Any]:
    return {
        "record_kind": RECORD_KIND,
        "ref": memory_ref(record.id),
        "memory_id": record.id,
        "type": record.type,
        "subject": record.subject,
        "detail": record.detail,
        "rationale": record.rationale,
        "tables": list(record.tables),
        "concepts": list(record.concepts),
        "content_sha256": record.content_sha256,
        "session_id": record.session_id,
        "decision_seq": record.decision_seq,
    }


@dataclass(frozen=True)
class MemoryHit:
    memory_id: str  # "" when a point carries no memory_id (damage the caller reports)
    score: float
    payload: dict[str, Any]

    @classmethod
    def from_hit(cls, hit: Hit) -> MemoryHit:
        return cls(str(hit.payload.get("memory_id") or ""), hit.score, hit.payload)


class MemoryEmbeddingFailed(ThothError):
    """The embedder failed while memories were being indexed, searched or compared."""

    @classmethod
    def during(cls, what: str, embedder: Embedder, exc: Exception) -> MemoryEmbeddingFailed:
        return cls(
            f"{what}: embedder {embedder.identity} failed ({exc}) -> check the [embedding] "
            "settings and that the embedding server is up, then retry"
        )


class _Shard(EdgeStore):
    """EdgeStore plus the two operations a live index needs and a sealed generation never
    does: read payloads by id and delete points."""

    def payloads(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        try:
            records = self._shard.retrieve(list(ids), with_payload=True, with_vector=False)
        except Exception as exc:  # the engine's errors have no common type: wrap, keep the cause
            raise IndexUnavailable(f"{self.path}: retrieve failed: {exc}") from exc
        return [dict(r.payload or {}) for r in records]

    def all_payloads(self) -> Iterator[dict[str, Any]]:
        """Like scroll(), without the vectors reconcile does not need."""
        offset: Any = None
        while True:
            try:
                records, offset = self._shard.scroll(
                    qe.ScrollRequest(
                        offset=offset, limit=1024, with_payload=True, with_vector=False
                    )
                )
            except Exception as exc:  # see payloads()
                raise IndexUnavailable(f"{self.path}: scroll failed: {exc}") from exc
            for rec in records:
                yield dict(rec.payload or {})
            if offset is None:
                return

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._run(qe.UpdateOperation.delete_points(list(ids)))


class MemoryIndex:
    def __init__(self, path: Path, *, language: str) -> None:
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")
        self._creating = path.with_name(f".{path.name}.creating")
        self.bm25 = Bm25Encoder(language, BM25_AVG_LEN)

    def exists(self) -> bool:
        """Whether a shard was ever created here (creation renames a complete one into place)."""
        return self.path.is_dir()

    def query_sparse(self, text: str) -> SparseVec:
        return self.bm25.query(text)

    # -------------------------------------------------------------- writes

    def upsert(self, record: MemoryRecord, embedder: Embedder) -> UpsertResult:
        """Index one memory. "unchanged" when a point with the same content hash is already
        there: nothing is embedded and nothing written."""
        return self.upsert_many([record], embedder)[record.id]

    def upsert_many(
        self, records: Sequence[MemoryRecord], embedder: Embedder
    ) -> dict[str, UpsertResult]:
        """Index several memories under one lock and one open (reconcile, benchmarks)."""
        if not records:
            return {}
        with self._writing(embedder) as shard:
            stored = {
                str(p.get("memory_id")): p.get("content_sha256")
                for p in shard.payloads([point_id(r.id) for r in records])
            }
            stale = [r for r in records if stored.get(r.id) != r.content_sha256]
            for start in range(0, len(stale), EMBED_BATCH):
                batch = stale[start : start + EMBED_BATCH]
                texts = [r.text() for r in batch]
                vectors = embedder.embed_passages(texts)
                shard.upsert(
                    [
                        IndexRecord(
                            id=point_id(r.id),
                            dense=[float(x) for x in vec],
                            sparse=self.bm25.document(text),
                            payload=memory_payload(r),
                        )
                        for r, text, vec in zip(batch, texts, vectors, strict=True)
                    ]
                )
            if stale:
                shard.flush()
        fresh = {r.id for r in stale}
        return {r.id: "indexed" if r.id in fresh else "unchanged" for r in records}

    def delete(self, memory_ids: Iterable[str]) -> int:
        """Remove these memories' points; returns how many of them were there."""
        wanted = sorted(set(memory_ids))
        if not wanted or not self.exists():
            return 0
        with self._locked(exclusive=True):
            shard = self._open(None)
            try:
                ids = [point_id(m) for m in wanted]
                present = len(shard.payloads(ids))
                if present:
                    shard.delete(ids)
                    shard.flush()
                return present
            finally:
                shard.close()

    def drop(self) -> bool:
        """Delete the whole shard (a rebuild follows); False when there was none."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked(exclusive=True):
            existed = self.exists()
            for path in (self.path, self._creating):
                if path.exists():
                    shutil.rmtree(path)
            return existed

    # -------------------------------------------------------------- reads

    def search(
        self,
        query_vec: Sequence[float],
        sparse: SparseVec,
        limit: int,
        *,
        embedder_identity: str,
    ) -> list[MemoryHit]:
        """Hybrid search (dense + bm25, RRF in the engine) over memory points, best first."""
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        with self._reading(embedder_identity) as shard:
            hits = shard.query_hybrid(
                query_vec, sparse, {"record_kind": RECORD_KIND}, limit, max(50, limit)
            )
        return [MemoryHit.from_hit(h) for h in hits]

    def similar(
        self, vecs: Sequence[Sequence[float]], limit: int, *, embedder_identity: str
    ) -> list[list[MemoryHit]]:
        """Dense neighbours of each passage vector (one open for all); the score is the cosine
        similarity."""
        with self._reading(embedder_identity) as shard:
            return [
                [
                    MemoryHit.from_hit(h)
                    for h in shard.query_dense(vec, {"record_kind": RECORD_KIND}, limit)
                ]
                for vec in vecs
            ]

    def ids(self) -> dict[str, str]:
        """memory_id -> content_sha256 of every memory point. An index never created holds
        nothing (an empty mapping); a damaged one raises IndexUnavailable."""
        if not self.exists():
            return {}
        with self._locked(exclusive=False):
            shard = self._open(None)
            try:
                return {
                    str(p.get("memory_id")): str(p.get("content_sha256"))
                    for p in shard.all_payloads()
                    if p.get("record_kind") == RECORD_KIND
                }
            finally:
                shard.close()

    # -------------------------------------------------------------- internals

    def _unavailable(self, cause: str, hint: str = _REBUILD) -> IndexUnavailable:
        return IndexUnavailable(f"memory index {self.path}: {cause} -> {hint}")

    @contextmanager
    def _locked(self, *, exclusive: bool) -> Iterator[None]:
        with ExitStack() as stack:
            try:
                stack.enter_context(file_lock(self.lock_path, exclusive=exclusive))
            except OSError as exc:
                raise self._unavailable(
                    f"cannot lock {self.lock_path} ({exc})",
                    "check the directory and its permissions",
                ) from exc
            yield

    @contextmanager
    def _reading(self, embedder_identity: str) -> Iterator[_Shard]:
        if not self.exists():
            raise self._unavailable(
                "no shard here: nothing has been indexed yet",
                "run `tht memory reconcile` to index the registry's memories",
            )
        with self._locked(exclusive=False):
            shard = self._open(embedder_identity)
            try:
                yield shard
            finally:
                shard.close()

    @contextmanager
    def _writing(self, embedder: Embedder) -> Iterator[_Shard]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._unavailable(
                f"cannot create {self.path.parent} ({exc})", "check the path and its permissions"
            ) from exc
        with self._locked(exclusive=True):
            if not self.exists():
                self._create(embedder)
            shard = self._open(embedder.identity)
            try:
                yield shard
            finally:
                shard.close()

    def _meta(self, embedder: Embedder) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "record_kind": RECORD_KIND,
            "embedder": embedder.identity,
            "dim": embedder.dim,
            "bm25": self.bm25.config(),
        }

    def _create(self, embedder: Embedder) -> None:
        """Build an empty shard aside and rename it in (caller holds the exclusive lock)."""
        try:
            if self._creating.exists():
                shutil.rmtree(self._creating)  # an interrupted creation; we hold the lock
            store = EdgeStore.create(self._creating, embedder.dim)
            try:
                store.create_payload_indexes(PAYLOAD_INDEXES)
                store.flush()
            finally:
                store.close()
            meta = self._creating / META_FILE
            with meta.open("w", encoding="utf-8") as f:
                f.write(json.dumps(self._meta(embedder), indent=2) + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(self._creating, self.path)
            fsync_dir(self.path.parent)
        except OSError as exc:
            raise self._unavailable(
                f"cannot create the shard ({exc})", "check disk space and permissions"
            ) from exc

    def _open(self, embedder_identity: str | None) -> _Shard:
        """Open the shard and check it was built the way this index reads and writes it;
        `embedder_identity=None` skips the embedder check (reads that use no vector)."""
        meta_path = self.path / META_FILE
        try:
            meta = json.loads(meta_path.read_text("utf-8"))
            built_with, bm25 = meta["embedder"], meta["bm25"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise self._unavailable(f"unreadable {meta_path} ({exc})") from exc
        if embedder_identity is not None and built_with != embedder_identity:
            raise self._unavailable(
                f"built with embedder {built_with!r}, but the configured one is "
                f"{embedder_identity!r}: their vectors cannot be compared"
            )
        if bm25 != self.bm25.config():
            raise self._unavailable(
                f"built with BM25 settings {bm25}, but this workspace uses {self.bm25.config()}"
            )
        try:
            store = _Shard.open(self.path)
        except IndexUnavailable as exc:
            raise self._unavailable(str(exc)) from exc
        assert isinstance(store, _Shard)  # EdgeStore.open builds `cls`
        return store
