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
