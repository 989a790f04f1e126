"""The curators' queue of knowledge gaps: what sessions said they were missing.

A session records a gap as a `knowledge_gap` ledger entry (a concept no Evidence defines, a
consultation that found nothing: its refs the receipt). The queue is every standing gap of
every session (a retracted one, or one of a stage reopened or rolled back, does not stand),
minus those a curator took. Taking a gap writes a source note under
`evidence/source/gaps/` — a plain Markdown source `tht evidence prepare` picks up like any
other — and records the take in `<sessions>/gaps-taken.jsonl`, so the gap leaves the queue.
Nothing else is kept: the ledgers are the one record of what was missing.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from thoth.errors import ProblemsError, ThothError
from thoth.session.effective import effective_entries
from thoth.session.ledger import GAP_TYPE
from thoth.session.session import SessionStore
from thoth.storage import JsonlLog, LineIssue, LineRejected, utc_now

TAKEN_FILE: Final = "gaps-taken.jsonl"
NOTES_DIR: Final = "gaps"  # under evidence/source/
_GAP_ID: Final = re.compile(r"^(s-\d{8}-\d{6}-[0-9a-f]{6}):(\d+)$")


class GapNotFound(ThothError):
    """No open gap has that id."""

    code = "gap_not_found"


@dataclass(frozen=True)
class Gap:
    id: str  # <session>:<seq>
    session: str
    seq: int
    stage: str
    subject: str  # the concept, or what was searched
    detail: str
    receipt_seq: int | None  # the consultation that found nothing
    question: str
    caller: str | None
    at: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class GapQueue:
    """The open gaps of one workspace's sessions, and their turning into source notes."""

    def __init__(self, sessions_dir: Path, evidence_dir: Path) -> None:
        self.store = SessionStore(sessions_dir)
        self.evidence_dir = evidence_dir
        self.book = JsonlLog(
            sessions_dir / TAKEN_FILE,
            damaged=lambda line, problems: ProblemsError(
                f"{sessions_dir / TAKEN_FILE} is damaged at line {line}", problems
            ),
            repair_hint="restore the file from a backup; the session ledgers are untouched",
        )

    def open_gaps(self) -> list[Gap]:
        """Every standing gap not taken yet, session by session, in ledger order."""
        taken = self._taken()
        return [g for g in self._standing() if g.id not in taken]

    def take(self, gap_id: str) -> tuple[Gap, Path]:
        """Write the gap's source note and mark it taken; GapNotFound unless it is open."""
        match = _GAP_ID.fullmatch(gap_id)
        with self.book.writing() as writer:
            taken = {r["gap"] for r in writer.read(_taken_record)}
            gap = next((g for g in self._standing() if g.id == gap_id), None)
            if match is None or gap is None or gap_id in taken:
                why = "was taken already" if gap_id in taken else "is not an open gap"
                raise GapNotFound(
                    f"gap {gap_id} {why}; nothing was written -> `tht evidence gaps` lists "
                    "the open ones (id: <session>:<seq>)"
                )
            note = self.evidence_dir / "source" / NOTES_DIR / f"{gap.session}-{gap.seq}.md"
            note.parent.mkdir(parents=True, exist_ok=True)
            note.write_text(source_note(gap), encoding="utf-8")
            writer.append([json.dumps({"gap": gap_id, "at": utc_now(), "note": _rel(note)})])
        return gap, note

    def _taken(self) -> set[str]:
        if not self.book.path.exists():
            return set()
        return {r["gap"] for r in self.book.read(_taken_record)}

    def _standing(self) -> list[Gap]:
        gaps: list[Gap] = []
        for session in self.store.list():
            for e in effective_entries(session.entries()):
                if e.type != GAP_TYPE:
                    continue
                gaps.append(
                    Gap(
                        id=f"{session.id}:{e.seq}",
                        session=session.id,
                        seq=e.seq,
                        stage=e.stage,
                        subject=e.subject,
                        detail=e.detail,
                        receipt_seq=e.refs,
                        question=session.question,
                        caller=session.info.caller,
                        at=e.timestamp,
                    )
                )
        return gaps


def source_note(gap: Gap) -> str:
    """The note a curator turns into Evidence: what was missing, where, and for which question."""
    lines = [
        f"# {gap.subject}",
        "",
        f"Knowledge gap {gap.id}: session {gap.session}, stage {gap.stage}, recorded {gap.at}.",
        "",
        f"Question: {gap.question}",
        "",
    ]
    if gap.detail:
        lines += [f"What was missing: {gap.detail}", ""]
    if gap.receipt_seq is not None:
        lines += [f"The consultation of receipt seq {gap.receipt_seq} found nothing for it.", ""]
    lines += ["To curate: define the concept here, with its source, then `tht evidence prepare`."]
    return "\n".join(lines) + "\n"


def _rel(note: Path) -> str:
    parts = note.parts
    return "/".join(parts[parts.index("source") :]) if "source" in parts else str(note)


def _taken_record(_number: int, text: str) -> dict[str, Any]:
    record = json.loads(text)
    if not isinstance(record, dict) or not isinstance(record.get("gap"), str):
        raise LineRejected(LineIssue("a taken gap needs its gap id"))
    return record


__all__ = ["NOTES_DIR", "TAKEN_FILE", "Gap", "GapNotFound", "GapQueue", "source_note"]
