"""introspect(): tables and views of the declared schemas, columns, keys, comments, and
sample values only where the caller allows them, read from a bounded prefix of each table."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from psycopg import sql

from tests.database.conftest import URL_ENV, Warehouse
from tests.database.sqlite_fixture import make_sqlite_workspace
from thoth.config import DatabaseSettings
from thoth.database import (
    ColumnInfo,
    DatabaseUnavailable,
    ForeignKey,
    SchemaSnapshot,
    StatementRefused,
    open_database,
)

PREFIX = 10_000


class Allow:
    """A may_sample callback that records what it was asked and allows only `allowed`."""

    def __init__(self, *allowed: str) -> None:
        self.allowed = set(allowed)
        self.asked: list[tuple[str, str, ColumnInfo]] = []

    def __call__(self, schema: str, table: str, column: ColumnInfo) -> bool:
        self.asked.append((schema, table, column))
        return f"{schema}.{table}.{column.name}" in self.allowed


def _columns(snapshot: SchemaSnapshot, schema: str, table: str) -> dict[str, ColumnInfo]:
    info = snapshot.table(schema, table)
    assert info is not None, f"{schema}.{table} missing"
    return {c.name: c for c in info.columns}


# ---------------------------------------------------------------------- SQLite


def _big_sqlite(root: Path) -> None:
    """`big.t.v`: 10,000 rows first (b five times as often as a), then values only later."""
    with sqlite3.connect(root / "data" / "big.sqlite") as conn:
        conn.execute("CREATE TABLE t (v TEXT, n INTEGER)")
        conn.executemany(
            "INSERT INTO t VALUES (?, ?)",
            [("b" * 100, 1)] * (PREFIX - 1200) + [("a", 2)] * 200 + [(None, 3)] * 1000,
        )
        conn.executemany("INSERT INTO t VALUES (?, ?)", [("late", 4)] * 5000)
    conn.close()


def test_sqlite_snapshot(tmp_path: Path) -> None:
    make_sqlite_workspace(tmp_path)
    _big_sqlite(tmp_path)
    settings = DatabaseSettings(
        dialect="sqlite",
        files={"main": "data/clinic.sqlite", "adt": "data/adt.sqlite", "big": "data/big.sqlite"},
    )
    allow = Allow("main.patient.ward_code", "adt.admission.urgent", "big.t.v", "big.t.n")
    with open_database(settings, tmp_path) as db:
        snapshot = db.introspect(sample_values=5, may_sample=allow)
        # introspection's PRAGMAs are not left open to statements
        with pytest.raises(StatementRefused):
            db.run("PRAGMA table_info(patient)", limit=1)
    assert snapshot.dialect == "sqlite"
    assert [t.qualified for t in snapshot.tables] == [
        "main.bed", "main.patient", "main.patient_ward", "main.ward",
        "adt.admission", "adt.admission_seq", "big.t",
    ]  # fmt: skip
    patient = snapshot.table("main", "patient")
    assert patient is not None and patient.kind == "table"
    assert patient.primary_key == ("id",)
    assert patient.foreign_keys == (ForeignKey(("ward_code",), "main", "ward", ("code",)),)
    columns = _columns(snapshot, "main", "patient")
    assert [(c.name, c.type, c.nullable) for c in columns.values()] == [
        ("id", "INTEGER", False),
        ("tax_code", "TEXT", False),
        ("ward_code", "TEXT", True),
        ("Birth Date", "DATE", True),
    ]
    # samples only where allowed, most frequent first
    assert columns["ward_code"].samples == ("CAR", "PED")
    assert columns["tax_code"].samples == ()
    assert _columns(snapshot, "adt", "admission")["urgent"].samples == ("1", "0")
    # the callback saw every column, without samples
    assert len(allow.asked) == sum(len(t.columns) for t in snapshot.tables)
    assert all(c.samples == () for _, _, c in allow.asked)
    # `REFERENCES ward` means ward's primary key; a composite key keeps its order
    bed = snapshot.table("main", "bed")
    assert bed is not None and bed.foreign_keys == (
        ForeignKey(("ward",), "main", "ward", ("code",)),
    )
    admission = snapshot.table("adt", "admission")
    assert admission is not None
    assert admission.foreign_keys == (
        ForeignKey(("patient_id", "seq"), "adt", "admission_seq", ("patient_id", "seq")),
    )
    assert snapshot.table("adt", "admission_seq").primary_key == ("patient_id", "seq")  # type: ignore[union-attr]
    view = snapshot.table("main", "patient_ward")
    assert (
        view is not None
        and view.kind == "view"
        and [c.name for c in view.columns] == ["id", "label"]
    )
    # a bounded prefix, cut to 80 characters: `late` lies beyond the first 10,000 rows
    big = _columns(snapshot, "big", "t")
    assert big["v"].samples == ("b" * 80, "a")
    assert big["n"].samples == ("1", "3", "2")


def test_sqlite_no_samples_asked_none_read(tmp_path: Path) -> None:
    settings = make_sqlite_workspace(tmp_path)
    allow = Allow("main.patient.ward_code")
    with open_database(settings, tmp_path) as db:
        snapshot = db.introspect(sample_values=0, may_sample=allow)
    assert all(not c.samples for t in snapshot.tables for c in t.columns)


# ---------------------------------------------------------------------- PostgreSQL


def test_postgres_snapshot_sees_only_the_declared_schemas(warehouse: Warehouse) -> None:
    s = warehouse.schema
    with warehouse.admin_connection() as conn:
        # created after the grants: readable through the recipe's default privileges
        conn.execute(sql.SQL("CREATE TABLE {}.big (v text, n integer)").format(sql.Identifier(s)))
        conn.execute(
            sql.SQL(
                "INSERT INTO {s}.big SELECT CASE WHEN g <= 8800 THEN repeat('b', 100) "
                "WHEN g <= 9000 THEN 'a' END, CASE WHEN g <= 8800 THEN 1 WHEN g <= 9000 "
                "THEN 2 ELSE 3 END FROM generate_series(1, {prefix}) g"
            ).format(s=sql.Identifier(s), prefix=sql.Literal(PREFIX))
        )
        conn.execute(
            sql.SQL("INSERT INTO {s}.big SELECT 'late', 4 FROM generate_series(1, 5000)").format(
                s=sql.Identifier(s)
            )
        )
    allow = Allow(f"{s}.patient.ward_code", f"{s}.big.v", f"{s}.big.n", f"{s}.stay.day")
    environ = {URL_ENV: warehouse.url(warehouse.reader)}
    with open_database(warehouse.settings(), Path("."), environ=environ) as db:
        snapshot = db.introspect(sample_values=5, may_sample=allow)
    assert snapshot.dialect == "postgresql"
    assert [(t.name, t.kind) for t in snapshot.tables] == [
        ("big", "table"), ("patient", "table"), ("patient_ward", "view"),
        ("stay", "table"), ("ward", "table"),
    ]  # fmt: skip
    assert {t.schema for t in snapshot.tables} == {s}  # never the hidden schema
    patient = snapshot.table(s, "patient")
    assert patient is not None
    assert patient.comment == "Pazienti ricoverati"
    assert patient.primary_key == ("id",)
    assert patient.foreign_keys == (ForeignKey(("ward_code",), s, "ward", ("code",)),)
    columns = _columns(snapshot, s, "patient")
    assert [(c.name, c.type, c.nullable) for c in columns.values()] == [
        ("id", "integer", False),
        ("tax_code", "character varying(16)", False),
        ("ward_code", "text", True),
        ("birth_date", "date", True),
    ]
    assert columns["tax_code"].comment == "Codice fiscale"
    assert columns["tax_code"].samples == ()
    assert columns["ward_code"].samples == ("CAR", "PED")
    stay = snapshot.table(s, "stay")
    assert stay is not None and stay.primary_key == ("patient_id", "day")
    assert stay.foreign_keys == (ForeignKey(("patient_id",), s, "patient", ("id",)),)
    assert _columns(snapshot, s, "stay")["day"].samples == ()  # no rows, nothing to sample
    big = _columns(snapshot, s, "big")
    assert big["v"].samples == ("b" * 80, "a")
    assert big["n"].samples == ("1", "3", "2")
    assert all(c.samples == () for _, _, c in allow.asked)


def test_postgres_a_schema_missing_or_not_granted_is_named(warehouse: Warehouse) -> None:
    environ = {URL_ENV: warehouse.url(warehouse.reader)}
    for schemas in ([warehouse.schema, "thoth_no_such_schema"], [warehouse.hidden]):
        settings = warehouse.settings(schemas=schemas)
        with (
            open_database(settings, Path("."), environ=environ) as db,
            pytest.raises(DatabaseUnavailable) as caught,
        ):
            db.introspect(sample_values=0, may_sample=Allow())
        assert caught.value.code == "database_schema_missing"
        assert "database.schemas" in str(caught.value) and schemas[-1] in str(caught.value)
