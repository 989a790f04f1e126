"""The analytics store on PostgreSQL: the role `tht analytics grant-sql` creates sees only the
views of its schema. PostgreSQL itself refuses base tables, other schemas, writes and DDL;
Thoth refuses to connect as a role that could read more."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import sql

from tests.conftest import PG_HOST, PG_PORT, skip_unless_ci
from thoth.analytics.grants import grant_sql
from thoth.config import AnalyticsSettings
from thoth.database import DatabaseUnavailable, StatementRefused, open_database

URL_ENV = "THOTH_TEST_ANALYTICS_URL"


@dataclass(frozen=True)
class Store:
    views: str  # the analytics schema (views only are granted)
    data: str  # the base tables behind the views
    other: str  # another schema of the database
    role: str
    password: str
    admin: str

    def url(self) -> str:
        return f"postgresql://{self.role}:{self.password}@{PG_HOST}:{PG_PORT}/test"

    def settings(self) -> AnalyticsSettings:
        return AnalyticsSettings(
            dialect="postgresql",
            url_env=URL_ENV,
            schemas=[self.views],
            statement_timeout_seconds=1,
            data_date_sql=f"SELECT data_dato FROM {self.views}.v_data_dato",
        )

    def admin_run(self, statement: sql.Composed) -> None:
        with psycopg.connect(
            host=PG_HOST, port=PG_PORT, user=self.admin, dbname="test", autocommit=True
        ) as conn:
            conn.execute(statement)


DATA = """
CREATE TABLE {data}.ricovero (id int PRIMARY KEY, reparto text, anno int, codice_fiscale text);
CREATE TABLE {data}.caricamento (data_dato date);
INSERT INTO {data}.ricovero VALUES (1, 'Pediatria', 2024, 'RSSMRA80A01H501U'),
    (2, 'Pediatria', 2024, 'VRDLGU75B02F205X'), (3, 'Cardiologia', 2023, 'BNCGNN01C03L219Y');
INSERT INTO {data}.caricamento VALUES ('2025-06-30');
CREATE VIEW {views}.v_ricoveri AS SELECT id, reparto, anno FROM {data}.ricovero;
CREATE VIEW {views}.v_data_dato AS SELECT max(data_dato) AS data_dato FROM {data}.caricamento;
CREATE TABLE {views}.staging (a int);
CREATE TABLE {other}.secret (a int);
INSERT INTO {other}.secret VALUES (42);
CREATE FUNCTION {views}.codici() RETURNS SETOF text LANGUAGE sql SECURITY DEFINER
    AS 'SELECT codice_fiscale FROM {data}.ricovero';
