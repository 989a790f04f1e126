"""The memory index: one live collection per workspace (`thoth.index.live`), a searchable
projection of the memory registry (the registry stays canonical; `thoth.memory.reconcile`
rebuilds this from it).

On the configured index backend (`thoth.workflow.stores` opens it):

    Qdrant Edge   <workspace>/.thoth/index/<workspace>.memory/   the shard (+ thoth_memory.json)
                  <workspace>/.thoth/index/<workspace>.memory.lock   the lock every access takes
    Qdrant server collection `<prefix>__memory`, shared by every host serving the workspace

Same layout as an Evidence generation: a default dense vector (cosine) and the sparse `bm25`
vector with IDF. Unlike a generation it is written after creation, one promotion at a time:
writers hold the collection's exclusive lock, readers its shared lock (see thoth.index.live
for why readers lock on Edge; the server needs none). The metadata written at creation names
the embedder and the BM25 settings; every open checks them.

Point id: uuid5 of `memory:mem-XXXX`. Every fault (missing, unreadable, built with another
embedder, failing) raises IndexUnavailable; a search never turns a fault into an empty result.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from thoth.embed.base import Embedder
from thoth.errors import ThothError
from thoth.index import records
from thoth.index.base import Hit, IndexRecord, IndexUnavailable, SparseVec
from thoth.index.bm25 import Bm25Encoder
from thoth.index.live import EdgeLiveCollection, LiveCollection, LiveStore
from thoth.index.records import RECORD_MEMORY, MemoryPayload, payload_indexes
from thoth.memory.core import REUSABLE_TYPES
from thoth.memory.registry import MemoryRecord

RECORD_KIND: Final = RECORD_MEMORY
COLLECTION: Final = "memory"  # the live collection's name (Edge: thoth_memory.json holds meta)
PAYLOAD_INDEXES: Final = payload_indexes(RECORD_MEMORY)
# BM25 document lengths are relative to this. A live index cannot recompute it from the corpus
# on every promotion (every stored vector would change), so it is fixed: about the length in
# words of a memory's canonical text (type, subject, detail, rationale, question).
BM25_AVG_LEN: Final = 60.0
EMBED_BATCH: Final = 32
_FORMAT: Final = 1
_REBUILD: Final = "run `tht memory reconcile --rebuild` to rebuild it from the registry"

UpsertResult = Literal["indexed", "unchanged"]
# What searches read: memory points of a reusable type. Points of older record types
# (`table_promoted`… of the earlier system) are skipped by type in the query itself, so they
# take no rank in either branch and the fused ranking is that of the memories alone.
_REUSABLE_POINTS: Final = {"record_kind": RECORD_KIND, "type": sorted(REUSABLE_TYPES)}


def memory_ref(memory_id: str) -> str:
    return f"memory:{memory_id}"


def point_id(memory_id: str) -> str:
    return records.point_id(RECORD_MEMORY, memory_ref(memory_id))


def memory_payload(record: MemoryRecord) -> dict[str, Any]:
    return MemoryPayload(
        ref=memory_ref(record.id),
        memory_id=record.id,
        type=record.type,
        subject=record.subject,
        detail=record.detail,
        rationale=record.rationale,
        tables=tuple(record.tables),
        concepts=tuple(record.concepts),
        content_sha256=record.content_sha256,
        session_id=record.session_id,
        decision_seq=record.decision_seq,
    ).to_payload()


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


class MemoryIndex:
    def __init__(self, collection: LiveCollection | Path, *, language: str) -> None:
        """`collection`: the live collection, or the directory of a Qdrant Edge shard."""
        self.collection = (
            EdgeLiveCollection(collection, COLLECTION)
            if isinstance(collection, Path)
            else collection
        )
        self.bm25 = Bm25Encoder(language, BM25_AVG_LEN)

    @property
    def where(self) -> str:
        """The shard directory or the server collection, for messages."""
        return self.collection.where

    def exists(self) -> bool:
        """Whether the collection was ever created (creation is complete or absent)."""
        try:
            return self.collection.exists()
        except IndexUnavailable as exc:
            raise self._unavailable(str(exc), "check [index] in thoth.toml and the server") from exc

    def query_sparse(self, text: str) -> SparseVec:
        return self.bm25.query(text)

    def close(self) -> None:
        self.collection.close()

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
        with self._writing(embedder) as store:
            stored = {
                str(p.get("memory_id")): p.get("content_sha256")
                for p in store.payloads([point_id(r.id) for r in records])
            }
            stale = [r for r in records if stored.get(r.id) != r.content_sha256]
            for start in range(0, len(stale), EMBED_BATCH):
                batch = stale[start : start + EMBED_BATCH]
                texts = [r.text() for r in batch]
                vectors = embedder.embed_passages(texts)
                store.upsert(
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
                store.flush()
        fresh = {r.id for r in stale}
        return {r.id: "indexed" if r.id in fresh else "unchanged" for r in records}

    def copy_points(self, points: Sequence[IndexRecord], meta: dict[str, Any]) -> int:
        """Write points read from another memory index built the same way (same embedder,
        dimension and BM25 settings, said by `meta`, that index's metadata): ids, vectors and
        payloads as they are, nothing re-embedded. Returns how many were written."""
        if not points:
            return 0
        if meta.get("bm25") != self.bm25.config():
            raise self._unavailable(
                f"the points to copy were built with BM25 settings {meta.get('bm25')}, but this "
                f"workspace uses {self.bm25.config()}",
                _REBUILD,
            )
        with self._locked(exclusive=True):
            if not self.exists():
                self._create(int(meta["dim"]), meta)
            store = self._open(str(meta["embedder"]))
            try:
                if store.dim != int(meta["dim"]):
                    raise self._unavailable(
                        f"dimension {store.dim}, but the copied points have {meta['dim']}"
                    )
                for start in range(0, len(points), EMBED_BATCH):
                    store.upsert(points[start : start + EMBED_BATCH])
                store.flush()
            finally:
                store.close()
        return len(points)

    def delete(self, memory_ids: Iterable[str]) -> int:
        """Remove these memories' points; returns how many of them were there."""
        wanted = sorted(set(memory_ids))
        if not wanted or not self.exists():
            return 0
        with self._locked(exclusive=True):
            store = self._open(None)
            try:
                ids = [point_id(m) for m in wanted]
                present = len(store.payloads(ids))
                if present:
                    store.delete(ids)
                    store.flush()
                return present
            finally:
                store.close()

    def drop(self) -> bool:
        """Delete the whole collection (a rebuild follows); False when there was none."""
        with self._locked(exclusive=True):
            try:
                return self.collection.drop()
            except IndexUnavailable as exc:
                raise self._unavailable(str(exc), "check the path or server") from exc

    # -------------------------------------------------------------- reads

    def search(
        self,
        query_vec: Sequence[float],
        sparse: SparseVec,
        limit: int,
        *,
        embedder_identity: str,
    ) -> list[MemoryHit]:
        """Hybrid search (dense + bm25, fused by `thoth.index.fusion.fuse` with the `[index]`
        defaults) over memory points, best first."""
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        with self._reading(embedder_identity) as store:
            hits = store.query_hybrid(query_vec, sparse, _REUSABLE_POINTS, limit, max(50, limit))
        return [MemoryHit.from_hit(h) for h in hits]

    def similar(
        self, vecs: Sequence[Sequence[float]], limit: int, *, embedder_identity: str
    ) -> list[list[MemoryHit]]:
        """Dense neighbours of each passage vector (one open for all); the score is the cosine
        similarity."""
        with self._reading(embedder_identity) as store:
            return [
                [MemoryHit.from_hit(h) for h in store.query_dense(vec, _REUSABLE_POINTS, limit)]
                for vec in vecs
            ]

    def ids(self) -> dict[str, str]:
        """memory_id -> content_sha256 of every memory point. An index never created holds
        nothing (an empty mapping); a damaged one raises IndexUnavailable."""
        if not self.exists():
            return {}
        with self._locked(exclusive=False):
            store = self._open(None)
            try:
                return {
                    str(p.get("memory_id")): str(p.get("content_sha256"))
                    for p in store.all_payloads()
                    if p.get("record_kind") == RECORD_KIND
                }
            finally:
                store.close()

    def points(self) -> tuple[dict[str, Any], list[IndexRecord]]:
        """The metadata and every memory point with its vectors (a migration copies them)."""
        with self._reading(None) as store:
            meta = self._checked_meta(None)
            return meta, list(store.scroll({"record_kind": RECORD_KIND}))

    # -------------------------------------------------------------- internals

    def _unavailable(self, cause: str, hint: str = _REBUILD) -> IndexUnavailable:
        return IndexUnavailable(f"memory index {self.where}: {cause} -> {hint}")

    @contextmanager
    def _locked(self, *, exclusive: bool) -> Iterator[None]:
        with ExitStack() as stack:
            try:
                stack.enter_context(self.collection.locked(exclusive=exclusive))
            except IndexUnavailable as exc:
                raise self._unavailable(
                    str(exc), "check the directory and its permissions"
                ) from exc
            yield

    @contextmanager
    def _reading(self, embedder_identity: str | None) -> Iterator[LiveStore]:
        if not self.exists():
            raise self._unavailable(
                "nothing has been indexed here yet",
                "run `tht memory reconcile` to index the registry's memories",
            )
        with self._locked(exclusive=False):
            store = self._open(embedder_identity)
            try:
                yield store
            finally:
                store.close()

    @contextmanager
    def _writing(self, embedder: Embedder) -> Iterator[LiveStore]:
        with self._locked(exclusive=True):
            if not self.exists():
                self._create(embedder.dim, self._meta(embedder))
            store = self._open(embedder.identity)
            try:
                yield store
            finally:
                store.close()

    def _meta(self, embedder: Embedder) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "record_kind": RECORD_KIND,
            "embedder": embedder.identity,
            "dim": embedder.dim,
            "bm25": self.bm25.config(),
        }

    def _create(self, dim: int, meta: dict[str, Any]) -> None:
        """Create the empty collection (caller holds the exclusive lock)."""
        try:
            self.collection.create(dim, PAYLOAD_INDEXES, meta)
        except IndexUnavailable as exc:
            raise self._unavailable(
                str(exc), "check disk space, permissions or the server"
            ) from exc

    def _checked_meta(self, embedder_identity: str | None) -> dict[str, Any]:
        try:
            meta = self.collection.meta()
            built_with, bm25 = meta["embedder"], meta["bm25"]
        except (IndexUnavailable, KeyError) as exc:
            raise self._unavailable(f"unreadable metadata ({exc})") from exc
        if embedder_identity is not None and built_with != embedder_identity:
            raise self._unavailable(
                f"built with embedder {built_with!r}, but the configured one is "
                f"{embedder_identity!r}: their vectors cannot be compared"
            )
        if bm25 != self.bm25.config():
            raise self._unavailable(
                f"built with BM25 settings {bm25}, but this workspace uses {self.bm25.config()}"
            )
        return meta

    def _open(self, embedder_identity: str | None) -> LiveStore:
        """Open the collection and check it was built the way this index reads and writes
        it; `embedder_identity=None` skips the embedder check (reads that use no vector)."""
        self._checked_meta(embedder_identity)
        try:
            return self.collection.open()
        except IndexUnavailable as exc:
            raise self._unavailable(str(exc)) from exc
