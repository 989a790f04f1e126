"""The global memory registry: one `MemoryRecord` per line of `registry.jsonl`.

The registry is the canonical store of memories; a search index is a projection of it.
Each record remembers where it came from: the session and the seq of the `concept_clarified`
decision a reviewer promoted. Promotion is idempotent on that pair: promoting the same
decision again returns the record already there.

The file is a `thoth.storage.JsonlLog`: an add appends one line (fsynced) under the exclusive
`registry.jsonl.lock`, after reading and checking the whole registry, so two processes
promoting at once neither lose a record nor create a second one for the same decision;
readers take the lock shared and never see a line being written.

Besides memories, two kinds of line record what a curator decided later, append-only: a
`memory_retired` line (who, when, why) and a `memory_merged` line (KEEP absorbs DROP…; who,
when, why). A memory line is never rewritten: its state (active, retired, merged into another)
is computed from the lines after it (`RegistryState`). A retired or merged-away memory keeps
its id and its session + seq, so promoting that decision again returns it, never a twin.

Lines of the earlier system's other record types (`table_promoted`, `table_excluded`, … any
ledger decision type that is not reusable) are skipped by type: counted and named by
`RegistryState.skipped` (`tht memory verify`), never a memory. Reading never skips anything
else: a line that is not JSON, of an unknown type, with a broken hash, or a curation line
about a memory that is not there or not active raises `RegistryCorrupted` naming the file and
the line, and no add is made on top of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from thoth.errors import Problem, ProblemsError
from thoth.memory.core import REUSABLE_TYPES, content_sha256, memory_text, text_of
from thoth.session.ledger import DECISION_TYPES
from thoth.storage import (
    JsonlLog,
    LineIssue,
    LineRejected,
    check_utc_timestamp,
    utc_now,
    validation_problems,
)

MEMORY_ID_RE: Final = re.compile(r"mem-(\d{4,})")
RETIRED: Final = "memory_retired"
MERGED: Final = "memory_merged"
# Record types of the earlier system a registry may still hold: decisions that answer one
# question (tables, columns, formulas…). Skipped by type, never read as memories.
LEGACY_TYPES: Final = frozenset(DECISION_TYPES) - REUSABLE_TYPES

MemoryState = Literal["active", "retired", "merged"]
# A line that may not be a memory (a curation line or an older type), cheaper than a parse.
_MAYBE_OTHER: Final = re.compile(
    "|".join(re.escape(f'"{t}"') for t in sorted({RETIRED, MERGED, *LEGACY_TYPES}))
)

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


class _Curation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    at: str
    by: str
    why: str

    @field_validator("at")
    @classmethod
    def _utc(cls, value: str) -> str:
        return check_utc_timestamp(value)

    @field_validator("by", "why")
    @classmethod
    def _filled(cls, value: str) -> str:
        return _nonblank(value)


class RetireEvent(_Curation):
    """A curator retired a memory: never proposed again, still readable where it was used."""

    type: Literal["memory_retired"] = "memory_retired"
    memory_id: str


class MergeEvent(_Curation):
    """A curator merged `dropped` into `keep`: the dropped memories are no longer proposed,
    and `keep` carries their provenance as well as its own."""

    type: Literal["memory_merged"] = "memory_merged"
    keep: str
    dropped: tuple[str, ...]


Event = RetireEvent | MergeEvent


@dataclass(frozen=True)
class SkippedLine:
    """A line of another record type, left out by type."""

    line: int
    type: str
    id: str | None


@dataclass(frozen=True)
class Source:
    """Where a memory's content was promoted from."""

    memory_id: str
    session_id: str
    decision_seq: int


