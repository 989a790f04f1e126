"""Where each output column of a free query comes from: the source columns its value is
computed from, followed through aliases, CTEs, subqueries and set operations (sqlglot's
scopes). The protection of an output follows its lineage, so `SELECT codice_paziente AS
importo` is as protected as `codice_paziente`.

An output whose lineage cannot be followed (a star over several sources, a source that is
not in the query) is *untraced*: the caller treats it as the strictest kind in the query and
says so.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, build_scope

from thoth.config import ColumnKind
from thoth.privacy.columns import classify, reconcile, strictest


@dataclass(frozen=True)
class SourceColumn:
    table: str  # the table or view as the query names it, lower case (schema-qualified)
    column: str  # lower case

    def __str__(self) -> str:
        return f"{self.table}.{self.column}"


@dataclass(frozen=True)
class OutputLineage:
    name: str  # the output column as the query names it
    sources: frozenset[SourceColumn]
    traced: bool  # False: the sources are not all known (default deny)
    counted: bool = False  # a count: says how many, never which value


class _Untraced(Exception):
    pass


def output_lineage(sql: str, dialect: str) -> list[OutputLineage] | None:
    """The lineage of each output column of `sql`, in order; None when the query cannot be
    parsed or is not one SELECT (the caller then treats every output as untraced)."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        tree = sqlglot.parse_one(sql, read="postgres" if dialect == "postgresql" else dialect)
        root = build_scope(tree)
    except (SqlglotError, RecursionError, ValueError):
        return None
    finally:
        logger.setLevel(level)
    if root is None:
        return None
    try:
        return _scope_outputs(root)
    except (_Untraced, RecursionError):
        return None


def _scope_outputs(scope: Scope) -> list[OutputLineage]:
    if scope.set_operation_scopes:
        branches = [_scope_outputs(s) for s in scope.set_operation_scopes]
        first = branches[0]
        merged = []
        for i, out in enumerate(first):
            at = [b[i] for b in branches if i < len(b)]
            merged.append(
                OutputLineage(
                    out.name,
                    frozenset().union(*(o.sources for o in at)),
                    all(o.traced for o in at) and len(at) == len(branches),
                )
            )
        return merged
    select = scope.expression
    if not isinstance(select, exp.Select):
        raise _Untraced
    outputs = []
    for projection in select.selects:
        if isinstance(projection, exp.Star) or (
            isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
        ):
            outputs.append(OutputLineage("*", _star_sources(scope), False))
            continue
        try:
            sources = frozenset(_trace(scope, projection))
            traced = True
        except _Untraced:
            sources, traced = _star_sources(scope), False
        inner = projection.unalias() if isinstance(projection, exp.Alias) else projection
        counted = isinstance(inner, exp.Count)
        outputs.append(OutputLineage(projection.alias_or_name, sources, traced, counted))
    return outputs


def _trace(scope: Scope, node: exp.Expr) -> Iterator[SourceColumn]:
    """The source columns a projection (or any expression of `scope`) is computed from."""
    for column in node.find_all(exp.Column):
        if isinstance(column.this, exp.Star):
            raise _Untraced
        owner = _owning_scope(scope, column)
        yield from _resolve(owner, column)


def _owning_scope(scope: Scope, column: exp.Column) -> Scope:
    """The scope whose SELECT the column belongs to (a scalar subquery has its own)."""
    select = column.find_ancestor(exp.Select)
    for inner in scope.traverse():
        if inner.expression is select:
            return inner
    return scope


def _resolve(scope: Scope, column: exp.Column) -> Iterator[SourceColumn]:
    name = column.name.lower()
    if column.table:
        source = _lookup(scope, column.table)
        if source is None:
            raise _Untraced
        yield from _from_source(source, name)
        return
    candidates = list(scope.sources.values())
    if not candidates:
        candidates = list((scope.parent.sources if scope.parent else {}).values())
    if not candidates:
        # A projection alias referred to by name ("SELECT a AS b, b + 1"), or a constant.
        if isinstance(scope.expression, exp.Select):
            for projection in scope.expression.selects:
                if projection.alias_or_name.lower() == name and projection is not column:
                    yield from _trace(scope, projection.unalias())
                    return
        raise _Untraced
    found = False
    for source in candidates:
        if isinstance(source, Scope) and not _projects(source, name):
            continue
        found = True
        yield from _from_source(source, name)
    if not found:
        raise _Untraced


def _lookup(scope: Scope | None, alias: str) -> exp.Table | Scope | None:
    while scope is not None:
        source = scope.sources.get(alias)
        if source is not None:
            return source
        scope = scope.parent
    return None


def _projects(scope: Scope, name: str) -> bool:
    outputs = _scope_outputs(scope)
    return any(o.name.lower() == name or o.name == "*" for o in outputs)


