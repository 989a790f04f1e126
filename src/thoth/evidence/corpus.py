"""The curated corpus on disk: one unit per file under curated/<kind>/<slug>.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from thoth.errors import Problem
from thoth.evidence.document import parse_unit
from thoth.evidence.ids import PREFIX, slug_of
from thoth.evidence.model import KINDS, Unit


@dataclass(frozen=True)
class UnitFile:
    rel: str  # relative to evidence/, e.g. "curated/enum/esito-dimissione.md"
    unit: Unit


def unit_rel_path(unit: Unit) -> str:
    return f"curated/{unit.kind}/{slug_of(unit.id)}.md"


def load_corpus(evidence_dir: Path) -> tuple[list[UnitFile], list[Problem]]:
    """Parse every unit file; structural problems (schema, directory/kind, file name, duplicate
    IDs, stray files) are reported, never skipped silently."""
    curated = evidence_dir / "curated"
    files: list[UnitFile] = []
    problems: list[Problem] = []
    if not curated.is_dir():
        return files, problems
    seen: dict[str, str] = {}
    for path in sorted(curated.rglob("*")):
        if path.is_dir() or path.name.startswith("."):
            continue
        rel = path.relative_to(evidence_dir).as_posix()
        parts = rel.split("/")
        if path.suffix != ".md":
            problems.append(
                Problem(
                    rel,
                    "not a unit file: only `.md` units live under curated/",
                    hint="move or delete it",
                )
            )
            continue
        if len(parts) != 3 or parts[1] not in KINDS:
            problems.append(
                Problem(rel, "unit file outside curated/<kind>/", hint=f"kinds: {', '.join(KINDS)}")
            )
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            problems.append(Problem(rel, f"not valid UTF-8 at byte {exc.start}"))
            continue
        parsed = parse_unit(text, rel)
        if isinstance(parsed, list):
            problems += parsed
            continue
        if parsed.kind != parts[1]:
            problems.append(
                Problem(
                    rel,
                    f"kind is {parsed.kind!r} but the file is in curated/{parts[1]}/",
                    field="kind",
                    hint=f"move it to curated/{parsed.kind}/",
                )
            )
        if path.stem != slug_of(parsed.id):
            problems.append(
                Problem(
                    rel,
                    f"file name does not match id {parsed.id!r}",
                    field="id",
                    hint=f"rename the file to {slug_of(parsed.id)}.md",
                )
            )
        if parsed.id in seen:
            problems.append(
                Problem(
                    rel, f"duplicate id {parsed.id!r}, also used by {seen[parsed.id]}", field="id"
                )
            )
        seen.setdefault(parsed.id, rel)
        files.append(UnitFile(rel, parsed))
    return files, problems


def present_ids(evidence_dir: Path) -> set[str]:
    """IDs that have a unit file, from file names alone (no parsing)."""
    return {PREFIX + p.stem for p in (evidence_dir / "curated").glob("*/*.md")}


def load_units(evidence_dir: Path, ids: set[str]) -> tuple[list[UnitFile], list[Problem]]:
    """Parse only the unit files of the given IDs (prepare touches nothing else)."""
    files: list[UnitFile] = []
    problems: list[Problem] = []
    for unit_id in sorted(ids):
        for path in sorted((evidence_dir / "curated").glob(f"*/{slug_of(unit_id)}.md")):
            rel = path.relative_to(evidence_dir).as_posix()
            try:
                parsed = parse_unit(path.read_text(encoding="utf-8"), rel)
            except UnicodeDecodeError as exc:
                problems.append(Problem(rel, f"not valid UTF-8 at byte {exc.start}"))
                continue
            if isinstance(parsed, list):
                problems += parsed
            elif parsed.id != unit_id:
                problems.append(
                    Problem(rel, f"file name does not match id {parsed.id!r}", field="id")
                )
            else:
                files.append(UnitFile(rel, parsed))
    return files, problems
