"""A table of the schema snapshot as index records: one schema_table record and one
schema_column record per column, each with the text that is embedded for schema linking.

The text says what a person looking for the column would say: the names split into words
(`discharge_date` -> "discharge date"), the reviewed description, the values' meaning and a
few sample values. Sample values are read only for the privacy kinds that may leave the
database (`config.SAMPLED_KINDS`): never an identity, free text or an unclassified column.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from typing import Final

from thoth.config import SAMPLED_KINDS, DatabaseSettings
from thoth.database import ColumnInfo, TableInfo, qualified
from thoth.index.records import (
    RECORD_SCHEMA_COLUMN,
    RECORD_SCHEMA_TABLE,
    SchemaColumnPayload,
    SchemaTablePayload,
    point_id,
)
from thoth.schema.descriptions import ColumnDescription, TableDescription

# SQL types whose values are amounts and dates (seed 004: they always pass). An integer is not
# here: it is as often an identifier as a quantity, so a reviewer classifies it.
_AMOUNT_TYPES: Final = re.compile(r"^(REAL|FLOAT|DOUBLE|NUMERIC|DECIMAL|MONEY)", re.IGNORECASE)
_DATE_TYPES: Final = re.compile(r"^(DATE|TIME|TIMESTAMP|DATETIME|INTERVAL)", re.IGNORECASE)
_WORDS: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
MAX_TEXT_SAMPLES: Final = 5  # sample values in the embedded text (all are in the payload)


def words(name: str) -> str:
    """`discharge_date` -> "discharge date", `FreeMealCount` -> "free meal count"."""
    found = _WORDS.findall(name)
    return " ".join(w.lower() for w in found) if found else name


def column_kind(
    settings: DatabaseSettings,
    schema: str,
    table: str,
    column: ColumnInfo,
    described: ColumnDescription | None,
) -> str:
    """The column's privacy kind: the config's list, the reviewed description, the SQL type
    (real numbers are amounts, dates are dates), then the configured default."""
    named = settings.privacy.columns.get(qualified(schema, table, column.name))
    if named is not None:
        return named
    if described is not None and described.kind is not None:
        return described.kind
    if _DATE_TYPES.match(column.type):
        return "date"
    if _AMOUNT_TYPES.match(column.type):
        return "amount"
    return settings.privacy.default_kind


def may_sample(kind: str) -> bool:
    return kind in SAMPLED_KINDS


@dataclass(frozen=True)
class TableRecords:
    """One table's records, and the hash that says whether it changed since the last sync."""

    table: str  # schema.table
    content_sha256: str
    payloads: tuple[SchemaTablePayload | SchemaColumnPayload, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(p.column for p in self.payloads if isinstance(p, SchemaColumnPayload))


def record_id(payload: SchemaTablePayload | SchemaColumnPayload) -> str:
    if isinstance(payload, SchemaTablePayload):
        return point_id(RECORD_SCHEMA_TABLE, payload.table)
    return point_id(RECORD_SCHEMA_COLUMN, payload.column)


def table_records(
    workspace: str,
    settings: DatabaseSettings,
    info: TableInfo,
    described: TableDescription | None,
    avg_len: float,
) -> TableRecords:
    """The records of `info`. `avg_len` is BM25's average length the sparse vectors are
    encoded with (kept in the payload, like the documents')."""
    table = info.qualified
    digest = hashlib.sha256(
        json.dumps(
            {"table": asdict(info), "described": asdict(described) if described else None},
            sort_keys=True,
            default=str,
        ).encode()
    ).hexdigest()
    descriptions = described.columns if described else {}
    table_text = (described.description if described else "") or info.comment
    fks = tuple(
        {
            "columns": list(fk.columns),
            "ref_table": qualified(fk.ref_schema, fk.ref_table),
            "ref_columns": list(fk.ref_columns),
        }
        for fk in info.foreign_keys
    )
    references: dict[str, list[str]] = {}
    reviewed = [
        {
            "columns": [name],
            "ref_table": ref.rsplit(".", 1)[0],
            "ref_columns": [ref.rsplit(".", 1)[1]],
        }
        for name, desc in descriptions.items()
        if name in {c.name for c in info.columns}
        for ref in desc.references
    ]
    fks = fks + tuple(fk for fk in reviewed if fk not in fks)
    for rev in reviewed:
        references.setdefault(rev["columns"][0], []).append(
            f"{rev['ref_table']}.{rev['ref_columns'][0]}"
        )
    for fk in info.foreign_keys:
        for name, ref in zip(fk.columns, fk.ref_columns, strict=False):
            references.setdefault(name, []).append(qualified(fk.ref_schema, fk.ref_table, ref))
    common = {
        "workspace_id": workspace,
        "table": table,
        "schema_name": info.schema,
        "content_sha256": digest,
        "bm25_avg_len": avg_len,
    }
    payloads: list[SchemaTablePayload | SchemaColumnPayload] = [
        SchemaTablePayload(
            **common,
            name=info.name,
            table_kind=info.kind,
            description=table_text,
            columns=tuple(c.name for c in info.columns),
            primary_key=info.primary_key,
            foreign_keys=fks,
            text=_table_text(info, table_text),
        )
    ]
    for n, col in enumerate(info.columns):
        desc = descriptions.get(col.name)
        kind = column_kind(settings, info.schema, info.name, col, desc)
        samples = col.samples if may_sample(kind) else ()
        description = (desc.description if desc else "") or col.comment
        values = desc.values if desc else ""
        payloads.append(
            SchemaColumnPayload(
                **common,
                column=qualified(info.schema, info.name, col.name),
                name=col.name,
                ordinal=n,
                type=col.type,
                nullable=col.nullable,
                primary_key=col.name in info.primary_key,
                references=tuple(references.get(col.name, ())),
                privacy_kind=kind,
                description=description,
                values=values,
                samples=samples,
                text=_column_text(info, col, description, values, samples),
            )
        )
    return TableRecords(table, digest, tuple(payloads))


def _table_text(info: TableInfo, description: str) -> str:
    cols = ", ".join(words(c.name) for c in info.columns)
    head = f"{words(info.name)} ({info.qualified})"
    return f"{head}: {description}\n{cols}" if description else f"{head}\n{cols}"


def _column_text(
    info: TableInfo, col: ColumnInfo, description: str, values: str, samples: tuple[str, ...]
) -> str:
    parts = [f"{words(col.name)} ({words(info.name)}.{col.name})"]
    if description and description.lower() != words(col.name):
        parts.append(description)
    if values:
        parts.append(values)
    if samples:
        parts.append("e.g. " + ", ".join(samples[:MAX_TEXT_SAMPLES]))
    return "\n".join(parts)
