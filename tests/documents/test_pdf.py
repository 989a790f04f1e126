"""PDF extraction with pdfplumber (`thoth.documents.pdf`): tables with their header, every page.

The PDFs are generated here (text drawn at exact positions, rules as stroked paths), like the
hand-written ones of test_documents.py; the SEC 10-Q filings of ../shared/data are read in
place when present (the test is skipped, saying so, when they are not).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import skip_unless_ci
from tests.documents.test_documents import Line, Rule, build_pdf
from thoth.documents import chunk, extract

Text = Line  # x, y (from the bottom), text


def build(pages: Sequence[tuple[Sequence[Text], Sequence[Rule]]]) -> bytes:
    """A minimal PDF: Helvetica text at given positions and stroked rules, page by page."""
    return build_pdf([texts for texts, _ in pages], [rules for _, rules in pages])


def ruled_page() -> tuple[list[Text], list[Rule]]:
    """A title, a paragraph and a ruled 3x4 grid whose header has two lines in one cell."""
    texts: list[Text] = [
        (72, 740, "Bilancio sintetico"),
        (72, 712, "La tabella riassume i ricavi per area."),
    ]
    xs, ys = [72, 222, 322, 422], [690, 660, 640, 620, 600]
    rules: list[Rule] = [(x, ys[-1], x, ys[0]) for x in xs]
    rules += [(xs[0], y, xs[-1], y) for y in ys]
    texts += [(76, 675, "Area"), (226, 675, "Ricavi"), (326, 675, "Variazione")]
    texts += [(226, 664, "(milioni)")]  # second header line inside the same cell
    rows = [("Italia", "1.234", "3,5%"), ("Francia", "567", "-1,2%"), ("Germania", "89", "0,4%")]
    for (area, ricavi, var), y in zip(rows, (646, 626, 606), strict=True):
        texts += [(76, y, area), (226, y, ricavi), (326, y, var)]
    texts.append((72, 560, "Testo sotto la tabella."))
    return texts, rules


def borderless_page() -> tuple[list[Text], list[Rule]]:
    """A financial statement: a period header over two date columns, `$` apart from figures."""
    texts: list[Text] = [
        (72, 740, "CONDENSED STATEMENTS OF OPERATIONS (In millions)"),
        (330, 712, "Three Months Ended"),
        (310, 700, "July 1, 2023"), (400, 700, "June 25, 2022"),
        (72, 686, "Net sales:"),
        (80, 672, "Products"), (300, 672, "$"), (330, 672, "53,489"), (400, 672, "$"), (430, 672, "57,267"),
        (80, 658, "Services"), (330, 658, "21,213"), (430, 658, "19,604"),
        (72, 644, "Total net sales"), (330, 644, "74,702"), (430, 644, "76,871"),
        (72, 610, "See accompanying Notes to the financial statements."),
    ]  # fmt: skip
    return texts, []


@pytest.fixture()
def report(tmp_path: Path) -> Path:
    path = tmp_path / "bilancio.pdf"
    pages: list[tuple[list[Text], list[Rule]]] = [
        ruled_page(),
        borderless_page(),
        ([], []),  # a scanned page: no text layer
        ([(72, 740, "Ultima pagina, senza tabelle.")], []),
    ]
    path.write_bytes(build(pages))
    return path


def test_ruled_and_borderless_tables_keep_header_rows_and_pages(report: Path) -> None:
    doc = extract(report)
    assert doc.page_count == 4 and doc.empty_pages == (3,)
    assert doc.notes == ("page 3 has no text layer (a scanned image?): run OCR",)
    assert {b.page for b in doc.blocks} == {1, 2, 4}, "no page with text is dropped"
    tables = [b for b in doc.blocks if b.kind == "table"]
    assert [t.page for t in tables] == [1, 2]
    ruled, aligned = tables
    assert ruled.header == ("Area", "Ricavi (milioni)", "Variazione")
    assert ruled.rows == (
        ("Italia", "1.234", "3,5%"),
        ("Francia", "567", "-1,2%"),
        ("Germania", "89", "0,4%"),
    )
    assert aligned.header == (
        "",
        "Three Months Ended July 1, 2023",
        "Three Months Ended June 25, 2022",
    )
    assert aligned.rows == (
        ("Net sales:", "", ""),
        ("Products", "$53,489", "$57,267"),
        ("Services", "21,213", "19,604"),
        ("Total net sales", "74,702", "76,871"),
    )
    # Reading order on each page: text above the table, the table, text below.
    page1 = [(b.kind, b.text.split("\n")[0]) for b in doc.blocks if b.page == 1]
    assert page1[0] == ("paragraph", "Bilancio sintetico")
    assert [kind for kind, _ in page1] == ["paragraph", "paragraph", "table", "paragraph"]
    assert page1[-1][1] == "Testo sotto la tabella."
    page2 = [b for b in doc.blocks if b.page == 2]
    assert page2[0].text.startswith("CONDENSED STATEMENTS")
    assert page2[-1].text == "See accompanying Notes to the financial statements."


def test_table_chunks_carry_the_header_with_every_row(report: Path) -> None:
    chunks = chunk(extract(report), "blocks")
    table_chunks = [c for c in chunks if c.kind == "table" and "53,489" in c.text]
    assert len(table_chunks) == 1 and table_chunks[0].page == 2
    text = table_chunks[0].text
    assert "| Products | $53,489 | $57,267 |" in text
    assert text.index("Three Months Ended July 1, 2023") < text.index("Products")


def _width(text: str) -> float:
    """Width of `text` in Helvetica 10 pt, as the PDF viewer (and pdfplumber) sets it."""
    from pdfminer.fontmetrics import FONT_METRICS

    widths = FONT_METRICS["Helvetica"][1]
    return sum(widths.get(c, 556) for c in text) / 100


def _centred(centre: float, y: float, text: str) -> Text:
    return (centre - _width(text) / 2, y, text)


_SEGMENTS = {
    "en": ("Three Months Ended", "December 31,", "December 25,", "Change", "49,278", "51,496"),
    "it": ("Trimestre chiuso al", "31 dicembre", "25 dicembre", "Variazione", "49.278", "51.496"),
}


@pytest.mark.parametrize("pitch", [80.0, 95.0, 110.0])
@pytest.mark.parametrize("over", ["three columns", "two date columns"])
@pytest.mark.parametrize("language", ["en", "it"])
def test_a_lone_period_phrase_over_date_columns_heads_each_date_not_the_change(
    tmp_path: Path, pitch: float, over: str, language: str
) -> None:
    # AAPL's segment table: "Three Months Ended" on a line of its own, centred over the two
    # date columns or (with its rule) over the whole table, "Change" included; each date
    # column takes the period, the change column does not (a period needs a date to end it).
    # Two date columns `pitch` wide, a narrower change column (as AAPL sets them).
    rights = [380.0, 380.0 + pitch, 380.0 + 1.8 * pitch]  # right edges of the figures
    lefts = [rights[0] - pitch + 20, rights[0] + 20, rights[1] + 20]  # a column's `$`
    centres = [(a + b) / 2 for a, b in zip(lefts, rights, strict=True)]
    span = (lefts[0] + rights[2]) / 2 if over == "three columns" else (lefts[0] + rights[1]) / 2
    period, first, second, change, americas, americas_before = _SEGMENTS[language]
    texts: list[Text] = [
        (72, 740, "The following table shows net sales by reportable segment."),
        _centred(span, 712, period),
        _centred(centres[0], 700, first),
        _centred(centres[1], 700, second),
        _centred(centres[0], 690, "2022"),
        _centred(centres[1], 690, "2021"),
        _centred(centres[2], 690, change),
        (72, 676, "Net sales by reportable segment:"),
    ]
    rows = [("Americas", americas, americas_before, "(4)%"), ("Europe", "27,681", "29,749", "(7)%")]
    for n, (label, *figures) in enumerate(rows):
        y = 662 - 14 * n
        texts.append((80, y, label))
        for col, figure in enumerate(figures):
            texts.append((rights[col] - _width(figure), y, figure))
            if n == 0 and col < 2:
                texts.append((lefts[col], y, "$"))
    texts.append((72, 600, "Americas net sales decreased during the quarter."))
    path = tmp_path / "segments.pdf"
    path.write_bytes(build([(texts, [])]))
    [table] = [b for b in extract(path).blocks if b.kind == "table"]
    assert table.header == (
        "",
        f"{period} {first} 2022",
        f"{period} {second} 2021",
        change,
    )
    assert table.rows[1] == ("Americas", f"${americas}", f"${americas_before}", "(4)%")


# THOTH_SEC10Q overrides the place (a worktree does not sit beside shared/).
SEC = (
    Path(
        os.environ.get(
            "THOTH_SEC10Q", Path(__file__).resolve().parents[2] / ".." / "shared/data/sec10q"
        )
    )
    / "docs"
)


def test_sec_filing_page_one_is_kept_and_statements_keep_their_header() -> None:
    if not (SEC / "2023 Q2 AAPL.pdf").is_file():
        skip_unless_ci(
            f"the SEC 10-Q filings are not at {SEC} (the project's shared data, beside the "
            "checkout; THOTH_SEC10Q=<dir> points elsewhere)",
            "CI has them beside the clone, so this test must run",
        )
    # The old extractor (pypdf layout mode) found no text on page 1 and reported it "scanned".
    doc = extract(SEC / "2023 Q2 AAPL.pdf")
    assert doc.empty_pages == ()
    assert any(b.page == 1 and "QUARTERLY REPORT" in b.text for b in doc.blocks)
    income = next(b for b in doc.blocks if b.kind == "table" and b.page == 4)
    assert income.header[1] == "Three Months Ended April 1, 2023"
    assert ("Products", "$73,929", "$77,457", "$170,317", "$181,886") in income.rows


# -- a running header over a table -------------------------------------------------------------

_RUNNING = {
    # running header lines (centred over the figures, as MSFT sets "PART I" / "Item 1"), the
    # period, the two dates, the text of the pages (different on each: repeated, it would be
    # furniture itself)
    "en": (
        ("PART I", "Item 1"),
        "Three Months Ended",
        ("July 1, 2023", "June 25, 2022"),
        (
            "Net sales are discussed below.",
            "Costs fell in Europe.",
            "Japan grew fastest.",
            "Services grew.",
        ),
    ),
    "it": (
        ("PARTE I", "Voce 1"),
        "Trimestre chiuso al",
        ("1 luglio 2023", "25 giugno 2022"),
        (
            "I ricavi sono commentati sotto.",
            "I costi calano in Europa.",
            "Il Giappone cresce.",
            "I servizi crescono.",
        ),
    ),
}


def _running_pages(language: str, header_on: Sequence[int], tables_on: Sequence[int]) -> bytes:
    """Five pages, numbered at the foot; the running header at the top of the pages
    `header_on`; on the pages `tables_on` a table of figures at the top, right under the
    running header (within a line of it, as the header lines of a table sit), on the others a
    sentence (different on each: repeated, it would be furniture itself)."""
    running, period, (first, second), prose = _RUNNING[language]
    centre = 385.0  # the middle of the two columns of figures (300-470)
    header = [_centred(centre, 770 - 12 * n, text) for n, text in enumerate(running)]
    table: list[Text] = [
        _centred(centre, 740, period),
        _centred(342, 728, first),
        _centred(442, 728, second),
        (80, 714, "Products"), (300, 714, "$"), (330, 714, "53,489"), (400, 714, "$"), (430, 714, "57,267"),
        (80, 700, "Services"), (330, 700, "21,213"), (430, 700, "19,604"),
        (72, 686, "Total net sales"), (330, 686, "74,702"), (430, 686, "76,871"),
    ]  # fmt: skip
    pages: list[tuple[list[Text], list[Rule]]] = []
    text = iter(prose)
    for number in range(1, 6):
        texts = table if number in tables_on else [(72, 700, next(text))]
        top = header if number in header_on else []
        pages.append(([*top, *texts, (300, 40, str(number))], []))
    return build(pages)


@pytest.mark.parametrize("language", ["en", "it"])
def test_a_running_header_over_a_table_heads_no_column(tmp_path: Path, language: str) -> None:
    # MSFT p13: "PART I" and "Item 1", at the top of every page, sat right above a table and
    # were read as header lines of its columns ("PART I Item 1 Three Months Ended ...").
    running, period, (first, second), _ = _RUNNING[language]
    path = tmp_path / "running.pdf"
    path.write_bytes(_running_pages(language, header_on=range(1, 6), tables_on=[2]))
    doc = extract(path)
    [table] = [b for b in doc.blocks if b.kind == "table"]
    assert table.header == ("", f"{period} {first}", f"{period} {second}")
    assert ("Products", "$53,489", "$57,267") in table.rows
    # Page furniture on every page, the table's page included: not in the indexed text.
    assert not any(text in doc.text for text in running)
    assert doc.furniture_lines == 5 * 3  # two header lines and the page number, five pages


@pytest.mark.parametrize("language", ["en", "it"])
def test_the_same_words_printed_once_over_a_table_still_head_its_columns(
    tmp_path: Path, language: str
) -> None:
    running, period, (first, second), _ = _RUNNING[language]
    path = tmp_path / "once.pdf"
    # The running header printed on the table's page only: the same words once, over the
    # columns, are a line of the table's header, as any other.
    path.write_bytes(_running_pages(language, header_on=[2], tables_on=[2]))
    doc = extract(path)
    [table] = [b for b in doc.blocks if b.kind == "table"]
    above = " ".join(running)
    assert table.header == ("", f"{above} {period} {first}", f"{above} {period} {second}")
    assert doc.furniture_lines == 5  # the page numbers only


@pytest.mark.parametrize("language", ["en", "it"])
def test_a_statement_header_repeated_over_its_tables_is_not_furniture(
    tmp_path: Path, language: str
) -> None:
    # A statement's column header repeats at the same place on each of its pages, always over
    # its table: that is the tables' header, not page furniture.
    _, period, (first, second), _ = _RUNNING[language]
    path = tmp_path / "statements.pdf"
    path.write_bytes(_running_pages(language, header_on=[], tables_on=[2, 3, 4]))
    doc = extract(path)
    tables = [b for b in doc.blocks if b.kind == "table"]
    assert [t.page for t in tables] == [2, 3, 4]
    assert {t.header for t in tables} == {("", f"{period} {first}", f"{period} {second}")}
    assert doc.furniture_lines == 5


# -- a period centred over its quarters and their changes --------------------------------------

_GROUPS = {
    "en": (("Three Months Ended", "Six Months Ended"), ("July 30,", "July 31,"), "Change"),
    "it": (("Trimestre chiuso al", "Semestre chiuso al"), ("30 luglio", "31 luglio"), "Var."),
}


@pytest.mark.parametrize("language", ["en", "it"])
def test_a_period_off_the_centre_of_its_quarters_heads_its_dated_columns(
    tmp_path: Path, language: str
) -> None:
    # NVDA's results tables: each period is centred over its two quarters and their "$ Change"
    # and "% Change" (a `$` flush left in its cell, the figure right-aligned, the `%` after
    # it), so it sits off the centre of its quarters: it heads the dated columns under it,
    # not the ones it happens to overlap ("July 31, 2022" and "$ Change" before). In Italian,
    # "30 luglio   31 luglio" was also read as a row of figures with a unit ("luglio").
    (quarter, half), (first, second), change = _GROUPS[language]
    rows = [
        ("Compute & Networking", ["10,402", "3,907", "6,495", "166", "14,862", "7,579", "7,283", "96"]),
        ("Graphics", ["3,105", "2,797", "308", "11", "5,837", "7,413", "(1,576)", "(21)"]),
    ]  # fmt: skip
    texts: list[Text] = [(18, 740, "Revenue by Reportable Segments")]
    for n, (period, shift) in enumerate(((quarter, 0.0), (half, 228.0))):
        money = [(143.0 + shift, 189.0 + shift), (199.0 + shift, 244.0 + shift)]
        money.append((254.0 + shift, 299.0 + shift))
        percent_end = 364.0 + shift  # the `%` after the figure, as NVDA sets it
        texts.append(_centred((money[0][0] + percent_end) / 2, 712, period))
        heads = [(first, "2023"), (second, "2022"), ("$", change)]
        for (top, bottom), (a, b) in zip(heads, money, strict=True):
            texts += [_centred((a + b) / 2, 700, top), _centred((a + b) / 2, 690, bottom)]
        texts += [_centred(337.0 + shift, 700, "%"), _centred(337.0 + shift, 690, change)]
        for r, (label, figures) in enumerate(rows):
            y = 674 - 12 * r
            if n == 0:
                texts.append((18, y, label))
            for (a, b), figure in zip(money, figures[4 * n : 4 * n + 3], strict=True):
                texts.append((b - _width(figure), y, figure))
                if r == 0:
                    texts.append((a, y, "$"))
            pct = figures[4 * n + 3]
            texts += [(percent_end - 10 - _width(pct), y, pct), (percent_end - 8, y, "%")]
    path = tmp_path / "segments.pdf"
    path.write_bytes(build([(texts, [])]))
    [table] = [b for b in extract(path).blocks if b.kind == "table"]
    assert table.header == (
        "",
        f"{quarter} {first} 2023",
        f"{quarter} {second} 2022",
        f"$ {change}",
        f"% {change}",
        f"{half} {first} 2023",
        f"{half} {second} 2022",
        f"$ {change}",
        f"% {change}",
    )
    assert table.rows[0][:3] == ("Compute & Networking", "$10,402", "$3,907")
