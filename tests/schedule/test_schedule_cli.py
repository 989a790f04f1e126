"""`tht schedule` on a real workspace: the routines run through the same code as the commands
(a docs sync with its run record, the metrics page), a failed routine is flagged in `tht
schedule list`, `tht verify`, the service log and /metrics, and `poll` syncs only when the
forge's branch moved."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from tests.conftest import git
from tests.fake_embeddings import FakeEmbeddingServer
from tests.schedule.forge import PAGE, Forge, following_workspace
from tests.service.conftest import Server
from thoth.cli import exitcodes
from thoth.cli.main import app
from thoth.runtime import open_state
from thoth.schedule.scheduler import Scheduler
from thoth.service.registry import add_caller
from thoth.workspace import Workspace

SCHEDULE = """
[schedule]
timezone = "Europe/Rome"

[[schedule.routines]]
name = "nightly"
routine = "docs_sync"
at = "02:30"

[[schedule.routines]]
name = "metrics"
routine = "metrics_page"
every = "1d"

[[schedule.routines]]
name = "poll"
routine = "poll"
every = "15m"
"""

runner = CliRunner()


@pytest.fixture(scope="module")
def embeddings() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


@pytest.fixture
def scheduled(
    tmp_path: Path, make_workspace: Callable[..., Workspace], embeddings: FakeEmbeddingServer
) -> tuple[Workspace, Forge]:
    ws, forge = following_workspace(tmp_path, make_workspace, embeddings.url, SCHEDULE)
    return Workspace.open(ws.root), forge


def tht(*args: str) -> tuple[int, dict[str, object]]:
    result = runner.invoke(app, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_run_due_runs_each_routine_once_and_a_failed_one_is_flagged_everywhere(
    scheduled: tuple[Workspace, Forge], tmp_path: Path
) -> None:
    ws, _forge = scheduled
    root = str(ws.root)
    code, first = tht("schedule", "run-due", "-w", root)
    assert code == exitcodes.FAILED, first  # the metrics page: no [analytics] store
    runs = {r["routine"]: r for r in first["runs"]}  # type: ignore[attr-defined]
    assert set(runs) == {"nightly", "metrics", "poll"}
    assert runs["nightly"]["status"] == "succeeded"
    assert runs["metrics"]["status"] == "failed" and runs["metrics"]["error_code"] == "config"
    assert "declares no [analytics] store" in runs["metrics"]["error"]
    with open_state(ws) as state:
        (sync,) = state.list_sync_runs(ws.settings.workspace)
    assert sync.id == runs["nightly"]["result"]["sync_run"] and sync.status == "succeeded"
    assert sync.run_by.startswith("schedule nightly (")
    # the poll ran after the nightly sync: the branch had not moved since
    assert runs["poll"]["result"] == {"moved": {}, "sync_run": None}

    code, again = tht("schedule", "run-due", "-w", root)
    assert code == exitcodes.OK and again["runs"] == [], "nothing is run twice"

    code, listed = tht("schedule", "list", "-w", root)
    assert code == exitcodes.OK
    routines = {r["name"]: r for r in listed["routines"]}  # type: ignore[attr-defined]
    # failed (and late too once late_after_minutes have passed since its due instant)
    assert routines["metrics"]["failed"]
    assert "schedule_failed" in [w["code"] for w in routines["metrics"]["warnings"]]
    assert not routines["nightly"]["failed"] and routines["nightly"]["warnings"] == []
    assert routines["nightly"]["next_due"] > routines["nightly"]["latest_due"]
    human = runner.invoke(app, ["schedule", "list", "-w", root])
    assert "FAILED" in human.stdout and "schedule_failed" in human.stdout

    code, verified = tht("verify", "-w", root)
    assert code == exitcodes.OK, verified  # a warning does not fail verify
    found = [f for f in verified["findings"] if f["code"] == "schedule_failed"]  # type: ignore[attr-defined]
    assert len(found) == 1 and found[0]["level"] == "warning" and "metrics" in found[0]["where"]

    _, key = add_caller(ws.root, "ops", ["public"])
    server = Server(ws.root, {"ops": key}, tmp_path / "serve.log")
    try:
        metrics = server.get("/metrics", caller="ops").text
    finally:
        server.stop()
    assert 'thoth_schedule_failed{routine="metrics"} 1.0' in metrics
    assert 'thoth_schedule_failed{routine="nightly"} 0.0' in metrics
    assert 'thoth_schedule_late{routine="poll"} 0.0' in metrics
    assert 'thoth_schedule_runs_total{routine="metrics",status="failed"} 1.0' in metrics
    log = (tmp_path / "serve.log").read_text("utf-8")
    assert "schedule [schedule_failed]: routine metrics (metrics_page)" in log


def test_poll_syncs_only_when_the_forge_branch_moved_and_a_late_routine_is_flagged(
    scheduled: tuple[Workspace, Forge],
) -> None:
    ws, forge = scheduled
    # Noon in Rome tomorrow, never the clock's time of day: started in the half hour before the
    # nightly routine's 02:30 (a CI run at 01:10 UTC), the steps below made it due again.
    rome = ZoneInfo("Europe/Rome")
    start = (datetime.now(rome) + timedelta(days=1)).replace(
        hour=12, minute=0, second=0, microsecond=0
    )
    now = [start.astimezone(UTC)]
    with open_state(ws) as state:
        scheduler = Scheduler(ws, state, clock=lambda: now[0])
        _, ran = scheduler.run_due()
        assert {r.routine: r.status for r in ran} == {
            "nightly": "succeeded",
            "metrics": "failed",
            "poll": "succeeded",
        }
        commit = forge.write("wiki/nuova.md", PAGE.replace("urgenti", "programmati"))
        now[0] += timedelta(minutes=15)
        _, ran = scheduler.run_due()
        (poll,) = ran
        assert poll.result is not None and poll.result["moved"] == {"wiki": commit}
        sync = state.get_sync_run(poll.result["sync_run"])
        assert sync is not None and sync.revisions["wiki"] == commit
        assert git(forge.served, "rev-parse", "HEAD").strip() == commit
        now[0] += timedelta(minutes=15)
        _, ran = scheduler.run_due()
        assert [r.result for r in ran] == [{"moved": {}, "sync_run": None}]
        assert len(state.list_sync_runs(ws.settings.workspace)) == 2

        # a day later no scheduler ran: the nightly and metrics runs are late
        now[0] += timedelta(days=1, hours=2)
        late = {s.name: s for s in scheduler.status()}
        assert late["nightly"].late and late["poll"].late
        assert late["nightly"].warnings()[0][0] == "schedule_late"
        assert "no run has succeeded since (last success due" in late["nightly"].warnings()[0][1]
        assert late["metrics"].late and late["metrics"].last_success is None
        assert "it never succeeded" in late["metrics"].warnings()[0][1]


def test_a_workspace_without_routines_is_told_where_to_declare_them(
    make_workspace: Callable[..., Workspace],
) -> None:
    """The hint names the table literally: Rich markup would swallow `[schedule.routines]`."""
    ws = make_workspace()
    result = runner.invoke(app, ["schedule", "list", "-w", str(ws.root)])
    assert result.exit_code == 0, result.output
    assert "[[schedule.routines]] in thoth.toml" in " ".join(result.output.split())
