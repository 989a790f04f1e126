"""PDF structure (`thoth.documents.pdf`): headings from font size and weight into the heading
path, page furniture found across pages and removed, the title, pages without a text layer.

The PDFs are written by hand here (Helvetica in three faces at chosen sizes and positions), as
in test_documents.py; the SEC 10-Q filings of ../shared/data are read in place when present.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import skip_unless_ci
from tests.documents.test_pdf import SEC
from thoth.documents import Document, chunk, extract

# x, y (from the bottom), text, size, face ("R" regular, "B" bold, "I" italic)
Run = tuple[float, float, str, float, str]
_FACES = {"R": b"F1", "B": b"F2", "I": b"F3"}


def _escape(text: str) -> bytes:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("cp1252")


def styled_pdf(pages: Sequence[Sequence[Run]]) -> bytes:
    """A minimal PDF whose text runs each have their own size and face."""
    fonts = b" ".join(
        b"/%s << /Type /Font /Subtype /Type1 /BaseFont /%s /Encoding /WinAnsiEncoding >>"
        % (ref, name)
        for ref, name in (
            (b"F1", b"Helvetica"),
            (b"F2", b"Helvetica-Bold"),
            (b"F3", b"Helvetica-Oblique"),
        )
    )
    bodies: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(len(pages)))
        + b"] /Count %d >>" % len(pages),
    ]
    for i, runs in enumerate(pages):
        stream = b"".join(
            b"BT /%s %.1f Tf %.1f %.1f Td (" % (_FACES[face], size, x, y)
            + _escape(text)
            + b") Tj ET\n"
            for x, y, text, size, face in runs
        )
        bodies.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << " + fonts + b" >> >> /Contents %d 0 R >>" % (4 + 2 * i)
        )
        bodies.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets: list[int] = []
    for number, body in enumerate(bodies, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(bodies) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(bodies) + 1,
        xref,
    )
    return bytes(out)


def body(lines: Sequence[str], top: float) -> list[Run]:
    return [(72, top - 12 * i, line, 10, "R") for i, line in enumerate(lines)]


def cell(x: float, y: float, text: str) -> Run:
    return (x, y, text, 10, "R")


def footer(page: int, y: float = 40) -> list[Run]:
    """A running footer and a page number, as EDGAR filings print them."""
    return [
        (200, y, f"Acme Corp. | Q3 2023 Form 10-Q | {page}", 8, "R"),
        (300, 20, str(page), 8, "R"),
    ]


def report_pages() -> list[list[Run]]:
    """Five pages: a cover with the company name in 20 pt, then Part/Item/section headings in
    bold at the body size (numbered ones first), an italic subsection, a two-row table header,
    a running header and footer on every page, and a page with no text layer."""
    cover: list[Run] = [
        (220, 700, "FORM 10-Q", 14, "B"),
        (200, 640, "ACME CORPORATION", 20, "B"),
        *body(["For the quarterly period ended September 30, 2023."], 600),
    ]
    page2: list[Run] = [
        (72, 760, "ACME CORPORATION QUARTERLY REPORT", 8, "R"),
        (72, 720, "PART I — FINANCIAL INFORMATION", 10, "B"),
        (72, 700, "Item 2.", 10, "B"),
        (130, 700, "Management's Discussion and Analysis", 10, "B"),
        *body(["The discussion below covers the third quarter of 2023 and its results."], 680),
        (72, 650, "Segment Operating Performance", 10, "B"),
        *body(["Net sales by segment are shown in the table below, in millions."], 630),
        (330, 600, "Three Months Ended", 10, "R"),
        cell(310, 588, "July 1, 2023"),
        cell(400, 588, "June 25, 2022"),
        cell(72, 574, "Online stores (1)"),
        cell(300, 574, "$"),
        cell(330, 574, "53,489"),
        cell(400, 574, "$"),
        cell(430, 574, "57,267"),
        cell(72, 560, "Physical stores"),
        cell(330, 560, "4,721"),
        cell(430, 560, "5,024"),
        cell(72, 546, "Total net sales"),
        cell(330, 546, "58,210"),
        cell(430, 546, "62,291"),
        (72, 510, "Americas", 10, "I"),
        *body(["Americas net sales decreased during the quarter.", "Europe was flat."], 490),
        *footer(1),
    ]
    page3: list[Run] = [
        (72, 760, "ACME CORPORATION QUARTERLY REPORT", 8, "R"),
        (72, 720, "Item 3.", 10, "B"),
        (130, 720, "Quantitative and Qualitative Disclosures", 10, "B"),
        *body(
            ["Acme Corp. | Q3 2023 Form 10-Q | 2 is quoted here in the text, not a footer."], 700
        ),
        *footer(2),
    ]
    page5: list[Run] = [
        (72, 760, "ACME CORPORATION QUARTERLY REPORT", 8, "R"),
        *body(["Exhibits are filed with this report."], 700),
        *footer(3),
    ]
    return [cover, page2, page3, [], page5]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Document:
    path = tmp_path_factory.mktemp("pdf") / "acme-10q.pdf"
    path.write_bytes(styled_pdf(report_pages()))
    return extract(path)


def test_headings_from_size_and_weight_make_the_heading_path(report: Document) -> None:
    levels = {b.text: b.level or 0 for b in report.blocks if b.kind == "heading"}
    # Larger first; at one size bold before italic; a numbered series before the unnumbered.
    assert (
        levels["ACME CORPORATION"] < levels["FORM 10-Q"] < levels["PART I — FINANCIAL INFORMATION"]
    )
    assert (
        levels["PART I — FINANCIAL INFORMATION"]
        < levels["Item 2. Management's Discussion and Analysis"]
    )
    assert (
        levels["Item 2. Management's Discussion and Analysis"]
        < levels["Segment Operating Performance"]
    )
    assert levels["Segment Operating Performance"] < levels["Americas"]
    paragraph = next(b for b in report.blocks if b.text.startswith("Americas net sales"))
    assert paragraph.heading_path == (
        "ACME CORPORATION",
        "PART I — FINANCIAL INFORMATION",
        "Item 2. Management's Discussion and Analysis",
        "Segment Operating Performance",
        "Americas",
    )
    chunks = chunk(report, "blocks")
    assert all(c.heading_path for c in chunks if c.page != 1)
    item3 = next(b for b in report.blocks if b.text.startswith("Item 3."))
    assert item3.heading_path[-2:] == ("PART I — FINANCIAL INFORMATION", item3.text)


def test_title_is_the_top_heading_of_the_first_page(report: Document) -> None:
    assert report.title == "ACME CORPORATION"


def test_running_header_footer_and_page_numbers_are_removed(report: Document) -> None:
    text = report.text
    assert "QUARTERLY REPORT" not in text
    assert "| 1" not in text and "| 3" not in text
    assert not any(b.text.strip().isdigit() for b in report.blocks)
    # The same words inside the text, away from the page's edges, stay.
    assert "Acme Corp. | Q3 2023 Form 10-Q | 2 is quoted here in the text" in text
    assert report.furniture_lines == 3 * 3  # header, footer and page number on three pages


def test_table_rows_keep_their_two_row_header_and_the_page_without_text_layer_is_named(
    report: Document,
) -> None:
    table = next(b for b in report.blocks if b.kind == "table")
    assert table.header == (
        "",
        "Three Months Ended July 1, 2023",
        "Three Months Ended June 25, 2022",
    )
    assert ("Online stores (1)", "$53,489", "$57,267") in table.rows
    assert table.heading_path[-1] == "Segment Operating Performance"
    assert report.empty_pages == (4,)
    assert report.notes == ("page 4 has no text layer (a scanned image?): run OCR",)


def test_a_page_with_only_its_footer_is_not_called_scanned(tmp_path: Path) -> None:
    texts = ["The report opens here.", "Sales grew in Japan.", "Costs fell in the year."]
    pages = [[*body([text], 700), *footer(n)] for n, text in enumerate(texts, start=1)]
    pages.insert(2, footer(9))
    path = tmp_path / "r.pdf"
    path.write_bytes(styled_pdf(pages))
    doc = extract(path)
    assert doc.empty_pages == ()
    assert doc.notes == ("page 3 has no text but its running header or footer",)


# -- the SEC 10-Q filings ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def apple() -> Document:
    if not (SEC / "2023 Q2 AAPL.pdf").is_file():
        skip_unless_ci(
            f"the SEC 10-Q filings are not at {SEC} (THOTH_SEC10Q=<dir> points elsewhere)",
            "CI has them beside the clone, so this test must run",
        )
    return extract(SEC / "2023 Q2 AAPL.pdf")


def test_filing_page_one_text_title_and_no_furniture(apple: Document) -> None:
    assert apple.empty_pages == ()
    # Its only notes are two runs of figures whose column headers cannot be placed.
    assert [n.split(":")[0] for n in apple.notes] == ["page 11", "page 15"], apple.notes
    assert any(b.page == 1 and "QUARTERLY REPORT PURSUANT" in b.text for b in apple.blocks)
    assert apple.title == "Apple Inc."  # not the accession number of the PDF metadata
    assert "Form 10-Q |" not in apple.text  # "Apple Inc. | Q2 2023 Form 10-Q | 17"
    assert apple.furniture_lines >= 22


def test_filing_segment_table_keeps_its_header_period_and_heading_path(apple: Document) -> None:
    table = next(
        b for b in apple.blocks if b.kind == "table" and any(r[0] == "Americas" for r in b.rows)
    )
    row = next(r for r in table.rows if r[0] == "Americas")
    assert (
        dict(zip(table.header, row, strict=True))["Three Months Ended April 1, 2023"] == "$37,784"
    )
    assert table.heading_path[1:] == (
        "PART I — FINANCIAL INFORMATION",
        "Item 2. Management’s Discussion and Analysis of Financial Condition and Results of "
        "Operations",
        "Segment Operating Performance",
    )
    chunks = chunk(apple, "blocks")
    assert all(c.heading_path for c in chunks)
    [part] = [c for c in chunks if "| Americas | $37,784 |" in c.text]
    assert part.text.index("Three Months Ended April 1, 2023") < part.text.index("Americas")


# -- a filing printed in one font -------------------------------------------------------------


def test_numbered_capitals_in_the_body_font_are_headings_above_their_subheadings(
    tmp_path: Path,
) -> None:
    """A filing re-printed in one font sets its notes' titles ("NOTE 6 — INVENTORIES") like its
    text: known by their form, they open a section, ranked above the styled subheadings."""
    page: list[Run] = [
        (72, 740, "ITEM 1. FINANCIAL STATEMENTS", 12, "R"),
        (72, 716, "Fair Values of Derivative Instruments", 10, "I"),
        *body(["Gains on derivative instruments were as follows this quarter."], 700),
        (72, 670, "NOTE 6 — INVENTORIES", 10, "R"),
        *body(["The components of inventories were as follows, in millions."], 654),
        (72, 624, "NOTE 7 — GOODWILL", 10, "R"),
        (72, 604, "Changes in Goodwill", 10, "I"),
        *body(["Changes in the carrying amount of goodwill were as follows."], 588),
        *body(["NOTE 8 — the word NOTE starts this ordinary sentence of the text."], 560),
    ]
    path = tmp_path / "one-font.pdf"
    path.write_bytes(styled_pdf([page]))
    doc = extract(path)
    levels = {b.text: b.level or 0 for b in doc.blocks if b.kind == "heading"}
    assert set(levels) == {
        "ITEM 1. FINANCIAL STATEMENTS",
        "Fair Values of Derivative Instruments",
        "NOTE 6 — INVENTORIES",
        "NOTE 7 — GOODWILL",
        "Changes in Goodwill",
    }
    inventories = next(b for b in doc.blocks if b.text.startswith("The components"))
    assert inventories.heading_path == ("ITEM 1. FINANCIAL STATEMENTS", "NOTE 6 — INVENTORIES")
    goodwill = next(b for b in doc.blocks if b.text.startswith("Changes in the carrying"))
    assert goodwill.heading_path == (
        "ITEM 1. FINANCIAL STATEMENTS",
        "NOTE 7 — GOODWILL",
        "Changes in Goodwill",
    )


def test_filing_in_one_font_keeps_its_notes_apart() -> None:
    """Microsoft's 10-Q sets every word in one font: its inventories note was read into the
    derivatives section ("Fair Values of Derivative Instruments"), its tax subsections under no
    note."""
    if not (SEC / "2023 Q3 MSFT.pdf").is_file():
        skip_unless_ci(
            f"the SEC 10-Q filings are not at {SEC} (THOTH_SEC10Q=<dir> points elsewhere)",
            "CI has them beside the clone, so this test must run",
        )
    msft = extract(SEC / "2023 Q3 MSFT.pdf")
    notes = [b.text for b in msft.blocks if b.kind == "heading" and b.text.startswith("NOTE ")]
    assert len(notes) == 17 and notes[5] == "NOTE 6 — INVENTORIES"
    [table] = [
        b for b in msft.blocks if b.kind == "table" and ("Raw materials", "$520", "$709") in b.rows
    ]
    assert table.heading_path[-2:] == ("ITEM 1. FINANCIAL STATEMENTS", "NOTE 6 — INVENTORIES")
    tax = next(b for b in msft.blocks if b.kind == "heading" and b.text == "Effective Tax Rate")
    assert tax.heading_path[-2:] == ("NOTE 10 — INCOME TAXES", "Effective Tax Rate")
