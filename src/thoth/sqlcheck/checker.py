"""The checks, on the syntax tree of PostgreSQL's own parser (pglast) and its scanner's tokens."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pglast
from pglast import ast
from pglast.parser import ParseError, scan

from thoth.sqlcheck import policy

DOCS = 'docs/source-format.md, "What SQL Thoth accepts"'

# Refusal codes that mean "not the kind of SQL asked for": the other check may accept it.
WRONG_KIND = frozenset({"empty", "parse_error", "not_an_expression", "statements"})


@dataclass(frozen=True)
class SqlReason:
    """One refusal: a stable `code` and a message naming what is refused and what to do."""

    code: str
    message: str


@dataclass(frozen=True)
class SqlVerdict:
    reasons: tuple[SqlReason, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.reasons

    @property
    def wrong_kind(self) -> bool:
        """Refused only for not being the kind of SQL asked for (not one expression, not one
        statement, does not parse): nothing in it was refused as such."""
        return bool(self.reasons) and all(r.code in WRONG_KIND for r in self.reasons)

    def summary(self) -> str:
        return "; ".join(r.message for r in self.reasons)


def _refuse(code: str, message: str) -> SqlVerdict:
    return SqlVerdict((SqlReason(code, message),))


# Bounds every SQL entry point checks before any parser sees the text: parsers and tree walks
# recurse, and 600 nested parentheses overflow Python's stack (a RecursionError is no answer).
MAX_SQL_CHARS = 100_000
MAX_SQL_DEPTH = 64
TOO_LONG = "sql_too_long"
TOO_DEEP = "sql_too_deep"


def bounded(sql: str) -> SqlVerdict | None:
    """A refusal when `sql` is too long or nests too deep for the parsers, else None."""
    if len(sql) > MAX_SQL_CHARS:
        return _refuse(
            TOO_LONG,
            f"the SQL is {len(sql):,} characters, over the limit of {MAX_SQL_CHARS:,}: "
            "write a shorter query (long IN lists belong in a table or a parameter)",
        )
    depth = deepest = 0
    quote: str | None = None
    for ch in sql:
        if quote is not None:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
    if deepest > MAX_SQL_DEPTH:
        return _refuse(
            TOO_DEEP,
            f"the SQL nests {deepest} levels of parentheses, over the limit of {MAX_SQL_DEPTH}: "
            "flatten the expression (CTEs name the intermediate steps)",
        )
    return None


# Functions whose result is as long as their second argument says (repeat('x', 1e9) is a
# gigabyte on the server and on the wire): that argument must be a literal within this bound.
_SIZED = frozenset({"repeat", "lpad", "rpad"})
MAX_BUILT_CHARS = 100_000


def _bounded_size(node: ast.FuncCall) -> bool:
    args = node.args or ()
    if len(args) < 2:
        return True
    size = args[1]
    value = getattr(size, "val", None) if isinstance(size, ast.A_Const) else None
    return isinstance(value, ast.Integer) and (value.ival or 0) <= MAX_BUILT_CHARS


def too_deep(where: str) -> SqlVerdict:
    """The refusal for a text the parser could not recurse through."""
    return _refuse(
        TOO_DEEP,
        f"the SQL is too deeply nested for the {where} parser: flatten the expression "
        "(CTEs name the intermediate steps)",
    )


def _parse(sql: str) -> tuple[ast.RawStmt, ...] | str:
    try:
        return tuple(pglast.parse_sql(sql))
    except ParseError as exc:
        return str(exc)


def _comments(sql: str) -> list[SqlReason]:
    tokens = scan(sql)  # the text parsed already, so the scanner accepts it
    kinds = {t.name for t in tokens if t.name in ("SQL_COMMENT", "C_COMMENT")}
    return [
        SqlReason(
            "comment",
            f"a comment (`{'--' if kind == 'SQL_COMMENT' else '/* */'}`) is not accepted: "
            "it can hide SQL or cut off what follows when the text is composed into a query; "
            "move the explanation into the unit's prose",
        )
        for kind in sorted(kinds)
    ]


def check_expression(sql: str) -> SqlVerdict:
    """A formula: exactly one composable PostgreSQL expression, without comments, subqueries
    or anything outside the accepted functions, operators and casts."""
    text = sql.strip()
    if not text:
        return _refuse("empty", "empty SQL: write the formula's expression")
    refused = bounded(text)
    if refused is not None:
        return refused
    try:
        return _check_expression(text)
    except RecursionError:
        return too_deep("PostgreSQL")


def _check_expression(text: str) -> SqlVerdict:
    if text.endswith(";"):
        return _refuse(
            "not_an_expression",
            "ends with `;`: a composable expression has no statement terminator; remove it",
        )
    parsed = _parse(f"SELECT {text}")
    if isinstance(parsed, str) or len(parsed) != 1:
        as_statement = _parse(text)
        if not isinstance(as_statement, str):
            kinds = ", ".join(type(s.stmt).__name__ for s in as_statement)
            return _refuse(
                "not_an_expression",
                f"a complete statement ({kinds}) is not a formula: a formula is one expression "
                "(a full documented query belongs in an `example` unit)",
            )
    if isinstance(parsed, str):
        return _refuse("parse_error", f"not a valid PostgreSQL expression: {parsed}")
    if len(parsed) != 1:
        return _refuse("statements", "more than one statement: a formula is exactly one expression")
    select = parsed[0].stmt
    assert isinstance(select, ast.SelectStmt)  # `SELECT …` parsed as one statement
    clauses = (
        "fromClause",
        "whereClause",
        "groupClause",
        "havingClause",
        "sortClause",
        "limitCount",
        "limitOffset",
        "windowClause",
        "intoClause",
        "distinctClause",
        "lockingClause",
        "withClause",
        "valuesLists",
    )
    used = [c for c in clauses if getattr(select, c, None)]
    if used:
        return _refuse(
            "not_an_expression",
            f"not a single expression: it carries query clauses ({', '.join(used)}); "
            "a full query belongs in an `example` unit",
        )
    if select.larg is not None:
        return _refuse(
            "not_an_expression",
            "a set operation (UNION, INTERSECT, EXCEPT) is not a single expression",
        )
    targets: tuple[Any, ...] = tuple(select.targetList or ())
    if len(targets) != 1:
        return _refuse(
            "not_an_expression",
            f"{len(targets)} expressions separated by commas: a formula is exactly one",
        )
    if targets[0].name:
        return _refuse(
            "not_an_expression",
            f"an alias (AS {targets[0].name}) is not part of a composable expression; remove it",
        )
    walker = _Walker(subqueries=False)
    walker.visit(targets[0].val)
    return SqlVerdict(tuple(_comments(text) + walker.unique()))


def check_read_only_query(sql: str) -> SqlVerdict:
    """An example's SQL (and the SQL a session will run): exactly one SELECT (WITH only over
    SELECTs), no SELECT INTO, no row locks, no comments, only the accepted functions,
    operators and casts, no system catalogs; subqueries are fine."""
    text = sql.strip()
    if not text:
        return _refuse("empty", "empty SQL: write one SELECT query")
    refused = bounded(text)
    if refused is not None:
        return refused
    try:
        return _check_query(text)
    except RecursionError:
        return too_deep("PostgreSQL")


def _check_query(text: str) -> SqlVerdict:
    parsed = _parse(text)
    if isinstance(parsed, str):
        return _refuse("parse_error", f"does not parse as PostgreSQL: {parsed}")
    if len(parsed) != 1:
        return _refuse(
            "statements",
            f"{len(parsed)} statements: write exactly one read-only SELECT query",
        )
    statement = parsed[0].stmt
    if not isinstance(statement, ast.SelectStmt):
        return _refuse(
            "not_select",
            f"a `{_leading_keywords(text)}` statement is not a read-only query: "
            "only one SELECT (or WITH … SELECT) is accepted",
        )
    walker = _Walker(subqueries=True)
    walker.visit(statement)
    return SqlVerdict(tuple(_comments(text) + walker.unique()))


def _leading_keywords(text: str) -> str:
    words: list[str] = []
    for token in scan(text):
        if token.kind == "NO_KEYWORD" or len(words) == 2:
            break
        words.append(text[token.start : token.end + 1].upper())
    return " ".join(words) or text.split()[0]


_LOCKS = {
    "LCS_FORKEYSHARE": "FOR KEY SHARE",
    "LCS_FORSHARE": "FOR SHARE",
    "LCS_FORNOKEYUPDATE": "FOR NO KEY UPDATE",
    "LCS_FORUPDATE": "FOR UPDATE",
}
_TIME_VALUES = re.compile(r"SVFOP_(CURRENT_DATE|CURRENT_TIME|CURRENT_TIMESTAMP|LOCAL)")
# Syntax-tree nodes that carry nothing to check themselves (their children are visited).
_NEUTRAL = frozenset(
    {
        "A_Const", "Integer", "Float", "Boolean", "String", "BitString", "A_Star", "ResTarget",
        "BoolExpr", "NullTest", "BooleanTest", "CaseExpr", "CaseWhen", "CoalesceExpr",
        "MinMaxExpr", "CollateClause", "A_ArrayExpr", "A_Indirection", "A_Indices", "RowExpr",
        "WindowDef", "SortBy", "GroupingFunc", "TypeName",
    }
)  # fmt: skip
_QUERY_ONLY = frozenset(
    {
        "SelectStmt", "Alias", "JoinExpr", "RangeSubselect", "RangeFunction", "WithClause",
        "CommonTableExpr", "GroupingSet", "RangeTableSample", "ColumnDef", "CTESearchClause",
        "CTECycleClause",
    }
)  # fmt: skip
_CONSTRUCTS = {
    "XmlExpr": "an XML construct (xmlelement, xmlparse, …)",
    "XmlSerialize": "an XML construct (XMLSERIALIZE)",
    "SetToDefault": "DEFAULT",
    "MultiAssignRef": "a multiple assignment",
    "RangeTableFunc": "XMLTABLE",
}


def _strings(nodes: tuple[Any, ...] | None) -> list[str]:
    """The names of a qualified name (`String` nodes; `*` and subscripts left out)."""
    return [n.sval for n in nodes or () if isinstance(n, ast.String) and n.sval is not None]


class _Walker:
    """Visits every node of an expression or a query and collects what is refused."""

    def __init__(self, *, subqueries: bool) -> None:
        self.subqueries = subqueries
        self.reasons: list[SqlReason] = []

    def unique(self) -> list[SqlReason]:
        return list(dict.fromkeys(self.reasons))

    def refuse(self, code: str, message: str) -> None:
        self.reasons.append(SqlReason(code, message))

    def visit(self, node: object) -> None:
        if isinstance(node, tuple | list):
            for item in node:
                self.visit(item)
        elif isinstance(node, ast.Node) and self.accepts(node):
            for attribute in node:  # a node iterates over its attribute names
                self.visit(getattr(node, attribute))

    def accepts(self, node: ast.Node) -> bool:
        """Check one node; False when its children are not to be visited."""
        kind = type(node).__name__
        if kind in _NEUTRAL:
            return True
        if kind in _QUERY_ONLY and not self.subqueries:
            self.refuse("not_an_expression", f"`{kind}` belongs to a query, not to a formula")
            return False
        check = getattr(self, f"_{kind}", None)
        if check is not None:
            return bool(check(node))
        if kind in _QUERY_ONLY:
            return True
        if kind.startswith("Json"):
            self.refuse(
                "construct_not_allowed",
                "a SQL/JSON construct (JSON_OBJECT, JSON_VALUE, …) is not accepted: use "
                "json_build_object, ->, ->> or json_extract_path_text",
            )
            return False
        label = _CONSTRUCTS.get(kind, f"`{kind}`")
        self.refuse(
            "construct_not_allowed",
            f"{label} is not accepted in Thoth's SQL: rewrite it with the accepted functions "
            f"and operators ({DOCS})",
        )
        return False

    # -- one method per node kind that needs a check --------------------------------------

    def _FuncCall(self, node: ast.FuncCall) -> bool:
        name = policy.unqualified(_strings(node.funcname))
        if name in _SIZED and not _bounded_size(node):
            self.refuse(
                "unbounded_value",
                f"`{name}` builds a value as long as its second argument: it must be a number "
                f"written in the query, at most {MAX_BUILT_CHARS:,} (one statement must not "
                "allocate gigabytes)",
            )
            return True
        if name in policy.ALLOWED_FUNCTIONS:
            return True
        why = policy.refused_because(name)
        if why is not None:
            self.refuse(
                "function_refused",
                f"function `{name}` is refused: it {why}; remove it — Thoth never runs it",
            )
        else:
            defined = " (a function defined in the database can do anything)" if "." in name else ""
            self.refuse(
                "function_not_allowed",
                f"function `{name}` is not on the list of functions Thoth accepts{defined}: use "
                f"an accepted one ({DOCS}), or ask for it to be added if it only reads and "
                "gives the same result for the same input",
            )
        return True  # its arguments are checked too

    def _A_Expr(self, node: ast.A_Expr) -> bool:
        if node.kind is not None and "BETWEEN" in node.kind.name:
            return True
        operator = policy.unqualified(_strings(node.name))
        if operator in policy.OPERATORS:
            return True
        self.refuse(
            "operator_not_allowed",
            f"operator `{operator}` is not accepted: {policy.OPERATOR_HINT}",
        )
        return True  # its operands are checked too

    def _TypeCast(self, node: ast.TypeCast) -> bool:
        names = node.typeName.names if node.typeName is not None else None
        type_name = policy.unqualified(_strings(names))
        if type_name in policy.CATALOG_TYPES:
            self.refuse(
                "system_catalog",
                f"a cast to `{type_name}` looks objects up in the system catalog: cast to a "
                "data type (numeric, text, date, …) instead",
            )
            return False
        return True

    def _SQLValueFunction(self, node: ast.SQLValueFunction) -> bool:
        op = node.op.name if node.op is not None else ""
        if _TIME_VALUES.match(op):
            return True
        name = op.removeprefix("SVFOP_")
        self.refuse(
            "function_refused",
            f"`{name}` is refused: it {policy.SERVER_INFORMATION}; Thoth's SQL does not "
            "depend on who runs it — remove it",
        )
        return False

    def _ColumnRef(self, node: ast.ColumnRef) -> bool:
        fields = _strings(node.fields)
        if len(fields) >= 3 and policy.is_catalog_relation(fields[-3], fields[-2]):
            self._catalog(".".join(fields[-3:-1]))
            return False
        return True

    def _RangeVar(self, node: ast.RangeVar) -> bool:
        if policy.is_catalog_relation(node.schemaname, node.relname):
            name = ".".join(p for p in (node.schemaname, node.relname) if p is not None)
            self._catalog(name)
            return False
        return True

    def _catalog(self, name: str) -> None:
        self.refuse(
            "system_catalog",
            f"`{name}` is a system catalog (pg_catalog, information_schema, pg_*): Thoth's SQL "
            "reads the warehouse's own tables only",
        )

    def _ParamRef(self, node: ast.ParamRef) -> bool:
        self.refuse(
            "parameter",
            f"a query parameter (`${node.number}`) is not accepted: write the value in the SQL",
        )
        return False

    def _SubLink(self, node: ast.SubLink) -> bool:
        if self.subqueries:
            return True
        self.refuse(
            "subquery",
            "a subquery (a SELECT inside the formula) is not accepted: a formula is computed "
            "from the row's columns; write the full query as an `example` unit",
        )
        return False

    def _SelectStmt(self, node: ast.SelectStmt) -> bool:
        if node.intoClause is not None:
            self.refuse(
                "select_into",
                "SELECT … INTO creates a table: a read-only query returns rows; remove INTO",
            )
        for clause in node.lockingClause or ():
            strength = _LOCKS.get(clause.strength.name, clause.strength.name)
            self.refuse(
                "row_locking",
                f"{strength} locks the rows it reads: a read-only query takes no row locks; "
                f"remove {strength}",
            )
        return True

    def _CommonTableExpr(self, node: ast.CommonTableExpr) -> bool:
        if isinstance(node.ctequery, ast.SelectStmt):
            return True
        verb = type(node.ctequery).__name__.removesuffix("Stmt").upper()
        self.refuse(
            "data_modifying_cte",
            f"the WITH query `{node.ctename}` is a data-modifying {verb}: every WITH query "
            "must be a SELECT",
        )
        return False
