"""Chunking: a `Document` becomes the `Chunk`s the index embeds and cites.

Strategies are declared per source, never guessed:

- `blocks`: consecutive blocks packed into chunks of `min_chars`..`max_chars` (200..1,800), with
  the last short paragraph of the previous chunk repeated as overlap. A table is never split
  while it fits; a longer table is split by rows and every part repeats the header row. Blocks
  that carry a page (PDF) are packed within their page, so each chunk cites one exact page.
- `qa`: question/answer documents, one chunk per pair, whatever the page breaks; the markers
  are declared by the caller.
- `spreadsheet`: sheets as Markdown tables, packed and split like tables (never one row per
  chunk).

A strategy that finds none of what it declares (no question marker, no table) raises
`ChunkingError` naming the file and the strategy: zero chunks is never a silent success.
No chunk is shorter than `floor_chars` (100) except a document — or, for PDFs, a page — whose
whole text is shorter, and a Q&A pair, which stays whole by definition.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal, TypedDict

from thoth.documents.extract import Block, BlockKind, Document
from thoth.errors import Problem, ProblemsError
from thoth.markup import markdown_table

Strategy = Literal["blocks", "qa", "spreadsheet"]
ChunkKind = Literal["text", "table", "qa"]
STRATEGIES: tuple[Strategy, ...] = ("blocks", "qa", "spreadsheet")


class ChunkingError(ProblemsError):
    """A declared strategy does not fit the document; no chunk was produced."""


@dataclass(frozen=True)
class ChunkLimits:
    min_chars: int = 200
    max_chars: int = 1800
    floor_chars: int = 100
    overlap_max_chars: int = 300

    def __post_init__(self) -> None:
        if not 0 < self.floor_chars <= self.min_chars <= self.max_chars:
            raise ValueError("chunk limits must satisfy 0 < floor_chars <= min_chars <= max_chars")
        if not 0 <= self.overlap_max_chars < self.max_chars:
            raise ValueError("overlap_max_chars must be between 0 and max_chars")


@dataclass(frozen=True)
class Chunk:
    text: str
    page: int | None  # the one page the text comes from (PDF), else None
    heading_path: tuple[str, ...]
    kind: ChunkKind
    ordinal: int  # position in the document's chunk list, from 0
    # A FAQ table's row (strategy qa on a CSV or workbook): its id, or its number in the table
    # ("Sheet:7" in a workbook of several tables); None for any other chunk.
    row: str | None = None


@dataclass(frozen=True)
class QaMarkers:
    """How questions and answers start: each pattern is matched at the start of a line."""

    question: re.Pattern[str]
    answer: re.Pattern[str]

    @classmethod
    def prefixes(cls, question: Sequence[str], answer: Sequence[str]) -> QaMarkers:
        """E.g. `QaMarkers.prefixes(["D:", "Domanda:"], ["R:", "Risposta:"])`."""
        if not question or not answer:
            raise ValueError("declare at least one question prefix and one answer prefix")

        def pattern(prefixes: Sequence[str]) -> re.Pattern[str]:
            return re.compile(r"\s*(?:" + "|".join(re.escape(p) for p in prefixes) + ")")

        return cls(pattern(question), pattern(answer))

    @classmethod
    def regex(cls, question: str, answer: str) -> QaMarkers:
        return cls(re.compile(question), re.compile(answer))

    def describe(self) -> str:
        return f"question /{self.question.pattern}/, answer /{self.answer.pattern}/"


# --------------------------------------------------------------------------------------------
# Splitting what is too long


_SENTENCE_END = re.compile(r"(\n+|(?<=[.!?;:])[ \t]+)")


def _balanced_cuts(sizes: Sequence[int], capacity: int) -> list[list[int]]:
    """Group consecutive units into as few parts as fit `capacity`, of similar size.

    Greedy filling would leave a small remainder at the end (a 1,900-character paragraph as
    1,800 + 100); aiming at the average part size keeps every part well above the floor.
    """
    count, acc = 1, 0
    for size in sizes:
        if acc and acc + size > capacity:
            count, acc = count + 1, 0
        acc += size
    target = math.ceil(sum(sizes) / count)
    parts: list[list[int]] = []
    current: list[int] = []
    acc = 0
    for index, size in enumerate(sizes):
        if current and (acc + size > capacity or acc >= target):
            parts.append(current)
            current, acc = [], 0
        current.append(index)
        acc += size
    if current:
        parts.append(current)
    return parts


def _split_text(text: str, max_chars: int) -> list[str]:
    """Split a too-long text at sentence or line ends; words, then characters, if must be."""
    pieces = _SENTENCE_END.split(text)
    units: list[str] = []
    for index in range(0, len(pieces), 2):
        unit = pieces[index] + (pieces[index + 1] if index + 1 < len(pieces) else "")
        while len(unit) > max_chars:
            cut = unit.rfind(" ", 0, max_chars)
            cut = cut if cut > 0 else max_chars
            units.append(unit[:cut])
            unit = unit[cut:]
        if unit:
            units.append(unit)
    parts = _balanced_cuts([len(unit) for unit in units], max_chars)
    out = ["".join(units[i] for i in part).strip() for part in parts]
    return [part for part in out if part]


def _table_parts(block: Block, max_chars: int) -> list[str]:
    """A table too long for one chunk, split by rows; every part repeats the header row."""
    header = markdown_table(block.header, [])
    capacity = max(1, max_chars - len(header) - 1)
    row_sizes = [len(markdown_table(block.header, [row])) - len(header) for row in block.rows]
    parts = _balanced_cuts(row_sizes, capacity) if block.rows else [[]]
    return [markdown_table(block.header, [block.rows[i] for i in part]) for part in parts]


# --------------------------------------------------------------------------------------------
# Packing


@dataclass(frozen=True)
class _Atom:
    """An indivisible piece of text for packing: a block, or a part of a long block."""

    text: str
    kind: BlockKind
    page: int | None
    heading_path: tuple[str, ...]


def _atoms(blocks: Iterable[Block], limits: ChunkLimits) -> list[_Atom]:
    atoms: list[_Atom] = []
    for block in blocks:
        if block.kind == "heading":
            # Markdown has six levels: a deeper PDF heading ("##########") would read as a
            # paragraph of hashes to the embedder and the reader.
            texts = ["#" * min(block.level or 1, 6) + " " + block.text]
        elif block.kind == "table":
            fits = len(block.text) <= limits.max_chars
            texts = [block.text] if fits else _table_parts(block, limits.max_chars)
        elif len(block.text) <= limits.max_chars:
            texts = [block.text]
        else:
            texts = _split_text(block.text, limits.max_chars)
        atoms += [_Atom(text, block.kind, block.page, block.heading_path) for text in texts]
    return atoms


# Costs of the packing optimisation. Their order matters, not their values: a chunk under the
# floor is worse than a chunk over the maximum (which only ever absorbs a tiny piece), which is
# worse than a heading left alone at the end of a chunk, which is worse than a chunk under the
# minimum, which is worse than a chunk too full to take the overlap; then fewer chunks, then
# breaks at headings rather than mid-section.
_UNDER_FLOOR = 10_000_000
_OVER_MAX = 1_000_000
_ORPHAN_HEADING = 5_000
_UNDER_MIN = 1_000
_NO_ROOM_FOR_OVERLAP = 500
_PER_CHUNK = 100
_MID_SECTION = 60


def _partition(atoms: Sequence[_Atom], limits: ChunkLimits) -> list[tuple[int, int]]:
    """Split atoms into consecutive groups of least total cost (dynamic programming).

    Greedy packing cannot look ahead: it closes a chunk at 1,790 characters and leaves the
    40-character heading that follows alone, or breaks right after a heading. Optimising over
    the whole sequence keeps every chunk within the limits whenever that is possible.
    """
    n = len(atoms)
    sizes = [len(atom.text) for atom in atoms]
    # Packing leaves room for the overlap the next chunk may prepend, so that the overlap does
    # not depend on luck; a fuller chunk is still allowed when it avoids a worse outcome.
    room = limits.max_chars - limits.overlap_max_chars - 2
    best = [0.0] + [math.inf] * n
    back = [0] * (n + 1)
    for end in range(1, n + 1):
        length = -2
        for start in range(end - 1, -1, -1):
            length += sizes[start] + 2  # atoms are joined by a blank line
            several = end - start > 1
            if several and length > limits.max_chars + limits.floor_chars:
                break
            cost = best[start] + _PER_CHUNK
            if several and length > limits.max_chars:
                cost += _OVER_MAX + length - limits.max_chars
            elif several and length > room:
                cost += _NO_ROOM_FOR_OVERLAP + length - room
            whole = start == 0 and end == n
            if length < limits.floor_chars and not whole:
                cost += _UNDER_FLOOR
            elif length < limits.min_chars and not whole:
                cost += _UNDER_MIN + limits.min_chars - length
            if start > 0 and atoms[start].kind != "heading":
                orphan = atoms[start - 1].kind == "heading"
                cost += _ORPHAN_HEADING if orphan else _MID_SECTION
            if cost < best[end]:
                best[end], back[end] = cost, start
    groups: list[tuple[int, int]] = []
    end = n
    while end > 0:
        groups.append((back[end], end))
        end = back[end]
    return groups[::-1]


def _pack(atoms: Sequence[_Atom], limits: ChunkLimits) -> list[tuple[str, _Atom, ChunkKind]]:
    """Packed texts of one segment, each with its first atom and its kind."""
    out: list[tuple[str, _Atom, ChunkKind]] = []
    previous: Sequence[_Atom] = ()
    for start, end in _partition(atoms, limits):
        group = atoms[start:end]
        text = "\n\n".join(atom.text for atom in group)
        last = previous[-1] if previous else None
        # Overlap: repeat the previous chunk's last paragraph when it is short, so a sentence
        # that refers back keeps its antecedent. Not across a heading (a new section needs no
        # tail of the old one) and not before a table part (it must start with its header).
        if (
            last is not None
            and len(previous) > 1
            and last.kind in ("paragraph", "list")
            and group[0].kind not in ("heading", "table")
            and len(last.text) <= limits.overlap_max_chars
            and len(text) + 2 + len(last.text) <= limits.max_chars
        ):
            text = last.text + "\n\n" + text
        kind: ChunkKind = "table" if any(atom.kind == "table" for atom in group) else "text"
        out.append((text, group[0], kind))
        previous = group
    return out


def _segments(blocks: Sequence[Block]) -> list[list[Block]]:
    """Consecutive blocks of one page (PDF) or the whole document (no page numbers)."""
    segments: list[list[Block]] = []
    for block in blocks:
        if segments and segments[-1][-1].page == block.page:
            segments[-1].append(block)
        else:
            segments.append([block])
    return segments


def _packed_chunks(document: Document, limits: ChunkLimits) -> list[Chunk]:
    chunks: list[Chunk] = []
    for segment in _segments(document.blocks):
        for text, first, kind in _pack(_atoms(segment, limits), limits):
            chunks.append(Chunk(text, first.page, first.heading_path, kind, len(chunks)))
    return chunks


def _refuse(document: Document, strategy: Strategy, cause: str, hint: str) -> ChunkingError:
    return ChunkingError(
        f"strategy '{strategy}' produced 0 chunks for {document.path.name}",
        [Problem(str(document.path), cause, field=f"strategy={strategy}", hint=hint)],
    )


# --------------------------------------------------------------------------------------------
# Strategies


def chunk_blocks(document: Document, limits: ChunkLimits | None = None) -> list[Chunk]:
    """Pack blocks into chunks; PDF blocks within their page, tables split only by rows."""
    chunks = _packed_chunks(document, limits or ChunkLimits())
    if not chunks:
        raise _refuse(document, "blocks", "the document has no blocks", "check the extraction")
    return chunks


def chunk_spreadsheet(document: Document, limits: ChunkLimits | None = None) -> list[Chunk]:
    """Tables chunked as tables: packed whole, or split by rows with the header repeated."""
    if not any(block.kind == "table" for block in document.blocks):
        raise _refuse(
            document,
            "spreadsheet",
            "no table found (the strategy expects sheets or CSV rows)",
            "declare the 'blocks' strategy for this source, or check the file",
        )
    return _packed_chunks(document, limits or ChunkLimits())


@dataclass
class _Pair:
    lines: list[str]
    page: int | None
    heading_path: tuple[str, ...]
    line_no: int
    answered: bool = False


def qa_pairs(document: Document, markers: QaMarkers) -> tuple[list[Block], str]:
    """Question/answer pairs as `qa` blocks, ignoring page breaks, and the text before them.

    A pair takes the page where its question starts. Headings are not content lines: they are
    already in the heading path of what follows.
    """
    pairs: list[_Pair] = []
    preamble: list[str] = []
    problems: list[Problem] = []
    line_no = 0
    for block in document.blocks:
        for line in block.text.split("\n"):
            line_no += 1
            if markers.question.match(line):
                pairs.append(_Pair([line], block.page, block.heading_path, line_no))
            elif block.kind == "heading":
                continue
            elif markers.answer.match(line) and not pairs:
                where = f" on page {block.page}" if block.page else ""
                problems.append(
                    Problem(
                        str(document.path),
                        f"answer before any question{where}: {line.strip()[:60]!r}",
                        field="strategy=qa",
                        hint=f"check the declared markers ({markers.describe()})",
                    )
                )
            elif pairs:
                pairs[-1].answered = pairs[-1].answered or bool(markers.answer.match(line))
                pairs[-1].lines.append(line)
            else:
                preamble.append(line)
    if not pairs:
        raise _refuse(
            document,
            "qa",
            f"no line matches the question marker ({markers.describe()})",
            "fix the markers declared for this source, or declare another strategy",
        )
    for pair in pairs:
        if not pair.answered:
            where = f"page {pair.page}, " if pair.page else ""
            problems.append(
                Problem(
                    str(document.path),
                    f"question without an answer ({where}line {pair.line_no}): "
                    f"{pair.lines[0].strip()[:60]!r}",
                    field="strategy=qa",
                    hint=f"add the answer or fix the markers ({markers.describe()})",
                )
            )
    if problems:
        raise ChunkingError(
            f"strategy 'qa' produced 0 chunks for {document.path.name}: "
            f"{len(problems)} problem(s) with the question/answer markers",
            problems,
        )
    blocks = [
        Block("qa", "\n".join(pair.lines).strip(), pair.page, pair.heading_path) for pair in pairs
    ]
    return blocks, "\n".join(preamble).strip()


def chunk_qa(
    document: Document, markers: QaMarkers, limits: ChunkLimits | None = None
) -> list[Chunk]:
    """One chunk per question/answer pair; a pair longer than the maximum is split in its
    answer, and every part repeats the question (as table parts repeat their header)."""
    limits = limits or ChunkLimits()
    pairs, preamble = qa_pairs(document, markers)
    texts: list[tuple[str, Block, ChunkKind]] = []
    if preamble and len(preamble) < limits.floor_chars:
        # A short preamble (a title, a date) alone would be a chunk under the floor: it goes
        # with the first pair, which it introduces.
        first = pairs[0]
        pairs[0] = Block("qa", preamble + "\n\n" + first.text, first.page, first.heading_path)
    elif preamble:
        intro = Block("paragraph", preamble, pairs[0].page, ())
        texts += [(part, intro, "text") for part in _split_text(preamble, limits.max_chars)]
    for pair in pairs:
        if len(pair.text) <= limits.max_chars:
            texts.append((pair.text, pair, "qa"))
            continue
        question, answer = _question_and_answer(pair.text, markers)
        texts += [(part, pair, "qa") for part in _under_question(question, answer, limits)]
    return [
        Chunk(text, block.page, block.heading_path, kind, ordinal)
        for ordinal, (text, block, kind) in enumerate(texts)
    ]


# Header names that say which column of a table holds the question and which the answer (a
# FAQ published as CSV or as a sheet), compared without case, spaces or a trailing ':' / '?'.
QUESTION_HEADERS = frozenset(
    {"domanda", "domande", "question", "questions", "quesito", "faq", "d", "q"}
)
ANSWER_HEADERS = frozenset({"risposta", "risposte", "answer", "answers", "r", "a"})


def chunk_qa_table(
    document: Document,
    columns: tuple[str, str] | None = None,
    limits: ChunkLimits | None = None,
    keep: Sequence[str] = (),
    id_column: str | None = None,
) -> list[Chunk]:
    """A table of questions and answers (a CSV, a sheet): one chunk per row, the question
    first (it leads what the embedder reads), then the answer, then the non-empty cells of the
    columns the source keeps (`keep`: `qa_keep_columns`) as "header: value" — no other column:
    an id or a tag is no part of the answer, and embedded it pulls every row alike. A row
    longer than the maximum is split in its answer, and every part repeats the question.
    `columns`: the question and answer headers as the source declares them (`qa_columns`);
    unset, they are recognised by name. Every chunk names its row (`Chunk.row`): the cell of
    `id_column` (`qa_id_column`), or the row's number in its table (the header is row 1),
    after the sheet's name when the document has several tables."""
    limits = limits or ChunkLimits()
    tables = [b for b in document.blocks if b.kind == "table" and b.header]
    if not tables:
        raise _refuse(
            document,
            "qa",
            "no table with a header row: a question-and-answer table needs one",
            "add a header row naming the question and answer columns",
        )
    texts: list[tuple[str, Block, str]] = []
    seen: dict[str, int] = {}
    for table in tables:
        q, a = _qa_columns(document, table.header, columns)
        kept = _kept_columns(document, table.header, keep)
        ident = _id_column(document, table.header, id_column)
        for number, row in enumerate(table.rows, start=2):  # row 1 is the header
            cells = [cell.strip() for cell in row]
            name = _row_name(document, table, tables, number, cells, ident, seen)
            if not cells[q] or not cells[a]:
                missing = "question" if not cells[q] else "answer"
                raise _refuse(
                    document,
                    "qa",
                    f"row {number} of the table has no {missing} ({table.header[q]!r} / "
                    f"{table.header[a]!r})",
                    f"fill in the {missing} of row {number}, or remove the row",
                )
            head = f"{table.header[q]}: {cells[q]}"
            others = [
                f"{header}: {cell}"
                for i, (header, cell) in enumerate(zip(table.header, cells, strict=False))
                if i not in (q, a) and i in kept and cell
            ]
            body = "\n".join([f"{table.header[a]}: {cells[a]}", *others])
            texts += [(part, table, name) for part in _under_question(head, body, limits)]
    return [
        Chunk(text, block.page, block.heading_path, "qa", ordinal, name)
        for ordinal, (text, block, name) in enumerate(texts)
    ]


