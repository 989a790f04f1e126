"""F8 as one checklist: the session's candidates preselected, confirmed in one action.

`checklist` is the preview with every candidate selected. `confirm` applies the reviewer's
answer: each candidate not deselected is promoted (`save_one`), each deselected one declined
(`decline`), an edited one promoted with the reviewer's wording. It checks the whole answer
before writing anything: a seq that was not proposed (and was not already decided that way by
an earlier run of the same checklist) refuses it, nothing written.

An edit never rewrites the ledger: the edited wording is recorded as a new concept_clarified
in the original's stage (its rationale says which seq it edits), then the original is
retracted and the new one promoted, so the memory's text is always a standing decision of the
session. Run again with the same answer it changes nothing: each step finds its work done (an
edit reuses the replacement already recorded; promotion and decline are idempotent), which
also completes a run that stopped halfway.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from thoth.embed.base import Embedder
from thoth.errors import Problem
from thoth.memory.index import MemoryIndex
from thoth.memory.markers import DECLINED_TYPES, marker_target, normalised
from thoth.memory.promotion import (
    MAX_CANDIDATES,
    Candidate,
    Preview,
    decline,
    preview,
    save_one,
)
from thoth.memory.registry import MemoryRefused, Registry
from thoth.session import Entry, Session, effective_decisions, memory_markers

_EDIT_PREFIX: Final = "wording edited at promotion from seq "
_EDITED: Final = re.compile(re.escape(_EDIT_PREFIX) + r"(\d+)")


class ChecklistRequest(BaseModel):
    """The reviewer's answer: everything proposed is promoted except `deselect`; `edits`
    gives a candidate's new wording (its detail)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deselect: tuple[int, ...] = ()
    edits: dict[int, str] = Field(default_factory=dict)
    rationale: str = ""


class ChecklistItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    seq: int
    subject: str
    detail: str
    selected: bool
    near_duplicates: tuple[str, ...]  # memory ids of other sessions saying nearly the same


class Checklist(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: Literal[True] = True
    session: str
    items: tuple[ChecklistItem, ...]
    remaining: int  # candidates beyond these, offered by the next checklist
    finalize_ready: bool


class Outcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    seq: int  # the candidate as proposed
    action: Literal["promoted", "declined"]
    memory_id: str | None
    created: bool  # False: an earlier run had already done it
    promoted_seq: int | None = None  # the edited wording's seq, when edited


class ChecklistResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: Literal[True] = True
    session: str
    outcomes: tuple[Outcome, ...]
    remaining: int
    finalize_ready: bool


def checklist(
    session: Session,
    registry: Registry,
    *,
    index: MemoryIndex | None,
    embedder: Embedder | None,
) -> Checklist:
    shown = preview(session, registry, MAX_CANDIDATES, index=index, embedder=embedder)
    return Checklist(
        session=session.id,
        items=tuple(_item(c) for c in shown.candidates),
        remaining=shown.remaining,
        finalize_ready=shown.finalize_ready,
    )


def _item(candidate: Candidate) -> ChecklistItem:
    return ChecklistItem(
        seq=candidate.seq,
        subject=candidate.subject,
        detail=candidate.detail,
        selected=True,
        near_duplicates=tuple(n.memory_id for n in candidate.near_duplicates),
    )


def confirm(
    session: Session,
    request: ChecklistRequest,
    *,
    registry: Registry,
    index: MemoryIndex,
    embedder: Embedder,
) -> ChecklistResult:
    shown = preview(session, registry, MAX_CANDIDATES, index=None, embedder=None)
    _check(session, request, shown)
    outcomes: list[Outcome] = []
    proposed = {c.seq for c in shown.candidates}
    for seq in sorted(proposed | set(request.deselect) | set(request.edits)):
        if seq in request.deselect:
            declined = decline(session, seq, registry=registry, rationale=request.rationale)
            outcomes.append(
                Outcome(seq=seq, action="declined", memory_id=None, created=declined.created)
            )
            continue
        target = seq
        if seq in request.edits:
            target = reworded(session, seq, request.edits[seq])
        saved = save_one(
            session,
            target,
            registry=registry,
            index=index,
            embedder=embedder,
            rationale=request.rationale,
        )
        outcomes.append(
            Outcome(
                seq=seq,
                action="promoted",
                memory_id=saved.record.id,
                created=saved.created,
                promoted_seq=target if target != seq else None,
            )
        )
    after = preview(session, registry, MAX_CANDIDATES, index=None, embedder=None)
    return ChecklistResult(
        session=session.id,
        outcomes=tuple(outcomes),
        remaining=len(after.candidates) + after.remaining,
        finalize_ready=after.finalize_ready,
    )


def _check(session: Session, request: ChecklistRequest, shown: Preview) -> None:
    """Refuse the whole answer before anything is written."""
    where = f"session {session.id}"
    proposed = {c.seq for c in shown.candidates}
    entries = session.entries()
    declined = {marker_target(m) for m in memory_markers(entries) if m.type in DECLINED_TYPES}
    # What an earlier run of the same answer recorded: a different wording of an edited seq
    # is a new decision about a concept already promoted, not a repeat.
    edited: dict[int, set[str]] = {}
    for seq, entry in _replacements(entries):
        edited.setdefault(seq, set()).add(normalised(entry.detail))
    problems: list[Problem] = []
    for seq in request.deselect:
        if seq not in proposed and seq not in declined:
            problems.append(_not_proposed(where, seq, "deselected"))
    for seq, text in request.edits.items():
        if seq in request.deselect:
            problems.append(
                Problem(where, f"seq {seq} is both deselected and edited", code="invalid")
            )
        elif not text.strip():
            problems.append(
                Problem(where, f"the new wording of seq {seq} is blank", code="invalid")
            )
        elif seq not in proposed and normalised(text) not in edited.get(seq, set()):
            problems.append(_not_proposed(where, seq, "edited"))
    if problems:
        raise MemoryRefused(
            f"{where}: the checklist was not applied; the registry, the index and the ledger "
            "are unchanged",
            problems,
            code=problems[0].code,
        )


def _not_proposed(where: str, seq: int, verb: str) -> Problem:
    return Problem(
        where,
        f"seq {seq} cannot be {verb}: it is not one of the candidates proposed",
        hint="see the candidates with `tht memory promote SESSION --preview`",
        code="not_proposed",
    )


def _replacements(entries: list[Entry]) -> list[tuple[int, Entry]]:
    """(edited seq, its standing replacement) for every wording edited at promotion."""
    out = []
    for entry in effective_decisions(entries):
        match = _EDITED.match(entry.rationale)
        if entry.type == "concept_clarified" and match:
            out.append((int(match.group(1)), entry))
    return out


def reworded(session: Session, seq: int, wording: str) -> int:
    """The seq of the standing replacement of `seq` with `wording`: recorded (once) and the
    original retracted (once). The F8 checklist's edit, on the CLI and over HTTP/MCP."""
    entries = session.entries()
    original = next(e for e in entries if e.seq == seq)
    replacement = next(
        (
            e
            for edited, e in _replacements(entries)
            if edited == seq and normalised(e.detail) == normalised(wording)
        ),
        None,
    )
    if replacement is None:
        replacement = session.append(
            original.stage,
            "concept_clarified",
            subject=original.subject,
            detail=wording.strip(),
            rationale=f"{_EDIT_PREFIX}{seq}: {original.rationale}",
        )
    if seq in {e.seq for e in effective_decisions(entries)}:
        session.retract(seq, rationale=f"reworded at promotion as seq {replacement.seq}")
    return replacement.seq
