"""The "Memories" section of a session summary, projected from the ledger on every read.

Nothing here is stored: old sessions show the current layout and filters without any file
being rewritten. The projection:

- lists approved memories (standing `memory_promoted` markers) first, then declined ones
  (`memory_promotion_declined`, legacy `memory_rejected`);
- resolves each marker's `seq:N` (or refs) to the original clarification and shows that;
- hides markers whose original is not a clarified concept (legacy table memories);
- hides concepts whose subject is a table: one the session schema-linked (`table_promoted`)
  or one that looks like `fact_*` / `dim_*`;
- keeps table and column names inside the explanation: they are the concept's technical
  mapping, not a memory of their own.

- lists the memories the session adopted in F2, as they were chosen (the ledger's copy), with
  their state now: a memory retired or merged away since says so, the choice stays.

Hidden markers are listed (with the reason) in the JSON form, for audit; the Markdown form
shows what a reviewer reads.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from thoth.memory.core import REUSABLE_TYPES
from thoth.memory.markers import (
    LEGACY_REJECTED,
    PROMOTED,
    adopted_memory,
    cited_memory_ids,
    marker_target,
)
from thoth.memory.registry import Registry
from thoth.session import Entry, Session, effective_decisions, memory_markers

Status = Literal["approved", "declined"]
HideReason = Literal["unresolved", "not_a_concept", "schema_linked_table", "table_like_subject"]

_TABLE_LIKE: Final = re.compile(r"(?:\w+\.)*(?:fact|dim)_\w+")
_QUOTES: Final = "`\"'[] "


@dataclass(frozen=True)
class ProjectedMemory:
    status: Status
    seq: int  # the original clarification
    marker_seq: int
    marker_type: str
    subject: str
    detail: str
    rationale: str
    memory_id: str | None  # approved ones, when the registry was consulted and has it


@dataclass(frozen=True)
class AdoptedMemory:
    """A memory chosen in F2, as the session recorded it then."""

    seq: int
    memory_id: str
    subject: str
    detail: str
    state: str | None  # active, retired, merged; None without the registry or not there
    merged_into: str | None = None


@dataclass(frozen=True)
class RejectedMemory:
    """A legacy `memory_rejected` marker: the earlier system's F2 rejection of a global
    memory (not of one of this session's concepts), shown as the decision it was."""

    marker_seq: int
    memory_ids: tuple[str, ...]
    subject: str
    rationale: str


@dataclass(frozen=True)
class HiddenMarker:
    marker_seq: int
    refers_to: int | None
    reason: HideReason


@dataclass(frozen=True)
class MemorySummary:
    session_id: str
    approved: tuple[ProjectedMemory, ...]
    declined: tuple[ProjectedMemory, ...]
    hidden: tuple[HiddenMarker, ...]
    adopted: tuple[AdoptedMemory, ...] = ()
    rejected: tuple[RejectedMemory, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "session": self.session_id,
            "approved": [asdict(m) for m in self.approved],
            "declined": [asdict(m) for m in self.declined],
            "hidden": [asdict(h) for h in self.hidden],
            "adopted": [asdict(a) for a in self.adopted],
            "rejected": [asdict(r) for r in self.rejected],
        }

    def markdown(self) -> str:
        lines = ["## Memories", ""]
        if not (self.approved or self.declined or self.adopted or self.rejected):
            lines.append("_No memory was promoted or declined in this session._")
        for title, memories in (("Approved", self.approved), ("Declined", self.declined)):
            if not memories:
                continue
            lines += [f"### {title}", ""]
            for m in memories:
                origin = f"seq {m.seq}" + (f", {m.memory_id}" if m.memory_id else "")
                # Subject, detail and rationale are Markdown already: inserted as written.
                lines.append(f"- **{m.subject}** ({origin}): {m.detail}")
                if m.rationale.strip():
                    lines.append(f"  - _Why_: {m.rationale}")
            lines.append("")
        if self.adopted:
            lines += ["### Adopted from memory", ""]
            for a in self.adopted:
                since = _since(a)
                lines.append(f"- **{a.subject}** (seq {a.seq}, {a.memory_id}{since}): {a.detail}")
            lines.append("")
        if self.rejected:
            lines += ["### Rejected in F2 (earlier system)", ""]
            for r in self.rejected:
                why = f": {r.rationale}" if r.rationale.strip() else ""
                ids = ", ".join(r.memory_ids)
                lines.append(f"- {ids} **{r.subject}** (seq {r.marker_seq}){why}")
            lines.append("")
        return "\n".join(lines).rstrip() + "\n"


def _since(adopted: AdoptedMemory) -> str:
    if adopted.state == "retired":
        return "; since retired"
    if adopted.state == "merged":
        return f"; since merged into {adopted.merged_into}"
    return ""


def _table_name(name: str) -> str:
    return name.strip(_QUOTES).casefold()


def _linked_tables(decisions: list[Entry]) -> set[str]:
    """Tables the session schema-linked, qualified and unqualified (`cardio.episodio` also
    matches a subject written `episodio`)."""
    names: set[str] = set()
    for d in decisions:
        if d.type == "table_promoted":
            full = _table_name(d.subject)
            names |= {full, full.rsplit(".", 1)[-1]}
    return names


def _hide_reason(original: Entry | None, tables: set[str]) -> HideReason | None:
    if original is None:
        return "unresolved"
    if original.type not in REUSABLE_TYPES:
        return "not_a_concept"
    subject = _table_name(original.subject)
    if subject in tables or subject.rsplit(".", 1)[-1] in tables:
        return "schema_linked_table"
    if _TABLE_LIKE.fullmatch(subject):
        return "table_like_subject"
    return None


def summarize(session: Session, registry: Registry | None = None) -> MemorySummary:
    """The session's memories as a reviewer should see them. With `registry`, approved ones
    carry their memory id."""
    entries = session.entries()
    by_seq = {e.seq: e for e in entries}
    tables = _linked_tables(effective_decisions(entries))
    state = registry.state() if registry is not None else None
    saved = (
        {r.decision_seq: r.id for r in state.records if r.session_id == session.id}
        if state is not None
        else {}
    )
    approved: dict[int, ProjectedMemory] = {}
    declined: dict[int, ProjectedMemory] = {}
    hidden: list[HiddenMarker] = []
    rejected: list[RejectedMemory] = []
    for marker in memory_markers(entries):
        target = marker_target(marker)
        cited = cited_memory_ids(marker.subject, marker.detail, marker.rationale)
        if marker.type == LEGACY_REJECTED and target is None and cited:
            rejected.append(
                RejectedMemory(marker.seq, tuple(sorted(cited)), marker.subject, marker.rationale)
            )
            continue
        original = by_seq.get(target) if target is not None else None
        reason = _hide_reason(original, tables)
        if reason is not None or original is None:
            hidden.append(HiddenMarker(marker.seq, target, reason or "unresolved"))
            continue
        status: Status = "approved" if marker.type == PROMOTED else "declined"
        shown = approved if status == "approved" else declined
        shown.setdefault(
            original.seq,
            ProjectedMemory(
                status=status,
                seq=original.seq,
                marker_seq=marker.seq,
                marker_type=marker.type,
                subject=original.subject,
                detail=original.detail,
                rationale=original.rationale,
                memory_id=saved.get(original.seq) if status == "approved" else None,
            ),
        )
    # A legacy memory_rejected and a later promotion of the same concept: it is a memory.
    for seq in approved:
        declined.pop(seq, None)
    adopted = []
    for entry in effective_decisions(entries):
        memory_id = adopted_memory(entry)
        if memory_id is None:
            continue
        known = state is not None and memory_id in state.by_id
        adopted.append(
            AdoptedMemory(
                seq=entry.seq,
                memory_id=memory_id,
                subject=entry.subject,
                detail=entry.detail,
                state=state.state(memory_id) if state is not None and known else None,
                merged_into=state.merged_into.get(memory_id) if state is not None else None,
            )
        )
    return MemorySummary(
        session_id=session.id,
        approved=tuple(approved.values()),
        declined=tuple(declined.values()),
        hidden=tuple(hidden),
        adopted=tuple(adopted),
        rejected=tuple(rejected),
    )