def _id_column(document: Document, header: Sequence[str], declared: str | None) -> int | None:
    if declared is None:
        return None
    names = [_header_key(h) for h in header]
    if _header_key(declared) not in names:
        raise _refuse(
            document,
            "qa",
            f"qa_id_column names {declared!r}, not a header of the table "
            f"({', '.join(map(repr, header))})",
            "set qa_id_column to the header of the rows' ids, or leave it unset (rows are "
            "then named by their number)",
        )
    return names.index(_header_key(declared))


def _row_name(
    document: Document,
    table: Block,
    tables: Sequence[Block],
    number: int,
    cells: Sequence[str],
    ident: int | None,
    seen: dict[str, int],
) -> str:
    """What an answer's source calls the row: its id, unique and present in every row (two
    rows under one id would be one source), or its number in its table."""
    where = table.heading_path[-1] if len(tables) > 1 and table.heading_path else ""
    if ident is None:
        return f"{where}:{number}" if where else str(number)
    name = cells[ident]
    if not name:
        raise _refuse(
            document,
            "qa",
            f"row {number} of the table has no id ({table.header[ident]!r}, qa_id_column)",
            f"give row {number} its id, or remove the row",
        )
    if name in seen:
        raise _refuse(
            document,
            "qa",
            f"rows {seen[name]} and {number} of the table have the same id {name!r} "
            f"({table.header[ident]!r}, qa_id_column)",
            "give every row its own id",
        )
    seen[name] = number
    return name


