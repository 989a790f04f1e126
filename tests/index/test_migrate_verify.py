"""thoth.index.migrate.verify_copy: a copy missing a record, holding another id, or ranking a
search differently is refused before any switch (two real Qdrant Edge shards)."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest

from thoth.index.base import IndexRecord, SparseVec
from thoth.index.edge import EdgeStore
from thoth.index.migrate import MigrationMismatch, copy_records, verify_copy

DIM = 4


def _records(n: int, seed: int = 7) -> list[IndexRecord]:
    rng = random.Random(seed)
    return [
        IndexRecord(
            str(uuid.UUID(int=i + 1)),
            [rng.uniform(-1, 1) for _ in range(DIM)],
            SparseVec(sorted(rng.sample(range(50), 3)), [1.0, 0.5, 0.25]),
            {"record_kind": "fragment" if i % 2 else "evidence_unit"},
        )
        for i in range(n)
    ]


def _store(path: Path, records: list[IndexRecord]) -> EdgeStore:
    store = EdgeStore.create(path, DIM)
    store.upsert(records)
    store.flush()
    return store


def test_an_exact_copy_verifies(tmp_path: Path) -> None:
    records = _records(30)
    source = _store(tmp_path / "a", records)
    target = EdgeStore.create(tmp_path / "b", DIM)
    assert copy_records(source, target, DIM, "test") == {"fragment": 15, "evidence_unit": 15}
    target.flush()
    verified = verify_copy(source, target, "test")
    assert verified.records == 30 and verified.dense_queries == 5 and verified.bm25_queries == 5


@pytest.mark.parametrize("fault", ["missing", "other id", "other vector", "other sparse"])
def test_a_copy_that_differs_is_refused(tmp_path: Path, fault: str) -> None:
    records = _records(30)
    source = _store(tmp_path / "a", records)
    copy = list(records)
    if fault == "missing":
        copy.pop(3)
    elif fault == "other id":
        copy[3] = IndexRecord(
            str(uuid.UUID(int=999)), copy[3].dense, copy[3].sparse, copy[3].payload
        )
    else:
        # The first sampled query is record 0: its own hit changes rank or score.
        r = copy[0]
        if fault == "other vector":
            copy[0] = IndexRecord(r.id, [-x for x in r.dense], r.sparse, r.payload)
        else:
            copy[0] = IndexRecord(r.id, r.dense, SparseVec([60, 61], [1.0, 1.0]), r.payload)
    target = _store(tmp_path / "b", copy)
    with pytest.raises(MigrationMismatch) as info:
        verify_copy(source, target, "test")
    assert info.value.code == "index_migration_mismatch"
