"""A question in none of the index's languages: its words are not checked against the passages
(an Italian word the English pages never write says nothing), so the term signal cannot vouch
for them. It is `found` only when what the passages hold of it carries its meaning, and a term
every document in scope holds (the one company of the corpus) vouches for nothing. English
pages of one company, an Italian question, the bundled embedder, `DocsSync`, `AnswerService`,
as shipped; the similarity floor is off, so the verdict is the term signal's alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.knowledge_index import synced_pages
from thoth.answer.relevance import MIN_CORPUS, Term, judge
from thoth.answer.service import AnswerService
from thoth.cli.main import app
from thoth.runtime import open_answer_service
from thoth.workspace import Workspace

CONFIG = """
[[channels]]
name = "filings"
examples = ["What did Acme report for the quarter?"]
keywords = ["acme"]

[[sources]]
name = "filings"
include = ["docs/*.md"]
channel = "filings"
labels = ["public"]
"""

# One company, every page names it; each topic's words in one page.
TOPICS = [
    ("zephyr", "Acme sold 40,000 Zephyr routers in the quarter, up from 31,000."),
    ("disclosure", "Acme's disclosure controls and procedures were effective as of June 30."),
    ("rsu", "(e) Unvested RSUs of Acme are cancelled on the severance date."),
    ("dividend", "Acme declared a cash dividend of $0.24 per share."),
    ("litigation", "Acme is a defendant in a patent suit brought in Delaware."),
    ("tax", "The effective tax rate of Acme was 16.1 percent."),
    ("debt", "Acme repaid $2 billion of term notes due 2026."),
    ("buyback", "Acme repurchased 12 million shares of its common stock."),
    ("segments", "Acme reports three segments: Americas, Europe and Asia."),
    ("inventory", "Acme's inventories rose on components bought ahead of demand."),
    ("leases", "Acme leases its offices and warehouses under operating leases."),
    ("goodwill", "No impairment of Acme's goodwill was recorded."),
    ("pension", "Acme has no defined benefit pension plan."),
    ("currency", "A stronger dollar lowered Acme's reported sales abroad."),
    ("suppliers", "Acme depends on a single supplier for its chipsets."),
    ("warranty", "Acme accrues warranty costs when a product is sold."),
    ("employees", "Acme had 9,500 full-time employees at quarter end."),
    ("customers", "No customer of Acme accounted for more than ten percent of sales."),
    ("cash", "Acme held cash and equivalents of $8.3 billion."),
    ("risk", "Acme's business is exposed to interest rate and credit risk."),
    ("capex", "Acme's capital expenditures were spent on data centers."),
    ("research", "Acme spent $1.2 billion on research and development in the quarter."),
]
# The remedy the diagnostics name: a glossary entry giving the words as the pages write them.
GLOSSARY = """- it: [ricerca e sviluppo]
  en: [research and development]
