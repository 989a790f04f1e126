"""`tht evidence validate`: the whole-corpus check of seed §5.4, three outcomes, blockers."""

import shutil
from collections.abc import Callable

from tests.conftest import ENUM, FORMULA, GLOSSARY, commit_all, write_source
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.evidence.validate import validate_workspace
from thoth.workspace import Workspace

Make = Callable[..., Workspace]


def prepared(make: Make, sources: dict[str, str] | None = None) -> Workspace:
    ws = make(sources or {"g.md": GLOSSARY, "f.md": FORMULA, "e.md": ENUM})
    prepare(ws, RuleBasedRestructurer())
    commit_all(ws.root)
    return ws


def edit(ws: Workspace, rel: str, old: str, new: str) -> None:
    path = ws.evidence / rel
    text = path.read_text()
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new))


def test_valid_corpus(make_workspace: Make) -> None:
    report = validate_workspace(prepared(make_workspace))
    assert report.outcome == "valid" and report.publishable
    assert report.by_kind == {"enum": 1, "formula": 1, "glossary": 2}
    assert report.as_dict()["blockers"]["orphans"] == []


def test_duplicate_id_is_invalid(make_workspace: Make) -> None:
    ws = prepared(make_workspace)
    shutil.copy(
        ws.evidence / "curated/glossary/ricovero.md",
        ws.evidence / "curated/glossary/ricovero-copia.md",
    )
    problems = validate_workspace(ws).problems
    assert any(p.field == "id" and "duplicate id" in p.message for p in problems)
    assert any("file name does not match" in p.message for p in problems)


def test_directory_and_kind_must_agree(make_workspace: Make) -> None:
    ws = prepared(make_workspace)
    shutil.move(
        ws.evidence / "curated/glossary/ricovero.md", ws.evidence / "curated/domain/ricovero.md"
    )
    [problem] = validate_workspace(ws).problems
    assert problem.where == "curated/domain/ricovero.md" and problem.field == "kind"
    assert "move it to curated/glossary/" in (problem.hint or "")


def test_unknown_kind_and_malformed_front_matter(make_workspace: Make) -> None:
    ws = prepared(make_workspace)
    edit(ws, "curated/glossary/ricovero.md", "kind: glossary", "kind: recipe")
    (ws.evidence / "curated/domain/rotto.md").write_text("---\ntitle: [rotto\n---\n")
    report = validate_workspace(ws)
    found = {(p.where, p.field) for p in report.problems}
    assert ("curated/glossary/ricovero.md", "kind") in found
    assert any(
        p.where == "curated/domain/rotto.md" and "not valid YAML" in p.message
        for p in report.problems
    )
    assert report.outcome == "invalid"


def test_source_must_exist_and_match_its_hash(make_workspace: Make) -> None:
    ws = prepared(make_workspace)
    write_source(ws.root, "e.md", ENUM + "\nNota aggiunta.\n")
    report = validate_workspace(ws)
    codes = {p.code for p in report.problems}
    assert {"source_changed"} <= codes
    edit(
        ws,
        "curated/glossary/ricovero.md",
        "source_file: source/g.md",
        "source_file: source/nessuno.md",
    )
    assert any(p.code == "source_missing" for p in validate_workspace(ws).problems)


def test_credential_in_a_unit_is_invalid(make_workspace: Make) -> None:
    ws = prepared(make_workspace)
    edit(
        ws,
        "curated/glossary/ricovero.md",
        "caveats: []",
        "caveats:\n- 'Connessione: postgresql://etl:Segreta99@dwh.local/prod'",
    )
    problems = validate_workspace(ws).problems
    assert [(p.where, p.code) for p in problems] == [("curated/glossary/ricovero.md", "credential")]


def test_hand_written_unit_is_not_tracked(make_workspace: Make) -> None:
    ws = prepared(make_workspace)
    text = (ws.evidence / "curated/glossary/ricovero.md").read_text()
    (ws.evidence / "curated/glossary/ricovero-bis.md").write_text(
        text.replace("id: evidence:ricovero", "id: evidence:ricovero-bis")
    )
    [problem] = validate_workspace(ws).problems
    assert problem.where == "curated/glossary/ricovero-bis.md"
    assert "not tracked by the manifest" in problem.message


def test_unprepared_source_blocks(make_workspace: Make) -> None:
    ws = prepared(make_workspace)
    write_source(ws.root, "nuovo.md", "# Nuovo\n\nTesto nuovo del dominio.\n")
    [problem] = validate_workspace(ws).problems
    assert problem.code == "source_not_prepared" and problem.where == "source/nuovo.md"


def test_url_table_and_column_syntax(make_workspace: Make) -> None:
    ws = prepared(make_workspace)
    edit(
        ws,
        "curated/enum/esito-della-dimissione.md",
        "column: clinical.episode.discharge_status",
        "column: discharge status",
    )
    edit(ws, "curated/glossary/day-hospital.md", "  - adt.admission\n", "  - adt admission\n")
    fields = {p.field for p in validate_workspace(ws).problems}
    assert {"enum.column", "applies_to.tables.0"} <= fields


def test_atomic_content_too_large_is_reported_as_a_blocker(make_workspace: Make) -> None:
    ws = prepared(make_workspace)
    edit(
        ws,
        "curated/glossary/ricovero.md",
        "review_items: []",
        "review_items:\n- code: atomic_content_too_large\n  message: troppo lungo",
    )
    report = validate_workspace(ws)
    assert report.outcome == "valid_with_doubts"
    assert report.as_dict()["blockers"]["atomic_content_too_large"] == ["evidence:ricovero"]
