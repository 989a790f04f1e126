"""The offline extractive answerer on real SEC 10-Q text (tests/answer/sec10q_passages.py):
it quotes the sentences and table rows that hold the figures the question asks for, a table row
always with its header (the period) and its section, never boilerplate that matches only the
question's generic words, and says which fragment (marker, page) each quote comes from.

Questions are those of /work/shared/data/sec10q/qna.csv (or close to them)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from tests.answer import sec10q_passages as sec
from thoth.answer.answerers import (
    MAX_FIGURE_QUOTES,
    MAX_QUOTES,
    Declined,
    ExtractiveAnswerer,
    quotable_units,
)
from thoth.answer.context import AssembledContext, assemble_context
from thoth.answer.retrieval import Retrieval, RetrievedFragment
from thoth.answer.routing import Route
from thoth.answer.seams import NoPseudonymizer
from thoth.answer.wording import ENGLISH, ITALIAN, Wording
from thoth.documents.records import KnowledgeFragment, fragment_point_id
from thoth.glossary import load_glossary
from thoth.markup import markdown_table

AAPL = "filings:docs/2023 Q2 AAPL.pdf"
MSFT = "filings:docs/2023 Q3 MSFT.pdf"
INTC = "filings:docs/2023 Q3 INTC.pdf"
TITLES = {
    "AAPL": "Apple Inc.",
    "AMZN": "AMAZON.COM, INC.",
    "INTC": "Intel Corporation",
    "MSFT": "MICROSOFT CORPORATION",
}
_QUOTE = re.compile(r"^- «(?P<text>.*)» \[(?P<marker>\d+)\](?P<where>.*)$")


def passage(
    rank: int,
    doc_id: str,
    text: str,
    page: int,
    *,
    language: str | None = None,
    headings: tuple[str, ...] = (),
) -> RetrievedFragment:
    title = next(
        (name for ticker, name in TITLES.items() if ticker in doc_id), "MICROSOFT CORPORATION"
    )
    record = KnowledgeFragment(
        record_kind="document",
        doc_id=doc_id,
        source="filings",
        path=doc_id.split(":", 1)[1],
        title=title,
        channel="filings",
        labels=("public",),
        ordinal=rank,
        text=text,
        page=page,
        heading_path=headings,
    )
    return RetrievedFragment(
        id=fragment_point_id(doc_id, rank),
        rank=rank,
        score=1.0 / rank,
        record=record.record("ws", "g1", bm25_language=language),
        dense_rank=rank,
        bm25_rank=None,
        floor=False,
    )


def context(*fragments: RetrievedFragment, wording: Wording = ENGLISH) -> AssembledContext:
    retrieval = Retrieval("found", list(fragments), Route(), {}, "g1")
    return assemble_context(retrieval, 20_000, wording)


# The finance glossary of benchmarks/sec10q.py: the terms a 10-Q writes for what an Italian
# or English question asks, which the answerer matches too.
GLOSSARY = load_glossary(Path(__file__).parents[2] / "benchmarks" / "data", "sec10q_glossary.yaml")


def retrieved(question: str, doc_id: str, *names: str) -> AssembledContext:
    """The context the engine assembled for `question`: the fragments of
    tests/answer/sec10q_passages.py called `names`, in rank order, and the glossary."""
    fragments = [
        passage(
            rank,
            doc_id,
            getattr(sec, name),
            getattr(sec, f"{name}_PAGE"),
            headings=getattr(sec, f"{name}_HEADINGS"),
        )
        for rank, name in enumerate(names, start=1)
    ]
    return dataclasses.replace(context(*fragments), glossary=GLOSSARY.expand(question))


def answer(
    ctx: AssembledContext, question: str, wording: Wording = ENGLISH, language: str = "en"
) -> str:
    answered = ExtractiveAnswerer(language, wording).answer(
        question, ctx, instructions=None, pseudonymizer=NoPseudonymizer()
    )
    assert isinstance(answered, str), answered  # not declined: some passage holds a term
    return answered


def quotes(text: str) -> list[re.Match[str]]:
    return [m for line in text.splitlines() if (m := _QUOTE.match(line))]


def squeeze(text: str) -> str:
    return " ".join(text.split())


def test_the_sentence_with_the_figures_wins_over_boilerplate() -> None:
    ctx = context(
        passage(1, AAPL, sec.AAPL_MDA_INTRO, sec.AAPL_MDA_INTRO_PAGE),
        passage(2, AAPL, sec.AAPL_BASIS, sec.AAPL_BASIS_PAGE),
        passage(3, AAPL, sec.AAPL_FORWARD_LOOKING, sec.AAPL_FORWARD_LOOKING_PAGE),
        passage(4, AAPL, sec.AAPL_HIGHLIGHTS, sec.AAPL_HIGHLIGHTS_PAGE),
    )
    text = answer(
        ctx,
        "In the second quarter of 2023, what was the primary driver behind the change in "
        "Apple's net income?",
    )
    assert "decreased 3% or $2.4 billion" in text, text
    assert "read in conjunction" not in text, text
    assert "forward-looking" not in text.lower(), text


def test_boilerplate_matching_only_generic_words_is_never_quoted() -> None:
    ctx = context(
        passage(1, AAPL, sec.AAPL_FORWARD_LOOKING, sec.AAPL_FORWARD_LOOKING_PAGE),
        passage(2, AAPL, sec.AAPL_MDA_INTRO, sec.AAPL_MDA_INTRO_PAGE),
        passage(3, AAPL, sec.AAPL_LEGAL, sec.AAPL_LEGAL_PAGE),
        passage(4, AAPL, sec.AAPL_OTHER_LEGAL, sec.AAPL_OTHER_LEGAL_PAGE),
    )
    text = answer(
        ctx,
        "What specific legal proceedings or potential liabilities were mentioned in Apple's "
        "Q2 2023 10-Q, and what is their potential impact?",
    )
    assert "subject to other legal proceedings" in text, text
    # These match the question only on the filing's name, period and form ("Apple", "10-Q"):
    assert "This section and other parts of this Quarterly Report" not in text, text
    assert "read in conjunction" not in text, text
    assert "Annual Report on Form 10-K" not in text, text


def test_a_table_row_is_quoted_with_its_period_header_and_section() -> None:
    ctx = context(passage(1, AAPL, sec.AAPL_OPERATIONS, sec.AAPL_OPERATIONS_PAGE))
    text = answer(ctx, "What was Apple's cost of sales for services in the second quarter of 2023?")
    [services] = [q for q in quotes(text) if q["text"].startswith("Cost of sales: Services")]
    # The period comes from the header line, the section ("Cost of sales:") from the row above:
    # without them "Services 6,065" could be net sales, cost or anything else.
    assert "Three Months Ended April 1, 2023: 6,065" in services["text"], text
    assert "Six Months Ended March 26, 2022: 10,822" in services["text"], text


def test_a_header_written_over_two_lines_gives_each_value_its_whole_period() -> None:
    ctx = context(passage(1, MSFT, sec.MSFT_NOTIONAL, sec.MSFT_NOTIONAL_PAGE))
    text = answer(
        ctx,
        "What were the notional amounts of Microsoft's foreign exchange contracts sold as of "
        "September 30, 2023?",
    )
    [sold] = [q["text"] for q in quotes(text) if "Foreign exchange contracts sold" in q["text"]]
    assert sold == (
        "Not Designated as Hedging Instruments: Foreign exchange contracts sold — "
        "September 30, 2023: 17,026; June 30, 2023: 25,159 (In millions)"
    ), text


def test_a_table_left_as_text_lines_is_quoted_row_by_row_with_its_period() -> None:
    ctx = context(passage(1, MSFT, sec.MSFT_SEGMENTS, sec.MSFT_SEGMENTS_PAGE))
    text = answer(ctx, "What was the revenue of Microsoft's Intelligent Cloud segment?")
    rows = [q["text"] for q in quotes(text) if "Intelligent Cloud" in q["text"]]
    assert rows[0] == (
        "Revenue: Intelligent Cloud — Three Months Ended September 30, 2023: 24,259; "
        "Three Months Ended September 30, 2022: 20,325 (In millions)"
    ), text
    # The geography table's rows are lines of their own, not one run-on "sentence".
    units = quotable_units(sec.MSFT_SEGMENTS)
    assert (
        "United States — Three Months Ended September 30, 2023: $ 28,812; "
        "Three Months Ended September 30, 2022: $ 25,867 (In millions)"
    ) in units, units
    assert (
        "Operating Income: Total — Three Months Ended September 30, 2023: $ 26,895; "
        in "\n".join(units)
    )


def test_nested_sections_and_a_subtotal_without_label_keep_their_names() -> None:
    units = quotable_units(sec.INTEL_SEGMENTS)
    # "Client Computing" is a subsection of "Net revenue:"; its subtotal row has no label and
    # closes it, so "Data Center and AI" is net revenue again, not client computing.
    assert any(u.startswith("Net revenue: Client Computing: Desktop — ") for u in units), units
    assert any(
        u.startswith("Net revenue: Client Computing — Three Months Ended Sep 30, 2023: 7,867;")
        for u in units
    ), units
    assert any(
        u.startswith("Net revenue: Data Center and AI — Three Months Ended Sep 30, 2023: 3,814;")
        for u in units
    ), units
    assert any(u.startswith("Operating income (loss): Data Center and AI — ") for u in units)


def test_a_total_closes_the_section_it_sums() -> None:
    units = quotable_units(sec.AAPL_OPERATIONS)
    # "Total cost of sales" sums "Cost of sales:" and closes it: the gross margin and the
    # net income that follow are no cost of sales and no operating expense.
    assert any(
        u.startswith("Gross margin — Three Months Ended April 1, 2023: 41,976;") for u in units
    )
    assert any(
        u.startswith("Operating income — Three Months Ended April 1, 2023: 28,318;") for u in units
    )
    assert any(
        u.startswith("Net income — Three Months Ended April 1, 2023: $24,160;") for u in units
    )
    assert not any(u.startswith(("Cost of sales: Gross", "Operating expenses: Net")) for u in units)
    # The rows it sums keep their section.
    assert any(u.startswith("Operating expenses: Research and development — ") for u in units)


def test_a_total_naming_no_open_section_reads_under_none() -> None:
    # The equity statement's grand total came below its last section and read as the
    # accumulated loss's; a subtotal inside a section ("Total cash, cash equivalents, and
    # short-term investments" under "Current assets:") reads alone too, and the rows after it
    # keep their section.
    units = quotable_units(sec.MSFT_EQUITY_STATEMENTS)
    assert any(
        u.startswith("Total stockholders’ equity — Three Months Ended September 30, 2023: $220,714")
        for u in units
    ), units
    assert any(
        u.startswith("Accumulated other comprehensive loss: Balance, end of period — ")
        for u in units
    )
    balance = markdown_table(
        ("", "September 30, 2023", "June 30, 2023"),
        [
            ("Current assets:", "", ""),
            ("Cash and cash equivalents", "$ 80,452", "$ 34,704"),
            ("Short-term investments", "63,499", "76,558"),
            ("Total cash, cash equivalents, and short-term investments", "143,951", "111,262"),
            ("Other current assets", "23,682", "21,807"),
            ("Total current assets", "207,586", "184,257"),
        ],
    )
    units = quotable_units(balance)
    assert any(
        u.startswith("Total cash, cash equivalents, and short-term investments — ") for u in units
    )
    assert any(u.startswith("Current assets: Other current assets — ") for u in units)
    assert any(u.startswith("Current assets: Total current assets — ") for u in units)


def test_the_row_holding_the_asked_figure_wins_over_a_sentence_without_one() -> None:
    ctx = context(passage(1, AAPL, sec.AAPL_SEGMENTS, sec.AAPL_SEGMENTS_PAGE))
    text = answer(
        ctx, "What were Apple's net sales in Greater China in the second quarter of 2023?"
    )
    first = quotes(text)[0]["text"]
    assert "Greater China — Three Months Ended April 1, 2023: 17,812" in first, text


def test_every_quote_says_its_marker_and_page() -> None:
    ctx = context(
        passage(1, MSFT, sec.MSFT_SUMMARY, sec.MSFT_SUMMARY_PAGE),
        passage(2, AAPL, sec.AAPL_HIGHLIGHTS, sec.AAPL_HIGHLIGHTS_PAGE),
    )
    text = answer(ctx, "What were the revenue and net income of Microsoft and Apple's net sales?")
    found = quotes(text)
    assert found, text
    pages = {"1": sec.MSFT_SUMMARY_PAGE, "2": sec.AAPL_HIGHLIGHTS_PAGE}
    for q in found:
        assert q["where"] == f" ({ENGLISH.page.format(page=pages[q['marker']])})", text
    assert {q["marker"] for q in found} == {"1", "2"}, text


def test_the_page_is_said_in_the_workspace_language() -> None:
    ctx = context(passage(1, MSFT, sec.MSFT_SUMMARY, sec.MSFT_SUMMARY_PAGE), wording=ITALIAN)
    text = answer(ctx, "Microsoft revenue net income", ITALIAN)
    assert f"[1] ({ITALIAN.page.format(page=sec.MSFT_SUMMARY_PAGE)})" in text, text


def test_every_quoted_unit_is_made_of_the_fragments_own_words() -> None:
    """A sentence is the fragment's text (line breaks unwrapped); a row is its cells, each
    verbatim, joined to its header cells (a header written over two lines joined back): no
    word and no number of a quote is Thoth's own but the joints ("; ", ": ", " — ")."""
    for text in (
        sec.AAPL_OPERATIONS,
        sec.MSFT_NOTIONAL,
        sec.AAPL_HIGHLIGHTS,
        sec.MSFT_SUMMARY,
        sec.MSFT_SEGMENTS,
    ):
        words = set(text.split())
        units = quotable_units(text)
        assert units
        for unit in units:
            for word in unit.split():
                assert word == "—" or word in words or word.rstrip(":;") in words, (word, unit)
            if " — " not in unit:
                assert unit in squeeze(text), unit  # a sentence: verbatim, unwrapped