def _qa_columns(
    document: Document, header: Sequence[str], declared: tuple[str, str] | None
) -> tuple[int, int]:
    names = [_header_key(h) for h in header]
    if declared is not None:
        wanted = [_header_key(d) for d in declared]
        missing = [d for d, key in zip(declared, wanted, strict=True) if key not in names]
        if missing:
            raise _refuse(
                document,
                "qa",
                f"qa_columns names {', '.join(map(repr, missing))}, not a header of the table "
                f"({', '.join(map(repr, header))})",
                "set qa_columns to the table's question and answer headers",
            )
        return names.index(wanted[0]), names.index(wanted[1])
    questions = [i for i, n in enumerate(names) if n in QUESTION_HEADERS]
    answers = [i for i, n in enumerate(names) if n in ANSWER_HEADERS]
    if len(questions) != 1 or len(answers) != 1:
        raise _refuse(
            document,
            "qa",
            "cannot tell which column holds the question and which the answer (headers: "
            f"{', '.join(map(repr, header))})",
            'declare them for the source: qa_columns = ["<question header>", "<answer header>"]',
        )
    return questions[0], answers[0]


def _kept_columns(document: Document, header: Sequence[str], keep: Sequence[str]) -> set[int]:
    names = [_header_key(h) for h in header]
    missing = [k for k in keep if _header_key(k) not in names]
    if missing:
        raise _refuse(
            document,
            "qa",
            f"qa_keep_columns names {', '.join(map(repr, missing))}, not a header of the table "
            f"({', '.join(map(repr, header))})",
            "set qa_keep_columns to headers of the table, or leave it unset",
        )
    return {names.index(_header_key(k)) for k in keep}


