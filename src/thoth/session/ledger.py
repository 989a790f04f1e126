"""The append-only ledger of one session: `<sessions_dir>/<session_id>/ledger.jsonl`.

One JSON object per line, one line per entry. Lines are only ever appended: retractions,
reopens and rollbacks are new entries that change what the effective view keeps
(`thoth.session.effective`), never edits of old lines.

Numbering: the ledger, not the caller, assigns `seq` (1, 2, 3…). An append takes an
exclusive `flock` on `ledger.jsonl.lock`, reads and checks the whole ledger, numbers the new
entry after the last one, writes it with a single `write` and `fsync`s it; so two processes
appending at once queue on the lock and never share or skip a number. Readers take the same
lock shared, so they never see a line being written.

Reading never skips: a line that is not valid JSON, lacks a field, breaks the numbering or
breaks a rule an append would have refused raises `LedgerCorrupted`, naming the session, the
file and the line. Appending onto a damaged ledger is refused for the same reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from thoth.errors import Problem, ProblemsError, ThothError
from thoth.session.formulas import FORMULA_PROPOSED, formula_issues
from thoth.session.stages import STAGE_PURPOSE, STAGES, unknown_stage_message
from thoth.storage import (
    JsonlLog,
    LineIssue,
    LineRejected,
    check_utc_timestamp,
    utc_now,
    validation_problems,
)

# Decisions: what the reviewer settled about the question. The effective view returns these.
DECISION_TYPES: Final[tuple[str, ...]] = (
    "concept_clarified",
    "table_promoted",
    "table_excluded",
    "column_promoted",
    "concept_formula_approved",
    "concept_formula_rejected",
    # What a stage settled as its outcome, each in the one stage that produces it
    # (_TYPE_STAGE). formula_proposed: a Formula proposal (thoth.session.formulas).
    "question_rewritten",
    "formula_proposed",
    "synthesis_approved",
    "cte_plan_approved",
    "final_sql_approved",
)
# Markers of what happened to a clarified concept at promotion time (memory_rejected: legacy
# F2 rejection of a global memory, still readable and writable for old sessions).
MEMORY_MARKER_TYPES: Final[tuple[str, ...]] = (
    "memory_promoted",
    "memory_promotion_declined",
    "memory_rejected",
)
# What may become a memory, and so what a memory_promoted or memory_promotion_declined marker
# may refer to: a concept a reviewer clarified. Table and column choices answer one question
# and stay in its session. The one definition: thoth.memory.core and every memory boundary use
# this (memory builds on sessions, never the reverse).
REUSABLE_TYPES: Final[frozenset[str]] = frozenset({"concept_clarified"})
RECEIPT_TYPE: Final = "evidence_receipt"
# The F8 checklist was confirmed with nothing left to decide: the session takes no decision
# until a reopen or rollback (which withdraws this entry like any entry of memory_promotion).
CLOSED_TYPE: Final = "session_closed"
# A run of the approved final SQL (`tht session run`): what ran and what came back, never rows.
SQL_RUN_TYPE: Final = "sql_run"
# What a session was missing (a concept no Evidence defines, a consultation that found
# nothing), for the curators' queue (`tht evidence gaps`): neither a decision nor a receipt.
# Its refs, when set, name the evidence_receipt of the consultation that found nothing.
GAP_TYPE: Final = "knowledge_gap"
CONTROL_TYPES: Final[tuple[str, ...]] = ("retraction", "reopen", "rollback")
ENTRY_TYPES: Final[tuple[str, ...]] = (
    *DECISION_TYPES,
    *MEMORY_MARKER_TYPES,
    RECEIPT_TYPE,
    SQL_RUN_TYPE,
    CLOSED_TYPE,
    GAP_TYPE,
    *CONTROL_TYPES,
)

# `refs` carries the meaning of these: what is withdrawn, which clarification was promoted.
_NEEDS_REFS: Final = frozenset({"retraction", "memory_promoted", "memory_promotion_declined"})
# A reopen or rollback acts on a stage (its `stage` field), never on one entry.
_NO_REFS: Final = frozenset({"reopen", "rollback"})
_MARKER_STAGE: Final[Mapping[str, str]] = {
    "memory_promoted": "memory_promotion",
    "memory_promotion_declined": "memory_promotion",
    "memory_rejected": "memory",
}
# Types bound to one stage: a marker, or the outcome a stage produces.
_TYPE_STAGE: Final[Mapping[str, str]] = {
    **_MARKER_STAGE,
    "question_rewritten": "rewriting",
    "formula_proposed": "schema_linking",
    "synthesis_approved": "synthesis",
    "cte_plan_approved": "cte",
    "final_sql_approved": "final_sql",
    SQL_RUN_TYPE: "final_sql",
    CLOSED_TYPE: "memory_promotion",
}
_REFERS_TO_CONCEPT: Final = frozenset({"memory_promoted", "memory_promotion_declined"})
# What a retraction may not withdraw, and why.
_NOT_RETRACTABLE: Final[Mapping[str, str]] = {
    "retraction": "a retraction is final; record the decision again if it still holds",
    "reopen": "reopen and rollback are permanent; record a new reopen or rollback instead",
    "rollback": "reopen and rollback are permanent; record a new reopen or rollback instead",
    RECEIPT_TYPE: "a receipt records a search that happened, not a decision",
    SQL_RUN_TYPE: "a run receipt records a query that ran, not a decision",
    CLOSED_TYPE: "reopen or roll back a stage to work on a closed session again",
    "memory_promoted": (
        "the memory is already in the global registry and withdrawing the marker would not "
        "remove it from there"
    ),
}

_REPAIR_HINT: Final = (
    "the ledger is append-only and Thoth never skips a line: restore the file from a backup, "
    "or repair the line by hand and check the session again"
)


# ---------------------------------------------------------------------- the entry


class EvidenceReceipt(BaseModel):
    """What an Evidence search in a stage returned, without any text: enough to find every
    result again at that generation and revision."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    purpose: str
    generation: str
    revision: str
    evidence_ids: tuple[str, ...] = ()


