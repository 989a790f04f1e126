"""One scheduler process of tests/schedule/test_two_schedulers.py, on a clock the test drives.

    python -m tests.schedule.simulated WORKSPACE LOG DOOMED_KEY

Each line read from stdin is an ISO instant: the clock is set to it, `run_due` runs, and the
process answers `ok <queued> <ran>` (or `refused <code>`). Every routine is the recorder below,
which appends `start` and `done` lines to LOG; the first attempt of DOOMED_KEY kills its own
process between the two (SIGKILL: no cleanup, its lease is left to expire).
"""

from __future__ import annotations

import os
import signal
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from thoth.errors import ThothError
from thoth.runtime import open_state
from thoth.schedule.routines import BUILTIN, RoutineContext
from thoth.schedule.scheduler import Scheduler
from thoth.workspace import Workspace


def _append(log: Path, line: str) -> None:
    with log.open("a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def main(root: str, log_path: str, doomed: str) -> None:
    log = Path(log_path)
    now: list[datetime] = []

    def recorder(ctx: RoutineContext) -> dict[str, Any]:
        _append(log, f"start {ctx.run.id} {ctx.run.attempts} {os.getpid()} {now[0].isoformat()}")
        if ctx.run.id == doomed and ctx.run.attempts == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        _append(log, f"done {ctx.run.id} {ctx.run.attempts} {os.getpid()} {now[0].isoformat()}")
        return {"pid": os.getpid()}

    ws = Workspace.open(Path(root))
    with open_state(ws) as state:
        scheduler = Scheduler(
            ws, state, clock=lambda: now[0], routines=dict.fromkeys(BUILTIN, recorder)
        )
        for line in sys.stdin:
            now[:] = [datetime.fromisoformat(line.strip())]
            try:
                tick, ran = scheduler.run_due()
            except ThothError as exc:
                print(f"refused {exc.code}", flush=True)
                continue
            print(f"ok {len(tick.queued)} {len(ran)}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
