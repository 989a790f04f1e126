"""The global memory registry: one `MemoryRecord` per line of `registry.jsonl`.

The registry is the canonical store of memories; a search index is a projection of it.
Each record remembers where it came from: the session and the seq of the `concept_clarified`
decision a reviewer promoted. Promotion is idempotent on that pair: promoting the same
decision again returns the record already there.

The file is a `thoth.storage.JsonlLog`: an add appends one line (fsynced) under the exclusive
`registry.jsonl.lock`, after reading and checking the whole registry, so two processes
promoting at once neither lose a record nor create a second one for the same decision;
readers take the lock shared and never see a line being written.

Reading never skips: a damaged line (or a last line without its line end) raises
`RegistryCorrupted` naming the file and the line, and no add is made on top of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from thoth.errors import Problem, ProblemsError
from thoth.memory.core import REUSABLE_TYPES, content_sha256, memory_text, text_of
from thoth.storage import (
    JsonlLog,
    LineIssue,
    LineRejected,
    check_utc_timestamp,
    utc_now,
    validation_problems,
)

MEMORY_ID_RE: Final = re.compile(r"mem-(\d{4,})")

_REPAIR_HINT: Final = (
    "Thoth never skips a registry line: restore registry.jsonl from a backup, or repair the "
    "line by hand"
)


class MemoryRefused(ProblemsError):
    """A memory was not added; the registry is unchanged."""


class RegistryCorrupted(ProblemsError):
    """A registry line cannot be read as written by Thoth; the registry was not used."""


@dataclass(frozen=True)
class MemoryDraft:
    """What promotion knows about a decision before the registry gives it an id."""

    session_id: str
    decision_seq: int
    type: str
    subject: str
    detail: str
    rationale: str
    question_context: str
    concepts: tuple[str, ...] = ()


def _nonblank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


class MemoryRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str
    created_at: str
    session_id: str
    decision_seq: int = Field(ge=1)
    type: str
    subject: str
    detail: str
    rationale: str
    question_context: str
    # Kept for the record layout; always empty: a table is never a memory of its own.
    tables: tuple[str, ...] = ()
    concepts: tuple[str, ...] = ()
    content_sha256: str

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not MEMORY_ID_RE.fullmatch(value):
            raise ValueError(f"{value!r} is not a memory id (mem-0001, mem-0002, …)")
        return value

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: str) -> str:
        return check_utc_timestamp(value)

    @field_validator("session_id", "subject")
    @classmethod
    def _filled(cls, value: str) -> str:
        return _nonblank(value)

    @field_validator("type")
    @classmethod
    def _reusable(cls, value: str) -> str:
        if value not in REUSABLE_TYPES:
            raise ValueError(
                f"type {value!r} is not reusable: only {', '.join(sorted(REUSABLE_TYPES))} "
                "decisions become memories; table and column choices stay in their session"
            )
        return value

    @field_validator("tables")
    @classmethod
    def _no_tables(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if value:
            raise ValueError(
                f"tables {list(value)} must be empty: a table or column belongs inside the "
                "detail as part of the explanation, never as a memory of its own"
            )
        return value

    @field_validator("content_sha256")
    @classmethod
    def _hash_matches(cls, value: str, info: ValidationInfo) -> str:
        names = ("type", "subject", "detail", "rationale", "question_context", "concepts")
        if not all(n in info.data for n in names):
            return value  # another field already failed; that error is the one to fix
        expected = content_sha256(memory_text(**{n: info.data[n] for n in names}))
        if value != expected:
            raise ValueError(
                f"{value!r} is not the SHA-256 of the record's text ({expected}): the text "
                "was changed without its hash, so the search index would keep the old text"
            )
        return value

    def text(self) -> str:
        """The canonical text to embed (see thoth.memory.core.memory_text)."""
        return text_of(self)


def _number(memory_id: str) -> int:
    match = MEMORY_ID_RE.fullmatch(memory_id)
    assert match is not None  # MemoryRecord validated the id
    return int(match.group(1))


@dataclass
class _Uniqueness:
    """The validation hook of registry.jsonl: one line per memory id and per promoted
    decision."""

    by_id: dict[str, int] = field(default_factory=dict)
    by_decision: dict[tuple[str, int], int] = field(default_factory=dict)

    def parse(self, number: int, text: str) -> MemoryRecord:
        # From the JSON text, not a parsed dict: JSON arrays are valid tuples there.
        record = MemoryRecord.model_validate_json(text)
        first = self.by_id.setdefault(record.id, number)
        if first != number:
            raise LineRejected(LineIssue(f"{record.id} is already the id at line {first}", "id"))
        key = (record.session_id, record.decision_seq)
        first = self.by_decision.setdefault(key, number)
        if first != number:
            raise LineRejected(
                LineIssue(
                    f"session {key[0]} seq {key[1]} is already promoted at line {first}",
                    "decision_seq",
                )
            )
        return record


class Registry:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.log = JsonlLog(path, damaged=self._corrupted, repair_hint=_REPAIR_HINT)

    def all(self) -> list[MemoryRecord]:
        """Every record in file order; an absent file is an empty registry."""
        return self.log.read(_Uniqueness().parse)

    def get(self, memory_id: str) -> MemoryRecord | None:
        return next((r for r in self.all() if r.id == memory_id), None)

    def find(self, session_id: str, decision_seq: int) -> MemoryRecord | None:
        """The memory promoted from that session's decision, if any."""
        return next(
            (
                r
                for r in self.all()
                if r.session_id == session_id and r.decision_seq == decision_seq
            ),
            None,
        )

    def add(self, draft: MemoryDraft) -> tuple[MemoryRecord, bool]:
        """Add the memory of a promoted decision: `(record, True)` when created,
        `(existing record, False)` when that session's decision is already a memory.
        MemoryRefused when the draft breaks a rule or contradicts the existing record."""
        with self.log.writing() as writer:
            records = writer.read(_Uniqueness().parse)
            record = self._build(draft, records)
            existing = next(
                (
                    r
                    for r in records
                    if r.session_id == draft.session_id and r.decision_seq == draft.decision_seq
                ),
                None,
            )
            if existing is not None:
                if existing.content_sha256 != record.content_sha256:
                    raise self._refused(
                        draft,
                        Problem(
                            f"{existing.id}",
                            f"session {draft.session_id} seq {draft.decision_seq} is already "
                            f"{existing.id} with other content (sha256 "
                            f"{existing.content_sha256[:12]}…, this draft "
                            f"{record.content_sha256[:12]}…)",
                            hint="ledger decisions never change: check the session and seq "
                            "this draft was built from",
                        ),
                    )
                return existing, False
            writer.append([record.model_dump_json()])
            return record, True

    # -------------------------------------------------------------- internals

    def _refused(self, draft: MemoryDraft, *problems: Problem) -> MemoryRefused:
        return MemoryRefused(
            f"memory for session {draft.session_id} seq {draft.decision_seq} refused; "
            f"{self.path} is unchanged",
            list(problems),
        )

    def _corrupted(self, number: int, problems: list[Problem]) -> RegistryCorrupted:
        return RegistryCorrupted(
            f"memory registry {self.path} is damaged at line {number}; it was not used", problems
        )

    def _build(self, draft: MemoryDraft, records: list[MemoryRecord]) -> MemoryRecord:
        number = max((_number(r.id) for r in records), default=0) + 1
        fields: dict[str, Any] = {
            "id": f"mem-{number:04d}",
            "created_at": utc_now(),
            "session_id": draft.session_id,
            "decision_seq": draft.decision_seq,
            "type": draft.type,
            "subject": draft.subject,
            "detail": draft.detail,
            "rationale": draft.rationale,
            "question_context": draft.question_context,
            "tables": (),
            "concepts": tuple(draft.concepts),
        }
        try:
            fields["content_sha256"] = content_sha256(text_of(draft))
            return MemoryRecord.model_validate(fields)
        except ValidationError as exc:
            where = f"session {draft.session_id} seq {draft.decision_seq}"
            raise self._refused(draft, *validation_problems(exc, where, None)) from exc
