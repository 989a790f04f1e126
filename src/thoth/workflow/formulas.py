"""Import a session's Formula proposals into the workspace (seed §12): the maintenance step
behind `tht evidence import-proposals`.

`import_proposals` turns the standing `formula_proposed` decisions of one session (checked by
the ledger with `thoth.session.formulas`) into legacy-format sources
(`evidence/source/proposals/<session-id>-<seq>.sql.md`); the next `tht evidence prepare` makes
each a curated `formula` unit, which reaches Published Evidence only through Git review and
publication. It spans a session and the workspace's Evidence sources, so it lives here, above
both, and the session package never writes the workspace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

import yaml

from thoth.errors import PreconditionError
from thoth.session.formulas import FORMULA_PROPOSED, FormulaProposal, parse_formula
from thoth.session.session import Session
from thoth.workspace import Workspace

PROPOSALS_DIR: Final = "source/proposals"  # under evidence/


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
