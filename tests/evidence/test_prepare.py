"""`tht evidence prepare`: the authoring acceptance criteria of seed §17, one test each."""

from collections.abc import Callable

import pytest
import yaml

from tests.conftest import ENUM, FORMULA, GLOSSARY, commit_all, git, status, write_source
from thoth.errors import PreconditionError, ProblemsError
from thoth.evidence.corpus import load_corpus
from thoth.evidence.manifest import load_manifest
from thoth.evidence.prepare import UNSUPPORTED, prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.evidence.validate import validate_workspace
from thoth.workspace import Workspace

Make = Callable[..., Workspace]


def run(ws: Workspace, upgrade: bool = False) -> object:
    return prepare(ws, RuleBasedRestructurer(), upgrade=upgrade)


def units(ws: Workspace) -> dict[str, object]:
    files, problems = load_corpus(ws.evidence)
    assert not problems
    return {f.unit.id: f.unit for f in files}


def test_loose_source_yields_typed_units_with_provenance(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY, "f.md": FORMULA, "e.md": ENUM})
    run(ws)
    files, _ = load_corpus(ws.evidence)
    kinds = {f.unit.id: (f.unit.kind, f.rel) for f in files}
    assert kinds["evidence:ricovero"] == ("glossary", "curated/glossary/ricovero.md")
    assert kinds["evidence:fascia-pediatrica"][0] == "formula"
    assert kinds["evidence:esito-della-dimissione"][0] == "enum"
    for f in files:
        prov = f.unit.provenance
        assert prov.source_file.startswith("source/")
        assert prov.source_sha256.startswith("sha256:")
    validation = validate_workspace(ws)
    assert validation.outcome == "valid", [p.render() for p in validation.problems]


def test_unchanged_sources_are_a_noop(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY, "f.md": FORMULA})
    run(ws)
    commit_all(ws.root)
    before = git(ws.root, "ls-files", "-s")
    report = prepare(ws, RuleBasedRestructurer())
    assert report.noop and report.written == [] and report.deleted == []
    assert status(ws.root) == ""
    assert git(ws.root, "ls-files", "-s") == before


def test_changes_to_reviewed_content_show_in_the_git_diff(make_workspace: Make) -> None:
    ws = make_workspace({"e.md": ENUM})
    run(ws)
    commit_all(ws.root)
    write_source(ws.root, "e.md", ENUM.replace("deceduto", "deceduto in reparto"))
    commit_all(ws.root)
    run(ws)
    diff = git(ws.root, "diff", "--", "evidence/curated")
    removed = [line for line in diff.splitlines() if line.startswith("-")]
    added = [line for line in diff.splitlines() if line.startswith("+")]
    assert any("X: deceduto" in line for line in removed)
    assert any("X: deceduto in reparto" in line for line in added)
    assert "evidence/manifest.yaml" in git(ws.root, "diff", "--name-only")


def test_every_unit_cites_verifiable_excerpts(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY, "f.md": FORMULA, "e.md": ENUM})
    run(ws)
    for unit in units(ws).values():
        excerpts = unit.provenance.supporting_excerpts  # type: ignore[attr-defined]
        assert 1 <= len(excerpts) <= 5
        assert all(len(e) <= 1000 for e in excerpts)
    # Tampering with an excerpt is caught by validate, naming file and field.
    path = ws.evidence / "curated/glossary/ricovero.md"
    path.write_text(path.read_text().replace("almeno un pernottamento", "due pernottamenti"))
    problems = validate_workspace(ws).problems
    assert [(p.where, p.field) for p in problems] == [
        ("curated/glossary/ricovero.md", "provenance.supporting_excerpts.0")
    ]


def test_new_ids_are_assigned_by_code_with_a_deterministic_suffix(make_workspace: Make) -> None:
    twice = "# A\n\n## Regola\n\nPrima regola del dominio clinico.\n"
    ws = make_workspace({"a.md": twice, "b.md": twice.replace("Prima", "Seconda")})
    run(ws)
    ids = units(ws)
    assert {"evidence:regola", "evidence:regola-2"} <= set(ids)
    assert ids["evidence:regola"].provenance.source_file == "source/a.md"  # type: ignore[attr-defined]
    assert not any(i.startswith("evidence:domain") for i in ids)


