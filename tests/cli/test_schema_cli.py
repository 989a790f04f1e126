"""`tht schema sync|show|link`, `tht session run` and `tht evidence validate --schema` as a
user or an agent calls them: JSON, exit codes, and what a refusal says."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.conftest import commit_all
from tests.fake_embeddings import FakeEmbeddingServer
from tests.schema.warehouse import warehouse_runtime
from thoth.cli import exitcodes
from thoth.cli.main import app
from thoth.runtime import state_dir
from thoth.session import SessionStore
from thoth.workspace import Workspace

Make = Callable[..., Workspace]
runner = CliRunner()
SQL = "SELECT care_regime, count(*) AS n FROM adt.admission GROUP BY care_regime"


def tht(*args: str) -> tuple[int, Any]:
    result = runner.invoke(app, [*args, "--json"])
    try:
        return result.exit_code, json.loads(result.stdout)
    except json.JSONDecodeError:
        raise AssertionError(result.output) from None


@pytest.fixture
def root(make_workspace: Make) -> Iterator[Path]:
    with FakeEmbeddingServer(dim=8) as fake:
        rt = warehouse_runtime(make_workspace, fake.url)
        rt.close()
        yield rt.ws.root


def test_sync_show_link(root: Path) -> None:
    code, synced = tht("schema", "sync", "-w", str(root))
    assert code == exitcodes.OK and synced["outcome"] == "activated"
    assert "clinical.patient" in synced["tables_created"]
    code, again = tht("schema", "sync", "-w", str(root))
    assert code == exitcodes.OK and again["outcome"] == "unchanged"
    code, shown = tht("schema", "show", "clinical.patient", "-w", str(root))
    assert code == exitcodes.OK
    [table] = shown["tables"]
    assert [c["name"] for c in table["columns"]] == ["patient_id", "tax_code", "birth_date", "sex"]
    code, linked = tht("schema", "link", "sesso del paziente", "--size", "5", "-w", str(root))
    assert code == exitcodes.OK and len(linked["columns"]) >= 5
    code, refused = tht("schema", "show", "clinical.patients", "-w", str(root))
    assert code == exitcodes.FAILED and "closest: clinical.patient" in refused["error"]


def test_link_before_any_sync_says_what_to_do(root: Path) -> None:
    code, failed = tht("schema", "link", "sesso del paziente", "-w", str(root))
    assert code == exitcodes.PRECONDITION and failed["code"] == "schema_not_synced"
    assert "tht schema sync" in failed["error"]


def test_sync_of_a_missing_database_file_names_the_setting(root: Path) -> None:
    (root / "warehouse" / "clinical.sqlite").unlink()
    code, failed = tht("schema", "sync", "-w", str(root))
    assert code == exitcodes.PRECONDITION and failed["code"] == "database_unavailable"
    assert "database.files.clinical" in failed["error"]


def test_session_run_prints_rows_writes_csv_and_records_a_receipt(
    root: Path, tmp_path: Path
) -> None:
    tht("schema", "sync", "-w", str(root))
    session = SessionStore(state_dir(Workspace.open(root)) / "sessions").create("quanti?")
    sid = session.id
    code, refused = tht(
        "session", "decide", sid, "--stage", "final_sql", "--type", "final_sql_approved",
        "--subject", "per regime", "--detail", "SELECT nope FROM adt.admission", "-w", str(root),
    )  # fmt: skip
    assert code == exitcodes.FAILED and refused["code"] == "decision_refused"
    assert "no such column: nope" in json.dumps(refused)
    code, _ = tht(
        "session", "decide", sid, "--stage", "final_sql", "--type", "final_sql_approved",
        "--subject", "per regime", "--detail", SQL, "-w", str(root),
    )  # fmt: skip
    assert code == exitcodes.OK
    out = tmp_path / "rows.csv"
    code, ran = tht("session", "run", sid, "--csv", str(out), "-w", str(root))
    assert code == exitcodes.OK and ran["ok"]
    assert ran["columns"] == ["care_regime", "n"] and len(ran["rows"]) == 2
    assert ran["receipt"]["row_count"] == 2 and ran["receipt"]["data_date"] == "2024-11-30"
    with out.open(encoding="utf-8") as handle:
        assert next(iter(csv.reader(handle))) == ["care_regime", "n"]
    code, shown = tht("session", "show", sid, "-w", str(root))
    assert [r["run"]["status"] for r in shown["runs"]] == ["succeeded"]


def test_validate_schema_reports_units_naming_what_the_database_lacks(root: Path) -> None:
    tht("schema", "sync", "-w", str(root))
    code, report = tht("evidence", "validate", str(root), "--schema")
    # The test Evidence names clinical.episode.discharge_status: it exists. Rename it away.
    assert code == exitcodes.OK, report
    enum = next((root / "evidence" / "curated" / "enum").glob("*.md"))
    enum.write_text(
        enum.read_text(encoding="utf-8").replace("discharge_status", "dischrge_status"),
        encoding="utf-8",
    )
    commit_all(root, "a typo in a unit")
    code, report = tht("evidence", "validate", str(root), "--schema")
    assert code == exitcodes.FAILED
    unknown = [p for p in report["problems"] if p["code"] == "unknown_name"]
    assert unknown and "closest: clinical.episode.discharge_status" in unknown[0]["message"]


DEEP = "SELECT " + "(" * 600 + "1" + ")" * 600 + " AS n FROM adt.admission"
LONG = "SELECT 1" + " + 1" * 30_000 + " AS n FROM adt.admission"


@pytest.mark.parametrize(("sql", "code"), [(DEEP, "sql_too_deep"), (LONG, "sql_too_long")])
def test_sql_too_deep_or_too_long_is_a_coded_refusal_not_a_traceback(
    root: Path, sql: str, code: str
) -> None:
    """Issue 22, point 6: every SQL entry point bounds the text before a parser recurses."""
    tht("schema", "sync", "-w", str(root))
    sid = SessionStore(state_dir(Workspace.open(root)) / "sessions").create("quanti?").id
    status, refused = tht(
        "session", "decide", sid, "--stage", "final_sql", "--type", "final_sql_approved",
        "--subject", "deep", "--detail", sql, "-w", str(root),
    )  # fmt: skip
    assert status == exitcodes.FAILED and refused["code"] == "decision_refused"
    assert code in json.dumps(refused) and "Traceback" not in json.dumps(refused)
