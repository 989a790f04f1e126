"""`tht evidence validate`: the full deterministic check of the corpus (seed §5.4)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from thoth.errors import Problem, ProblemsError
from thoth.evidence.checks import check_credentials, check_provenance
from thoth.evidence.corpus import load_corpus
from thoth.evidence.fragments import TOO_LARGE, oversized
from thoth.evidence.ids import PREFIX
from thoth.evidence.manifest import Detached, load_manifest
from thoth.evidence.model import ReviewItem
from thoth.evidence.sources import SourceFile, discover, read_source
from thoth.workspace import Workspace

Outcome = Literal["valid", "valid_with_doubts", "invalid"]


@dataclass(frozen=True)
class UnitDoubts:
    id: str
    file: str
    review_items: list[ReviewItem]


@dataclass
class ValidationReport:
    units: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    doubts: list[UnitDoubts] = field(default_factory=list)
    orphans: list[Detached] = field(default_factory=list)
    retirement_candidates: list[Detached] = field(default_factory=list)

    too_large: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> Outcome:
        if self.problems:
            return "invalid"
        if self.doubts or self.orphans or self.retirement_candidates or self.too_large:
            return "valid_with_doubts"
        return "valid"

    @property
    def publishable(self) -> bool:
        return self.outcome == "valid"

    def as_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "publishable": self.publishable,
            "units": self.units,
            "by_kind": self.by_kind,
            "problems": [p.as_dict() for p in self.problems],
            "blockers": {
                "review_items": [
                    {
                        "id": d.id,
                        "file": d.file,
                        "items": [i.model_dump(exclude_none=True) for i in d.review_items],
                    }
                    for d in self.doubts
                ],
                "orphans": [o.model_dump() for o in self.orphans],
                "retirement_candidates": [c.model_dump() for c in self.retirement_candidates],
                TOO_LARGE: self.too_large,
            },
        }


def validate_workspace(ws: Workspace) -> ValidationReport:
    report = ValidationReport()
    evidence = ws.evidence
    try:
        manifest = load_manifest(ws.manifest_path)
    except ProblemsError as exc:
        report.problems += exc.problems
        return report
    files, problems = load_corpus(evidence)
    report.problems += problems
    report.units = len(files)
    report.by_kind = dict(sorted(Counter(f.unit.kind for f in files).items()))
    report.orphans = list(manifest.orphans)
    report.retirement_candidates = list(manifest.retirement_candidates)
    detached = manifest.orphan_ids() | manifest.candidate_ids()

    max_bytes = ws.settings.evidence.max_source_bytes
    on_disk, source_problems = discover(evidence, max_bytes)
    report.problems += source_problems
    sources: dict[str, SourceFile | None] = {s.rel: s for s in on_disk}

    def source(rel: str) -> SourceFile | None:
        if rel not in sources:
            found = read_source(evidence, rel, max_bytes)
            sources[rel] = None if isinstance(found, Problem) else found
        return sources[rel]

    for rel, entry in manifest.sources.items():
        current = sources.get(rel)
        if current is None:
            report.problems.append(
                Problem(
                    f"evidence/{ws.manifest_path.name}",
                    f"lists source {rel!r}, which does not exist",
                    field=f"sources.{rel}",
                    hint="run `tht evidence prepare`",
                )
            )
        elif current.sha256 != entry.sha256:
            report.problems.append(
                Problem(
                    rel,
                    "changed since the last prepare",
                    hint="run `tht evidence prepare` and review the diff",
                    code="source_changed",
                )
            )
    for rel in sources:
        if rel not in manifest.sources:
            report.problems.append(
                Problem(
                    rel,
                    "new source not prepared yet",
                    hint="run `tht evidence prepare`",
                    code="source_not_prepared",
                )
            )

    # A unit file that failed to parse still exists: do not also call its id missing.
    on_file = {f.unit.id for f in files} | {
        PREFIX + path.stem for path in ws.curated.glob("*/*.md")
    }
    for unit_id in sorted(manifest.known_ids() - set(manifest.retired) - on_file):
        report.problems.append(
            Problem(
                unit_id,
                "listed in the manifest but no unit file has it",
                hint=f"restore the file from Git, or `tht evidence resolve {unit_id} --retire`",
            )
        )

    for f in files:
        unit = f.unit
        listed = manifest.source_of(unit.id)
        if unit.id in manifest.retired:
            report.problems.append(
                Problem(f.rel, f"{unit.id} was retired; its ID cannot come back", field="id")
            )
        elif listed is None and unit.id not in manifest.orphan_ids():
            report.problems.append(
                Problem(
                    f.rel,
                    "unit not tracked by the manifest",
                    field="id",
                    hint="units come from `tht evidence prepare`; do not create unit files by hand",
                )
            )
        elif listed is not None and listed != unit.provenance.source_file:
            report.problems.append(
                Problem(
                    f.rel,
                    f"the manifest derives this unit from {listed} "
                    f"but its provenance names "
                    f"{unit.provenance.source_file}: a unit has one source",
                    field="provenance.source_file",
                )
            )
        if unit.id not in detached:
            report.problems += check_provenance(unit, f.rel, source(unit.provenance.source_file))
        report.problems += check_credentials(unit, f.rel)
        flagged = any(i.code == TOO_LARGE for i in unit.review_items)
        if flagged or oversized(unit, ws.settings.evidence.max_chunk_chars):
            report.too_large.append(unit.id)
        if unit.review_items:
            report.doubts.append(UnitDoubts(unit.id, f.rel, list(unit.review_items)))
    return report