def test_ids_are_never_recomputed_from_title(make_workspace: Make) -> None:
    ws = make_workspace({"e.md": ENUM})
    run(ws)
    commit_all(ws.root)
    path = ws.evidence / "curated/enum/esito-della-dimissione.md"
    path.write_text(
        path.read_text().replace(
            "title: Esito della dimissione", "title: Esito dimissione (rivisto)"
        )
    )
    commit_all(ws.root)
    write_source(ws.root, "e.md", ENUM + "| R | rifiuta le cure |\n")
    commit_all(ws.root)
    run(ws)
    assert "evidence:esito-della-dimissione" in units(ws)


def test_batch_is_all_or_nothing(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY})
    run(ws)
    commit_all(ws.root)
    write_source(ws.root, "g.md", GLOSSARY + "**Trasferimento**: cambio di reparto.\n")
    write_source(ws.root, "z-bad.md", b"\xff not utf-8")
    commit_all(ws.root)
    with pytest.raises(ProblemsError) as info:
        run(ws)
    assert "nothing was written" in str(info.value)
    assert [p.where for p in info.value.problems] == ["source/z-bad.md"]
    assert status(ws.root) == ""


def test_review_item_blocks_publication(make_workspace: Make) -> None:
    doubtful = (
        "# Note\n\n## Giornate di degenza\n\nNon è chiaro se il giorno di dimissione si conti.\n"
    )
    ws = make_workspace({"d.md": doubtful})
    run(ws)
    report = validate_workspace(ws)
    assert report.outcome == "valid_with_doubts" and not report.publishable
    [doubt] = report.doubts
    assert doubt.review_items[0].code == "ambiguous_source_statement"
    assert "Non è chiaro" in doubt.review_items[0].message
    # The curator resolves the doubt by editing the unit: publishable again.
    path = ws.evidence / doubt.file
    text = path.read_text()
    start = text.index("review_items:")
    end = text.index("domain:", start)
    path.write_text(text[:start] + "review_items: []\n" + text[end:])
    assert validate_workspace(ws).outcome == "valid"


def test_removed_source_makes_orphans_never_deleted(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY, "e.md": ENUM})
    run(ws)
    commit_all(ws.root)
    (ws.evidence / "source/e.md").unlink()
    commit_all(ws.root)
    report = run(ws)
    assert (ws.evidence / "curated/enum/esito-della-dimissione.md").exists()
    manifest = load_manifest(ws.manifest_path)
    assert manifest.orphan_ids() == {"evidence:esito-della-dimissione"}
    assert "source/e.md" not in manifest.sources
    assert report.sources  # type: ignore[attr-defined]
    validation = validate_workspace(ws)
    assert not validation.publishable
    assert [o.id for o in validation.orphans] == ["evidence:esito-della-dimissione"]


def test_restored_source_reattaches_its_orphans(make_workspace: Make) -> None:
    ws = make_workspace({"e.md": ENUM})
    run(ws)
    commit_all(ws.root)
    (ws.evidence / "source/e.md").unlink()
    commit_all(ws.root)
    run(ws)
    commit_all(ws.root)
    write_source(ws.root, "e.md", ENUM)
    commit_all(ws.root)
    run(ws)
    assert load_manifest(ws.manifest_path).orphan_ids() == set()
    assert validate_workspace(ws).outcome == "valid"


