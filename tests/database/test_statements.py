"""check_statement: exactly one read-only SELECT/WITH statement in the dialect, refusals with
thoth.sqlcheck's stable codes and a message that says what to do."""

from __future__ import annotations

import pytest

from thoth.database import check_statement
from thoth.sqlcheck import check_read_only_query

ACCEPTED_SQLITE = [
    "SELECT 1",
    "select id, tax_code from patient where ward_code = 'CAR' order by id limit 10;",
    'SELECT "County Name", count(*) FROM main.frpm GROUP BY 1',
    "SELECT [County Name] FROM frpm",
    "WITH w AS (SELECT code FROM ward) SELECT * FROM w JOIN patient p ON p.ward_code = w.code",
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT * FROM n",
    "SELECT a FROM t UNION SELECT b FROM u",
    "SELECT a FROM t EXCEPT SELECT b FROM u",
    "SELECT strftime('%Y', d), substr(x, 1, 3), coalesce(a, 0), iif(a > 0, 1, 0) FROM t",
    "SELECT * FROM t WHERE name GLOB 'A*' AND x IN (SELECT y FROM adt.admission)",
    "VALUES (1, 2)",
    "SELECT ';' AS semicolon, '-- not a comment' AS dashes",
]

REFUSED_SQLITE = {
    "": "empty",
    "  ;  ": "empty",
    "SELECT (": "parse_error",
    "SELECT 1; SELECT 2": "statements",
    "INSERT INTO t VALUES (1)": "not_select",
    "REPLACE INTO t VALUES (1)": "not_select",
    "UPDATE t SET a = 1": "not_select",
    "DELETE FROM t": "not_select",
    "CREATE TABLE x (a)": "not_select",
    "DROP TABLE t": "not_select",
    "ALTER TABLE t ADD COLUMN b": "not_select",
    "ATTACH DATABASE 'x.db' AS x": "not_select",
    "DETACH DATABASE adt": "not_select",
    "PRAGMA table_info(t)": "not_select",
    "PRAGMA user_version = 3": "not_select",
    "BEGIN": "not_select",
    "VACUUM": "not_select",
    "EXPLAIN SELECT 1": "not_select",
    "WITH gone AS (DELETE FROM t RETURNING *) SELECT * FROM gone": "data_modifying_cte",
    "SELECT * INTO copy FROM t": "select_into",
    "SELECT 1 -- the count": "comment",
    "SELECT /* x */ 1": "comment",
    "SELECT load_extension('/tmp/evil.so')": "function_refused",
    "SELECT random()": "function_refused",
    "SELECT hex(randomblob(8))": "function_refused",
    "SELECT sqlite_version()": "function_refused",
    "SELECT * FROM sqlite_master": "system_catalog",
    "SELECT * FROM adt.sqlite_schema": "system_catalog",
    "SELECT * FROM pragma_table_info('t')": "system_catalog",
}


@pytest.mark.parametrize("sql", ACCEPTED_SQLITE)
def test_sqlite_accepts_one_read_only_query(sql: str) -> None:
    verdict = check_statement(sql, "sqlite")
    assert verdict.ok, verdict.summary()


@pytest.mark.parametrize(("sql", "code"), REFUSED_SQLITE.items())
def test_sqlite_refusals_carry_a_stable_code_and_what_to_do(sql: str, code: str) -> None:
    verdict = check_statement(sql, "sqlite")
    assert not verdict.ok
    assert code in [r.code for r in verdict.reasons], verdict.reasons
    message = verdict.summary()
    assert any(word in message for word in ("write", "remove", "only", "must be", "accepted")), (
        message
    )


def test_sqlite_a_refused_function_is_named() -> None:
    verdict = check_statement("SELECT load_extension('/tmp/evil.so')", "sqlite")
    assert "load_extension" in verdict.summary()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) FROM adt.admission",
        "WITH a AS (SELECT 1 AS x) SELECT x FROM a",
        "INSERT INTO t VALUES (1)",
        "SELECT 1; SELECT 2",
        "SELECT pg_sleep(3)",
        "COPY t TO '/tmp/x'",
        "",
    ],
)
def test_postgresql_is_thoth_sqlcheck(sql: str) -> None:
    assert check_statement(sql, "postgresql") == check_read_only_query(sql)


def test_postgresql_refusals_keep_sqlcheck_codes() -> None:
    assert [r.code for r in check_statement("DELETE FROM t", "postgresql").reasons] == [
        "not_select"
    ]
    assert check_statement("SELECT a FROM dw.t WHERE a > 1", "postgresql").ok
