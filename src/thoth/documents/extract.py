"""Extraction: one source file becomes a `Document`, an ordered list of typed blocks.

Every format keeps the reading order and the structure a reader relies on: headings (with the
path of headings above each block), paragraphs, lists, and tables as Markdown tables with their
header row. PDF blocks keep their page number so a citation can point at the exact page.

Nothing is guessed silently: an unsupported extension, an unreadable or corrupt file, an
encrypted PDF, text that is not UTF-8, a spreadsheet formula without a stored value, or a file
with no text at all raise `ExtractionError`, which names the file (and the page or sheet) and
says what to do.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time
from html.parser import HTMLParser
from itertools import zip_longest
from pathlib import Path
from typing import Literal

from thoth.errors import Problem, ProblemsError
from thoth.markup import markdown_table, parse_markdown, raw_front_matter

BlockKind = Literal["heading", "paragraph", "list", "table", "qa"]
DocumentFormat = Literal["markdown", "text", "html", "pdf", "docx", "xlsx", "csv"]
# How a source marks its headings (Markdown and plain text only; other formats carry their own).
HeadingDialect = Literal["markdown", "numbered", "bold"]
HEADING_DIALECTS: tuple[HeadingDialect, ...] = ("markdown", "numbered", "bold")

_FORMATS: dict[str, DocumentFormat] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".csv": "csv",
}
SUPPORTED_SUFFIXES: tuple[str, ...] = tuple(sorted(_FORMATS))
# (done, total) while one file is extracted: pages of a PDF, rows of a workbook; formats read
# in one step report (1, 1) when they are done.
ExtractProgress = Callable[[int, int], None]
_XLSX_TICK_ROWS = 1000


class ExtractionError(ProblemsError):
    """A file could not be turned into a document; the problem names the file and the cause."""


def _error(path: Path, cause: str, hint: str, code: str = "unreadable") -> ExtractionError:
    return ExtractionError(
        f"cannot extract {path.name}", [Problem(str(path), cause, hint=hint, code=code)]
    )


@dataclass(frozen=True)
class Block:
    """One unit of a document, in reading order.

    `heading_path` lists the headings the block sits under; a heading's own path ends with
    itself, so a chunk that starts with a heading carries the right path. Tables also keep their
    cells (`header`, `rows`) so a long table can be split by rows with the header repeated.
    """

    kind: BlockKind
    text: str
    page: int | None = None
    heading_path: tuple[str, ...] = ()
    level: int | None = None  # headings only: 1 is the top level
    header: tuple[str, ...] = ()  # tables only
    rows: tuple[tuple[str, ...], ...] = ()  # tables only

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise ValueError(f"a {self.kind} block needs text")
        if self.kind == "table" and not self.header:
            raise ValueError("a table block needs a header row")


@dataclass(frozen=True)
class Document:
    path: Path
    format: DocumentFormat
    title: str
    blocks: tuple[Block, ...]
    page_count: int | None = None  # PDF only
    # Pages and sheets without text are reported, not hidden: a scanned page inside a text PDF
    # is exactly the kind of gap a reader of the run report must see.
    empty_pages: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    # PDF only: lines removed as page furniture (running headers and footers, page numbers).
    furniture_lines: int = 0

    @property
    def text(self) -> str:
        return "\n\n".join(block.text for block in self.blocks)


# --------------------------------------------------------------------------------------------
# Shared helpers


_WS = re.compile(r"\s+")


def _clean_cell(value: str) -> str:
    # A Markdown table row is one line: line breaks inside a cell become spaces.
    return _WS.sub(" ", value).strip()


def _trim_table(raw: Sequence[Sequence[str]]) -> list[list[str]]:
    """Cells cleaned, rows padded to one width, empty rows and empty columns removed."""
    rows = [[_clean_cell(cell) for cell in row] for row in raw]
    rows = [row for row in rows if any(row)]
    if not rows:
        return []
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]
    keep = [col for col in range(width) if any(row[col] for row in rows)]
    return [[row[col] for col in keep] for row in rows]


class _Outline:
    """The stack of open headings, to give every block its heading path."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []

    def enter(self, level: int, text: str) -> None:
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, text))

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(text for _, text in self._stack)


