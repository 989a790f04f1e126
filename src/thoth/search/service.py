"""The Evidence search contract (seed §10): `search(query, purpose, context)`.

The caller never sees collections, vector names or Qdrant syntax. Workspace, revision,
generation and purpose are always filters; kinds and the context fields the caller marks as
binding become filters too, never bonuses. Dense and BM25 receive the same rendered text and
are fused by RRF inside Qdrant. Fragments come back grouped into one result per unit, with
provenance, citation and caveats resolved from the workspace at the generation's revision.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from thoth.embed.base import Embedder, EmbedderError
from thoth.errors import ThothError
from thoth.evidence.document import parse_unit
from thoth.evidence.model import PURPOSES, Unit
from thoth.index.base import Hit, IndexStore, IndexUnavailable, Where
from thoth.index.bm25 import Bm25Encoder
from thoth.index.generations import IndexBackend
from thoth.search.outcome import (
    EMBEDDER_FAILED,
    EMBEDDER_MISMATCH,
    GENERATION_NOT_ACTIVE,
    INDEX_UNAVAILABLE,
    REVISION_MISMATCH,
    REVISION_NOT_ACTIVATED,
    REVISION_UNREADABLE,
    STATE_UNAVAILABLE,
    EvidenceResult,
    EvidenceSearchContext,
    EvidenceSearchOutcome,
    Provenance,
    Receipt,
)
from thoth.search.query import render_query

RECORD_KIND = "evidence"
FRAGMENTS_PER_UNIT = 2
_BINDABLE = ("concepts", "tables", "columns")


class StateView(Protocol):
    """The two questions search asks the state store."""

    def active_revision(self, workspace: str) -> str | None: ...

    def active_generation(self, workspace: str) -> Any: ...

    def get_generation(self, gen_id: str) -> Any: ...


class _Unavailable(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class BranchRanks:
    """1-based rank of each unit in each branch (None when not in the top `depth`)."""

    fused: dict[str, int]
    dense: dict[str, int]
    bm25: dict[str, int]


def _unit_ranks(hits: list[Hit]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for hit in hits:
        eid = str(hit.payload.get("evidence_id"))
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
    ) -> None:
        self.workspace = workspace
        self.root = root
        self._state = state
        self._backend = backend
        self._embedder = embedder
        self.prefetch_limit = prefetch_limit
        self._stores: dict[str, IndexStore] = {}
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
            gen = self._generation(generation)
            store = self._store(gen.id)
            where = self._where(gen, purpose, context)
            dense, sparse_vec = self._vectors(text, gen)
            hits = store.query_hybrid(
                dense,
                sparse_vec,
                where,
                limit=self.prefetch_limit,
                prefetch_limit=self.prefetch_limit,
            )
            results = self._group(hits, gen.revision, context.limit)
        except _Unavailable as exc:
            return EvidenceSearchOutcome.unavailable(purpose, exc.code, str(exc), query_text=text)
        except IndexUnavailable as exc:
            # Drop the handle: the next search reopens (and reports again if still broken).
            for gen_id in list(self._stores):
                self._stores.pop(gen_id).close()
            return EvidenceSearchOutcome.unavailable(
                purpose, INDEX_UNAVAILABLE, str(exc), query_text=text
            )
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
        gen = self._generation(generation)
        store = self._store(gen.id)
        where = self._where(gen, purpose, context)
        dense, sparse_vec = self._vectors(self.query_text(query, context), gen)
        return BranchRanks(
            fused=_unit_ranks(store.query_hybrid(dense, sparse_vec, where, depth, depth)),
            dense=_unit_ranks(store.query_dense(dense, where, depth)),
            bm25=_unit_ranks(store.query_sparse(sparse_vec, where, depth)),
        )

    def close(self) -> None:
        for store in self._stores.values():
            store.close()
        self._stores.clear()

    # -- steps -----------------------------------------------------------------------

    def _generation(self, explicit: str | None) -> Any:
        try:
            if explicit is not None:
                gen = self._state.get_generation(explicit)
                if gen is None or gen.workspace != self.workspace:
                    raise _Unavailable(
                        GENERATION_NOT_ACTIVE,
                        f"generation {explicit} does not exist in workspace {self.workspace}",
                    )
                return gen
            revision = self._state.active_revision(self.workspace)
            if revision is None:
                raise _Unavailable(
                    REVISION_NOT_ACTIVATED,
                    f"workspace {self.workspace} has no activated revision -> "
                    "run `tht workspace activate`",
                )
            gen = self._state.active_generation(self.workspace)
        except ThothError as exc:
            raise _Unavailable(STATE_UNAVAILABLE, f"state store: {exc}") from exc
        if gen is None:
            raise _Unavailable(
                GENERATION_NOT_ACTIVE,
                f"workspace {self.workspace} has no active Evidence generation "
                "-> run `tht workspace preprocess evidence`",
            )
        if gen.revision != revision:
            raise _Unavailable(
                REVISION_MISMATCH,
                f"the active generation {gen.id} was built from revision "
                f"{gen.revision[:12]} but revision {revision[:12]} is activated; "
                "search stays unavailable until a generation for it is "
                "published (or the previous revision is reactivated)",
            )
        return gen

    def _store(self, gen_id: str) -> IndexStore:
        if gen_id not in self._stores:
            # Sealed generations are immutable: a handle stays valid for the process's life.
            self._stores[gen_id] = self._backend.open(gen_id)
        return self._stores[gen_id]

    def _where(self, gen: Any, purpose: str, context: EvidenceSearchContext) -> Where:
        where: dict[str, Any] = {
            "workspace_id": self.workspace,
            "workspace_revision": gen.revision,
            "vector_generation": gen.id,
            "record_kind": RECORD_KIND,
            "purposes": purpose,
        }
        if context.kinds:
            where["evidence_kind"] = list(context.kinds)
        for name in _BINDABLE:
            values = getattr(context, name)
            if name in context.binding and values:
                where[name] = list(values)
        return where

    def _vectors(self, text: str, gen: Any) -> tuple[list[float], Any]:
        config = gen.config or {}
        expected = config.get("embedder")
        if expected and expected != self._embedder.identity:
            raise _Unavailable(
                EMBEDDER_MISMATCH,
                f"generation {gen.id} was embedded with {expected}, this process "
                f"uses {self._embedder.identity}",
            )
        try:
            vector = self._embedder.embed_query(text)
        except EmbedderError as exc:
            raise _Unavailable(EMBEDDER_FAILED, f"{self._embedder.identity}: {exc}") from exc
        if vector.shape != (1, config.get("dim", self._embedder.dim)):
            raise _Unavailable(
                EMBEDDER_MISMATCH,
                f"{self._embedder.identity} returned shape {vector.shape}, the "
                f"generation expects dimension {config.get('dim')}",
            )
        bm25 = config.get("bm25") or {}
        encoder = _encoder(str(bm25.get("language", "italian")), float(bm25.get("avg_len", 1.0)))
        return [float(x) for x in vector[0]], encoder.query(text)

    def _group(self, hits: list[Hit], revision: str, limit: int) -> list[EvidenceResult]:
        order: list[str] = []
        best: dict[str, list[Hit]] = {}
        for hit in hits:
            eid = str(hit.payload.get("evidence_id"))
            if eid not in best:
                order.append(eid)
                best[eid] = []
            if len(best[eid]) < FRAGMENTS_PER_UNIT:
                best[eid].append(hit)
        results = []
        for rank, eid in enumerate(order[:limit], start=1):
            top = best[eid][0]
            unit_path = str(top.payload.get("unit_path"))
            unit = self._read_unit(revision, unit_path)
            results.append(
                EvidenceResult(
                    evidence_id=eid,
                    kind=unit.kind,
                    title=unit.title,
                    rank=rank,
                    score=top.score,
                    excerpts=tuple(str(h.payload.get("text", "")) for h in best[eid]),
                    caveats=tuple(unit.caveats),
                    provenance=Provenance(
                        unit.provenance.source_file,
                        unit.provenance.source_sha256,
                        tuple(unit.provenance.supporting_excerpts),
                    ),
                    document=f"evidence/{unit_path}",
                    revision=revision,
                    citation=f"{unit.title} — evidence/{unit_path} @ {revision[:12]} "
                    f"(source: evidence/{unit.provenance.source_file})",
                )
            )
        return results

    def _read_unit_uncached(self, revision: str, unit_path: str) -> Unit:
        spec = f"{revision}:./evidence/{unit_path}"
        done = subprocess.run(
            ["git", "-C", str(self.root), "show", spec], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise _Unavailable(
                REVISION_UNREADABLE,
                f"cannot read evidence/{unit_path} at revision {revision[:12]}: "
                f"{done.stderr.strip()}",
            )
        parsed = parse_unit(done.stdout, f"evidence/{unit_path}@{revision[:12]}")
        if isinstance(parsed, list):
            raise _Unavailable(REVISION_UNREADABLE, parsed[0].render())
        return parsed


_ENCODERS: dict[tuple[str, float], Bm25Encoder] = {}


def _encoder(language: str, avg_len: float) -> Bm25Encoder:
    """One encoder per configuration, reused across queries (building one loads stemmers)."""
    key = (language, avg_len)
    if key not in _ENCODERS:
        _ENCODERS[key] = Bm25Encoder(language, avg_len)
    return _ENCODERS[key]
