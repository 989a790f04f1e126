"""Two schedulers in two processes over 50 simulated days (issue 50, point 2): each due run is
executed exactly once, a run whose process is killed is recovered by the lease and run by the
other, and a clock that goes back runs nothing and says so."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from thoth.runtime import open_state
from thoth.schedule.timing import Timing
from thoth.state.core import ts
from thoth.state.schedule import ScheduleQueue, run_key
from thoth.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
START = datetime(2026, 3, 1, tzinfo=UTC)  # 50 days across the clock change of 29 March
DAYS = 50
STEP = timedelta(hours=1)
LEASE_S = 5400  # 1.5 ticks: a killed run is queued again two ticks later

SCHEDULE = f"""
[schedule]
timezone = "Europe/Rome"
lease_seconds = {LEASE_S}
max_attempts = 3

[[schedule.routines]]
name = "nightly-sync"
routine = "docs_sync"
at = "02:30"

[[schedule.routines]]
name = "metrics"
routine = "metrics_page"
at = "06:00"

[[schedule.routines]]
name = "poll"
routine = "poll"
every = "6h"

[[schedule.routines]]
name = "eval"
routine = "eval_run"
every = "1d"
"""


def scheduled(make_workspace: Callable[..., Workspace], state_url: str | None = None) -> Workspace:
    ws = make_workspace()
    config = ws.root / "thoth.toml"
    text = config.read_text("utf-8") + SCHEDULE
    if state_url is not None:
        text = text.replace('# url = "postgresql+psycopg', f'url = "{state_url}"\n# "', 1)
    config.write_text(text, "utf-8")
    ws = Workspace.open(ws.root)
    assert ws.settings.state.url == state_url
    return ws


@pytest.fixture(params=["sqlite", "postgresql"])
def state_url(request: pytest.FixtureRequest) -> str | None:
    """The workspace's own SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("pg_url")
    return url


class Host:
    """One scheduler process, driven line by line."""

    def __init__(self, ws: Workspace, log: Path, doomed: str) -> None:
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.schedule.simulated", str(ws.root), str(log), doomed],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )

    def send(self, moment: datetime) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(moment.isoformat() + "\n")
        self.proc.stdin.flush()

    def answer(self) -> str | None:
        """The reply to the last instant, or None when the process died."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        return line.strip() or None

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


@pytest.fixture
def hosts_of(tmp_path: Path) -> Iterator[Callable[[Workspace, str], list[Host]]]:
    made: list[Host] = []

    def start(ws: Workspace, doomed: str) -> list[Host]:
        made.extend(Host(ws, tmp_path / "routines.log", doomed) for _ in range(2))
        return list(made)

    yield start
    for host in made:
        host.close()


def tick_all(hosts: list[Host], moment: datetime) -> list[str]:
    """Give both processes the same instant at once; the answers of those still alive."""
    alive = [h for h in hosts if h.proc.poll() is None]
    for host in alive:
        try:
            host.send(moment)
        except BrokenPipeError:
            continue
    answers = [host.answer() for host in alive]
    return [a for a in answers if a is not None]


def expected_keys(ws: Workspace, ticks: list[datetime]) -> set[str]:
    found: set[str] = set()
    for routine in ws.settings.schedule.routines:
        timing = Timing.of(routine, ws.settings.schedule.timezone)
        found |= {run_key(ws.settings.workspace, routine.name, ts(timing.latest(t))) for t in ticks}
    return found


@pytest.mark.slow
def test_two_schedulers_run_each_due_run_once_over_50_days_and_recover_a_killed_one(
    make_workspace: Callable[..., Workspace],
    hosts_of: Callable[[Workspace, str], list[Host]],
    tmp_path: Path,
    state_url: str | None,
) -> None:
    ws = scheduled(make_workspace, state_url)
    name = ws.settings.workspace
    ticks = [START + STEP * i for i in range(DAYS * 24 + 1)]
    # The nightly sync of 20 March (02:30 in Rome, still CET: 01:30 UTC) dies.
    doomed = run_key(name, "nightly-sync", ts(datetime(2026, 3, 20, 1, 30, tzinfo=UTC)))
    hosts = hosts_of(ws, doomed)
    for moment in ticks:
        answers = tick_all(hosts, moment)
        assert answers, f"no scheduler answered at {moment}"
        assert all(a.startswith("ok") for a in answers), answers

    lines = (tmp_path / "routines.log").read_text("utf-8").splitlines()
    done = Counter(line.split()[1] for line in lines if line.startswith("done"))
    started = Counter(line.split()[1] for line in lines if line.startswith("start"))
    want = expected_keys(ws, ticks)
    # 50 days and the latest instant before the first tick (the nightly, metrics page and
    # evaluation of 28 February, the poll of 1 March 00:00), plus the eval and poll of the
    # last tick (20 April 00:00)
    assert len(want) == 51 + 51 + 201 + 51
    assert set(done) == want, "every due run executed"
    assert set(done.values()) == {1}, [k for k, n in done.items() if n > 1]
    # the killed run: started twice (the killed attempt, then the other host's), done once
    assert started[doomed] == 2 and done[doomed] == 1
    pids = {line.split()[3] for line in lines if line.startswith("start")}
    assert len(pids) == 2, "both processes ran routines"
    assert sum(h.proc.poll() is not None for h in hosts) == 1, "one process was killed"
    with open_state(ws) as state:
        queue = ScheduleQueue.on(state)
        runs = queue.list(name, limit=500)
        assert len(runs) == len(want)
        assert {r.status for r in runs} == {"succeeded"}
        recovered = queue.get(doomed)
        assert recovered.attempts == 2 and "lost its lease" in (recovered.error or "")
        died_at = datetime(2026, 3, 20, 2, tzinfo=UTC)  # claimed at the 02:00 UTC tick
        assert recovered.started_at is not None and recovered.started_at >= died_at + STEP


def test_a_clock_that_goes_back_runs_nothing_twice_and_is_refused(
    make_workspace: Callable[..., Workspace],
    hosts_of: Callable[[Workspace, str], list[Host]],
    tmp_path: Path,
) -> None:
    ws = scheduled(make_workspace)
    hosts = hosts_of(ws, "none")
    day = [START + STEP * i for i in range(25)]
    for moment in day:
        assert all(a.startswith("ok") for a in tick_all(hosts, moment))
    log = tmp_path / "routines.log"
    before = log.read_text("utf-8")
    # back a whole day: every instant of it was run already
    for moment in day[:5]:
        assert tick_all(hosts, moment) == ["refused clock_went_back"] * 2
    # back less than [schedule].clock_skew_seconds: accepted, and still nothing twice
    assert all(a.startswith("ok") for a in tick_all(hosts, day[-1] - timedelta(seconds=200)))
    assert log.read_text("utf-8") == before
    done = Counter(line.split()[1] for line in before.splitlines() if line.startswith("done"))
    assert set(done.values()) == {1} and set(done) == expected_keys(ws, day)
