"""Declared sources read from real Git repositories, admission, and document preparation."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import commit_all, git
from tests.documents.test_documents import build_pdf, text_lines
from thoth.config import ChannelSettings, QaMarkerSettings, Settings, SourceSettings
from thoth.documents.sources import (
    GitMemo,
    SourceFile,
    SourceSnapshot,
    SourceUnavailable,
    align,
    match_glob,
    read_source,
)
from thoth.errors import ProblemsError
from thoth.knowledge.ingest import admit, credential_problems, prepare_document, prepare_page
from thoth.wiki.pages import parse_page


def source(name: str = "docs", **fields: Any) -> SourceSettings:
    fields.setdefault("include", ["docs/**"])
    fields.setdefault("channel", "mercati")
    fields.setdefault("labels", ["internal"])
    return SourceSettings(name=name, **fields)


def settings(*sources: SourceSettings) -> Settings:
    return Settings(
        workspace="t",
        sources=list(sources),
        channels=[
            ChannelSettings(name="mercati", examples=["Come va il mercato giapponese?"]),
            ChannelSettings(name="bandi", examples=["Qual è la scadenza del bando?"]),
        ],
    )


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def make_repo(root: Path, files: Mapping[str, str | bytes]) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    write_files(root, files)
    commit_all(root, "sources")
    return root


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def sha(content: str | bytes) -> str:
    data = content.encode() if isinstance(content, str) else content
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------------
# Globs


@pytest.mark.parametrize(
    "pattern,path,expected",
    [
        ("documents/**/*.pdf", "documents/a/b.pdf", True),
        ("documents/**/*.pdf", "documents/b.pdf", True),
        ("documents/**/*.pdf", "documents/a/b/c.pdf", True),
        ("documents/**/*.pdf", "other/documents/b.pdf", False),
        ("documents/*.pdf", "documents/a/b.pdf", False),
        ("moduli/**", "moduli/x/y.docx", True),
        ("moduli/**", "moduli-vecchi/y.docx", False),
        ("**/*.md", "a.md", True),
        ("**/*.md", "x/y/a.md", True),
        ("*.md", "x/a.md", False),
        ("report-?.pdf", "report-1.pdf", True),
        ("report-?.pdf", "report-12.pdf", False),
        ("[!_]*.md", "_bozza.md", False),
        ("[!_]*.md", "pagina.md", True),
        ("a.md", "a_md", False),
        ("./docs/*.md", "docs/a.md", True),
        ("docs/*", "docs/a/b.md", False),
    ],
)
def test_match_glob(pattern: str, path: str, expected: bool) -> None:
    assert match_glob(path, pattern) is expected


# --------------------------------------------------------------------------------------------
# Reading a source at a revision


def test_reading_at_head_ignores_and_reports_worktree_edits(tmp_path: Path) -> None:
    binary = b"\x00\x01\nline\n\n\xff" * 50
    repo = make_repo(
        tmp_path / "repo",
        {
            "docs/a.md": "# A\n\ncommitted\n",
            "docs/blob.bin": binary,
            "docs/bozza.md": "excluded\n",
            "moduli/domanda.md": "a form\n",
            "other/c.md": "not declared\n",
        },
    )
    declared = source(include=["docs/**", "moduli/**"], exclude=["**/bozza.md"])
    write_files(repo, {"docs/a.md": "# A\n\nedited\n", "docs/new.md": "new", "other/x.md": "x"})

    snapshot = read_source(repo, declared)

    assert snapshot.revision == head(repo)
    assert snapshot.repo_root == repo
    assert [f.path for f in snapshot.files] == ["docs/a.md", "docs/blob.bin", "moduli/domanda.md"]
    a, blob, _ = snapshot.files
    assert a.data == b"# A\n\ncommitted\n", "read at the revision, never from the worktree"
    assert blob.data == binary and blob.sha256 == sha(binary)
    assert all(f.revision == snapshot.revision for f in snapshot.files)
    assert snapshot.uncommitted == ("docs/a.md", "docs/new.md")
    assert align(repo, "docs") is None, "no upstream: HEAD is used as is"


def test_sources_sharing_a_repository_ask_it_once_and_read_the_same(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"docs/a.md": "# A\n\ncommitted\n", "moduli/b.md": "a form\n"},
    )
    write_files(repo, {"docs/a.md": "# A\n\nedited\n"})
    declared = [source("docs", include=["docs/**"]), source("moduli", include=["moduli/**"])]
    memo = GitMemo()
    shared = [read_source(repo, s, align_first=False, memo=memo) for s in declared]
    alone = [read_source(repo, s, align_first=False) for s in declared]
    assert shared == alone
    assert [s.uncommitted for s in shared] == [("docs/a.md",), ()]
    # Top level, HEAD checked, HEAD read, the tree, the status: once for both sources.
    assert len(memo) == 5
    with pytest.raises(ValueError, match="align_first=False"):
        read_source(repo, declared[0], memo=memo)  # aligning moves HEAD under the memo


def test_a_source_whose_globs_match_nothing_is_empty(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"docs/a.md": "# A\n"})
    snapshot = read_source(repo, source(include=["manuali/**/*.pdf"]))
    assert snapshot.files == () and snapshot.uncommitted == ()


def test_relative_repo_is_resolved_from_the_workspace(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "sources" / "bandi", {"docs/a.md": "# A\n"})
    (tmp_path / "ws").mkdir()
    snapshot = read_source(tmp_path / "ws", source(repo="../sources/bandi"))
    assert snapshot.repo_root.resolve() == repo.resolve()
    assert [f.path for f in snapshot.files] == ["docs/a.md"]


def clone_pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A bare upstream, a writer clone that pushes to it and a served clone that follows it."""
    bare, writer, served = tmp_path / "origin.git", tmp_path / "writer", tmp_path / "served"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(tmp_path, "clone", "-q", str(bare), str(writer))
    git(writer, "checkout", "-q", "-b", "main")
    write_files(writer, {"docs/a.md": "# A\n\nfirst\n"})
    commit_all(writer, "first")
    git(writer, "push", "-q", "-u", "origin", "main")
    git(tmp_path, "clone", "-q", str(bare), str(served))
    return bare, writer, served


