"""Aligned tables on real filing pages (`thoth.documents.pdf`): rows of figures keep their
header, and a table is refused rather than given a wrong one.

The pages are cut out of the SEC 10-Q filings of ../shared/data (read in place, skipped saying
so when absent) into a small PDF, so a test reads a few real pages, not a whole filing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pypdf import PdfReader, PdfWriter

from tests.conftest import skip_unless_ci
from tests.documents.test_pdf import SEC
from thoth.documents import Block, Document, chunk, extract


def filing_pages(tmp_path: Path, name: str, numbers: Sequence[int]) -> Document:
    """Pages `numbers` (from 1) of the filing `name`, extracted as one document."""
    source = SEC / f"{name}.pdf"
    if not source.is_file():
        skip_unless_ci(
            f"the SEC 10-Q filings are not at {SEC} (THOTH_SEC10Q=<dir> points elsewhere)",
            "CI has them beside the clone, so this test must run",
        )
    reader, writer = PdfReader(source), PdfWriter()
    for number in numbers:
        writer.add_page(reader.pages[number - 1])
    path = tmp_path / f"{name} p{'-'.join(map(str, numbers))}.pdf"
    with path.open("wb") as out:
        writer.write(out)
    return extract(path)


def table_with(doc: Document, label: str) -> Block:
    return next(b for b in doc.blocks if b.kind == "table" and any(r[0] == label for r in b.rows))


def test_msft_statement_whose_period_and_years_share_a_line_is_a_table(tmp_path: Path) -> None:
    # MSFT sets "Three Months Ended September 30,   2023   2022" on one line: the period is on
    # the label side, the years over the figures. Its statements used to stay text.
    doc = filing_pages(tmp_path, "2023 Q3 MSFT", [3])
    income = table_with(doc, "Total revenue")
    assert income.header == (
        "",
        "Three Months Ended September 30, 2023",
        "Three Months Ended September 30, 2022",
    )
    assert ("Product", "$15,535", "$15,741") in income.rows
    assert ("Net income", "$22,291", "$17,556") in income.rows
    assert ("Revenue:", "", "") in income.rows  # a section line, kept as a row
    [part] = [c for c in chunk(doc, "blocks") if "| Net income | $22,291 |" in c.text]
    assert part.text.index("Three Months Ended September 30, 2023") < part.text.index("Net income")