"""


@pytest.fixture
def store(pg_user: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    token = secrets.token_hex(4)
    st = Store(
        views=f"thoth_an_{token}",
        data=f"thoth_an_data_{token}",
        other=f"thoth_an_other_{token}",
        role=f"thoth_analytics_{token}",
        password=f"pw-{secrets.token_hex(8)}",
        admin=pg_user,
    )
    names = {k: sql.Identifier(getattr(st, k)) for k in ("views", "data", "other")}
    with psycopg.connect(
        host=PG_HOST, port=PG_PORT, user=pg_user, dbname="test", autocommit=True
    ) as conn:
        can = conn.execute(
            "SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        if not (can and can[0]):
            skip_unless_ci(f"PostgreSQL user {pg_user} may not create roles", "CI runs it")
        conn.execute(
            sql.SQL("CREATE SCHEMA {views}; CREATE SCHEMA {data}; CREATE SCHEMA {other}").format(
                **names
            )
        )
        conn.execute(sql.SQL(DATA).format(**names))
        # Exactly what `tht analytics grant-sql` prints, run by the administrator.
        conn.execute(grant_sql(st.role, [st.views], "test", st.password).encode())
    monkeypatch.setenv(URL_ENV, st.url())
    try:
        yield st
    finally:
        with psycopg.connect(
            host=PG_HOST, port=PG_PORT, user=pg_user, dbname="test", autocommit=True
        ) as conn:
            conn.execute("SET lock_timeout = '10s'")
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(st.role)))
            conn.execute(
                sql.SQL(
                    "DROP SCHEMA {views} CASCADE; DROP SCHEMA {data} CASCADE; "
                    "DROP SCHEMA {other} CASCADE"
                ).format(**names)
            )
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(st.role)))


def test_the_views_are_read_with_bound_parameters(store: Store) -> None:
    with open_database(store.settings().store(), root=None) as db:  # type: ignore[arg-type]
        result = db.run(
            f"SELECT count(*) AS n FROM {store.views}.v_ricoveri WHERE anno = :anno "
            "AND reparto LIKE 'Ped%' AND reparto <> ':anno'",
            limit=10,
            params={"anno": 2024},
        )
        assert result.rows == ((2,),)
        assert db.explain(f"SELECT * FROM {store.views}.v_ricoveri WHERE anno = :a", {"a": 1})


def test_postgresql_refuses_everything_but_the_views(store: Store) -> None:
    v, d, o = store.views, store.data, store.other
    refused = {
        f"SELECT codice_fiscale FROM {d}.ricovero": "permission_denied",
        f"SELECT * FROM {v}.staging": "permission_denied",
        f"SELECT * FROM {o}.secret": "permission_denied",
        f"INSERT INTO {d}.ricovero VALUES (9, 'x', 2024, 'x')": "either",
        f"DELETE FROM {v}.v_ricoveri": "either",
        f"CREATE TABLE {v}.evil (a int)": "either",
        f"CREATE VIEW {v}.evil AS SELECT 1 AS a": "either",
        f"DROP VIEW {v}.v_ricoveri": "either",
    }
    with open_database(store.settings().store(), root=None) as db:  # type: ignore[arg-type]
        for statement, code in refused.items():
            with pytest.raises(StatementRefused) as info:
                db.run(statement, limit=1)
            # A write is refused by the read-only transaction or, first, by privileges.
            allowed = {"read_only", "permission_denied"} if code == "either" else {code}
            assert info.value.code in allowed, statement
    # ... and nothing changed.
    with psycopg.connect(host=PG_HOST, port=PG_PORT, user=store.admin, dbname="test") as conn:
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {}.ricovero").format(sql.Identifier(d))
        ).fetchone()
        assert row == (3,)


def test_a_role_that_reads_a_base_table_is_refused_at_connection(store: Store) -> None:
    store.admin_run(
        sql.SQL("GRANT USAGE ON SCHEMA {} TO {}; GRANT SELECT ON {}.ricovero TO {}").format(
            sql.Identifier(store.data),
            sql.Identifier(store.role),
            sql.Identifier(store.data),
            sql.Identifier(store.role),
        )
    )
    with pytest.raises(DatabaseUnavailable) as info:
        open_database(store.settings().store(), root=None)  # type: ignore[arg-type]
    assert info.value.code == "database_role_unsafe"
    assert f"{store.data}.ricovero (table)" in str(info.value)
    assert "grant-sql" in str(info.value)


def test_a_role_that_reads_another_schema_s_view_is_refused(store: Store) -> None:
    store.admin_run(
        sql.SQL(
            "CREATE VIEW {o}.v_secret AS SELECT a FROM {o}.secret; "
            "GRANT USAGE ON SCHEMA {o} TO {r}; GRANT SELECT ON {o}.v_secret TO {r}"
        ).format(o=sql.Identifier(store.other), r=sql.Identifier(store.role))
    )
    with pytest.raises(DatabaseUnavailable, match="v_secret"):
        open_database(store.settings().store(), root=None)  # type: ignore[arg-type]


def test_a_security_definer_function_is_out_of_reach_both_ways(store: Store) -> None:
    """Issue 22, point 4: the grant SQL revokes EXECUTE on SECURITY DEFINER functions of the
    exposed schema, and the SQL check refuses calls to functions defined in the database."""
    from thoth.database import check_statement

    call = f"SELECT {store.views}.codici() AS c"
    verdict = check_statement(call, "postgresql")
    assert [r.code for r in verdict.reasons] == ["function_not_allowed"]
    with open_database(store.settings().store(), root=None) as db:  # type: ignore[arg-type]
        with pytest.raises(StatementRefused) as info:
            db.run(call, limit=10)  # past the check: PostgreSQL refuses it by privileges
        assert info.value.code == "permission_denied"
    with (
        psycopg.connect(store.url()) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute(call)
    assert "REVOKE EXECUTE ON FUNCTION" in grant_sql(store.role, [store.views], "test")
