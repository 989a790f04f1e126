"""PDF pages as paragraphs and tables, read with pdfplumber.

Per page, in reading order (top to bottom): paragraphs of the text outside tables, and tables
as a header plus rows of cells. Two kinds of table are found:

- **ruled** tables, drawn with vertical and horizontal rules: pdfplumber's line-based table
  finder, fed only with real rules (stroked lines and rectangles, and filled rectangles thinner
  than 2 pt at least 5 pt long). Background shading and the accounting underlines of financial
  statements are not rules: with them the finder cuts tables at the first underline and splits
  a `$` from its figure.
- **aligned** tables of figures without rules (financial statements): runs of lines whose right
  part is figures separated from the row label by a wide gap; the columns are the clusters of
  the figures' horizontal extents, and the header is the lines just above the run, each phrase
  given to the columns it spans (a "Three Months Ended" over two date columns heads both), the
  header lines of a column joined top to bottom ("Three Months Ended April 1, 2023").
  pdfplumber's text-based strategy was measured on the same pages and not kept: on a filing
  page it takes the whole page, prose included, for one table and cuts words between columns
  (see docs/documents.md).

Aligned text without figures (option lists, two-column layouts) stays text, and a run of
figures without a header line above it stays text too: a wrong table, whose first line is
repeated as a header in every chunk, is worse than none. `$` and `%` cells are merged with
their figure, and empty spacer columns are removed.

This module returns plain structures (`PdfContent`); `extract.py` turns them into blocks.
"""

from __future__ import annotations

import io
import re
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from thoth.errors import ThothError

Word = dict[str, Any]  # a pdfplumber word: text, x0, x1, top, bottom


@dataclass(frozen=True)
class PdfTable:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class PdfParagraph:
    text: str


PdfItem = PdfParagraph | PdfTable


@dataclass(frozen=True)
class PdfPage:
    number: int  # from 1
    items: tuple[PdfItem, ...]  # empty: the page has no text layer


@dataclass(frozen=True)
class PdfContent:
    pages: tuple[PdfPage, ...]
    title: str  # from the PDF metadata, "" when absent


class PdfReadError(ThothError):
    """The PDF cannot be read; `cause`, `hint` and `code` are what the extractor reports."""

    def __init__(self, cause: str, hint: str, code: str) -> None:
        super().__init__(cause)
        self.cause, self.hint, self.code = cause, hint, code


PDF_HINT = "re-export the PDF from its source application, or repair it (e.g. `qpdf in out`)"
_DECRYPT_HINT = "save an unencrypted copy (e.g. `qpdf --decrypt in out`) and add that instead"

# -- cells -------------------------------------------------------------------------------------

_FIGURE = re.compile(r"^[(\[]?[-−–+]?[$€£]?\d[\d.,']*%?[)\]]?%?$")
_CURRENCY = re.compile(r"^[$€£]$")
_DASH = re.compile(r"^(?:[-—–]|n/?[ad]|nm)$", re.IGNORECASE)
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_WS = re.compile(r"\s+")


def _is_figure(text: str) -> bool:
    return bool(_FIGURE.match(text))


def _is_value(text: str) -> bool:
    return _is_figure(text) or bool(_CURRENCY.match(text) or _DASH.match(text)) or text == "%"


def _clean(cell: str | None) -> str:
    return _WS.sub(" ", cell or "").strip()


def _tidy(rows: Sequence[Sequence[str | None]]) -> list[list[str]]:
    """Cells cleaned, `$`/`%` merged, empty rows and empty (spacer) columns removed."""
    width = max((len(row) for row in rows), default=0)
    grid = [[_clean(cell) for cell in row] + [""] * (width - len(row)) for row in rows]
    # A `$` alone in its column, the figure in the next one: merge across the two columns.
    for row in grid:
        for col in range(width - 1):
            if _CURRENCY.match(row[col]):
                nxt = next((c for c in range(col + 1, width) if row[c]), None)
                if nxt is not None and _is_figure(row[nxt]):
                    row[nxt] = row[col] + row[nxt]
                    row[col] = ""
            if row[col + 1] == "%" and _is_figure(row[col]):
                row[col], row[col + 1] = row[col] + "%", ""
    grid = [row for row in grid if any(row)]
    keep = [col for col in range(width) if any(row[col] for row in grid)]
    return [[row[col] for col in keep] for row in grid]


