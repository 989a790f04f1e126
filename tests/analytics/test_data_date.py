"""Issue 23, point 3: a data date that is a date. `data_date_sql` must return one row with one
real date or timestamp; anything else withholds the number with `data_date_unreadable`, naming
what came back, on the answer path, in `tht analytics check` and in `tht verify` — which run it
exactly as the answer path does (the store's own connection)."""

from __future__ import annotations

import json
import sqlite3
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.analytics.conftest import AnalyticsWorkspace, make_analytics_workspace
from tests.analytics.store import STORE_FILE
from thoth.analytics.datadate import NotADataDate, data_date_of
from thoth.cli.main import app
from thoth.database.model import QueryResult

QUESTION = "Quanti ricoveri ha avuto la Pediatria nel 2024?"
BAD = {
    "null": ("SELECT NULL AS data_dato", "NULL came back"),
    "zero": ("SELECT 0 AS data_dato", "0 came back"),
    "text-null": ("SELECT 'null' AS data_dato", "no date"),
    "not-a-date": ("SELECT 'ieri sera' AS data_dato", "not a date"),
    "impossible": ("SELECT '2025-02-30' AS data_dato", "does not exist"),
    "blob": ("SELECT x'00ff' AS data_dato", "blob"),
    "future": ("SELECT '2999-01-01' AS data_dato", "in the future"),
    "two-rows": (
        "SELECT '2025-06-30' AS data_dato UNION ALL SELECT '2025-06-29'",
        "more than one row",
    ),
}
runner = CliRunner()


def with_data_date(tmp_path: Path, view: str) -> AnalyticsWorkspace:
    aw = make_analytics_workspace(tmp_path / "ws")
    with sqlite3.connect(aw.root / STORE_FILE) as conn:
        conn.execute("DROP VIEW v_data_dato")
        conn.execute(f"CREATE VIEW v_data_dato AS {view}")
    conn.close()
    aw.activate()
    return aw


def tht(*args: str) -> tuple[int, Any]:
    result = runner.invoke(app, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize(("view", "said"), BAD.values(), ids=BAD.keys())
def test_a_data_date_that_is_no_date_withholds_the_number(
    tmp_path: Path, view: str, said: str
) -> None:
    aw = with_data_date(tmp_path, view)
    service = aw.service()
    try:
        answer = service.ask(QUESTION)
    finally:
        service.close()
    data = answer.as_dict()
    assert data["status"] == "failed" and data["error_code"] == "data_date_unreadable"
    assert said in answer.text
    assert "figures" not in data and "provenance" not in data

    code, checked = tht("analytics", "check", "-w", str(aw.root))
    assert code == 1 and not checked["ok"]
    [problem] = [p for p in checked["problems"] if p["field"] == "analytics.data_date_sql"]
    assert problem["code"] == "data_date_unreadable" and said in problem["message"]

    _, verified = tht("verify", "-w", str(aw.root))
    assert any(
        f["code"] == "data_date_unreadable" and said in f["message"] for f in verified["findings"]
    )


@pytest.mark.parametrize(
    "value",
    ["2025-06-30", "2025-06-30 23:10:00", "2025-06-30T23:10:00+02:00", date(2025, 6, 30)],
)
def test_dates_and_timestamps_are_data_dates(value: object) -> None:
    result = QueryResult(columns=("d",), rows=((value,),), truncated=False, duration_ms=0)
    assert data_date_of(result, today=date(2025, 7, 1)).startswith("2025-06-30")


def test_a_day_ahead_is_tolerated_two_are_not() -> None:
    def result(value: str) -> QueryResult:
        return QueryResult(columns=("d",), rows=((value,),), truncated=False, duration_ms=0)

    assert data_date_of(result("2025-07-02"), today=date(2025, 7, 1)) == "2025-07-02"
    with pytest.raises(NotADataDate, match="in the future"):
        data_date_of(result("2025-07-03"), today=date(2025, 7, 1))


def test_a_good_data_date_still_computes(tmp_path: Path) -> None:
    aw = with_data_date(tmp_path, "SELECT '2025-06-30 23:10:00' AS data_dato")
    service = aw.service()
    try:
        answer = service.ask(QUESTION)
    finally:
        service.close()
    assert answer.status == "computed", answer.as_dict()
    code, checked = tht("analytics", "check", "-w", str(aw.root))
    assert code == 0 and checked["ok"], checked
