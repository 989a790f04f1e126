"""Decisions an LLM driver proposed, waiting for a reviewer: `<session>/proposals.jsonl`.

Proposals are not decisions: they never enter the ledger on their own. A reviewer accepts one
(it is appended to the ledger as a decision of its stage, its rationale naming the proposal and
the model) or rejects it. Like the ledger the file is append-only, one JSON object per line:

    {"kind": "proposal", "no": 1, "stage": ..., "type": ..., "subject": ..., "detail": ...,
     "rationale": ..., "model": "openai:gpt-4o-mini", "receipt_seq": 3, "call_id": ..., ...}
    {"kind": "review", "no": 1, "verdict": "accepted", "seq": 4, "rationale": "", ...}

A proposal's status (pending, accepted, rejected) is computed on read. Writes hold an
exclusive lock on `proposals.jsonl.lock`; a batch of proposals is one write, so a drive saves
all its proposals or none. A damaged line raises, naming the session, file and line.

Accepting writes the ledger first, then the review. Should the process die in between, the
ledger entry carries the proposal's mark in its rationale; the next accept finds it and only
writes the missing review, so a proposal never becomes two decisions.

The file is a `thoth.storage.JsonlLog`: locking, durable appends and the detection of a cut
or damaged line are the log's; this module keeps the line types and their numbering rules.

Proposals of the memory stages are not plain decisions: an F2 proposal is applied by
`recall.choose` and an F8 one by `promotion.save_one` / `promotion.decline` (all idempotent, so
a repeated accept after a crash creates nothing twice). `accept` takes them only with an
`apply` that does so (`thoth.workflow.driver.accept_proposal`); without one it refuses them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from thoth.errors import Problem, ProblemsError
from thoth.session.decisions import decide
from thoth.session.ledger import Entry
from thoth.session.session import Session
from thoth.storage import (
    JsonlLog,
    LineIssue,
    LineRejected,
    LogWriter,
    check_utc_timestamp,
    utc_now,
)

PROPOSALS_FILE: Final = "proposals.jsonl"
_REPAIR_HINT: Final = (
    "proposals.jsonl is append-only: restore it from a backup or repair the line by hand; "
    "the ledger is not affected"
)

Status = Literal["pending", "accepted", "rejected"]

# Stages whose proposals are applied by the memory code, never by a plain decide.
MEMORY_STAGES: Final = frozenset({"memory", "memory_promotion"})


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    no: int = Field(ge=1)
    timestamp: str

    @field_validator("timestamp")
    @classmethod
    def _utc(cls, value: str) -> str:
        return check_utc_timestamp(value)


class Proposal(_Line):
    kind: Literal["proposal"] = "proposal"
    stage: str
    type: str
    subject: str
    detail: str
    rationale: str
    model: str  # which model proposed it (provider:model)
    call_id: str  # the provider's id of the tool call
    receipt_seq: int | None = None  # the Evidence receipt the model was shown, if any
    ledger_seq: int = Field(ge=0)  # the ledger's last seq when it was proposed

    @property
    def mark(self) -> str:
        """What the accepted decision's rationale ends with: where it came from."""
        return f"[proposal {self.no} by {self.model}, accepted by the reviewer]"


class Review(_Line):
    kind: Literal["review"] = "review"
    verdict: Literal["accepted", "rejected"]
    seq: int | None = Field(default=None, ge=1)  # the ledger entry of an accepted proposal
    rationale: str = ""


_LINE: Final = TypeAdapter(Annotated[Proposal | Review, Field(discriminator="kind")])


@dataclass(frozen=True)
class ProposalDraft:
    """A checked proposal not yet numbered (the driver's output)."""

    stage: str
    type: str
    subject: str
    detail: str
    rationale: str
    call_id: str


@dataclass(frozen=True)
class ProposalView:
    proposal: Proposal
    status: Status
    seq: int | None = None
    review_rationale: str = ""


# How an accepted proposal becomes a ledger entry: (proposal, the accepted rationale) -> entry.
Apply = Callable[["Proposal", str], Entry]


class ProposalRefused(ProblemsError):
    """An accept or reject that cannot be done; nothing was written."""


class ProposalsCorrupted(ProblemsError):
    """A proposals.jsonl line cannot be read as written; nothing of the file was used."""


class _Numbering:
    """The validation hook of proposals.jsonl: proposals numbered 1, 2, 3…, each reviewed at
    most once, and only after it was proposed."""

    def __init__(self) -> None:
        self.proposed = 0
        self.reviewed: set[int] = set()

    def parse(self, number: int, text: str) -> Proposal | Review:
        line = _LINE.validate_json(text)
        if isinstance(line, Proposal):
            if line.no != self.proposed + 1:
                raise LineRejected(
                    LineIssue(f"proposal {line.no} where {self.proposed + 1} was due", "no")
                )
            self.proposed += 1
        elif line.no > self.proposed or line.no in self.reviewed:
            raise LineRejected(
                LineIssue(f"a review of proposal {line.no}, which is unknown or reviewed", "no")
            )
        else:
            self.reviewed.add(line.no)
        return line


