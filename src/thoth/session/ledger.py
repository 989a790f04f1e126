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

import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from thoth.errors import Problem, ProblemsError
from thoth.fsutil import append_durably
from thoth.session.formulas import FORMULA_PROPOSED, formula_issues
from thoth.session.stages import STAGE_PURPOSE, STAGES, unknown_stage_message

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
RECEIPT_TYPE: Final = "evidence_receipt"
CONTROL_TYPES: Final[tuple[str, ...]] = ("retraction", "reopen", "rollback")
ENTRY_TYPES: Final[tuple[str, ...]] = (
    *DECISION_TYPES,
    *MEMORY_MARKER_TYPES,
    RECEIPT_TYPE,
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
}
_REFERS_TO_CONCEPT: Final = frozenset({"memory_promoted", "memory_promotion_declined"})
# What a retraction may not withdraw, and why.
_NOT_RETRACTABLE: Final[Mapping[str, str]] = {
    "retraction": "a retraction is final; record the decision again if it still holds",
    "reopen": "reopen and rollback are permanent; record a new reopen or rollback instead",
    "rollback": "reopen and rollback are permanent; record a new reopen or rollback instead",
    RECEIPT_TYPE: "a receipt records a search that happened, not a decision",
    "memory_promoted": (
        "the memory is already in the global registry and withdrawing the marker would not "
        "remove it from there"
    ),
}

_REPAIR_HINT: Final = (
    "the ledger is append-only and Thoth never skips a line: restore the file from a backup, "
    "or repair the line by hand and check the session again"
)


# ---------------------------------------------------------------------- shared file helpers


def utc_now() -> str:
    """Now as fixed-width ISO-8601 UTC (`2024-05-01T09:30:00.000000+00:00`): sorts as text."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def check_utc_timestamp(value: str) -> str:
    """Pydantic validator body: an ISO-8601 timestamp with a zero UTC offset."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO-8601 timestamp") from None
    if parsed.utcoffset() != timedelta(0):
        raise ValueError(f"{value!r} is not in UTC (expected an explicit +00:00 offset)")
    return value