@dataclass(frozen=True)
class RegistryState:
    """The registry as read: memories, curation events, skipped lines, and what follows."""

    records: tuple[MemoryRecord, ...]
    events: tuple[Event, ...]
    skipped: tuple[SkippedLine, ...] = ()

    @property
    def by_id(self) -> dict[str, MemoryRecord]:
        return {r.id: r for r in self.records}

    @property
    def merged_into(self) -> dict[str, str]:
        """dropped id -> the id that kept it (directly)."""
        return {d: e.keep for e in self.events if isinstance(e, MergeEvent) for d in e.dropped}

    @property
    def retired(self) -> set[str]:
        return {e.memory_id for e in self.events if isinstance(e, RetireEvent)}

    def state(self, memory_id: str) -> MemoryState:
        if memory_id in self.retired:
            return "retired"
        if memory_id in self.merged_into:
            return "merged"
        return "active"

    def active(self) -> list[MemoryRecord]:
        return [r for r in self.records if self.state(r.id) == "active"]

    def survivor(self, memory_id: str) -> str:
        """The memory that now stands for `memory_id` (itself unless merged away)."""
        into = self.merged_into
        while memory_id in into:
            memory_id = into[memory_id]
        return memory_id

    def sources(self, memory_id: str) -> list[Source]:
        """Its own provenance, then that of every memory merged into it (transitively)."""
        by_id = self.by_id
        out: list[Source] = []
        pending = [memory_id]
        into = self.merged_into
        while pending:
            current = pending.pop(0)
            record = by_id[current]
            out.append(Source(record.id, record.session_id, record.decision_seq))
            pending += [d for d, k in into.items() if k == current]
        return out

    def history(self, memory_id: str) -> list[Event]:
        return [
            e
            for e in self.events
            if (isinstance(e, RetireEvent) and e.memory_id == memory_id)
            or (isinstance(e, MergeEvent) and (e.keep == memory_id or memory_id in e.dropped))
        ]


def _number(memory_id: str) -> int:
    match = MEMORY_ID_RE.fullmatch(memory_id)
    assert match is not None  # MemoryRecord validated the id
    return int(match.group(1))


Line = MemoryRecord | Event | SkippedLine


@dataclass
class _Reader:
    """The validation hook of registry.jsonl: one line per memory id and per promoted
    decision; curation lines only about memories there and active; legacy types skipped."""

    by_id: dict[str, int] = field(default_factory=dict)
    by_decision: dict[tuple[str, int], int] = field(default_factory=dict)
    inactive: dict[str, str] = field(default_factory=dict)  # id -> "retired" / "merged into X"

    def parse(self, number: int, text: str) -> Line:
        # Most lines are memories: their type is read by the model itself, without parsing
        # the JSON a second time (a 10k-line registry is read on every promotion).
        kind = json.loads(text).get("type") if _MAYBE_OTHER.search(text) else None
        if kind == RETIRED:
            return self._retire(RetireEvent.model_validate_json(text))
        if kind == MERGED:
            return self._merge(MergeEvent.model_validate_json(text))
        if isinstance(kind, str) and kind in LEGACY_TYPES:
            found = json.loads(text).get("id")
            return SkippedLine(number, kind, found if isinstance(found, str) else None)
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

    def problem(self, memory_id: str) -> str | None:
        """Why `memory_id` cannot be retired or merged now, or None."""
        if memory_id not in self.by_id:
            return f"{memory_id} is not a memory of this registry"
        if memory_id in self.inactive:
            return f"{memory_id} is already {self.inactive[memory_id]}"
        return None

    def _retire(self, event: RetireEvent) -> RetireEvent:
        why = self.problem(event.memory_id)
        if why is not None:
            raise LineRejected(LineIssue(f"retires {event.memory_id}, but {why}", "memory_id"))
        self.inactive[event.memory_id] = "retired"
        return event

    def _merge(self, event: MergeEvent) -> MergeEvent:
        ids = [event.keep, *event.dropped]
        if not event.dropped or len(set(ids)) != len(ids):
            raise LineRejected(
                LineIssue(f"merges {ids}: needs a keep and distinct others", "dropped")
            )
        for memory_id in ids:
            why = self.problem(memory_id)
            if why is not None:
                raise LineRejected(LineIssue(f"merges {memory_id}, but {why}", "keep"))
        for memory_id in event.dropped:
            self.inactive[memory_id] = f"merged into {event.keep}"
        return event


def _state(lines: Sequence[Line]) -> RegistryState:
    return RegistryState(
        records=tuple(x for x in lines if isinstance(x, MemoryRecord)),
        events=tuple(x for x in lines if isinstance(x, RetireEvent | MergeEvent)),
        skipped=tuple(x for x in lines if isinstance(x, SkippedLine)),
    )