class _Builder:
    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.outline = _Outline()

    def heading(self, level: int, text: str, page: int | None = None) -> None:
        text = _WS.sub(" ", text).strip()
        if not text:
            return
        self.outline.enter(level, text)
        self.blocks.append(Block("heading", text, page, self.outline.path, level=level))

    def text(self, kind: BlockKind, text: str, page: int | None = None) -> None:
        text = text.strip("\n").rstrip()
        if text.strip():
            self.blocks.append(Block(kind, text, page, self.outline.path))

    def table(self, raw: Sequence[Sequence[str]], page: int | None = None) -> bool:
        rows = _trim_table(raw)
        if not rows:
            return False
        header, body = tuple(rows[0]), tuple(tuple(row) for row in rows[1:])
        self.blocks.append(
            Block(
                "table",
                markdown_table(header, body),
                page,
                self.outline.path,
                header=header,
                rows=body,
            )
        )
        return True

    def first_heading(self, level: int | None = None) -> str | None:
        for block in self.blocks:
            if block.kind == "heading" and (level is None or block.level == level):
                return block.text
        return None


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _error(
            path, f"cannot be read: {exc.strerror or exc}", "check the path and the permissions"
        ) from exc


# Office files are ZIP archives: their declared sizes are checked before anything inflates
# them (zipfile never inflates an entry past its declared size). docs/documents.md, "Limits".
MAX_ARCHIVE_BYTES = 512 * 1024 * 1024  # all entries, uncompressed
MAX_ENTRY_BYTES = 256 * 1024 * 1024  # one entry, uncompressed
MAX_RATIO = 200  # uncompressed / compressed, for an entry over RATIO_FLOOR_BYTES
RATIO_FLOOR_BYTES = 1024 * 1024
MAX_ENTRIES = 10_000


def _check_archive(path: Path, what: str, hint: str) -> None:
    """Refuse an Office file whose ZIP entries would inflate past the limits, before any
    reader inflates them: an archive bomb of a few KB must not become gigabytes in memory."""
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise _error(path, f"{what} (not a ZIP package: {exc})", hint) from exc
    if len(entries) > MAX_ENTRIES:
        raise _bomb(path, f"{len(entries):,} entries (limit {MAX_ENTRIES:,})")
    total = 0
    for entry in entries:
        total += entry.file_size
        if entry.file_size > MAX_ENTRY_BYTES:
            raise _bomb(
                path,
                f"entry {entry.filename} inflates to {entry.file_size:,} bytes (limit "
                f"{MAX_ENTRY_BYTES:,})",
            )
        ratio = entry.file_size / max(entry.compress_size, 1)
        if entry.file_size > RATIO_FLOOR_BYTES and ratio > MAX_RATIO:
            raise _bomb(
                path,
                f"entry {entry.filename} compresses {ratio:,.0f} to 1 (limit {MAX_RATIO} to 1)",
            )
    if total > MAX_ARCHIVE_BYTES:
        raise _bomb(path, f"its entries inflate to {total:,} bytes (limit {MAX_ARCHIVE_BYTES:,})")


def _bomb(path: Path, cause: str) -> ExtractionError:
    return _error(
        path,
        f"refused before inflating it: {cause}",
        "an archive this large or this compressed is not an ordinary office document: check "
        "where the file comes from; split a genuinely large workbook",
        code="archive_too_large",
    )


def _read_text(path: Path) -> str:
    """Strict UTF-8: a wrong guess at the encoding would index mojibake without any error."""
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _error(
            path,
            f"not valid UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start} (line {line})",
            "re-save the file as UTF-8",
            code="encoding",
        ) from exc
    text = text.removeprefix("\ufeff")  # a byte-order mark is an encoding detail, not content
    return text.replace("\r\n", "\n").replace("\r", "\n")


@contextmanager
def _converting(path: Path, what: str, hint: str) -> Iterator[None]:
    """Turn a parser's failure on a corrupt file into an error that names the file.

    Third-party parsers raise many exception types on damaged input (zip, XML, PDF syntax); all
    of them mean the same thing to the user, and all of them are re-raised, never swallowed.
    """
    try:
        yield
    except ExtractionError:
        raise
    except Exception as exc:
        raise _error(path, f"{what}: {type(exc).__name__}: {exc}", hint, code="corrupt") from exc


