"""The one SQL checker (thoth.sqlcheck): formulas are one harmless expression, examples (and, later,
generated SQL) one read-only SELECT; everything else is refused with a reason that names the
function, operator or clause and says what to do."""

from __future__ import annotations

import re

import pytest

from tests.conftest import EXAMPLES
from thoth.sqlcheck import SqlVerdict, check_expression, check_read_only_query


def refused(verdict: SqlVerdict, fragment: str) -> bool:
    return not verdict.ok and any(fragment in r.message for r in verdict.reasons)


# -- formulas: what the attack on the demo workspace got through ---------------------------------

DANGEROUS_FORMULAS = [
    ("pg_sleep(600)", "`pg_sleep`"),
    ("pg_catalog.pg_sleep(600)", "`pg_sleep`"),
    ("pg_sleep_for('10 minutes')", "`pg_sleep_for`"),
    ("pg_read_file('/etc/passwd')", "`pg_read_file`"),
    ("pg_read_binary_file('/etc/passwd')", "`pg_read_binary_file`"),
    ("pg_ls_dir('.')", "`pg_ls_dir`"),
    ("pg_stat_file('postgresql.conf')", "`pg_stat_file`"),
    ("dblink_exec('host=evil', 'DROP TABLE t')", "`dblink_exec`"),
    ("dblink('host=evil', 'SELECT 1')", "`dblink`"),
    ("postgres_fdw_handler()", "`postgres_fdw_handler`"),
    ("set_config('role', 'postgres', false)", "`set_config`"),
    ("current_setting('data_directory')", "`current_setting`"),
    ("lo_export(1234, '/tmp/x')", "`lo_export`"),
    ("lo_import('/etc/passwd')", "`lo_import`"),
    ("nextval('s')", "`nextval`"),
    ("setval('s', 1)", "`setval`"),
    ("random()", "`random`"),
    ("txid_current()", "`txid_current`"),
    ("pg_advisory_lock(1)", "`pg_advisory_lock`"),
    ("pg_terminate_backend(42)", "`pg_terminate_backend`"),
    ("pg_cancel_backend(42)", "`pg_cancel_backend`"),
    ("pg_reload_conf()", "`pg_reload_conf`"),
    ("query_to_xml('DROP TABLE t', true, true, '')", "`query_to_xml`"),
    ("cursor_to_xml('c', 1, true, true, '')", "`cursor_to_xml`"),
    ("a.x -- ; DROP TABLE clinical.patient", "comment"),
    ("a.x /* ; DROP TABLE t */ + 1", "comment"),
    ("(SELECT max(x) FROM t)", "subquery"),
    ("a.x IN (SELECT y FROM t)", "subquery"),
    ("EXISTS (SELECT 1 FROM pg_authid)", "subquery"),
    ("a.x <-> a.y", "operator `<->`"),
    ("OPERATOR(pg_catalog.<->)(a.x, a.y)", "operator `<->`"),
    ("CURRENT_USER", "CURRENT_USER"),
    ("session_user", "SESSION_USER"),
    ("$1", "parameter"),
    ("a.x::regclass", "`regclass`"),
    ("dwh.compute_age(a.x)", "`dwh.compute_age`"),
    ("xmlelement(name a, 1)", "XML"),
    ("version()", "`version`"),
    ("has_table_privilege('t', 'SELECT')", "`has_table_privilege`"),
    ("pg_catalog.pg_class.relname", "system catalog"),
]


@pytest.mark.parametrize("sql,fragment", DANGEROUS_FORMULAS)
def test_dangerous_formula_is_refused_with_its_reason(sql: str, fragment: str) -> None:
    verdict = check_expression(sql)
    assert refused(verdict, fragment), verdict.reasons


@pytest.mark.parametrize(
    "sql,category",
    [
        ("pg_sleep(1)", "waits"),
        ("pg_read_file('x')", "server's files"),
        ("dblink_exec('h', 'x')", "network"),
        ("set_config('role', 'x', false)", "configuration"),
        ("nextval('s')", "side effect"),
        ("query_to_xml('x', true, true, '')", "runs the SQL"),
        ("random()", "volatile"),
    ],
)
def test_refusal_says_why_the_function_is_dangerous(sql: str, category: str) -> None:
    assert refused(check_expression(sql), category)


def test_an_unknown_function_is_named_and_the_way_out_given() -> None:
    verdict = check_expression("frobnicate(a.x)")
    assert not verdict.ok
    (reason,) = verdict.reasons
    assert reason.code == "function_not_allowed"
    assert "`frobnicate`" in reason.message and "source-format.md" in reason.message


