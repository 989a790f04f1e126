"""Reviewed descriptions of the session database's tables and columns, kept in the workspace
repository next to the Evidence (`[database] descriptions`, default `schema/`).

One file per table, named `<schema>.<table>.yaml` or `<schema>.<table>.csv`:

- YAML: `table`, `description`, and `columns: {name: {description, kind, values,
  references}}`; `values` is a text or a mapping code -> meaning; `kind` is a privacy kind
  (config.ColumnKind); `references` a `schema.table.column` the column joins to when the
  database cannot declare it (a SQLite file per schema cannot reference another file).
- CSV: BIRD's `database_description` format, one row per column, header
  `original_column_name,column_name,column_description,data_format,value_description`, plus an
  optional `kind` column.

Descriptions are what a reviewer knows and the database does not say; PostgreSQL's own
`COMMENT ON` text is used where a file says nothing.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, get_args

import yaml

from thoth.config import ColumnKind
from thoth.errors import Problem, ProblemsError
from thoth.markup import load_yaml

_KINDS: Final = frozenset(get_args(ColumnKind))
_CSV_NAME: Final = "original_column_name"


class DescriptionsInvalid(ProblemsError):
    """A descriptions file cannot be read as reviewed; nothing was synced."""

    code = "descriptions_invalid"


@dataclass(frozen=True)
class ColumnDescription:
    description: str = ""
    values: str = ""
    kind: str | None = None  # None: not classified here
    references: tuple[str, ...] = ()  # schema.table.column joins the database does not declare


@dataclass(frozen=True)
class TableDescription:
    file: str  # relative to the workspace root
    schema: str
    table: str
    description: str = ""
    columns: dict[str, ColumnDescription] = field(default_factory=dict)


def load_descriptions(root: Path, directory: str) -> dict[tuple[str, str], TableDescription]:
    """Every descriptions file under `root/directory`, by (schema, table). A missing directory
    is no description at all; a file that cannot be read is DescriptionsInvalid naming the
    file and the field."""
    base = root / directory
    if not base.is_dir():
        return {}
    found: dict[tuple[str, str], TableDescription] = {}
    problems: list[Problem] = []
    for path in sorted(base.iterdir()):
        if path.suffix not in (".yaml", ".yml", ".csv") or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        parts = path.stem.split(".")
        if len(parts) != 2 or not all(parts):
            problems.append(
                Problem(rel, "the file name is not <schema>.<table>", hint="rename the file")
            )
            continue
        schema, table = parts
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(rel, f"cannot be read as UTF-8 text: {exc}"))
            continue
        issues: list[Problem] = []
        desc = (
            _from_csv(rel, schema, table, text, issues)
            if path.suffix == ".csv"
            else _from_yaml(rel, schema, table, text, issues)
        )
        if issues:
            problems += issues
        elif (schema, table) in found:
            problems.append(
                Problem(
                    rel,
                    f"describes {schema}.{table} again (also {found[(schema, table)].file})",
                    hint="keep one file per table",
                )
            )
        else:
            found[(schema, table)] = desc
    if problems:
        raise DescriptionsInvalid(
            f"{base}: {len(problems)} problem(s) in the reviewed schema descriptions; nothing "
            "was synced",
            problems,
        )
    return found


def _kind(rel: str, where: str, value: Any, issues: list[Problem]) -> str | None:
    if value in (None, ""):
        return None
    if value not in _KINDS:
        issues.append(
            Problem(
                rel,
                f"kind {value!r} is not a privacy kind",
                field=where,
                hint=f"one of {', '.join(sorted(_KINDS))}",
            )
        )
        return None
    return str(value)


def _from_yaml(
    rel: str, schema: str, table: str, text: str, issues: list[Problem]
) -> TableDescription:
    try:
        data = load_yaml(text)  # the one YAML reader: no anchors or aliases
    except yaml.YAMLError as exc:
        issues.append(Problem(rel, f"not valid YAML: {exc}"))
        return TableDescription(rel, schema, table)
    if not isinstance(data, dict):
        issues.append(Problem(rel, "must be a mapping with table, description, columns"))
        return TableDescription(rel, schema, table)
    unknown = sorted(set(data) - {"table", "description", "columns"})
    if unknown:
        issues.append(Problem(rel, f"unknown key(s) {', '.join(map(str, unknown))}"))
    named = data.get("table")
    if named is not None and named != f"{schema}.{table}":
        issues.append(
            Problem(
                rel,
                f"table {named!r} does not match the file name ({schema}.{table})",
                field="table",
            )
        )
    raw_columns = data.get("columns") or {}
    if not isinstance(raw_columns, dict):
        issues.append(Problem(rel, "columns must map column names to descriptions", "columns"))
        raw_columns = {}
    columns: dict[str, ColumnDescription] = {}
    for name, spec in raw_columns.items():
        where = f"columns.{name}"
        if isinstance(spec, str):
            columns[str(name)] = ColumnDescription(description=spec.strip())
            continue
        if not isinstance(spec, dict):
            issues.append(Problem(rel, "must be a text or a mapping", field=where))
            continue
        extra = sorted(set(spec) - {"description", "kind", "values", "references"})
        if extra:
            issues.append(Problem(rel, f"unknown key(s) {', '.join(map(str, extra))}", where))
        values = spec.get("values") or ""
        if isinstance(values, dict):
            values = "; ".join(f"{k} = {v}" for k, v in values.items())
        refs = spec.get("references") or []
        refs = [refs] if isinstance(refs, str) else refs
        bad = [r for r in refs if not isinstance(r, str) or r.count(".") != 2]
        if bad or not isinstance(refs, list):
            issues.append(
                Problem(
                    rel,
                    f"references {bad or refs!r}: each must be schema.table.column",
                    field=f"{where}.references",
                )
            )
            refs = []
        columns[str(name)] = ColumnDescription(
            description=str(spec.get("description") or "").strip(),
            values=str(values).strip(),
            kind=_kind(rel, f"{where}.kind", spec.get("kind"), issues),
            references=tuple(str(r) for r in refs),
        )
    return TableDescription(rel, schema, table, str(data.get("description") or "").strip(), columns)


def _from_csv(
    rel: str, schema: str, table: str, text: str, issues: list[Problem]
) -> TableDescription:
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or []]
    if _CSV_NAME not in header:
        issues.append(
            Problem(
                rel,
                f"the header has no {_CSV_NAME} column",
                hint="use BIRD's header: original_column_name,column_name,column_description,"
                "data_format,value_description[,kind]",
            )
        )
        return TableDescription(rel, schema, table)
    columns: dict[str, ColumnDescription] = {}
    for n, row in enumerate(reader, start=2):
        clean = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
        name = clean.get(_CSV_NAME, "")
        if not name:
            issues.append(Problem(rel, f"line {n}: no {_CSV_NAME}", field=_CSV_NAME))
            continue
        readable = clean.get("column_name", "")
        description = clean.get("column_description", "")
        if readable and readable.lower() not in (name.lower(), description.lower()):
            description = f"{readable}: {description}" if description else readable
        columns[name] = ColumnDescription(
            description=description,
            values=clean.get("value_description", ""),
            kind=_kind(rel, f"line {n}.kind", clean.get("kind"), issues),
        )
    return TableDescription(rel, schema, table, "", columns)