# --------------------------------------------------------------------------------------------
# Heading dialects (Markdown and plain text): how a source marks its headings, declared per source

# "1.", "2.3", "4.1.2 Titolo": a single number needs its dot, so "3 mele" is not a heading.
_NUMBERED = re.compile(
    r"^(?P<number>\d{1,3}(?:\.\d{1,3})+\.?|\d{1,3}\.)(?:[ \t]+(?P<title>\S.*))?$"
)
_BOLD = re.compile(r"^(?P<mark>\*\*|__)(?P<title>(?:(?!(?P=mark)).)+)(?P=mark)$")
_MAX_DIALECT_TITLE = 80
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def dialect_heading(line: str, dialect: HeadingDialect) -> tuple[int, str] | None:
    """(level, text) when `line` alone is a heading of the declared dialect, else None.

    "numbered": numbering, then an optional short title (at most 80 characters, no final
    period, which would make it a sentence); the level is the count of numbers. "bold": a line
    that is only `**Title**` or `__Title__`, level 2. "markdown" has no line-level headings
    here: Markdown's own headings are parsed by the Markdown reader.
    """
    line = line.rstrip()
    if dialect == "numbered":
        match = _NUMBERED.match(line)
        if match is None:
            return None
        title = (match.group("title") or "").strip()
        if len(title) > _MAX_DIALECT_TITLE or title.endswith("."):
            return None
        return len([n for n in match.group("number").split(".") if n]), line
    if dialect == "bold":
        match = _BOLD.match(line)
        title = match.group("title").strip() if match else ""
        return (2, title) if title else None
    return None


def _dialect_markdown(lines: list[str], dialect: HeadingDialect) -> tuple[list[str], set[int]]:
    """Lines with the dialect's headings rewritten as ATX headings, and their indexes.

    Fenced code is left alone: a numbered line inside a code sample is not a section.
    """
    if dialect == "markdown":
        return lines, set()
    out: list[str] = []
    converted: set[int] = set()
    fence: str | None = None
    for number, line in enumerate(lines):
        opening = _FENCE.match(line)
        if fence is not None:
            marker = opening.group(1) if opening else ""
            if marker[:1] == fence[:1] and len(marker) >= len(fence):
                fence = None
        elif opening is not None:
            fence = opening.group(1)
        else:
            heading = dialect_heading(line, dialect)
            if heading is not None:
                level, text = heading
                line = "#" * min(level, 6) + " " + text
                converted.add(number)
        out.append(line)
    return out, converted


# --------------------------------------------------------------------------------------------
# Markdown


def _read_markdown(path: Path, dialect: HeadingDialect) -> Document:
    # YAML front matter is metadata (read by the ingest and wiki layers), not content.
    text = _read_text(path)
    raw = raw_front_matter(text)
    return markdown_document(raw.body if raw is not None else text, path, dialect)


def markdown_document(
    text: str, path: Path, heading_dialect: HeadingDialect = "markdown"
) -> Document:
    """Parse Markdown text (without front matter) into a `Document`; `path` names it in errors.

    Used for wiki pages, whose body is read from Git, not from a file on disk.
    """
    body, converted = _dialect_markdown(text.split("\n"), heading_dialect)
    builder = _Builder()
    native: list[tuple[int, str]] = []  # headings written as Markdown headings: title candidates
    for block in parse_markdown("\n".join(body), front_matter=False):
        if block.kind == "heading" and block.level is not None:
            builder.heading(block.level, block.text)
            if block.text.strip() and block.lines[0] not in converted:
                native.append((block.level, _WS.sub(" ", block.text).strip()))
        elif block.kind == "table":
            builder.table([block.header, *block.rows])
        elif block.kind == "list":
            builder.text("list", block.source)
        elif not (block.kind == "html" and block.source.lstrip().startswith("<!--")):
            # The source lines keep the Markdown (emphasis, links) a reader expects.
            builder.text("paragraph", block.source)
    # A numbered or bold dialect heading ("1. Premessa") is a section, not the document's title.
    top = [content for level, content in native if level == 1]
    title = (top or [content for _, content in native] or [path.stem])[0]
    return Document(path, "markdown", title, tuple(builder.blocks))


