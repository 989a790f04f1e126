"""`found` in a small corpus: under MIN_CORPUS fragments no word some fragment holds can be
rare, so held words are not weighed — but a word NO fragment holds says as much among 6 pages
as among 600. "Gli animali domestici possono entrare in pronto soccorso?" asked of the demo's
few public pages was `found`, quoting pages about waiting times, because the word check was off
whatever the word. Now a word no visible fragment holds, in a question in the analyser's
language, is an unknown term weighed as in a large corpus, and the diagnostics say when the
check was limited (`small_corpus`). A word a fragment holds is still not weighed there.

Two levels: check_terms and judge on a real index built from a handful of fragments (a
deterministic embedder: the verdict is the terms'); and the product as shipped (DocsSync with
the bundled embedder, AnswerService, `tht ask --diagnostics`) on the same pages, synced."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.knowledge_index import WORKSPACE, Doc, StemEmbedder, build, synced_pages
from thoth.answer.relevance import (
    MIN_CORPUS,
    UNMATCHED_SHARE,
    Relevance,
    candidate_terms,
    check_terms,
    judge,
    speaks,
)
from thoth.answer.service import AnswerService
from thoth.cli.main import app
from thoth.index.base import IndexStore
from thoth.index.bm25 import Bm25Encoder
from thoth.runtime import open_answer_service
from thoth.workspace import Workspace

# Six pages of an emergency department's manual, each on its own topic, every one in the
# domain's words ("pronto soccorso", "pazienti").
TOPICS = [
    ("triage", "Il triage assegna un codice di priorità entro cinque minuti dall'arrivo."),
    ("attese", "Il codice arancione va visitato entro quindici minuti dal triage."),
    ("boarding", "Il boarding è l'attesa di un posto letto in reparto dopo la decisione."),
    ("pediatria", "I bambini fino a quattordici anni accedono al settore pediatrico."),
    ("fast-track", "Il fast track ortopedico è attivo dalle otto alle venti nei feriali."),
    ("permanenza", "Nessun accesso deve superare le otto ore di permanenza."),
]
PAGES = {
    name: f"# Pronto soccorso: {name}\n\nPer i pazienti del pronto soccorso. {sentence}\n"
    for name, sentence in TOPICS
}
PETS = "Gli animali domestici possono entrare in pronto soccorso?"


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexStore]:
    assert len(PAGES) < MIN_CORPUS  # too few fragments for any held word to be rare
    docs = [Doc(text, path=f"{name}.md") for name, text in PAGES.items()]
    env = build(tmp_path_factory.mktemp("small"), docs, StemEmbedder())
    store = env.backend.open(env.generation)
    try:
        yield store
    finally:
        store.close()
        env.state.close()


def _checked(store: IndexStore, question: str, page: str) -> Relevance:
    """The question's terms counted in the small index, the answer quoting `page`; the
    verdict with unmatched words deciding, weighed by idf (no embedder measures shares)."""
    encoder = Bm25Encoder("it", 1.0)

    def analyser(word: str) -> list[int]:
        return encoder.query(word).indices

    assert speaks(question, analyser)  # an Italian question on the Italian analyser
    terms = check_terms(
        store,
        {"workspace_id": WORKSPACE},
        candidate_terms(question, analyser),
        [f"manuali:{page}.md"],
        encoder.query(PAGES[page]).indices,
        in_language=True,
    )
    return judge(0.9, None, terms, decide_unmatched=True)


def test_a_word_no_fragment_holds_is_lacking_however_small_the_corpus(
    small_index: IndexStore,
) -> None:
    relevance = _checked(small_index, PETS, "attese")
    kinds = {t.text: t.kind for t in relevance.terms}
    assert kinds.get("animali") == "unknown" and kinds.get("domestici") == "unknown", kinds
    assert all(t.corpus == 0 and t.weight > 0 for t in relevance.terms), relevance.terms
    assert relevance.verdict == "unmatched_terms", relevance
    assert {"animali", "domestici"} <= set(relevance.missing)


def test_a_word_a_fragment_holds_is_not_weighed_in_a_small_corpus(
    small_index: IndexStore,
) -> None:
    """ "bambini" is held by one page of six: in a large corpus that is rare, and the answer
    quoting the boarding page would lack it. Among six pages nothing is rare: not weighed."""
    relevance = _checked(small_index, "Il boarding è anche per i bambini?", "boarding")
    assert [t.text for t in relevance.terms] == [], relevance.terms
    assert relevance.verdict == "relevant"
    # Beside a word no page holds, the held ones are still left out.
    beside = _checked(small_index, "Il boarding riguarda anche i bambini?", "boarding")
    assert [(t.text, t.kind) for t in beside.terms] == [("riguarda", "unknown")], beside.terms


CONFIG = """
[[channels]]
name = "ps"
examples = ["Quanto si attende in pronto soccorso?"]
keywords = ["pronto soccorso"]

[[sources]]
name = "ps"
include = ["docs/*.md"]
channel = "ps"
labels = ["public"]
"""


@pytest.fixture(scope="module")
def workspace_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The floor off: the verdict is the term signals'; distinctive_terms as shipped ("decide").
    root = tmp_path_factory.mktemp("small-synced") / "ws"
    return synced_pages(root, "it", 'min_similarity = "off"\n', CONFIG, list(PAGES.items()))


@pytest.fixture(scope="module")
def service(workspace_root: Path) -> Iterator[AnswerService]:
    svc = open_answer_service(Workspace.open(workspace_root))
    yield svc
    svc.close()


def test_a_subject_no_page_holds_is_nothing_found_in_a_small_corpus(
    service: AnswerService,
) -> None:
    answer = service.ask(PETS)
    relevance = answer.diagnostics["relevance"]
    assert answer.status == "nothing_found", relevance
    assert relevance["verdict"] == "unmatched_terms", relevance
    assert {"animali", "domestici"} <= set(relevance["unmatched"]), relevance
    shares = {t["text"]: t["share"] for t in relevance["terms"] if "share" in t}
    assert shares["animali"] + shares["domestici"] >= UNMATCHED_SHARE, relevance
    # Said: the check was limited, by how few fragments were visible.
    note = relevance["small_corpus"]
    assert note and f"only {len(PAGES)} fragment" in note and str(MIN_CORPUS) in note, note


def test_a_question_a_page_answers_stays_found_in_a_small_corpus(service: AnswerService) -> None:
    answer = service.ask("Quando è attivo il fast track ortopedico del pronto soccorso?")
    relevance = answer.diagnostics["relevance"]
    assert answer.status == "found", relevance
    assert relevance["verdict"] == "relevant"
    # Every word is held by a page: none weighed, and the diagnostics say why.
    assert relevance["matched"] == [] and relevance["unmatched"] == [], relevance
    assert relevance["small_corpus"], relevance
    assert answer.sources and "fast-track" in answer.sources[0].doc_id


def test_the_cli_diagnostics_say_the_word_check_was_limited(workspace_root: Path) -> None:
    done = CliRunner().invoke(
        app, ["ask", PETS, "-w", str(workspace_root), "--diagnostics"], env={"COLUMNS": "200"}
    )
    assert done.exit_code == 0, done.output
    out = " ".join(done.stdout.split())
    assert "Status: nothing_found" in out, out
    assert "'animali'" in out and "word check limited: only 6 fragment(s)" in out, out