def _header_depth(rows: Sequence[Sequence[str]]) -> int:
    """How many leading rows of a ruled table are header: rows without figures (years allowed)."""
    depth = 0
    for row in rows[:-1]:
        if any(_is_figure(c) and not _YEAR.match(c) for c in row if c):
            break
        depth += 1
        if depth == 3:
            break
    return max(depth, 1)


def _joined_header(rows: Sequence[Sequence[str]]) -> tuple[str, ...]:
    return tuple(" ".join(c for c in column if c) for column in zip(*rows, strict=True))


# -- lines -------------------------------------------------------------------------------------


@dataclass
class _Line:
    words: list[Word]
    top: float
    bottom: float

    @property
    def x0(self) -> float:
        return float(self.words[0]["x0"])

    @property
    def x1(self) -> float:
        return float(self.words[-1]["x1"])

    @property
    def height(self) -> float:
        return max(self.bottom - self.top, 1.0)

    @property
    def text(self) -> str:
        return _WS.sub(" ", " ".join(str(w["text"]) for w in self.words)).strip()


def _lines(words: Sequence[Word]) -> list[_Line]:
    """Words grouped into lines: a word whose middle is within the current line's band joins it."""
    lines: list[_Line] = []
    for word in sorted(words, key=lambda w: (float(w["top"]), float(w["x0"]))):
        top, bottom = float(word["top"]), float(word["bottom"])
        middle = (top + bottom) / 2
        if lines and lines[-1].top <= middle <= lines[-1].bottom:
            line = lines[-1]
            line.words.append(word)
            line.top, line.bottom = min(line.top, top), max(line.bottom, bottom)
        else:
            lines.append(_Line([word], top, bottom))
    for line in lines:
        line.words.sort(key=lambda w: float(w["x0"]))
    return lines


def _phrases(line: _Line) -> list[list[Word]]:
    """Words of a line split where the gap is wider than the line height (about one em)."""
    out: list[list[Word]] = [[line.words[0]]]
    for prev, word in zip(line.words, line.words[1:], strict=False):
        if float(word["x0"]) - float(prev["x1"]) > line.height:
            out.append([word])
        else:
            out[-1].append(word)
    return out


def _split_row(line: _Line) -> tuple[list[Word], list[Word]] | None:
    """(label words, value words) of a row of figures, or None when the line is not one.

    The values are the words from the first value-like word that stands a wide gap away from
    the label (or starts the line) to the end of the line, all value-like, one a figure.
    """
    words = line.words
    for start, word in enumerate(words):
        if not _is_value(str(word["text"])):
            continue
        if start and float(word["x0"]) - float(words[start - 1]["x1"]) <= line.height:
            continue
        values = words[start:]
        if all(_is_value(str(w["text"])) for w in values) and any(
            _is_figure(str(w["text"])) for w in values
        ):
            return words[:start], values
    return None


def _data_row(line: _Line) -> bool:
    """A row of figures that is not a header line of years ("2023 2022")."""
    row = _split_row(line)
    return row is not None and not _years_only(row)


def _years_only(row: tuple[list[Word], list[Word]]) -> bool:
    return not row[0] and all(_YEAR.match(str(w["text"])) for w in row[1])


# -- aligned tables (no rules) -----------------------------------------------------------------


@dataclass
class _Aligned:
    lines: list[_Line]  # header lines + body lines, top to bottom
    header: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)


def _tokens(values: Sequence[Word]) -> list[tuple[str, float, float]]:
    """Value words as (text, x0, x1), `$` joined to its figure and `%` to the figure before."""
    out: list[tuple[str, float, float]] = []
    pending = ""
    for word in values:
        text, x0, x1 = str(word["text"]), float(word["x0"]), float(word["x1"])
        if _CURRENCY.match(text):
            pending = text
        elif text == "%" and out:
            out[-1] = (out[-1][0] + "%", out[-1][1], x1)
        else:
            out.append((pending + text, x0, x1))
            pending = ""
    return out