"""


@pytest.fixture(scope="module")
def workspace_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert len(TOPICS) >= MIN_CORPUS
    pages = [
        (name, f"# Acme quarterly report: {name}\n\nAcme Inc., quarterly report. {sentence}\n")
        for name, sentence in TOPICS
    ]
    root = tmp_path_factory.mktemp("across") / "ws"
    root.mkdir()
    (root / "glossary.yaml").write_text(GLOSSARY, encoding="utf-8")
    return synced_pages(root, "en", 'min_similarity = "off"\n', CONFIG, pages)


@pytest.fixture(scope="module")
def service(workspace_root: Path) -> Iterator[AnswerService]:
    svc = open_answer_service(Workspace.open(workspace_root))
    yield svc
    svc.close()


def test_a_name_every_document_holds_does_not_vouch_for_a_question_in_another_language(
    service: AnswerService,
) -> None:
    """Asked in Italian, "how much did Acme spend on research and development" shares only
    "Acme" with the English pages, which every page writes: the Italian words are never
    checked, and nothing the passages hold carries the question. nothing_found, saying which
    words could not be checked and what to do."""
    answer = service.ask("Quanto ha speso Acme in ricerca e sviluppo nel trimestre?")
    relevance = answer.diagnostics["relevance"]
    assert answer.status == "nothing_found", relevance
    assert relevance["verdict"] == "other_language", relevance
    assert {"speso", "ricerca", "sviluppo", "trimestre"} <= set(relevance["unchecked"])
    assert "glossary" in relevance["reason"] and "language" in relevance["reason"]


def test_a_term_only_some_documents_hold_still_carries_a_question_in_another_language(
    service: AnswerService,
) -> None:
    """The same company, a product one page writes: "Zephyr" carries the Italian question's
    meaning, and the page that holds it answers."""
    answer = service.ask("Quanti router Zephyr ha venduto Acme nel trimestre?")
    relevance = answer.diagnostics["relevance"]
    assert answer.status == "found", relevance
    assert relevance["verdict"] == "relevant", relevance
    assert answer.sources and "zephyr" in answer.sources[0].doc_id


def test_an_english_question_is_checked_as_before(service: AnswerService) -> None:
    """In the pages' language the words are checked: "Acme" held everywhere is no reason to
    refuse a question whose other words the page holds."""
    answer = service.ask("How many Zephyr routers did Acme sell in the quarter?")
    relevance = answer.diagnostics["relevance"]
    assert answer.status == "found", relevance
    assert relevance["unchecked"] == []


def test_a_glossary_entry_lets_the_question_in_another_language_be_answered(
    workspace_root: Path,
) -> None:
    """With the glossary giving "ricerca e sviluppo" as the pages write it, the passage that
    holds "research and development" vouches for the question, and it is answered from it."""
    toml = root_toml = workspace_root / "thoth.toml"
    text = root_toml.read_text(encoding="utf-8")
    assert 'glossary = "glossary.yaml"' not in text.replace('# glossary = "glossary.yaml"', "")
    toml.write_text('glossary = "glossary.yaml"\n' + text, encoding="utf-8")
    try:
        svc = open_answer_service(Workspace.open(workspace_root))
        try:
            answer = svc.ask("Quanto ha speso Acme in ricerca e sviluppo nel trimestre?")
        finally:
            svc.close()
    finally:
        toml.write_text(text, encoding="utf-8")
    relevance = answer.diagnostics["relevance"]
    assert answer.status == "found", relevance
    assert "ricerca" not in relevance["unchecked"], relevance
    assert answer.sources and "research" in answer.sources[0].doc_id


def test_the_verdict_on_unchecked_words_comes_after_the_other_signals() -> None:
    """Words of another language left unchecked make the verdict only when nothing the
    passages hold carries the question; a floor not reached or a name absent says so first."""
    held = [Term("Acme", "name", (1,), corpus=1, retrieved=True, weight=1.0)]
    absent = [Term("Tesla", "name", (2,), corpus=0, retrieved=False)]
    words = ("speso", "ricerca")
    assert judge(0.9, 0.8, held, unchecked=words, carried=False).verdict == "other_language"
    assert judge(0.9, 0.8, held, unchecked=words, carried=True).verdict == "relevant"
    assert judge(0.9, 0.8, held, unchecked=(), carried=False).verdict == "relevant"
    assert judge(0.7, 0.8, held, unchecked=words, carried=False).verdict == "below_similarity"
    assert judge(0.9, 0.8, absent, unchecked=words, carried=False).verdict == "absent_term"


def test_the_cli_says_why_nothing_was_found(workspace_root: Path) -> None:
    """`tht ask` prints the reason of a nothing_found on its own line, so a user reading the
    terminal learns what to do without asking for the diagnostics."""
    result = CliRunner().invoke(
        app,
        [
            "ask",
            "Quanto ha speso Acme in ricerca e sviluppo nel trimestre?",
            "-w",
            str(workspace_root),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Status: nothing_found" in result.stdout
    why = [line for line in result.stdout.splitlines() if line.startswith("Why: ")]
    assert why, result.stdout
    assert "another language" in why[0] and "glossary" in result.stdout
    found = CliRunner().invoke(
        app,
        ["ask", "How many Zephyr routers did Acme sell in the quarter?", "-w", str(workspace_root)],
    )
    assert "Status: found" in found.stdout and "Why: " not in found.stdout


def test_a_period_alone_does_not_vouch_for_a_question_in_another_language(
    service: AnswerService,
) -> None:
    """A year says when, not what: "2026" written by the debt page (notes due 2026) is no
    evidence that a passage answers an Italian question about research spending in 2026."""
    answer = service.ask("Quanto ha speso Acme in ricerca e sviluppo nel 2026?")
    relevance = answer.diagnostics["relevance"]
    assert answer.status == "nothing_found", relevance
    assert relevance["verdict"] == "other_language", relevance
