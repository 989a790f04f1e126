"""How often `thoth.sqlcheck` refuses legitimate read-only SQL that nobody on the team wrote: the
gold queries of the BIRD dev databases in ../shared/data/bird_dev/questions.json.

BIRD's gold SQL is SQLite-flavoured, and Thoth's checker reads PostgreSQL, so the figures are
kept apart:

- parse failures: SQL that PostgreSQL's parser does not read (as written, and after the one
  lexical adaptation of SQLite's backtick-quoted identifiers to PostgreSQL's double quotes);
- refusals of SQLite-only functions (`strftime`, `iif`, … do not exist in PostgreSQL: refusing
  them is right for this dialect, a SQLite dialect would translate or allow them);
- false refusals: anything else refused — a harmless PostgreSQL construct missing from the
  allow-lists. This is the number to keep at zero.

Each query is checked with `check_read_only_query`; each target-list and WHERE expression of each
query is also checked with `check_expression`, as if it were a formula (subqueries are refused
there by design and counted apart).

Usage (from the project root):
    .venv/bin/python benchmarks/sql_check_bird.py [--questions PATH] [--json]
Exit status 0 when there is no false refusal, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pglast
from pglast import ast
from pglast.parser import ParseError
from pglast.stream import RawStream

from thoth.sqlcheck import SqlVerdict, check_expression, check_read_only_query

DEFAULT_QUESTIONS = Path("../shared/data/bird_dev/questions.json")
# SQLite functions that PostgreSQL does not have (PostgreSQL spellings of the same are accepted).
SQLITE_ONLY = frozenset(
    [
        "strftime",
        "iif",
        "datetime",
        "julianday",
        "ifnull",
        "instr",
        "typeof",
        "group_concat",
        "printf",
        "total",
        "unixepoch",
        "likelihood",
        "likely",
        "unlikely",
        "zeroblob",
        "hex",
        "sqlite_version",
        "changes",
        "last_insert_rowid",
    ]
)
_TOKENS = re.compile(r"'(?:[^']|'')*'|`([^`]*)`")
_FUNCTION = re.compile(r"^function `([^`]+)`")


def double_quote_identifiers(sql: str) -> str:
    """SQLite's `name` as PostgreSQL's "name"; string literals left untouched."""
    return _TOKENS.sub(lambda m: m.group(0) if m.group(1) is None else f'"{m.group(1)}"', sql)


@dataclass
class Tally:
    checked: int = 0
    accepted: int = 0
    parse_failures: int = 0
    sqlite_only: int = 0
    subqueries: int = 0
    false_refusals: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    false_examples: list[str] = field(default_factory=list)

    def add(self, sql: str, verdict: SqlVerdict) -> None:
        self.checked += 1
        if verdict.ok:
            self.accepted += 1
            return
        codes = {r.code for r in verdict.reasons}
        functions = {
            m.group(1) for r in verdict.reasons if (m := _FUNCTION.match(r.message)) is not None
        }
        for reason in verdict.reasons:
            named = _FUNCTION.match(reason.message)
            self.reasons[f"{reason.code} {named.group(1)}" if named else reason.code] += 1
        if "parse_error" in codes:
            self.parse_failures += 1
        elif codes == {"subquery"}:
            self.subqueries += 1
        elif codes <= {"function_not_allowed", "subquery"} and functions <= SQLITE_ONLY:
            self.sqlite_only += 1
        else:
            self.false_refusals += 1
            self.false_examples.append(f"{sql}  <- {verdict.summary()}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "accepted": self.accepted,
            "parse_failures": self.parse_failures,
            "sqlite_only_functions": self.sqlite_only,
            "subqueries": self.subqueries,
            "false_refusals": self.false_refusals,
            "reasons": dict(self.reasons.most_common()),
            "false_examples": self.false_examples[:20],
        }


def expressions(sql: str) -> Iterator[str]:
    """Each target-list and WHERE expression of a query, as PostgreSQL text (`*` left out)."""
    try:
        statements = pglast.parse_sql(sql)
    except ParseError:
        return

    def selects(node: ast.SelectStmt) -> Iterator[ast.SelectStmt]:
        if node.larg is not None and node.rarg is not None:
            yield from selects(node.larg)
            yield from selects(node.rarg)
        else:
            yield node

    for statement in statements:
        if not isinstance(statement.stmt, ast.SelectStmt):
            continue
        for select in selects(statement.stmt):
            nodes = [t.val for t in select.targetList or ()]
            nodes += [select.whereClause] if select.whereClause is not None else []
            for node in nodes:
                if isinstance(node, ast.ColumnRef) and isinstance(
                    (node.fields or (None,))[-1], ast.A_Star
                ):
                    continue
                yield RawStream()(node)


def measure(queries: list[str]) -> dict[str, Tally]:
    tallies = {name: Tally() for name in ("as_written", "double_quoted", "expressions")}
    for sql in queries:
        tallies["as_written"].add(sql, check_read_only_query(sql))
        adapted = double_quote_identifiers(sql)
        tallies["double_quoted"].add(adapted, check_read_only_query(adapted))
        for expression in expressions(adapted):
            tallies["expressions"].add(expression, check_expression(expression))
    return tallies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if not args.questions.is_file():
        print(f"{args.questions}: not found -> run from the project root", file=sys.stderr)
        return 2
    queries = [item["sql"] for item in json.loads(args.questions.read_text())]
    tallies = measure(queries)
    if args.json:
        print(json.dumps({k: t.as_dict() for k, t in tallies.items()}, indent=2))
    else:
        print(f"{len(queries)} BIRD gold queries from {args.questions}")
        for name, t in tallies.items():
            print(
                f"{name:>14}: {t.checked} checked, {t.accepted} accepted, "
                f"{t.parse_failures} parse failures, {t.sqlite_only} SQLite-only functions, "
                f"{t.subqueries} subqueries, {t.false_refusals} false refusals"
            )
            for reason, count in t.reasons.most_common(8):
                print(f"{'':>16}{count:>4}  {reason}")
            for example in t.false_examples[:5]:
                print(f"{'':>16}false refusal: {example}")
    return 1 if any(t.false_refusals for t in tallies.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
