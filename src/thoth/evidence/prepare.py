"""`tht evidence prepare`: loose sources -> curated units + manifest, all or nothing (seed §5-6).

Everything is computed and validated in memory first; only a batch with no problem at all is
written, in one swap, with the manifest last. No commits, no branches, no retries.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from thoth.errors import PreconditionError, Problem, ProblemsError
from thoth.evidence.checks import check_credentials, check_provenance
from thoth.evidence.corpus import UnitFile, load_units, present_ids, unit_rel_path
from thoth.evidence.document import problems_from_validation, render_unit
from thoth.evidence.fragments import TOO_LARGE, oversized
from thoth.evidence.ids import allocate_id
from thoth.evidence.manifest import (
    PIPELINE_VERSION,
    Detached,
    Manifest,
    SourceEntry,
    UnitEntry,
    load_manifest,
)
from thoth.evidence.model import DEFAULT_PURPOSES, SCHEMA_VERSION, UNIT_ADAPTER, ReviewItem, Unit
from thoth.evidence.restructure.base import Draft, RestructureError, Restructurer
from thoth.evidence.sources import SourceFile, credential_problem, discover
from thoth.gitrepo import require_clean
from thoth.storage.files import apply_changes
from thoth.workspace import Workspace

UNSUPPORTED = "source_no_longer_supports_unit"
Status = Literal["unchanged", "new", "changed", "renamed", "removed", "reprocessed"]


@dataclass
class SourceReport:
    source: str
    status: Status
    renamed_from: str | None = None
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    retirement_candidates: list[str] = field(default_factory=list)
    orphaned: list[str] = field(default_factory=list)


@dataclass
class PrepareReport:
    restructurer: str
    sources: list[SourceReport] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    review_items: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    @property
    def noop(self) -> bool:
        return not self.written and not self.deleted

    def counts(self) -> dict[str, int]:
        return dict(Counter(s.status for s in self.sources))

    def as_dict(self) -> dict[str, Any]:
        return {"noop": self.noop, "counts": self.counts(), **asdict(self)}


def fingerprint(draft: Draft) -> str:
    data = asdict(draft)
    data.pop("existing_id")
    blob = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _with_review_item(unit: Unit, code: str, message: str) -> Unit:
    if any(i.code == code for i in unit.review_items):
        return unit
    items = [*unit.review_items, ReviewItem(code=code, message=message)]
    return unit.model_copy(update={"review_items": items})


def _without_review_item(unit: Unit, code: str) -> Unit:
    items = [i for i in unit.review_items if i.code != code]
    return unit.model_copy(update={"review_items": items})


class _Batch:
    """The state of one prepare run, built in memory."""

    def __init__(self, ws: Workspace, manifest: Manifest, files: list[UnitFile]) -> None:
        self.ws = ws
        self.old = manifest
        self.new = manifest.model_copy(deep=True)
        self.new.pipeline_version = PIPELINE_VERSION
        self.files = {f.unit.id: f for f in files}
        self.taken = present_ids(ws.evidence) | manifest.known_ids()
        self.units: dict[str, Unit] = {}  # units to (re)write, by id
        self.problems: list[Problem] = []

    def unit(self, unit_id: str) -> Unit | None:
        if unit_id in self.units:
            return self.units[unit_id]
        f = self.files.get(unit_id)
        return f.unit if f else None

    def detach(self, unit_id: str, source: str, orphan: bool) -> None:
        self.new.orphans = [o for o in self.new.orphans if o.id != unit_id]
        self.new.retirement_candidates = [
            c for c in self.new.retirement_candidates if c.id != unit_id
        ]
        (self.new.orphans if orphan else self.new.retirement_candidates).append(
            Detached(id=unit_id, source=source)
        )

    def attach(self, unit_id: str) -> None:
        self.new.orphans = [o for o in self.new.orphans if o.id != unit_id]
        self.new.retirement_candidates = [
            c for c in self.new.retirement_candidates if c.id != unit_id
        ]

    def build(self, draft: Draft, unit_id: str, src: SourceFile, where: str) -> Unit | None:
        review_items = [n.as_dict() for n in draft.review_items]
        raw: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "id": unit_id,
            "title": draft.title,
            "kind": draft.kind,
            "purposes": draft.purposes or DEFAULT_PURPOSES.get(draft.kind, ["disambiguation"]),
            "applies_to": draft.applies_to,
            "language": self.ws.settings.language,
            "provenance": {
                "source_file": src.rel,
                "source_sha256": src.sha256,
                "supporting_excerpts": draft.excerpts,
            },
            "caveats": draft.caveats,
            "review_items": review_items,
            draft.kind: draft.data,
            "body": draft.body,
        }
        try:
            return UNIT_ADAPTER.validate_python(raw)
        except ValidationError as exc:
            self.problems += problems_from_validation(where, exc)
            return None

    def flag_oversized(self, unit: Unit) -> Unit:
        limit = self.ws.settings.evidence.max_chunk_chars
        found = oversized(unit, limit)
        if not found:
            return _without_review_item(unit, TOO_LARGE)
        return _with_review_item(
            unit,
            TOO_LARGE,
            f"An atomic element ({found[0].field}) renders to {found[0].chars} characters, "
            f"over max_chunk_chars={limit}; it is never cut. Shorten it or split the unit.",
        )

    def process(self, src: SourceFile, restructurer: Restructurer, report: SourceReport) -> None:
        old_entry = self.old.sources.get(src.rel)
        derived_before = {u.id: u.derived for u in old_entry.units} if old_entry else {}
        prior_ids = list(derived_before) + [o.id for o in self.old.orphans if o.source == src.rel]
        prior = [u for u in (self.unit(i) for i in prior_ids) if u is not None]
        try:
            result = restructurer.restructure(src, prior, self.ws.settings.language)
        except RestructureError as exc:
            self.problems.append(
                Problem(
                    src.rel,
                    f"restructuring failed: {exc}",
                    code="restructure_failed",
                    hint="fix the cause and run prepare again (no retry was attempted)",
                )
            )
            return
        entries: list[UnitEntry] = []
        produced: set[str] = set()
        for draft in result.drafts:
            if draft.existing_id is not None:
                if draft.existing_id not in prior_ids:
                    self.problems.append(
                        Problem(
                            src.rel,
                            f"the restructurer returned unknown id "
                            f"{draft.existing_id!r}: only the ids it was "
                            "given may be reused",
                            field="id",
                            code="unknown_id",
                        )
                    )
                    continue
                if draft.existing_id in produced:
                    self.problems.append(
                        Problem(
                            src.rel,
                            f"the restructurer returned id {draft.existing_id!r} twice",
                            field="id",
                            code="duplicate_id",
                        )
                    )
                    continue
                unit_id = draft.existing_id
            else:
                unit_id = allocate_id(draft.title, self.taken)
                self.taken.add(unit_id)
            produced.add(unit_id)
            where = f"{src.rel} -> {unit_id}"
            mark = fingerprint(draft)
            current = self.unit(unit_id)
            if current is not None and derived_before.get(unit_id) == mark:
                # Same proposal as last time: keep the reviewed file, curator edits included.
                prov = current.provenance.model_copy(update={"source_sha256": src.sha256})
                unit: Unit | None = _without_review_item(
                    current.model_copy(update={"provenance": prov}), UNSUPPORTED
                )
                report.kept.append(unit_id)
            else:
                unit = self.build(draft, unit_id, src, where)
                (report.updated if current is not None else report.created).append(unit_id)
            if unit is None:
                continue
            unit = self.flag_oversized(unit)
            self.problems += check_provenance(unit, where, src)
            self.units[unit_id] = unit
            self.attach(unit_id)
            entries.append(UnitEntry(id=unit_id, derived=mark))
        for unit_id in prior_ids:
            if unit_id in produced:
                continue
            reason = result.unsupported.get(unit_id) or "the source no longer yields this unit"
            existing = self.unit(unit_id)
            if existing is not None:
                self.units[unit_id] = _with_review_item(
                    existing,
                    UNSUPPORTED,
                    f"Retirement candidate: {reason}. Rewrite it, relink it with `tht evidence "
                    f"resolve {unit_id} --source <path>`, or retire it with `--retire`.",
                )
            self.detach(unit_id, src.rel, orphan=False)
            entries.append(UnitEntry(id=unit_id, derived=derived_before.get(unit_id, "")))
            report.retirement_candidates.append(unit_id)
        self.new.sources[src.rel] = SourceEntry(sha256=src.sha256, units=entries)


def prepare(
    ws: Workspace,
    restructurer: Restructurer,
    upgrade: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> PrepareReport:
    root = ws.root
    require_clean(
        root,
        "evidence/curated",
        "evidence/manifest.yaml",
        why="prepare would mix its proposals with unreviewed edits",
    )
    manifest = load_manifest(ws.manifest_path)
    if manifest.pipeline_version != PIPELINE_VERSION and not upgrade:
        raise PreconditionError(
            f"evidence/manifest.yaml was written by pipeline version "
            f"{manifest.pipeline_version}, this is {PIPELINE_VERSION}: nothing was written "
            "-> run `tht evidence prepare --upgrade` on a clean repository and review the "
            "full diff"
        )
    if upgrade:
        require_clean(root, ".", why="--upgrade reprocesses every source")

    # Unchanged sources were scanned when they were prepared: only changed ones are rescanned.
    sources, problems = discover(ws.evidence, ws.settings.evidence.max_source_bytes, scan=False)
    report = PrepareReport(restructurer=restructurer.name)

    by_path = {s.rel: s for s in sources}
    removed = sorted(set(manifest.sources) - set(by_path))
    added = sorted(set(by_path) - set(manifest.sources))
    # A new path whose hash matches exactly one removed source (and nothing else) is a rename.
    removed_by_sha = Counter(manifest.sources[p].sha256 for p in removed)
    added_by_sha = Counter(by_path[p].sha256 for p in added)
    renames: dict[str, str] = {}
    for path in added:
        sha = by_path[path].sha256
        if removed_by_sha[sha] == 1 and added_by_sha[sha] == 1:
            renames[path] = next(p for p in removed if manifest.sources[p].sha256 == sha)
    changed = [
        p
        for p in sorted(by_path)
        if p not in renames
        and (
            upgrade or p not in manifest.sources or manifest.sources[p].sha256 != by_path[p].sha256
        )
    ]
    problems += [c for p in changed if (c := credential_problem(by_path[p])) is not None]
    if not problems and not removed and not changed and not renames:
        report.sources = [SourceReport(p, "unchanged") for p in sorted(by_path)]
        return report  # the no-op: nothing read beyond the sources and the manifest

    # Only the units of sources that changed, moved or came back are read.
    needed = {
        u.id
        for p in [*changed, *renames.values()]
        if p in manifest.sources
        for u in manifest.sources[p].units
    }
    needed |= {o.id for o in manifest.orphans if o.source in by_path}
    files, corpus_problems = load_units(ws.evidence, needed)
    problems += corpus_problems
    batch = _Batch(ws, manifest, files)
    batch.problems += problems

    for new_path, old_path in sorted(renames.items()):
        entry = manifest.sources[old_path]
        batch.new.sources.pop(old_path)
        batch.new.sources[new_path] = entry.model_copy(deep=True)
        src = by_path[new_path]
        for u in entry.units:
            unit = batch.unit(u.id)
            if unit is None:
                continue
            prov = unit.provenance.model_copy(update={"source_file": new_path})
            moved: Unit = unit.model_copy(update={"provenance": prov})
            batch.problems += check_provenance(moved, f"{new_path} -> {u.id}", src)
            batch.units[u.id] = moved
        batch.new.retirement_candidates = [
            Detached(id=c.id, source=new_path) if c.source == old_path else c
            for c in batch.new.retirement_candidates
        ]
        report.sources.append(
            SourceReport(
                new_path, "renamed", renamed_from=old_path, kept=[u.id for u in entry.units]
            )
        )

    for path in removed:
        if path in renames.values():
            continue
        removed_entry = batch.new.sources.pop(path)
        for u in removed_entry.units:
            batch.detach(u.id, path, orphan=True)
        report.sources.append(
            SourceReport(path, "removed", orphaned=[u.id for u in removed_entry.units])
        )

    for done, path in enumerate(changed, start=1):
        src = by_path[path]
        previous = manifest.sources.get(path)
        if previous is None:
            status: Status = "new"
        elif previous.sha256 != src.sha256:
            status = "changed"
        else:
            status = "reprocessed"
        if progress:
            progress(path, done, len(changed))
        source_report = SourceReport(path, status)
        batch.process(src, restructurer, source_report)
        report.sources.append(source_report)
    report.sources += [
        SourceReport(p, "unchanged")
        for p in sorted(by_path)
        if p not in renames and p not in changed
    ]
    report.sources.sort(key=lambda r: r.source)

    # Render every touched unit once: the text checked for credentials is the text written.
    rendered: dict[str, str] = {}
    for unit_id, unit in sorted(batch.units.items()):
        rendered[unit_id] = render_unit(unit)
        where = f"{unit.provenance.source_file} -> {unit_id}"
        batch.problems += check_credentials(unit, where, rendered[unit_id])

    if batch.problems:
        raise ProblemsError(
            f"prepare refused: {len(batch.problems)} problem(s); nothing was written",
            batch.problems,
        )

    writes: dict[str, str] = {}
    deletes: list[str] = []
    for unit_id, unit in sorted(batch.units.items()):
        rel = unit_rel_path(unit)
        text = rendered[unit_id]
        before = batch.files.get(unit_id)
        if before is not None and before.rel != rel:
            deletes.append(before.rel)  # reclassified: same id, other kind folder
        target = ws.evidence / rel
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            writes[rel] = text
        if unit.review_items:
            report.review_items[unit_id] = [
                i.model_dump(exclude_none=True) for i in unit.review_items
            ]
    manifest_text = batch.new.render()
    current = ws.manifest_path.read_text("utf-8") if ws.manifest_path.exists() else None
    if manifest_text != current:
        writes["manifest.yaml"] = manifest_text
    apply_changes(ws.evidence, writes, deletes, last="manifest.yaml")
    report.written = sorted(writes)
    report.deleted = sorted(deletes)
    return report
