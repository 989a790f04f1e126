"""Issue 24, point 5: a second stage of ranking after fusion. The fused candidates are ordered
again by the question's terms they hold, the names of the question's scope and its periods set
aside, a fragment with a figure counting double; that order is fused with the first. It steps
aside when the question's terms barely meet the candidates (another language)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.answer.test_entities import build
from thoth.answer.rerank import Candidate, Stems, rerank, term_function
from thoth.answer.service import AnswerService
from thoth.entities import EntityList
from thoth.knowledge.sync import SyncReport
from thoth.runtime import open_answer_service
from thoth.workspace import Workspace

ENTITIES = EntityList([])

# A 10-Q as fusion ranked it for "What was Contoso's gross margin in Q2 2023?": the pages that
# name the company and the form first, the income statement row that answers last.
FUSED = [
    (
        "cover",
        "Contoso Ltd. Form 10-Q. For the quarterly period ended June 30, 2023. "
        "Commission file number 001-12345. Contoso Ltd, Delaware.",
    ),
    (
        "exhibit",
        "Exhibit 31.1. I, the chief executive officer of Contoso Ltd, certify that this "
        "Form 10-Q for the period ended June 30, 2023 fairly presents its financial condition.",
    ),
    ("outlook", "Contoso expects demand for industrial pumps in Europe to grow in 2023."),
    (
        "income",
        "Income statements (in millions) | Three Months Ended June 30, 2023\n"
        "Revenue | $4,210\nGross margin | 1,830\nOperating income | 640",
    ),
]

_STEMMERS: dict[str, Stems] = {}


def stems_for(language: str) -> Stems:
    if language not in _STEMMERS:
        _STEMMERS[language] = term_function(language)
    return _STEMMERS[language]


def candidates(language: str = "en") -> list[Candidate]:
    from thoth.index.base import Hit

    return [
        Candidate(Hit(name, 1.0 / rank, {}), text, language)
        for rank, (name, text) in enumerate(FUSED, start=1)
    ]


def order(question: str, language: str = "en") -> list[str]:
    return [h.id for h in rerank(question, candidates(language), stems_for).hits]


def test_the_row_that_holds_the_asked_measure_rises_above_pages_that_only_name_the_company() -> (
    None
):
    # The caller blanks the names of the scope ("Contoso's"); the period and the form are set
    # aside here. What is left, "gross margin", only the income statement holds.
    question = "What was   gross margin in Q2 2023 according to the 10-Q?"
    result = rerank(question, candidates(), stems_for)
    assert result.applied
    assert result.hits[0].id == "income"
    assert result.first_stage == {"cover": 1, "exhibit": 2, "outlook": 3, "income": 4}


def test_a_fragment_holding_no_asked_term_keeps_its_place_behind_the_ones_that_do() -> None:
    # "demand" and "pumps": the outlook; the rest hold none and keep their fused order.
    assert order("What demand for pumps does it expect?") == [
        "outlook",
        "cover",
        "exhibit",
        "income",
    ]


def test_it_steps_aside_when_the_question_s_terms_barely_meet_the_candidates() -> None:
    # An Italian question over English fragments: 'margine' meets 'margin', nothing else does;
    # reordering on that one chance match would be a guess.
    result = rerank("Qual è stato il margine lordo nel secondo trimestre?", candidates(), stems_for)
    assert not result.applied and result.reason == "few_terms_met"
    assert [h.id for h in result.hits] == ["cover", "exhibit", "outlook", "income"]


def test_the_same_question_and_candidates_give_the_same_order() -> None:
    question = "What was the gross margin and the operating income?"
    assert order(question) == order(question)


def test_without_names_blanks_every_name_and_ticker_of_the_list() -> None:
    from tests.answer.test_entities import ENTITIES as LISTED
    from tests.answer.test_entities import load_from_text

    entities = load_from_text(LISTED)
    text = entities.without_names("What was Contoso's and CTSO's revenue, and Northwind Traders'?")
    assert "Contoso" not in text and "CTSO" not in text and "Northwind" not in text
    assert "revenue" in text


# -- end to end: the answer engine's diagnostics say what the second stage did -----------------


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnswerService]:
    root: Path = tmp_path_factory.mktemp("rerank") / "ws"
    report: SyncReport = build(root)
    assert report.outcome == "activated", report.message
    svc = open_answer_service(Workspace.open(root))
    yield svc
    svc.close()


def test_inside_an_entity_scope_each_fragment_says_its_rank_before_the_second_stage(
    service: AnswerService,
) -> None:
    answer = service.ask("What was Contoso's total net revenue in the second quarter of 2023?")
    assert answer.status == "found"
    assert answer.diagnostics["counts"].get("reranked") == 1
    ranks = [f["fused_rank"] for f in answer.diagnostics["fragments"]]
    assert all(isinstance(r, int) and r >= 1 for r in ranks)


def test_without_an_entity_scope_the_fused_order_stands(service: AnswerService) -> None:
    # No entity named: BM25 already weighs every word (the second stage lowered TAT-QA there).
    answer = service.ask("How much did demand for industrial pumps in Europe grow in 2023?")
    assert answer.status == "found"
    assert answer.diagnostics["counts"].get("rerank_skipped_no_entity") == 1
    assert [f["fused_rank"] for f in answer.diagnostics["fragments"]] == [None] * len(
        answer.diagnostics["fragments"]
    )


# The MD&A as fusion ranked it for "What was the reported gross margin?": two pages of prose
# that say "gross margin" several times, around figures, and the summary table whose row is
# named by the question's words alone.
PROSE_AND_TABLE = [
    (
        "segment",
        "Operating income increased $1.6 billion or 20%.\n"
        "• Gross margin increased $1.8 billion or 13% driven by growth in cloud services. "
        "Gross margin percentage increased slightly, as reported.",
    ),
    (
        "cloud",
        "• Gross margin increased $2.9 billion or 20% driven by growth in Azure. Gross margin "
        "percentage decreased slightly; the reported margin excludes the change in estimate.",
    ),
    (
        "summary",
        "(In millions) Three Months Ended September 30, 2023 2022 Percentage Change\n"
        "Revenue $56,517 $50,122 13%\nGross margin 40,215 34,670 16%\n"
        "Operating income 26,895 21,518 25%",
    ),
]


def test_a_row_named_by_the_asked_words_alone_rises_above_prose_that_repeats_them() -> None:
    # Prose and table hold "gross" and "margin" alike, each with a figure; only the table has a
    # row whose label is nothing but asked words: the asked measure, with its figure.
    from thoth.index.base import Hit

    found = [
        Candidate(Hit(name, 1.0 / rank, {}), text, "en")
        for rank, (name, text) in enumerate(PROSE_AND_TABLE, start=1)
    ]
    result = rerank("What was the reported gross margin in the most recent 10-Q?", found, stems_for)
    assert result.applied
    # "cloud" holds one asked word more ("reported") and came before it; the first stage's
    # leader keeps its place (the two orders are fused).
    assert [h.id for h in result.hits] == ["segment", "summary", "cloud"]


def test_a_row_whose_label_holds_a_word_not_asked_gains_nothing() -> None:
    # "Gross margin increased" is a sentence about the figure, not a row naming the measure.
    from thoth.answer.rerank import named_rows_weight

    stems = stems_for("en")
    asked = stems("reported gross margin")
    weight = {t: 1.0 for t in asked}
    assert named_rows_weight("Gross margin 40,215 34,670 16%", stems, asked, weight) == 2.0
    assert named_rows_weight("• Gross margin increased $1.8 billion", stems, asked, weight) == 0.0
    assert named_rows_weight("Operating income 26,895", stems, asked, weight) == 0.0


def test_a_title_above_a_paragraph_that_opens_with_a_year_is_no_row_label() -> None:
    # The searched text opens with its context line (title > heading); a label ends at its line.
    from thoth.answer.rerank import named_rows_weight

    stems = stems_for("it")
    asked = stems("dinastia Yuan")
    weight = {t: 1.0 for t in asked}
    assert named_rows_weight("Dinastia Yuan\n1271: Kublai Khan", stems, asked, weight) == 0.0


# A 10-Q's fragments as fusion ranked them for a long English question whose framing words
# ("distribution", "compare", "costs associated") a page of prose echoes, while its measure,
# "revenue", is what the table of revenue by product line reports.
FRAMED = [
    ("cover", "Form 10-Q for the quarterly period ended September 30, 2023."),
    (
        "costs",
        "Costs associated with our products vary: we compare the distribution of costs among "
        "product lines every year.",
    ),
    (
        "revenue",
        "Net revenue by product line (In millions)\nClient Computing Group $7,867\n"
        "Data Center and AI 3,814\nTotal net revenue $14,158",
    ),
    (
        "risks",
        "Semiconductor supply is subject to different risks associated with distribution partners.",
    ),
]
FRAMED_QUESTION = (
    "How does the revenue distribution among different semiconductor product lines compare to "
    "the costs associated with these products?"
)


def test_the_glossary_s_terms_weigh_more_than_the_words_that_frame_the_question() -> None:
    # Without the glossary, the prose that echoes the framing words comes first; the workspace's
    # reviewed vocabulary says "revenue" names a measure these documents report (issue 24): the
    # table that holds it rises above the prose.
    from thoth.index.base import Hit

    found = [
        Candidate(Hit(name, 1.0 / rank, {}), text, "en")
        for rank, (name, text) in enumerate(FRAMED, start=1)
    ]
    plain = [h.id for h in rerank(FRAMED_QUESTION, found, stems_for).hits]
    assert plain.index("costs") < plain.index("revenue")
    glossary = "revenue net revenue net sales total net sales"
    focused = rerank(FRAMED_QUESTION, found, stems_for, named_in=lambda language: glossary)
    assert [h.id for h in focused.hits][:2] == ["revenue", "costs"]
