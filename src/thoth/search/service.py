"""The Evidence search contract (seed §10): `search(query, purpose, context)`.

The caller never sees collections, vector names or Qdrant syntax. Workspace, revision,
generation and purpose are always filters; kinds and the context fields the caller marks as
binding become filters too, never bonuses. Dense and BM25 receive the same rendered text and
are fused by `thoth.index.fusion.fuse` (the `[index]` fusion settings). Fragments come back
grouped into one result per unit, with provenance, citation and caveats resolved from the
workspace at the generation's revision.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from thoth.config import IndexSettings
from thoth.embed.base import Embedder
from thoth.errors import Problem, ThothError
from thoth.evidence.document import parse_unit
from thoth.evidence.model import PURPOSES, Unit, schema_names
from thoth.index.base import Fusion, Hit, Where
from thoth.index.fusion import fusion_from
from thoth.index.generations import IndexBackend
from thoth.index.reader import (
    REVISION_UNREADABLE,
    GenerationReader,
    Readable,
    StateView,
    Unreadable,
)
from thoth.index.records import RECORD_EVIDENCE, EvidencePayload, parse_payload
from thoth.search.outcome import (
    EvidenceResult,
    EvidenceSearchContext,
    EvidenceSearchOutcome,
    EvidenceUnitView,
    Provenance,
    Receipt,
)
from thoth.search.query import render_query

FRAGMENTS_PER_UNIT = 2
_BINDABLE = ("concepts", "tables", "columns")


class UnitNotFound(ThothError):
    """No unit with that id is published in the active generation."""

    code = "unit_not_found"


@dataclass(frozen=True)
class BranchRanks:
    """1-based rank of each unit in each branch (None when not in the top `depth`)."""

    fused: dict[str, int]
    dense: dict[str, int]
    bm25: dict[str, int]


def _evidence(hit: Hit) -> EvidencePayload:
    record = parse_payload(hit.payload, hit.id)
    if not isinstance(record, EvidencePayload):  # the filter keeps other kinds out
        raise Unreadable(
            REVISION_UNREADABLE, f"point {hit.id} is a {record.record_kind} record, not evidence"
        )
    return record


def _unit_ranks(hits: list[Hit]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for hit in hits:
        eid = _evidence(hit).evidence_id
        if eid not in ranks:
            ranks[eid] = len(ranks) + 1
    return ranks


class EvidenceSearch:
    def __init__(
        self,
        workspace: str,
        root: Path,
        state: StateView,
        backend: IndexBackend,
        embedder: Embedder,
        prefetch_limit: int = 50,
        fusion: Fusion | None = None,
    ) -> None:
        self.workspace = workspace
        self.root = root
        self._reader = GenerationReader(workspace, state, backend, embedder)
        self.prefetch_limit = prefetch_limit
        # None: the `[index]` defaults (dense, then one BM25 branch), as fuse() itself.
        self.fusion = fusion or fusion_from(IndexSettings())
        self._read_unit = lru_cache(maxsize=4096)(self._read_unit_uncached)

    # -- the contract ----------------------------------------------------------------

    def search(
        self,
        query: str,
        purpose: str,
        context: EvidenceSearchContext | None = None,
        *,
        generation: str | None = None,
        stage: str | None = None,
    ) -> EvidenceSearchOutcome:
        """`generation=None` searches the active generation and requires it to match the
        activated revision; an explicit generation (a candidate under evaluation) is searched
        as it is and is never visible otherwise."""
        context = context or EvidenceSearchContext()
        if purpose not in PURPOSES:
            raise ValueError(f"unknown purpose {purpose!r}; expected one of {', '.join(PURPOSES)}")
        text = self.query_text(query, context)  # raises EmptyQuestion for an empty question
        try:
            with self._reader.guard():
                gen = self._reader.evidence(generation)
                where = self._where(gen, purpose, context)
                vectors = self._reader.vectors(gen, text, degrade=False)
                assert vectors.dense is not None  # degrade=False: a failure raised
                hits = gen.store.query_hybrid(
                    vectors.dense,
                    vectors.sparse,
                    where,
                    limit=self.prefetch_limit,
                    prefetch_limit=self.prefetch_limit,
                    fusion=self.fusion,
                )
                results = self._group(hits, gen.revision, context.limit)
        except Unreadable as exc:
            return EvidenceSearchOutcome.unavailable(purpose, exc.code, str(exc), query_text=text)
        receipt = Receipt(
            stage=stage,
            purpose=purpose,
            generation=gen.id,
            revision=gen.revision,
            evidence_ids=tuple(r.evidence_id for r in results),
        )
        return EvidenceSearchOutcome(
            status="available",
            purpose=purpose,
            generation=gen.id,
            revision=gen.revision,
            results=tuple(results),
            query_text=text,
            receipt=receipt,
        )

    def unit(self, evidence_id: str) -> EvidenceUnitView:
        """The unit `evidence_id` as the active generation publishes it (what a receipt's
        link opens): its fragments from the index, the unit itself from Git at the
        generation's revision, as search results are made. UnitNotFound when the generation
        holds no fragment of it; Unreadable (its code) when nothing may be read."""
        with self._reader.guard():
            gen = self._reader.evidence(None)
            where: Where = {
                "workspace_id": self.workspace,
                "workspace_revision": gen.revision,
                "vector_generation": gen.id,
                "record_kind": RECORD_EVIDENCE,
                "evidence_id": evidence_id,
            }
            records = [_evidence(Hit(r.id, 0.0, r.payload)) for r in gen.store.scroll(where)]
        if not records:
            what = f"unit {evidence_id} is not published in generation {gen.id}"
            raise UnitNotFound(
                what,
                problems=[
                    Problem(
                        "",
                        what,
                        hint="a receipt's evidence_ids, or an Evidence search (`tht evidence "
                        "search`, POST /v1/evidence/search, the MCP tool evidence_search), "
                        "name the published ones",
                        code=UnitNotFound.code,
                    )
                ],
            )
        records.sort(key=lambda r: r.fragment_ordinal)
        unit_path = records[0].unit_path
        unit = self._read_unit(gen.revision, unit_path)
        return EvidenceUnitView(
            evidence_id=evidence_id,
            kind=unit.kind,
            title=unit.title,
            body=unit.body,
            excerpts=tuple(r.text for r in records),
            caveats=tuple(unit.caveats),
            provenance=_provenance(unit),
            document=f"evidence/{unit_path}",
            generation=gen.id,
            revision=gen.revision,
            citation=_citation(unit, unit_path, gen.revision),
            tables=schema_names(unit)[0],
            columns=schema_names(unit)[1],
        )

    def query_text(self, query: str, context: EvidenceSearchContext) -> str:
        return render_query(
            query,
            concepts=() if "concepts" in context.binding else context.concepts,
            tables=() if "tables" in context.binding else context.tables,
            columns=() if "columns" in context.binding else context.columns,
        )

    def branch_ranks(
        self,
        query: str,
        purpose: str,
        context: EvidenceSearchContext,
        generation: str,
        depth: int = 50,
    ) -> BranchRanks:
        """Unit ranks in the fused list and in each branch alone (for evaluation)."""
        with self._reader.guard():
            gen = self._reader.evidence(generation)
            where = self._where(gen, purpose, context)
            vectors = self._reader.vectors(gen, self.query_text(query, context), degrade=False)
            assert vectors.dense is not None  # degrade=False: a failure raised
            store, dense, sparse = gen.store, vectors.dense, vectors.sparse
            return BranchRanks(
                fused=_unit_ranks(
                    store.query_hybrid(dense, sparse, where, depth, depth, self.fusion)
                ),
                dense=_unit_ranks(store.query_dense(dense, where, depth)),
                bm25=_unit_ranks(store.query_sparse(sparse, where, depth)),
            )

    def close(self) -> None:
        self._reader.close()

    # -- steps -----------------------------------------------------------------------

    def _where(self, gen: Readable, purpose: str, context: EvidenceSearchContext) -> Where:
        where: dict[str, Any] = {
            "workspace_id": self.workspace,
            "workspace_revision": gen.revision,
            "vector_generation": gen.id,
            "record_kind": RECORD_EVIDENCE,
            "purposes": purpose,
        }
        if context.kinds:
            where["evidence_kind"] = list(context.kinds)
        for name in _BINDABLE:
            values = getattr(context, name)
            if name in context.binding and values:
                where[name] = list(values)
        return where

    def _group(self, hits: list[Hit], revision: str, limit: int) -> list[EvidenceResult]:
        order: list[str] = []
        best: dict[str, list[Hit]] = {}
        records: dict[str, EvidencePayload] = {}
        for hit in hits:
            records[hit.id] = _evidence(hit)
            eid = records[hit.id].evidence_id
            if eid not in best:
                order.append(eid)
                best[eid] = []
            if len(best[eid]) < FRAGMENTS_PER_UNIT:
                best[eid].append(hit)
        results = []
        for rank, eid in enumerate(order[:limit], start=1):
            top = best[eid][0]
            unit_path = records[top.id].unit_path
            unit = self._read_unit(revision, unit_path)
            results.append(
                EvidenceResult(
                    evidence_id=eid,
                    kind=unit.kind,
                    title=unit.title,
                    rank=rank,
                    score=top.score,
                    excerpts=tuple(records[h.id].text for h in best[eid]),
                    caveats=tuple(unit.caveats),
                    provenance=_provenance(unit),
                    document=f"evidence/{unit_path}",
                    revision=revision,
                    citation=_citation(unit, unit_path, revision),
                    tables=schema_names(unit)[0],
                    columns=schema_names(unit)[1],
                )
            )
        return results

    def _read_unit_uncached(self, revision: str, unit_path: str) -> Unit:
        return read_unit_at(self.root, revision, unit_path)


def _provenance(unit: Unit) -> Provenance:
    return Provenance(
        unit.provenance.source_file,
        unit.provenance.source_sha256,
        tuple(unit.provenance.supporting_excerpts),
    )


def _citation(unit: Unit, unit_path: str, revision: str) -> str:
    return (
        f"{unit.title} — evidence/{unit_path} @ {revision[:12]} "
        f"(source: evidence/{unit.provenance.source_file})"
    )


def read_unit_at(root: Path, revision: str, unit_path: str) -> Unit:
    """The Evidence Unit `evidence/<unit_path>` as committed at `revision` (Unreadable when Git
    cannot give it or it does not parse)."""
    spec = f"{revision}:./evidence/{unit_path}"
    done = subprocess.run(
        ["git", "-C", str(root), "show", spec], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise Unreadable(
            REVISION_UNREADABLE,
            f"cannot read evidence/{unit_path} at revision {revision[:12]}: {done.stderr.strip()}",
        )
    parsed = parse_unit(done.stdout, f"evidence/{unit_path}@{revision[:12]}")
    if isinstance(parsed, list):
        raise Unreadable(REVISION_UNREADABLE, parsed[0].render())
    return parsed