class SqlRunReceipt(BaseModel):
    """What one run of the approved final SQL did, without any row: the statement's hash and
    the decision it came from, how it ended, and what came back (names and counts only)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    final_sql_seq: int = Field(ge=1)  # the final_sql_approved decision that was run
    statement_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    status: Literal["succeeded", "failed"]
    dialect: str
    duration_ms: float = Field(ge=0)
    row_count: int = Field(default=0, ge=0)
    truncated: bool = False  # more rows existed than the row limit
    row_limit: int = Field(ge=1)
    columns: tuple[str, ...] = ()
    data_date: str | None = None  # what [database] data_date_sql returned, if declared
    reason: str = ""  # why it failed (the database's message)
    code: str = ""  # the failure's stable code


class Entry(BaseModel):
    """One ledger line. `refs` is the seq of the entry this one is about (the decision a
    retraction withdraws, the clarification a memory marker concerns); `receipt` is set on
    `evidence_receipt` entries only."""

    # strict: a seq written as "3" or a subject written as 3 is damage, not something to coerce
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    seq: int = Field(ge=1)
    timestamp: str
    stage: str
    type: str
    subject: str
    detail: str
    rationale: str
    refs: int | None = Field(default=None, ge=1)
    receipt: EvidenceReceipt | None = None
    run: SqlRunReceipt | None = None

    @field_validator("timestamp")
    @classmethod
    def _utc(cls, value: str) -> str:
        return check_utc_timestamp(value)

    @field_validator("stage")
    @classmethod
    def _known_stage(cls, value: str) -> str:
        if value not in STAGES:
            raise ValueError(unknown_stage_message(value))
        return value

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in ENTRY_TYPES:
            raise ValueError(
                f"unknown entry type {value!r}; expected one of {', '.join(ENTRY_TYPES)}"
            )
        return value


def _issue(field: str, message: str, hint: str | None = None) -> LineIssue:
    return LineIssue(message, field=field or None, hint=hint)


def _entry_issues(e: Entry) -> list[LineIssue]:
    """Rules an entry must meet on its own, whatever else the ledger holds."""
    issues: list[LineIssue] = []
    if e.type not in CONTROL_TYPES and e.type != RECEIPT_TYPE and not e.subject.strip():
        issues.append(_issue("subject", f"a {e.type} needs a subject", "name what was decided"))
    if e.type in CONTROL_TYPES and not e.rationale.strip():
        issues.append(
            _issue("rationale", f"a {e.type} needs a rationale", "say why, for the audit trail")
        )
    if e.type in _NEEDS_REFS and e.refs is None:
        issues.append(_issue("refs", f"a {e.type} must name the seq it refers to"))
    if e.type in _NO_REFS and e.refs is not None:
        issues.append(
            _issue("refs", f"a {e.type} acts on a whole stage and takes no refs", "drop refs")
        )
    own_stage = _TYPE_STAGE.get(e.type)
    if own_stage is not None and e.stage != own_stage:
        issues.append(_issue("stage", f"a {e.type} belongs to stage {own_stage!r}"))
    if e.type == FORMULA_PROPOSED:
        issues += [_issue(f, m) for f, m in formula_issues(e.subject, e.detail)]
    if e.type == RECEIPT_TYPE:
        issues += _receipt_issues(e)
    elif e.receipt is not None:
        issues.append(
            _issue("receipt", f"only an {RECEIPT_TYPE} carries a receipt, not a {e.type}")
        )
    if e.type == SQL_RUN_TYPE and e.run is None:
        issues.append(_issue("run", f"a {SQL_RUN_TYPE} needs its run receipt"))
    elif e.type != SQL_RUN_TYPE and e.run is not None:
        issues.append(_issue("run", f"only a {SQL_RUN_TYPE} carries a run receipt, not a {e.type}"))
    return issues


def _receipt_issues(e: Entry) -> list[LineIssue]:
    if e.receipt is None:
        return [_issue("receipt", f"an {RECEIPT_TYPE} needs its receipt")]
    purpose = STAGE_PURPOSE[e.stage]
    if purpose is None:
        return [_issue("stage", f"stage {e.stage!r} never searches Evidence: it has no receipts")]
    if e.receipt.purpose != purpose:
        return [
            _issue(
                "receipt.purpose",
                f"purpose {e.receipt.purpose!r} is not the purpose of stage {e.stage!r} "
                f"({purpose!r})",
                "each stage searches Evidence with its own purpose, never another's",
            )
        ]
    return []


@dataclass
class _History:
    """The entries read so far, indexed for the rules that look back."""

    entries: list[Entry] = field(default_factory=list)
    by_seq: dict[int, Entry] = field(default_factory=dict)
    retracted_by: dict[int, int] = field(default_factory=dict)

    def parse(self, number: int, text: str) -> Entry:
        """The validation hook of the ledger's log: line `number` as the next entry (every
        rule an append would have checked), added to the history."""
        # From the JSON text, not a parsed dict: JSON arrays are valid tuples there.
        entry = Entry.model_validate_json(text)
        issues = _entry_issues(entry)
        if not issues and entry.seq != number:
            issues = [
                _issue(
                    "seq",
                    f"seq {entry.seq} where {number} was expected: seqs run 1, 2, 3… "
                    "with no gap or repeat",
                )
            ]
        issues = issues or self.issues(entry)
        if issues:
            raise LineRejected(*issues)
        self.add(entry)
        return entry

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)
        self.by_seq[entry.seq] = entry
        if entry.type == "retraction" and entry.refs is not None:
            self.retracted_by[entry.refs] = entry.seq

    def issues(self, e: Entry) -> list[LineIssue]:
        """Rules about what `e` refers to; `e` is not yet part of the history."""
        if e.run is not None:
            ran = self.by_seq.get(e.run.final_sql_seq)
            if ran is None or ran.type != "final_sql_approved":
                return [
                    _issue(
                        "run.final_sql_seq",
                        f"seq {e.run.final_sql_seq} is not a final_sql_approved decision",
                        "a run receipt names the approved final SQL that ran",
                    )
                ]
        if e.refs is None:
            return []
        target = self.by_seq.get(e.refs)
        if target is None:
            return [
                _issue(
                    "refs",
                    f"no earlier entry has seq {e.refs}",
                    "refs must name an entry already in this ledger",
                )
            ]
        if e.type == "retraction":
            return self._retraction_issues(e, target)
        if e.type == GAP_TYPE and target.type != RECEIPT_TYPE:
            return [
                _issue(
                    "refs",
                    f"a {GAP_TYPE} refers to the {RECEIPT_TYPE} of the consultation that "
                    f"found nothing; seq {target.seq} is a {target.type}",
                    "name the receipt_seq session_consult returned, or no receipt",
                )
            ]
        if e.type in _REFERS_TO_CONCEPT and target.type not in REUSABLE_TYPES:
            return [
                _issue(
                    "refs",
                    f"a {e.type} must refer to a {' or '.join(sorted(REUSABLE_TYPES))} "
                    f"decision; seq {target.seq} is a {target.type}",
                    "only clarified concepts become memories; tables stay in their question",
                )
            ]
        return []

    def _retraction_issues(self, e: Entry, target: Entry) -> list[LineIssue]:
        why = _NOT_RETRACTABLE.get(target.type)
        if why is not None:
            return [
                _issue(
                    "refs", f"a retraction cannot withdraw a {target.type} (seq {target.seq})", why
                )
            ]
        earlier = self.retracted_by.get(target.seq)
        if earlier is not None:
            return [_issue("refs", f"seq {target.seq} is already retracted by seq {earlier}")]
        if e.stage != target.stage:
            return [
                _issue(
                    "stage",
                    f"a retraction is recorded in the stage of what it withdraws: seq "
                    f"{target.seq} is in {target.stage!r}, not {e.stage!r}",
                )
            ]
        return []


# ---------------------------------------------------------------------- the ledger


class LedgerCorrupted(ProblemsError):
    """A ledger line cannot be read as written by Thoth; nothing of the ledger was used."""


class EntryRefused(ProblemsError):
    """An append broke a rule; nothing was written."""

    code = "entry_refused"


class LedgerConflict(ThothError):
    """An append named a ledger position (`base`: the number of entries its writer had seen)
    that is no longer the ledger's: another writer appended meanwhile. Nothing was written;
    `position` is the current one (read the session again, then decide again)."""

    code = "ledger_conflict"

    def __init__(self, message: str, *, position: int) -> None:
        super().__init__(message)
        self.position = position


class Ledger:
    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self.log = JsonlLog(path, damaged=self._corrupted, repair_hint=_REPAIR_HINT)

    def entries(self) -> list[Entry]:
        """Every entry in seq order, checked line by line (LedgerCorrupted on any damage)."""
        history = _History()
        self.log.read(history.parse)
        return history.entries

    def append(
        self,
        *,
        stage: str,
        type: str,
        subject: str,
        detail: str = "",
        rationale: str = "",
        refs: int | None = None,
        receipt: EvidenceReceipt | None = None,
        run: SqlRunReceipt | None = None,
        base: int | None = None,
    ) -> Entry:
        """Number, check, write and fsync one entry; EntryRefused (nothing written) when it
        breaks a rule, LedgerCorrupted when the ledger it would extend is damaged.

        `base`: the number of entries the writer's decision was based on. Compared under the
        exclusive lock, so across processes: a ledger that has grown since is a
        LedgerConflict naming its position, and nothing is written (compare-and-swap)."""
        with self.log.writing() as writer:
            history = _History()
            writer.read(history.parse)
            if base is not None and base != len(history.entries):
                raise self.conflict(base, len(history.entries))
            fields: dict[str, Any] = {
                "seq": len(history.entries) + 1,  # parse proved the seqs run 1..n
                "timestamp": utc_now(),
                "stage": stage,
                "type": type,
                "subject": subject,
                "detail": detail,
                "rationale": rationale,
                "refs": refs,
                "receipt": receipt,
                "run": run,
            }
            where = f"session {self.session_id}"
            try:
                entry = Entry.model_validate(fields)
            except ValidationError as exc:
                raise self._refused(type, validation_problems(exc, where, None)) from exc
            issues = _entry_issues(entry) or history.issues(entry)
            if issues:
                raise self._refused(
                    type, [Problem(where, i.message, field=i.field, hint=i.hint) for i in issues]
                )
            writer.append([entry.model_dump_json(exclude_none=True)])
            return entry

    def position(self) -> int:
        """The number of entries (the seq of the last one; 0 for an empty ledger)."""
        return len(self.entries())

    def conflict(self, base: int, position: int) -> LedgerConflict:
        return LedgerConflict(
            f"session {self.session_id}: the write was based on ledger position {base}, but "
            f"the ledger is at {position}; nothing was written -> read the session again and "
            f"send the write with base {position} if it still holds",
            position=position,
        )

    # -------------------------------------------------------------- internals

    def _refused(self, type: str, problems: list[Problem]) -> EntryRefused:
        return EntryRefused(
            f"session {self.session_id}: {type} entry refused; nothing was written to {self.path}",
            problems,
        )

    def _corrupted(self, line: int, problems: list[Problem]) -> LedgerCorrupted:
        return LedgerCorrupted(
            f"session {self.session_id}: ledger {self.path} is damaged at line {line}; "
            "it was not used",
            problems,
        )
