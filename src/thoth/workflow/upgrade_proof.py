"""The upgrade proof (seed §8, "conteggi, ID campione e ricerche dense dimostrano che Schema e
Memory non cambiano durante l'upgrade"): when a publication changes the Evidence pipeline
version, the records it does not rebuild must come through unchanged.

Before the build, a snapshot of each kind it carries (schema_table, schema_column, documents,
wiki: every kind of the active generation but Evidence) and of the memory index: the count, a
fixed sample of ids with a fingerprint of each (payload and vector), and a fixed set of dense
searches (the vectors of the first sampled records, top TOP ids each). After sealing, the same
is read from the candidate and the memory index again and compared; any difference fails the
proof, and the candidate is not activated. The report names every difference.

A new generation, not an upgrade in place, is what makes this check possible: the "before"
stays readable and untouched until the "after" has been proven against it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from thoth.index.base import IndexRecord, IndexStore
from thoth.index.records import RECORD_EVIDENCE
from thoth.memory.index import RECORD_KIND as MEMORY_KIND
from thoth.memory.index import MemoryIndex

SAMPLE: Final = 20  # ids compared per kind
SEARCHES: Final = 5  # dense searches per kind
TOP: Final = 10
Search = Callable[[Sequence[float]], list[str]]
# Restamped on every carried record that has it (thoth.index.build.carry): not content.
_RESTAMPED: Final = frozenset({"vector_generation"})


def fingerprint(record: IndexRecord) -> str:
    payload = {k: v for k, v in record.payload.items() if k not in _RESTAMPED}
    text = json.dumps(payload, sort_keys=True, default=str) + "|"
    text += ",".join(f"{x:.6g}" for x in record.dense)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class KindSnapshot:
    kind: str
    where: str  # "generation G" or the memory index
    count: int
    sample: dict[str, str]  # id -> fingerprint
    queries: list[tuple[str, list[float]]]  # (id whose vector is the query, vector)
    results: list[list[str]]  # ids found, best first, per query


@dataclass
class KindProof:
    kind: str
    count_before: int
    count_after: int
    sample_ids: list[str]
    searches: int
    differences: list[str] = field(default_factory=list)


@dataclass
class UpgradeProof:
    from_version: int | None
    to_version: int
    kinds: list[KindProof] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not any(k.differences for k in self.kinds)

    @property
    def differences(self) -> list[str]:
        return [d for k in self.kinds for d in k.differences]

    def as_dict(self) -> dict[str, Any]:
        return {
            "from_version": self.from_version,
            "to_version": self.to_version,
            "passed": self.passed,
            "kinds": [asdict(k) for k in self.kinds],
        }


def _snapshot(
    kind: str, where: str, records: Sequence[IndexRecord], search: Search
) -> KindSnapshot:
    ordered = sorted(records, key=lambda r: r.id)
    step = max(1, len(ordered) // SAMPLE)
    sampled = ordered[::step][:SAMPLE]
    queries = [(r.id, list(r.dense)) for r in sampled[:SEARCHES]]
    return KindSnapshot(
        kind=kind,
        where=where,
        count=len(ordered),
        sample={r.id: fingerprint(r) for r in sampled},
        queries=queries,
        results=[search(vec) for _, vec in queries],
    )


def _store_search(store: IndexStore, kind: str) -> Search:
    return lambda vec: [h.id for h in store.query_dense(vec, {"record_kind": kind}, TOP)]


def _kinds(records: Iterable[IndexRecord]) -> dict[str, list[IndexRecord]]:
    out: dict[str, list[IndexRecord]] = {}
    for rec in records:
        kind = str(rec.payload.get("record_kind") or "")
        if kind != RECORD_EVIDENCE:
            out.setdefault(kind, []).append(rec)
    return out


def generation_snapshots(store: IndexStore, gen_id: str) -> list[KindSnapshot]:
    """Every carried kind of a generation."""
    return [
        _snapshot(kind, f"generation {gen_id}", recs, _store_search(store, kind))
        for kind, recs in sorted(_kinds(store.scroll()).items())
    ]


def memory_snapshot(index: MemoryIndex) -> KindSnapshot:
    keyed, search = _memory_records(index)
    return _snapshot(MEMORY_KIND, index.where, keyed, search)


def compare(
    before: KindSnapshot, after: Sequence[IndexRecord], search: Search, where: str
) -> KindProof:
    """`after`: the kind's records as they are now; `search`: a dense search on them."""
    now = {r.id: r for r in after}
    proof = KindProof(
        kind=before.kind,
        count_before=before.count,
        count_after=len(now),
        sample_ids=sorted(before.sample),
        searches=len(before.queries),
    )
    label = "memory" if before.kind == MEMORY_KIND else before.kind
    if before.count != len(now):
        proof.differences.append(f"{label}: {before.count} records before, {len(now)} in {where}")
    for rid, fp in sorted(before.sample.items()):
        rec = now.get(rid)
        if rec is None:
            proof.differences.append(f"{label} {rid}: missing from {where}")
        elif fingerprint(rec) != fp:
            proof.differences.append(f"{label} {rid}: payload or vector changed in {where}")
    for (qid, vec), expected in zip(before.queries, before.results, strict=True):
        got = search(vec)
        if got != expected:
            proof.differences.append(
                f"{label}: the dense search from {qid} returns {got[:3]}… in {where}, "
                f"not {expected[:3]}…"
            )
    return proof


def prove_generation(
    before: list[KindSnapshot], store: IndexStore, gen_id: str, proof: UpgradeProof
) -> None:
    kinds = _kinds(store.scroll())
    seen = {b.kind for b in before}
    for snap in before:
        proof.kinds.append(
            compare(
                snap,
                kinds.get(snap.kind, []),
                _store_search(store, snap.kind),
                f"generation {gen_id}",
            )
        )
    for kind in sorted(set(kinds) - seen):
        proof.kinds.append(
            KindProof(
                kind=kind,
                count_before=0,
                count_after=len(kinds[kind]),
                sample_ids=[],
                searches=0,
                differences=[f"{kind}: {len(kinds[kind])} records appeared in generation {gen_id}"],
            )
        )


def prove_memory(before: KindSnapshot, index: MemoryIndex, proof: UpgradeProof) -> None:
    keyed, search = _memory_records(index)
    proof.kinds.append(compare(before, keyed, search, f"the memory index {index.where}"))


def _memory_records(index: MemoryIndex) -> tuple[list[IndexRecord], Search]:
    """The memory points keyed by memory id (as searches return them), and a dense search."""
    if not index.exists():
        return [], lambda _vec: []
    meta, points = index.points()
    identity = str(meta.get("embedder"))

    def search(vec: Sequence[float]) -> list[str]:
        return [h.memory_id for h in index.similar([vec], TOP, embedder_identity=identity)[0]]

    keyed = [
        IndexRecord(str(p.payload.get("memory_id")), p.dense, p.sparse, p.payload) for p in points
    ]
    return keyed, search
