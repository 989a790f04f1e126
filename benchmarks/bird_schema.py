"""BIRD dev data for the schema-linking benchmark (not a benchmark itself): the pure parts of
`schema_linking_bird.py`, tested without a model (tests/benchmarks/test_schema_linking_bird.py).

- loading `../shared/data/bird_dev/{schemas,questions}.json`;
- a real SQLite file per database (DDL with types, primary and foreign keys; the sample values
  as rows) and BIRD's own reviewed descriptions as `schema/main.<table>.csv` files, in the
  format of BIRD's `database_description` folder;
- gold tables and columns of a gold query (sqlglot, aliases and unqualified names resolved
  against the schema);
- the schema columns an evidence hint names, and the hint as an Evidence draft (a
  `Restructurer` the product's `prepare` runs like its own);
- recall@k and the strict rate.
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope

from thoth.database.model import qualified
from thoth.evidence.model import Unit
from thoth.evidence.restructure.base import Draft, Restructuring
from thoth.evidence.sources import SourceFile

SCHEMA = "main"  # SQLite: the one attached file of each benchmark workspace
CSV_HEADER = (
    "original_column_name",
    "column_name",
    "column_description",
    "data_format",
    "value_description",
)

# -- data -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BirdColumn:
    name: str
    type: str
    expanded_name: str  # BIRD's readable name ("player api id"); schemas.json's original_name
    description: str
    value_description: str
    samples: tuple[Any, ...]
    # (reference table, reference column, relationship) as schemas.json lists them
    references: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class BirdTable:
    name: str
    primary_key: tuple[str, ...]
    columns: tuple[BirdColumn, ...]


@dataclass(frozen=True)
class BirdDatabase:
    name: str
    tables: tuple[BirdTable, ...]

    def column_names(self) -> dict[str, dict[str, str]]:
        """lower table -> lower column -> (exact) column name."""
        return {t.name.lower(): {c.name.lower(): c.name for c in t.columns} for t in self.tables}

    def table_names(self) -> dict[str, str]:
        return {t.name.lower(): t.name for t in self.tables}


@dataclass(frozen=True)
class BirdQuestion:
    id: int
    db: str
    question: str
    evidence: str
    difficulty: str
    sql: str


def load_schemas(path: Path) -> list[BirdDatabase]:
    out = []
    for db in json.loads(path.read_text(encoding="utf-8")):
        tables = []
        for t in db["tables"]:
            columns = tuple(
                BirdColumn(
                    name=c["name"],
                    type=c["type"],
                    expanded_name=c.get("original_name") or "",
                    description=c.get("description") or "",
                    value_description=c.get("value_description") or "",
                    samples=tuple(c.get("sample_values") or ()),
                    references=tuple(
                        (fk["reference_table"], fk["reference_column"], fk["relationship"])
                        for fk in c.get("foreign_keys") or ()
                    ),
                )
                for c in t["columns"]
            )
            tables.append(BirdTable(t["name"], tuple(t["primary_key"]), columns))
        out.append(BirdDatabase(db["name"], tuple(tables)))
    return out


def load_questions(path: Path) -> list[BirdQuestion]:
    return [
        BirdQuestion(
            id=int(q["question_id"]),
            db=q["db_id"],
            question=q["question"],
            evidence=q.get("evidence") or "",
            difficulty=q.get("difficulty") or "",
            sql=q["sql"],
        )
        for q in json.loads(path.read_text(encoding="utf-8"))
    ]


# -- the SQLite file and the description files ------------------------------------------------


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def foreign_keys(db: BirdDatabase) -> list[tuple[str, str, str, str]]:
    """(table, column, referenced table, referenced column), each once.

    schemas.json lists every relationship from both ends: a "one-to-many" entry is the
    referenced side of a "many-to-one" (so it is turned around); "many-to-one", "one-to-one"
    and "many-to-many" entries are declared as written (the last two appear from both ends,
    so a pair of tables can reference each other: SQLite does not mind, the join is the
    same)."""
    edges: list[tuple[str, str, str, str]] = []
    for t in db.tables:
        for c in t.columns:
            for ref_table, ref_column, relationship in c.references:
                if relationship == "one-to-many":
                    edge = (ref_table, ref_column, t.name, c.name)
                else:
                    edge = (t.name, c.name, ref_table, ref_column)
                if edge not in edges:
                    edges.append(edge)
    return edges


def ddl(db: BirdDatabase) -> list[str]:
    fks = foreign_keys(db)
    statements = []
    for t in db.tables:
        parts = [f"{_q(c.name)} {c.type.upper()}" for c in t.columns]
        if t.primary_key:
            parts.append(f"PRIMARY KEY ({', '.join(_q(k) for k in t.primary_key)})")
        for table, column, ref_table, ref_column in fks:
            if table == t.name:
                parts.append(
                    f"FOREIGN KEY ({_q(column)}) REFERENCES {_q(ref_table)} ({_q(ref_column)})"
                )
        statements.append(f"CREATE TABLE {_q(t.name)} (\n  " + ",\n  ".join(parts) + "\n)")
    return statements


def sample_rows(table: BirdTable) -> list[tuple[Any, ...]]:
    """Row i holds the i-th sample value of each column, NULL where a column has fewer."""
    n = max((len(c.samples) for c in table.columns), default=0)
    return [
        tuple(c.samples[i] if i < len(c.samples) else None for c in table.columns) for i in range(n)
    ]


def build_sqlite(db: BirdDatabase, path: Path) -> dict[str, int]:
    """A new SQLite file with the schema and the sample rows; returns rows per table."""
    if path.exists():
        raise FileExistsError(f"{path}: exists already; the benchmark builds a fresh file")
    counts = {}
    conn = sqlite3.connect(path)
    try:
        with conn:
            for statement in ddl(db):
                conn.execute(statement)
            for t in db.tables:
                rows = sample_rows(t)
                marks = ", ".join("?" for _ in t.columns)
                conn.executemany(f"INSERT INTO {_q(t.name)} VALUES ({marks})", rows)
                counts[t.name] = len(rows)
    finally:
        conn.close()
    return counts


def write_descriptions(db: BirdDatabase, directory: Path) -> list[Path]:
    """`<directory>/main.<table>.csv` per table, in BIRD's database_description format, from
    BIRD's curated `description` and `value_description` (never the automatic
    `ai_description`)."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for t in db.tables:
        path = directory / f"{SCHEMA}.{t.name}.csv"
        with path.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(CSV_HEADER)
            for c in t.columns:
                writer.writerow(
                    (c.name, c.expanded_name, c.description, c.type, c.value_description)
                )
        written.append(path)
    return written


