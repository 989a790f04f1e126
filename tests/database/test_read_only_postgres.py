"""A PostgreSQL database is read-only because PostgreSQL refuses: each statement in its own
READ ONLY transaction with a statement timeout, always rolled back; a superuser or a role that
reaches the server's files is refused at connection. Raw statements go straight to run() and
explain(), past check_statement, as the recipe's reader and as a role that may write."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from psycopg import sql

from tests.database.conftest import PATIENTS, URL_ENV, Warehouse
from thoth.database import DatabaseUnavailable, StatementRefused, open_database


def _refused(wh: Warehouse, method: str, role: str) -> dict[str, str]:
    """statement -> the code of its refusal. The recipe's reader lacks some privileges, so
    PostgreSQL refuses some statements for that first (`permission_denied`)."""
    s, h = wh.schema, wh.hidden
    reader = role == "reader"
    if method == "run":
        return {
            f"INSERT INTO {s}.ward VALUES ('X', 'x')": "read_only",
            f"UPDATE {s}.patient SET tax_code = 'X'": "read_only",
            f"DELETE FROM {s}.patient": "read_only",
            f"WITH gone AS (DELETE FROM {s}.patient RETURNING id) SELECT count(*) FROM gone": "read_only",
            f"TRUNCATE {s}.stay": "read_only",
            f"CREATE TABLE {s}.evil (a int)": "read_only",
            f"CREATE TABLE {s}.evil AS SELECT 1 AS a": "read_only",
            f"SELECT 1 AS a INTO {s}.evil": "read_only",
            "CREATE TEMP TABLE evil (a int)": "read_only",
            f"DROP TABLE {s}.stay": "read_only",
            f"ALTER TABLE {s}.ward ADD COLUMN evil text": "read_only",
            f"CREATE INDEX evil ON {s}.patient (tax_code)": "read_only",
            f"SELECT nextval('{s}.ticket')": "permission_denied" if reader else "read_only",
            f"SELECT * FROM {s}.patient FOR UPDATE": "read_only",
            # allowed in a read-only transaction; ran, returned no rows, rolled back
            f"LOCK TABLE {s}.patient IN ACCESS EXCLUSIVE MODE": (
                "permission_denied" if reader else "statement_invalid"
            ),
            f"DO $$ BEGIN DELETE FROM {s}.patient; END $$": "read_only",
            f"COPY {s}.ward FROM STDIN": "permission_denied" if reader else "read_only",
            f"COPY {s}.ward TO STDOUT": "statement_invalid",
            f"COPY {s}.ward TO '/tmp/thoth-{s}.csv'": "permission_denied",
            f"COPY (SELECT 1) TO PROGRAM 'touch /tmp/thoth-{s}.program'": "permission_denied",
            f"COPY {s}.ward FROM '/etc/hostname'": "permission_denied",
            "SELECT pg_sleep(3)": "statement_timeout",
            "SET ROLE postgres": "permission_denied",
            "SELECT set_config('transaction_read_only', 'off', false)": "read_only",
            "SET transaction_read_only = off": "read_only",
            f"SELECT 1; DELETE FROM {s}.patient": "multiple_statements",
            "SELECT 1; SELECT 2": "multiple_statements",
            f"SELECT * FROM {h}.secret": "permission_denied",
            "SELEC 1": "statement_invalid",
        }
    write = "permission_denied" if reader else "read_only"  # planning checks privileges
    return {
        f"INSERT INTO {s}.ward VALUES ('X', 'x')": write,
        f"UPDATE {s}.patient SET tax_code = 'X'": write,
        f"DELETE FROM {s}.patient": write,
        f"WITH gone AS (DELETE FROM {s}.patient RETURNING id) SELECT count(*) FROM gone": write,
        f"CREATE TABLE {s}.evil AS SELECT 1 AS a": "read_only",
        f"SELECT 1 AS a INTO {s}.evil": "read_only",
        f"(ANALYZE) DELETE FROM {s}.patient": "read_only",
        f"(ANALYZE) SELECT nextval('{s}.ticket')": write,
        "(ANALYZE) SELECT pg_sleep(3)": "statement_timeout",
        f"TRUNCATE {s}.stay": "statement_invalid",
        f"CREATE TABLE {s}.evil (a int)": "statement_invalid",
        f"DROP TABLE {s}.stay": "statement_invalid",
        f"COPY {s}.ward FROM STDIN": "statement_invalid",
        f"COPY (SELECT 1) TO PROGRAM 'touch /tmp/thoth-{s}.program'": "statement_invalid",
        "SET ROLE postgres": "statement_invalid",
        f"SELECT 1; DELETE FROM {s}.patient": "multiple_statements",
        f"SELECT * FROM {h}.secret": "permission_denied",
    }


@pytest.mark.parametrize("role", ["reader", "writer"])
@pytest.mark.parametrize("method", ["run", "explain"])
def test_writes_ddl_copy_and_escapes_are_refused_by_postgresql(
    warehouse: Warehouse, role: str, method: str
) -> None:
    user = warehouse.reader if role == "reader" else warehouse.writer
    before = warehouse.counts()
    environ = {URL_ENV: warehouse.url(user)}
    with open_database(warehouse.settings(), Path("."), environ=environ) as db:
        for statement, code in _refused(warehouse, method, role).items():
            started = time.monotonic()
            with pytest.raises(StatementRefused) as caught:
                if method == "run":
                    db.run(statement, limit=10)
                else:
                    db.explain(statement)
            refusal = caught.value
            assert refusal.code == code, (statement, refusal.code, str(refusal))
            assert refusal.reason, statement  # PostgreSQL's own message
            assert "->" in str(refusal), statement  # says what to do
            assert time.monotonic() - started < 2.5, statement
        # still usable, still the same session state, after every refusal
        assert db.run(f"SELECT count(*) FROM {warehouse.schema}.patient", limit=1).rows == (
            (PATIENTS,),
        )
    assert warehouse.counts() == before
    assert not Path(f"/tmp/thoth-{warehouse.schema}.csv").exists()
    assert not Path(f"/tmp/thoth-{warehouse.schema}.program").exists()


def test_reads_with_a_limit_and_explains(warehouse: Warehouse) -> None:
    environ = {URL_ENV: warehouse.url(warehouse.reader)}
    s = warehouse.schema
    with open_database(warehouse.settings(), Path("."), environ=environ) as db:
        assert db.dialect == "postgresql"
        db.ping()
        result = db.run(f"SELECT id, tax_code FROM {s}.patient ORDER BY id", limit=2)
        assert result.columns == ("id", "tax_code")
        assert result.rows == ((1, "RSSMRA80A01H501U"), (2, "VRDLGU75B02F205X"))
        assert result.truncated and result.duration_ms >= 0
        # In the select list generate_series streams: fifty million rows would pass the
        # statement timeout unless reading stops after limit + 1 rows.
        many = db.run("SELECT generate_series(1, 50000000) AS g", limit=3)
        assert many.rows == ((1,), (2,), (3,)) and many.truncated
        whole = db.run(f"SELECT label FROM {s}.patient_ward ORDER BY id", limit=10)
        assert whole.rows == (("Cardiologia",), ("Cardiologia",), ("Pediatria",))
        assert not whole.truncated
        plan = db.explain(f"SELECT * FROM {s}.patient WHERE tax_code = 'X'")
        assert any("patient" in line for line in plan)
        # EXPLAIN does not run what it plans: a sleep is planned, not slept.
        started = time.monotonic()
        assert db.explain("SELECT pg_sleep(3)")
        assert time.monotonic() - started < 1


def test_every_statement_is_rolled_back(warehouse: Warehouse) -> None:
    """A SET (even after a COMMIT) never outlives its statement."""
    environ = {URL_ENV: warehouse.url(warehouse.writer)}
    with open_database(warehouse.settings(), Path("."), environ=environ) as db:
        before = db.run("SHOW search_path", limit=1).rows
        for statement in ("SET search_path = evil", "SET statement_timeout = 0", "COMMIT"):
            with pytest.raises(StatementRefused) as caught:
                db.run(statement, limit=1)  # runs, returns no rows, is rolled back
            assert caught.value.code == "statement_invalid"
            assert "rolled back" in str(caught.value)
        assert db.run("SHOW search_path", limit=1).rows == before
        # a session-level advisory lock outlives a rollback: Thoth releases it too
        db.run("SELECT pg_advisory_lock(424242)", limit=1)
        with warehouse.admin_connection() as admin:
            held = admin.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 424242"
            ).fetchone()
        assert held == (0,)
        assert db.run("SHOW transaction_read_only", limit=1).rows == (("on",),)
        with pytest.raises(StatementRefused) as caught:
            db.run("SELECT pg_sleep(3)", limit=1)
        assert caught.value.code == "statement_timeout"
        assert "database.statement_timeout_seconds" in str(caught.value)


def test_a_superuser_is_refused_with_the_role_recipe(warehouse: Warehouse) -> None:
    environ = {URL_ENV: warehouse.url(warehouse.admin)}
    with pytest.raises(DatabaseUnavailable) as caught:
        open_database(warehouse.settings(), Path("."), environ=environ)
    assert caught.value.code == "database_role_unsafe"
    text = str(caught.value)
    assert "superuser" in text and "docs/database.md" in text and URL_ENV in text
    assert warehouse.password not in text


@pytest.mark.parametrize(
    "member_of", ["pg_write_server_files", "pg_execute_server_program", "pg_read_server_files"]
)
def test_a_role_that_reaches_the_server_files_is_refused(
    warehouse: Warehouse, member_of: str
) -> None:
    with warehouse.admin_connection() as conn:
        conn.execute(f'GRANT {member_of} TO "{warehouse.reader}"')
    environ = {URL_ENV: warehouse.url(warehouse.reader)}
    with pytest.raises(DatabaseUnavailable) as caught:
        open_database(warehouse.settings(), Path("."), environ=environ)
    assert caught.value.code == "database_role_unsafe"
    assert member_of in str(caught.value) and "docs/database.md" in str(caught.value)


def test_unreachable_unknown_or_missing_is_unavailable_naming_the_setting(
    warehouse: Warehouse,
) -> None:
    settings = warehouse.settings()
    bad = {
        "no such role": warehouse.url("thoth_nobody_" + warehouse.reader[-8:]),
        "closed port": warehouse.url(warehouse.reader, port=1),
        "no such database": warehouse.url(warehouse.reader, dbname="thoth_no_such_db"),
        "not a URL": f"postgresql://{warehouse.reader}:{warehouse.password}@[::1:bad/test",
    }
    for label, url in bad.items():
        started = time.monotonic()
        with pytest.raises(DatabaseUnavailable) as caught:
            open_database(settings, Path("."), environ={URL_ENV: url})
        text = str(caught.value)
        assert "database.url_env" in text and URL_ENV in text, (label, text)
        assert warehouse.password not in text, label
        assert caught.value.code == "database_unavailable", label
        assert time.monotonic() - started < 10, label
    for environ in ({}, {URL_ENV: "  "}):
        with pytest.raises(DatabaseUnavailable) as caught:
            open_database(settings, Path("."), environ=environ)
        assert "database.url_env" in str(caught.value) and URL_ENV in str(caught.value)


def test_a_missing_environment_variable_needs_no_server() -> None:
    """Checked before any connection: runs without PostgreSQL."""
    from thoth.config import DatabaseSettings

    settings = DatabaseSettings(dialect="postgresql", url_env="THOTH_UNSET_VAR_X", schemas=["dw"])
    with pytest.raises(DatabaseUnavailable) as caught:
        open_database(settings, Path("."), environ={})
    assert "database.url_env" in str(caught.value) and "THOTH_UNSET_VAR_X" in str(caught.value)


def test_closed_database_is_unavailable(warehouse: Warehouse) -> None:
    environ = {URL_ENV: warehouse.url(warehouse.reader)}
    db = open_database(warehouse.settings(), Path("."), environ=environ)
    db.close()
    db.close()
    with pytest.raises(DatabaseUnavailable):
        db.run("SELECT 1", limit=1)


def test_columns_the_role_may_not_read_are_not_indexed_and_refused(warehouse: Warehouse) -> None:
    """Issue 22, point 4: column-level grants are respected. The reader loses SELECT on the
    whole of `patient` and keeps it on two columns: introspection lists only those, and a
    statement naming the tax code is refused with a code before it runs (at EXPLAIN)."""
    s = warehouse.schema
    with warehouse.admin_connection() as conn:
        conn.execute(
            sql.SQL(
                "REVOKE SELECT ON {s}.patient FROM {r}; GRANT SELECT (id, ward_code) ON {s}.patient TO {r}"
            ).format(s=sql.Identifier(s), r=sql.Identifier(warehouse.reader))
        )
    environ = {URL_ENV: warehouse.url(warehouse.reader)}
    with open_database(warehouse.settings(), Path("."), environ=environ) as db:
        snapshot = db.introspect(sample_values=3, may_sample=lambda *_: True)
        [patient] = [t for t in snapshot.tables if t.name == "patient"]
        assert [c.name for c in patient.columns] == ["id", "ward_code"]
        assert db.run(f"SELECT id, ward_code FROM {s}.patient ORDER BY id", limit=5).rows
        for statement in (f"SELECT tax_code FROM {s}.patient", f"SELECT * FROM {s}.patient"):
            with pytest.raises(StatementRefused) as info:
                db.explain(statement)
            assert info.value.code == "permission_denied"
