"""The scheduler: queue the routines' due runs once, run them under a lease, say which are late
or failed.

`tick` recovers the runs whose worker died (their lease expired), then queues, for each routine
of `[schedule]`, its latest due instant: the key `<workspace>/<routine>@<instant>` makes every
scheduler of every host queue it once. `run_next` claims one queued run (one worker per run)
and runs it, renewing its lease while it runs; its outcome is recorded on the run. A missed
instant is not run again once a later one is due: the latest due run is the one that counts.

Time comes from a clock (`Clock`), the system's by default; tests pass one they control. A
clock found behind the latest run queued (beyond `[schedule].clock_skew_seconds`) refuses the
tick (`clock_went_back`): nothing is queued or run until it is right again.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from thoth.config import RoutineSettings, ScheduleSettings
from thoth.errors import ThothError
from thoth.schedule.routines import BUILTIN, Routine, RoutineContext
from thoth.schedule.timing import Timing
from thoth.state import JobLeaseLost, StateError, StateStore
from thoth.state.core import ts
from thoth.state.schedule import ScheduleQueue, ScheduleRun, run_key
from thoth.workspace import Workspace

log = logging.getLogger("thoth.schedule")

Clock = Callable[[], datetime]
HOOK_PREFIX = "hook:"  # the routine name of a webhook's runs: hook:<source>
HOOK_LATE = timedelta(minutes=60)  # a push's sync still waiting after this is late


def system_clock() -> datetime:
    return datetime.now(UTC)


def worker_id() -> str:
    """A name no other scheduler has: host, process and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class ClockWentBack(ThothError):
    """The clock reads earlier than a run already queued: it went back (or this host's is
    behind another's). Nothing is queued or run."""

    code = "clock_went_back"
    exit_code = 4  # refused to start


class UnknownRoutine(ThothError):
    """A queued run names a routine this Thoth cannot run."""

    code = "unknown_routine"


@dataclass(frozen=True)
class Tick:
    """What one tick did: the runs it put back in the queue or failed, and those it queued."""

    at: datetime
    recovered: list[ScheduleRun]
    queued: list[ScheduleRun]


@dataclass(frozen=True)
class RoutineStatus:
    """One routine as `tht schedule list` shows it."""

    name: str
    kind: str
    when: str  # "at 02:30 Europe/Rome", "every 1h", "webhook"
    latest_due: datetime | None
    next_due: datetime | None
    due_run: ScheduleRun | None  # the run of the latest due instant, if queued
    last_finished: ScheduleRun | None
    last_success: ScheduleRun | None
    late_since: datetime | None  # the due instant no succeeded run covers, when late
    failed: bool

    @property
    def late(self) -> bool:
        return self.late_since is not None

    def warnings(self) -> list[tuple[str, str]]:
        """(code, message) of what is wrong with the routine."""
        found: list[tuple[str, str]] = []
        if self.late_since is not None:
            last = self.last_success
            since = "it never succeeded" if last is None else f"last success due {ts(last.due_at)}"
            found.append(
                (
                    "schedule_late",
                    f"routine {self.name} ({self.kind}) was due at {ts(self.late_since)} and "
                    f"no run has succeeded since ({since})",
                )
            )
        if self.failed and self.last_finished is not None:
            last = self.last_finished
            found.append(
                (
                    "schedule_failed",
                    f"routine {self.name} ({self.kind}): its last run {last.id} failed "
                    f"[{last.error_code}]: {last.error}",
                )
            )
        return found

    def as_dict(self) -> dict[str, Any]:
        def stamp(moment: datetime | None) -> str | None:
            return None if moment is None else ts(moment)

        return {
            "name": self.name,
            "routine": self.kind,
            "when": self.when,
            "latest_due": stamp(self.latest_due),
            "next_due": stamp(self.next_due),
            "due_run": None if self.due_run is None else self.due_run.as_dict(),
            "last_finished": None if self.last_finished is None else self.last_finished.as_dict(),
            "last_success": None if self.last_success is None else self.last_success.as_dict(),
            "late": self.late,
            "late_since": stamp(self.late_since),
            "failed": self.failed,
            "warnings": [{"code": c, "message": m} for c, m in self.warnings()],
        }


