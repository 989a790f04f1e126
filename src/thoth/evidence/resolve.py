"""`tht evidence resolve <id> --retire | --source <path>`: settle an orphan or a retirement
candidate, updating the unit and the manifest together. Leaves a Git diff, never commits."""

from __future__ import annotations

from dataclasses import dataclass

from thoth.errors import PreconditionError, Problem, ProblemsError
from thoth.evidence.checks import check_provenance
from thoth.evidence.corpus import load_corpus, unit_rel_path
from thoth.evidence.document import render_unit
from thoth.evidence.manifest import SourceEntry, UnitEntry, load_manifest
from thoth.evidence.prepare import UNSUPPORTED
from thoth.evidence.sources import read_source
from thoth.gitrepo import require_clean
from thoth.storage.files import apply_changes
from thoth.workspace import Workspace


@dataclass(frozen=True)
class ResolveResult:
    unit_id: str
    action: str  # "retired" | "relinked"
    written: list[str]
    deleted: list[str]


def resolve(ws: Workspace, unit_id: str, *, retire: bool, source: str | None) -> ResolveResult:
    if retire == (source is not None):
        raise PreconditionError("choose exactly one of --retire and --source <path>")
    require_clean(
        ws.root,
        "evidence/curated",
        "evidence/manifest.yaml",
        why="resolve must leave a diff that contains only its own change",
    )
    manifest = load_manifest(ws.manifest_path)
    files, problems = load_corpus(ws.evidence)
    found = [f for f in files if f.unit.id == unit_id]
    if not found:
        known = unit_id in manifest.known_ids()
        raise PreconditionError(
            f"{unit_id}: no unit file has this id"
            + (" (the manifest lists it: restore the file from Git first)" if known else "")
        )
    unit_file = found[0]
    new = manifest.model_copy(deep=True)
    new.orphans = [o for o in new.orphans if o.id != unit_id]
    new.retirement_candidates = [c for c in new.retirement_candidates if c.id != unit_id]
    for entry in new.sources.values():
        entry.units = [u for u in entry.units if u.id != unit_id]

    if retire:
        new.retired = sorted({*new.retired, unit_id})
        writes = {"manifest.yaml": new.render()}
        apply_changes(ws.evidence, writes, [unit_file.rel], last="manifest.yaml")
        return ResolveResult(unit_id, "retired", ["manifest.yaml"], [unit_file.rel])

    assert source is not None
    rel = source.removeprefix("evidence/")
    src = read_source(ws.evidence, rel, ws.settings.evidence.max_source_bytes)
    if isinstance(src, Problem):
        raise ProblemsError(f"cannot relink {unit_id}", [src])
    unit = unit_file.unit
    prov = unit.provenance.model_copy(update={"source_file": src.rel, "source_sha256": src.sha256})
    items = [i for i in unit.review_items if i.code != UNSUPPORTED]
    relinked = unit.model_copy(update={"provenance": prov, "review_items": items})
    problems = check_provenance(relinked, unit_file.rel, src)
    if problems:
        raise ProblemsError(
            f"cannot relink {unit_id} to {src.rel}: its excerpts must be found there; nothing "
            "was written (edit the unit's excerpts first, or retire it)",
            problems,
        )
    target = new.sources.get(src.rel)
    if target is None:
        raise PreconditionError(
            f"{src.rel} has not been prepared yet -> run `tht evidence prepare` first"
        )
    new.sources[src.rel] = SourceEntry(
        sha256=target.sha256, units=[*target.units, UnitEntry(id=unit_id, derived="")]
    )
    text = render_unit(relinked)
    rel_unit = unit_rel_path(relinked)
    writes = {rel_unit: text, "manifest.yaml": new.render()}
    apply_changes(ws.evidence, writes, last="manifest.yaml")
    return ResolveResult(unit_id, "relinked", sorted(writes), [])
