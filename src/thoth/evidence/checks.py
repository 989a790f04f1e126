"""Per-unit checks that need more than the schema: provenance against the real source and
credentials in any text. Shared by `prepare` (before writing) and `validate` (whole corpus)."""

from __future__ import annotations

from thoth.errors import Problem
from thoth.evidence.document import render_unit
from thoth.evidence.model import Unit
from thoth.evidence.normalize import excerpt_in_source
from thoth.evidence.sources import SourceFile
from thoth.secrets import secret_problems


def check_provenance(unit: Unit, where: str, source: SourceFile | None) -> list[Problem]:
    prov = unit.provenance
    if source is None:
        return [
            Problem(
                where,
                f"source {prov.source_file!r} does not exist",
                field="provenance.source_file",
                hint=f"restore the source or run `tht evidence resolve {unit.id} "
                "--source <path>` / `--retire`",
                code="source_missing",
            )
        ]
    problems = []
    if prov.source_sha256 != source.sha256:
        problems.append(
            Problem(
                where,
                f"source {prov.source_file} changed since this unit was prepared (hash differs)",
                field="provenance.source_sha256",
                hint="run `tht evidence prepare`",
                code="source_changed",
            )
        )
    for n, excerpt in enumerate(prov.supporting_excerpts):
        if not excerpt_in_source(excerpt, source.normalized):
            short = excerpt[:80] + ("..." if len(excerpt) > 80 else "")
            problems.append(
                Problem(
                    where,
                    f"excerpt not found in {prov.source_file}: {short!r}",
                    field=f"provenance.supporting_excerpts.{n}",
                    hint="quote the source verbatim (after normalisation)",
                    code="excerpt_not_found",
                )
            )
    return problems


def check_credentials(unit: Unit, where: str, rendered: str | None = None) -> list[Problem]:
    """Secrets in the unit's file text (thoth.secrets); `rendered`: that text when the caller
    already has it (saves a render)."""
    text = rendered if rendered is not None else render_unit(unit)
    return secret_problems(text, where, "line {line} of the unit file")