def _columns(tokens: Sequence[tuple[str, float, float]]) -> list[tuple[float, float]]:
    """Column extents: the horizontal extents of the figures, overlapping ones merged."""
    spans = sorted((x0, x1) for text, x0, x1 in tokens if _is_figure(text.lstrip("$€£")))
    columns: list[list[float]] = []
    for x0, x1 in spans:
        if columns and x0 <= columns[-1][1]:
            columns[-1][1] = max(columns[-1][1], x1)
        else:
            columns.append([x0, x1])
    return [(a, b) for a, b in columns]


def _column_of(x0: float, x1: float, columns: Sequence[tuple[float, float]]) -> list[int]:
    """Columns a span overlaps; the nearest one by centre when it overlaps none."""
    hits = [i for i, (a, b) in enumerate(columns) if x0 < b and x1 > a]
    if hits:
        return hits
    centre = (x0 + x1) / 2
    return [
        min(range(len(columns)), key=lambda i: abs((columns[i][0] + columns[i][1]) / 2 - centre))
    ]


def _aligned_table(lines: Sequence[_Line], body: range, above: Sequence[_Line]) -> _Aligned | None:
    """The table of the body lines (rows of figures and label-only lines) with its header."""
    split = [_split_row(lines[i]) for i in body]
    tokens = [_tokens(s[1]) if s else [] for s in split]
    columns = _columns([t for row in tokens for t in row])
    if not columns:
        return None
    limit = columns[0][0]  # the label column ends where the first column of figures starts
    if any(s is None and lines[i].x1 > limit for i, s in zip(body, split, strict=True)):
        return None
    if any(s is not None and s[0] and float(s[0][-1]["x1"]) > limit for s in split):
        return None
    label_end = max(
        (
            float((s[0] if s else lines[i].words)[-1]["x1"])
            for i, s in zip(body, split, strict=True)
            if (s[0] if s else lines[i].words)
        ),
        default=0.0,
    )
    # Header: the lines right above, bottom up, while each phrase sits either in the label
    # column or over the columns of figures (a phrase across both is a caption or a title).
    header_lines: list[_Line] = []
    below = lines[body.start]
    for line in reversed(above):
        if below.top - line.bottom > 2.5 * line.height or len(header_lines) == 4:
            break
        row = _split_row(line)
        if row is not None and not _years_only(row):
            break
        phrases = _phrases(line)
        if any(float(p[0]["x0"]) < label_end and float(p[-1]["x1"]) > limit for p in phrases):
            break  # a caption across labels and figures, not a column header
        if all(float(p[-1]["x1"]) <= limit for p in phrases):
            break  # nothing over the figures: a caption or the end of the text above
        header_lines.insert(0, line)
        below = line
    if not header_lines or all(
        float(p[-1]["x1"]) <= limit for line in header_lines for p in _phrases(line)
    ):
        return None  # no column header: the figures would be rows without meaning
    # The label side may itself hold several columns (code, colour, priority): phrases that
    # start at the same position in at least half of the rows of figures.
    label_phrases = [
        _phrase_spans(s[0] if s else lines[i].words, lines[i].height)
        for i, s in zip(body, split, strict=True)
    ]
    starts = _label_starts(
        [spans for spans, s in zip(label_phrases, split, strict=True) if s is not None]
    )
    width = len(starts) + len(columns)

    def targets(x0: float, x1: float, spans: Sequence[tuple[float, float]]) -> list[int]:
        if x1 <= limit:
            return [max(i for i, start in enumerate(starts) if start <= x0 + 3 or i == 0)]
        return [len(starts) + c for c in _column_of(x0, x1, spans)]

    # Header lines bottom up: a column's extent grows with the header phrases given to it, so
    # a "Three Months Ended" centred over two dates heads the columns of both.
    cells: list[list[str]] = [[] for _ in range(width)]
    widened = list(columns)
    for line in reversed(header_lines):
        given: list[tuple[int, float, float]] = []
        for text, x0, x1 in _phrase_spans(line.words, line.height):
            for target in targets(x0, x1, widened):
                cells[target].insert(0, text)
                given.append((target - len(starts), x0, x1))
        for col, x0, x1 in given:
            if col >= 0:
                a, b = widened[col]
                widened[col] = (min(a, x0), max(b, x1))
    header = tuple(_clean(" ".join(parts)) for parts in cells)
    table = _Aligned([*header_lines, *(lines[i] for i in body)], header)
    for spans, row_tokens in zip(label_phrases, tokens, strict=True):
        cells_of_row = [""] * width
        for text, x0, x1 in [*spans, *row_tokens]:
            col = targets(x0, x1, columns)[0]
            cells_of_row[col] = f"{cells_of_row[col]} {text}".strip()
        table.rows.append(tuple(cells_of_row))
    return table