class Registry:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.log = JsonlLog(path, damaged=self._corrupted, repair_hint=_REPAIR_HINT)

    def all(self) -> list[MemoryRecord]:
        """Every memory in file order, whatever its state (retired and merged-away ones
        included: they keep their session + seq); an absent file is an empty registry."""
        return list(self.state().records)

    def state(self) -> RegistryState:
        """Memories, curation events and skipped legacy lines, read once."""
        return _state(self.log.read(_Reader().parse))

    def active(self) -> list[MemoryRecord]:
        """The memories F2 may propose: neither retired nor merged away."""
        return self.state().active()

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
        return self.add_many([draft])[0]

    def add_many(self, drafts: Sequence[MemoryDraft]) -> list[tuple[MemoryRecord, bool]]:
        """`add` for several drafts, all checked first and then appended in one durable write
        (all of them or none)."""
        out: list[tuple[MemoryRecord, bool]] = []
        with self.log.writing() as writer:
            records = list(_state(writer.read(_Reader().parse)).records)
            new: list[MemoryRecord] = []
            for draft in drafts:
                record = self._build(draft, records)
                existing = next(
                    (
                        r
                        for r in records
                        if r.session_id == draft.session_id and r.decision_seq == draft.decision_seq
                    ),
                    None,
                )
                if existing is None:
                    records.append(record)
                    new.append(record)
                    out.append((record, True))
                    continue
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
                out.append((existing, False))
            writer.append([r.model_dump_json() for r in new])
        return out

    def curate(self, event: Event) -> RegistryState:
        """Append a retire or merge line after checking it against the whole registry under
        the exclusive lock. MemoryRefused (registry unchanged) when a memory it names is
        missing, retired or merged away, or a merge names one memory twice. Returns the state
        before the line."""
        with self.log.writing() as writer:
            reader = _Reader()
            state = _state(writer.read(reader.parse))
            problems = _curation_problems(event, reader)
            if problems:
                raise MemoryRefused(
                    f"{_describe(event)} refused; {self.path} is unchanged",
                    problems,
                    code=problems[0].code,
                )
            writer.append([event.model_dump_json()])
            return state

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


def _describe(event: Event) -> str:
    if isinstance(event, RetireEvent):
        return f"retiring {event.memory_id}"
    return f"merging {', '.join(event.dropped)} into {event.keep}"


def _curation_problems(event: Event, reader: _Reader) -> list[Problem]:
    """What makes a curation line wrong against the registry read by `reader`."""
    hint = "list the memories and their state with `tht memory list`"
    if isinstance(event, RetireEvent):
        where = event.memory_id
        if event.memory_id not in reader.by_id:
            return [Problem(where, f"{where} is not in the registry", hint=hint, code="not_found")]
        if event.memory_id in reader.inactive:
            state = reader.inactive[event.memory_id]
            return [Problem(where, f"{where} is already {state}", hint=hint, code="not_active")]
        return []
    problems: list[Problem] = []
    if not event.dropped:
        problems.append(
            Problem(event.keep, "nothing to merge into it", hint="name one memory to drop or more")
        )
    if event.keep in event.dropped:
        problems.append(
            Problem(
                event.keep,
                f"{event.keep} cannot be merged into itself",
                hint="name the memory to keep once, then the others",
                code="merge_into_itself",
            )
        )
    if len(set(event.dropped)) != len(event.dropped):
        problems.append(Problem(event.keep, "a memory to drop is named twice", code="invalid"))
    for memory_id in dict.fromkeys([event.keep, *event.dropped]):
        if memory_id not in reader.by_id:
            problems.append(
                Problem(
                    memory_id, f"{memory_id} is not in the registry", hint=hint, code="not_found"
                )
            )
        elif memory_id in reader.inactive:
            role = "the memory to keep" if memory_id == event.keep else "a memory to drop"
            problems.append(
                Problem(
                    memory_id,
                    f"{memory_id} ({role}) is already {reader.inactive[memory_id]}",
                    hint=hint,
                    code="not_active",
                )
            )
    return problems