def _header_key(header: str) -> str:
    return " ".join(header.lower().split()).rstrip(":?").strip()


def _under_question(question: str, answer: str, limits: ChunkLimits) -> list[str]:
    """The question and its answer as one text, or, longer than the maximum, the answer split
    with the question repeated in front of every part (as table parts repeat their header)."""
    if len(question) + 1 + len(answer) <= limits.max_chars:
        return [question + "\n" + answer]
    room = max(limits.floor_chars, limits.max_chars - len(question) - 1)
    return [question + "\n" + part for part in _split_text(answer, room)]


def _question_and_answer(text: str, markers: QaMarkers) -> tuple[str, str]:
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if index and markers.answer.match(line):
            return "\n".join(lines[:index]), "\n".join(lines[index:])
    return lines[0], "\n".join(lines[1:])


def chunk(
    document: Document,
    strategy: Strategy,
    *,
    qa_markers: QaMarkers | None = None,
    qa_columns: tuple[str, str] | None = None,
    qa_keep_columns: Sequence[str] = (),
    qa_id_column: str | None = None,
    limits: ChunkLimits | None = None,
) -> list[Chunk]:
    """Chunk a document with the strategy declared for its source. Strategy "qa" on a CSV
    or a workbook reads question and answer columns (`qa_columns`, or recognised by name)
    and keeps the other columns `qa_keep_columns` names, each row named by its
    `qa_id_column` cell or its number; on text, question and answer markers."""
    if strategy == "blocks":
        return chunk_blocks(document, limits)
    if strategy == "spreadsheet":
        return chunk_spreadsheet(document, limits)
    if strategy == "qa" and document.format in ("csv", "xlsx"):
        return chunk_qa_table(document, qa_columns, limits, qa_keep_columns, qa_id_column)
    if strategy == "qa":
        if qa_markers is None:
            raise _refuse(
                document,
                "qa",
                "the strategy needs question and answer markers and none were declared",
                "declare the markers for this source (e.g. 'D:' and 'R:')",
            )
        return chunk_qa(document, qa_markers, limits)
    raise _refuse(
        document,
        strategy,
        f"unknown strategy {strategy!r}",
        f"declare one of: {', '.join(STRATEGIES)}",
    )


