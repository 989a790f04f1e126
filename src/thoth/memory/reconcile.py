"""`tht memory reconcile`: find and repair drift between the registry, the memory index and the
sessions' `memory_promoted` markers.

Promotion writes registry -> index -> marker without a transaction across the three (seed 2,
"Limiti e rischi residui"), so a failure can leave:

- a memory in the registry but not in the index (or indexed with other content): index it;
- a point in the index with no registry record, or of a memory retired or merged away (a
  `tht memory retire` or `merge` that stopped after its registry line): remove it (the
  registry is canonical and the index holds only the memories F2 may propose);
- a memory in the registry whose session has no `memory_promoted` marker for it: append the
  marker to that session's ledger.

A marker whose memory is missing from the registry cannot be repaired from here (the registry
would need a new id for it): it is reported as a problem, as is a session that cannot be read.
A second run after a successful one finds nothing to do.

With `rebuild=True` the index is first deleted and then rebuilt from the registry: the way out
after the embedder or the BM25 language changed, or the shard was damaged.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from thoth.embed.base import Embedder, EmbedderError
from thoth.errors import Problem, ThothError
from thoth.memory.index import MemoryEmbeddingFailed, MemoryIndex
from thoth.memory.markers import PROMOTED, PROMOTION_STAGE, decision_lock, marker_target
from thoth.memory.registry import MemoryRecord, Registry, RegistryState
from thoth.session import SessionDamaged, SessionNotFound, SessionStore, memory_markers
from thoth.session.session import SESSION_ID_RE

RepairAction = Literal["indexed", "removed_from_index", "marker_added"]
_RESTORE: Final = "restore registry.jsonl from a backup, then run `tht memory reconcile` again"


@dataclass(frozen=True)
class Repair:
    action: RepairAction
    memory_id: str
    session_id: str | None = None
    seq: int | None = None  # the promoted clarification
    detail: str = ""


@dataclass(frozen=True)
class ReconcileReport:
    repairs: tuple[Repair, ...]
    problems: tuple[Problem, ...]  # drift found and not repaired
    rebuilt: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "rebuilt": self.rebuilt,
            "repairs": [asdict(r) for r in self.repairs],
            "problems": [p.as_dict() for p in self.problems],
        }


def reconcile(
    *,
    sessions: SessionStore,
    registry: Registry,
    index: MemoryIndex,
    embedder: Embedder,
    rebuild: bool = False,
) -> ReconcileReport:
    """Repair what can be repaired, report the rest. A damaged registry or index raises
    (RegistryCorrupted, IndexUnavailable): nothing can be compared against it."""
    state = registry.state()
    records = list(state.records)
    if rebuild:
        index.drop()
    repairs = reconcile_index(state.active(), index, embedder, state=state)
    problems: list[Problem] = []
    repairs += _reconcile_markers(records, sessions, problems)
    return ReconcileReport(tuple(repairs), tuple(problems), rebuilt=rebuild)


def reconcile_index(
    records: list[MemoryRecord],
    index: MemoryIndex,
    embedder: Embedder,
    *,
    state: RegistryState | None = None,
) -> list[Repair]:
    """Make the index hold exactly `records` (the registry's active memories) with their
    current content; `state` names why a removed point is not wanted."""
    indexed = index.ids()
    stale = [r for r in records if indexed.get(r.id) != r.content_sha256]
    try:
        results = index.upsert_many(stale, embedder)
    except EmbedderError as exc:
        raise MemoryEmbeddingFailed.during(
            f"memory reconcile: indexing {len(stale)} memories", embedder, exc
        ) from exc
    repairs = [
        Repair(
            "indexed",
            r.id,
            r.session_id,
            r.decision_seq,
            "content changed" if r.id in indexed else "was not in the index",
        )
        for r in stale
        if results[r.id] == "indexed"
    ]
    known = {r.id for r in records}
    orphans = sorted(set(indexed) - known)
    index.delete(orphans)
    repairs += [Repair("removed_from_index", m, detail=_why_unwanted(m, state)) for m in orphans]
    return repairs


def _why_unwanted(memory_id: str, state: RegistryState | None) -> str:
    status = state.state(memory_id) if state and memory_id in state.by_id else None
    if status == "retired":
        return "retired"
    if status == "merged" and state is not None:
        return f"merged into {state.merged_into[memory_id]}"
    return "indexed but not in the registry"


def _session_ids(sessions: SessionStore, records: list[MemoryRecord]) -> list[str]:
    """Sessions on disk and sessions the registry names (a missing one is a problem too)."""
    ids = {r.session_id for r in records}
    if sessions.sessions_dir.is_dir():
        ids |= {
            p.name
            for p in sessions.sessions_dir.iterdir()
            if p.is_dir() and SESSION_ID_RE.fullmatch(p.name)
        }
    return sorted(ids)


def _reconcile_markers(
    records: list[MemoryRecord], sessions: SessionStore, problems: list[Problem]
) -> list[Repair]:
    by_session: dict[str, list[MemoryRecord]] = defaultdict(list)
    for r in records:
        by_session[r.session_id].append(r)
    repairs: list[Repair] = []
    for session_id in _session_ids(sessions, records):
        where = f"session {session_id}"
        mine = sorted(by_session.get(session_id, []), key=lambda r: r.decision_seq)
        try:
            session = sessions.open(session_id)
        except SessionNotFound as exc:
            names = ", ".join(r.id for r in mine)
            problems.append(
                Problem(
                    where,
                    f"memories {names} come from this session, which is not in "
                    f"{sessions.sessions_dir} ({exc})",
                    hint="restore the session directory; the memories stay searchable meanwhile",
                    code="session_missing",
                )
            )
            continue
        except SessionDamaged as exc:
            problems.append(Problem(where, f"cannot be read: {exc}", code="unreadable"))
            continue
        # Every session is checked even when one fails: its problem is listed, not skipped.
        try:
            with decision_lock(session):
                marked = {
                    target: m
                    for m in memory_markers(session.entries())
                    if m.type == PROMOTED and (target := marker_target(m)) is not None
                }
                for r in mine:
                    if r.decision_seq in marked:
                        continue
                    session.append(
                        PROMOTION_STAGE,
                        PROMOTED,
                        subject=r.id,
                        detail=f"seq:{r.decision_seq}",
                        rationale=(
                            f"written by `tht memory reconcile`: {r.id} was saved but its "
                            "marker was missing"
                        ),
                        refs=r.decision_seq,
                    )
                    repairs.append(
                        Repair("marker_added", r.id, session_id, r.decision_seq, "marker missing")
                    )
        except (OSError, ThothError) as exc:
            problems.append(
                Problem(where, f"cannot check or repair its markers: {exc}", code="unreadable")
            )
            continue
        saved = {r.decision_seq for r in mine}
        for seq, marker in sorted(marked.items()):
            if seq not in saved:
                problems.append(
                    Problem(
                        where,
                        f"marker seq {marker.seq} says seq {seq} was promoted as "
                        f"{marker.subject}, but the registry has no memory for this session's "
                        f"seq {seq}",
                        hint=_RESTORE,
                        code="memory_missing",
                    )
                )
    return repairs