# -- gold tables and columns ------------------------------------------------------------------


@dataclass(frozen=True)
class Gold:
    tables: frozenset[str]  # qualified: main.frpm
    columns: frozenset[str]  # qualified: main.frpm."County Name"


class GoldUnresolved(ValueError):
    """The gold query could not be parsed or one of its names resolved against the schema."""


def _source_of(scope: Scope, alias: str) -> object:
    """The source an alias names, looked up in the scope and then outwards (a correlated
    subquery names a table of an enclosing query)."""
    current: Scope | None = scope
    while current is not None:
        if alias in current.sources:
            return current.sources[alias]
        current = current.parent
    return None


def gold_of(sql: str, db: BirdDatabase) -> Gold:
    """Tables and columns a gold query reads. Identifiers are matched case-insensitively, as
    SQLite does; aliases and unqualified columns are resolved by sqlglot's qualifier against
    the schema. Raises GoldUnresolved naming what failed."""
    names = db.column_names()
    mapping: dict[str, object] = {t: {c: "text" for c in cols} for t, cols in names.items()}
    exact_tables = db.table_names()
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        for node in tree.find_all(exp.Table):
            if node.name.lower() not in exact_tables and node.name.lower() not in ctes:
                raise GoldUnresolved(f"table {node.name!r} is not in {db.name}")
        for ident in tree.find_all(exp.Identifier):
            ident.set("this", ident.this.lower())
            ident.set("quoted", True)
        tree = qualify(
            tree,
            schema=mapping,
            dialect="sqlite",
            validate_qualify_columns=True,
            quote_identifiers=True,
            identify=True,
        )
        scopes = traverse_scope(tree)
    except SqlglotError as exc:
        raise GoldUnresolved(f"sqlglot: {str(exc).splitlines()[0]}") from exc
    tables: set[str] = set()
    columns: set[str] = set()
    for scope in scopes:
        for read in scope.sources.values():
            if isinstance(read, exp.Table):
                tables.add(qualified(SCHEMA, exact_tables[read.name]))
        for col in scope.columns:
            source = _source_of(scope, col.table)
            if not isinstance(source, exp.Table):
                continue  # a derived table's column: its own scope reads the real ones
            table = source.name
            if col.name not in names[table]:
                raise GoldUnresolved(f"column {table}.{col.name} is not in {db.name}")
            columns.add(qualified(SCHEMA, exact_tables[table], names[table][col.name]))
    return Gold(frozenset(tables), frozenset(columns))


# -- evidence hints ---------------------------------------------------------------------------

_QUOTED = re.compile(r"`([^`]+)`|\"([^\"]+)\"")
_DOTTED = re.compile(r"(`[^`]+`|\"[^\"]+\"|[A-Za-z_]\w*)\.(`[^`]+`|\"[^\"]+\"|[A-Za-z_]\w*)")
_WORD = re.compile(r"[A-Za-z_]\w*")
_NOT_CALL = re.compile(r"[A-Za-z_]\w*\b(?!\s*\()")  # COUNT(...), MAX(...) are functions


