"""F2, memory recall: propose memories promoted in other sessions; never apply one by itself.

`search_memories` embeds the question, searches memory points only, resolves every hit in the
registry (the canonical store) and keeps the hits that are there and are clarified concepts,
minus the memories this session has already decided, best first. `choose` is the reviewer
taking one: it records a new `concept_clarified` in stage `memory` whose rationale cites the
`mem-XXXX` it came from. Leaving a memory out records nothing: it means "not now", and the
memory is proposed again if F2 is reopened. Nothing here deletes or edits a memory. A memory
retired or merged away (`thoth.memory.curation`) is never proposed, even while its point is
still in the index; a session that adopted a memory merged into another has decided that
other one too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from thoth.embed.base import Embedder, EmbedderError
from thoth.errors import Problem, ThothError
from thoth.index.base import IndexUnavailable
from thoth.memory.core import REUSABLE_TYPES
from thoth.memory.index import MemoryEmbeddingFailed, MemoryIndex
from thoth.memory.markers import (
    LEGACY_REJECTED,
    RECALL_STAGE,
    cited_memory_ids,
    decision_lock,
)
from thoth.memory.registry import MemoryRecord, MemoryRefused, Registry
from thoth.session import Entry, Session, effective_decisions, memory_markers

# Extra hits fetched beyond `limit` so that dropped hits do not leave the list short.
FETCH_MARGIN: Final = 20

DropReason = Literal["missing", "not_reusable", "retired", "merged"]


class MemoryNotFound(ThothError):
    """No memory with that id in the registry."""


@dataclass(frozen=True)
class Proposal:
    memory_id: str
    score: float  # the index's fused score (thoth.index.fusion): higher is more similar
    subject: str
    detail: str
    rationale: str
    question_context: str
    session_id: str  # where the memory came from
    decision_seq: int


@dataclass(frozen=True)
class Dropped:
    """A hit the index returned that is not proposed, and why (the index and the registry
    have drifted apart, or a retire or merge stopped before its index step: `tht memory
    reconcile` repairs it)."""

    memory_id: str
    reason: DropReason


@dataclass(frozen=True)
class RecallResult:
    session_id: str
    question: str
    proposals: tuple[Proposal, ...]
    excluded: tuple[str, ...]  # hits already decided in this session, best first
    dropped: tuple[Dropped, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "session": self.session_id,
            "question": self.question,
            "results": [asdict(p) for p in self.proposals],
            "excluded": list(self.excluded),
            "dropped": [asdict(d) for d in self.dropped],
        }


@dataclass(frozen=True)
class ChooseResult:
    memory_id: str
    entry: Entry
    created: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "memory_id": self.memory_id,
            "seq": self.entry.seq,
            "created": self.created,
        }


def decided_memory_ids(
    session_id: str,
    entries: Iterable[Entry],
    records: Iterable[MemoryRecord],
    merged_into: Mapping[str, str] | None = None,
) -> set[str]:
    """Memories this session has decided: adopted ones (a standing concept_clarified citing
    `mem-XXXX` in its rationale), ones a legacy `memory_rejected` marker names, and the ones
    promoted from this session itself; with `merged_into`, the memories those were merged
    into as well (the same concept)."""
    listed = list(entries)
    decided: set[str] = set()
    for entry in effective_decisions(listed):
        if entry.type == "concept_clarified":
            decided |= cited_memory_ids(entry.rationale)
    for marker in memory_markers(listed):
        if marker.type == LEGACY_REJECTED:
            decided |= cited_memory_ids(marker.subject, marker.detail, marker.rationale)
    decided |= {r.id for r in records if r.session_id == session_id}
    into = merged_into or {}
    for memory_id in list(decided):
        while memory_id in into:
            memory_id = into[memory_id]
            decided.add(memory_id)
    return decided


def search_memories(
    question: str,
    session: Session,
    *,
    registry: Registry,
    index: MemoryIndex,
    embedder: Embedder,
    limit: int = 5,
) -> RecallResult:
    if not question.strip():
        raise ThothError(f"session {session.id}: the memory search question is blank")
    if limit < 1:
        raise ThothError(f"session {session.id}: limit must be at least 1, not {limit}")
    entries = session.entries()
    state = registry.state()
    records = state.by_id
    decided = decided_memory_ids(session.id, entries, records.values(), state.merged_into)
    empty = RecallResult(session.id, question, (), (), ())
    if not index.exists():
        if not records:
            return empty  # nothing was ever promoted: an honest empty answer
        raise IndexUnavailable(
            f"memory index {index.where} does not exist but the registry holds {len(records)} "
            "memories -> run `tht memory reconcile` to index them"
        )
    try:
        vector = [float(x) for x in embedder.embed_query(question)[0]]
    except EmbedderError as exc:
        raise MemoryEmbeddingFailed.during(
            f"session {session.id}: memory search", embedder, exc
        ) from exc
    hits = index.search(
        vector,
        index.query_sparse(question),
        limit + len(decided) + FETCH_MARGIN,
        embedder_identity=embedder.identity,
    )
    proposals: list[Proposal] = []
    excluded: list[str] = []
    dropped: list[Dropped] = []
    seen: set[str] = set()
    for hit in hits:
        if hit.memory_id in seen:
            continue
        seen.add(hit.memory_id)
        record = records.get(hit.memory_id)
        # Payload type first: a legacy table point is never reusable, whatever id it carries.
        if hit.payload.get("type") not in REUSABLE_TYPES:
            dropped.append(Dropped(hit.memory_id, "not_reusable"))
        elif record is None:
            dropped.append(Dropped(hit.memory_id, "missing"))
        elif record.type not in REUSABLE_TYPES:  # defence in depth; the registry refuses these
            dropped.append(Dropped(hit.memory_id, "not_reusable"))
        elif (status := state.state(record.id)) != "active":
            dropped.append(Dropped(hit.memory_id, "retired" if status == "retired" else "merged"))
        elif record.id in decided:
            excluded.append(record.id)
        elif len(proposals) < limit:
            proposals.append(
                Proposal(
                    memory_id=record.id,
                    score=round(hit.score, 6),
                    subject=record.subject,
                    detail=record.detail,
                    rationale=record.rationale,
                    question_context=record.question_context,
                    session_id=record.session_id,
                    decision_seq=record.decision_seq,
                )
            )
    return RecallResult(session.id, question, tuple(proposals), tuple(excluded), tuple(dropped))


def choose(session: Session, memory_id: str, *, registry: Registry) -> ChooseResult:
    """The reviewer applies memory `memory_id` to this session. Idempotent while the earlier
    choice stands."""
    state = registry.state()
    record = state.by_id.get(memory_id)
    if record is None:
        raise MemoryNotFound(
            f"session {session.id}: memory {memory_id} is not in the registry {registry.path} "
            "-> pick an id from `tht memory search`"
        )
    where = f"session {session.id} memory {memory_id}"
    if record.type not in REUSABLE_TYPES:  # defence in depth; the registry refuses these
        raise MemoryRefused(
            f"{where}: not applied",
            [Problem(where, f"{memory_id} is a {record.type}, not a clarified concept")],
        )
    if state.state(memory_id) != "active":
        into = state.merged_into.get(memory_id)
        raise MemoryRefused(
            f"{where}: not applied",
            [
                Problem(
                    where,
                    f"{memory_id} is {'merged into ' + into if into else 'retired'}",
                    hint=f"choose {into} instead" if into else "a retired memory is not used",
                    code="not_active",
                )
            ],
            code="not_active",
        )
    if record.session_id == session.id:
        raise MemoryRefused(
            f"{where}: not applied",
            [
                Problem(
                    where,
                    f"{memory_id} was promoted from this session (seq {record.decision_seq})",
                    hint="the clarification is already part of this session",
                )
            ],
        )
    with decision_lock(session):
        for entry in effective_decisions(session.entries()):
            if entry.type == "concept_clarified" and memory_id in cited_memory_ids(entry.rationale):
                return ChooseResult(memory_id, entry, False)
        entry = session.append(
            RECALL_STAGE,
            "concept_clarified",
            subject=record.subject,
            detail=record.detail,
            rationale=(
                f"adopted from memory {memory_id} (session {record.session_id}, seq "
                f"{record.decision_seq}): {record.rationale}"
            ),
        )
    return ChooseResult(memory_id, entry, True)
