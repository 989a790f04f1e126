"""What a reviewer sees of one session: its standing decisions, Evidence receipts, runs of the
final SQL, withdrawals, proposals and memories — all computed on read from the ledger (and the
memory registry for memory ids), nothing stored. `tht session show` prints it and the MCP tool
`session_show` returns it; both read it here so they never disagree."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from thoth.memory.projection import MemorySummary, summarize
from thoth.session import Entry, Session, Withdrawal
from thoth.session.ledger import SQL_RUN_TYPE
from thoth.session.proposals import ProposalBook, ProposalView, dump
from thoth.workflow.stores import MemoryStores
from thoth.workspace import Workspace


@dataclass(frozen=True)
class SessionOverview:
    session: Session
    entries: list[Entry]
    effective: list[Entry]
    withdrawn: dict[int, Withdrawal]  # seq -> who withdrew it, and why
    receipts: list[Entry]
    runs: list[Entry]
    memory_markers: list[Entry]
    proposals: list[ProposalView]
    memories: MemorySummary

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "session": self.session.info.model_dump(exclude_none=True),
            # The ledger position a write based on this view names (`base`).
            "position": len(self.entries),
            "effective": [entry_dict(e) for e in self.effective],
            "memory_markers": [entry_dict(e) for e in self.memory_markers],
            "receipts": [entry_dict(e) for e in self.receipts],
            "runs": [entry_dict(e) for e in self.runs],
            "withdrawn": [asdict(w) for w in self.withdrawn.values()],
            "entries": [entry_dict(e) for e in self.entries],
            "proposals": [dump(v) for v in self.proposals],
            "memories": self.memories.as_dict(),
        }


def entry_dict(entry: Entry) -> dict[str, Any]:
    return entry.model_dump(mode="json", exclude_none=True)


def session_overview(ws: Workspace, session: Session) -> SessionOverview:
    entries = session.entries()
    return SessionOverview(
        session=session,
        entries=entries,
        effective=session.effective(),
        withdrawn=session.withdrawals(),
        receipts=[e for e in entries if e.type == "evidence_receipt"],
        runs=[e for e in entries if e.type == SQL_RUN_TYPE],
        memory_markers=session.memory_markers(),
        proposals=ProposalBook(session).views(),
        memories=summarize(session, MemoryStores(ws).registry),
    )