class ProposalBook:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.path: Path = session.directory / PROPOSALS_FILE
        self.log = JsonlLog(self.path, damaged=self._corrupted, repair_hint=_REPAIR_HINT)

    # -------------------------------------------------------------- reading

    def views(self) -> list[ProposalView]:
        """Every proposal with its status, in number order."""
        return self._views(self.log.read(_Numbering().parse))

    def pending(self) -> list[ProposalView]:
        return [v for v in self.views() if v.status == "pending"]

    # -------------------------------------------------------------- writing

    def add(
        self, drafts: Sequence[ProposalDraft], *, model: str, receipt_seq: int | None
    ) -> list[Proposal]:
        """Number and save a batch of proposals in one write: all of them or none."""
        if not drafts:
            return []
        ledger_seq = len(self.session.entries())
        with self.log.writing() as writer:
            lines = writer.read(_Numbering().parse)
            start = sum(isinstance(line, Proposal) for line in lines) + 1
            now = utc_now()
            made = [
                Proposal(
                    no=start + i,
                    timestamp=now,
                    stage=d.stage,
                    type=d.type,
                    subject=d.subject,
                    detail=d.detail,
                    rationale=d.rationale,
                    model=model,
                    call_id=d.call_id,
                    receipt_seq=receipt_seq,
                    ledger_seq=ledger_seq,
                )
                for i, d in enumerate(drafts)
            ]
            writer.append([p.model_dump_json() for p in made])
            return made

    def accept(self, no: int, *, note: str = "", apply: Apply | None = None) -> Entry:
        """Append proposal `no` to the ledger as a decision of its stage (through `apply` when
        given; memory-stage proposals need one)."""
        with self.log.writing() as writer:
            view = self._pending(writer, no, "accept")
            proposal = view.proposal
            if apply is None and proposal.stage in MEMORY_STAGES:
                raise ProposalRefused(
                    f"session {self.session.id}: cannot accept proposal {no} here; nothing was "
                    "written",
                    [
                        Problem(
                            f"session {self.session.id}",
                            f"proposal {no} is of stage {proposal.stage}: it is applied through "
                            "the memory registry, not as a plain decision",
                            field="no",
                            hint=f"accept it with `tht session accept {self.session.id} {no}`",
                        )
                    ],
                )
            rationale = " ".join(
                part for part in (proposal.rationale.strip(), note.strip(), proposal.mark) if part
            )
            # A crash between the ledger write and the review leaves the decision marked.
            entry = next(
                (e for e in self.session.entries() if e.rationale.endswith(proposal.mark)), None
            ) or (apply or self._decide)(proposal, rationale)
            review = Review(
                no=no, timestamp=utc_now(), verdict="accepted", seq=entry.seq, rationale=note
            )
            writer.append([review.model_dump_json()])
            return entry

    def reject(self, no: int, *, rationale: str = "") -> None:
        """Record that the reviewer turned proposal `no` down (the ledger is not touched)."""
        with self.log.writing() as writer:
            self._pending(writer, no, "reject")
            review = Review(no=no, timestamp=utc_now(), verdict="rejected", rationale=rationale)
            writer.append([review.model_dump_json()])

    # -------------------------------------------------------------- internals

    def _decide(self, proposal: Proposal, rationale: str) -> Entry:
        return decide(
            self.session,
            proposal.stage,
            proposal.type,
            subject=proposal.subject,
            detail=proposal.detail,
            rationale=rationale,
        )

    def _pending(self, writer: LogWriter, no: int, action: str) -> ProposalView:
        views = {v.proposal.no: v for v in self._views(writer.read(_Numbering().parse))}
        view = views.get(no)
        if view is not None and view.status == "pending":
            return view
        if view is None:
            problem = f"there is no proposal {no}"
            hint = f"see the pending ones with `tht session show {self.session.id}`"
        elif view.status == "accepted":
            problem = f"proposal {no} was already accepted as ledger seq {view.seq}"
            hint = "to withdraw the decision, retract that seq"
        else:
            problem = f"proposal {no} was rejected"
            hint = "drive the stage again or decide it by hand (`tht session decide`)"
        raise ProposalRefused(
            f"session {self.session.id}: cannot {action} proposal {no}; nothing was written",
            [Problem(f"session {self.session.id}", problem, field="no", hint=hint)],
        )

    def _views(self, lines: list[Proposal | Review]) -> list[ProposalView]:
        reviews = {line.no: line for line in lines if isinstance(line, Review)}
        views = []
        for line in lines:
            if not isinstance(line, Proposal):
                continue
            review = reviews.get(line.no)
            if review is None:
                views.append(ProposalView(line, "pending"))
            else:
                views.append(ProposalView(line, review.verdict, review.seq, review.rationale))
        return views

    def _corrupted(self, line: int, problems: list[Problem]) -> ProposalsCorrupted:
        return ProposalsCorrupted(
            f"session {self.session.id}: {self.path} is damaged at line {line}; it was not used",
            problems,
        )


def dump(view: ProposalView) -> dict[str, object]:
    """A proposal and its status, for JSON output."""
    return {
        **json.loads(view.proposal.model_dump_json()),
        "status": view.status,
        "seq": view.seq,
        "review_rationale": view.review_rationale,
    }
