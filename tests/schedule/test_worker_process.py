"""`tht schedule worker` as a process: it runs what is due, logs a failed run and goes on, and
stops on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from thoth.runtime import open_state
from thoth.state.schedule import ScheduleQueue
from thoth.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
SCHEDULE = """
[schedule]
poll_seconds = 0.2

[[schedule.routines]]
name = "metrics"
routine = "metrics_page"
every = "1d"
"""


def test_the_worker_logs_a_failed_run_goes_on_and_stops_on_sigterm(
    make_workspace: Callable[..., Workspace], tmp_path: Path
) -> None:
    ws = make_workspace()
    with (ws.root / "thoth.toml").open("a", encoding="utf-8") as f:
        f.write(SCHEDULE)
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "thoth.cli.main", "schedule", "worker", "-w", str(ws.root)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while "failed [config]" not in log.read_text("utf-8"):
                assert worker.poll() is None, log.read_text("utf-8")
                assert time.monotonic() < deadline, log.read_text("utf-8")
                time.sleep(0.1)
            time.sleep(1)  # several more ticks: the failed run is not run again
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=30) == 0
        finally:
            if worker.poll() is None:
                worker.kill()
    text = log.read_text("utf-8")
    assert text.count("failed [config]") == 1
    assert "stopped" in text
    with open_state(Workspace.open(ws.root)) as state:
        (run,) = ScheduleQueue.on(state).list(ws.settings.workspace)
    assert run.status == "failed" and run.attempts == 1