def test_unsupported_unit_becomes_retirement_candidate(make_workspace: Make) -> None:
    two = GLOSSARY + "\n## Regola\n\nUn episodio appartiene a un solo ricovero.\n"
    ws = make_workspace({"g.md": two})
    run(ws)
    commit_all(ws.root)
    write_source(ws.root, "g.md", GLOSSARY)
    commit_all(ws.root)
    run(ws)
    unit = units(ws)["evidence:regola"]
    assert [i.code for i in unit.review_items] == [UNSUPPORTED]  # type: ignore[attr-defined]
    manifest = load_manifest(ws.manifest_path)
    assert manifest.candidate_ids() == {"evidence:regola"}
    report = validate_workspace(ws)
    assert report.outcome == "valid_with_doubts"
    assert [c.id for c in report.retirement_candidates] == ["evidence:regola"]


def test_split_gives_new_ids_and_keeps_the_old_unit_as_candidate(make_workspace: Make) -> None:
    whole = "# D\n\n## Ricovero e day hospital\n\nIl ricovero ha un pernottamento; il day hospital no.\n"
    split = (
        "# D\n\n## Ricovero\n\nIl ricovero ha un pernottamento.\n\n"
        "## Day hospital\n\nIl day hospital non ha pernottamento.\n"
    )
    ws = make_workspace({"d.md": whole})
    run(ws)
    commit_all(ws.root)
    write_source(ws.root, "d.md", split)
    commit_all(ws.root)
    run(ws)
    ids = set(units(ws))
    assert {"evidence:ricovero", "evidence:day-hospital", "evidence:ricovero-e-day-hospital"} == ids
    assert load_manifest(ws.manifest_path).candidate_ids() == {"evidence:ricovero-e-day-hospital"}


def test_reclassification_keeps_the_id(make_workspace: Make) -> None:
    without_column = ENUM.replace("Colonna: `clinical.episode.discharge_status`\n", "")
    ws = make_workspace({"e.md": without_column})
    run(ws)
    first = units(ws)["evidence:esito-della-dimissione"]
    assert first.kind == "domain"  # type: ignore[attr-defined]
    assert first.review_items[0].code == "enum_column_unknown"  # type: ignore[attr-defined]
    commit_all(ws.root)
    write_source(ws.root, "e.md", ENUM)
    commit_all(ws.root)
    report = run(ws)
    second = units(ws)["evidence:esito-della-dimissione"]
    assert second.kind == "enum"  # type: ignore[attr-defined]
    assert report.deleted == ["curated/domain/esito-della-dimissione.md"]  # type: ignore[attr-defined]
    assert validate_workspace(ws).outcome == "valid"


def test_rename_by_unique_hash_keeps_ids(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY, "e.md": ENUM})
    run(ws)
    commit_all(ws.root)
    (ws.evidence / "source/enum").mkdir()
    git(ws.root, "mv", "evidence/source/e.md", "evidence/source/enum/esiti.md")
    commit_all(ws.root)
    report = run(ws)
    [renamed] = [s for s in report.sources if s.status == "renamed"]  # type: ignore[attr-defined]
    assert renamed.renamed_from == "source/e.md"
    unit = units(ws)["evidence:esito-della-dimissione"]
    assert unit.provenance.source_file == "source/enum/esiti.md"  # type: ignore[attr-defined]
    assert load_manifest(ws.manifest_path).orphans == []
    assert validate_workspace(ws).outcome == "valid"


def test_ambiguous_rename_is_not_guessed(make_workspace: Make) -> None:
    ws = make_workspace({"e.md": ENUM})
    run(ws)
    commit_all(ws.root)
    (ws.evidence / "source/e.md").unlink()
    write_source(ws.root, "x/e1.md", ENUM)
    write_source(ws.root, "x/e2.md", ENUM)
    commit_all(ws.root)
    run(ws)
    assert load_manifest(ws.manifest_path).orphan_ids() == {"evidence:esito-della-dimissione"}


def test_curator_edits_survive_when_their_section_is_unchanged(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY})
    run(ws)
    commit_all(ws.root)
    path = ws.evidence / "curated/glossary/day-hospital.md"
    edited = path.read_text().replace("caveats: []", "caveats:\n- Esclude i cicli di dialisi.")
    path.write_text(edited)
    commit_all(ws.root, "curator adds a caveat")
    write_source(ws.root, "g.md", GLOSSARY + "**Trasferimento**: cambio di reparto interno.\n")
    commit_all(ws.root)
    run(ws)
    assert "Esclude i cicli di dialisi." in path.read_text()
    assert (ws.evidence / "curated/glossary/trasferimento.md").exists()
    assert validate_workspace(ws).outcome == "valid"


