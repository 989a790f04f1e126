"""What a refresh copies: the store's views file (`[analytics.refresh] views`) read with sqlglot,
each view's tables and columns resolved against the source's own columns. Only those tables,
and of them only those columns, reach the copy: a column no view reads (a tax code, a password
hash) is never copied at all."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, SqlglotError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope
from sqlglot.schema import MappingSchema

from thoth.database import Dialect
from thoth.errors import ThothError

_SQLGLOT = {"sqlite": "sqlite", "postgresql": "postgres"}
# The table the refresh writes the data date into (the view over it is the settings' name).
DATA_DATE_TABLE = "thoth_data_date"


class PlanError(ThothError):
    code = "refresh_views_invalid"


@dataclass(frozen=True)
class ViewPlan:
    views: tuple[str, ...]  # the views of the file, in order
    tables: dict[str, tuple[str, ...]]  # source table -> the columns the views read, in order
    sql: str  # the file as written: executed as it is, never re-emitted


def read_plan(
    text: str,
    where: str,
    dialect: Dialect,
    source: Mapping[str, Mapping[str, str]],
    reserved: Mapping[str, Mapping[str, str]],
) -> ViewPlan:
    """The views of `text` against `source` (table -> column -> type, names as stored) and the
    refresh's own relations (`reserved`, same shape). Every
    statement must be one CREATE VIEW with an unqualified name; every relation it reads is a
    source table or an earlier view; every column resolves to one table."""
    try:
        statements = [s for s in sqlglot.parse(text, read=_SQLGLOT[dialect]) if s is not None]
    except SqlglotError as exc:
        raise PlanError(
            f"{where}: cannot be parsed ({' '.join(str(exc).split())[:300]}) -> write one "
            "CREATE VIEW name AS SELECT ... per statement"
        ) from exc
    if not statements:
        raise PlanError(f"{where}: no view -> write the store's views there, one CREATE VIEW each")
    # Names are compared as the engine folds them: PostgreSQL keeps a quoted name's case and
    # lower-cases an unquoted one (so the source's stored names are matched exactly); SQLite
    # ignores case. Every name of the file is folded the engine's way (normalize_identifiers),
    # every stored name by `fold`, and the columns copied are the stored names.
    fold = _folder(dialect)
    stored = {fold(t): t for t in source}
    stored_columns = {(fold(t), fold(c)): c for t, cols in source.items() for c in cols}
    folded_source = {fold(t): {fold(c): ty for c, ty in cols.items()} for t, cols in source.items()}
    folded_reserved = {fold(t): dict(cols) for t, cols in reserved.items()}
    views: list[str] = []
    schema: dict[str, object] = {**folded_source, **folded_reserved}
    used: dict[str, set[str]] = {}
    for index, raw in enumerate(statements, 1):
        statement = normalize_identifiers(raw, dialect=_SQLGLOT[dialect])
        name = _view_name(statement, where, index)
        if name in views or name in folded_source or name in folded_reserved:
            raise PlanError(
                f"{where}: statement {index} creates {name}, a name already taken (a view of "
                f"the file, a source table, or the refresh's own {', '.join(sorted(reserved))})"
            )
        select = statement.expression
        ctes = {cte.alias_or_name for cte in select.find_all(exp.CTE)}
        for table in select.find_all(exp.Table):
            if table.db:
                raise PlanError(
                    f"{where}: view {name} reads {table.db}.{table.name}: names are unqualified "
                    "(the refresh builds them in its staging schema or file)"
                )
            if table.name not in ctes:
                _read(table.name, name, where, views, folded_reserved, folded_source, used)
        try:
            qualified = qualify(
                select.copy(),
                schema=MappingSchema(schema, dialect=_SQLGLOT[dialect], normalize=False),
                dialect=_SQLGLOT[dialect],
                validate_qualify_columns=True,
                quote_identifiers=False,
            )
        except (OptimizeError, SqlglotError) as exc:
            raise PlanError(
                f"{where}: view {name}: {' '.join(str(exc).split())[:300]} -> every table must "
                "be a source table or an earlier view, every column one of its columns"
            ) from exc
        for scope in traverse_scope(qualified):
            for column in scope.columns:
                src = scope.sources.get(column.table)
                if isinstance(src, exp.Table) and src.name in folded_source:
                    used[src.name].add(stored_columns[(src.name, column.name)])
        schema[name] = {c: "text" for c in qualified.named_selects}
        views.append(name)
    tables = {
        stored[table]: tuple(c for c in source[stored[table]] if c in used[table])
        for table in sorted(used)
    }
    return ViewPlan(views=tuple(views), tables=tables, sql=text)


def _folder(dialect: Dialect) -> Callable[[str], str]:
    """A stored name as the engine compares it: exact on PostgreSQL (a mixed-case name is
    stored quoted and read quoted), case-insensitive on SQLite."""
    if dialect == "sqlite":
        return str.lower
    return lambda name: name


def _view_name(statement: exp.Expr, where: str, index: int) -> str:
    if not (
        isinstance(statement, exp.Create)
        and str(statement.kind).upper() == "VIEW"
        and isinstance(statement.this, exp.Table)
        and isinstance(statement.expression, exp.Query)
    ):
        shown = " ".join(statement.sql()[:80].split())
        raise PlanError(
            f"{where}: statement {index} is not a CREATE VIEW ({shown}) -> the views file holds "
            "views only; tables are copied from the source"
        )
    if statement.this.db:
        raise PlanError(
            f"{where}: statement {index} names {statement.this.db}.{statement.this.name}: view "
            "names are unqualified (the refresh builds them in its staging schema or file)"
        )
    return statement.this.name


def _read(
    table: str,
    view: str,
    where: str,
    views: list[str],
    reserved: Mapping[str, object],
    source: Mapping[str, object],
    used: dict[str, set[str]],
) -> None:
    if table in source:
        used.setdefault(table, set())
    elif table not in views and table not in reserved:
        raise PlanError(
            f"{where}: view {view} reads {table}, which is neither a table of the source nor "
            "an earlier view -> fix the view or [analytics.refresh] source_schema"
        )


def reserved_relations(data_date_view: str) -> dict[str, dict[str, str]]:
    """The relations the refresh itself writes in every copy (a view of the file may read
    them)."""
    return {
        DATA_DATE_TABLE: {"data_date": "text", "refreshed_at": "text", "source": "text"},
        data_date_view: {"data_date": "text"},
    }
