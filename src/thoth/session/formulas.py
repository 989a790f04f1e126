"""Formula proposals (seed §12): a formula found in schema linking, kept in the session.

A `formula_proposed` decision (stage `schema_linking`) carries one Formula proposal:

    subject  the concept, e.g. "fascia pediatrica"
    detail   a JSON object {"columns": ["schema.table.column", ...], "sql": "<one expression>"}

The ledger checks the detail with the same rules a curated `formula` unit must meet
(`thoth.evidence.model.FormulaData`: qualified input columns, exactly one composable
PostgreSQL expression), so a proposal that could never become Evidence is refused when it is
recorded, not when a curator imports it.

A proposal is only a session artifact. `import_proposals` is the maintenance step that turns
the standing proposals of one session into legacy-format sources
(`evidence/source/proposals/<session-id>-<seq>.sql.md`); the next `tht evidence prepare`
makes each a curated `formula` unit, which reaches Published Evidence only through Git review
and publication. The decisions `concept_formula_approved` / `concept_formula_rejected` stay
what they were: the choice made in one session, never a global publication.

This module imports nothing from the rest of thoth.session at run time: the ledger imports it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import yaml
from pydantic import ValidationError

from thoth.errors import PreconditionError
from thoth.evidence.model import FormulaData

if TYPE_CHECKING:
    from thoth.session.session import Session
    from thoth.workspace import Workspace

FORMULA_PROPOSED: Final = "formula_proposed"
PROPOSALS_DIR: Final = "source/proposals"  # under evidence/
_FENCE: Final = "```"


@dataclass(frozen=True)
class FormulaProposal:
    concept: str
    columns: tuple[str, ...]
    sql: str


def formula_detail(columns: list[str] | tuple[str, ...], sql: str) -> str:
    """The detail of a `formula_proposed` decision, in its one canonical spelling."""
    return json.dumps({"columns": list(columns), "sql": sql}, ensure_ascii=False)


def formula_issues(subject: str, detail: str) -> list[tuple[str, str]]:
    """(field, message) for each reason `subject` + `detail` is not a valid Formula proposal;
    empty when it is one."""
    try:
        shape: Any = json.loads(detail)
    except json.JSONDecodeError as exc:
        return [
            (
                "detail",
                f"a formula_proposed detail is not a JSON object ({exc.msg}); expected "
                '{"columns": ["schema.table.column", ...], "sql": "<one expression>"}',
            )
        ]
    if not isinstance(shape, dict):
        return [
            (
                "detail",
                f"a formula_proposed detail is not a JSON object but a {type(shape).__name__}",
            )
        ]
    if "concept" in shape:
        return [("detail.concept", "the concept is the subject: drop it from the detail")]
    try:
        data = FormulaData.model_validate({**shape, "concept": subject})
    except ValidationError as exc:
        issues = []
        for err in exc.errors():
            loc = [str(p) for p in err["loc"]]
            where = "subject" if loc[:1] == ["concept"] else ".".join(["detail", *loc])
            message = str(err["msg"]).removeprefix("Value error, ")
            if err["type"] == "missing":
                message = "field is missing"
            elif err["type"] == "extra_forbidden":
                message = "unknown field"
            issues.append((where, f"formula_proposed: {message}"))
        return issues
    if _FENCE in data.sql:
        # The proposal is imported as a Markdown ```sql block, which ``` would end early.
        return [("detail.sql", "formula_proposed: the SQL contains ``` and cannot be imported")]
    return []


def parse_formula(subject: str, detail: str) -> FormulaProposal:
    """The proposal of a recorded `formula_proposed` decision (the ledger already checked it)."""
    shape = json.loads(detail)
    return FormulaProposal(
        concept=subject.strip(), columns=tuple(shape["columns"]), sql=shape["sql"].strip()
    )


# ---------------------------------------------------------------------- import


@dataclass
class ProposalImport:
    written: list[str] = field(default_factory=list)  # paths under evidence/
    unchanged: list[str] = field(default_factory=list)


def proposal_path(session_id: str, seq: int) -> str:
    """Where the proposal recorded at `seq` goes, relative to evidence/."""
    return f"{PROPOSALS_DIR}/{session_id}-{seq}.sql.md"


def render_proposal(session: Session, seq: int, proposal: FormulaProposal, rationale: str) -> str:
    """The legacy `.sql.md` format (docs/source-format.md): front matter name/concept/columns,
    a `# title`, prose citing where the proposal came from, one ```sql block."""
    front = yaml.safe_dump(
        {
            "name": _name(proposal.concept),
            "concept": proposal.concept,
            "columns": list(proposal.columns),
        },
        allow_unicode=True,
        sort_keys=False,
        width=1000,
    )
    prose = [
        f"Formula proposed in session {session.id} (stage schema_linking, ledger seq {seq}) "
        f"for the question: {' '.join(session.question.split())}",
    ]
    if rationale.strip():
        prose.append(f"Rationale: {' '.join(rationale.split())}")
    return (
        f"---\n{front}---\n# {proposal.concept}\n\n"
        + "\n\n".join(prose)
        + f"\n\n```sql\n{proposal.sql}\n```\n"
    )


def import_proposals(ws: Workspace, session: Session) -> ProposalImport:
    """Write each standing Formula proposal of `session` as a source for the next prepare.
    All or nothing: an existing file with different content refuses the whole import."""
    found = [e for e in session.effective() if e.type == FORMULA_PROPOSED]
    if not found:
        raise PreconditionError(
            f"session {session.id} has no standing formula_proposed decision; nothing was "
            "written -> record one in schema_linking (or check it was not retracted or made "
            "stale by a reopen/rollback)"
        )
    planned = {
        proposal_path(session.id, e.seq): render_proposal(
            session, e.seq, parse_formula(e.subject, e.detail), e.rationale
        )
        for e in found
    }
    clashes = [
        rel
        for rel, text in planned.items()
        if (ws.evidence / rel).exists() and (ws.evidence / rel).read_text("utf-8") != text
    ]
    if clashes:
        raise PreconditionError(
            f"session {session.id}: evidence/{', evidence/'.join(clashes)} already exist with "
            "different content; nothing was written -> compare them (a curator may have edited "
            "the import) and move the edited copy aside before importing again"
        )
    result = ProposalImport()
    (ws.evidence / PROPOSALS_DIR).mkdir(parents=True, exist_ok=True)
    for rel, text in planned.items():
        if (ws.evidence / rel).exists():
            result.unchanged.append(rel)
            continue
        (ws.evidence / rel).write_text(text, encoding="utf-8")
        result.written.append(rel)
    return result


def _name(concept: str) -> str:
    return re.sub(r"\W+", "_", concept.casefold()).strip("_") or "formula"