@dataclass
class Scheduler:
    """The schedule of one workspace over its state store."""

    ws: Workspace
    state: StateStore
    clock: Clock = system_clock
    routines: Mapping[str, Routine] = field(default_factory=lambda: dict(BUILTIN))
    id: str = field(default_factory=worker_id)

    def __post_init__(self) -> None:
        self.settings: ScheduleSettings = self.ws.settings.schedule
        self.name = self.ws.settings.workspace
        self.queue = ScheduleQueue.on(self.state)

    # ------------------------------------------------------------------ queueing

    def tick(self) -> Tick:
        """Recover orphaned runs and queue each routine's latest due run (once per key)."""
        at = self.clock()
        self.check_clock(at)
        recovered = self.queue.recover_orphans(self.name, self.settings.max_attempts, at)
        for run in recovered:
            log.warning("scheduled run %s: its worker was lost; now %s", run.id, run.status)
        queued: list[ScheduleRun] = []
        for routine in self.settings.routines:
            due = self._timing(routine).latest(at)
            run, created = self.queue.enqueue(
                key=run_key(self.name, routine.name, ts(due)),
                workspace=self.name,
                routine=routine.name,
                kind=routine.routine,
                due_at=due,
                at=at,
                by=self.id,
                request={"full": routine.full},
            )
            if created:
                queued.append(run)
        return Tick(at, recovered, queued)

    def check_clock(self, at: datetime) -> None:
        latest = self.queue.latest_enqueued(self.name)
        if latest is None:
            return
        behind = (latest - at).total_seconds()
        if behind > self.settings.clock_skew_seconds:
            raise ClockWentBack(
                f"schedule of {self.name!r}: this clock reads {ts(at)}, {behind:.0f} s before "
                f"the latest run queued ({ts(latest)}), more than [schedule].clock_skew_seconds "
                f"= {self.settings.clock_skew_seconds:g}; nothing was queued or run -> set the "
                "clock right (NTP) on this host; no run is repeated once it is"
            )

    # ------------------------------------------------------------------ running

    def run_next(self) -> ScheduleRun | None:
        """Claim the queued run due first and run it; None when none is queued. Returns the
        run as it ended (None too when this worker lost it meanwhile)."""
        run = self.queue.claim(self.name, self.id, self.settings.lease_seconds, self.clock())
        if run is None:
            return None
        return self.execute(run)

    def run_due(self) -> tuple[Tick, list[ScheduleRun]]:
        """One tick, then every run queued, one after the other."""
        tick = self.tick()
        done: list[ScheduleRun] = []
        while True:
            run = self.queue.claim(self.name, self.id, self.settings.lease_seconds, self.clock())
            if run is None:
                return tick, done
            ended = self.execute(run)
            if ended is not None:
                done.append(ended)

    def execute(self, run: ScheduleRun) -> ScheduleRun | None:
        """Run a claimed run to its end and record how it ended; None when the lease was lost
        (another worker has it now, and records it)."""
        routine = self.routines.get(run.kind)
        beat = _Heartbeat(self, run.id)
        beat.start()
        try:
            if routine is None:
                raise UnknownRoutine(
                    f"scheduled run {run.id}: no routine {run.kind!r} here (known: "
                    f"{', '.join(sorted(self.routines))}) -> run it with the Thoth that queued it"
                )
            context = RoutineContext(
                ws=self.ws,
                state=self.state,
                run=run,
                run_by=_run_by(run, self.id),
                full=bool(run.request.get("full", False)),
            )
            result = routine(context)
        except ThothError as exc:
            return self._finish(run, beat, "failed", code=exc.code, error=str(exc))
        except OSError as exc:
            return self._finish(run, beat, "failed", code="os_error", error=str(exc))
        except Exception as exc:  # recorded as the run's failure, the traceback in the log
            log.exception("scheduled run %s broke", run.id)
            return self._finish(
                run, beat, "failed", code="routine_error", error=f"{type(exc).__name__}: {exc}"
            )
        finally:
            beat.stop()
        return self._finish(run, beat, "succeeded", result=result)

    def _finish(
        self,
        run: ScheduleRun,
        beat: _Heartbeat,
        status: str,
        *,
        result: dict[str, Any] | None = None,
        code: str | None = None,
        error: str | None = None,
    ) -> ScheduleRun | None:
        beat.stop()
        try:
            if status == "succeeded":
                ended = self.queue.finish(run.id, self.id, "succeeded", self.clock(), result=result)
            else:
                ended = self.queue.finish(
                    run.id, self.id, "failed", self.clock(), error_code=code, error=error
                )
        except JobLeaseLost as exc:
            log.warning("scheduled run %s: %s", run.id, exc)
            return None
        if ended.status == "failed":
            log.warning("scheduled run %s failed [%s]: %s", run.id, code, error)
        return ended

    def serve(self, stop: threading.Event) -> None:
        """`tht schedule worker`: run what is due every `poll_seconds` until `stop` is set. A
        refused tick (the clock, the state store) is logged and tried again at the next."""
        while not stop.is_set():
            try:
                self.run_due()
            except ClockWentBack as exc:
                log.error("%s", exc)
            except StateError as exc:
                log.warning("schedule tick failed: %s", exc)
            stop.wait(self.settings.poll_seconds)

    # ------------------------------------------------------------------ status

    def status(self) -> list[RoutineStatus]:
        """Each declared routine (and each source a webhook synced): its latest and next due
        instants, the run of the latest, the last finished run, and whether it is late or
        failed."""
        at = self.clock()
        found: list[RoutineStatus] = []
        for routine in self.settings.routines:
            timing = self._timing(routine)
            due = timing.latest(at)
            run = self.queue.find(run_key(self.name, routine.name, ts(due)))
            last = self.queue.last_finished(self.name, routine.name)
            success = self.queue.last_succeeded(self.name, routine.name)
            # The latest instant due at least late_after ago: late when no run of it, or of
            # a later instant, has succeeded.
            checked = timing.latest(at - timedelta(minutes=routine.late_after_minutes))
            covered = success is not None and success.due_at >= checked
            found.append(
                RoutineStatus(
                    name=routine.name,
                    kind=routine.routine,
                    when=_when(routine, self.settings.timezone),
                    latest_due=due,
                    next_due=timing.next(at),
                    due_run=run,
                    last_finished=last,
                    last_success=success,
                    late_since=None if covered else checked,
                    failed=last is not None and last.status == "failed",
                )
            )
        for name in self.queue.routine_names(self.name, HOOK_PREFIX):
            last = self.queue.last_finished(self.name, name)
            # A push's sync is late when it waits longer than HOOK_LATE (no worker runs it).
            waiting = self.queue.oldest_waiting(self.name, name)
            stale = waiting is not None and at - waiting.due_at > HOOK_LATE
            found.append(
                RoutineStatus(
                    name=name,
                    kind="docs_sync",
                    when="webhook",
                    latest_due=None if waiting is None else waiting.due_at,
                    next_due=None,
                    due_run=waiting,
                    last_finished=last,
                    last_success=self.queue.last_succeeded(self.name, name),
                    late_since=waiting.due_at if stale and waiting else None,
                    failed=last is not None and last.status == "failed",
                )
            )
        return found

    def _timing(self, routine: RoutineSettings) -> Timing:
        return Timing.of(routine, self.settings.timezone)