def test_align_fast_forwards_to_the_upstream(tmp_path: Path) -> None:
    _, writer, served = clone_pair(tmp_path)
    write_files(writer, {"docs/b.md": "# B\n\nsecond\n"})
    commit_all(writer, "second")
    git(writer, "push", "-q")

    assert read_source(served, source(), align_first=False).revision != head(writer)
    snapshot = read_source(served, source())

    assert snapshot.revision == head(writer)
    assert [f.path for f in snapshot.files] == ["docs/a.md", "docs/b.md"]
    assert align(served, "docs") == "origin/main"


def test_unreachable_upstream_is_an_error_naming_the_source(tmp_path: Path) -> None:
    bare, _, served = clone_pair(tmp_path)
    shutil.rmtree(bare)
    with pytest.raises(SourceUnavailable) as info:
        read_source(served, source())
    message = str(info.value)
    assert "source 'docs'" in message and str(served) in message
    assert "git fetch" in message and "reachable" in message


def test_modified_tracked_file_in_a_followed_copy_is_refused(tmp_path: Path) -> None:
    _, _, served = clone_pair(tmp_path)
    write_files(served, {"docs/a.md": "# A\n\nedited in the served copy\n"})
    with pytest.raises(SourceUnavailable) as info:
        read_source(served, source())
    assert "docs/a.md" in str(info.value) and "read-only" in str(info.value)


def test_a_served_copy_that_diverged_from_its_upstream_is_refused(tmp_path: Path) -> None:
    _, writer, served = clone_pair(tmp_path)
    write_files(writer, {"docs/b.md": "upstream"})
    commit_all(writer, "upstream")
    git(writer, "push", "-q")
    write_files(served, {"docs/c.md": "local"})
    commit_all(served, "local commit in the served copy")
    with pytest.raises(SourceUnavailable) as info:
        read_source(served, source())
    assert "merge --ff-only" in str(info.value) and "origin/main" in str(info.value)