def test_without_any_matching_term_the_answerer_declines_instead_of_quoting() -> None:
    # Issue 46, point 6: an Italian question on English filings shares no word with them but
    # the company's name; the answer quoted the closest passage under the sentence saying that
    # no passage holds the question's terms, and was served `found`. Quoting it answers
    # nothing: the answerer declines, and the service serves nothing_found.
    ctx = context(
        passage(1, MSFT, sec.MSFT_SUMMARY, sec.MSFT_SUMMARY_PAGE),
        passage(2, AAPL, sec.AAPL_MDA_INTRO, sec.AAPL_MDA_INTRO_PAGE),
    )
    answered = ExtractiveAnswerer("en", ENGLISH).answer(
        "Qual è l'utile netto di Microsoft nel 10-Q più recente?",
        ctx,
        instructions=None,
        pseudonymizer=NoPseudonymizer(),
    )
    assert answered == Declined("extractive", "no_terms"), answered


def test_a_lowercase_word_of_the_title_is_still_asked_about() -> None:
    # Only the question's names (capitalised) that the title holds locate the document; the
    # subject of a page titled "Triage" is still what a question about triage asks.
    record = KnowledgeFragment(
        record_kind="wiki",
        doc_id="wiki:ps/triage.md",
        source="wiki",
        path="ps/triage.md",
        title="Triage",
        channel="salute",
        labels=("public",),
        ordinal=1,
        text="Il reparto è aperto tutto l'anno. Il triage assegna un codice di priorità.",
    )
    fragment = RetrievedFragment(
        id=fragment_point_id(record.doc_id, 1),
        rank=1,
        score=1.0,
        record=record.record("ws", "g1"),
        dense_rank=1,
        bm25_rank=None,
        floor=False,
    )
    ctx = assemble_context(Retrieval("found", [fragment], Route(), {}, "g1"), 8000, ITALIAN)
    text = ExtractiveAnswerer("it", ITALIAN).answer(
        "Che cosa fa il triage?", ctx, instructions=None, pseudonymizer=NoPseudonymizer()
    )
    assert text == "- «Il triage assegna un codice di priorità.» [1]", text