@pytest.mark.parametrize("dirty", ["curated", "manifest", "untracked"])
def test_dirty_worktree_is_refused(make_workspace: Make, dirty: str) -> None:
    ws = make_workspace({"g.md": GLOSSARY})
    run(ws)
    commit_all(ws.root)
    if dirty == "curated":
        target = ws.evidence / "curated/glossary/ricovero.md"
        target.write_text(target.read_text() + "\nnota\n")
    elif dirty == "manifest":
        ws.manifest_path.write_text(ws.manifest_path.read_text() + "\n# edit\n")
    else:
        (ws.evidence / "curated/domain/nuova.md").write_text("---\n")
    before = status(ws.root)
    write_source(ws.root, "e.md", ENUM)
    with pytest.raises(PreconditionError, match="uncommitted changes"):
        run(ws)
    assert status(ws.root) == before + "?? evidence/source/e.md\n" or "e.md" in status(ws.root)
    assert not (ws.evidence / "curated/enum/esito-della-dimissione.md").exists()


def test_not_a_git_repository_is_refused(tmp_path: object) -> None:
    from pathlib import Path

    from thoth.evidence.layout import init_workspace

    root = Path(str(tmp_path)) / "plain"
    init_workspace(root)
    with pytest.raises(PreconditionError, match="not inside a Git repository"):
        run(Workspace.open(root))


def test_incompatible_pipeline_version_needs_upgrade_on_a_clean_repo(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY})
    run(ws)
    data = yaml.safe_load(ws.manifest_path.read_text())
    data["pipeline_version"] = 0
    ws.manifest_path.write_text(yaml.safe_dump(data))
    commit_all(ws.root)
    with pytest.raises(PreconditionError, match="--upgrade"):
        run(ws)
    assert status(ws.root) == ""
    (ws.root / "scratch.txt").write_text("unrelated work in progress")
    with pytest.raises(PreconditionError, match="uncommitted changes"):
        run(ws, upgrade=True)
    (ws.root / "scratch.txt").unlink()
    report = run(ws, upgrade=True)
    assert [s.status for s in report.sources] == ["reprocessed"]  # type: ignore[attr-defined]
    assert load_manifest(ws.manifest_path).pipeline_version == 1


def test_prepare_never_commits_or_branches(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY})
    head = git(ws.root, "rev-parse", "HEAD")
    branches = git(ws.root, "branch", "--list")
    run(ws)
    assert git(ws.root, "rev-parse", "HEAD") == head
    assert git(ws.root, "branch", "--list") == branches
    assert status(ws.root) != ""


def test_formulas_are_one_expression(make_workspace: Make) -> None:
    query = FORMULA.replace(
        "CASE WHEN date_part('year', age(a.admission_date, p.birth_date)) < 18 THEN "
        "'pediatrica' ELSE 'adulta' END",
        "SELECT count(*) FROM clinical.patient",
    )
    ws = make_workspace({"q.md": query})
    run(ws)
    # A full query is documented as an example, never as a formula.
    assert units(ws)["evidence:fascia-pediatrica"].kind == "example"  # type: ignore[attr-defined]
    # A formula unit edited by hand into a statement is invalid.
    ws2 = make_workspace({"f.md": FORMULA})
    run(ws2)
    path = ws2.evidence / "curated/formula/fascia-pediatrica.md"
    text = path.read_text()
    start = text.index("  sql: ")
    path.write_text(text[:start] + "  sql: SELECT 1 FROM clinical.patient\n---\n")
    problems = validate_workspace(ws2).problems
    [problem] = problems
    assert problem.field == "formula.sql" and "complete statement" in problem.message