# --------------------------------------------------------------------------------------------
# Statistics for run reports


class ChunkStats(TypedDict):
    count: int
    min: int
    p50: int
    p90: int
    max: int
    under_floor: int  # chunks under 100 characters: each one should have a reason
    over_max: int  # chunks over 1,800 characters: a single table row or word too long to split
    histogram: dict[str, int]


def _buckets(limits: ChunkLimits) -> list[tuple[int, int | None]]:
    """Histogram edges at the limits that matter (floor, minimum, maximum) and a few between."""
    inner = {e for e in (500, 1000) if limits.min_chars < e <= limits.max_chars}
    edges = sorted({0, limits.floor_chars, limits.min_chars, limits.max_chars + 1} | inner)
    return [*pairwise(edges), (edges[-1], None)]


def _bucket_label(low: int, high: int | None) -> str:
    return f"{low}+" if high is None else f"{low}-{high - 1}"


def chunk_stats(chunks: Sequence[Chunk], limits: ChunkLimits | None = None) -> ChunkStats:
    """Size distribution of chunks (in characters), for run reports."""
    limits = limits or ChunkLimits()
    sizes = sorted(len(chunk.text) for chunk in chunks)

    def percentile(fraction: float) -> int:
        # Nearest rank: always a real chunk size, never an interpolated one.
        if not sizes:
            return 0
        return sizes[max(0, math.ceil(fraction * len(sizes)) - 1)]

    histogram = {
        _bucket_label(low, high): sum(1 for s in sizes if s >= low and (high is None or s < high))
        for low, high in _buckets(limits)
    }
    return ChunkStats(
        count=len(sizes),
        min=sizes[0] if sizes else 0,
        p50=percentile(0.5),
        p90=percentile(0.9),
        max=sizes[-1] if sizes else 0,
        under_floor=sum(1 for s in sizes if s < limits.floor_chars),
        over_max=sum(1 for s in sizes if s > limits.max_chars),
        histogram=histogram,
    )
