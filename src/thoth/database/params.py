"""Named parameters (`:name`) in hand-written SQL, found by a tokenizer, never by a regular
expression or a string replace: a `:word` inside a string literal, a quoted identifier, a
comment, a dollar-quoted body or a `::type` cast is not a parameter.

SQLite binds `:name` itself. PostgreSQL (psycopg) binds `%(name)s`, so `to_pyformat` rewrites
each parameter and doubles every other `%`, in literals too: psycopg reads its placeholders
without knowing SQL, so `LIKE 'a%'` must reach it as `LIKE 'a%%'`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final, Literal

from thoth.database.model import Dialect
from thoth.errors import ThothError

_NAME_START: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_PART: Final = _NAME_START | frozenset("0123456789")

TokenKind = Literal["text", "param"]


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str  # the source text; for a parameter its name, without the colon


class ParameterSyntaxError(ThothError):
    """The SQL cannot be tokenized (an unterminated literal, identifier or comment)."""

    code = "parse_error"


def tokens(sql: str, dialect: Dialect) -> Iterator[Token]:
    """The SQL cut into text (literals and comments included) and parameters."""
    i, n, start = 0, len(sql), 0

    def flush(end: int) -> Iterator[Token]:
        if end > start:
            yield Token("text", sql[start:end])

    while i < n:
        c = sql[i]
        if c == "'":
            # E'…' (PostgreSQL escape strings) honour backslashes; '' is a quote everywhere.
            escapes = dialect == "postgresql" and i > 0 and sql[i - 1] in "eE"
            i = _skip_quoted(sql, i, "'", escapes)
        elif c == '"':
            i = _skip_quoted(sql, i, '"', False)
        elif c == "`" and dialect == "sqlite":
            i = _skip_quoted(sql, i, "`", False)
        elif c == "[" and dialect == "sqlite":
            end = sql.find("]", i + 1)
            if end < 0:
                raise ParameterSyntaxError(f"unterminated [identifier at offset {i}")
            i = end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            i = _skip_block_comment(sql, i, nested=dialect == "postgresql")
        elif c == "$" and dialect == "postgresql" and (tag := _dollar_tag(sql, i)) is not None:
            end = sql.find(tag, i + len(tag))
            if end < 0:
                raise ParameterSyntaxError(f"unterminated dollar-quoted string {tag} at offset {i}")
            i = end + len(tag)
        elif c == ":" and sql.startswith("::", i):
            i += 2  # a PostgreSQL cast, never a parameter
        elif c == ":" and i + 1 < n and sql[i + 1] in _NAME_START:
            yield from flush(i)
            j = i + 1
            while j < n and sql[j] in _NAME_PART:
                j += 1
            yield Token("param", sql[i + 1 : j])
            i = start = j
        else:
            i += 1
    yield from flush(n)


def _skip_quoted(sql: str, i: int, quote: str, escapes: bool) -> int:
    j = i + 1
    while j < len(sql):
        if escapes and sql[j] == "\\":
            j += 2
            continue
        if sql[j] == quote:
            if sql.startswith(quote * 2, j):
                j += 2
                continue
            return j + 1
        j += 1
    raise ParameterSyntaxError(f"unterminated {quote}…{quote} starting at offset {i}")


def _skip_block_comment(sql: str, i: int, *, nested: bool) -> int:
    depth, j = 1, i + 2
    while j < len(sql):
        if nested and sql.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif sql.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return j
        else:
            j += 1
    raise ParameterSyntaxError(f"unterminated /* comment starting at offset {i}")


def _dollar_tag(sql: str, i: int) -> str | None:
    """`$$` or `$tag$` opening a dollar-quoted string at i (`$1` is a positional parameter)."""
    j = i + 1
    while j < len(sql) and (sql[j] in _NAME_PART and not (j == i + 1 and sql[j].isdigit())):
        j += 1
    if j < len(sql) and sql[j] == "$":
        return sql[i : j + 1]
    return None


def parameter_names(sql: str, dialect: Dialect) -> list[str]:
    """The distinct parameter names in order of first appearance."""
    return list(dict.fromkeys(t.text for t in tokens(sql, dialect) if t.kind == "param"))


def rewrite(
    sql: str, dialect: Dialect, param: Callable[[str], str], text: Callable[[str], str] = str
) -> str:
    """The SQL with each parameter replaced by `param(name)` and the rest by `text(rest)`."""
    return "".join(
        param(t.text) if t.kind == "param" else text(t.text) for t in tokens(sql, dialect)
    )


def to_pyformat(sql: str) -> str:
    """PostgreSQL SQL with `:name` for psycopg: `%(name)s`, every other `%` doubled."""
    return rewrite(sql, "postgresql", lambda name: f"%({name})s", lambda t: t.replace("%", "%%"))