def test_an_abbreviation_does_not_end_a_sentence() -> None:
    units = quotable_units(sec.AAPL_HIGHLIGHTS)
    assert units[0].startswith("Weakness in foreign currencies relative to the U.S. dollar had"), (
        units
    )
    assert units[0].endswith("compared to the same quarter in 2022."), units


def test_a_row_of_another_company_does_not_answer_for_the_one_asked_about() -> None:
    # Both filings have a "Net income" row; the question is about Apple, and Microsoft's
    # passage (ranked first by the search) never mentions Apple.
    ctx = context(
        passage(1, MSFT, sec.MSFT_SUMMARY, sec.MSFT_SUMMARY_PAGE),
        passage(2, AAPL, sec.AAPL_OPERATIONS, sec.AAPL_OPERATIONS_PAGE),
    )
    text = answer(ctx, "What was the net income of Apple in the quarter?")
    assert "Net income — Three Months Ended April 1, 2023: $24,160" in text, text
    assert "22,291" not in text, text


def test_a_fragment_is_matched_in_its_own_language() -> None:
    # An Italian workspace with English filings: each fragment is stemmed in its source's
    # language, the Italian question in each language of the context, so the English row
    # named in the question ("data-centric", "Intel") answers it.
    ctx = context(
        passage(1, INTC, sec.INTEL_SEGMENTS, sec.INTEL_SEGMENTS_PAGE, language="english"),
        wording=ITALIAN,
    )
    question = (
        "Quanto hanno pesato i ricavi delle attività data-centric di Intel sul totale dei "
        "ricavi nel terzo trimestre 2023?"
    )
    text = answer(ctx, question, ITALIAN, "it")
    assert ITALIAN.no_overlap not in text, text
    assert "Data Center and AI" in text and "3,814" in text, text


def test_an_english_fragment_is_stemmed_as_english_in_an_italian_workspace() -> None:
    # Stemmed as Italian, "revenues" and "revenue" are two words; as English, one.
    text = "Gross margin was 40% of sales. Net revenue was $14,158 million in the quarter."
    ctx = context(passage(1, INTC, text, 12, language="english"), wording=ITALIAN)
    answered = ExtractiveAnswerer("it", ITALIAN).answer(
        "Quali erano i revenues?", ctx, instructions=None, pseudonymizer=NoPseudonymizer()
    )
    assert answered == "- «Net revenue was $14,158 million in the quarter.» [1] (pag. 12)", answered


# 2023 Q2 NVDA.pdf, page 3: the condensed statement of income, rows as the filing writes them.
NVDA = "filings:docs/2023 Q2 NVDA.pdf"
NVDA_INCOME = """\
| (In millions) | Three Months Ended July 30, 2023 | Three Months Ended July 31, 2022 |
| --- | --- | --- |
| Revenue | $13,507 | $6,704 |
| Operating income | 6,800 | 499 |
| Interest income | 187 | 46 |
| Interest expense | (65) | (65) |
| Other income (expense), net | 181 | (24) |
| Income before income tax | 6,981 | 475 |
| Income tax expense (benefit) | 793 | (181) |
| Net income | $6,188 | $656 |
| Net income per share: Basic | $2.50 | $0.26 |"""


def test_a_quantitative_question_is_answered_with_every_row_that_holds_its_terms() -> None:
    # "The main contributors to net income": the reviewed answer lists operating income,
    # interest, other income and tax — more rows than the quotes a prose answer gets.
    ctx = context(passage(1, NVDA, NVDA_INCOME, 3))
    text = answer(
        ctx, "What were the main contributors to NVIDIA's net income in the second quarter?"
    )
    quoted = " ".join(q["text"] for q in quotes(text))
    for figure in ("6,800", "187", "181", "6,981", "793", "6,188"):
        assert f": {figure};" in quoted or f": ${figure};" in quoted, (figure, text)
    assert len(quotes(text)) > MAX_QUOTES, text


def test_sentences_without_a_figure_are_quoted_up_to_the_prose_limit() -> None:
    prose = " ".join(
        f"The {kind} income of the company was described in note {n} of the report."
        for n, kind in enumerate(
            ("operating", "interest", "other", "pretax", "net", "segment", "lease", "royalty"),
            start=1,
        )
    )
    ctx = context(passage(1, NVDA, prose, 3))
    text = answer(ctx, "What did NVIDIA say about its income?")
    assert len(quotes(text)) == MAX_QUOTES, text


def test_a_row_quoted_for_its_section_brings_the_other_rows_of_the_section() -> None:
    # "Net revenue: All other" holds the asked word in its section alone, so it stands for
    # the section, and its sibling rows are the breakdown asked: the segments that the
    # MD&A's sentences repeating "revenue" had pushed past the quotes come with it.
    question = (
        "How significant was the revenue from Intel's data-centric businesses in Q3 2023 "
        "relative to total revenue?"
    )
    ctx = retrieved(
        question,
        INTC,
        "INTC_REVENUE_WALK",
        "INTC_QUARTER_REVIEW",
        "INTC_DCAI_SUMMARY",
        "INTC_OPERATING_SEGMENTS",
        "INTC_RESULTS_OF_OPERATIONS",
    )
    text = answer(ctx, question)
    quoted = [q["text"] for q in quotes(text)]
    for segment, figure in (
        ("Data Center and AI", "3,814"),
        ("Network and Edge", "1,450"),
        ("Mobileye", "530"),
        ("Intel Foundry Services", "311"),
    ):
        assert any(
            q.startswith(f"Net revenue: {segment} — Three Months Ended Sep 30, 2023: {figure};")
            for q in quoted
        ), (segment, text)


def test_a_row_is_as_long_as_its_name_and_two_words_per_cell() -> None:
    # "Stated tax rate": one word per cell made the debt table's short rows (a bond, its
    # rates) and the balance sheet's outweigh the note's sentence giving the tax rate.
    question = (
        "In the most recent 10-Q, how does Microsoft's stated tax rate in the financial "
        "statements compare with the discussion on tax issues in the notes?"
    )
    ctx = retrieved(
        question,
        MSFT,
        "MSFT_TAX_NOTE",
        "MSFT_SHORT_TERM_DEBT",
        "MSFT_DEBT_TABLE",
        "MSFT_DEBT_NOTES",
        "MSFT_BALANCE_LIABILITIES",
    )
    text = answer(ctx, question)
    quoted = [q["text"] for q in quotes(text)]
    assert any(q.startswith("Our effective tax rate was 18% and 19%") for q in quoted), text


def test_a_statement_row_is_not_outweighed_by_the_headers_spelled_beside_its_cells() -> None:
    # Each cell of a spelled-out row carries its column header ("Three Months Ended Sep 30,
    # 2023: $(362)"): counted as words, they made the row as long as a paragraph, and the
    # sentences around the table outranked the rows holding the figures asked.
    question = (
        "Examine how Intel's effective tax rate in the most recent 10-Q compares with the "
        "tax-related discussions in the notes section."
    )
    ctx = retrieved(
        question,
        INTC,
        "INTC_TAX_MDA",
        "INTC_TAX_NOTE",
        "INTC_NON_GAAP",
        "INTC_FAIR_VALUE_HEDGES",
        "INTC_NON_GAAP_RECONCILIATION",
    )
    text = answer(ctx, question)
    quoted = " ".join(q["text"] for q in quotes(text))
    for figure in ("696.2%", "$(362)", "$(52)", "$(1,041)", "$(2,026)"):
        assert figure in quoted, (figure, text)