@contextmanager
def file_lock(path: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold an advisory `flock` on `path` (created if missing) for the block. The lock lives on
    a file of its own so the data file can be replaced or appended freely while it is held."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def fsync_dir(path: Path) -> None:
    """Make a file creation or rename in `path` durable, not only the file's bytes."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def validation_problems(exc: ValidationError, where: str, hint: str | None) -> list[Problem]:
    """One Problem per pydantic error, naming the field (dotted path) it is about."""
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or None
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "missing":
            message = "field is missing"
        elif err["type"] == "extra_forbidden":
            message = "unknown field"
        problems.append(Problem(where, message, field=loc, hint=hint, code="invalid"))
    return problems


# ---------------------------------------------------------------------- the entry


class EvidenceReceipt(BaseModel):
    """What an Evidence search in a stage returned, without any text: enough to find every
    result again at that generation and revision."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    purpose: str
    generation: str
    revision: str
    evidence_ids: tuple[str, ...] = ()


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


@dataclass(frozen=True)
class _Issue:
    field: str  # "" when the problem is the whole line, not one field
    message: str
    hint: str | None = None


def _entry_issues(e: Entry) -> list[_Issue]:
    """Rules an entry must meet on its own, whatever else the ledger holds."""
    issues: list[_Issue] = []
    if e.type not in CONTROL_TYPES and e.type != RECEIPT_TYPE and not e.subject.strip():
        issues.append(_Issue("subject", f"a {e.type} needs a subject", "name what was decided"))
    if e.type in CONTROL_TYPES and not e.rationale.strip():
        issues.append(
            _Issue("rationale", f"a {e.type} needs a rationale", "say why, for the audit trail")
        )
    if e.type in _NEEDS_REFS and e.refs is None:
        issues.append(_Issue("refs", f"a {e.type} must name the seq it refers to"))
    if e.type in _NO_REFS and e.refs is not None:
        issues.append(
            _Issue("refs", f"a {e.type} acts on a whole stage and takes no refs", "drop refs")
        )
    own_stage = _TYPE_STAGE.get(e.type)
    if own_stage is not None and e.stage != own_stage:
        issues.append(_Issue("stage", f"a {e.type} belongs to stage {own_stage!r}"))
    if e.type == FORMULA_PROPOSED:
        issues += [_Issue(f, m) for f, m in formula_issues(e.subject, e.detail)]
    if e.type == RECEIPT_TYPE:
        issues += _receipt_issues(e)
    elif e.receipt is not None:
        issues.append(
            _Issue("receipt", f"only an {RECEIPT_TYPE} carries a receipt, not a {e.type}")
        )
    return issues


def _receipt_issues(e: Entry) -> list[_Issue]:
    if e.receipt is None:
        return [_Issue("receipt", f"an {RECEIPT_TYPE} needs its receipt")]
    purpose = STAGE_PURPOSE[e.stage]
    if purpose is None:
        return [_Issue("stage", f"stage {e.stage!r} never searches Evidence: it has no receipts")]
    if e.receipt.purpose != purpose:
        return [
            _Issue(
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

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)
        self.by_seq[entry.seq] = entry
        if entry.type == "retraction" and entry.refs is not None:
            self.retracted_by[entry.refs] = entry.seq

    def issues(self, e: Entry) -> list[_Issue]:
        """Rules about what `e` refers to; `e` is not yet part of the history."""
        if e.refs is None:
            return []
        target = self.by_seq.get(e.refs)
        if target is None:
            return [
                _Issue(
                    "refs",
                    f"no earlier entry has seq {e.refs}",
                    "refs must name an entry already in this ledger",
                )
            ]
        if e.type == "retraction":
            return self._retraction_issues(e, target)
        if e.type in _REFERS_TO_CONCEPT:
            # Imported here, not at module level: thoth.memory builds on sessions (promotion
            # reads ledgers), so a module-level import would make the two packages a cycle.
            from thoth.memory.core import REUSABLE_TYPES

            if target.type not in REUSABLE_TYPES:
                return [
                    _Issue(
                        "refs",
                        f"a {e.type} must refer to a {' or '.join(sorted(REUSABLE_TYPES))} "
                        f"decision; seq {target.seq} is a {target.type}",
                        "only clarified concepts become memories; tables stay in their question",
                    )
                ]
        return []

    def _retraction_issues(self, e: Entry, target: Entry) -> list[_Issue]:
        why = _NOT_RETRACTABLE.get(target.type)
        if why is not None:
            return [
                _Issue(
                    "refs", f"a retraction cannot withdraw a {target.type} (seq {target.seq})", why
                )
            ]
        earlier = self.retracted_by.get(target.seq)
        if earlier is not None:
            return [_Issue("refs", f"seq {target.seq} is already retracted by seq {earlier}")]
        if e.stage != target.stage:
            return [
                _Issue(
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


class Ledger:
    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self.lock_path = path.with_name(path.name + ".lock")

    def entries(self) -> list[Entry]:
        """Every entry in seq order, checked line by line (LedgerCorrupted on any damage)."""
        if not self.path.exists():
            return []
        with file_lock(self.lock_path, exclusive=False):
            return self._read().entries

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
    ) -> Entry:
        """Number, check, write and fsync one entry; EntryRefused (nothing written) when it
        breaks a rule, LedgerCorrupted when the ledger it would extend is damaged."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(self.lock_path, exclusive=True):
            history = self._read()
            fields: dict[str, Any] = {
                "seq": len(history.entries) + 1,  # _read proved the seqs run 1..n
                "timestamp": utc_now(),
                "stage": stage,
                "type": type,
                "subject": subject,
                "detail": detail,
                "rationale": rationale,
                "refs": refs,
                "receipt": receipt,
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
            self._write(entry)
            return entry

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

    def _read(self) -> _History:
        history = _History()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return history
        raw_lines = data.split(b"\n")
        tail = raw_lines.pop()  # what follows the last newline: empty unless a write was cut
        for number, raw in enumerate(raw_lines, start=1):
            history.add(self._parse(number, raw, history))
        if tail:
            line = len(raw_lines) + 1
            problem = Problem(
                f"{self.path} line {line}",
                "the last line has no line end: a write was cut short",
                hint=_REPAIR_HINT,
                code="corrupted",
            )
            raise self._corrupted(line, [problem])
        return history

    def _parse(self, number: int, raw: bytes, history: _History) -> Entry:
        where = f"{self.path} line {number}"

        def damaged(issues: list[_Issue]) -> LedgerCorrupted:
            return self._corrupted(
                number,
                [
                    Problem(
                        where,
                        i.message,
                        field=i.field or None,
                        hint=i.hint or _REPAIR_HINT,
                        code="corrupted",
                    )
                    for i in issues
                ],
            )

        if not raw.strip():
            raise damaged([_Issue("", "empty line")])
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise damaged([_Issue("", f"not valid UTF-8 ({exc.reason})")]) from exc
        try:
            shape = json.loads(text)
        except json.JSONDecodeError as exc:
            raise damaged(
                [_Issue("", f"not valid JSON ({exc.msg} at column {exc.colno})")]
            ) from exc
        if not isinstance(shape, dict):
            raise damaged([_Issue("", f"not a JSON object but a {type(shape).__name__}")])
        try:
            # From the JSON text, not the parsed dict: JSON arrays are valid tuples there.
            entry = Entry.model_validate_json(text)
        except ValidationError as exc:
            raise self._corrupted(number, validation_problems(exc, where, _REPAIR_HINT)) from exc
        issues = _entry_issues(entry)
        if not issues and entry.seq != number:
            issues = [
                _Issue(
                    "seq",
                    f"seq {entry.seq} where {number} was expected: seqs run 1, 2, 3… "
                    "with no gap or repeat",
                )
            ]
        issues = issues or history.issues(entry)
        if issues:
            raise damaged(issues)
        return entry

    def _write(self, entry: Entry) -> None:
        data = (entry.model_dump_json(exclude_none=True) + "\n").encode("utf-8")
        append_durably(self.path, data)
