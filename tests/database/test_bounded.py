"""Issue 22, point 9: one read-only statement cannot allocate gigabytes, and a result is cut
with a coded state, never silently. SQLite: a value length limit per connection and a heap
limit; PostgreSQL: statement_timeout and work_mem set for Thoth's transaction, and the SQL
check refusing `repeat` and the pads with a size not written in the query. Both: a row and a
byte cap counted while the result is fetched (`truncated_by`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.database.conftest import URL_ENV, Warehouse
from tests.database.sqlite_fixture import make_sqlite_workspace, sqlite_settings
from thoth.database import StatementRefused, check_statement, open_database
from thoth.database.base import MAX_RESULT_BYTES

MB = 1024 * 1024


@pytest.fixture
def sqlite_db(tmp_path: Path):  # type: ignore[no-untyped-def]
    make_sqlite_workspace(tmp_path)
    with open_database(sqlite_settings(), tmp_path) as db:
        yield db


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT zeroblob(1000000000) AS z",
        "SELECT length(zeroblob(1000000000)) AS n",
        "SELECT length(replace(hex(zeroblob(600000000)), '0', 'xx')) AS n",
    ],
)
def test_sqlite_refuses_a_gigabyte_value(sqlite_db, sql: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StatementRefused) as caught:
        sqlite_db.run(sql, limit=10)
    assert caught.value.code == "value_too_large"
    assert "aggregate instead" in str(caught.value)


def test_sqlite_printf_past_the_length_limit_is_null_not_a_gigabyte(sqlite_db) -> None:  # type: ignore[no-untyped-def]
    result = sqlite_db.run("SELECT printf('%.*c', 1000000000, 'x') AS s", limit=1)
    assert result.rows == ((None,),)


def test_sqlite_cuts_a_result_by_bytes_and_says_so(sqlite_db) -> None:  # type: ignore[no-untyped-def]
    sql = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) "
        "SELECT i, printf('%.*c', 1048576, 'x') AS s FROM n"
    )
    result = sqlite_db.run(sql, limit=1000)
    assert result.truncated and result.truncated_by == "byte_limit"
    assert 0 < len(result.rows) <= MAX_RESULT_BYTES // MB
    rows = sqlite_db.run("SELECT id FROM patient", limit=2)
    assert rows.truncated and rows.truncated_by == "row_limit" and len(rows.rows) == 2
    whole = sqlite_db.run("SELECT id FROM patient", limit=10)
    assert not whole.truncated and whole.truncated_by is None


def test_postgresql_sets_work_mem_and_cuts_by_bytes(warehouse: Warehouse) -> None:
    environ = {URL_ENV: warehouse.url(warehouse.reader)}
    with open_database(warehouse.settings(), Path("."), environ=environ) as db:
        [[work_mem]] = db.run("SELECT current_setting('work_mem') AS w", limit=1).rows
        assert work_mem == "32MB"
        result = db.run(
            "SELECT g, repeat('x', 1048576) AS s FROM generate_series(1, 100) g", limit=1000
        )
        assert result.truncated and result.truncated_by == "byte_limit"
        assert len(result.rows) <= MAX_RESULT_BYTES // MB
        # generate_series in the select list streams (ProjectSet); in FROM PostgreSQL would
        # materialise all rows first and the test would time the server, not our cut.
        many = db.run("SELECT generate_series(1, 50000000) AS g", limit=5)
        assert many.truncated_by == "row_limit" and len(many.rows) == 5


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT repeat('x', 1000000000)",
        "SELECT lpad('x', 2000000000, 'y')",
        "SELECT rpad(label, n, '.') FROM t",
    ],
)
def test_the_postgresql_check_refuses_values_of_unbounded_size(sql: str) -> None:
    verdict = check_statement(sql, "postgresql")
    assert [r.code for r in verdict.reasons] == ["unbounded_value"]
    assert check_statement("SELECT lpad(code, 5, '0') FROM t", "postgresql").ok
