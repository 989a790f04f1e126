"""An append-only JSONL log: one JSON object per line, lines only ever appended.

The session ledger, the proposal book and the memory registry are such logs; each keeps only
its record types and rules and hands them to this module as a per-line validation hook.

Locking: `<file>.lock` next to the log. Readers take it shared (`JsonlLog.read`), so they never
see a line being written; a writer takes it exclusively (`JsonlLog.writing`), reads and checks
the whole log, then appends, so "read, decide, append" is one step across processes.

Appends are durable: one `write` of every line of the batch, then `fsync` (and the directory's
on creation); a failed write is cut off again, so a batch is all there or not at all.

Reading never skips. Every line is checked in order: blank, not UTF-8, not JSON, not a JSON
object, or refused by the hook (a `LineRejected` or a pydantic `ValidationError`) is damage.
After the last newline nothing may follow: a tail without a line end is a write cut short and
is reported too, after the complete lines before it were checked. Damage is raised through the
owner's `damaged(line, problems)` factory, naming the file and the line; nothing of the log is
used and no append is made on top of it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from thoth.errors import Problem, ProblemsError, ThothError
from thoth.storage.files import append_durably
from thoth.storage.locks import file_lock

T = TypeVar("T")

# (line number, problems) -> the owner's error naming its log; raised by the log.
Damaged = Callable[[int, list[Problem]], ProblemsError]
# (line number, the line's JSON text) -> the record; raises LineRejected or ValidationError.
Validate = Callable[[int, str], T]


@dataclass(frozen=True)
class LineIssue:
    message: str
    field: str | None = None
    hint: str | None = None  # None: the log's repair hint


class LineRejected(ThothError):
    """Raised by a validation hook: the line breaks one of the log's rules (the log reports it
    with the file and line number)."""

    code = "line_rejected"

    def __init__(self, *issues: LineIssue) -> None:
        super().__init__("; ".join(i.message for i in issues))
        self.issues = issues


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


class JsonlLog:
    def __init__(self, path: Path, *, damaged: Damaged, repair_hint: str) -> None:
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")
        self._damaged = damaged
        self.repair_hint = repair_hint

    def read(self, validate: Validate[T]) -> list[T]:
        """Every record in file order under the shared lock; an absent log is empty (and
        reading it creates nothing)."""
        if not self.path.exists():
            return []
        with file_lock(self.lock_path, exclusive=False):
            return self._read(validate)

    @contextmanager
    def writing(self) -> Iterator[LogWriter]:
        """Hold the exclusive lock for the block (creating the log's directory): the writer
        reads and appends while no other process can."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(self.lock_path, exclusive=True):
            writer = LogWriter(self)
            try:
                yield writer
            finally:
                writer._open = False

    # -------------------------------------------------------------- internals

    def _read(self, validate: Validate[T]) -> list[T]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        raw_lines = data.split(b"\n")
        tail = raw_lines.pop()  # what follows the last newline: empty unless a write was cut
        records = [self._parse(number, raw, validate) for number, raw in enumerate(raw_lines, 1)]
        if tail:
            line = len(raw_lines) + 1
            cut = LineIssue("the last line has no line end: a write was cut short")
            raise self._damage(line, [cut])
        return records

    def _parse(self, number: int, raw: bytes, validate: Validate[T]) -> T:
        if not raw.strip():
            raise self._damage(number, [LineIssue("empty line")])
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._damage(number, [LineIssue(f"not valid UTF-8 ({exc.reason})")]) from exc
        try:
            shape = json.loads(text)
        except json.JSONDecodeError as exc:
            issue = LineIssue(f"not valid JSON ({exc.msg} at column {exc.colno})")
            raise self._damage(number, [issue]) from exc
        if not isinstance(shape, dict):
            issue = LineIssue(f"not a JSON object but a {type(shape).__name__}")
            raise self._damage(number, [issue])
        try:
            return validate(number, text)
        except LineRejected as exc:
            raise self._damage(number, list(exc.issues)) from exc
        except ValidationError as exc:
            where = f"{self.path} line {number}"
            raise self._damaged(number, validation_problems(exc, where, self.repair_hint)) from exc

    def _damage(self, number: int, issues: list[LineIssue]) -> ProblemsError:
        where = f"{self.path} line {number}"
        hint = self.repair_hint
        return self._damaged(
            number,
            [Problem(where, i.message, i.field, i.hint or hint, "corrupted") for i in issues],
        )


class LogWriter:
    """The log while its exclusive lock is held (only inside `JsonlLog.writing`)."""

    def __init__(self, log: JsonlLog) -> None:
        self.log = log
        self._open = True

    def read(self, validate: Validate[T]) -> list[T]:
        self._check()
        return self.log._read(validate)

    def append(self, lines: Sequence[str]) -> None:
        """Append a batch of JSON objects (one line each) in one durable write."""
        self._check()
        if not lines:
            return
        for line in lines:
            if "\n" in line or "\r" in line:
                raise ValueError("a JSONL record must be one line: serialise it without newlines")
        append_durably(self.log.path, "".join(f"{line}\n" for line in lines).encode("utf-8"))

    def _check(self) -> None:
        if not self._open:
            raise RuntimeError(f"{self.log.path}: the writer was used after its lock was released")