def test_a_total_quoted_for_its_section_brings_the_breakdown_asked_in_italian() -> None:
    # The glossary says "ricavi" is also "total net sales": "total" was then an asked word,
    # "Revenue: Total" counted as asked for its own label, and the segments never came.
    question = (
        "Nell'ultimo 10-Q, come si confronta la ripartizione dei ricavi di Microsoft tra i "
        "suoi segmenti di attività con il costo del venduto di quegli stessi segmenti?"
    )
    ctx = context(
        passage(1, MSFT, sec.MSFT_SUMMARY, sec.MSFT_SUMMARY_PAGE, language="english"),
        passage(2, MSFT, sec.MSFT_SEGMENTS, sec.MSFT_SEGMENTS_PAGE, language="english"),
    )
    text = answer(dataclasses.replace(ctx, glossary=GLOSSARY.expand(question)), question)
    quoted = [q["text"] for q in quotes(text)]
    for segment, figure in (
        ("Productivity and Business Processes", "$ 18,592"),
        ("Intelligent Cloud", "24,259"),
        ("More Personal Computing", "13,666"),
    ):
        assert any(
            q.startswith(f"Revenue: {segment} — Three Months Ended September 30, 2023: {figure};")
            for q in quoted
        ), (segment, text)


def test_one_fragment_does_not_fill_every_quote() -> None:
    # Asked in Italian, the glossary's English terms ("share repurchases", "stock
    # repurchases") meet every row of the equity statement: its short rows filled all ten
    # quotes, and the MD&A sentence giving the programme's size was never quoted.
    question = (
        "Microsoft ha avviato programmi di riacquisto di azioni proprie nel terzo trimestre "
        "2023, e di che entità?"
    )
    ctx = retrieved(
        question,
        MSFT,
        "MSFT_SHARE_REPURCHASES",
        "MSFT_REPURCHASE_TABLE",
        "MSFT_MONTHLY_REPURCHASES",
        "MSFT_EQUITY_STATEMENTS",
        "MSFT_SALES_AND_MARKETING",
    )
    text = answer(ctx, question)
    quoted = [q["text"] for q in quotes(text)]
    assert (
        "As of September 30, 2023, $18.7 billion remained of our $60 billion share repurchase "
        "program."
    ) in quoted, text
    # The statement's rows still come, after the other fragments' quotes.
    assert any(q.startswith("Retained earnings: Common stock repurchased — ") for q in quoted)


# 2023 Q3 MSFT.pdf, pages 6 and 17, as the PDF reader gives them (rows shortened).
MSFT_CASH_FLOWS = """\
|  | Three Months Ended September 30, 2023 | Three Months Ended September 30, 2022 |
| --- | --- | --- |
| Operations |  |  |
| Net income | $22,291 | $17,556 |
| Changes in operating assets and liabilities: |  |  |
| Accounts receivable | 11,034 | 11,729 |
| Inventories | (505) | (543) |
| Net cash from operations | 30,583 | 23,198 |
| Financing |  |  |
| Common stock repurchased | (4,831) | (5,573) |
| Net cash from (used in) financing | 14,761 | (10,883) |
| Investing |  |  |
| Additions to property and equipment | (9,917) | (6,283) |"""

MSFT_HEDGES = """\
|  | Three Months Ended September 30, 2023 | Three Months Ended September 30, 2022 |
| --- | --- | --- |
| Designated as Fair Value Hedging Instruments |  |  |
| Interest rate contracts |  |  |
| Derivatives | $(16) | $(43) |
| Hedged items | 3 | 43 |
| Designated as Cash Flow Hedging Instruments |  |  |
| Foreign exchange contracts |  |  |
| Amount reclassified from accumulated other comprehensive loss | (46) | (59) |
| Not Designated as Hedging Instruments |  |  |
| Equity contracts | 113 | 12 |"""


def test_a_section_after_rows_is_not_nested_under_the_list_before_it() -> None:
    # "Financing" starts a block of its own: it is no change in operating assets.
    units = quotable_units(MSFT_CASH_FLOWS)
    assert any(
        u.startswith("Changes in operating assets and liabilities: Inventories — ") for u in units
    )
    assert any(u.startswith("Financing: Common stock repurchased — ") for u in units), units
    assert any(u.startswith("Investing: Additions to property and equipment — ") for u in units)


def test_a_section_named_like_an_open_one_is_its_sibling() -> None:
    # "Designated as Cash Flow Hedging Instruments" sits beside "Designated as Fair Value
    # Hedging Instruments", not under it, and so does "Not Designated as Hedging Instruments".
    units = quotable_units(MSFT_HEDGES)
    assert any(
        u.startswith(
            "Designated as Fair Value Hedging Instruments: Interest rate contracts: Derivatives — "
        )
        for u in units
    ), units
    assert any(
        u.startswith(
            "Designated as Cash Flow Hedging Instruments: Foreign exchange contracts: "
            "Amount reclassified from accumulated other comprehensive loss — "
        )
        for u in units
    ), units
    assert any(
        u.startswith("Not Designated as Hedging Instruments: Equity contracts — ") for u in units
    ), units


# 2023 Q2 AMZN.pdf page 5 and 2023 Q2 AAPL.pdf page 7: labels the PDF wrapped over two lines.
AMZN_COMPREHENSIVE_INCOME = """\
|  | Three Months Ended June 30, 2022 | Three Months Ended June 30, 2023 |
| --- | --- | --- |
| Other comprehensive income (loss): |  |  |
| Net change in unrealized gains (losses) on available-for-sale debt |  |  |
| securities: |  |  |
| Unrealized gains (losses), net of tax of $0, $(5), $1, and $(34) | (238) | 17 |
| Reclassification adjustment for losses (gains) included in “Other |  |  |
| income (expense), net,” net of tax of $0, $(5), $0, and $(15) | 7 | 12 |
| Net unrealized gains (losses) on available-for-sale debt securities | (231) | 29 |"""

AAPL_EQUITY = """\
|  | Three Months Ended April 1, 2023 | Three Months Ended March 26, 2022 |
| --- | --- | --- |
| Common stock and additional paid-in capital: |  |  |
| Beginning balances | 66,399 | 58,424 |
| Common stock withheld related to net share settlement of equity |  |  |
| awards | (281) | (149) |
| Share-based compensation | 2,760 | 2,313 |"""


def test_a_label_wrapped_over_two_lines_is_one_label_and_no_section() -> None:
    units = quotable_units(AMZN_COMPREHENSIVE_INCOME)
    section = "Net change in unrealized gains (losses) on available-for-sale debt securities"
    assert any(u.startswith(f"{section}: Unrealized gains (losses), net of tax") for u in units)
    # A wrapped row label after the section's rows leaves the section open.
    assert any(
        u.startswith(f"{section}: Reclassification adjustment for losses (gains) included in")
        for u in units
    ), units
    units = quotable_units(AAPL_EQUITY)
    capital = "Common stock and additional paid-in capital"
    assert any(
        u.startswith(
            f"{capital}: Common stock withheld related to net share settlement of equity awards — "
        )
        for u in units
    ), units
    assert any(u.startswith(f"{capital}: Share-based compensation — ") for u in units), units


# 2023 Q2 AMZN.pdf page 16 and 2023 Q2 NVDA.pdf page 19, as the PDF reader gives them.
AMZN_STOCK_COMPENSATION = """\
|  | Three Months Ended June 30, 2022 | Three Months Ended June 30, 2023 |
| --- | --- | --- |
| Cost of sales | $213 | $251 |
| Fulfillment | 763 | 932 |
| Technology and infrastructure | 2,814 | 4,043 |
| Sales and marketing | 990 | 1,303 |
| General and administrative | 429 | 598 |
| Total stock-based compensation expense | $5,209 | $7,127 |"""