def test_missing_repository_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailable) as info:
        read_source(tmp_path, source(repo="sorgenti/bandi"))
    message = str(info.value)
    assert "source 'docs'" in message and str(tmp_path / "sorgenti" / "bandi") in message
    assert "does not exist" in message and "thoth.toml" in message


@pytest.mark.parametrize(
    "case,expected",
    [
        ("not_a_repo", "rev-parse --show-toplevel"),
        ("no_commit", "has no commit"),
        ("subdirectory", "not the root of its Git repository"),
    ],
)
def test_unreadable_repositories_are_errors(tmp_path: Path, case: str, expected: str) -> None:
    target = tmp_path / "repo"
    target.mkdir()
    if case == "no_commit":
        git(target, "init", "-q")
    elif case == "subdirectory":
        make_repo(tmp_path / "outer", {"repo/docs/a.md": "# A\n"})
        target = tmp_path / "outer" / "repo"
    with pytest.raises(SourceUnavailable) as info:
        read_source(tmp_path, source(repo=str(target)))
    assert "source 'docs'" in str(info.value) and expected in str(info.value)


def test_symlinks_in_the_tree_are_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"docs/a.md": "# A\n"})
    (repo / "docs" / "link.md").symlink_to("a.md")
    commit_all(repo, "a link")
    with pytest.raises(ProblemsError) as info:
        read_source(repo, source())
    assert [p.where for p in info.value.problems] == ["docs:docs/link.md"]
    assert "symbolic link" in str(info.value)


# --------------------------------------------------------------------------------------------
# Admission


PINNED = "# Quote export\n\nLa quota del Giappone è il 12%.\n"
PINNED_NOW = "# Quote export\n\nLa quota del Giappone è il 14%.\n"
STABLE = "# Stabile\n"


def admission_repo(tmp_path: Path) -> tuple[Path, SourceSettings, SourceSettings]:
    page = f"""---
title: Mercato giapponese
documents:
  - docs:docs/fonte.md
  - {{doc: "docs:docs/quote.md", sha256: "{sha(PINNED)}"}}
  - {{doc: "docs:docs/stabile.md", sha256: "{sha(STABLE)}"}}
  - docs:docs/non-esiste.md
contradicted_by: [docs:docs/smentita.md]
---
# Mercato giapponese

La quota è il 12%.
"""
    repo = make_repo(
        tmp_path / "repo",
        {
            "docs/fonte.md": "# Fonte\n\nTesto.\n",
            "docs/quote.md": PINNED_NOW,
            "docs/stabile.md": STABLE,
            "docs/smentita.md": "# Smentita\n\nLa quota è il 3%.\n",
            "docs/ricevuta.md": "---\nknowledge: false\n---\nRicevuta di consegna.\n",
            "docs/moduli/domanda.md": "# Domanda\n\nNome: ____\n",
            "wiki/mercati/giappone.md": page,
            "wiki/bozze/appunti.md": "---\ntitle: Appunti\n---\nAppunti.\n",
        },
    )
    docs = source(not_knowledge=["docs/moduli/**"])
    wiki = source("wiki", kind="wiki", include=["wiki/**/*.md"], not_knowledge=["wiki/bozze/**"])
    return repo, docs, wiki


