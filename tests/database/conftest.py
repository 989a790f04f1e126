"""PostgreSQL fixtures of the thoth.database tests: a data schema in database `test` and a
read-only role made with the recipe of docs/database.md (unique names, dropped afterwards)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import sql

from tests.conftest import PG_HOST, PG_PORT, skip_unless_ci
from thoth.config import DatabaseSettings

URL_ENV = "THOTH_TEST_WAREHOUSE_URL"
PATIENTS = 3


@dataclass(frozen=True)
class Warehouse:
    schema: str  # the declared schema, with the data
    hidden: str  # a schema of the same database the role must not see
    reader: str  # the read-only role of the recipe
    writer: str  # a role that may write the data schema (Thoth's transaction must stop it)
    password: str
    admin: str

    def url(self, role: str, **overrides: object) -> str:
        parts: dict[str, object] = {
            "host": PG_HOST,
            "port": PG_PORT,
            "dbname": "test",
            "password": self.password,
        } | overrides
        return (
            f"postgresql://{role}:{parts['password']}@{parts['host']}:{parts['port']}"
            f"/{parts['dbname']}"
        )

    def settings(self, **changes: object) -> DatabaseSettings:
        values: dict[str, object] = {
            "dialect": "postgresql",
            "url_env": URL_ENV,
            "schemas": [self.schema],
            "statement_timeout_seconds": 1,
        } | changes
        return DatabaseSettings.model_validate(values)

    def admin_connection(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(
            host=PG_HOST, port=PG_PORT, user=self.admin, dbname="test", autocommit=True
        )

    def counts(self) -> tuple[int, int, int]:
        with self.admin_connection() as conn:
            row = conn.execute(
                sql.SQL(
                    "SELECT (SELECT count(*) FROM {s}.patient), (SELECT count(*) FROM {s}.ward), "
                    "(SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    " WHERE n.nspname = %s)"
                ).format(s=sql.Identifier(self.schema)),
                (self.schema,),
            ).fetchone()
        assert row is not None
        return int(str(row[0])), int(str(row[1])), int(str(row[2]))


# The recipe of docs/database.md, "A read-only PostgreSQL role", with the names filled in.
RECIPE = """
CREATE ROLE {reader} LOGIN PASSWORD {password}
    NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
GRANT CONNECT ON DATABASE {database} TO {reader};
GRANT USAGE ON SCHEMA {schema} TO {reader};
GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {reader};
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA {schema} GRANT SELECT ON TABLES TO {reader};
ALTER ROLE {reader} SET default_transaction_read_only = on;
ALTER ROLE {reader} SET statement_timeout = '30s';
"""

DATA = """
CREATE TABLE {schema}.ward (code text PRIMARY KEY, label text NOT NULL);
CREATE TABLE {schema}.patient (
    id integer PRIMARY KEY,
    tax_code varchar(16) NOT NULL,
    ward_code text REFERENCES {schema}.ward (code),
    birth_date date
);
CREATE TABLE {schema}.stay (
    patient_id integer, ward_code text, day date,
    PRIMARY KEY (patient_id, day),
    FOREIGN KEY (patient_id) REFERENCES {schema}.patient (id)
);
CREATE SEQUENCE {schema}.ticket;
CREATE VIEW {schema}.patient_ward AS
    SELECT p.id, w.label FROM {schema}.patient p JOIN {schema}.ward w ON w.code = p.ward_code;
COMMENT ON TABLE {schema}.patient IS 'Pazienti ricoverati';
COMMENT ON COLUMN {schema}.patient.tax_code IS 'Codice fiscale';
INSERT INTO {schema}.ward VALUES ('CAR', 'Cardiologia'), ('PED', 'Pediatria');
INSERT INTO {schema}.patient VALUES
    (1, 'RSSMRA80A01H501U', 'CAR', '1980-01-01'),
    (2, 'VRDLGU75B02F205X', 'CAR', '1975-02-02'),
    (3, 'BNCGNN01C03L219Y', 'PED', '2001-03-03');
CREATE TABLE {hidden}.secret (a int);
INSERT INTO {hidden}.secret VALUES (42);
"""


@pytest.fixture
def warehouse(pg_user: str) -> Iterator[Warehouse]:
    token = secrets.token_hex(4)
    wh = Warehouse(
        schema=f"thoth_dw_{token}",
        hidden=f"thoth_hidden_{token}",
        reader=f"thoth_reader_{token}",
        writer=f"thoth_writer_{token}",
        password=f"pw-{secrets.token_hex(8)}",
        admin=pg_user,
    )
    names = {
        "schema": sql.Identifier(wh.schema),
        "hidden": sql.Identifier(wh.hidden),
        "reader": sql.Identifier(wh.reader),
        "writer": sql.Identifier(wh.writer),
        "owner": sql.Identifier(pg_user),
        "database": sql.Identifier("test"),
        "password": sql.Literal(wh.password),
    }
    with wh.admin_connection() as conn:
        can = conn.execute(
            "SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        if not (can and can[0]):
            skip_unless_ci(
                f"PostgreSQL user {pg_user} may not create roles",
                "the read-only role tests must run",
            )
        conn.execute(sql.SQL("CREATE SCHEMA {schema}; CREATE SCHEMA {hidden}").format(**names))
        conn.execute(sql.SQL(DATA).format(**names))
        conn.execute(sql.SQL(RECIPE).format(**names))
        # A role that may write: only Thoth's read-only transaction stands in its way.
        conn.execute(
            sql.SQL(
                "CREATE ROLE {writer} LOGIN PASSWORD {password}; "
                "GRANT USAGE, CREATE ON SCHEMA {schema} TO {writer}; "
                "GRANT ALL ON ALL TABLES IN SCHEMA {schema} TO {writer}; "
                "GRANT ALL ON ALL SEQUENCES IN SCHEMA {schema} TO {writer}"
            ).format(**names)
        )
    try:
        yield wh
    finally:
        with wh.admin_connection() as conn:
            conn.execute("SET lock_timeout = '10s'")
            for role in (wh.reader, wh.writer):
                conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(
                sql.SQL("DROP SCHEMA {schema} CASCADE; DROP SCHEMA {hidden} CASCADE").format(
                    **names
                )
            )
            for role in (wh.reader, wh.writer):
                conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
