"""`tht evidence resolve`: retire or relink, atomically, leaving a Git diff and no commit."""

from collections.abc import Callable

import pytest

from tests.conftest import ENUM, GLOSSARY, commit_all, git, status, write_source
from thoth.errors import PreconditionError, ProblemsError
from thoth.evidence.manifest import load_manifest
from thoth.evidence.prepare import prepare
from thoth.evidence.resolve import resolve
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.evidence.validate import validate_workspace
from thoth.workspace import Workspace

Make = Callable[..., Workspace]
UNIT = "evidence:esito-della-dimissione"


def orphaned(make: Make) -> Workspace:
    ws = make({"g.md": GLOSSARY, "e.md": ENUM})
    prepare(ws, RuleBasedRestructurer())
    commit_all(ws.root)
    (ws.evidence / "source/e.md").unlink()
    commit_all(ws.root)
    prepare(ws, RuleBasedRestructurer())
    commit_all(ws.root)
    return ws


def test_retire_removes_the_unit_and_remembers_the_id(make_workspace: Make) -> None:
    ws = orphaned(make_workspace)
    head = git(ws.root, "rev-parse", "HEAD")
    result = resolve(ws, UNIT, retire=True, source=None)
    assert result.action == "retired"
    assert not (ws.evidence / "curated/enum/esito-della-dimissione.md").exists()
    manifest = load_manifest(ws.manifest_path)
    assert manifest.orphans == [] and manifest.retired == [UNIT]
    assert git(ws.root, "rev-parse", "HEAD") == head  # no commit
    assert "D evidence/curated/enum/esito-della-dimissione.md" in status(ws.root)
    assert validate_workspace(ws).outcome == "valid"


def test_retired_id_is_never_reassigned(make_workspace: Make) -> None:
    ws = orphaned(make_workspace)
    resolve(ws, UNIT, retire=True, source=None)
    commit_all(ws.root)
    write_source(ws.root, "e2.md", ENUM.replace("deceduto", "deceduto in reparto"))
    commit_all(ws.root)
    prepare(ws, RuleBasedRestructurer())
    assert (ws.evidence / "curated/enum/esito-della-dimissione-2.md").exists()


def test_relink_to_an_existing_source(make_workspace: Make) -> None:
    ws = orphaned(make_workspace)
    write_source(ws.root, "esiti/esiti.md", ENUM + "\nAltre note.\n")
    commit_all(ws.root)
    prepare(ws, RuleBasedRestructurer())  # the new source gets its own units first
    commit_all(ws.root)
    result = resolve(ws, UNIT, retire=False, source="source/esiti/esiti.md")
    assert result.action == "relinked"
    manifest = load_manifest(ws.manifest_path)
    assert UNIT not in manifest.orphan_ids()
    assert manifest.source_of(UNIT) == "source/esiti/esiti.md"
    unit_text = (ws.evidence / "curated/enum/esito-della-dimissione.md").read_text()
    assert "source_file: source/esiti/esiti.md" in unit_text


def test_relink_refuses_a_source_without_the_excerpts(make_workspace: Make) -> None:
    ws = orphaned(make_workspace)
    with pytest.raises(ProblemsError, match="excerpts must be found"):
        resolve(ws, UNIT, retire=False, source="source/g.md")
    assert status(ws.root) == ""


def test_retire_and_source_are_mutually_exclusive(make_workspace: Make) -> None:
    ws = orphaned(make_workspace)
    with pytest.raises(PreconditionError, match="exactly one"):
        resolve(ws, UNIT, retire=True, source="source/g.md")
    with pytest.raises(PreconditionError, match="exactly one"):
        resolve(ws, UNIT, retire=False, source=None)


def test_resolve_needs_a_clean_worktree(make_workspace: Make) -> None:
    ws = orphaned(make_workspace)
    path = ws.evidence / "curated/glossary/ricovero.md"
    path.write_text(path.read_text() + "\nbozza\n")
    with pytest.raises(PreconditionError, match="uncommitted changes"):
        resolve(ws, UNIT, retire=True, source=None)
    assert (ws.evidence / "curated/enum/esito-della-dimissione.md").exists()


def test_unknown_unit(make_workspace: Make) -> None:
    ws = orphaned(make_workspace)
    with pytest.raises(PreconditionError, match="no unit file has this id"):
        resolve(ws, "evidence:nessuna", retire=True, source=None)


def test_unsafe_source_path(make_workspace: Make) -> None:
    ws = orphaned(make_workspace)
    with pytest.raises(ProblemsError) as info:
        resolve(ws, UNIT, retire=False, source="source/../../etc/passwd")
    assert info.value.problems[0].code == "unsafe_path"