def test_admission_outcomes(tmp_path: Path) -> None:
    repo, docs, wiki = admission_repo(tmp_path)
    config = settings(docs, wiki)
    snapshots = [read_source(repo, docs), read_source(repo, wiki)]
    pages = [parse_page(f, config) for f in snapshots[1].files if "bozze" not in f.path]

    decided = {a.doc_id: a for a in admit(snapshots, pages)}

    assert {doc_id: a.outcome for doc_id, a in decided.items()} == {
        "docs:docs/fonte.md": "indexed",
        "docs:docs/moduli/domanda.md": "not_knowledge",
        "docs:docs/quote.md": "curation",
        "docs:docs/ricevuta.md": "not_knowledge",
        "docs:docs/smentita.md": "curation",
        "docs:docs/stabile.md": "indexed",
        "wiki:wiki/bozze/appunti.md": "not_knowledge",
        "wiki:wiki/mercati/giappone.md": "indexed",
    }
    assert decided["docs:docs/moduli/domanda.md"].reason == (
        "matches not_knowledge glob 'docs/moduli/**'"
    )
    assert decided["docs:docs/ricevuta.md"].reason == "front matter knowledge: false"
    pin = decided["docs:docs/quote.md"].reason
    assert pin.startswith("changed since wiki page wiki:wiki/mercati/giappone.md pinned it")
    assert f"{sha(PINNED)[:8]}… -> {sha(PINNED_NOW)[:8]}…" in pin and "update its pin" in pin
    contradiction = decided["docs:docs/smentita.md"].reason
    assert "wiki page wiki:wiki/mercati/giappone.md declares it contradicts the page" in (
        contradiction
    )
    assert decided["docs:docs/fonte.md"].reason == "declared source 'docs'"
    assert decided["wiki:wiki/mercati/giappone.md"].kind == "wiki"
    assert decided["docs:docs/fonte.md"].kind == "document"


def test_unreadable_front_matter_is_admitted_then_refused_by_preparation(tmp_path: Path) -> None:
    text = "---\nknowledge: no thanks\n---\nModulo.\n"
    repo = make_repo(tmp_path / "repo", {"docs/modulo.md": text})
    docs = source()
    snapshot = read_source(repo, docs)
    assert [a.outcome for a in admit([snapshot], [])] == ["indexed"]
    with pytest.raises(ProblemsError) as info:
        prepare_document(snapshot.files[0], settings(docs))
    problem = info.value.problems[0]
    assert (problem.where, problem.field) == ("docs:docs/modulo.md", "knowledge")
    assert "true or false" in problem.message


# --------------------------------------------------------------------------------------------
# Preparation


def snapshot_of(tmp_path: Path, files: Mapping[str, str | bytes], **fields: Any) -> SourceSnapshot:
    return read_source(make_repo(tmp_path / "repo", files), source(**fields))


def by_path(snapshot: SourceSnapshot, path: str) -> SourceFile:
    return next(f for f in snapshot.files if f.path == path)


def test_prepared_document_fragments(tmp_path: Path) -> None:
    body = "---\ntitle: Quote di mercato\nautore: ignorato\n---\n# Titolo interno\n\nTesto.\n"
    snapshot = snapshot_of(tmp_path, {"docs/quote.md": body}, labels=["internal", "public"])
    prepared = prepare_document(snapshot.files[0], settings(snapshot.source))
    assert (prepared.doc_id, prepared.kind, prepared.title) == (
        "docs:docs/quote.md",
        "document",
        "Quote di mercato",
    )
    [fragment] = prepared.fragments
    assert fragment.record_kind == "document"
    assert (fragment.channel, fragment.labels) == ("mercati", ("internal", "public"))
    assert fragment.text == "# Titolo interno\n\nTesto."
    assert fragment.content_sha256 == sha(body) and fragment.revision == snapshot.revision
    assert (fragment.doc_format, fragment.year, fragment.caveats) == ("md", None, ())


def test_pdf_fragments_keep_their_page(tmp_path: Path) -> None:
    pdf = build_pdf([text_lines(["Relazione annuale, pagina uno."]), text_lines(["Pagina due."])])
    snapshot = snapshot_of(tmp_path, {"docs/relazione-2023.pdf": pdf})
    prepared = prepare_document(snapshot.files[0], settings(snapshot.source))
    assert [f.page for f in prepared.fragments] == [1, 2]
    assert {f.doc_format for f in prepared.fragments} == {"pdf"}
    assert prepared.year == 2023