def test_every_offence_is_reported_not_only_the_first() -> None:
    verdict = check_expression("pg_sleep(1) + nextval('s') + a.x <-> a.y")
    codes = [r.message for r in verdict.reasons]
    assert len(codes) == 3, codes


def test_comment_markers_inside_strings_are_not_comments() -> None:
    assert check_expression("a.code || '--' || '/* x */'").ok


@pytest.mark.parametrize(
    "sql,reason",
    [
        ("", "empty"),
        ("SELECT 1", "complete statement"),
        ("WITH x AS (SELECT 1) SELECT * FROM x", "complete statement"),
        ("DROP TABLE clinical.patient", "complete statement"),
        ("a, b", "2 expressions"),
        ("a AS b", "alias"),
        ("1 FROM t", "query clauses"),
        ("age < 18;", "ends with"),
        ("1; DROP TABLE t", "more than one statement"),
        ("CASE WHEN", "not a valid PostgreSQL expression"),
    ],
)
def test_a_formula_is_exactly_one_expression(sql: str, reason: str) -> None:
    assert refused(check_expression(sql), reason)


LEGITIMATE_FORMULAS = [
    "CASE WHEN a < 18 THEN 1 ELSE 0 END",
    "(d.discharge_date - a.admission_date)",
    "lag(x) OVER (PARTITION BY p ORDER BY t)",
    "coalesce(a, b)::int",
    "pg_catalog.round(a.x, 2)",
    "nullif(a.x, 0)",
    "greatest(a.x, least(a.y, 3))",
    "a.x BETWEEN 1 AND 10 AND a.y NOT IN ('A', 'B') OR a.z IS NULL",
    "a.name ILIKE 'ros%' AND a.code NOT LIKE 'X%' AND a.code SIMILAR TO '[0-9]+'",
    "a.x IS DISTINCT FROM a.y AND a.flag IS TRUE",
    "extract(epoch FROM (a.t2 - a.t1)) / 60",
    "date_trunc('month', a.ts) AT TIME ZONE 'Europe/Rome'",
    "substring(a.code FROM 1 FOR 3) || upper(trim(both ' ' FROM a.name))",
    "to_char(a.d, 'YYYY-MM') || '-' || lpad(a.n::text, 3, '0')",
    "CAST(a.x AS REAL) / NULLIF(a.y, 0) * 100",
    "count(DISTINCT a.patient_id) FILTER (WHERE a.x > 0)",
    "percentile_cont(0.5) WITHIN GROUP (ORDER BY a.x)",
    "stddev_samp(a.x) + variance(a.x) + corr(a.x, a.y)",
    "CURRENT_DATE - INTERVAL '30 days'",
    "now() - a.ts > INTERVAL '24 hours'",
    "a.x = ANY (ARRAY[1, 2, 3])",
    "abs(a.x) % 7 + power(a.y, 2) - sqrt(a.z)",
    "CASE WHEN a.x ~ '^[0-9]+$' THEN a.x::int END",
    "round(avg(a.x)::numeric, 1)",
    "strpos(a.s, 'x') > 0 AND length(a.s) < 10",
    "make_date(a.y, a.m, 1)",
    "date_part('year', age(a.admission_date, p.birth_date))::int",
    "-a.x",
    "NOT a.flag",
]


@pytest.mark.parametrize("sql", LEGITIMATE_FORMULAS)
def test_legitimate_formula_is_accepted(sql: str) -> None:
    verdict = check_expression(sql)
    assert verdict.ok, verdict.reasons


# -- example units and (later) generated SQL: one read-only SELECT -------------------------------

DANGEROUS_QUERIES = [
    ("DROP TABLE clinical.patient", "DROP"),
    ("ALTER ROLE bob SUPERUSER", "ALTER ROLE"),
    ("COPY t TO PROGRAM 'rm -rf /'", "COPY"),
    ("SET ROLE postgres", "SET"),
    ("EXPLAIN ANALYZE DELETE FROM t", "EXPLAIN"),
    ("DELETE FROM t", "DELETE"),
    ("SELECT 1; DROP TABLE t", "2 statements"),
    ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "data-modifying"),
    ("WITH u AS (UPDATE t SET a = 1 RETURNING *) SELECT 1", "data-modifying"),
    ("SELECT * INTO t2 FROM t", "INTO"),
    ("SELECT * FROM t FOR UPDATE", "FOR UPDATE"),
    ("SELECT * FROM (SELECT * FROM t FOR SHARE) s", "FOR SHARE"),
    ("SELECT * FROM t -- ; DROP TABLE t", "comment"),
    ("SELECT * FROM pg_catalog.pg_authid", "system catalog"),
    ("SELECT * FROM pg_shadow", "`pg_shadow`"),
    ("SELECT * FROM information_schema.tables", "system catalog"),
    ("SELECT pg_sleep(10)", "`pg_sleep`"),
    ("SELECT * FROM dblink('h', 'SELECT 1') AS r(a int)", "`dblink`"),
    ("SELECT * FROM t WHERE x IN (SELECT pg_read_file('x'))", "`pg_read_file`"),
    ("SELECT set_config('role', 'postgres', false)", "`set_config`"),
    ("SELECT query_to_xml('DROP TABLE t', true, true, '')", "`query_to_xml`"),
    ("SELECT lo_export(1, '/tmp/x')", "`lo_export`"),
    ("SELECT nextval('s')", "`nextval`"),
    ("SELECT $1", "parameter"),
    ("", "empty"),
    ("SELEC 1", "does not parse"),
]


