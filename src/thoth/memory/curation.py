"""Curating the registry: retire a memory, merge memories that say the same thing, and list
every memory with its state, history, provenance and the sessions that used it.

Each verb is a typed function with pydantic input and output, so the CLI, HTTP and MCP
boundaries call the same thing. A verb writes, in this order, the registry line (append-only:
who, when, why; checked against the whole registry under its exclusive lock) and then the
index (the retired or merged-away memories' points removed). The two are not one transaction,
as with promotion: when the index step fails the registry line stays, CurationIncomplete says
so, and `tht memory reconcile` removes the points (the index holds exactly the active
memories). Until then F2 already leaves them out: recall checks every hit against the
registry's state.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from thoth.embed.base import Embedder
from thoth.errors import ThothError
from thoth.index.base import IndexUnavailable
from thoth.memory.index import MemoryIndex
from thoth.memory.markers import adopted_memory
from thoth.memory.registry import (
    MemoryState,
    MergeEvent,
    Registry,
    RegistryState,
    RetireEvent,
)
from thoth.session import LedgerCorrupted, SessionDamaged, SessionStore
from thoth.storage import utc_now


class CurationIncomplete(ThothError):
    """The registry line was written, but the index still holds the memory's point."""

    code = "curation_incomplete"


class RetireRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_id: str
    why: str = Field(min_length=1)
    by: str = Field(min_length=1)


class MergeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    keep: str
    drop: tuple[str, ...] = Field(min_length=1)
    why: str = Field(min_length=1)
    by: str = Field(min_length=1)


class CurationResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: Literal[True] = True
    action: Literal["retired", "merged"]
    memory_id: str  # the retired memory, or the one kept
    dropped: tuple[str, ...] = ()
    at: str
    by: str
    why: str
    removed_from_index: int  # points removed (0 when there were none to remove)


def retire(request: RetireRequest, *, registry: Registry, index: MemoryIndex) -> CurationResult:
    event = RetireEvent(at=utc_now(), by=request.by, why=request.why, memory_id=request.memory_id)
    registry.curate(event)
    removed = _unindex(index, [request.memory_id], f"retired {request.memory_id}")
    return CurationResult(
        action="retired",
        memory_id=request.memory_id,
        at=event.at,
        by=event.by,
        why=event.why,
        removed_from_index=removed,
    )


def merge(request: MergeRequest, *, registry: Registry, index: MemoryIndex) -> CurationResult:
    event = MergeEvent(
        at=utc_now(), by=request.by, why=request.why, keep=request.keep, dropped=request.drop
    )
    registry.curate(event)
    what = f"merged {', '.join(request.drop)} into {request.keep}"
    removed = _unindex(index, request.drop, what)
    return CurationResult(
        action="merged",
        memory_id=request.keep,
        dropped=request.drop,
        at=event.at,
        by=event.by,
        why=event.why,
        removed_from_index=removed,
    )


def _unindex(index: MemoryIndex, memory_ids: tuple[str, ...] | list[str], what: str) -> int:
    try:
        return index.delete(memory_ids)
    except IndexUnavailable as exc:
        raise CurationIncomplete(
            f"{what} in the registry, but their points are still in the memory index ({exc}); "
            "F2 already leaves them out -> once the index works, run `tht memory reconcile` "
            "to remove them"
        ) from exc


# ---------------------------------------------------------------------- list


class HistoryItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    action: Literal["retired", "merged"]
    at: str
    by: str
    why: str
    keep: str | None = None  # merges: the memory kept
    dropped: tuple[str, ...] = ()


class SourceItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    memory_id: str
    session_id: str
    decision_seq: int


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    session_id: str
    seq: int  # the clarification that adopted it


class MemoryListing(BaseModel):
    model_config = ConfigDict(frozen=True)

    memory_id: str
    state: MemoryState
    merged_into: str | None
    subject: str
    detail: str
    created_at: str
    sources: tuple[SourceItem, ...]
    history: tuple[HistoryItem, ...]
    used_in: tuple[Usage, ...]


class MergeSuggestion(BaseModel):
    model_config = ConfigDict(frozen=True)

    keep: str
    drop: str
    similarity: float


class ListResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: Literal[True] = True
    memories: tuple[MemoryListing, ...]
    merge_suggestions: tuple[MergeSuggestion, ...]
    unreadable_sessions: tuple[str, ...]  # sessions whose usage could not be read


def history_items(state: RegistryState, memory_id: str) -> tuple[HistoryItem, ...]:
    return tuple(
        HistoryItem(action="retired", at=e.at, by=e.by, why=e.why)
        if isinstance(e, RetireEvent)
        else HistoryItem(
            action="merged", at=e.at, by=e.by, why=e.why, keep=e.keep, dropped=e.dropped
        )
        for e in state.history(memory_id)
    )


def usages(sessions: SessionStore) -> tuple[dict[str, list[Usage]], list[str]]:
    """memory id -> the sessions that adopted it in F2; and the sessions that could not be
    read (listed, never skipped silently)."""
    used: dict[str, list[Usage]] = {}
    unreadable: list[str] = []
    for session in sessions.list():
        try:
            entries = session.entries()
        except (SessionDamaged, LedgerCorrupted):
            unreadable.append(session.id)
            continue
        for entry in entries:
            memory_id = adopted_memory(entry)
            if memory_id is not None:
                used.setdefault(memory_id, []).append(Usage(session_id=session.id, seq=entry.seq))
    return used, unreadable


def list_memories(
    *,
    registry: Registry,
    sessions: SessionStore,
    suggestions: tuple[MergeSuggestion, ...] = (),
) -> ListResult:
    """Every memory with its state, history, provenance and use; `suggestions` are the
    near-duplicate pairs the caller looked up (`near_duplicate_pairs`)."""
    state = registry.state()
    used, unreadable = usages(sessions)
    into = state.merged_into
    return ListResult(
        memories=tuple(
            MemoryListing(
                memory_id=r.id,
                state=state.state(r.id),
                merged_into=into.get(r.id),
                subject=r.subject,
                detail=r.detail,
                created_at=r.created_at,
                sources=tuple(
                    SourceItem(
                        memory_id=s.memory_id, session_id=s.session_id, decision_seq=s.decision_seq
                    )
                    for s in state.sources(r.id)
                ),
                history=history_items(state, r.id),
                used_in=tuple(used.get(r.id, [])),
            )
            for r in state.records
        ),
        merge_suggestions=suggestions,
        unreadable_sessions=tuple(unreadable),
    )


def listing(
    *,
    registry: Registry,
    sessions: SessionStore,
    index: MemoryIndex,
    embedder: Embedder | None,
    threshold: float,
) -> ListResult:
    """`tht memory list` (and GET /v1/memories): every memory, with the near-duplicate pairs
    to merge when an `embedder` is given (None: none looked up)."""
    pairs = (
        near_duplicate_pairs(registry=registry, index=index, embedder=embedder, threshold=threshold)
        if embedder is not None
        else ()
    )
    return list_memories(registry=registry, sessions=sessions, suggestions=pairs)


def near_duplicate_pairs(
    *, registry: Registry, index: MemoryIndex, embedder: Embedder, threshold: float
) -> tuple[MergeSuggestion, ...]:
    """Pairs of active memories whose stored vectors are at least `threshold` cosine-similar
    (the check F8 runs on a candidate), each offered once: keep the older, drop the newer.
    Read from the index's vectors: nothing is embedded again."""
    active = {r.id for r in registry.active()}
    if len(active) < 2 or not index.exists():
        return ()
    _, points = index.points()
    mine = [p for p in points if str(p.payload.get("memory_id")) in active]
    neighbours = index.similar([p.dense for p in mine], 4, embedder_identity=embedder.identity)
    pairs: dict[tuple[str, str], float] = {}
    for point, hits in zip(mine, neighbours, strict=True):
        me = str(point.payload.get("memory_id"))
        for hit in hits:
            if hit.memory_id == me or hit.memory_id not in active or hit.score < threshold:
                continue
            keep, drop = sorted((me, hit.memory_id), key=_order)
            pairs[(keep, drop)] = max(pairs.get((keep, drop), 0.0), round(hit.score, 4))
    return tuple(
        MergeSuggestion(keep=k, drop=d, similarity=s) for (k, d), s in sorted(pairs.items())
    )


def _order(memory_id: str) -> int:
    return int(memory_id.split("-", 1)[1])
