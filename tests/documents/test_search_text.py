"""A fragment's search text (what the embedder and BM25 see) against its read text (what the
model reads): the title and heading path in front, tables as plain rows, never the caveats."""

from __future__ import annotations

from pathlib import Path

from thoth.documents.chunk import chunk_blocks
from thoth.documents.extract import Block, Document
from thoth.documents.records import (
    RECORD_DOCUMENT,
    SEARCH_PREFIX_MAX_CHARS,
    KnowledgeFragment,
    reading_text,
    search_text,
)
from thoth.markup import markdown_table, plain_rows

HEADER = ("Segment", "2024 (USD m)", "2023 (USD m)")
ROWS = (("Cloud", "1,200", "950"), ("Devices", "300", "410"), ("A | B", "", "7"))


def fragment(
    text: str,
    *,
    title: str = "Quarterly report Q3 2024",
    heading_path: tuple[str, ...] = ("Results", "Revenue by segment"),
    chunk_kind: str = "text",
    caveats: tuple[str, ...] = (),
) -> KnowledgeFragment:
    return KnowledgeFragment(
        record_kind=RECORD_DOCUMENT,
        doc_id="docs:q3.md",
        source="docs",
        path="q3.md",
        title=title,
        channel="finance",
        labels=("internal",),
        ordinal=0,
        text=text,
        caveats=caveats,
        heading_path=heading_path,
        chunk_kind=chunk_kind,
    )


def test_the_search_text_starts_with_the_title_and_the_heading_path() -> None:
    f = fragment("Revenue grew in every segment but devices.")
    assert search_text(f) == (
        "Quarterly report Q3 2024 > Results > Revenue by segment\n"
        "Revenue grew in every segment but devices."
    )


def test_the_read_text_is_the_fragment_and_its_caveats_only() -> None:
    f = fragment("Revenue grew in every segment.", caveats=("Q3 figures are unaudited.",))
    assert reading_text(f) == "Revenue grew in every segment.\n[Caveat] Q3 figures are unaudited."
    assert "Quarterly report" not in reading_text(f)
    assert "unaudited" not in search_text(f)


def test_a_heading_already_opening_the_chunk_or_equal_to_the_title_is_not_repeated() -> None:
    f = fragment(
        "## Revenue by segment\n\nRevenue grew in every segment.",
        heading_path=("Quarterly report Q3 2024", "Revenue by segment"),
    )
    assert search_text(f) == (
        "Quarterly report Q3 2024\n## Revenue by segment\n\nRevenue grew in every segment."
    )


def test_no_title_and_no_heading_leave_the_text_alone() -> None:
    f = fragment("Just a paragraph.", title="", heading_path=())
    assert search_text(f) == "Just a paragraph."


def test_a_long_context_keeps_the_title_and_the_innermost_headings_within_the_cap() -> None:
    headings = tuple(f"Section {i} " + "x" * 40 for i in range(6))
    f = fragment("Body.", heading_path=headings)
    prefix = search_text(f).split("\n")[0]
    assert len(prefix) <= SEARCH_PREFIX_MAX_CHARS
    assert prefix.startswith("Quarterly report Q3 2024 > ")
    assert prefix.endswith(headings[-1])
    assert headings[0] not in prefix
    very_long_title = fragment("Body.", title="T" * 500, heading_path=())
    assert len(search_text(very_long_title).split("\n")[0]) <= SEARCH_PREFIX_MAX_CHARS


def test_a_table_chunk_is_searched_as_plain_rows_under_its_header_line() -> None:
    table = markdown_table(HEADER, ROWS)
    text = f"Revenue by segment was as follows:\n\n{table}\n\nDevices fell."
    f = fragment(text, chunk_kind="table")
    searched = search_text(f)
    assert searched == (
        "Quarterly report Q3 2024 > Results > Revenue by segment\n"
        "Revenue by segment was as follows:\n\n"
        "Segment 2024 (USD m) 2023 (USD m)\n"
        "Cloud 1,200 950\n"
        "Devices 300 410\n"
        "A | B 7\n\n"
        "Devices fell."
    )
    assert "---" not in searched
    assert reading_text(f) == text  # the model still reads the Markdown table


def test_plain_rows_leave_text_without_a_table_unchanged() -> None:
    text = "A line with a | pipe that is no table.\n\n- a list\n- item"
    assert plain_rows(text) == text


def test_a_product_table_chunk_costs_fewer_characters_to_search_than_to_read() -> None:
    rows = tuple((f"Line item {i}", f"{i * 1013:,}", f"{i * 977:,}") for i in range(40))
    table = Block("table", markdown_table(HEADER, rows), header=HEADER, rows=rows)
    document = Document(path=Path("t.md"), format="markdown", title="", blocks=(table,))
    chunks = chunk_blocks(document)
    assert len(chunks) == 1 and chunks[0].kind == "table"
    f = fragment(chunks[0].text, title="", heading_path=(), chunk_kind="table")
    assert len(search_text(f)) < 0.8 * len(chunks[0].text)
    assert search_text(f).split("\n")[0] == "Segment 2024 (USD m) 2023 (USD m)"
