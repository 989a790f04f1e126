"""`tht docs show`: a document's fragments as the active generation stores them, synced
through the product (real Git, Qdrant Edge, SQLite, embeddings over real HTTP)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.conftest import commit_all
from tests.fake_embeddings import FakeEmbeddingServer
from tests.publishing import write_config
from thoth.cli import exitcodes
from thoth.cli.main import app
from thoth.workspace import Workspace

SOURCES = """
[answers]
labels = ["public", "internal"]
default_labels = ["public"]

[[channels]]
name = "clinica"
examples = ["Come si registra un ricovero?"]

[[sources]]
name = "manuali"
include = ["documents/**"]
channel = "clinica"
labels = ["internal"]

[[sources]]
name = "wiki"
kind = "wiki"
include = ["wiki/**/*.md"]
channel = "clinica"
labels = ["public"]
"""

MANUAL = """# Registrazione del ricovero

## Accettazione

Il ricovero ordinario viene registrato dal reparto entro 24 ore dall'ingresso del paziente.

## Dimissione

La scheda di dimissione è compilata dal medico che dimette il paziente.
"""

PAGE = """---
title: Ricoveri urgenti
caveats:
  - Il 41% conta due volte i trasferimenti interni.
---
# Ricoveri urgenti

I ricoveri urgenti sono cresciuti del 41% nel 2024 secondo il cruscotto di reparto.
"""

runner = CliRunner()


@pytest.fixture
def synced(make_workspace: Callable[..., Workspace]) -> Iterator[Workspace]:
    with FakeEmbeddingServer(dim=8) as server:
        ws = make_workspace()
        write_config(ws.root, server.url, extra=SOURCES)
        for rel, text in {
            "documents/ricovero.md": MANUAL,
            "wiki/ricoveri-urgenti.md": PAGE,
        }.items():
            (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws.root / rel).write_text(text, "utf-8")
        commit_all(ws.root, "knowledge")
        result = runner.invoke(app, ["docs", "sync", "-w", str(ws.root), "--json"])
        assert result.exit_code == exitcodes.OK, result.output
        yield ws


def show(ws: Workspace, ref: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["docs", "show", ref, "-w", str(ws.root), "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_a_document_by_doc_id_with_its_headings_labels_and_both_texts(synced: Workspace) -> None:
    code, data = show(synced, "manuali:documents/ricovero.md")
    assert code == exitcodes.OK, data
    assert (data["doc_id"], data["source"], data["path"]) == (
        "manuali:documents/ricovero.md",
        "manuali",
        "documents/ricovero.md",
    )
    assert data["generation"].startswith("g")
    fragments = data["fragments"]
    assert [f["ordinal"] for f in fragments] == sorted(f["ordinal"] for f in fragments)
    assert all(f["labels"] == ["internal"] and f["channel"] == "clinica" for f in fragments)
    assert all(f["record_kind"] == "document" for f in fragments)
    text = "\n".join(f["read_text"] for f in fragments)
    assert "entro 24 ore" in text and "medico che dimette" in text
    assert fragments[0]["heading_path"][0] == "Registrazione del ricovero"
    assert fragments[0]["title"] and fragments[0]["chunk_kind"] == "text"
    assert fragments[0]["page"] is None  # Markdown has no pages
    # What is searched carries the title and the heading path; what is read is the fragment.
    first = fragments[0]
    assert first["search_text"].startswith(first["title"])
    assert first["search_text"] != first["read_text"]
    assert first["search_text"].endswith(first["read_text"])
    assert all(f["caveats"] == [] for f in fragments)
    assert all(not f["read_text"].startswith(first["title"]) for f in fragments)


def test_a_wiki_page_by_path_reads_its_caveats_which_are_not_searched(synced: Workspace) -> None:
    code, data = show(synced, "wiki/ricoveri-urgenti.md")
    assert code == exitcodes.OK, data
    assert data["doc_id"] == "wiki:wiki/ricoveri-urgenti.md"
    (first, *_) = data["fragments"]
    assert first["record_kind"] == "wiki" and first["title"] == "Ricoveri urgenti"
    assert first["caveats"] == ["Il 41% conta due volte i trasferimenti interni."]
    assert "trasferimenti interni" not in first["search_text"]
    context, searched_body = first["search_text"].split("\n", 1)
    assert context == "Ricoveri urgenti"  # the title: searched, never read
    assert first["read_text"].startswith(searched_body)
    assert "trasferimenti interni" in first["read_text"]


def test_the_human_output_shows_both_texts(synced: Workspace) -> None:
    result = runner.invoke(
        app, ["docs", "show", "wiki/ricoveri-urgenti.md", "-w", str(synced.root)]
    )
    assert result.exit_code == exitcodes.OK, result.output
    assert "search text (embedded, BM25)" in result.output
    assert "read text (what the answerer reads)" in result.output
    assert "[Avvertenza] Il 41%" in result.output


def test_an_unknown_document_is_a_bad_request_naming_the_closest(synced: Workspace) -> None:
    code, data = show(synced, "manuali:documents/ricovero.mdx")
    assert code == exitcodes.USAGE
    assert data["code"] == "document_not_indexed"
    assert "did you mean manuali:documents/ricovero.md" in data["error"]


def test_without_a_generation_it_says_to_sync(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace()
    code, data = show(ws, "manuali:documents/ricovero.md")
    assert code == exitcodes.PRECONDITION
    assert "tht docs sync" in data["error"]