# --------------------------------------------------------------------------------------------
# Plain text

_LIST_LINE = re.compile(r"^\s*(?:[-*+•·–]|\d{1,3}[.)])\s+\S")


def _read_plain(path: Path, dialect: HeadingDialect) -> Document:
    builder = _Builder()

    def flush(lines: list[str]) -> None:
        if lines:
            listed = all(_LIST_LINE.match(line) for line in lines)
            builder.text("list" if listed else "paragraph", "\n".join(lines))
            lines.clear()

    for para in re.split(r"\n[ \t]*\n", _read_text(path)):
        pending: list[str] = []
        for line in para.strip("\n").split("\n"):
            if not line.strip():
                continue
            heading = dialect_heading(line, dialect)
            if heading is None:
                pending.append(line.rstrip())
            else:
                flush(pending)
                builder.heading(*heading)
        flush(pending)
    return Document(path, "text", path.stem, tuple(builder.blocks))


# --------------------------------------------------------------------------------------------
# HTML

# Navigation (menus, breadcrumbs) is page chrome, never knowledge.
_HTML_SKIP = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "nav"}
# Page chrome by the HTML and ARIA landmark rules: <aside> (complementary), a <header> or
# <footer> that is not inside sectioning content (banner, contentinfo), and any element with a
# chrome landmark role. A <header>/<footer> inside an article, main or section is content.
_HTML_SECTIONING = {"article", "main", "section"}
_HTML_PAGE_LANDMARK = {"header", "footer"}
_HTML_CHROME_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search"}
_HTML_BLOCK = {
    "p", "div", "section", "article", "main", "header", "footer", "aside", "nav", "blockquote",
    "figure", "figcaption", "address", "dl", "dt", "dd", "form", "fieldset", "details",
    "summary", "hr", "body", "center",
}  # fmt: skip
_HEADING_TAG = re.compile(r"^h([1-6])$")


