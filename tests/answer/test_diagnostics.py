"""`--diagnostics`: each retrieved fragment's text snippet and dense similarity (what the
relevance floor measures), and the floor's comparison itself, in the answer's diagnostics
(`--json`) and in the human output."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.answer.test_answer import CORPUS, QUESTION, Corpus, ask
from tests.fake_embeddings import FakeEmbeddingServer
from thoth.answer.service import SNIPPET_CHARS, snippet
from thoth.cli.main import app
from thoth.runtime import open_answer_service
from thoth.workspace import Workspace


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[Corpus]:
    """test_answer's published corpus: documents and wiki pages, embeddings over HTTP."""
    with FakeEmbeddingServer(dim=8) as server:
        root = tmp_path / "ws"
        root.mkdir()
        published = Corpus(root, server)
        published.publish()
        yield published


def test_every_fragment_has_its_similarity_and_snippet(corpus: Corpus) -> None:
    answer = ask(corpus)
    fragments = answer.diagnostics["fragments"]
    assert fragments
    texts = [" ".join(f.text.split()) for f in CORPUS]
    for f in fragments:
        assert f["snippet"] and len(f["snippet"]) <= SNIPPET_CHARS
        assert any(t.startswith(f["snippet"].removesuffix("…")) for t in texts)
        assert isinstance(f["similarity"], float) and -1.0 <= f["similarity"] <= 1.0
    # The dense branch ranks by that similarity; its first is the one the floor compares.
    ranked = sorted((f for f in fragments if f["dense_rank"]), key=lambda f: f["dense_rank"])
    similarities = [f["similarity"] for f in ranked]
    assert similarities == sorted(similarities, reverse=True)
    relevance = answer.diagnostics["relevance"]
    assert relevance["similarity"] == ranked[0]["similarity"]
    assert relevance["min_similarity"] is None  # "auto": no floor for an embedder not calibrated


def test_below_the_floor_the_similarity_it_compared_is_shown(corpus: Corpus) -> None:
    best = ask(corpus).diagnostics["relevance"]["similarity"]
    ws = corpus.configure()
    toml = ws.root / "thoth.toml"
    floor = round(min(best + 0.001, 1.0), 4)
    toml.write_text(
        toml.read_text("utf-8").replace("[answers]\n", f"[answers]\nmin_similarity = {floor}\n"),
        "utf-8",
    )
    service = open_answer_service(Workspace.open(ws.root))
    try:
        answer = service.ask(QUESTION)
    finally:
        service.close()
    assert answer.status == "nothing_found" and answer.diagnostics["fragments"] == []
    relevance = answer.diagnostics["relevance"]
    assert (relevance["similarity"], relevance["min_similarity"]) == (best, floor)
    assert relevance["verdict"] != "relevant"


def test_the_human_output_shows_similarities_snippets_and_the_floor(corpus: Corpus) -> None:
    result = CliRunner().invoke(app, ["ask", QUESTION, "--diagnostics", "-w", str(corpus.root)])
    assert result.exit_code == 0, result.output
    data = json.loads(
        CliRunner().invoke(app, ["ask", QUESTION, "--json", "-w", str(corpus.root)]).stdout
    )
    assert "similarity" in result.stdout
    for f in data["diagnostics"]["fragments"]:
        assert f"{f['similarity']:.4f}" in result.stdout
        assert f"  {f['rank']}. {f['snippet'][:30]}" in result.stdout
    best = data["diagnostics"]["relevance"]["similarity"]
    assert f"relevance floor: best similarity {best:.4f}; none set" in result.stdout


def test_a_snippet_is_cut_at_a_word() -> None:
    text = "parola " * 40
    cut = snippet(text, 30)
    assert cut.endswith("…") and len(cut) <= 30 and cut.removesuffix("…").strip() == cut[:-1]
    assert snippet("  due\n righe  ") == "due righe"
