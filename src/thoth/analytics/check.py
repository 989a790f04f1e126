"""`tht analytics check`: every catalog entry is held to what the answer path relies on.

For each file: it loads (catalog.py: keys, types, defaults, bounds); its SQL is one read-only
query in the store's dialect; it reads only views of the store's schemas (every relation
qualified `schema.view`; a CTE may not hide a table); it uses every declared parameter and no
other; the store's own EXPLAIN accepts it with typed sample values, on the read-only,
views-only connection; it returns exactly the columns `result.columns` declares (the
pseudonymiser masks what a query does not declare); an enum's `values_from` is a column of a
view, and its default and synonyms name values the column holds. Every problem names the file
and the field."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from thoth.analytics.catalog import Catalog, CatalogEntry, CatalogQuery, Parameter, coerce
from thoth.analytics.measure import agrees, measure_groups
from thoth.analytics.store import AnalyticsError, AnalyticsStore
from thoth.database import Dialect, ReadOnlyDatabase, SchemaSnapshot, StatementRefused
from thoth.database import check_statement as check_read_only
from thoth.database.params import ParameterSyntaxError, parameter_names, rewrite
from thoth.errors import Problem
from thoth.sqlcheck import bounded, too_deep

_SQLGLOT = {"sqlite": "sqlite", "postgresql": "postgres"}


@dataclass
class CheckReport:
    files: int
    queries: list[str] = field(default_factory=list)  # ids of the entries that passed
    problems: list[Problem] = field(default_factory=list)
    # What serves but not as the reviewer may think (an enumeration beyond the value cap).
    warnings: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "files": self.files,
            "passed": list(self.queries),
            "problems": [p.as_dict() for p in self.problems],
            "warnings": [p.as_dict() for p in self.warnings],
        }


def sample_value(param: Parameter) -> object:
    """A typed value for EXPLAIN: the default, else the lower bound, else a plain one."""
    if param.default is not None:
        return coerce(param, param.default)
    if param.min is not None:
        return coerce(param, param.min)
    return {
        "integer": 1,
        "decimal": Decimal("1"),
        "year": date.today().year,
        "month": 1,
        "quarter": 1,
        "date": date.today(),
    }.get(param.type, (param.values or ["x"])[0])


def relations(sql: str, dialect: Dialect) -> tuple[list[tuple[str | None, str]], str | None]:
    """The relations a query reads (schema or None, name), CTE names left out; or the parse
    error."""
    text = rewrite(sql, dialect, lambda _: "NULL")
    refused = bounded(text)
    if refused is not None:
        return [], refused.summary()
    try:
        tree = sqlglot.parse_one(text, read=_SQLGLOT[dialect])
    except SqlglotError as exc:
        return [], " ".join(str(exc).split())
    except RecursionError:
        return [], too_deep("SQL").summary()
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    found: list[tuple[str | None, str]] = []
    for table in tree.find_all(exp.Table):
        name = table.name
        if not name:
            continue  # a table function
        schema = table.db or None
        if schema is None and name.lower() in ctes:
            continue
        found.append((schema, name))
    return list(dict.fromkeys(found)), None


def check_catalog(
    catalog: Catalog,
    db: ReadOnlyDatabase,
    schemas: Sequence[str],
    snapshot: SchemaSnapshot | None = None,
    max_enum_values: int = 1000,
) -> CheckReport:
    """Check every entry against the open store (`db`, read-only and views-only)."""
    report = CheckReport(files=catalog.files, problems=list(catalog.problems))
    snap = snapshot or db.introspect(sample_values=0, may_sample=lambda *_: False)
    for entry in catalog.entries:
        report.warnings += enum_cap_warnings(entry, db, max_enum_values)
        problems = check_entry(entry, db, schemas, snap)
        if problems:
            report.problems += problems
        else:
            report.queries.append(entry.query.id)
    return report


def enum_cap_warnings(entry: CatalogEntry, db: ReadOnlyDatabase, cap: int) -> list[Problem]:
    """An enumeration whose `values_from` column holds more than `cap` distinct values: only
    the first `cap` (in order) are matched in questions. Served, but said."""
    warnings: list[Problem] = []
    for name, param in entry.query.parameters.items():
        if param.type != "enum" or not param.values_from:
            continue
        schema, view, column = param.values_from.split(".")
        sql = f'SELECT DISTINCT "{column}" FROM "{schema}"."{view}" WHERE "{column}" IS NOT NULL'
        try:
            result = db.run(sql, limit=cap)
        except StatementRefused:
            continue  # check_entry names it
        if result.truncated:
            warnings.append(
                Problem(
                    entry.path,
                    f"{param.values_from} holds more than {cap} distinct values: only the first "
                    f"{cap} (in order) are matched in questions",
                    field=f"parameters.{name}.values_from",
                    code="enum_capped",
                    hint="raise [analytics] max_enum_values, or read the values from a narrower "
                    "view",
                )
            )
    return warnings


_FIGURE_KINDS = frozenset({"quantity", "amount"})


def measure_problems(query: CatalogQuery) -> list[tuple[str, str, str]]:
    """The query's `measure` against its result columns and its examples: declared, each
    measure something the columns can hold, and no example asking a measure the query does not
    compute (the query's own gate would refuse that example at every ask). Each problem is
    (message, code, field)."""
    if not query.measures:
        return [
            (
                "no measure declared: say what the query computes (count, share, average, "
                "sum, minimum, maximum, ratio, list, trend), so that a question asking another "
                "measure is never answered with its number",
                "measure_missing",
                "measure",
            )
        ]
    columns = query.result.columns.values()
    found: list[tuple[str, str, str]] = []
    declared = ", ".join(sorted(query.measures))
    for i, example in enumerate(query.examples):
        groups = measure_groups(example)
        if not agrees(groups, query.measures):
            asked = ", ".join(sorted(set().union(*groups)))
            found.append(
                (
                    f"example {example!r} asks {asked}; the query declares {declared}: a "
                    "question like it would never be answered by this query — add the measure "
                    "to `measure` if the result holds it, or reword the example",
                    "example_measure",
                    f"examples[{i}]",
                )
            )
    figures = [m for m in sorted(query.measures) if m not in ("list", "trend")]
    if figures and not any(c.kind in _FIGURE_KINDS for c in columns):
        found.append(
            (
                f"measure {', '.join(figures)} needs a result column of kind quantity or "
                "amount; none is declared",
                "measure_columns",
                "measure",
            )
        )
    if "list" in query.measures and query.result.shape != "table":
        found.append(("measure list needs result.shape table", "measure_columns", "measure"))
    if "trend" in query.measures and not any(c.kind == "date" for c in columns):
        found.append(
            ("measure trend needs a result column of kind date", "measure_columns", "measure")
        )
    return found


def data_date_problems(store: AnalyticsStore) -> list[Problem]:
    """`data_date_sql` run exactly as the answer path runs it (the store's own connection,
    role and search path): a problem naming the query and what came back, or none."""
    try:
        store.data_date()
    except AnalyticsError as exc:
        return [
            Problem(
                "thoth.toml",
                str(exc),
                field="analytics.data_date_sql",
                code=exc.code,
                hint="it must return one row with one date or timestamp: docs/analytics.md",
            )
        ]
    return []


def labels_problems(store: AnalyticsStore) -> list[Problem]:
    """A store without labels serves no number (labels fail closed): said at check and verify,
    not discovered when every numeric answer takes the text path."""
    if store.settings.labels:
        return []
    return [
        Problem(
            "thoth.toml",
            "the analytics store has no labels: no number is served to anyone",
            field="analytics.labels",
            code="analytics_unlabelled",
            hint='set `labels = ["internal"]` (the labels every figure carries) under [analytics]',
        )
    ]


def query_label_problems(catalog: Catalog, vocabulary: Sequence[str]) -> list[Problem]:
    """A query's own labels outside `[answers] labels`: no request could ever carry them."""
    problems = []
    for entry in catalog.entries:
        unknown = sorted(set(entry.query.labels) - set(vocabulary))
        if unknown:
            problems.append(
                Problem(
                    entry.path,
                    f"labels {', '.join(unknown)} are not in [answers] labels "
                    f"({', '.join(sorted(vocabulary))}): its figures could never be served",
                    field="labels",
                    code="unknown_label",
                )
            )
    return problems


def check_entry(
    entry: CatalogEntry, db: ReadOnlyDatabase, schemas: Sequence[str], snap: SchemaSnapshot
) -> list[Problem]:
    query, path, dialect = entry.query, entry.path, db.dialect
    problems: list[Problem] = []

    def problem(message: str, where: str, code: str, hint: str | None = None) -> None:
        problems.append(Problem(path, message, field=where, code=code, hint=hint))

    for message, code, where in measure_problems(query):
        problem(message, where, code, 'docs/analytics.md, "What a query measures"')
    try:
        used = parameter_names(query.sql, dialect)
    except ParameterSyntaxError as exc:
        problem(str(exc), "sql", "parse_error")
        return problems
    # One read-only query, by the dialect's own parser (PostgreSQL's parser rejects `:name`:
    # it reads NULL in each parameter's place, which parses wherever a value does).
    shown = query.sql if dialect == "sqlite" else rewrite(query.sql, dialect, lambda _: "NULL")
    for reason in check_read_only(shown, dialect).reasons:
        problem(reason.message, "sql", reason.code)
    if problems:
        return problems
    read, error = relations(query.sql, dialect)
    if error:
        problem(f"cannot be parsed: {error}", "sql", "parse_error")
        return problems
    for schema, name in read:
        shown_name = f"{schema}.{name}" if schema else name
        table = snap.table(schema, name) if schema else None
        if schema is None:
            problem(
                f"{name} is not qualified",
                "sql",
                "unqualified",
                f"write schema.view with a schema of the store ({', '.join(schemas)})",
            )
        elif schema not in schemas:
            problem(
                f"{shown_name} is outside the store's schemas ({', '.join(schemas)})",
                "sql",
                "schema_not_allowed",
            )
        elif table is None:
            problem(f"{shown_name} does not exist in the store", "sql", "unknown_view")
        elif table.kind != "view":
            problem(
                f"{shown_name} is a table: catalog queries read views only",
                "sql",
                "not_a_view",
                "read it through a view that holds its business meaning",
            )
    declared = set(query.parameters)
    for name in used:
        if name not in declared:
            problem(f":{name} is used but not declared", f"parameters.{name}", "undeclared")
    for name in sorted(declared - set(used)):
        problem(
            f"{name} is declared but the SQL does not use :{name}", f"parameters.{name}", "unused"
        )
    problems += _check_enums(entry, db, schemas, snap)
    if problems:
        return problems
    samples = {name: sample_value(p) for name, p in query.parameters.items()}
    bound = {
        k: v.isoformat() if isinstance(v, date) and dialect == "sqlite" else v
        for k, v in samples.items()
    }
    bound = {
        k: float(v) if isinstance(v, Decimal) and dialect == "sqlite" else v
        for k, v in bound.items()
    }
    try:
        db.explain(query.sql, bound)
        result = db.run(query.sql, limit=1, params=bound)
    except StatementRefused as exc:
        problem(
            f"the store refused it with sample values {samples}: {exc.reason}",
            "sql",
            exc.code,
            _untyped_hint(query, exc.reason) if dialect == "postgresql" else None,
        )
        return problems
    problems += _check_columns(path, query, result.columns)
    return problems


# PostgreSQL's type of each parameter type, for the cast an untyped parameter needs.
_PG_TYPES = {
    "integer": "integer",
    "year": "integer",
    "month": "integer",
    "quarter": "integer",
    "decimal": "numeric",
    "date": "date",
    "enum": "text",
    "text": "text",
}
_UNTYPED = re.compile(r"could not determine data type of parameter \$(\d+)")


def _untyped_hint(query: CatalogQuery, reason: str) -> str | None:
    """The cast to write when PostgreSQL could not type a parameter: one compared only with
    NULL (`:x IS NULL OR col = :x`, the optional filter SQLite accepts as it is). psycopg
    numbers the named parameters in the order they first appear."""
    found = _UNTYPED.search(reason)
    names = parameter_names(query.sql, "postgresql")
    if found is None or not 0 < int(found[1]) <= len(names):
        return None
    name = names[int(found[1]) - 1]
    param = query.parameters.get(name)
    pg_type = _PG_TYPES.get(param.type, "text") if param else "text"
    return (
        f"PostgreSQL cannot type :{name} where it is only compared with NULL: write "
        f"CAST(:{name} AS {pg_type}) IS NULL"
    )


def _check_columns(path: str, query: CatalogQuery, columns: Sequence[str]) -> list[Problem]:
    declared = list(query.result.columns)
    if list(columns) == declared:
        return []
    unnamed = [c for c in columns if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", c)]
    if unnamed:
        # `count(*)` with no alias: its column name is the expression, which no declaration
        # can match reliably (each engine spells it its own way).
        return [
            Problem(
                path,
                f"an aggregate or expression has no name: {', '.join(unnamed)}",
                field="result.columns",
                code="unnamed_column",
                hint="name it with AS (count(*) AS ricoveri) and declare that name",
            )
        ]
    missing = [c for c in columns if c not in declared]
    extra = [c for c in declared if c not in columns]
    parts = []
    if missing:
        parts.append(f"returns undeclared {', '.join(missing)}")
    if extra:
        parts.append(f"declares {', '.join(extra)} it does not return")
    if not parts:
        parts.append(f"returns {', '.join(columns)} in another order")
    return [
        Problem(
            path,
            "; ".join(parts),
            field="result.columns",
            code="columns",
            hint="declare every column the SQL returns, in its order, with its kind",
        )
    ]


def _check_enums(
    entry: CatalogEntry, db: ReadOnlyDatabase, schemas: Sequence[str], snap: SchemaSnapshot
) -> list[Problem]:
    problems: list[Problem] = []
    for name, param in entry.query.parameters.items():
        if param.values_from is None:
            continue
        where = f"parameters.{name}.values_from"
        schema, view, column = param.values_from.split(".")
        table = snap.table(schema, view)
        if schema not in schemas or table is None or table.kind != "view":
            problems.append(
                Problem(
                    entry.path,
                    f"{schema}.{view} is not a view of the store",
                    field=where,
                    code="unknown_view",
                )
            )
            continue
        if column not in {c.name for c in table.columns}:
            problems.append(
                Problem(
                    entry.path,
                    f"{schema}.{view} has no column {column}",
                    field=where,
                    code="unknown_column",
                )
            )
            continue
        wanted = ([str(param.default)] if param.default is not None else []) + list(param.synonyms)
        sql = (
            f'SELECT DISTINCT "{column}" FROM "{schema}"."{view}" WHERE "{column}" IS NOT NULL '
            f'AND "{column}" IN ({", ".join(f":v{i}" for i in range(len(wanted)))})'
        )
        try:
            values = (
                {
                    str(r[0])
                    for r in db.run(
                        sql, limit=len(wanted), params={f"v{i}": v for i, v in enumerate(wanted)}
                    ).rows
                }
                if wanted
                else set()
            )
        except StatementRefused as exc:
            problems.append(Problem(entry.path, exc.reason, field=where, code=exc.code))
            continue
        for value in wanted:
            if value not in values:
                problems.append(
                    Problem(
                        entry.path,
                        f"{value!r} is not a value of {param.values_from}",
                        field=f"parameters.{name}",
                        code="unknown_value",
                    )
                )
    return problems