class _HtmlExtractor(HTMLParser):
    """A small state machine over html.parser: blocks, headings, nested lists, tables."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.builder = _Builder()
        self.title_parts: list[str] = []
        self._in_title = False
        self._skip = 0
        self._pre = 0
        self._buf: list[str] = []
        self._heading: int | None = None
        self._lists: list[list[int]] = []  # per open list: [ordered (0/1), next number]
        self._items: list[str] = []
        self._item_prefix: str | None = None
        self._table_depth = 0
        self._rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self._caption: list[str] | None = None
        self._chrome: str | None = None  # the tag of the chrome element being skipped
        self._chrome_depth = 0  # open elements of that tag, itself included
        self._sectioning = 0  # open <article>, <main>, <section> elements

    # -- text buffer ---------------------------------------------------------------------------
    def _take(self) -> str:
        raw = "".join(self._buf)
        self._buf = []
        if self._pre:
            return raw.strip("\n")
        lines = (_WS.sub(" ", line).strip() for line in raw.split("\n"))
        return "\n".join(line for line in lines if line)

    def _flush_paragraph(self) -> None:
        if self._lists or self._heading is not None:
            return
        self.builder.text("paragraph", self._take())

    def _flush_item(self) -> None:
        text = self._take()
        if text:
            indent = "  " * (len(self._lists) - 1)
            # Text after a nested list still belongs to its item: kept as a continuation line.
            prefix = self._item_prefix if self._item_prefix is not None else "  "
            self._items.append(indent + prefix + text.replace("\n", " "))
        self._item_prefix = None

    # -- events --------------------------------------------------------------------------------
    def _chrome_start(self, tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        """Whether this start tag is inside (or opens) page chrome, which is skipped whole."""
        if self._chrome is not None:
            self._chrome_depth += tag == self._chrome
            return True
        role = next((value or "" for name, value in attrs if name == "role"), "")
        if (
            tag == "aside"
            or (tag in _HTML_PAGE_LANDMARK and not self._sectioning)
            or role.strip().lower() in _HTML_CHROME_ROLES
        ):
            self._chrome, self._chrome_depth = tag, 1
            return True
        return False

    def _chrome_end(self, tag: str) -> bool:
        if self._chrome is None:
            return False
        if tag == self._chrome:
            self._chrome_depth -= 1
            if not self._chrome_depth:
                self._chrome = None
        return True

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._chrome_start(tag, attrs):
            return
        if tag in _HTML_SKIP:
            self._skip += 1
            return
        if tag in _HTML_SECTIONING:
            self._sectioning += 1
        if tag == "title":
            self._in_title = True
            return
        if self._table_depth:
            if tag == "table":
                self._table_depth += 1
            elif tag == "tr" and self._table_depth == 1:
                self._rows.append([])
            elif tag in ("td", "th") and self._table_depth == 1:
                self._cell = []
            elif tag == "caption" and self._table_depth == 1:
                self._caption = []
            elif self._cell is not None:
                self._cell.append(" ")
            return
        heading = _HEADING_TAG.match(tag)
        if tag == "table":
            self._flush_paragraph()
            self._table_depth, self._rows = 1, []
        elif heading:
            self._flush_paragraph()
            self._heading = int(heading.group(1))
        elif tag in ("ul", "ol"):
            if self._lists:
                self._flush_item()
            else:
                self._flush_paragraph()
            self._lists.append([1 if tag == "ol" else 0, 1])
        elif tag == "li" and self._lists:
            self._flush_item()
            ordered, number = self._lists[-1]
            self._item_prefix = f"{number}. " if ordered else "- "
            self._lists[-1][1] = number + 1
        elif tag == "br":
            self._buf.append("\n")
        elif tag == "pre":
            self._flush_paragraph()
            self._pre += 1
        elif tag in _HTML_BLOCK:
            self._flush_paragraph()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._chrome is not None:
            return
        if tag == "br":
            if self._cell is not None:
                self._cell.append(" ")
            else:
                self._buf.append("\n")
        elif tag in _HTML_BLOCK and not self._table_depth:
            self._flush_paragraph()

    def handle_endtag(self, tag: str) -> None:
        if self._chrome_end(tag):
            return
        if tag in _HTML_SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if tag in _HTML_SECTIONING:
            self._sectioning = max(0, self._sectioning - 1)
        if tag == "title":
            self._in_title = False
            return
        if self._table_depth:
            if tag == "table":
                self._table_depth -= 1
                if not self._table_depth:
                    self.builder.table(self._rows)
                    self._rows = []
            elif tag == "caption" and self._caption is not None:
                # The caption names the table: it goes right before it, as a paragraph.
                self.builder.text("paragraph", _WS.sub(" ", "".join(self._caption)).strip())
                self._caption = None
            elif tag in ("td", "th") and self._table_depth == 1 and self._cell is not None:
                if self._rows:
                    self._rows[-1].append("".join(self._cell))
                self._cell = None
            return
        if _HEADING_TAG.match(tag) and self._heading is not None:
            level, self._heading = self._heading, None
            self.builder.heading(level, self._take())
        elif tag == "li" and self._lists:
            self._flush_item()
        elif tag in ("ul", "ol") and self._lists:
            self._flush_item()
            self._lists.pop()
            if not self._lists:
                self.builder.text("list", "\n".join(self._items))
                self._items = []
        elif tag == "pre" and self._pre:
            self.builder.text("paragraph", self._take())
            self._pre -= 1
        elif tag in _HTML_BLOCK:
            self._flush_paragraph()

    def handle_data(self, data: str) -> None:
        if self._skip or self._chrome is not None:
            return
        if self._in_title:
            self.title_parts.append(data)
        elif self._cell is not None:
            self._cell.append(data)
        elif self._caption is not None:
            self._caption.append(data)
        elif self._table_depth:
            return  # whitespace between rows and cells
        elif self._pre:
            self._buf.append(data)
        else:
            # Source line breaks are layout, not content; only <br> makes a line break.
            self._buf.append(_WS.sub(" ", data))

    def finish(self) -> None:
        """Emit whatever unclosed elements hold (html.parser does not close them for us)."""
        self.close()
        if self._table_depth:
            if self._cell is not None and self._rows:
                self._rows[-1].append("".join(self._cell))
            self.builder.table(self._rows)
            self._table_depth = 0
        if self._heading is not None:
            level, self._heading = self._heading, None
            self.builder.heading(level, self._take())
        if self._lists:
            self._flush_item()
            self._lists = []
            self.builder.text("list", "\n".join(self._items))
        self._pre = 0
        self._flush_paragraph()


def _read_html(path: Path) -> Document:
    parser = _HtmlExtractor()
    parser.feed(_read_text(path))
    parser.finish()
    builder = parser.builder
    title = _WS.sub(" ", "".join(parser.title_parts)).strip()
    title = title or builder.first_heading(1) or builder.first_heading() or path.stem
    return Document(path, "html", title, tuple(builder.blocks))


# --------------------------------------------------------------------------------------------
# PDF


def _read_pdf(path: Path, progress: ExtractProgress | None = None) -> Document:
    """Pages read by `thoth.documents.pdf` (pdfplumber): headings, paragraphs and tables, page
    by page, without the page furniture (running headers and footers, page numbers)."""
    from thoth.documents.pdf import PdfHeading, PdfReadError, PdfTable, read_pdf

    data = _read_bytes(path)
    try:
        content = read_pdf(data, progress)
    except PdfReadError as exc:
        raise _error(path, exc.cause, exc.hint, code=exc.code) from exc
    builder = _Builder()
    empty: list[int] = []
    notes: list[str] = []
    for page in content.pages:
        if not page.has_text:
            empty.append(page.number)
            notes.append(f"page {page.number} has no text layer (a scanned image?): run OCR")
        elif not page.items:
            notes.append(f"page {page.number} has no text but its running header or footer")
        if page.unplaced_tables:
            notes.append(
                f"page {page.number}: {page.unplaced_tables} run(s) of figures whose column "
                "headers could not be placed, indexed as text lines (each figure beside its row "
                "label, without its period or unit) -> check those figures in the PDF"
            )
        for item in page.items:
            if isinstance(item, PdfTable):
                builder.table([item.header, *item.rows], page.number)
            elif isinstance(item, PdfHeading):
                builder.heading(item.level, item.text, page.number)
            else:
                builder.text("paragraph", item.text, page.number)
    return Document(
        path,
        "pdf",
        content.title or path.stem,
        tuple(builder.blocks),
        page_count=len(content.pages),
        empty_pages=tuple(empty),
        notes=tuple(notes),
        furniture_lines=sum(page.furniture for page in content.pages),
    )


# --------------------------------------------------------------------------------------------
# DOCX

_DOCX_HINT = "open and re-save it in Word or LibreOffice; a legacy .doc must be converted to .docx"
_HEADING_STYLE = re.compile(r"^Heading (\d)$")
_LIST_STYLE = re.compile(r"^List (Bullet|Number|Paragraph|Continue)?\s*(\d)?$")


def _read_docx(path: Path) -> Document:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    _read_bytes(path)  # an unreadable file is reported as such, not as a corrupt package
    _check_archive(path, "not a readable DOCX", _DOCX_HINT)
    builder = _Builder()
    title = ""
    items: list[str] = []
    numbers: dict[int, int] = {}

    def flush_list() -> None:
        builder.text("list", "\n".join(items))
        items.clear()
        numbers.clear()

    def heading_level(paragraph: Paragraph) -> int | None:
        # Custom heading styles are usually based on a built-in one: follow the chain.
        style = paragraph.style
        while style is not None:
            if style.name == "Title":
                return 0
            match = _HEADING_STYLE.match(style.name or "")
            if match:
                return int(match.group(1))
            style = style.base_style
        return None

    def list_depth(paragraph: Paragraph) -> tuple[int, bool] | None:
        name = paragraph.style.name if paragraph.style is not None else ""
        match = _LIST_STYLE.match(name or "")
        levels = paragraph._p.xpath("./w:pPr/w:numPr/w:ilvl/@w:val")
        has_numbering = bool(paragraph._p.xpath("./w:pPr/w:numPr"))
        if not match and not has_numbering:
            return None
        if levels:
            depth = int(levels[0])
        elif match and match.group(2):
            depth = int(match.group(2)) - 1
        else:
            depth = 0
        return depth, bool(match and match.group(1) == "Number")

    with _converting(path, "not a readable DOCX", _DOCX_HINT):
        document = docx.Document(str(path))
        title = (document.core_properties.title or "").strip()
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                if items:
                    flush_list()
                builder.table([[cell.text for cell in row.cells] for row in item.rows])
                continue
            text = item.text.strip()
            if not text:
                continue
            level = heading_level(item)
            listed = list_depth(item) if level is None else None
            if items and listed is None:
                flush_list()
            if level is not None:
                title = title or (text if level == 0 else "")
                builder.heading(max(level, 1), text)
            elif listed is not None:
                depth, numbered = listed
                for deeper in [key for key in numbers if key > depth]:
                    del numbers[deeper]
                numbers[depth] = numbers.get(depth, 0) + 1
                marker = f"{numbers[depth]}. " if numbered else "- "
                items.append("  " * depth + marker + text)
            else:
                builder.text("paragraph", text)
        if items:
            flush_list()
    title = title or builder.first_heading(1) or builder.first_heading() or path.stem
    return Document(path, "docx", title, tuple(builder.blocks))


# --------------------------------------------------------------------------------------------
# Spreadsheets

_XLSX_HINT = "open and re-save it in Excel or LibreOffice; a legacy .xls must be converted to .xlsx"


def _format_value(value: object, number_format: str) -> str:
    """The value a reader sees, without the formula; percentages as percentages."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime):
        if value.time() == time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, int | float):
        if "%" in number_format:
            # 0.035 formatted as 3.5% must read 3.5%, not 0.035: the seed's 53% vs 3.5% case
            # is exactly a number whose meaning depends on this.
            decimals = len(number_format.split(".")[1].split("%")[0]) if "." in number_format else 0
            return f"{value * 100:.{decimals}f}%"
        if isinstance(value, float):
            if value.is_integer() and abs(value) < 1e15:
                return str(int(value))
            return f"{value:.15g}"  # Excel keeps 15 significant digits
        return str(value)
    return str(value)