NVDA_NOTES = """\
| (In millions) | July 30, 2023 | January 29, 2023 |
| --- | --- | --- |
| 3.50% Notes Due 2050 | 2,000 | 2,000 |
| 3.70% Notes Due 2060 | 500 | 500 |
| Net carrying amount | 2,500 | 2,500 |
| Less short-term portion | (1,249) | (1,250) |
| Total long-term portion | $1,251 | $1,250 |"""


def test_the_rows_a_total_adds_up_to_are_named_by_it() -> None:
    # Without a section line, "Cost of sales — $251" read as Amazon's cost of sales; the
    # cells add up to the total below: the rows are stock-based compensation by line.
    units = quotable_units(AMZN_STOCK_COMPENSATION)
    assert any(
        u.startswith("Stock-based compensation expense: Cost of sales — Three Months Ended")
        for u in units
    ), units
    assert any(
        u.startswith("Stock-based compensation expense: General and administrative") for u in units
    )
    # A reconciliation ("Less short-term portion") is no breakdown: its rows keep their names.
    units = quotable_units(NVDA_NOTES)
    assert any(u.startswith("Net carrying amount — ") for u in units), units
    assert not any(u.startswith("Long-term portion") for u in units), units


def test_a_stopword_of_the_question_s_language_matches_nothing_in_another() -> None:
    # Stemmed as English, the Italian "e" ("ricerca e sviluppo") met the "(e)" of "Rules
    # 13a-15(e)": the certifications were quoted as if they held the question's words.
    text = (
        "The Company's management have concluded that the disclosure controls and procedures "
        "as defined in Rules 13a-15(e) and 15d-15(e) under the Exchange Act were effective."
    )
    ctx = context(passage(1, AAPL, text, 22, language="english"), wording=ITALIAN)
    answered = ExtractiveAnswerer("it", ITALIAN).answer(
        "Quanto ha speso Apple in ricerca e sviluppo?",
        ctx,
        instructions=None,
        pseudonymizer=NoPseudonymizer(),
    )
    assert answered == Declined("extractive", "no_terms"), answered


def test_a_stopword_of_a_language_the_glossary_matched_matches_nothing_in_another() -> None:
    # An English workspace whose glossary an Italian question matched ("trimestre"): Italian
    # is at play though neither the sources nor the workspace speak it, and its "e" is no
    # term of the question either; the certifications' "(e)" must not be quoted for it.
    text = (
        "The Company's management have concluded that the disclosure controls and procedures "
        "as defined in Rules 13a-15(e) and 15d-15(e) under the Exchange Act were effective."
    )
    question = "Quanto ha speso Apple in ricerca e sviluppo nel trimestre?"
    expansion = GLOSSARY.expand(question)
    assert "it" in (expansion.used or {}), expansion
    fragment = passage(1, AAPL, text, 22, language="english")
    retrieval = Retrieval("found", [fragment], Route(), {}, "g1", glossary=expansion)
    answered = ExtractiveAnswerer("en", ENGLISH).answer(
        question,
        assemble_context(retrieval, 20_000, ENGLISH),
        instructions=None,
        pseudonymizer=NoPseudonymizer(),
    )
    assert answered == Declined("extractive", "no_terms"), answered


# -- a heading speaks for the units under it -------------------------------------------------

# 2023 Q3 MSFT.pdf, page 17: a fragment that runs from the derivatives note into the
# inventories note (the PDF's one font, the chunk packing two short sections).
MSFT_DERIVATIVES_AND_INVENTORIES = """\
Gains (losses) on derivative instruments recognized in other income (expense), net were as follows:

(In millions)

|  | Three Months Ended September 30, 2023 | Three Months Ended September 30, 2022 |
| --- | --- | --- |
| Foreign exchange contracts | 206 | 240 |
| Equity contracts | 113 | 12 |

###### NOTE 6 — INVENTORIES

The components were as follows:

(In millions)

|  | September 30, 2023 | June 30, 2023 |
| --- | --- | --- |
| Raw materials | $520 | $709 |
| Work in process | 15 | 23 |
| Finished goods | 2,465 | 1,768 |
| Total | $3,000 | $2,500 |"""


def test_rows_under_a_heading_that_names_the_asked_measure_are_quoted() -> None:
    # "Raw materials $520" holds no asked word: the note's heading above it does. The
    # derivatives rows above the heading stand under none of the asked words.
    ctx = context(
        passage(
            1,
            MSFT,
            MSFT_DERIVATIVES_AND_INVENTORIES,
            17,
            headings=("MICROSOFT CORPORATION", "Fair Values of Derivative Instruments"),
        ),
        passage(2, MSFT, "Our inventory policy is described in the annual report.", 40),
    )
    text = answer(ctx, "How large were Microsoft's inventories?")
    quoted = [q["text"] for q in quotes(text)]
    for label, figure in (("Raw materials", "$520"), ("Finished goods", "2,465")):
        assert any(q.startswith(f"{label} — September 30, 2023: {figure};") for q in quoted), text
    assert not any("contracts" in q for q in quoted), text


def test_a_story_under_the_asked_section_is_quoted_though_it_repeats_no_asked_word() -> None:
    # Amazon's legal proceedings: each suit's sentence names the parties and the patents, never
    # "legal proceedings"; the section's heading does.
    amzn = "filings:docs/2023 Q2 AMZN.pdf"
    suits = (
        "In May 2018, Rensselaer Polytechnic Institute filed a complaint against Amazon.com, "
        "Inc. alleging that Alexa devices infringe U.S. Patent No. 7,177,798. The complaint "
        "seeks an injunction, enhanced damages, and attorneys' fees."
    )
    risks = "We are subject to legal and regulatory requirements in many jurisdictions."
    ctx = context(
        passage(1, amzn, suits, 20, headings=("AMAZON.COM, INC.", "Legal Proceedings")),
        passage(2, amzn, risks, 30, headings=("AMAZON.COM, INC.", "Risk Factors")),
    )
    text = answer(ctx, "What legal proceedings were mentioned in Amazon's Q2 2023 10-Q?")
    quoted = [q["text"] for q in quotes(text)]
    assert any("Patent No. 7,177,798" in q for q in quoted), text


APPLE_CONTENTS = """###### Form 10-Q For the Fiscal Quarter Ended April 1, 2023 TABLE OF CONTENTS

|  |  | Page |
| --- | --- | --- |
|  | Part I |  |
| Item 1. | Financial Statements | 1 |
| Item 3. | Quantitative and Qualitative Disclosures About Market Risk | 19 |
|  | Part II |  |
| Item 1. | Legal Proceedings | 20 |
| Item 1A. | Risk Factors | 20 |
| Item 2. | Unregistered Sales of Equity Securities and Use of Proceeds | 20 |
"""
APPLE_OTHER_LEGAL = """###### Other Legal Proceedings

The Company is subject to other legal proceedings and claims that have not been fully resolved and
that have arisen in the ordinary course of business. The outcome of litigation is inherently
uncertain.
"""


def test_a_table_of_contents_row_is_no_answer_when_a_sentence_matches() -> None:
    # A contents row holds the asked words, is short and ends in a page number taken for a
    # figure: it outscored the section that tells the proceedings. A table with a "Page" column
    # is a table of contents: its rows are titles, quoted only when nothing else matches.
    question = "What legal proceedings were mentioned in Apple's 10-Q?"
    ctx = context(
        passage(1, AAPL, APPLE_CONTENTS, 3),
        passage(2, AAPL, APPLE_OTHER_LEGAL, 23),
    )
    quoted = [q["text"] for q in quotes(answer(ctx, question))]
    assert quoted and not any("Page" in q for q in quoted), quoted
    assert any(q.startswith("The Company is subject to other legal proceedings") for q in quoted)
    # Alone, the contents still say where the proceedings are told.
    alone = [
        q["text"] for q in quotes(answer(context(passage(1, AAPL, APPLE_CONTENTS, 3)), question))
    ]
    assert any("Legal Proceedings" in q and "Page: 20" in q for q in alone), alone


