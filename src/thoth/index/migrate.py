"""Copying sealed generations and live collections from one index backend to another, record by
record (ids, dense and sparse vectors, payloads: nothing re-embedded), and verifying the copy
before anything reads it: counts per record kind, the full id sets, and a sample of searches
built from stored records (`tht index migrate`, orchestrated in thoth.workflow.index_migration).

A copy is never read until the caller switches the workspace to the target backend: a target
generation is dropped and rebuilt from scratch on every run, so what an interrupted run left
there is discarded, never activated.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from thoth.errors import ThothError
from thoth.index.base import Hit, IndexRecord, IndexStore, SparseVec
from thoth.index.generations import IndexBackend
from thoth.index.live import LiveCollection
from thoth.index.postgres import EXACT_BELOW, IndexDimensionMismatch

BATCH: Final = 256  # records per upsert
SAMPLES: Final = 5  # dense and BM25 queries per generation
TOP: Final = 10  # hits compared per query
# Above EXACT_BELOW points the dense branch of pgvector (and of a Qdrant server) is an HNSW
# search: docs/publishing-and-search.md gives overlap 0.988 at 100k; below, both are exact.
HNSW_MIN_OVERLAP: Final = 0.9
SCORE_DIGITS: Final = 4  # scores compared rounded: BM25 agrees across adapters within 1.3e-6


class MigrationMismatch(ThothError):
    """The copy on the target does not hold what the source holds: nothing was switched."""

    code = "index_migration_mismatch"


def kind_of(rec: IndexRecord) -> str:
    return str(rec.payload.get("record_kind", "?"))


def check_dim(records: Sequence[IndexRecord], dim: int, where: str) -> None:
    for rec in records:
        if len(rec.dense) != dim:
            raise IndexDimensionMismatch(
                f"{where}: record {rec.id} holds a {len(rec.dense)}-dimensional vector, the "
                f"configured embedder makes {dim}; nothing was switched -> rebuild the index "
                "with the configured embedder (`tht publish`) before migrating, or fix "
                "[embedding].dim"
            )


def _batches(records: Iterator[IndexRecord], size: int) -> Iterator[list[IndexRecord]]:
    batch: list[IndexRecord] = []
    for rec in records:
        batch.append(rec)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def copy_records(source: IndexStore, target: IndexStore, dim: int, where: str) -> Counter[str]:
    """Every record of `source` into `target`; returns how many per kind."""
    kinds: Counter[str] = Counter()
    for batch in _batches(source.scroll(), BATCH):
        check_dim(batch, dim, where)
        target.upsert(batch)
        kinds.update(kind_of(r) for r in batch)
    return kinds


def copy_generation(
    source: IndexBackend,
    target: IndexBackend,
    gen_id: str,
    sealed: dict[str, Any],
    dim: int,
    payload_indexes: Sequence[str],
) -> tuple[Counter[str], dict[str, Any]]:
    """Copy the sealed generation `gen_id` onto `target` and seal it there (whatever an earlier
    run left under that id on the target is dropped first). Returns the records per kind and
    what the target's `seal` returned."""
    src = source.open(gen_id, sealed)
    try:
        target.drop(gen_id)
        dst = target.create(gen_id, dim)
        try:
            dst.create_payload_indexes(payload_indexes)
            kinds = copy_records(src, dst, dim, f"generation {gen_id}")
        except BaseException:
            dst.close()
            raise
        return kinds, target.seal(gen_id, dst)
    finally:
        src.close()


def copy_live(
    source: LiveCollection, target: LiveCollection, dim: int, payload_indexes: Sequence[str]
) -> Counter[str]:
    """Copy a live collection with its metadata (dropped on the target first)."""
    with source.locked(exclusive=False):
        meta = source.meta()
        src = source.open()
        try:
            with target.locked(exclusive=True):
                target.drop()
                target.create(dim, payload_indexes, meta)
                dst = target.open()
                try:
                    kinds = copy_records(src, dst, dim, source.where)
                    dst.flush()
                finally:
                    dst.close()
        finally:
            src.close()
    return kinds


# ---------------------------------------------------------------------- verification


@dataclass(frozen=True)
class Verified:
    records: int
    kinds: dict[str, int]
    dense_queries: int
    bm25_queries: int


def _ids_by_kind(store: IndexStore) -> tuple[dict[str, set[str]], list[IndexRecord]]:
    ids: dict[str, set[str]] = {}
    records: list[IndexRecord] = []
    for rec in store.scroll():
        ids.setdefault(kind_of(rec), set()).add(rec.id)
        records.append(rec)
    return ids, records


def _samples(records: list[IndexRecord]) -> list[IndexRecord]:
    if not records:
        return []
    step = max(1, len(records) // SAMPLES)
    return records[::step][:SAMPLES]


def _ranking(hits: list[Hit]) -> list[str]:
    """Ids by (score rounded, id), the hits tied with the last one left out: two adapters may
    cut a tie at the list's end differently."""
    if not hits:
        return []
    last = round(hits[-1].score, SCORE_DIGITS)
    kept = [h for h in hits if round(h.score, SCORE_DIGITS) != last] if len(hits) == TOP else hits
    return [h.id for h in sorted(kept, key=lambda h: (-round(h.score, SCORE_DIGITS), h.id))]


def verify_copy(source: IndexStore, target: IndexStore, where: str) -> Verified:
    """Counts per kind, the full id sets, then SAMPLES dense and SAMPLES BM25 queries made of
    stored records: BM25 the same ids in the same order; dense the same too up to EXACT_BELOW
    points (both exact), at least HNSW_MIN_OVERLAP of the top ids above."""
    src_ids, records = _ids_by_kind(source)
    dst_ids, _ = _ids_by_kind(target)
    src_counts = {k: len(v) for k, v in sorted(src_ids.items())}
    dst_counts = {k: len(v) for k, v in sorted(dst_ids.items())}
    if src_counts != dst_counts or src_ids != dst_ids:
        raise MigrationMismatch(
            f"{where}: the target holds {dst_counts} records per kind, the source {src_counts}"
            + ("" if src_counts != dst_counts else " (other ids)")
            + "; nothing was switched -> run `tht index migrate` again"
        )
    dense_n = bm25_n = 0
    for rec in _samples(records):
        src_hits = source.query_dense(rec.dense, {}, TOP)
        dst_hits = target.query_dense(rec.dense, {}, TOP)
        a, b = _ranking(src_hits), _ranking(dst_hits)
        if len(records) < EXACT_BELOW:
            same = a == b
        else:
            overlap = len({h.id for h in src_hits} & {h.id for h in dst_hits})
            same = overlap >= HNSW_MIN_OVERLAP * max(1, len(src_hits))
        if not same:
            raise MigrationMismatch(
                f"{where}: a dense search for record {rec.id} ranks {b} on the target, {a} on "
                "the source; nothing was switched -> report this as a bug"
            )
        dense_n += 1
        sparse = rec.sparse or SparseVec([], [])
        if not sparse.indices:
            continue
        a = _ranking(source.query_sparse(sparse, {}, TOP))
        b = _ranking(target.query_sparse(sparse, {}, TOP))
        if a != b:
            raise MigrationMismatch(
                f"{where}: a BM25 search for record {rec.id} ranks {b} on the target, {a} on "
                "the source; nothing was switched -> report this as a bug"
            )
        bm25_n += 1
    return Verified(len(records), src_counts, dense_n, bm25_n)