def _captions_and_table(rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """Leading rows with a single filled cell above a wider table are captions, not a header."""
    captions: list[str] = []
    while len(rows) > 1 and len(rows[0]) > 1 and sum(1 for cell in rows[0] if cell) == 1:
        captions.append(next(cell for cell in rows[0] if cell))
        rows = _trim_table(rows[1:])
    return captions, rows


def _read_xlsx(path: Path, progress: ExtractProgress | None = None) -> Document:
    import openpyxl

    _read_bytes(path)
    _check_archive(path, "not a readable XLSX workbook", _XLSX_HINT)
    builder = _Builder()
    notes: list[str] = []
    with _converting(path, "not a readable XLSX workbook", _XLSX_HINT):
        # Two read-only passes: values (as last computed by the spreadsheet application) and
        # formulas, only to detect formulas that were never computed, which would read as "".
        values = openpyxl.load_workbook(path, read_only=True, data_only=True)
        formulas = openpyxl.load_workbook(path, read_only=True, data_only=False)
    try:
        title = (values.properties.title or "").strip()
        # Rows as the workbook declares its dimensions (read-only mode reads no further).
        total = sum(getattr(sheet, "max_row", None) or 0 for sheet in values.worksheets)
        done = 0
        for sheet, formula_sheet in zip(values.worksheets, formulas.worksheets, strict=True):
            name = sheet.title
            raw: list[list[str]] = []
            missing: list[str] = []
            with _converting(path, f"sheet '{name}' cannot be read", _XLSX_HINT):
                for row, formula_row in zip_longest(sheet.iter_rows(), formula_sheet.iter_rows()):
                    cells: list[str] = []
                    for cell, formula_cell in zip_longest(row or (), formula_row or ()):
                        value = getattr(cell, "value", None)
                        if value is None and getattr(formula_cell, "data_type", None) == "f":
                            missing.append(str(getattr(formula_cell, "coordinate", "?")))
                        cells.append(_format_value(value, getattr(cell, "number_format", "")))
                    raw.append(cells)
                    done += 1
                    if progress is not None and done % _XLSX_TICK_ROWS == 0:
                        progress(done, max(total, done))
            if missing:
                shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
                raise _error(
                    path,
                    f"sheet '{name}': {len(missing)} formula cell(s) without a stored value "
                    f"({shown})",
                    "open the workbook in Excel or LibreOffice and save it, so the computed "
                    "values are stored (Thoth reads values, never formulas)",
                    code="formula_without_value",
                )
            captions, rows = _captions_and_table(_trim_table(raw))
            if not rows:
                notes.append(f"sheet '{name}' is empty")
                continue
            builder.heading(1, name)
            for caption in captions:
                builder.text("paragraph", caption)
            builder.table(rows)
    finally:
        values.close()
        formulas.close()
    if progress is not None:
        progress(done, done)
    return Document(path, "xlsx", title or path.stem, tuple(builder.blocks), notes=tuple(notes))


_CSV_DELIMITERS = ",;\t|"


def _read_csv(path: Path) -> Document:
    text = _read_text(path)
    sample = text[:65536]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, _CSV_DELIMITERS)
    except csv.Error as exc:
        first_line = sample.split("\n", 1)[0]
        if any(delimiter in first_line for delimiter in _CSV_DELIMITERS):
            raise _error(
                path,
                f"cannot determine the column delimiter ({exc})",
                "use one delimiter (, ; tab or |) consistently on every line",
                code="csv_dialect",
            ) from exc
        dialect = csv.excel  # no candidate delimiter anywhere on the first line: one column
    reader = csv.reader(io.StringIO(text), dialect)
    try:
        raw = list(reader)
    except csv.Error as exc:
        raise _error(
            path,
            f"line {reader.line_num}: {exc}",
            "fix the quoting on that line",
            code="corrupt",
        ) from exc
    builder = _Builder()
    captions, rows = _captions_and_table(_trim_table(raw))
    for caption in captions:
        builder.text("paragraph", caption)
    builder.table(rows)
    return Document(path, "csv", path.stem, tuple(builder.blocks))


