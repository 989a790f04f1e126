"""Where a document carries a secret: the secret scanner (thoth.secrets) run on every text of a
file that may be indexed, each finding named by its place.

A file is read as written and as extracted, so that markup cannot hide a secret:

- the raw text of a text format (Markdown, plain text, CSV, HTML), line by line as an editor
  numbers it, each line also with its markup reduced to words (emphasis, links, inline tags);
- the text extraction produces (`Document` blocks), per page (PDF) or section (the heading
  path), with its tables read cell by cell (a label cell with the value beside or below it);
- what extraction does not index but a reader of the file sees: the headers and footers of
  a DOCX;
- every cell of every sheet of a workbook, a label cell read with the value beside or below
  it across merged cells or empty columns, named by its coordinate ("sheet 'Accessi', cell
  B3").

The same secret found in two readings of the same text (the raw line and its extracted
paragraph) is reported once, at the first place found: findings are told apart by their
digest, the hash of the text they were made on (`thoth.secrets.secret_digest`), never by the
text itself.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from thoth.documents.extract import Block, Document, DocumentFormat
from thoth.secrets import find_cell_secrets, find_secrets

# Formats whose committed text is what a reader sees: scanned as the file, by its lines.
RAW_TEXT_FORMATS: frozenset[DocumentFormat] = frozenset(("markdown", "text", "csv", "html"))


@dataclass(frozen=True)
class SecretFinding:
    place: str  # "line 14", "page 2, line 3 of its text", "sheet 'Accessi', cell B3"
    kind: str  # what was recognised ("password in a table cell"); never the value
    digest: str  # thoth.secrets.secret_digest of the text the finding was made on


def text_findings(text: str, locate: str = "line {line}") -> list[SecretFinding]:
    """The findings of one text, each placed by `locate` with `{line}` filled in."""
    return [SecretFinding(locate.format(line=f.line), f.kind, f.digest) for f in find_secrets(text)]


def document_findings(
    data: bytes, fmt: DocumentFormat, document: Document, raw_text: str | None = None
) -> list[SecretFinding]:
    """Every secret in one file: its raw text (`raw_text`, the whole committed text of a text
    format, front matter included), its extracted `document`, and what only the file holds
    (DOCX headers and footers, workbook cells by coordinate). Each digest once."""
    readings: list[list[SecretFinding]] = []
    if raw_text is not None:
        readings.append(text_findings(raw_text))
    if fmt == "xlsx":
        readings.append(list(_workbook_findings(data)))
    else:
        readings.append(list(_extracted_findings(document.blocks)))
    found = _once(readings)
    if fmt == "docx":  # a text no other reading sees: its findings are places of their own
        found += _docx_furniture_findings(data)
    return found


def _once(readings: Iterable[list[SecretFinding]]) -> list[SecretFinding]:
    """Every finding of the first reading; of a later one, those no earlier reading made (the
    same text twice in one reading is two findings, at two places)."""
    seen: set[str] = set()
    out: list[SecretFinding] = []
    for reading in readings:
        out += [f for f in reading if f.digest not in seen]
        seen.update(f.digest for f in reading)
    return out


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _shown(name: str) -> str:
    """A heading or sheet name as a place, unless it carries a secret itself: a place is
    printed, and must never show what it points at."""
    return "(a name that carries a secret)" if find_secrets(name) else name


def _place(block: Block) -> str:
    if block.page is not None:
        return f"page {block.page}"
    if block.heading_path:
        return f"section '{' > '.join(_shown(h) for h in block.heading_path)}'"
    return "the text before the first heading"


def _extracted_findings(blocks: Iterable[Block]) -> Iterator[SecretFinding]:
    """The extracted text, one text per page or section: blocks joined line after line, so a
    label block (a definition term, a form field) is read with the value block under it."""
    groups: dict[str, list[str]] = {}
    for block in blocks:
        groups.setdefault(_place(block), []).append(block.text)
    for place, texts in groups.items():
        yield from text_findings("\n".join(texts), _escape(place) + ", line {line} of its text")


def _docx_furniture_findings(data: bytes) -> Iterator[SecretFinding]:
    """Headers and footers of every section of a DOCX (first-page and even-page ones too):
    extraction leaves them out of the index, but whoever opens the file reads them."""
    import docx

    document = docx.Document(io.BytesIO(data))
    for number, section in enumerate(document.sections, start=1):
        parts: list[tuple[str, Any]] = [
            ("header", section.header),
            ("first-page header", section.first_page_header),
            ("even-page header", section.even_page_header),
            ("footer", section.footer),
            ("first-page footer", section.first_page_footer),
            ("even-page footer", section.even_page_footer),
        ]
        for name, part in parts:
            if part.is_linked_to_previous:
                continue
            lines = [p.text for p in part.paragraphs]
            for table in part.tables:
                lines += [" | ".join(cell.text for cell in row.cells) for row in table.rows]
            text = "\n".join(lines)
            if text.strip():
                locate = f"{name} of section {number}, line {{line}}"
                yield from text_findings(text, locate)


def _column_letter(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def _workbook_findings(data: bytes) -> Iterator[SecretFinding]:
    """Every sheet's cells as the workbook stores them (values, as extraction reads them),
    each finding named by its sheet and cell; merged cells read as empty beyond their first."""
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        for sheet in book.worksheets:
            rows = [
                ["" if value is None else str(value) for value in row]
                for row in sheet.iter_rows(min_row=1, min_col=1, values_only=True)
            ]
            place = f"sheet '{_shown(sheet.title)}'"
            for f in find_cell_secrets(rows):
                cell = f"{_column_letter(f.column)}{f.row + 1}"
                yield SecretFinding(f"{place}, cell {cell}", f.kind, f.digest)
    finally:
        book.close()