def _phrase_spans(words: Sequence[Word], height: float) -> list[tuple[str, float, float]]:
    """(text, x0, x1) of each phrase: words split where the gap is wider than `height`."""
    if not words:
        return []
    line = _Line(list(words), 0.0, height)
    return [
        (" ".join(str(w["text"]) for w in p), float(p[0]["x0"]), float(p[-1]["x1"]))
        for p in _phrases(line)
    ]


def _label_starts(rows: Sequence[Sequence[tuple[str, float, float]]]) -> list[float]:
    """Left edges of the label-side columns: the first one always (whatever the indentation),
    others where a phrase after a wide gap starts at the same place in half the rows."""
    found = sorted(x0 for spans in rows for _, x0, _ in spans[1:])
    if not found:
        return [0.0]
    groups: list[list[float]] = []
    for x0 in found:
        if groups and x0 - groups[-1][-1] <= 3:
            groups[-1].append(x0)
        else:
            groups.append([x0])
    return [0.0] + [g[0] for g in groups if len(g) * 2 >= len(rows)]


def _aligned_tables(lines: Sequence[_Line]) -> Iterator[_Aligned]:
    """Runs of rows of figures (label-only lines between them allowed) that make a table."""
    index = 0
    while index < len(lines):
        if not _data_row(lines[index]):
            index += 1
            continue
        # Label-only lines right above the first row ("Net sales:") belong to the run.
        start = index
        while (
            start > 0
            and not _data_row(lines[start - 1])
            and lines[start].top - lines[start - 1].bottom <= lines[start].height
            and lines[start - 1].x1 < float(_split_row(lines[index])[1][0]["x0"])  # type: ignore[index]
            and len(_phrases(lines[start - 1])) == 1
        ):
            start -= 1
        end = index + 1  # one past the last row of figures
        probe = end
        while probe < len(lines) and lines[probe].top - lines[probe - 1].bottom <= 2.0 * (
            lines[probe].height
        ):
            if _data_row(lines[probe]):
                end = probe = probe + 1
            elif len(_phrases(lines[probe])) == 1:
                probe += 1
            else:
                break
        rows = sum(1 for i in range(start, end) if _data_row(lines[i]))
        table = (
            _aligned_table(lines, range(start, end), lines[max(0, start - 4) : start])
            if rows >= 2
            else None
        )
        if table is not None:
            yield table
        index = end


# -- ruled tables ------------------------------------------------------------------------------


def _rules(page: Any) -> list[dict[str, Any]]:
    """Edges of real rules: lines, stroked rectangles, filled ones thinner than 2 pt; >= 5 pt."""
    from pdfplumber.utils.geometry import line_to_edge, rect_to_edges

    edges: list[dict[str, Any]] = [line_to_edge(line) for line in page.lines]
    for rect in page.rects:
        width, height = float(rect["width"]), float(rect["height"])
        if rect.get("stroke") or (rect.get("fill") and min(width, height) < 2):
            edges += rect_to_edges(rect)
    return [
        edge
        for edge in edges
        if max(float(edge["x1"]) - float(edge["x0"]), float(edge["bottom"]) - float(edge["top"]))
        >= 5
    ]


def _ruled_tables(page: Any) -> list[tuple[tuple[float, float, float, float], PdfTable]]:
    rules = _rules(page)
    vertical = [e for e in rules if e["orientation"] == "v"]
    horizontal = [e for e in rules if e["orientation"] == "h"]
    if len(vertical) < 2 or len(horizontal) < 2:
        return []
    settings = {
        "vertical_strategy": "explicit",
        "horizontal_strategy": "explicit",
        "explicit_vertical_lines": vertical,
        "explicit_horizontal_lines": horizontal,
    }
    out: list[tuple[tuple[float, float, float, float], PdfTable]] = []
    for found in page.find_tables(settings):
        rows = _tidy(found.extract())
        if len(rows) < 2 or len(rows[0]) < 2:
            continue
        depth = _header_depth(rows)
        header = _joined_header(rows[:depth])
        out.append((tuple(found.bbox), PdfTable(header, tuple(tuple(r) for r in rows[depth:]))))
    return out


