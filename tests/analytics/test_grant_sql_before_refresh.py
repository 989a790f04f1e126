"""`tht analytics grant-sql` is run before the first `tht analytics refresh` (docs/analytics.md:
the refresh grants the role on each copy it builds, so the role must exist first). The store's
schema does not exist then: the printed SQL stopped at `GRANT USAGE ON SCHEMA` ("schema
analytics does not exist", psql exit 3). It now creates the role and grants what it can, and
says the schema is missing; run again once the schema exists, it grants the views."""

from __future__ import annotations

import secrets

import psycopg
import pytest
from psycopg import sql

from tests.conftest import PG_HOST, PG_PORT
from thoth.analytics.grants import grant_sql


def _admin(user: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(host=PG_HOST, port=PG_PORT, user=user, dbname="test", autocommit=True)


@pytest.fixture
def names(pg_user: str):  # type: ignore[no-untyped-def]
    token = secrets.token_hex(4)
    schema, role = f"grant_an_{token}", f"grant_ro_{token}"
    yield schema, role
    with _admin(pg_user) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_the_grants_run_before_the_schema_exists_and_again_after(
    pg_user: str, names: tuple[str, str]
) -> None:
    schema, role = names
    script = grant_sql(role, [schema], "test", "pw").encode()
    notices: list[str] = []
    with _admin(pg_user) as conn:
        conn.add_notice_handler(lambda d: notices.append(str(d.message_primary)))
        conn.execute(script)  # before: psycopg.errors.InvalidSchemaName
        assert conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
        assert any(schema in n and "refresh" in n for n in notices), notices
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("CREATE VIEW {}.v AS SELECT 1 AS one").format(sql.Identifier(schema)))
        conn.execute(script)
        granted = conn.execute(
            "SELECT has_schema_privilege(%s, %s, 'USAGE'), has_table_privilege(%s, %s, 'SELECT')",
            (role, schema, role, f"{schema}.v"),
        ).fetchone()
    assert granted == (True, True)
