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
  given to the columns it spans (a "Three Months Ended" over two date columns heads both; a
  line's only phrase heads the run of columns centred under it, and when it is a period
  waiting for its date, only the dated columns of that run: not AAPL's "Change"), the
  header lines of a column joined top to bottom ("Three Months Ended April 1, 2023"). A
  header line may carry its period on the label side ("Three Months Ended September 30,
  2023 2022", as MSFT sets it): the period then heads each year's column. A note in
  parentheses set loose over the figures ("(In millions)") heads the labels, not a column.
  pdfplumber's text-based strategy was measured on the same pages and not kept: on a filing
  page it takes the whole page, prose included, for one table and cuts words between columns
  (see docs/documents.md).

Aligned text without figures (option lists, two-column layouts) stays text, and a run of
figures without a header line above it stays text too, and so does one whose header
phrases cannot be placed (two phrases of one header line over one column): a wrong table,
whose first line is repeated as a header in every chunk, is worse than none. `$` and `%`
cells are merged with their figure, a unit repeated after the figures ("8 years") is part of
them, one-word ranges ("2023–2043") are values, and empty spacer columns are removed.

This module returns plain structures (`PdfContent`); `extract.py` turns them into blocks.
"""

from __future__ import annotations

import io
import math
import re
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from thoth.errors import ThothError
from thoth.periods import dated

Word = dict[str, Any]  # a pdfplumber word: text, x0, x1, top, bottom


@dataclass(frozen=True)
class PdfTable:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class PdfParagraph:
    text: str


@dataclass(frozen=True)
class PdfHeading:
    text: str
    level: int  # from 1, the document's most prominent heading style


PdfItem = PdfParagraph | PdfTable | PdfHeading


@dataclass(frozen=True)
class PdfPage:
    number: int  # from 1
    items: tuple[PdfItem, ...]  # empty: no text, or only page furniture
    has_text: bool = True  # False: the page has no text layer at all (a scanned image?)
    furniture: int = 0  # lines removed as running headers, footers and page numbers
    # Rows of figures whose column headers could not be placed: kept as text lines, each
    # figure beside its row label but without its period or unit.
    unplaced_tables: int = 0


@dataclass(frozen=True)
class PdfContent:
    pages: tuple[PdfPage, ...]
    title: str  # the document's first top-level heading, "" when it has no heading


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
# A range in one word, a value but not a figure of its own: "2023–2043", "3.63%–4.88%".
_RANGE = re.compile(r"^\d[\d.,]*%?[–-]\d[\d.,]*%?$")
_WS = re.compile(r"\s+")


def _is_figure(text: str) -> bool:
    return bool(_FIGURE.match(text))


def _is_value(text: str) -> bool:
    return (
        _is_figure(text)
        or bool(_CURRENCY.match(text) or _DASH.match(text) or _RANGE.match(text))
        or text == "%"
    )


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
    the label (or starts the line) to the end of the line, all value-like, one a figure. A
    line that starts with two figures close together ("31, 2022)   35,653   31,580", the
    end of a label wrapped onto a second line) starts with text, and so does one that starts
    with a year before other figures ("2025   2,834   2,196": the year is the row's label in
    a table of maturities). A unit after the figures of
    two or more columns is part of their values ("8 years   8 years", "5.5 pts   26.6 pts").
    """
    words = line.words
    units = _units(line)
    for start, word in enumerate(words):
        if not _is_value(str(word["text"])):
            continue
        if start and float(word["x0"]) - float(words[start - 1]["x1"]) <= line.height:
            continue
        if not start and _label_like_start(line):
            continue
        values = words[start:]
        if all(_is_value(str(w["text"])) or str(w["text"]) in units for w in values) and any(
            _is_figure(str(w["text"])) for w in values
        ):
            return words[:start], values
    return None


def _label_like_start(line: _Line) -> bool:
    """Whether the first phrase of a line that starts with figures is its label: two figures
    close together, or a year alone before figures that are not years."""
    first = [str(w["text"]) for w in _phrases(line)[0]]
    if sum(1 for text in first if _is_figure(text)) > 1:
        return True
    rest = [str(w["text"]) for w in line.words[len(first) :]]
    return (
        len(first) == 1
        and bool(_YEAR.match(first[0]))
        and any(_is_figure(text) and not _YEAR.match(text) for text in rest)
    )


def _units(line: _Line) -> set[str]:
    """Words that follow a figure closely (a short word of letters) twice or more on a line:
    the unit of a row's values ("years", "pts"), not prose, and not a month after its day
    ("30 luglio   31 luglio", an Italian header line of dates)."""
    seen: dict[str, int] = {}
    for prev, word in zip(line.words, line.words[1:], strict=False):
        text = str(word["text"])
        if (
            _is_figure(str(prev["text"]))
            and text.isalpha()
            and len(text) <= 6
            and not dated(text)
            and float(word["x0"]) - float(prev["x1"]) <= line.height
        ):
            seen[text] = seen.get(text, 0) + 1
    return {text for text, count in seen.items() if count >= 2}


def _data_row(line: _Line) -> bool:
    """A row of figures that is not a header line of years ("2023 2022")."""
    row = _split_row(line)
    return row is not None and not _years_only(line, row)


def _years_only(line: _Line, row: tuple[list[Word], list[Word]]) -> bool:
    """A header line of years: years alone ("2023 2022"), or with words, no figure standing
    alone but years, and two or more of them ("Three Months Ended September 30,   2023
    2022"; "(In millions)   2023   Acquisitions   Other   2023", as MSFT sets its headers)
    or one after several phrases ("(years)   Interest Rate   July 30, 2023   2023", NVDA's
    debt table): a row has one label, not phrases spread over the columns."""
    if not all(_YEAR.match(str(w["text"])) for w in row[1]):
        return False
    if not row[0]:
        return True
    phrases = _phrases(line)
    alone = [
        str(w["text"])
        for phrase in phrases
        if all(_is_value(str(w["text"])) for w in phrase)
        for w in phrase
        if _is_figure(str(w["text"]))
    ]
    enough = len(alone) >= 2 or (len(alone) == 1 and len(phrases) >= 3)
    return enough and all(_YEAR.match(text) for text in alone)


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
        elif not _is_value(text) and out:  # a unit ("years"): part of the figure before
            out[-1] = (f"{out[-1][0]} {text}", out[-1][1], x1)
        else:
            out.append((pending + text, x0, x1))
            pending = ""
    return out


def _columns(tokens: Sequence[tuple[str, float, float]]) -> list[tuple[float, float]]:
    """Column extents: the horizontal extents of the figures and of the dashes that stand
    for nil, overlapping ones merged (a column of "—" alone, as INTC's "Gross Amounts
    Offset", is a column). A hyphen is not one: AMZN's "2024 - 2044" is one range."""
    spans = sorted(
        (x0, x1)
        for text, x0, x1 in tokens
        if _is_figure(text.lstrip("$€£").split(" ")[0])
        or (text != "-" and _DASH.match(text.lstrip("$€£")))
    )
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
    # The label column ends where the first column of figures starts, at its `$` when it has
    # one: a date right-aligned over that `$` ("April 1, 2023") heads figures, not labels.
    limit = min(columns[0][0], *(float(s[1][0]["x0"]) for s in split if s))
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
        if row is not None and not _years_only(line, row):
            break
        phrases = _phrases(line)
        if any(float(p[0]["x0"]) < label_end and float(p[-1]["x1"]) > limit for p in phrases):
            break  # a caption across labels and figures, not a column header
        if _table_title(phrases, limit):
            break  # "SUMMARY RESULTS OF OPERATIONS" set over the gutter: the table's title
        if all(float(p[-1]["x1"]) <= limit for p in phrases):
            break  # nothing over the figures: a caption or the end of the text above
        over = [str(p[0]["text"]) for p in phrases if float(p[-1]["x1"]) > limit]
        if len(over) < len(phrases) and all(
            _is_figure(text) and not _YEAR.match(text) for text in over
        ):
            break  # a label and figures with units ("Operating leases   8 years"): a row
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
    for index in reversed(range(len(header_lines))):
        line = header_lines[index]
        neighbours = header_lines[max(0, index - 1) : index] + header_lines[index + 1 : index + 2]
        given: list[tuple[int, float, float]] = []
        spans = _phrase_spans(line.words, line.height)
        spanned = _spanned_columns(
            [(t, x0, x1) for t, x0, x1 in spans if x1 > limit], widened, cells[len(starts) :]
        )
        caption = _period_caption(line, spans, limit)
        texts: dict[int, list[str]] = {}  # this line's phrases per column, left to right
        for text, x0, x1 in spans:
            if (text, x0, x1) in caption:
                continue  # the period of the years on this line: it heads their columns
            found = targets(x0, x1, widened)
            if x1 > limit and _table_note(text, x0, x1, neighbours, columns):
                found = [0]
            elif x1 > limit and not _lines_up(
                x0, x1, header_lines[index + 1 : index + 2], centres=False
            ):
                # A phrase flush with a column's header phrase below it (MSFT's "Cash" over
                # "and Cash Equivalents") heads that column only; a centred one may head
                # several (AMZN's "2022" over three columns, centred on the middle one).
                more = spanned.get((x0, x1), [])
                if more and _AWAITS_DATE.search(text):
                    # A period heads the dated columns of its territory, not the columns it
                    # overlaps: NVDA centres "Three Months Ended" over its two quarters and
                    # their "$ Change" and "% Change".
                    found = []
                under = header_lines[index + 1 : index + 2]
                if not spanned and under and not _lines_up(x0, x1, under):
                    # The line's only phrase over the figures, over a header line and centred
                    # on none of its phrases (AMZN's "Six Months Ended" over its "December
                    # 31," is; its "(unaudited)", under the dates, has no line under it).
                    more = _lone_run(text, x0, x1, widened, cells[len(starts) :])
                    found = [len(starts) + c for c in more] or found
                found = sorted({*found, *(len(starts) + c for c in more)})
            for target in found:
                texts.setdefault(target, []).append(text)
                given.append((target - len(starts), x0, x1))
        if any(len(parts) > 1 for target, parts in texts.items() if target >= len(starts)):
            # Two phrases of one header line over one column of figures: the phrases are
            # not where the columns are ("Gross ... Net" over three columns), and a header
            # guessed from them would be wrong in every chunk; the lines stay text.
            return None
        for target, parts in texts.items():
            if caption and target >= len(starts):
                parts.insert(0, " ".join(text for text, _, _ in caption))
            cells[target].insert(0, " ".join(parts))
        for col, x0, x1 in given:
            if col >= 0:
                a, b = widened[col]
                widened[col] = (min(a, x0), max(b, x1))
    header = _shared_periods(tuple(_clean(" ".join(parts)) for parts in cells), len(starts))
    table = _Aligned([*header_lines, *(lines[i] for i in body)], header)
    for spans, row_tokens in zip(label_phrases, tokens, strict=True):
        cells_of_row = [""] * width
        for text, x0, x1 in [*spans, *row_tokens]:
            col = targets(x0, x1, columns)[0]
            cells_of_row[col] = f"{cells_of_row[col]} {text}".strip()
        table.rows.append(tuple(cells_of_row))
    return table


def _table_note(
    text: str,
    x0: float,
    x1: float,
    neighbours: Sequence[_Line],
    columns: Sequence[tuple[float, float]],
) -> bool:
    """Whether a header phrase over the figures is a note on the whole table: in parentheses,
    and over the figures of two columns or more ("($ in millions, except per share data)"
    across three dates), or lined up (left edge, right edge or centre, over or under it) with
    no phrase of the header lines next to it: NVDA's "(In millions)" set loose between the
    date columns. Lined up with a column's header phrases it belongs to that column (MSFT's
    "(In millions)" right-aligned under "Approximate Dollar Value of Shares That May Yet Be
    Purchased", its "(calendar year)" under "Maturities")."""
    if not (text.startswith("(") and text.endswith(")")):
        return False
    over = sum(1 for a, b in columns if x0 < b and x1 > a)
    return over >= 2 or not _lines_up(x0, x1, neighbours)


def _table_title(phrases: Sequence[Sequence[Word]], limit: float) -> bool:
    """A line whose only phrase is in capitals, without a digit, two words or more, and starts
    left of the figures to end over them: a title set above the table ("SUMMARY RESULTS OF
    OPERATIONS"), which a column header never is (it sits over its columns)."""
    if len(phrases) != 1:
        return False
    words = [str(w["text"]) for w in phrases[0]]
    text = " ".join(words)
    return (
        len(words) >= 2
        and text.upper() == text
        and any(c.isalpha() for c in text)
        and not any(c.isdigit() for c in text)
        and float(phrases[0][0]["x0"]) < limit < float(phrases[0][-1]["x1"])
    )


_PERIOD_AND_YEAR = re.compile(r"^(?P<period>.*[A-Za-z].*\S)\s+(?P<year>(?:19|20)\d\d)$")


def _shared_periods(header: tuple[str, ...], first: int) -> tuple[str, ...]:
    """A column headed by its year alone beside a column headed by a period and a year takes
    that period: MSFT right-aligns "Three Months Ended September 30," over the last of the
    years it heads, AMZN centres "Year Ended December 31," over the middle of four. With a
    different period on each side, which one heads it is not known: it keeps its year."""
    out = list(header)
    for i in range(first, len(header)):
        if not _YEAR.match(header[i]):
            continue
        periods = {
            m.group("period")
            for j in (i - 1, i + 1)
            if first <= j < len(header) and (m := _PERIOD_AND_YEAR.match(header[j]))
        }
        if len(periods) == 1:
            out[i] = f"{periods.pop()} {header[i]}"
    return tuple(out)


def _lines_up(x0: float, x1: float, lines: Sequence[_Line], centres: bool = True) -> bool:
    """Whether a phrase lines up with a phrase of `lines`: same left edge, right edge or
    (with `centres`) centre, within 2 pt, its centre over the other phrase."""
    centre = (x0 + x1) / 2
    return any(
        a <= centre <= b
        and min(abs(a - x0), abs(b - x1), abs((a + b) / 2 - centre) if centres else 9.0) <= 2
        for line in lines
        for _, a, b in _phrase_spans(line.words, line.height)
    )


def _period_caption(
    line: _Line, spans: Sequence[tuple[str, float, float]], limit: float
) -> list[tuple[str, float, float]]:
    """The label-side phrases of a header line of years that name their period: on
    "Three Months Ended September 30,   2023   2022" the period heads each year's column
    ("Three Months Ended September 30, 2023"). A phrase in parentheses is a note on the
    table ("(In millions)"), not a period, and stays over the labels."""
    row = _split_row(line)
    if row is None or not row[0] or not _years_only(line, row):
        return []
    return [
        (text, x0, x1)
        for text, x0, x1 in spans
        if x1 <= limit and not (text.startswith("(") and text.endswith(")"))
    ]


def _spanned_columns(
    phrases: Sequence[tuple[str, float, float]],
    columns: Sequence[tuple[float, float]],
    below: Sequence[Sequence[str]],
) -> dict[tuple[float, float], list[int]]:
    """Columns each phrase of a header line heads when the line has several phrases over the
    figures: those whose centre lies in the phrase's territory, bounded by the midpoints to
    the neighbouring phrases (an edge phrase's open side mirrors its other side). Two
    "June 30," centred over two pairs of year columns head a pair each. A period that waits for
    its date ("Three Months Ended", "Semestre chiuso al") heads the columns of its territory
    dated by the header lines under it (`below`, per column), when some are: NVDA centres its
    periods over the quarters and their changes ("$ Change", "% Change"), and a period set off
    the centre of its quarters still heads both."""
    if len(phrases) < 2:
        return {}
    centres = [(x0 + x1) / 2 for _, x0, x1 in phrases]
    out: dict[tuple[float, float], list[int]] = {}
    for n, (text, x0, x1) in enumerate(phrases):
        left = (centres[n - 1] + centres[n]) / 2 if n else None
        right = (centres[n] + centres[n + 1]) / 2 if n + 1 < len(phrases) else None
        if left is None and right is not None:
            left = 2 * centres[n] - right
        if right is None and left is not None:
            right = 2 * centres[n] - left
        assert left is not None and right is not None
        inside = [c for c, (a, b) in enumerate(columns) if left <= (a + b) / 2 <= right]
        with_date = [c for c in inside if dated(" ".join(below[c]))]
        if _AWAITS_DATE.search(text) and with_date:
            out[(x0, x1)] = with_date
        else:
            out[(x0, x1)] = _centred_run(centres[n], inside, columns)
    return out


_AWAITS_DATE = re.compile(r"\b(?:ended|ending|chius[oaie](?: al)?)$", re.IGNORECASE)


def _lone_run(
    text: str,
    x0: float,
    x1: float,
    columns: Sequence[tuple[float, float]],
    below: Sequence[Sequence[str]],
) -> list[int]:
    """Columns a header line's only phrase over the figures heads (one not lined up with a
    column's phrase under it): the run of adjacent columns headed under it, among those
    holding the ones it overlaps (the nearest when none), centred closest on it (AAPL's
    "December 31, 2022" centred over its seven columns of investments heads them all). A
    period that waits for its date ("Three Months Ended", "Esercizio chiuso al") heads only
    the columns of that run dated by the header lines under it (`below`, per column): AAPL
    centres "Three Months Ended" over "December 31, 2022", "December 25, 2021" and "Change",
    and "Change" is no quarter."""
    core = _column_of(x0, x1, columns)
    runs = [
        list(range(a, b + 1))
        for a in range(core[0] + 1)
        for b in range(core[-1], len(columns))
        if all(below[c] for c in range(a, b + 1))
    ]
    if not runs:
        return core
    run = _closest_run(runs, (x0 + x1) / 2, columns)
    with_date = [dated(" ".join(parts)) for parts in below]
    if _AWAITS_DATE.search(text) and any(with_date[c] for c in run):
        return [c for c in run if with_date[c]]
    return run


def _centred_run(
    centre: float, inside: Sequence[int], columns: Sequence[tuple[float, float]]
) -> list[int]:
    """The run of adjacent columns among `inside` whose span is centred closest to `centre`:
    a phrase centred over two columns heads both, one centred over a column heads that one."""
    if not inside:
        return []
    runs = [
        list(range(a, b + 1))
        for a in inside
        for b in inside
        if a <= b and all(c in inside for c in range(a, b + 1))
    ]
    return _closest_run(runs, centre, columns)


def _closest_run(
    runs: Sequence[list[int]], centre: float, columns: Sequence[tuple[float, float]]
) -> list[int]:
    """The run of adjacent columns whose span is centred closest to `centre` (to a tenth of a
    point), the shorter on a tie."""

    def offset(run: Sequence[int]) -> float:
        return abs((columns[run[0]][0] + columns[run[-1]][1]) / 2 - centre)

    return min(runs, key=lambda run: (round(offset(run), 1), len(run)))


def _phrase_text(words: Sequence[Word]) -> str:
    return " ".join(str(w["text"]) for w in words)


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


def _aligned_tables(
    lines: Sequence[_Line], unplaced: list[int] | None = None
) -> Iterator[_Aligned]:
    """Runs of rows of figures (label-only lines between them allowed) that make a table.
    A run of two rows or more that makes none (no column header can be placed over it) is
    appended to `unplaced` (its number of rows of figures): it stays text."""
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
        first_value = float(_split_row(lines[index])[1][0]["x0"])  # type: ignore[index]
        while probe < len(lines) and lines[probe].top - lines[probe - 1].bottom <= 2.0 * (
            lines[probe].height
        ):
            if _data_row(lines[probe]):
                end = probe = probe + 1
            elif len(_phrases(lines[probe])) == 1 and lines[probe].x1 < first_value:
                # a label-only line ("Net sales:"); one reaching over the figures is prose
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
        elif rows >= 2 and unplaced is not None:
            unplaced.append(rows)
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


# -- page furniture ----------------------------------------------------------------------------

_EDGE_LINES = 3  # lines at the top and at the bottom of a page where furniture may sit
_SAME_PLACE = 3.0  # points: how far apart the same header may sit on two pages
_PAGE_NUMBER = re.compile(r"^[-–—]?\s*(?:\d{1,3}|[ivxlc]{1,6})\s*[-–—]?$", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")


def _edge_indexes(count: int) -> list[int]:
    return sorted(
        set(range(min(_EDGE_LINES, count))) | set(range(max(0, count - _EDGE_LINES), count))
    )


def furniture(pages: Sequence[Sequence[_Line]]) -> list[set[int]]:
    """Per page, the indexes of its lines that are page furniture (running headers and footers,
    page numbers), found across pages, never by their words:

    - a line among the first or last three of its page whose text (digits aside: "Form 10-Q |
      17" and "| 18" are one footer) recurs at the same place, outside tables, on at least
      three pages and on a tenth of the pages with text; the same place is the same height
      (within 3 pt), or, for the first and the last line of a page, the same end of the page
      (a footer that follows the text up and down the page). Only the places where the line
      is not read as a table's line count: a statement's column header repeated at the top of
      each page of the statement is its tables' header, never furniture. Once furniture, the
      line is furniture on every page where it sits at that place, a table's page included:
      MSFT's "PART I" and "Item 1", right above a table on some pages, were read as a line of
      its column header. The only line of a page is never furniture;
    - a page number: the first or the last line of a page, only a number (1-3 digits or a roman
      numeral, dashes allowed).
    """

    def rank(index: int, count: int) -> int | None:
        return 0 if index == 0 else -1 if index == count - 1 else None

    tabular = [
        {id(line) for table in _aligned_tables(lines) for line in table.lines} for lines in pages
    ]
    # text: (page, top, rank) of its places outside tables
    seen: dict[str, list[tuple[int, float, int | None]]] = {}
    for page, lines in enumerate(pages):
        for index in _edge_indexes(len(lines)):
            line = lines[index]
            if id(line) not in tabular[page]:
                key = _DIGITS.sub("#", line.text.lower())
                seen.setdefault(key, []).append((page, line.top, rank(index, len(lines))))
    with_text = sum(1 for lines in pages if lines)
    needed = max(3, math.ceil(with_text / 10))
    out: list[set[int]] = [set() for _ in pages]
    for page, lines in enumerate(pages):
        for index in _edge_indexes(len(lines)):
            line = lines[index]
            where = rank(index, len(lines))
            if where is not None and _PAGE_NUMBER.match(line.text):
                out[page].add(index)
                continue
            if len(lines) == 1:
                continue  # the page's only line: content, not furniture
            places = seen.get(_DIGITS.sub("#", line.text.lower()), [])
            repeats = {
                p
                for p, top, r in places
                if (where is not None and r == where) or abs(top - line.top) <= _SAME_PLACE
            }
            if len(repeats) >= needed:
                out[page].add(index)
    return out


# -- headings ----------------------------------------------------------------------------------

_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)
_ITALIC_FONT = re.compile(r"italic|oblique", re.IGNORECASE)
_WORDY = re.compile(r"[^\W\d_]{2}")
_SENTENCE_END = re.compile(r"\b[a-z][^\s.]*\.$")  # "... see the notes.": prose, not a title
# A numbered heading: "PART I —", "Item 1A.", "Note 8 –", "2.": the word before the number
# names its series ("" for a bare number).
_NUMBERED = re.compile(
    r"^(?:(?P<label>[^\W\d_]{2,})\s+(?:\d{1,3}[A-Z]?|[IVXLC]{1,5})|(?P<bare>\d{1,3}))"
    r"(?:\s*[.:—–-])?(?:\s|$)"
)
_LABEL = re.compile(
    r"^(?:[^\W\d_]{2,}\s+(?:\d{1,3}[A-Z]?|[IVXLC]{1,5})|\d{1,3}(?:\.\d{1,3})*)\s*[.:—–-]?$"
)
# A numbered heading in capitals ("NOTE 6 — INVENTORIES", "ITEM 2. PROPERTIES"): a heading by
# its form alone, for a filing printed in one font sets its notes' titles in the body's style.
_CAPS_NUMBERED = re.compile(
    r"^[A-Z]{2,}\s+(?:\d{1,3}[A-Z]?|[IVXLC]{1,5})\s*[.:—–-]\s*[A-Z][^a-z]{2,}$"
)
_MAX_HEADING_LINES = 3
_MAX_HEADING_CHARS = 200


@dataclass(frozen=True)
class Style:
    """How a run of text is set: size (rounded to half a point), weight and slant."""

    size: float
    bold: bool
    italic: bool

    @property
    def rank(self) -> tuple[float, bool, bool]:
        """Sort key: larger first, then bold before regular, upright before italic."""
        return (-self.size, not self.bold, self.italic)


def _word_style(word: Word) -> Style:
    name = str(word.get("fontname", ""))
    size = round(float(word.get("size", 0.0)) * 2) / 2
    return Style(size, bool(_BOLD_FONT.search(name)), bool(_ITALIC_FONT.search(name)))


def _line_style(line: _Line) -> Style | None:
    """The one style of a line's words (symbols such as check boxes aside); None when mixed."""
    styles = {_word_style(w) for w in line.words if any(c.isalnum() for c in str(w["text"]))}
    return styles.pop() if len(styles) == 1 else None


def body_style(pages: Sequence[Sequence[_Line]]) -> Style:
    """The style most of the text is set in (by characters)."""
    counts: dict[Style, int] = {}
    for lines in pages:
        for line in lines:
            for word in line.words:
                style = _word_style(word)
                counts[style] = counts.get(style, 0) + len(str(word["text"]))
    return max(counts, key=lambda s: counts[s]) if counts else Style(10.0, False, False)


@dataclass(frozen=True)
class _Head:
    text: str
    style: Style
    series: str | None  # the numbered series ("part", "item", "#"), None when unnumbered


def _heading_style(line: _Line, body: Style) -> Style | None:
    """The style of a line that may be (part of) a heading: set apart from the body text by a
    larger size, or bold or italic at the body's size; one phrase with words, not a row of
    figures, not a parenthesised note."""
    style = _line_style(line)
    if style == body and _CAPS_NUMBERED.match(line.text):
        return style
    if style is None or style == body or style.size < body.size:
        return None
    if not (
        style.size >= body.size + 1.0
        or (style.bold and not body.bold)
        or (style.italic and not body.italic)
    ):
        return None
    text = line.text
    if len(text) > _MAX_HEADING_CHARS or not _WORDY.search(text):
        return None
    # One phrase, or a number set apart from its title ("Item 2.   Management's Discussion").
    phrases = _phrases(line)
    if len(phrases) > 2 or (len(phrases) == 2 and not _LABEL.match(_phrase_text(phrases[0]))):
        return None
    if _split_row(line) is not None or (text.startswith("(") and text.endswith(")")):
        return None
    return style


_TOC_ENTRY = re.compile(r"[^\W\d_][^\s\d]*\s+\d{1,3}$")  # "... Financial Statements 3"


def contents_page(lines: Sequence[_Line]) -> bool:
    """A table of contents: of the lines outside tables, at least five, and two in five, end
    with a word and a page number. Its headings ("PART II. OTHER INFORMATION") are entries,
    not the sections they list."""
    entries = sum(1 for line in lines if _TOC_ENTRY.search(line.text))
    return entries >= 5 and entries * 5 >= 2 * len(lines)


def _heading_runs(
    lines: Sequence[tuple[int, _Line]], body: Style | None
) -> list[tuple[list[tuple[int, _Line]], _Head | None]]:
    """The lines cut into runs: a heading (up to three adjacent lines in one heading style,
    joined) or the text between headings (None). No headings when `body` is None."""
    if body is None:
        return [(list(lines), None)] if lines else []
    runs: list[tuple[list[tuple[int, _Line]], _Head | None]] = []
    plain: list[tuple[int, _Line]] = []
    index = 0
    while index < len(lines):
        style = _heading_style(lines[index][1], body)
        end = index + 1
        if style is not None:
            while (
                end < len(lines)
                and lines[end][0] == lines[end - 1][0] + 1
                and lines[end][1].top - lines[end - 1][1].bottom <= lines[end][1].height
                and _heading_style(lines[end][1], body) == style
                and not _NUMBERED.match(lines[end][1].text)  # a numbered heading starts anew
                and _aligned_with(lines[end][1], lines[end - 1][1])
            ):
                end += 1
        group = list(lines[index:end])
        text = " ".join(line.text for _, line in group)
        if (
            style is None
            or len(group) > _MAX_HEADING_LINES
            or len(text) > _MAX_HEADING_CHARS
            or _SENTENCE_END.search(text)
        ):
            plain += group
        else:
            if plain:
                runs.append((plain, None))
                plain = []
            match = _NUMBERED.match(text)
            series = None
            if match is not None:
                series = (match.group("label") or "#").lower()
            runs.append((group, _Head(text, style, series)))
        index = end
    if plain:
        runs.append((plain, None))
    return runs


def _aligned_with(line: _Line, above: _Line) -> bool:
    """Whether a line continues the heading above: same left edge or same centre (a wrapped
    title), not a centred caption under a left-aligned "Item 1. Financial Statements"."""
    return abs(line.x0 - above.x0) <= 2 or abs((line.x0 + line.x1) - (above.x0 + above.x1)) <= 6


def heading_levels(
    heads: Sequence[_Head], body: Style | None = None
) -> dict[tuple[Style, str | None], int]:
    """Level (from 1) of every (style, series) of a document's headings: styles by rank (size,
    weight, slant); within one style, numbered series in their order of first appearance
    ("Part" before "Item" before "Note"), then the unnumbered headings. Headings in the body's
    own style (numbered capitals, known by their form) rank right after the deepest numbered
    series set apart by style: a note's title opens a section its subheadings fall under."""
    order: dict[Style, list[str | None]] = {}
    by_form: list[str | None] = []
    for head in heads:
        series = by_form if head.style == body else order.setdefault(head.style, [])
        if head.series is not None and head.series not in series:
            series.append(head.series)
    keys = [
        (style, series_name)
        for style in sorted(order, key=lambda s: s.rank)
        for series_name in [*order[style], None]
    ]
    if body is not None and by_form:
        numbered = [n for n, (_, series_name) in enumerate(keys) if series_name is not None]
        at = numbered[-1] + 1 if numbered else 0
        keys[at:at] = [(body, series_name) for series_name in by_form]
    return {key: level for level, key in enumerate(keys, start=1)}


# -- pages ----------------------------------------------------------------------------------


def _inside(word: Word, bbox: tuple[float, float, float, float]) -> bool:
    x0, top, x1, bottom = bbox
    cx = (float(word["x0"]) + float(word["x1"])) / 2
    cy = (float(word["top"]) + float(word["bottom"])) / 2
    return x0 <= cx <= x1 and top <= cy <= bottom


@dataclass
class _RawPage:
    """What the first pass keeps of a page once it is closed: its words outside ruled tables
    (with font name and size) and its ruled tables (top, table)."""

    number: int
    has_text: bool
    lines: list[_Line]
    ruled: list[tuple[float, PdfTable]]
    # Runs of figures kept as text because no column header could be placed over them
    # (counted by _layout: the extraction notes say so, for a figure without its period).
    unplaced_tables: int = 0


def _raw_page(page: Any, number: int) -> _RawPage:
    words: list[Word] = page.extract_words(extra_attrs=["fontname", "size"])
    if not words:
        return _RawPage(number, False, [], [])
    ruled = _ruled_tables(page)
    rest = [w for w in words if not any(_inside(w, bbox) for bbox, _ in ruled)]
    return _RawPage(number, True, _lines(rest), [(bbox[1], table) for bbox, table in ruled])


def _layout(page: _RawPage, body: Style) -> list[tuple[float, PdfParagraph | PdfTable | _Head]]:
    """Tables, headings and paragraphs of one page (furniture already removed), top to bottom."""
    lines = page.lines
    placed: list[tuple[float, PdfParagraph | PdfTable | _Head]] = list(page.ruled)
    taken: set[int] = set()
    by_id = {id(line): n for n, line in enumerate(lines)}
    unplaced: list[int] = []
    for aligned in _aligned_tables(lines, unplaced):
        placed.append((aligned.lines[0].top, PdfTable(aligned.header, tuple(aligned.rows))))
        taken.update(by_id[id(line)] for line in aligned.lines)
    # Paragraphs: the remaining lines, split where the gap to the line above is wider than
    # about three quarters of a line (or where a table or a heading sits between them).
    heights = [line.height for line in lines] or [10.0]
    typical = statistics.median(heights)
    page.unplaced_tables = len(unplaced)
    table_tops = sorted(top for top, _ in placed)
    current: list[_Line] = []

    def flush() -> None:
        if current:
            placed.append((current[0].top, PdfParagraph("\n".join(li.text for li in current))))
            current.clear()

    free = [(n, line) for n, line in enumerate(lines) if n not in taken]
    previous: int | None = None
    toc = contents_page([line for _, line in free])
    for group, head in _heading_runs(free, None if toc else body):
        if head is not None:
            flush()
            placed.append((group[0][1].top, head))
            previous = group[-1][0]
            continue
        for n, line in group:
            if current:
                gap = line.top - current[-1].bottom
                crosses = any(current[-1].top < top < line.top for top in table_tops)
                adjacent = previous is not None and n == previous + 1
                if not adjacent or crosses or gap > 0.75 * max(typical, current[-1].height):
                    flush()
            current.append(line)
            previous = n
    flush()
    placed.sort(key=lambda item: item[0])
    return placed


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
        except Exception as exc:
            raise failure(exc, "not a readable PDF") from exc
        raw: list[_RawPage] = []
        for number, page in enumerate(pages, start=1):
            try:
                raw.append(_raw_page(page, number))
            except Exception as exc:
                raise failure(exc, f"page {number}: text extraction failed") from exc
            finally:
                page.close()  # frees the page's parsed objects: long PDFs stay small in memory
            if progress is not None:
                progress(number, len(pages))
    return _content(raw)


def _content(raw: Sequence[_RawPage]) -> PdfContent:
    """The second pass, across pages: furniture removed, headings levelled, the title."""
    dropped = furniture([page.lines for page in raw])
    for page, drop in zip(raw, dropped, strict=True):
        page.lines = [line for n, line in enumerate(page.lines) if n not in drop]
    body = body_style([page.lines for page in raw])
    laid = [_layout(page, body) for page in raw]
    levels = heading_levels(
        [item for page in laid for _, item in page if isinstance(item, _Head)], body
    )

    def final(item: PdfParagraph | PdfTable | _Head) -> PdfItem:
        if isinstance(item, _Head):
            return PdfHeading(item.text, levels[(item.style, item.series)])
        return item

    out = tuple(
        PdfPage(
            page.number,
            tuple(final(item) for _, item in items),
            page.has_text,
            len(drop),
            page.unplaced_tables,
        )
        for page, items, drop in zip(raw, laid, dropped, strict=True)
    )
    return PdfContent(out, _title(out))


def _title(pages: Sequence[PdfPage]) -> str:
    """The headings of the top level on the first page that has headings (the company name of
    a filing's cover, "FORM 10-Q — NVIDIA CORPORATION" when two share the largest size)."""
    for page in pages:
        heads = [item for item in page.items if isinstance(item, PdfHeading)]
        if heads:
            top = min(h.level for h in heads)
            return " — ".join([h.text for h in heads if h.level == top][:3])
    return ""
