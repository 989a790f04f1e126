"""The `analytics_refresh` routine: `tht analytics refresh` run by the scheduler (issue 50,
points 1 and 2 together) — a refresh of the SQLite store recorded on its run, and a refused one
recorded as failed with the refresh's code, the served copy untouched."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.analytics.conftest import AnalyticsWorkspace, make_analytics_workspace
from tests.analytics.refresh_source import NEW_DATE, REFRESH, VIEWS, build_source
from tests.analytics.store import DATA_DATE, STORE_FILE
from thoth.runtime import open_state
from thoth.schedule.scheduler import Scheduler
from thoth.workspace import Workspace

SCHEDULE = """
[schedule]
timezone = "Europe/Rome"

[[schedule.routines]]
name = "nightly-store"
routine = "analytics_refresh"
at = "01:00"
"""


@pytest.fixture
def aw(tmp_path: Path) -> Iterator[AnalyticsWorkspace]:
    aw = make_analytics_workspace(tmp_path / "ws", extra=REFRESH + SCHEDULE)
    aw.write("analytics/views.sql", VIEWS)
    build_source(aw.root)
    yield aw


def test_the_nightly_refresh_runs_once_and_a_refused_one_is_a_failed_run(
    aw: AnalyticsWorkspace,
) -> None:
    ws = Workspace.open(aw.root)
    now = [datetime(2026, 1, 10, 6, 0, tzinfo=UTC)]
    with open_state(ws) as state:
        scheduler = Scheduler(ws, state, clock=lambda: now[0])
        _, (run,) = scheduler.run_due()
        assert run.status == "succeeded", run.error
        assert run.result is not None
        assert (run.result["data_date"], run.result["previous_data_date"]) == (NEW_DATE, DATA_DATE)
        assert run.result["checked"] > 0
        assert scheduler.run_due()[1] == [], "once a night"

        served = (aw.root / STORE_FILE).read_bytes()
        toml = aw.root / "thoth.toml"
        toml.write_text(toml.read_text().replace("main.ricovero.note", "main.ricovero.nota"))
        now[0] += timedelta(days=1)
        scheduler = Scheduler(Workspace.open(aw.root), state, clock=lambda: now[0])
        _, (refused,) = scheduler.run_due()
        assert refused.status == "failed"
        assert refused.error_code == "refresh_scrub_unknown_column"
        assert "served copy is untouched" in (refused.error or "")
        assert (aw.root / STORE_FILE).read_bytes() == served
        (status,) = scheduler.status()
        assert status.failed and status.late  # 06:00: the 01:00 run has not succeeded
        assert [c for c, _ in status.warnings()] == ["schedule_late", "schedule_failed"]
