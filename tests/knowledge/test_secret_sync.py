"""`tht docs sync` and secrets (issue 46): a file whose markup hides a secret in every way, a
workbook whose label and value sit in merged cells or with an empty column between them, are
refused whole — every finding named, nothing indexed — and a reviewed, committed exemption
lets a finding that is not a secret through, reported as exempted."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from tests.conftest import commit_all, git
from tests.fake_embeddings import FakeEmbeddingServer
from tests.knowledge.test_secret_formats import (
    LAYOUTS,
    SECRETS,
    docx_of,
    html_body,
    markdown_body,
    wrappings,
    xlsx_file,
)
from tests.knowledge.test_sync import CHANNELS, FILES, active_id, edit, points, sync, write
from tests.publishing import write_config
from thoth.cli.docs import render_sync
from thoth.errors import PreconditionError, ProblemsError
from thoth.knowledge.exemptions import EXEMPTIONS_FILE
from thoth.knowledge.sync import SyncError
from thoth.runtime import Runtime, open_runtime
from thoth.workspace import Workspace

SOURCES = """
[[sources]]
name = "documenti"
include = ["docs/**/*.md", "docs/**/*.pdf", "docs/**/*.docx", "docs/**/*.xlsx", "docs/**/*.html"]
not_knowledge = ["docs/moduli/**"]
channel = "clinica"
labels = ["internal"]

