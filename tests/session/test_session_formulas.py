"""Formula proposals (seed §12): a formula found in schema linking is a proposal in the session;
`tht evidence import-proposals` writes it as a legacy `.sql.md` source and the next prepare
turns it into a curated `formula` unit for Git review. Real Git workspaces throughout."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import FORMULA, GLOSSARY, commit_all, git, status
from thoth.cli import exitcodes
from thoth.cli.main import app
from thoth.errors import PreconditionError
from thoth.evidence.corpus import load_corpus
from thoth.evidence.model import FormulaUnit
from thoth.runtime import state_dir
from thoth.session import Session, SessionStore
from thoth.session.formulas import formula_detail
from thoth.workflow.formulas import import_proposals, proposal_path
from thoth.workspace import Workspace

Make = Callable[..., Workspace]
runner = CliRunner()
QUESTION = "Quanti ricoveri in fascia pediatrica nel 2023?"
COLUMNS = ["clinical.patient.birth_date", "adt.admission.admission_date"]
SQL = "CASE WHEN age(a.admission_date, p.birth_date) < interval '18 years' THEN 'sì' ELSE 'no' END"


def session_in(ws: Workspace, question: str = QUESTION) -> Session:
    return SessionStore(state_dir(ws) / "sessions").create(question)


def propose(session: Session, concept: str = "Paziente pediatrico", sql: str = SQL) -> int:
    entry = session.append(
        "schema_linking",
        "formula_proposed",
        subject=concept,
        detail=formula_detail(COLUMNS, sql),
        rationale="found in the ward's notes, no published formula covers it",
    )
    return entry.seq


def tht(*args: str) -> tuple[int, dict[str, object]]:
    result = runner.invoke(app, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_import_then_prepare_makes_a_curated_formula_unit(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY})
    session = session_in(ws)
    seq = propose(session)
    assert status(ws.root) == ""  # proposing touched nothing in the repo

    code, data = tht("evidence", "import-proposals", str(ws.root), "--session", session.id)
    rel = proposal_path(session.id, seq)
    assert code == exitcodes.OK and data == {"ok": True, "written": [rel], "unchanged": []}
    assert rel == f"source/proposals/{session.id}-{seq}.sql.md"
    text = (ws.evidence / rel).read_text("utf-8")
    assert text.startswith("---\nname: paziente_pediatrico\nconcept: Paziente pediatrico\n")
    assert "# Paziente pediatrico\n" in text
    assert f"session {session.id}" in text and f"seq {seq}" in text  # where it came from
    assert f"```sql\n{SQL}\n```\n" in text
    assert git(ws.root, "status", "--porcelain").strip() == "?? evidence/source/proposals/"

    commit_all(ws.root, "import formula proposals for review")
    code, data = tht("evidence", "prepare", str(ws.root))
    assert code == exitcodes.OK, data
    files, problems = load_corpus(ws.evidence)
    assert problems == []
    [unit] = [f.unit for f in files if f.unit.provenance.source_file == rel]
    assert isinstance(unit, FormulaUnit) and unit.review_items == []
    assert unit.formula.concept == "Paziente pediatrico"
    assert unit.formula.columns == COLUMNS and unit.formula.sql == SQL
    assert unit.title == "Paziente pediatrico"


def test_only_standing_proposals_are_imported_and_reimport_is_idempotent(
    make_workspace: Make,
) -> None:
    ws = make_workspace({"f.md": FORMULA})
    session = session_in(ws)
    gone = propose(session, "Fascia ritirata")
    kept = propose(session, "Fascia tenuta")
    session.retract(gone, rationale="duplicate of a published formula")
    first = import_proposals(ws, session)
    assert first.written == [proposal_path(session.id, kept)] and first.unchanged == []
    second = import_proposals(ws, session)
    assert second.written == [] and second.unchanged == first.written


def test_a_different_existing_file_refuses_the_whole_import(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY})
    session = session_in(ws)
    first, second = propose(session, "Uno"), propose(session, "Due")
    edited = ws.evidence / proposal_path(session.id, second)
    edited.parent.mkdir(parents=True)
    edited.write_text("curator's edit\n", encoding="utf-8")
    with pytest.raises(PreconditionError) as err:
        import_proposals(ws, session)
    assert proposal_path(session.id, second) in str(err.value)
    assert "nothing was written" in str(err.value)
    assert not (ws.evidence / proposal_path(session.id, first)).exists()
    assert edited.read_text("utf-8") == "curator's edit\n"


def test_a_session_without_proposals_imports_nothing(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY})
    session = session_in(ws)
    stale = propose(session)
    session.reopen("schema_linking", rationale="schema linking redone")
    code, data = tht("evidence", "import-proposals", str(ws.root), "--session", session.id)
    assert code == exitcodes.PRECONDITION
    assert session.id in str(data["error"]) and "formula_proposed" in str(data["error"])
    assert not (ws.evidence / proposal_path(session.id, stale)).exists()


def test_unknown_session_is_named(make_workspace: Make, tmp_path: Path) -> None:
    ws = make_workspace({"g.md": GLOSSARY})
    code, data = tht(
        "evidence", "import-proposals", str(ws.root), "--session", "s-20240101-000000-abcdef"
    )
    assert code == exitcodes.FAILED and "s-20240101-000000-abcdef" in str(data["error"])
