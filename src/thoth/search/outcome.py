"""What a search returns: `available` (zero or more results) or `unavailable` (a stable code).
An empty list never stands for a fault."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# Stable codes for `unavailable`: one vocabulary, owned by the reader that produces them.
from thoth.index.reader import (
    EMBEDDER_FAILED,
    EMBEDDER_MISMATCH,
    EVIDENCE_NOT_PUBLISHED,
    GENERATION_NOT_ACTIVE,
    INDEX_UNAVAILABLE,
    LABELS_UNKNOWN,
    REVISION_MISMATCH,
    REVISION_NOT_ACTIVATED,
    REVISION_UNREADABLE,
    STATE_UNAVAILABLE,
)

MAX_MESSAGE = 300

__all__ = [
    "EMBEDDER_FAILED",
    "EMBEDDER_MISMATCH",
    "EVIDENCE_NOT_PUBLISHED",
    "GENERATION_NOT_ACTIVE",
    "INDEX_UNAVAILABLE",
    "LABELS_UNKNOWN",
    "MAX_MESSAGE",
    "REVISION_MISMATCH",
    "REVISION_NOT_ACTIVATED",
    "REVISION_UNREADABLE",
    "STATE_UNAVAILABLE",
    "EvidenceResult",
    "EvidenceSearchContext",
    "EvidenceSearchOutcome",
    "EvidenceUnitView",
    "Provenance",
    "Receipt",
]


@dataclass(frozen=True)
class EvidenceSearchContext:
    """Context values join the query text; the fields named in `binding` become filters
    instead (and leave the text). `kinds` is always binding when given."""

    concepts: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    binding: frozenset[str] = frozenset()
    limit: int = 10


@dataclass(frozen=True)
class Provenance:
    source_file: str
    source_sha256: str
    supporting_excerpts: tuple[str, ...]


@dataclass(frozen=True)
class EvidenceResult:
    evidence_id: str
    kind: str
    title: str
    rank: int  # 1-based, after grouping fragments into units
    score: float  # fused score of the best fragment (thoth.index.fusion)
    excerpts: tuple[str, ...]  # best matching fragment texts, best first
    caveats: tuple[str, ...]
    provenance: Provenance
    document: str  # the full unit: path inside the workspace at `revision`
    revision: str
    citation: str
    # The tables and columns the unit names (schema linking lifts them).
    tables: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class EvidenceUnitView:
    """One published unit as a receipt's link opens it: the unit read from Git at the active
    generation's revision, with every fragment the generation indexed (in their order)."""

    evidence_id: str
    kind: str
    title: str
    body: str
    excerpts: tuple[str, ...]
    caveats: tuple[str, ...]
    provenance: Provenance
    document: str
    generation: str
    revision: str
    citation: str
    tables: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Receipt:
    """What a caller keeps: no text, only enough to find everything again."""

    stage: str | None
    purpose: str
    generation: str
    revision: str
    evidence_ids: tuple[str, ...]


@dataclass(frozen=True)
class EvidenceSearchOutcome:
    status: Literal["available", "unavailable"]
    purpose: str
    generation: str | None = None
    revision: str | None = None
    results: tuple[EvidenceResult, ...] = ()
    code: str | None = None
    message: str | None = None
    query_text: str | None = None
    receipt: Receipt | None = field(default=None)

    @classmethod
    def unavailable(cls, purpose: str, code: str, message: str, **kw: Any) -> EvidenceSearchOutcome:
        text = " ".join(message.split())
        if len(text) > MAX_MESSAGE:
            text = text[: MAX_MESSAGE - 3] + "..."
        return cls(status="unavailable", purpose=purpose, code=code, message=text, **kw)

    @property
    def available(self) -> bool:
        return self.status == "available"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