# --------------------------------------------------------------------------------------------

_READERS: dict[DocumentFormat, Callable[[Path], Document]] = {
    "html": _read_html,
    "docx": _read_docx,
    "csv": _read_csv,
}
# Readers of formats whose extraction takes long enough on a large file to report progress.
_PAGED_READERS: dict[DocumentFormat, Callable[[Path, ExtractProgress | None], Document]] = {
    "pdf": _read_pdf,
    "xlsx": _read_xlsx,
}

_EMPTY_HINT: dict[DocumentFormat, str] = {
    "pdf": "the PDF has no text layer (scanned?): run OCR on it before adding it",
    "xlsx": "every sheet is empty: remove the file or exclude it from the source",
}


def extract(
    path: Path,
    heading_dialect: HeadingDialect = "markdown",
    progress: ExtractProgress | None = None,
) -> Document:
    """Read one file into a `Document`, or raise `ExtractionError` naming the file and cause.

    `heading_dialect` says how a Markdown or plain-text source marks its headings; other
    formats ignore it. `progress(done, total)` follows the extraction: after every page of a
    PDF and every thousand rows of a workbook; other formats report (1, 1) once read.
    """
    if heading_dialect not in HEADING_DIALECTS:
        raise ValueError(f"unknown heading dialect {heading_dialect!r}: use {HEADING_DIALECTS}")
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise _error(
            path,
            f"unsupported file type '{path.suffix or '(no extension)'}'",
            f"supported: {', '.join(SUPPORTED_SUFFIXES)}; convert the file or exclude it from "
            "the source's glob",
            code="unsupported",
        )
    if not path.is_file():
        raise _error(
            path, "does not exist or is not a regular file", "check the source path and glob"
        )
    if fmt in _PAGED_READERS:
        document = _PAGED_READERS[fmt](path, progress)
    else:
        if fmt == "markdown":
            document = _read_markdown(path, heading_dialect)
        elif fmt == "text":
            document = _read_plain(path, heading_dialect)
        else:
            document = _READERS[fmt](path)
        if progress is not None:
            progress(1, 1)
    if not document.blocks:
        raise _error(
            path,
            "no text could be extracted",
            _EMPTY_HINT.get(fmt, "the file is empty: remove it or add its content"),
            code="empty",
        )
    return document
