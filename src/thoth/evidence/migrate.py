"""Import legacy approved formulas (`formulas/*.sql.md`) as sources: the next `prepare` turns
each into a `formula` unit, or into a unit with review items when it is incompatible."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from thoth.errors import PreconditionError
from thoth.workspace import Workspace

TARGET = "source/legacy-formulas"


@dataclass
class ImportResult:
    copied: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def import_formulas(ws: Workspace, folder: Path | None = None) -> ImportResult:
    origin = folder or ws.root / "formulas"
    if not origin.is_dir():
        raise PreconditionError(f"{origin}: no legacy formulas folder found")
    files = sorted(origin.glob("*.sql.md"))
    if not files:
        raise PreconditionError(f"{origin}: contains no *.sql.md files")
    target = ws.evidence / TARGET
    result = ImportResult()
    clashes = [
        f.name
        for f in files
        if (target / f.name).exists() and (target / f.name).read_bytes() != f.read_bytes()
    ]
    if clashes:
        raise PreconditionError(
            f"{target}: {', '.join(clashes)} already exist with different content; nothing "
            "was copied -> compare them and remove the stale copy"
        )
    target.mkdir(parents=True, exist_ok=True)
    for f in files:
        rel = f"{TARGET}/{f.name}"
        if (target / f.name).exists():
            result.unchanged.append(rel)
            continue
        shutil.copyfile(f, target / f.name)
        result.copied.append(rel)
    return result