[[sources]]
name = "wiki"
kind = "wiki"
include = ["wiki/**/*.md"]
channel = "clinica"
labels = ["public"]
"""


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with FakeEmbeddingServer(dim=8) as fake:
        root = tmp_path / "ws"
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        (root / ".gitignore").write_text(".thoth/\n", encoding="utf-8")
        write_config(root, fake.url, extra=CHANNELS + SOURCES)
        write(root, FILES)
        commit_all(root, "sources")
        runtime = open_runtime(Workspace.open(root))
        yield runtime
        runtime.close()


SECRET = SECRETS[0]


def every_way_markdown() -> str:
    """One Markdown file hiding the secret in every wrapping Markdown offers."""
    bodies = [b for w in wrappings(SECRET).values() if (b := markdown_body(w)) is not None]
    return "# Accessi\n\n" + "\n\nTesto di raccordo tra due voci.\n\n".join(bodies) + "\n"


def every_way_html() -> str:
    bodies = [b for w in wrappings(SECRET).values() if (b := html_body(w)) is not None]
    return "<html><body><h1>Accessi</h1>\n" + "\n<p>Raccordo.</p>\n".join(bodies) + "</body></html>"


def test_every_hidden_secret_is_named_and_nothing_is_indexed(rt: Runtime) -> None:
    first = sync(rt)
    before = points(rt)
    markdown = every_way_markdown()
    ways = [w for w in wrappings(SECRET).values()]
    edit(
        rt,
        {
            "docs/nascosto.md": markdown,
            "docs/nascosto.html": every_way_html(),
            "docs/nascosto.docx": docx_of(ways),
            "docs/celle-unite.xlsx": xlsx_file(LAYOUTS["merged_label"], SECRET),
            "docs/colonna-vuota.xlsx": xlsx_file(LAYOUTS["empty_column_between"], SECRET),
            "docs/sotto.xlsx": xlsx_file(LAYOUTS["below_with_gap"], SECRET),
            "docs/pulito.md": "# Note\n\nIl portale chiede di cambiare la password ogni 90 giorni.\n",
        },
    )
    with pytest.raises(SyncError) as info:
        sync(rt)
    error = info.value
    assert error.code == "credential"
    by_file: dict[str, list[str]] = {}
    for problem in error.problems:
        assert problem.code == "credential"
        rendered = problem.render()
        assert SECRET.value not in rendered and SECRET.value[4:] not in rendered
        by_file.setdefault(problem.where, []).append(problem.message)
    assert sorted(by_file) == [
        "documenti:docs/celle-unite.xlsx",
        "documenti:docs/colonna-vuota.xlsx",
        "documenti:docs/nascosto.docx",
        "documenti:docs/nascosto.html",
        "documenti:docs/nascosto.md",
        "documenti:docs/sotto.xlsx",
    ]
    # Every line of the Markdown file that holds the value is named, by its file line.
    lines = markdown.split("\n")
    expected = {n for n, line in enumerate(lines, 1) if SECRET.value[:4] in line}
    named = {
        int(m[1])
        for msg in by_file["documenti:docs/nascosto.md"]
        for m in [re.search(r"on line (\d+) ", msg)]
        if m
    }
    assert named == expected
    assert by_file["documenti:docs/celle-unite.xlsx"] == [
        next(
            m for m in by_file["documenti:docs/celle-unite.xlsx"] if "sheet 'Accessi', cell C2" in m
        )
    ]
    assert any(
        "sheet 'Accessi', cell C3" in m for m in by_file["documenti:docs/colonna-vuota.xlsx"]
    )
    assert any("sheet 'Accessi', cell A5" in m for m in by_file["documenti:docs/sotto.xlsx"])
    docx_places = " ".join(by_file["documenti:docs/nascosto.docx"])
    assert "header of section 1" in docx_places and "footer of section 1" in docx_places
    for problem in error.problems:  # the digest a reviewed exemption would name
        assert re.search(r"\[digest [0-9a-f]{16}\]", problem.message)
        assert problem.hint and EXEMPTIONS_FILE in problem.hint
    # All or nothing: the clean file is not indexed either; the active generation serves on.
    assert active_id(rt) == first.generation
    assert points(rt) == before
    [run, _] = rt.state.list_sync_runs(rt.ws.settings.workspace)
    assert run.status == "failed" and SECRET.value not in run.message


EXAMPLE = "# Manuale\n\nIl manuale mostra un esempio.\n\nPassword di esempio: Esempio2024!\n"


def test_a_reviewed_committed_exemption_lets_one_finding_through(rt: Runtime) -> None:
    sync(rt)
    real = "La password del database è Segreta2024!"
    edit(rt, {"docs/manuale.md": EXAMPLE + f"\n{real}\n"})
    with pytest.raises(SyncError) as info:
        sync(rt)
    problems = info.value.problems
    assert len(problems) == 2
    example = next(p for p in problems if "line 5" in p.message)
    assert example.hint is not None
    entry = example.hint.split("commit it: ", 1)[1]
    assert "Esempio2024" not in entry
    reviewed = entry.replace("<your name>", "Anna Rossi").replace(
        "<why this is not a secret>", "the manual's example, no system accepts it"
    )
    # Written, not committed: refused, nothing indexed.
    (rt.ws.root / EXEMPTIONS_FILE).write_text(reviewed + "\n", encoding="utf-8")
    served = active_id(rt)
    with pytest.raises(PreconditionError, match=EXEMPTIONS_FILE):
        sync(rt)
    assert active_id(rt) == served
    commit_all(rt.ws.root, "exempt the manual's example password")
    # Committed: the example passes, the real secret in the same file is still refused.
    with pytest.raises(SyncError) as again:
        sync(rt)
    [left] = again.value.problems
    assert "line 7" in left.message and "password in a sentence" in left.message
    edit(rt, {"docs/manuale.md": EXAMPLE})
    report = sync(rt)
    assert report.outcome == "activated" and "documenti:docs/manuale.md" in report.created
    [exempted] = report.secrets_exempted
    assert exempted["doc_id"] == "documenti:docs/manuale.md" and exempted["place"] == "line 5"
    assert exempted["reviewed_by"] == "Anna Rossi"
    assert "Esempio2024" not in str(report.as_dict())
    console = Console(record=True, width=240)
    render_sync(console, report)
    printed = console.export_text()
    assert "secrets exempted" in printed and "documenti:docs/manuale.md" in printed
    assert "reviewed by Anna Rossi" in printed and "Esempio2024" not in printed
    # The file changes: the exemption no longer matches (the new text is refused) ...
    edit(rt, {"docs/manuale.md": EXAMPLE.replace("Esempio2024!", "Esempio2025!")})
    with pytest.raises(SyncError):
        sync(rt)


def test_an_invalid_exemption_is_refused_naming_the_entry(rt: Runtime) -> None:
    (rt.ws.root / EXEMPTIONS_FILE).write_text(
        "- {file: 'documenti:docs/a.md', kind: password in a sentence, digest: 'Segreta2024!', "
        "reviewed_by: Anna, reason: an example of a password}\n",
        encoding="utf-8",
    )
    commit_all(rt.ws.root, "a bad exemption")
    with pytest.raises(ProblemsError) as info:
        sync(rt)
    [problem] = info.value.problems
    assert problem.where == EXEMPTIONS_FILE and "[0].digest" in problem.message
    assert "Segreta2024" not in problem.render()