def test_a_heading_right_above_another_one_holds_its_section_too() -> None:
    # "Item 1. Legal Proceedings" then, with no text between, "Epic Games": the suit's story
    # sits under both, although neither its sentences nor its nearest heading say "legal".
    ctx = context(
        passage(
            1, AAPL, sec.AAPL_LEGAL, 23, headings=("Apple Inc.", "PART II — OTHER INFORMATION")
        ),
        passage(2, AAPL, APPLE_OTHER_LEGAL, 23),
    )
    quoted = [
        q["text"]
        for q in quotes(answer(ctx, "What legal proceedings were mentioned in Apple's 10-Q?"))
    ]
    assert any(q.startswith("Epic Games, Inc. (“Epic”) filed a lawsuit") for q in quoted), quoted


def test_the_closer_fragment_s_sentence_wins_a_tie_of_words() -> None:
    # Eight fragments compete for five prose quotes: the fused ranking is evidence too, so a
    # sentence of the closest fragment is not outranked by an eighth-ranked one only because
    # the latter is a word shorter.
    question = "how is the warranty reserve estimated"
    closest = (
        "The warranty reserve is estimated from the claims history of every product line. "
        "The warranty reserve is estimated again when a recall of a product line is announced. "
        "The warranty reserve is estimated by the finance team of each product line region."
    )
    farther = (
        "The warranty reserve is estimated from repair costs per unit sold. "
        "The warranty reserve is estimated yearly by the audit committee. "
        "The warranty reserve is estimated with the help of outside actuaries."
    )
    fillers = [
        f"Section {n} describes the office leases of the company in city {n}." for n in range(6)
    ]
    ctx = context(
        passage(1, AAPL, closest, 10),
        *(passage(rank, AAPL, text, 20 + rank) for rank, text in enumerate(fillers, start=2)),
        passage(8, AAPL, farther, 40),
    )
    quoted = [q["text"] for q in quotes(answer(ctx, question))]
    assert sum("product line" in q for q in quoted) == 3, quoted


def test_a_percentage_row_is_spelled_with_the_row_it_measures() -> None:
    # Apple's operating expenses: each expense row is followed by "Percentage of total net
    # sales", which says nothing alone: 8% of the net sales is what research costs.
    table = markdown_table(
        ["", "Three Months Ended April 1, 2023", "Three Months Ended March 26, 2022"],
        [
            ["Research and development", "$7,457", "$6,387"],
            ["Percentage of total net sales", "8%", "7%"],
            ["Selling, general and administrative", "$6,201", "$6,193"],
            ["Percentage of total net sales", "7%", "6%"],
        ],
    )
    units = quotable_units(table)
    assert units[1].startswith(
        "Research and development, percentage of total net sales — "
        "Three Months Ended April 1, 2023: 8%"
    ), units
    assert units[3].startswith("Selling, general and administrative, percentage of"), units


def test_the_words_of_a_period_locate_a_row_and_say_nothing_of_it() -> None:
    # "terzo trimestre" is "three months ended" in the glossary, and every row of a quarter's
    # table says it in its column header: the derivatives rows above the inventories note
    # held three asked words more than the inventories rows, and were the answer.
    question = (
        "Nel 10-Q di Microsoft del terzo trimestre 2023, come si accordano le variazioni "
        "delle scorte riportate con le strategie di gestione della catena di fornitura?"
    )
    ctx = retrieved(question, MSFT, "MSFT_DERIVATIVES_INVENTORIES")
    text = answer(ctx, question, ITALIAN)
    assert "Raw materials" in text, text
    assert "Finished goods" in text, text
    assert "Equity contracts" not in text, text


def test_an_english_period_phrase_weighs_nothing_either() -> None:
    question = (
        "How did Microsoft's inventories change in the three months ended September 30, 2023?"
    )
    ctx = retrieved(question, MSFT, "MSFT_DERIVATIVES_INVENTORIES")
    text = answer(ctx, question)
    assert "Raw materials" in text, text
    assert "Equity contracts" not in text, text


def test_a_question_about_many_figures_gets_more_than_ten_quotes() -> None:
    # Each asked measure is a row of Apple's income statement: past the five best units, up to
    # MAX_FIGURE_QUOTES more rows that reach the share of the best (five more cut this answer
    # at ten rows, before the tax and per-share rows).
    question = (
        "What were Apple's research and development, selling general and administrative, "
        "operating expenses, operating income, other income, provision for income taxes, "
        "net income, gross margin and earnings per share?"
    )
    ctx = context(passage(1, AAPL, sec.AAPL_OPERATIONS, sec.AAPL_OPERATIONS_PAGE))
    rows = [m["text"] for m in quotes(answer(ctx, question))]
    assert 10 < len(rows) <= MAX_QUOTES + MAX_FIGURE_QUOTES, rows
    assert any(r.startswith("Provision for income taxes — ") for r in rows), rows
    assert any(r.startswith("Earnings per share: Diluted — ") for r in rows), rows


def test_a_period_in_a_row_s_own_label_tells_it_apart() -> None:
    # A quarterly sheet names its quarter in each row's label, not in a column header: there
    # "trimestre" tells the quarters from the year, and weighing it nothing left the answer
    # to the year's rate (5,9%) for a question about the third quarter (0.055).
    table = (
        "| Trimestre | Ricoveri ordinari | Degenza media RO (giorni) | Riammissioni a 30 giorni |\n"
        "| --- | --- | --- | --- |\n"
        "| 1° trimestre 2024 | 6412 | 7.4 | 0.061 |\n"
        "| 2° trimestre 2024 | 6288 | 7.1 | 0.058 |\n"
        "| 3° trimestre 2024 | 5731 | 6.9 | 0.055 |\n"
        "| 4° trimestre 2024 | 6190 | 7.3 | 0.06 |\n"
        "| Anno 2024 | 24621 | 7.2 | 0.059 |"
    )
    wiki = (
        "## Riammissioni a 30 giorni\n\nUna riammissione è un nuovo ricovero ordinario dello "
        "stesso paziente entro 30 giorni dalla dimissione di un ricovero ordinario precedente, "
        "in qualunque reparto. Nel 2024 il tasso di riammissione è stato del 5,9%."
    )
    question = "Qual è stato il tasso di riammissione a 30 giorni nel 3° trimestre 2024?"
    ctx = context(
        passage(1, "wiki:wiki/ricoveri/degenza.md", wiki, 1, language="it"),
        passage(2, "indicatori:documents/indicatori.xlsx", table, 1, language="it"),
        wording=ITALIAN,
    )
    text = answer(ctx, question, ITALIAN, "it")
    assert "Trimestre: 3° trimestre 2024; " in text and "0.055" in text, text


def test_a_sentence_holding_only_the_asked_period_is_no_answer() -> None:
    # "during the second quarter of 2023" is all the repurchase sentence shares with a
    # question about research and development in that quarter.
    question = "How much did Apple spend on research and development in the second quarter of 2023?"
    ctx = context(
        passage(1, AAPL, sec.AAPL_SEGMENTS, sec.AAPL_SEGMENTS_PAGE),
        passage(2, AAPL, sec.AAPL_OPERATIONS, sec.AAPL_OPERATIONS_PAGE),
        passage(3, AAPL, sec.AAPL_HIGHLIGHTS, sec.AAPL_HIGHLIGHTS_PAGE),
    )
    text = answer(ctx, question)
    assert "Research and development — Three Months Ended April 1, 2023: 7,457" in text, text
    assert "repurchased" not in text, text


PLAN = "ps:documents/piano-sovraffollamento.html"