@pytest.mark.parametrize(
    "path,content,year",
    [
        ("docs/bando-2024.md", "# Bando\n", 2024),
        ("docs/bando-2024.md", "---\nyear: 2023\n---\n# Bando\n", 2023),
        ("docs/20240-codice.md", "# Codice\n", None),
        ("docs/bando.md", "# Bando\n", None),
    ],
)
def test_year_from_front_matter_then_file_name(
    tmp_path: Path, path: str, content: str, year: int | None
) -> None:
    snapshot = snapshot_of(tmp_path, {path: content})
    assert prepare_document(snapshot.files[0], settings(snapshot.source)).year == year


@pytest.mark.parametrize(
    "path,content,fix",
    [
        ("docs/nota.md", "# Nota\n", "front matter (`year: 2024`)"),
        ("docs/nota.pdf", build_pdf([text_lines(["Nota senza anno."])]), "report-2024.pdf"),
    ],
)
def test_expected_year_missing_is_an_error(
    tmp_path: Path, path: str, content: str | bytes, fix: str
) -> None:
    snapshot = snapshot_of(tmp_path, {path: content}, year_expected=True)
    with pytest.raises(ProblemsError) as info:
        prepare_document(snapshot.files[0], settings(snapshot.source))
    [problem] = info.value.problems
    assert (problem.where, problem.field) == (f"docs:{path}", "year")
    assert problem.hint is not None and fix in problem.hint


def test_extraction_and_chunking_errors_name_source_and_path(tmp_path: Path) -> None:
    snapshot = snapshot_of(
        tmp_path,
        {"docs/rotto.pdf": b"%PDF-1.4 not really", "docs/faq.md": "# FAQ\n\nNessuna domanda.\n"},
        strategy="qa",
    )
    config = settings(snapshot.source)
    for path in ("docs/rotto.pdf", "docs/faq.md"):
        with pytest.raises(ProblemsError) as info:
            prepare_document(by_path(snapshot, path), config)
        assert [p.where for p in info.value.problems] == [f"docs:{path}"]
        assert "thoth-doc-" not in str(info.value), "the temporary copy is never named"


def test_qa_strategy_uses_the_declared_markers(tmp_path: Path) -> None:
    text = "# FAQ\n\nQ: Chi può partecipare?\nA: Le PMI della regione.\n\nQ: Scadenza?\nA: 30 giugno.\n"
    markers = QaMarkerSettings(question=["Q:"], answer=["A:"])
    snapshot = snapshot_of(tmp_path, {"docs/faq.md": text}, strategy="qa", qa_markers=markers)
    prepared = prepare_document(snapshot.files[0], settings(snapshot.source))
    assert [(f.chunk_kind, f.text.split("\n")[-2]) for f in prepared.fragments] == [
        ("qa", "Q: Chi può partecipare?"),
        ("qa", "Q: Scadenza?"),
    ]


def test_the_source_heading_dialect_reaches_extraction(tmp_path: Path) -> None:
    text = "1. Premessa\nIl bando finanzia le fiere.\n\n1.1 Beneficiari\nLe PMI.\n"
    snapshot = snapshot_of(tmp_path, {"docs/bando.txt": text}, heading_dialect="numbered")
    prepared = prepare_document(snapshot.files[0], settings(snapshot.source))
    assert prepared.fragments[0].text.startswith("# 1. Premessa\n\nIl bando finanzia le fiere.")
    assert "## 1.1 Beneficiari" in prepared.fragments[0].text


def test_prepare_page_from_git(tmp_path: Path) -> None:
    page = "---\ntitle: Giappone\ncaveats: [Dati provvisori.]\n---\n# Giappone\n\nQuota 12%.\n"
    wiki = source("wiki", kind="wiki", include=["wiki/**/*.md"])
    repo = make_repo(tmp_path / "repo", {"wiki/giappone.md": page})
    prepared = prepare_page(read_source(repo, wiki).files[0], settings(wiki))
    assert (prepared.kind, prepared.title, prepared.doc_id) == (
        "wiki",
        "Giappone",
        "wiki:wiki/giappone.md",
    )
    assert [f.caveats for f in prepared.fragments] == [("Dati provvisori.",)]
    assert all(f.record_kind == "wiki" for f in prepared.fragments)