# -- pages -------------------------------------------------------------------------------------


def _inside(word: Word, bbox: tuple[float, float, float, float]) -> bool:
    x0, top, x1, bottom = bbox
    cx = (float(word["x0"]) + float(word["x1"])) / 2
    cy = (float(word["top"]) + float(word["bottom"])) / 2
    return x0 <= cx <= x1 and top <= cy <= bottom


def page_items(page: Any) -> list[PdfItem]:
    """Paragraphs and tables of one pdfplumber page, top to bottom."""
    words: list[Word] = page.extract_words()
    if not words:
        return []
    placed: list[tuple[float, PdfItem]] = []
    ruled = _ruled_tables(page)
    for bbox, table in ruled:
        placed.append((bbox[1], table))
    lines = _lines([w for w in words if not any(_inside(w, bbox) for bbox, _ in ruled)])
    taken: set[int] = set()
    by_id = {id(line): n for n, line in enumerate(lines)}
    for aligned in _aligned_tables(lines):
        placed.append((aligned.lines[0].top, PdfTable(aligned.header, tuple(aligned.rows))))
        taken.update(by_id[id(line)] for line in aligned.lines)
    # Paragraphs: the remaining lines, split where the gap to the line above is wider than
    # about three quarters of a line (or where a table sits between them).
    heights = [line.height for line in lines] or [10.0]
    typical = statistics.median(heights)
    table_tops = sorted(top for top, _ in placed)
    current: list[_Line] = []

    def flush() -> None:
        if current:
            placed.append((current[0].top, PdfParagraph("\n".join(li.text for li in current))))
            current.clear()

    for n, line in enumerate(lines):
        if n in taken:
            flush()
            continue
        if current:
            gap = line.top - current[-1].bottom
            crosses = any(current[-1].top < top < line.top for top in table_tops)
            if crosses or gap > 0.75 * max(typical, current[-1].height):
                flush()
        current.append(line)
    flush()
    placed.sort(key=lambda item: item[0])
    return [item for _, item in placed]


def read_pdf(data: bytes, progress: Callable[[int, int], None] | None = None) -> PdfContent:
    """Every page of a PDF as paragraphs and tables; raises `PdfReadError` naming the stage.
    `progress(pages done, pages)` is called after every page."""
    import pdfplumber
    from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
    from pdfplumber.utils.exceptions import PdfminerException

    def failure(exc: Exception, stage: str) -> PdfReadError:
        cause = exc.args[0] if isinstance(exc, PdfminerException) and exc.args else exc
        if isinstance(cause, PDFPasswordIncorrect):
            return PdfReadError("the PDF is encrypted with a password", _DECRYPT_HINT, "encrypted")
        if isinstance(cause, PDFEncryptionError):
            return PdfReadError(
                f"encrypted with a method that cannot be read ({cause})", _DECRYPT_HINT, "encrypted"
            )
        name = type(cause).__name__
        return PdfReadError(f"{stage}: {name}: {cause}", PDF_HINT, "corrupt")

    try:
        # An empty user password is how PDFs that only restrict printing or copying are
        # "encrypted": any viewer opens them, so they are read; a real password is refused.
        pdf = pdfplumber.open(io.BytesIO(data), password="")
    except Exception as exc:
        raise failure(exc, "not a readable PDF") from exc
    with pdf:
        try:
            pages = list(pdf.pages)
            title = pdf.metadata.get("Title")
        except Exception as exc:
            raise failure(exc, "not a readable PDF") from exc
        out: list[PdfPage] = []
        for number, page in enumerate(pages, start=1):
            try:
                items = page_items(page)
            except Exception as exc:
                raise failure(exc, f"page {number}: text extraction failed") from exc
            finally:
                page.close()  # frees the page's parsed objects: long PDFs stay small in memory
            out.append(PdfPage(number, tuple(items)))
            if progress is not None:
                progress(number, len(pages))
    return PdfContent(tuple(out), title.strip() if isinstance(title, str) else "")
