"""Registries of the earlier system: `tht memory verify` (what the registry holds, and the lines
of other record types it skips) and `tht memory import FILE` (bring such a registry in).

An imported file is read as strictly as our own registry (thoth.memory.registry): a line that
is not JSON, a last line cut short, or a memory whose hash does not match its text refuses the
whole import. Lines of another record type (`table_promoted`, …) are skipped and reported; a
memory whose session + seq is already a memory here is skipped as already there. Every memory
kept must come from a session of this workspace: a registry whose memories name sessions this
workspace does not hold belongs to another workspace and is refused (its provenance would
point nowhere). The kept memories are appended in one durable write under new ids (the report
maps them); their index points and session markers are then written by the same repair
`tht memory reconcile` runs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from thoth.errors import Problem, ProblemsError
from thoth.memory.core import REUSABLE_TYPES
from thoth.memory.index import MemoryIndex
from thoth.memory.registry import MemoryDraft, MemoryRecord, Registry, RegistryCorrupted
from thoth.session import SessionStore


class ImportRefused(ProblemsError):
    """The file was not imported; the registry is unchanged."""


class SkippedType(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: str
    count: int
    lines: tuple[int, ...]


class IndexSkipped(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: str
    count: int
    memory_ids: tuple[str, ...]


class VerifyReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: Literal[True] = True
    registry: str
    memories: int
    active: int
    retired: int
    merged: int
    curation_lines: int
    skipped: tuple[SkippedType, ...]  # lines of other record types, by type
    index_points: int | None = None  # memory points in the index (None: not checked)
    index_skipped: tuple[IndexSkipped, ...] = ()  # points of other record types, by type


def index_types(index: MemoryIndex) -> tuple[int, tuple[IndexSkipped, ...]]:
    """How many memory points the index holds, and those of another record type (never
    proposed: recall drops them by type), by type."""
    if not index.exists():
        return 0, ()
    _, points = index.points()
    other: dict[str, list[str]] = {}
    for point in points:
        kind = str(point.payload.get("type"))
        if kind not in REUSABLE_TYPES:
            other.setdefault(kind, []).append(str(point.payload.get("memory_id")))
    return len(points), tuple(
        IndexSkipped(type=t, count=len(ids), memory_ids=tuple(sorted(ids)))
        for t, ids in sorted(other.items())
    )


def verify_registry(registry: Registry, index: MemoryIndex | None = None) -> VerifyReport:
    """Read the whole registry (RegistryCorrupted on any damage) and say what it holds; with
    `index`, the memory index's points of other record types too."""
    state = registry.state()
    states = Counter(state.state(r.id) for r in state.records)
    by_type: dict[str, list[int]] = {}
    for line in state.skipped:
        by_type.setdefault(line.type, []).append(line.line)
    points, index_skipped = index_types(index) if index is not None else (None, ())
    return VerifyReport(
        index_points=points,
        index_skipped=index_skipped,
        registry=str(registry.path),
        memories=len(state.records),
        active=states["active"],
        retired=states["retired"],
        merged=states["merged"],
        curation_lines=len(state.events),
        skipped=tuple(
            SkippedType(type=t, count=len(n), lines=tuple(n)) for t, n in sorted(by_type.items())
        ),
    )


class ImportSkip(BaseModel):
    model_config = ConfigDict(frozen=True)

    line: int
    id: str | None
    reason: str


class Imported(BaseModel):
    model_config = ConfigDict(frozen=True)

    line: int
    old_id: str
    memory_id: str
    session_id: str
    decision_seq: int


class ImportReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: Literal[True] = True
    file: str
    imported: tuple[Imported, ...]
    skipped: tuple[ImportSkip, ...]


def read_import(path: Path) -> tuple[list[tuple[int, MemoryRecord]], list[ImportSkip]]:
    """The file's memories (with their line) and its skipped lines. Read with the registry's
    own reader, so what corrupts a registry refuses an import."""
    source = Registry(path)
    try:
        state = source.state()
    except RegistryCorrupted as exc:
        raise ImportRefused(
            f"{path} was not imported: {exc.message_text()}; the registry is unchanged",
            exc.problems,
            code="corrupted",
        ) from exc
    lines = _line_numbers(path)
    skipped = [
        ImportSkip(
            line=s.line,
            id=s.id,
            reason=f"a {s.type} record: table and column choices stay in their session",
        )
        for s in state.skipped
    ]
    retired = state.retired | set(state.merged_into)
    kept: list[tuple[int, MemoryRecord]] = []
    for record in state.records:
        if record.id in retired:
            skipped.append(
                ImportSkip(line=lines[record.id], id=record.id, reason="retired or merged there")
            )
        else:
            kept.append((lines[record.id], record))
    return kept, skipped


def _line_numbers(path: Path) -> dict[str, int]:
    import json

    out: dict[str, int] = {}
    for number, text in enumerate(path.read_text("utf-8").splitlines(), 1):
        found = json.loads(text).get("id")
        if isinstance(found, str):
            out.setdefault(found, number)
    return out


def import_registry(path: Path, *, registry: Registry, sessions: SessionStore) -> ImportReport:
    """Append the reusable memories of `path` to `registry` (nothing else is written here; the
    caller runs the reconcile that indexes them and writes their markers)."""
    if not path.is_file():
        raise ImportRefused(
            f"{path} was not imported: no such file",
            [Problem(str(path), "no such file", hint="name a registry.jsonl", code="not_found")],
            code="not_found",
        )
    kept, skipped = read_import(path)
    known = {s.id for s in sessions.list()}
    foreign = sorted({r.session_id for _, r in kept} - known)
    if foreign:
        raise ImportRefused(
            f"{path} was not imported: its memories come from sessions this workspace does not "
            f"hold ({', '.join(foreign[:5])}{' …' if len(foreign) > 5 else ''}); the registry "
            "is unchanged",
            [
                Problem(
                    str(path),
                    f"{len(foreign)} session(s) of its memories are not in "
                    f"{sessions.sessions_dir}: it is another workspace's registry",
                    hint="import it into the workspace its sessions belong to, or copy those "
                    "sessions here first",
                    code="other_workspace",
                )
            ],
            code="other_workspace",
        )
    drafts = [
        (
            line,
            record,
            MemoryDraft(
                session_id=record.session_id,
                decision_seq=record.decision_seq,
                type=record.type,
                subject=record.subject,
                detail=record.detail,
                rationale=record.rationale,
                question_context=record.question_context,
                concepts=record.concepts,
            ),
        )
        for line, record in kept
    ]
    added = registry.add_many([d for _, _, d in drafts])
    imported: list[Imported] = []
    for (line, record, _), (new, created) in zip(drafts, added, strict=True):
        if created:
            imported.append(
                Imported(
                    line=line,
                    old_id=record.id,
                    memory_id=new.id,
                    session_id=new.session_id,
                    decision_seq=new.decision_seq,
                )
            )
        else:
            skipped.append(
                ImportSkip(
                    line=line,
                    id=record.id,
                    reason=f"session {record.session_id} seq {record.decision_seq} is already "
                    f"{new.id} here",
                )
            )
    return ImportReport(
        file=str(path),
        imported=tuple(imported),
        skipped=tuple(sorted(skipped, key=lambda s: s.line)),
    )