def _from_source(source: exp.Table | Scope, name: str) -> Iterator[SourceColumn]:
    if isinstance(source, exp.Table):
        yield SourceColumn(_table_name(source), name)
        return
    outputs = _scope_outputs(source)
    matches = [o for o in outputs if o.name.lower() == name]
    if not matches:
        starred = [o for o in outputs if o.name == "*"]
        if not starred:
            raise _Untraced
        for star in starred:  # a column read through a star: its name, in each table
            yield from (SourceColumn(s.table, name) for s in star.sources)
        return
    for out in matches:
        if not out.traced:
            raise _Untraced
        yield from out.sources


def _star_sources(scope: Scope) -> frozenset[SourceColumn]:
    """A star names no column: its sources are the tables it reads, column `*`."""
    tables: set[SourceColumn] = set()
    for source in scope.sources.values():
        if isinstance(source, exp.Table):
            tables.add(SourceColumn(_table_name(source), "*"))
        else:
            for out in _scope_outputs(source):
                tables |= {SourceColumn(s.table, "*") for s in out.sources}
    return frozenset(tables)


def _table_name(table: exp.Table) -> str:
    return ".".join(p for p in (table.db, table.name) if p).lower()


# -- kinds ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutputKind:
    name: str
    kind: ColumnKind
    why: str  # for the diagnostics: which sources decided, or that it was untraced


def output_kinds(
    columns: Sequence[str],
    sql: str,
    dialect: str,
    reviewed: Mapping[str, ColumnKind],
) -> list[OutputKind]:
    """The kind of each result column of a free query, from its lineage: the strictest of
    its source columns' kinds (reviewed kinds by `table.column` or `column`, reconciled with
    what the source's name proposes) and of its own name. An untraced output takes the
    strictest kind in the query. `columns`: the result's column names, as the database gave
    them (a star is resolved by name when it reads one source)."""
    lineage = output_lineage(sql, dialect)

    def source_kind(source: SourceColumn) -> ColumnKind:
        if source.column == "*":
            return "unknown"
        table = source.table.rsplit(".", 1)[-1]
        review = (
            reviewed.get(f"{source.table}.{source.column}")
            or reviewed.get(f"{table}.{source.column}")
            or reviewed.get(source.column)
        )
        return reconcile(classify(source.column, {}), review)

    if lineage is None or len(lineage) != len(columns):
        lineage = _by_name(columns, lineage)
    # What an untraced output is taken for: the strictest kind of every source the query's
    # outputs read (a star's unnamed columns are unknown), nothing known being unknown.
    ceiling = strictest(source_kind(s) for out in lineage for s in out.sources)
    kinds = []
    for name, out in zip(columns, lineage, strict=True):
        own = classify(name, {})  # [privacy] columns globs: protect_rows applies them
        if not out.traced:
            kind = strictest((ceiling, own)) if own != "unknown" else ceiling
            kinds.append(
                OutputKind(name, kind, f"untraced: treated as {kind}, the strictest in the query")
            )
            continue
        if out.counted:
            kinds.append(OutputKind(name, "quantity", "a count"))
            continue
        inputs = {str(s): source_kind(s) for s in sorted(out.sources, key=str)}
        if not inputs:  # a constant, or count(*): what its name says
            kinds.append(OutputKind(name, own, "no source column"))
            continue
        kind = strictest([*inputs.values(), *([own] if own != "unknown" else [])])
        why = ", ".join(f"{s} {k}" for s, k in inputs.items())
        kinds.append(OutputKind(name, kind, f"from {why}"))
    return kinds


def _by_name(columns: Sequence[str], lineage: list[OutputLineage] | None) -> list[OutputLineage]:
    """The lineage by result name when the projections do not line up with the result (a star
    expanded by the database): a star over one table gives each column its own name there."""
    stars = [o for o in lineage or [] if o.name == "*"]
    named = {o.name.lower(): o for o in lineage or [] if o.name != "*"}
    tables = {s.table for o in stars for s in o.sources}
    out = []
    for name in columns:
        known = named.get(name.lower())
        if known is not None:
            out.append(known)
        elif lineage is not None and len(tables) == 1:
            source = SourceColumn(next(iter(tables)), name.lower())
            out.append(OutputLineage(name, frozenset({source}), True))
        else:
            out.append(OutputLineage(name, frozenset(), False))
    return out


def reviewed_sources(
    queries: Sequence[tuple[str, Mapping[str, ColumnKind]]], dialect: str
) -> dict[str, ColumnKind]:
    """The kinds reviewers gave source columns, read back from reviewed queries: each result
    column's kind goes to the source columns its lineage reaches (`table.column`), the
    strictest when several queries reach one. `queries`: (SQL, result column -> kind)."""
    found: dict[str, ColumnKind] = {}
    for sql, kinds in queries:
        for out in output_lineage(sql, dialect) or []:
            kind = kinds.get(out.name)
            if kind is None or not out.traced or out.counted:
                continue
            for source in out.sources:
                key = str(source)
                found[key] = strictest((found[key], kind)) if key in found else kind
    return found
