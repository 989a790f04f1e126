"""A SQLite database is read-only because SQLite itself refuses: files opened `mode=ro`, an
authorizer that allows only reads, a progress handler as the statement timeout. Every raw
statement here goes straight to run()/explain(), past check_statement."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_outcomes import _denied_child
from tests.database.sqlite_fixture import (
    ADMISSIONS,
    MAIN_ROWS,
    fingerprint,
    make_sqlite_workspace,
    sqlite_settings,
)
from thoth.config import DatabaseSettings
from thoth.database import DatabaseUnavailable, StatementRefused, open_database

# statement -> the code its refusal carries
REFUSED = {
    "INSERT INTO patient VALUES (9, 'X', 'CAR', NULL)": "read_only",
    "INSERT INTO adt.admission VALUES (9, 1, 1, 3)": "read_only",
    "REPLACE INTO ward VALUES ('CAR', 'x')": "read_only",
    "UPDATE patient SET tax_code = 'X'": "read_only",
    "DELETE FROM adt.admission": "read_only",
    "WITH x AS (SELECT 1) DELETE FROM ward": "read_only",
    "CREATE TABLE evil (a)": "read_only",
    "CREATE TEMP TABLE evil (a)": "read_only",
    "CREATE INDEX evil ON patient (tax_code)": "read_only",
    "DROP TABLE ward": "read_only",
    "DROP VIEW patient_ward": "read_only",
    "ALTER TABLE ward ADD COLUMN evil TEXT": "read_only",
    "ATTACH DATABASE 'data/evil.sqlite' AS evil": "read_only",
    "DETACH DATABASE adt": "read_only",
    "PRAGMA user_version = 7": "read_only",
    "PRAGMA adt.journal_mode = DELETE": "read_only",
    "PRAGMA table_info(patient)": "read_only",
    "BEGIN IMMEDIATE": "read_only",
    "SAVEPOINT s": "read_only",
    "VACUUM": "read_only",
    "REINDEX": "read_only",
    "ANALYZE": "read_only",
    "SELECT load_extension('/tmp/evil')": "read_only",
    "SELECT 1; DELETE FROM ward": "multiple_statements",
    "SELECT 1; SELECT 2": "multiple_statements",
    "SELEC 1": "statement_invalid",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    make_sqlite_workspace(tmp_path)
    return tmp_path


@pytest.fixture
def settings(root: Path) -> DatabaseSettings:
    return sqlite_settings()


def _counts(root: Path) -> tuple[int, int]:
    with sqlite3.connect(f"file:{root / 'data' / 'clinic.sqlite'}?mode=ro", uri=True) as a:
        patients = a.execute("SELECT count(*) FROM patient").fetchone()[0]
    a.close()
    with sqlite3.connect(f"file:{root / 'data' / 'adt.sqlite'}?mode=ro", uri=True) as b:
        admissions = b.execute("SELECT count(*) FROM admission").fetchone()[0]
    b.close()
    return patients, admissions


def test_reads_both_schemas_with_a_limit(settings: DatabaseSettings, root: Path) -> None:
    with open_database(settings, root) as db:
        assert db.dialect == "sqlite"
        db.ping()
        result = db.run("SELECT id, tax_code FROM patient ORDER BY id", limit=2)
        assert result.columns == ("id", "tax_code")
        assert result.rows == ((1, "RSSMRA80A01H501U"), (2, "VRDLGU75B02F205X"))
        assert result.truncated
        assert result.duration_ms >= 0
        whole = db.run(
            "SELECT count(*) AS n FROM adt.admission a JOIN main.patient p ON p.id = a.patient_id",
            limit=10,
        )
        assert whole.rows == ((ADMISSIONS,),) and not whole.truncated
        recursive = db.run(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT sum(i) FROM n",
            limit=1,
        )
        assert recursive.rows == ((15,),)
        plan = db.explain("SELECT * FROM patient WHERE tax_code = 'X'")
        assert plan and any("patient" in line for line in plan)
        # sorting, DISTINCT and automatic indexes write only SQLite's own ephemeral tables
        for query in (
            "SELECT DISTINCT ward_code FROM patient ORDER BY tax_code DESC LIMIT 2",
            "SELECT p.id FROM patient p JOIN adt.admission a ON a.patient_id = p.id ORDER BY 1",
            "SELECT ward_code, count(*) FROM patient GROUP BY ward_code",
        ):
            assert db.explain(query), query
            assert db.run(query, limit=10).rows, query


@pytest.mark.parametrize("method", ["run", "explain"])
def test_writes_ddl_attach_pragma_and_batches_are_refused_by_sqlite(
    settings: DatabaseSettings, root: Path, method: str
) -> None:
    before = fingerprint(root)
    with open_database(settings, root) as db:
        for statement, code in REFUSED.items():
            with pytest.raises(StatementRefused) as caught:
                if method == "run":
                    db.run(statement, limit=10)
                else:
                    db.explain(statement)
            refusal = caught.value
            assert refusal.code == code, (statement, refusal.code, str(refusal))
            assert refusal.reason, statement  # SQLite's own message
            assert "->" in str(refusal), statement  # says what to do
        # still usable after every refusal
        assert db.run("SELECT count(*) FROM ward", limit=1).rows == ((2,),)
    assert _counts(root) == (MAIN_ROWS, ADMISSIONS)
    assert fingerprint(root) == before
    assert not (root / "data" / "evil.sqlite").exists()


def test_a_write_names_what_the_database_refused(settings: DatabaseSettings, root: Path) -> None:
    with open_database(settings, root) as db, pytest.raises(StatementRefused) as caught:
        db.run("DELETE FROM adt.admission", limit=1)
    text = str(caught.value)
    assert "DELETE" in text and "admission" in text
    assert "not authorized" in caught.value.reason


def test_a_long_recursive_query_stops_at_the_statement_timeout(
    settings: DatabaseSettings, root: Path
) -> None:
    endless = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    )
    with open_database(settings, root) as db:
        started = time.monotonic()
        with pytest.raises(StatementRefused) as caught:
            db.run(endless, limit=1)
        assert time.monotonic() - started < 3
        assert caught.value.code == "statement_timeout"
        assert "database.statement_timeout_seconds" in str(caught.value)
        assert caught.value.reason  # SQLite's "interrupted"
        # the next statement gets its own deadline
        assert db.run("SELECT 1", limit=1).rows == ((1,),)


def test_a_missing_file_is_unavailable_and_never_created(root: Path) -> None:
    settings = DatabaseSettings(
        dialect="sqlite", files={"main": "data/clinic.sqlite", "lab": "data/lab.sqlite"}
    )
    with pytest.raises(DatabaseUnavailable) as caught:
        open_database(settings, root)
    text = str(caught.value)
    assert "database.files.lab" in text and str(root / "data" / "lab.sqlite") in text
    assert not (root / "data" / "lab.sqlite").exists()


def test_a_file_that_is_not_a_database_is_unavailable(root: Path) -> None:
    (root / "data" / "notes.sqlite").write_text("not a database at all, just text" * 100)
    settings = DatabaseSettings(dialect="sqlite", files={"notes": "data/notes.sqlite"})
    with pytest.raises(DatabaseUnavailable) as caught:
        open_database(settings, root)
    assert "database.files.notes" in str(caught.value)


def test_without_a_main_file_every_schema_is_attached(root: Path) -> None:
    settings = DatabaseSettings(dialect="sqlite", files={"adt": "data/adt.sqlite"})
    with open_database(settings, root) as db:
        assert db.run("SELECT count(*) FROM adt.admission", limit=1).rows == ((ADMISSIONS,),)
        with pytest.raises(StatementRefused):
            db.run("CREATE TABLE main.evil (a)", limit=1)


def test_files_the_user_may_not_write_open(root: Path) -> None:
    """Read-only means no write is ever needed: files and directory read-only to the user
    (for root, in a child without the capabilities that ignore permissions)."""
    for path in (root / "data").iterdir():
        path.chmod(0o444)
    (root / "data").chmod(0o555)
    src = Path(__file__).resolve().parents[2] / "src"
    script = (
        "import sys; from pathlib import Path; from thoth.database import open_database; "
        "from tests.database.sqlite_fixture import sqlite_settings; "
        "db = open_database(sqlite_settings(), Path(sys.argv[1])); "
        "print(db.run('SELECT count(*) FROM patient JOIN adt.admission a ON a.patient_id = patient.id', limit=1).rows)"
    )
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{src.parent}"}
    try:
        done = subprocess.run(
            _denied_child([sys.executable, "-c", script, str(root)]),
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    finally:
        (root / "data").chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"(({ADMISSIONS},),)"


def test_closed_database_is_unavailable(settings: DatabaseSettings, root: Path) -> None:
    db = open_database(settings, root)
    db.close()
    with pytest.raises(DatabaseUnavailable):
        db.run("SELECT 1", limit=1)
