"""When a routine is late: its latest instant due `late_after_minutes` ago has no succeeded
run (nor has a later one); a failed last run is flagged until a run succeeds."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from thoth.errors import ThothError
from thoth.runtime import open_state
from thoth.schedule.routines import BUILTIN, RoutineContext
from thoth.schedule.scheduler import Scheduler
from thoth.workspace import Workspace

SCHEDULE = """
[schedule]
timezone = "Europe/Rome"

[[schedule.routines]]
name = "nightly"
routine = "docs_sync"
at = "02:30"
late_after_minutes = 60
"""


class Broken(ThothError):
    code = "broken_on_purpose"


def test_late_after_its_grace_and_failed_until_a_run_succeeds(
    make_workspace: Callable[..., Workspace],
) -> None:
    ws = make_workspace()
    with (ws.root / "thoth.toml").open("a", encoding="utf-8") as f:
        f.write(SCHEDULE)
    ws = Workspace.open(ws.root)
    outcomes: list[bool] = [False, True]

    def routine(ctx: RoutineContext) -> dict[str, Any]:
        if not outcomes.pop(0):
            raise Broken(f"run {ctx.run.id} broke -> nothing to do")
        return {}

    now = [datetime(2026, 1, 10, 1, 0, tzinfo=UTC)]  # 02:00 in Rome
    with open_state(ws) as state:
        scheduler = Scheduler(
            ws, state, clock=lambda: now[0], routines=dict.fromkeys(BUILTIN, routine)
        )

        def status() -> Any:
            (one,) = scheduler.status()
            return one

        assert status().late, "it never ran: yesterday's 02:30 is not covered"
        _, (first,) = scheduler.run_due()  # yesterday's run, which fails
        assert first.status == "failed" and first.error_code == "broken_on_purpose"
        assert status().failed and status().late
        now[0] = datetime(2026, 1, 10, 2, 0, tzinfo=UTC)  # 03:00: today's 02:30 is 30 min old
        _, (second,) = scheduler.run_due()  # today's succeeds and covers yesterday's
        assert second.status == "succeeded"
        assert not status().failed and not status().late
        now[0] = datetime(2026, 1, 11, 2, 29, tzinfo=UTC)  # 03:29 next day: within the grace
        assert not status().late
        now[0] = datetime(2026, 1, 11, 2, 31, tzinfo=UTC)  # 03:31: 61 min without a run
        late = status()
        assert late.late and late.late_since == datetime(2026, 1, 11, 1, 30, tzinfo=UTC)
        assert late.warnings()[0][0] == "schedule_late"