# --------------------------------------------------------------------------------------------
# Secrets


def _workbook(rows: list[list[str]]) -> bytes:
    import io

    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Accessi"
    for row in rows:
        sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def test_a_secret_in_a_workbook_is_named_by_sheet_never_by_value(tmp_path: Path) -> None:
    book = _workbook([["Servizio", "Utente", "Password"], ["dwh", "etl", "Pr0d-2024"]])
    snapshot = snapshot_of(tmp_path, {"docs/accessi-2024.xlsx": book})
    file = snapshot.files[0]
    [problem] = credential_problems(file, prepare_document(file, settings(snapshot.source)))
    assert (problem.where, problem.code) == ("docs:docs/accessi-2024.xlsx", "credential")
    assert "password in a table cell" in problem.message
    assert "sheet 'Accessi', cell C2" in problem.message and "Pr0d-2024" not in problem.render()


def test_a_secret_in_a_markdown_front_matter_is_named_by_file_line(tmp_path: Path) -> None:
    body = "---\ntitle: Accessi\ndb_password: 'k8Lm!Qz2'\n---\n# Accessi\n\nNessun segreto qui.\n"
    snapshot = snapshot_of(tmp_path, {"docs/accessi.md": body})
    file = snapshot.files[0]
    [problem] = credential_problems(file, prepare_document(file, settings(snapshot.source)))
    assert "(password assignment) on line 3" in problem.message


def test_a_document_without_secrets_has_no_problem(tmp_path: Path) -> None:
    body = "# Accessi\n\nLa password deve essere cambiata ogni 90 giorni dal portale.\n"
    snapshot = snapshot_of(tmp_path, {"docs/accessi.md": body})
    file = snapshot.files[0]
    assert credential_problems(file, prepare_document(file, settings(snapshot.source))) == []


# --------------------------------------------------------------------------------------------
# Titles chosen in thoth.toml


def test_a_title_from_thoth_toml_wins_by_file_name_or_path(tmp_path: Path) -> None:
    pdf = build_pdf([text_lines(["Relazione annuale, pagina uno."])])
    files: dict[str, str | bytes] = {
        "docs/2023 Q2 AAPL.pdf": pdf,
        "docs/b/nota.md": "---\ntitle: Dal front matter\n---\nTesto.\n",
    }
    titles = {"2023 Q2 AAPL.pdf": "Apple 10-Q Q2 2023", "docs/b/nota.md": "Nota scelta"}
    snapshot = snapshot_of(tmp_path, files, titles=titles)
    prepared = {f.path: prepare_document(f, settings(snapshot.source)) for f in snapshot.files}
    assert prepared["docs/2023 Q2 AAPL.pdf"].title == "Apple 10-Q Q2 2023"
    assert {f.title for f in prepared["docs/2023 Q2 AAPL.pdf"].fragments} == {"Apple 10-Q Q2 2023"}
    assert prepared["docs/b/nota.md"].title == "Nota scelta"


def test_a_title_naming_no_single_file_is_an_error_naming_it(tmp_path: Path) -> None:
    files = {"docs/a/x.md": "# A\n", "docs/b/x.md": "# B\n"}
    repo = make_repo(tmp_path / "repo", files)
    with pytest.raises(ProblemsError) as caught:
        read_source(repo, source(titles={"2023 Q2 AAPL.pdf": "Apple", "x.md": "Doppio"}))
    problems = {p.message: p for p in caught.value.problems}
    assert "'2023 Q2 AAPL.pdf' names no file of source 'docs'" in problems
    assert "'x.md' names 2 files: docs/a/x.md, docs/b/x.md" in problems
    assert {p.code for p in problems.values()} == {"title_unmatched"}
    assert all(p.where == "sources.docs.titles" for p in problems.values())


def test_an_empty_title_is_refused_by_the_settings() -> None:
    with pytest.raises(ValueError, match=r"empty file name or title for 'a\.pdf'"):
        source(titles={"a.pdf": " "})