def _run_by(run: ScheduleRun, worker: str) -> str:
    """Who a routine's sync says started it: the schedule, or the push a webhook received
    (its forge, branch and commit)."""
    request = run.request
    if "commit" in request:
        return (
            f"{request.get('forge')} push of {request.get('branch')} at {request['commit']} "
            f"(schedule {worker})"
        )
    return f"schedule {run.routine} ({worker})"


def _when(routine: RoutineSettings, zone: str) -> str:
    return f"at {routine.at} {zone}" if routine.at else f"every {routine.every}"


class _Heartbeat(threading.Thread):
    """Renews a run's lease every lease_seconds / 3 (of real time) while it runs."""

    def __init__(self, scheduler: Scheduler, key: str) -> None:
        super().__init__(name=f"heartbeat-{key}", daemon=True)
        self._scheduler, self._key = scheduler, key
        self._stop_event = threading.Event()

    def run(self) -> None:
        s = self._scheduler
        every = s.settings.lease_seconds / 3
        while not self._stop_event.wait(every):
            try:
                s.queue.heartbeat(self._key, s.id, s.settings.lease_seconds, s.clock())
            except JobLeaseLost as exc:
                log.warning("scheduled run %s: %s", self._key, exc)
                return
            except StateError as exc:  # the database is busy or away: the next beat retries
                log.warning("heartbeat of scheduled run %s failed: %s", self._key, exc)

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join()


class SchedulerThread(threading.Thread):
    """`tht schedule worker` inside another process (`[schedule] run_in_service`): its own
    state store, `Scheduler.serve` until stopped."""

    def __init__(self, ws: Workspace) -> None:
        super().__init__(name="thoth-schedule", daemon=True)
        self._ws = ws
        self._stop_event = threading.Event()

    def run(self) -> None:
        from thoth.runtime import open_state

        try:
            with open_state(self._ws) as state:
                scheduler = Scheduler(self._ws, state)
                log.info("schedule worker %s runs in this process", scheduler.id)
                scheduler.serve(self._stop_event)
        except ThothError as exc:  # the state store could not be opened: said, not swallowed
            log.error("the schedule worker of this process stopped [%s]: %s", exc.code, exc)

    def stop(self, wait_seconds: float = 10.0) -> None:
        """Ask it to stop after the run in progress; a run still going when the process exits
        is left to its lease (the next tick of any scheduler queues it again)."""
        self._stop_event.set()
        self.join(wait_seconds)
        if self.is_alive():
            log.warning(
                "the schedule worker is still running a routine; if this process exits now, "
                "the run's lease expires and another scheduler runs it again"
            )