def test_a_number_that_names_no_period_is_asked() -> None:
    # "livello 3" is no date: the level asked tells its sentence from the other levels', which
    # a number weighing nothing left tied, the closer ones taking the five quotes.
    frags = [
        f"Al livello {n} i ricoveri programmati sono sospesi per {hours} ore."
        for n, hours in ((1, 4), (2, 12), (4, 72), (5, 96), (6, 120), (3, 48))
    ]
    ctx = context(
        *(passage(rank, PLAN, text, rank) for rank, text in enumerate(frags, start=1)),
        wording=ITALIAN,
    )
    question = "Per quante ore sono sospesi i ricoveri programmati al livello 3?"
    text = answer(ctx, question, ITALIAN, "it")
    assert "Al livello 3 i ricoveri programmati sono sospesi per 48 ore." in text, text


def test_a_table_of_words_weighs_as_much_as_a_sentence() -> None:
    # "fino a 5" and "da 6 a 12" are no figures: a table of levels described in words is not
    # a statement, and its rows weighed twice, leaving the sentence that answers below the
    # share of the best.
    table = (
        "| Livello | Pazienti in boarding | Azioni principali |\n| --- | --- | --- |\n"
        "| 1 - ordinario | fino a 5 | gestione ordinaria dei ricoveri programmati |\n"
        "| 2 - allerta | da 6 a 12 | ricoveri programmati anticipati |\n"
        "| 3 - crisi | oltre 12 | sospensione dei ricoveri programmati |"
    )
    sentence = "In crisi la direzione sospende i ricoveri chirurgici."
    question = "Quali ricoveri programmati sono sospesi in crisi?"
    ctx = context(
        passage(1, PLAN, table, 1),
        passage(2, PLAN, sentence, 2),
        passage(3, PLAN, "Il piano vale per il pronto soccorso generale.", 3),
        wording=ITALIAN,
    )
    text = answer(ctx, question, ITALIAN, "it")
    assert sentence in text, text


def test_the_rows_a_named_row_adds_up_to_are_its_breakdown() -> None:
    # Intel's income statement writes no "Total": "Operating expenses | 6,026" adds up the
    # three rows above it, in every column. Asked for "the operational expenses details", the
    # reviewed answer quotes those three rows; they are quoted under the row they make up.
    units = quotable_units(sec.INTC_INCOME_STATEMENT)
    assert any(
        u.startswith("Operating expenses: Research and development — Three Months Ended")
        for u in units
    ), units
    assert any(u.startswith("Operating expenses: Restructuring and other charges") for u in units)
    # A row the ones above do not add up to keeps its name alone ("Gross margin" is revenue
    # less cost of sales), and so do the rows above it.
    assert any(u.startswith("Gross margin — Three Months Ended") for u in units), units
    assert any(u.startswith("Net revenue — Three Months Ended") for u in units), units
    question = (
        "From Intel's Q3 2023 10-Q, how do the operational expenses details relate to the "
        "insights in the segment reporting?"
    )
    text = answer(retrieved(question, INTC, "INTC_INCOME_STATEMENT"), question)
    for figure in ("3,870", "12,059", "1,340", "4,017", "816", "1,080"):
        assert figure in text, text


def test_a_figure_of_another_period_than_the_quarter_asked_says_so() -> None:
    # Asked about a quarter, a page that gives the year's rate must not pass for the quarter's:
    # the quote says the period it states (the demo's public caller, who cannot see the sheet
    # with the quarters, got "Nel 2024 ... 5,9%" for the third quarter, marked found).
    from thoth.answer.wording import ITALIAN

    page = (
        "Nel 2024 la degenza media dei ricoveri ordinari è stata di 7,2 giorni, con un minimo "
        "di 6,9 giorni nel terzo trimestre.\n\nNel 2024 il tasso di riammissione a 30 giorni è "
        "stato del 5,9%."
    )
    ctx = context(passage(1, "wiki:wiki/ricoveri.md", page, 1), wording=ITALIAN)
    question = "Qual è stato il tasso di riammissione a 30 giorni nel 3° trimestre 2024?"
    text = answer(ctx, question, ITALIAN)
    [rate] = [line for line in text.splitlines() if "5,9%" in line]
    assert rate.endswith("— indica 2024, nessun trimestre"), text
    # The sentence that states the third quarter is not marked; asked about the year, neither.
    assert all("nessun trimestre" not in line for line in text.splitlines() if "6,9" in line)
    assert "nessun trimestre" not in answer(ctx, "Qual è stato il tasso di riammissione nel 2024?")
    # Every figure quoted of another period: the answer opens by saying so.
    year = context(passage(1, "wiki:wiki/readmissions.md", "In 2024 the rate was 5.9%.", 1))
    text = answer(year, "What was the 30-day readmission rate in Q3 2024?")
    assert text.startswith(ENGLISH.no_quarter_figure), text
    assert text.splitlines()[-1].endswith("— states 2024, no quarter"), text


def test_a_term_the_glossary_adds_is_held_only_by_a_unit_holding_most_of_its_words() -> None:
    # "utile netto" adds "net earnings": a row under "Retained earnings" holds "earnings" and
    # no "net", and every row of the equity statement came as the answer about net income.
    equity = (
        "|  | Three Months Ended April 1, 2023 | Three Months Ended March 26, 2022 |\n"
        "| --- | --- | --- |\n"
        "| Retained earnings/(Accumulated deficit): |  |  |\n"
        "| Beginning balances | 3,240 | 14,435 |\n"
        "| Net income | 24,160 | 25,010 |\n"
        "| Dividends and dividend equivalents declared | (3,684) | (3,633) |\n"
        "| Ending balances | 4,336 | 12,712 |"
    )
    question = "Qual è stato l'utile netto di Apple nel secondo trimestre 2023?"
    income = passage(2, AAPL, sec.AAPL_OPERATIONS, sec.AAPL_OPERATIONS_PAGE)
    ctx = dataclasses.replace(
        context(passage(1, AAPL, equity, 7), income), glossary=GLOSSARY.expand(question)
    )
    quoted = [q["text"] for q in quotes(answer(ctx, question))]
    assert any(q.startswith("Net income — Three Months Ended April 1, 2023") for q in quoted)
    for other in ("Beginning balances", "Dividends", "Net sales: Products"):
        assert not any(other in q for q in quoted), (other, quoted)


def test_a_sum_met_by_rounding_or_by_a_statement_s_arithmetic_names_no_rows() -> None:
    # "Share-based compensation | 0.18" is no sum of the diluted EPS (0.07) and an adjustment
    # (0.08): to a unit, 1, it was; to a unit of its last digit, 0.01, it is not.
    units = quotable_units(sec.INTC_NON_GAAP_RECONCILIATION)
    assert not any(u.startswith("Share-based compensation: ") for u in units), units
    assert any(
        u.startswith("Earnings (loss) per share attributable to Intel—diluted — ") for u in units
    )
    # "Long-term debt" is "Total debt" less its current portion: a total is no part of it.
    units = quotable_units(sec.MSFT_DEBT_TABLE)
    assert not any(u.startswith("Long-term debt: Total debt") for u in units), units
    # A roll-forward's ending balance adds the changes to its opening one: net income is no
    # part of a balance's name.
    equity = (
        "|  | Common Stock | Retained Earnings | Total |\n| --- | --- | --- | --- |\n"
        "| Balances, April 30, 2023 | 2 | 16,235 | 26,612 |\n"
        "| Net income | — | 6,188 | 6,188 |\n"
        "| Shares repurchased | — | (3,067) | (3,067) |\n"
        "| Balances, July 30, 2023 | 2 | 19,356 | 29,733 |"
    )
    units = quotable_units(equity)
    assert any(u.startswith("Net income — ") for u in units), units
    assert not any(u.startswith("Balances, July 30, 2023: ") for u in units), units


