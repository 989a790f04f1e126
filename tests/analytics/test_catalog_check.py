"""`tht analytics check`: every catalog problem names the file and the field; exit codes like
`tht evidence validate` (0 valid, 1 problems, 4 no store)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.analytics.conftest import PER_WARD, AnalyticsWorkspace, make_analytics_workspace
from tests.analytics.store import STORE_FILE
from thoth.cli.main import app

runner = CliRunner()


def check(aw: AnalyticsWorkspace, *args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["analytics", "check", "-w", str(aw.root), "--json", *args])
    report: dict[str, Any] = json.loads(result.stdout)
    return result.exit_code, report


@pytest.fixture
def aw(tmp_path: Path) -> AnalyticsWorkspace:
    return make_analytics_workspace(tmp_path / "ws")


def test_the_reviewed_catalog_passes(aw: AnalyticsWorkspace) -> None:
    code, report = check(aw)
    assert code == 0, report
    assert report["ok"] is True and report["files"] == 3
    assert sorted(report["passed"]) == ["degenza-media", "ricoveri-per-reparto", "ricoveri-reparto"]


Transform = Callable[[str], str]
BAD: dict[str, tuple[Transform, str, str]] = {
    # file stem -> (text transform of PER_WARD, expected field, expected code)
    "base-table": (
        lambda t: t.replace("FROM analytics.v_ricoveri", "FROM analytics.ricovero"),
        "sql",
        "not_a_view",
    ),
    "undeclared": (
        lambda t: t.replace("AND regime = :regime", "AND regime = :regime AND giorni > :x"),
        "parameters.x",
        "undeclared",
    ),
    "unused": (
        lambda t: t.replace("AND regime = :regime", ""),
        "parameters.regime",
        "unused",
    ),
    "unqualified": (
        lambda t: t.replace("FROM analytics.v_ricoveri", "FROM v_ricoveri"),
        "sql",
        "unqualified",
    ),
    "write": (
        lambda t: (
            t.replace("SELECT reparto, count(*) AS ricoveri", "DELETE").split("GROUP")[0]
            + "\nresult:\n  shape: value\n  columns:\n    n: {label: N, kind: quantity}\n"
        ),
        "sql",
        "not_select",
    ),
    "columns": (
        lambda t: t.replace("reparto: {label: Reparto, kind: category}", ""),
        "result.columns",
        "columns",
    ),
    "unnamed-aggregate": (
        lambda t: t.replace("count(*) AS ricoveri", "count(*)").replace(
            "ORDER BY ricoveri", "ORDER BY 2"
        ),
        "result.columns",
        "unnamed_column",
    ),
    "bad-default": (
        lambda t: t.replace("default: ordinario", "default: notturno"),
        "parameters.regime",
        "invalid",
    ),
    "wrong-id": (lambda t: t, "id", "invalid"),
    "unknown-key": (lambda t: t + "owner: someone\n", "owner", "invalid"),
    "unknown-column": (
        lambda t: t.replace("count(*) AS ricoveri", "count(nope) AS ricoveri"),
        "sql",
        "statement_invalid",
    ),
}


@pytest.mark.parametrize("stem", sorted(BAD))
def test_a_problem_names_file_field_and_code(aw: AnalyticsWorkspace, stem: str) -> None:
    transform, field, code = BAD[stem]
    text = transform(PER_WARD)
    if stem != "wrong-id":
        text = text.replace("id: ricoveri-per-reparto", f"id: {stem}")
    aw.write(f"analytics/queries/{stem}.yaml", text)
    exit_code, report = check(aw)
    assert exit_code == 1
    problems = report["problems"]
    assert isinstance(problems, list)
    mine = [p for p in problems if p["where"] == f"analytics/queries/{stem}.yaml"]
    assert mine, problems
    assert (field, code) in {(p["field"], p["code"]) for p in mine}, mine
    assert len(report["passed"]) == 3  # the good entries still pass


def test_values_from_must_be_a_view_column_holding_the_default(aw: AnalyticsWorkspace) -> None:
    text = (aw.root / "analytics/queries/ricoveri-reparto.yaml").read_text("utf-8")
    aw.write(
        "analytics/queries/ricoveri-reparto.yaml",
        text.replace(
            "values_from: analytics.v_reparti.reparto}", "values_from: analytics.reparto.nome}"
        ),
    )
    _, report = check(aw)
    [problem] = report["problems"]
    assert problem["field"] == "parameters.reparto.values_from"
    assert problem["code"] == "unknown_view"


def test_a_store_that_cannot_be_opened_exits_4(aw: AnalyticsWorkspace) -> None:
    (aw.root / STORE_FILE).unlink()
    result = runner.invoke(app, ["analytics", "check", "-w", str(aw.root)])
    assert result.exit_code == 4
    assert "analytics.files.analytics" in " ".join(result.output.split())


def test_check_reads_a_committed_revision_when_asked(aw: AnalyticsWorkspace) -> None:
    aw.activate()
    aw.write("analytics/queries/broken.yaml", "id: [")
    assert check(aw)[0] == 1
    code, report = check(aw, "--revision", "HEAD")
    assert code == 0 and report["files"] == 3


def test_an_enumeration_beyond_the_value_cap_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    """More distinct values than [analytics] max_enum_values: served (the first ones are
    matched), and check says so."""
    capped = make_analytics_workspace(tmp_path / "ws", extra="max_enum_values = 2\n")
    code, report = check(capped)
    assert code == 0 and report["ok"] is True
    [warning] = report["warnings"]
    assert warning["code"] == "enum_capped"
    assert warning["field"] == "parameters.reparto.values_from"
    assert "more than 2 distinct values" in warning["message"]
    code, report = check(make_analytics_workspace(tmp_path / "plain"))
    assert report["warnings"] == []