def _unquote(token: str) -> str:
    return token[1:-1] if token[:1] in '`"' else token


def hint_columns(hint: str, db: BirdDatabase) -> list[tuple[str, str]]:
    """The schema columns a hint names, as sorted (table, column) pairs: `table.column`,
    backticked or double-quoted names and plain words equal to a column name
    (case-insensitive, as SQLite compares names; a word followed by `(` is a function). A name
    several tables share is kept only in the tables the hint names otherwise (a table word, or
    another column only that table has); when it names none, every table with it is kept."""
    names = db.column_names()
    exact_tables = db.table_names()
    by_column: dict[str, list[str]] = {}
    for table, cols in names.items():
        for col in cols:
            by_column.setdefault(col, []).append(table)
    pinned: set[tuple[str, str]] = set()
    loose: set[str] = set()
    for m in _DOTTED.finditer(hint):
        table, col = _unquote(m.group(1)).lower(), _unquote(m.group(2)).lower()
        if table in names and col in names[table]:
            pinned.add((table, col))
    for m in _QUOTED.finditer(hint):
        loose.add((m.group(1) or m.group(2)).lower())
    words = {w.lower() for w in _WORD.findall(hint)}
    loose |= {w.lower() for w in _NOT_CALL.findall(hint)}
    loose = {c for c in loose if c in by_column}
    named_tables = {t for t in words if t in exact_tables} | {t for t, _ in pinned}
    named_tables |= {by_column[c][0] for c in loose if len(by_column[c]) == 1}
    found = set(pinned)
    for col in loose:
        tables = by_column[col]
        chosen = [t for t in tables if t in named_tables] or tables
        found |= {(t, col) for t in chosen}
    return sorted((exact_tables[t], names[t][c]) for t, c in found)


def one_line(text: str) -> str:
    return " ".join(text.split())


def hint_title(hint: str, limit: int = 100) -> str:
    """The hint's first clause (up to `;`), cut at a word boundary."""
    first = one_line(hint).split(";")[0].strip() or one_line(hint)
    if len(first) <= limit:
        return first
    return first[:limit].rsplit(" ", 1)[0].rstrip(" ,=") + " ..."


def hints_source(db: BirdDatabase, hints: Iterable[str]) -> str:
    """The Evidence source file of a database's hints: one hint per line, in first-seen
    order, each once."""
    seen: list[str] = []
    for hint in hints:
        line = one_line(hint)
        if line and line not in seen:
            seen.append(line)
    lines = [f"# BIRD evidence hints: {db.name}", ""]
    for n, line in enumerate(seen, 1):
        lines += [f"## Hint {n}", "", line, ""]
    return "\n".join(lines)


class BirdHintRestructurer:
    """Each hint line of a hints source becomes one curated unit, structured as a curator
    would: a `mapping` to the columns it names (applies_to: those columns and their tables),
    or a `glossary` entry when it names none. Both carry the purpose `schema_linking`, the
    stage whose Evidence search the benchmark measures."""

    name = "bird-hints"

    def __init__(self, db: BirdDatabase) -> None:
        self.db = db

    def restructure(
        self, source: SourceFile, prior: Sequence[Unit], language: str
    ) -> Restructuring:
        drafts = []
        for line in source.normalized.split("\n"):
            hint = line.strip()
            if not hint or hint.startswith("#"):
                continue
            title = hint_title(hint)
            pairs = hint_columns(hint, self.db)
            body = f"# {title}\n\n{hint}"
            if pairs:
                tables = sorted({qualified(SCHEMA, t) for t, _ in pairs})
                columns = [qualified(SCHEMA, t, c) for t, c in pairs]
                drafts.append(
                    Draft(
                        title=title,
                        kind="mapping",
                        data={"concept": hint, "tables": tables, "columns": columns},
                        excerpts=[hint],
                        body=body,
                        purposes=["schema_linking"],
                        applies_to={"tables": tables, "columns": columns},
                    )
                )
            else:
                drafts.append(
                    Draft(
                        title=title,
                        kind="glossary",
                        data={"term": title, "definition": hint},
                        excerpts=[hint],
                        body=body,
                        purposes=["disambiguation", "rewriting", "schema_linking"],
                    )
                )
        return Restructuring(drafts=drafts)


# -- metrics ----------------------------------------------------------------------------------


def recall_at(gold: Iterable[str], ranked: Sequence[str], k: int) -> float:
    """Share of the gold names among the first k of `ranked` (1.0 for an empty gold)."""
    wanted = set(gold)
    if not wanted:
        return 1.0
    return len(wanted & set(ranked[:k])) / len(wanted)


def strict(gold: Iterable[str], proposed: Iterable[str]) -> bool:
    """Every gold name is among the proposed ones."""
    return set(gold) <= set(proposed)