def test_a_row_repeating_figures_already_quoted_is_not_quoted_again() -> None:
    # A filing states its net income in the income statement, again in each equity statement
    # (one per period) and again in MD&A: the repeats took three of the thirteen quotes of
    # "the main contributors to net income", and revenue and tax were left out. A row whose
    # every figure a closer quote already gives says nothing new; a sentence repeating them
    # may say why, and is still quoted.
    statement = markdown_table(
        ["", "Three Months Ended April 1, 2023", "Three Months Ended March 26, 2022"],
        [
            ["Total net sales", "$94,836", "$97,278"],
            ["Net income", "$24,160", "$25,010"],
        ],
    )

    def equity(opening: str, income: str, closing: str) -> str:
        return (
            "|  | Common Stock | Retained Earnings | Total Shareholders' Equity |\n"
            "| --- | --- | --- | --- |\n"
            f"| Beginning balances | 64,849 | {opening} | 56,727 |\n"
            f"| Net income | — | {income} | {income} |\n"
            f"| Ending balances | 69,568 | {closing} | 62,158 |"
        )

    mdna = "Net income was $24,160 million in the second quarter of 2023."
    restated = markdown_table(
        ["", "Q2 2023", "Q2 2022"], [["Net income (loss)", "$24,160", "$25,010"]]
    )
    ctx = context(
        passage(1, AAPL, statement, 4),
        passage(2, AAPL, equity("3,240", "24,160", "4,336"), 6),
        passage(3, AAPL, restated, 7),
        passage(4, AAPL, mdna, 21),
    )
    quoted = [q["text"] for q in quotes(answer(ctx, "What was Apple's net income in Q2 2023?"))]
    rows = [q for q in quoted if q.startswith("Net income") and " — " in q]
    assert len(rows) == 1, quoted
    assert "Three Months Ended April 1, 2023: $24,160" in rows[0]
    assert mdna.rstrip(".") in " ".join(quoted), quoted


def test_a_row_named_as_a_quoted_row_is_not_quoted_again() -> None:
    # NVIDIA's MD&A gives "Other income (expense), net" in dollars, then again as a share of
    # revenue (a table whose title says so, lost to the row: "1.3" read as dollars), and its
    # equity statements "Net income" once more: the same measure in another table took the
    # quotes the rows that make net income (revenue, the tax) needed. The closer row stands
    # for its measure; rows of other names still come.
    dollars = markdown_table(
        ["", "Three Months Ended July 30, 2023", "Three Months Ended July 31, 2022"],
        [
            ["Revenue", "$13,507", "$6,704"],
            ["Other income (expense), net", "$181", "$(24)"],
            ["Net income", "$6,188", "$656"],
        ],
    )
    share = markdown_table(
        ["", "Three Months Ended July 30, 2023", "Three Months Ended July 31, 2022"],
        [
            ["Other income (expense), net", "1.3", "(0.4)"],
            ["Net income", "45.8", "9.8"],
        ],
    )
    ctx = context(passage(1, AAPL, dollars, 30), passage(2, AAPL, share, 31))
    quoted = [q["text"] for q in quotes(answer(ctx, "What was Apple's net income in Q2 2023?"))]
    named = [q for q in quoted if q.startswith("Net income — ")]
    assert len(named) == 1 and "$6,188" in named[0], quoted
    assert not any("1.3" in q for q in quoted), quoted


def test_notes_of_the_same_amount_are_each_quoted() -> None:
    # A debt note lists its notes by coupon and maturity, many of the same face amount: two
    # rows holding the same amounts are no repeat when their names tell them apart.
    notes = markdown_table(
        ["", "July 1, 2023", "December 31, 2022"],
        [
            ["1.550% Notes due 2024", "1,000", "1,000"],
            ["2.400% Notes due 2027", "1,000", "1,000"],
            ["3.900% Notes due 2032", "2,000", "2,000"],
            ["Total senior notes", "4,000", "4,000"],
        ],
    )
    # 1,000 + 1,000 is 2,000: the third note is no sum of the first two, all three are parts
    # of the total below them.
    units = quotable_units(notes)
    assert units[0].startswith("Senior notes: 1.550% Notes due 2024 — "), units
    assert units[1].startswith("Senior notes: 2.400% Notes due 2027 — "), units
    ctx = context(passage(1, AAPL, notes, 18))
    quoted = [q["text"] for q in quotes(answer(ctx, "What senior notes did Apple have?"))]
    for note in ("1.550% Notes due 2024", "2.400% Notes due 2027", "3.900% Notes due 2032"):
        assert any(note in q for q in quoted), (note, quoted)


def test_a_sentence_giving_a_figure_is_held_to_the_share_of_the_best_sentence() -> None:
    # A statement row is scored on its label and a few words per cell, a sentence on all its
    # words: a short row holding the asked words outscores any sentence several times over,
    # and a note's sentence giving figures of what is asked ("net losses of $329 million ...
    # from changes in currency exchange rates") fell under 0.3 of the row, though a sentence
    # beside it passed. When the best sentence passes the row's share, a sentence giving a
    # figure is measured against it; one without a figure, sharing a word by chance, still
    # against the row.
    table = markdown_table(
        ["", "Three Months Ended Sep 30, 2023", "Three Months Ended Oct 1, 2022"],
        [
            ["Net revenue", "$14,158", "$15,338"],
            ["Foreign currency exchange gains (losses)", "(12)", "45"],
            ["Net income (loss)", "$310", "$1,019"],
        ],
    )
    first = (
        "Currency exchange losses were $12 million in the third quarter of 2023, against "
        "gains of $45 million a year earlier."
    )
    hedges = (
        "For hedged investments still held at the reporting date, we recorded net losses of "
        "$329 million in the third quarter of 2023 from changes in currency exchange rates, "
        "offset by the related derivatives' results of $320 million recognized in interest and "
        "other."
    )
    risks = (
        "Our results of operations are subject to many risks described in the Risk Factors of "
        "our Annual Report, including those about the currency of our reporting."
    )
    ctx = context(passage(1, INTC, table, 30), passage(2, INTC, f"{first} {hedges} {risks}", 31))
    question = "In the latest 10-Q, what were Intel's foreign currency exchange gains?"
    quoted = " ".join(q["text"] for q in quotes(answer(ctx, question)))
    assert "Foreign currency exchange gains (losses) — " in quoted, quoted
    assert first.rstrip(".") in quoted, quoted
    assert hedges.rstrip(".") in quoted, quoted
    assert "Risk Factors" not in quoted, quoted


def test_an_adjective_in_ive_is_no_word_of_the_noun_it_comes_from() -> None:
    # The English stemmer makes "effective" and "effects" one stem ("effect"): asked about the
    # effects of currency fluctuations, the tax note's "Effective tax rate" row matched the
    # asked word and took a quote from the hedging sentences giving the effects. An adjective
    # (or its adverb) in -ive meets only itself: asked about the effective tax rate, the row
    # still answers.
    table = markdown_table(
        ["", "Three Months Ended Sep 30, 2023", "Three Months Ended Oct 1, 2022"],
        [
            ["Income (loss) before taxes", "$(52)", "$(188)"],
            ["Provision for (benefit from) taxes", "$(362)", "$(1,207)"],
            ["Effective tax rate", "696.2%", "642.0%"],
        ],
    )
    hedges = (
        "For hedged investments still held at the reporting date, we recorded net losses of "
        "$329 million in the third quarter of 2023 from changes in currency exchange rates."
    )
    ctx = context(
        passage(1, INTC, table, 30, language="english"),
        passage(2, INTC, hedges, 31, language="english"),
    )
    question = "What effects did currency fluctuations have on Intel's financial statements?"
    quoted = " ".join(q["text"] for q in quotes(answer(ctx, question)))
    assert "$329 million" in quoted, quoted
    assert "Effective tax rate" not in quoted, quoted
    asked = "What was Intel's effective tax rate in the latest quarter?"
    quoted = " ".join(q["text"] for q in quotes(answer(ctx, asked)))
    assert "Effective tax rate — Three Months Ended Sep 30, 2023: 696.2%" in quoted, quoted