@pytest.mark.parametrize("sql,fragment", DANGEROUS_QUERIES)
def test_dangerous_query_is_refused_with_its_reason(sql: str, fragment: str) -> None:
    verdict = check_read_only_query(sql)
    assert refused(verdict, fragment), verdict.reasons


LEGITIMATE_QUERIES = [
    "SELECT 1",
    "SELECT a.x FROM t a;",
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT i FROM n",
    "SELECT x FROM t UNION SELECT y FROM u ORDER BY 1 LIMIT 5 OFFSET 2",
    "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(n, s)",
    "SELECT d::date FROM generate_series(DATE '2024-01-01', DATE '2024-12-01', "
    "INTERVAL '1 month') AS g(d)",
    "SELECT w, count(*) FROM t GROUP BY ROLLUP (w) HAVING count(*) > 1",
    "SELECT x, rank() OVER w FROM t WINDOW w AS (ORDER BY x)",
    "SELECT * FROM t a LEFT JOIN u b USING (id) CROSS JOIN LATERAL (SELECT b.id) l",
    "SELECT DISTINCT ON (a) a, b FROM t ORDER BY a, b DESC NULLS LAST",
    "SELECT '--not a comment' AS s, 'x /* y */' AS t",
]


@pytest.mark.parametrize("sql", LEGITIMATE_QUERIES)
def test_legitimate_query_is_accepted(sql: str) -> None:
    verdict = check_read_only_query(sql)
    assert verdict.ok, verdict.reasons


# -- the demo workspace: every formula and example it ships is accepted -------------------------


def demo_sql_blocks() -> list[str]:
    blocks = []
    for path in sorted((EXAMPLES / "clinical-dwh").rglob("*.md")):
        blocks += [m.strip() for m in re.findall(r"```sql\n(.*?)```", path.read_text(), re.S)]
    return blocks


DEMO_SQL = demo_sql_blocks()


def test_the_demo_workspace_has_formulas_and_examples() -> None:
    queries = [b for b in DEMO_SQL if re.match(r"(SELECT|WITH)\b", b)]
    assert len(queries) >= 15 and len(DEMO_SQL) - len(queries) >= 15


@pytest.mark.parametrize("sql", DEMO_SQL)
def test_demo_sql_is_accepted(sql: str) -> None:
    is_query = re.match(r"(SELECT|WITH)\b", sql) is not None
    verdict = check_read_only_query(sql) if is_query else check_expression(sql)
    assert verdict.ok, verdict.reasons


def test_a_verdict_summary_joins_every_reason() -> None:
    verdict = check_expression("pg_sleep(1) + random()")
    assert "pg_sleep" in verdict.summary() and "random" in verdict.summary()
    assert check_expression("1 + 1").summary() == ""


def test_deep_and_long_sql_is_refused_with_a_code_on_every_checker() -> None:
    """Issue 22, point 6: no parser sees a text that would overflow its recursion."""
    from thoth.database import check_statement
    from thoth.sqlcheck import check_expression

    deep = "(" * 600 + "1" + ")" * 600
    for verdict in (
        check_statement(f"SELECT {deep}", "sqlite"),
        check_statement(f"SELECT {deep}", "postgresql"),
        check_expression(deep),
    ):
        assert [r.code for r in verdict.reasons] == ["sql_too_deep"]
    long = "SELECT 1" + " + 1" * 30_000
    assert [r.code for r in check_statement(long, "sqlite").reasons] == ["sql_too_long"]
    # Parentheses inside a string literal are text, not nesting.
    assert check_statement("SELECT '" + "(" * 600 + "' AS t", "sqlite").ok
