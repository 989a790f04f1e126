"""`tht schedule list | run-due | worker`: the routines of `[schedule]`, their last and next
runs, and the process that runs them when due (docs/operations.md)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from thoth.cli import exitcodes
from thoth.cli.common import JsonOpt, emit_json, errors, out
from thoth.workspace import Workspace

if TYPE_CHECKING:
    from thoth.schedule.scheduler import RoutineStatus
    from thoth.state.schedule import ScheduleRun

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]


def register(app: typer.Typer) -> None:
    schedule_app = typer.Typer(
        no_args_is_help=True, help="The routines that run by themselves ([schedule])."
    )
    app.add_typer(schedule_app, name="schedule")
    schedule_app.command("list")(list_cmd)
    schedule_app.command("run-due")(run_due_cmd)
    schedule_app.command("worker")(worker_cmd)


def list_cmd(workspace: WsOpt = Path("."), as_json: JsonOpt = False) -> None:
    """Each routine: when it runs, its latest due run, its last finished run and its next due
    instant; a late or failed routine is flagged (a warning: exit 0)."""
    from thoth.runtime import open_state
    from thoth.schedule.scheduler import Scheduler

    with errors(as_json):
        ws = Workspace.open(workspace)
        with open_state(ws) as state:
            statuses = Scheduler(ws, state).status()
    if as_json:
        emit_json({"ok": True, "routines": [s.as_dict() for s in statuses]})
        raise typer.Exit(exitcodes.OK)
    _render_list(statuses)
    raise typer.Exit(exitcodes.OK)


def run_due_cmd(workspace: WsOpt = Path("."), as_json: JsonOpt = False) -> None:
    """Queue what is due (once, whoever else queues it) and run every queued run.

    Exit 0 every run succeeded (or none was due), 1 a run failed, 4 refused (the clock is
    behind the latest run queued: clock_went_back)."""
    from thoth.runtime import open_state
    from thoth.schedule.scheduler import Scheduler

    with errors(as_json):
        ws = Workspace.open(workspace)
        with open_state(ws) as state:
            tick, ran = Scheduler(ws, state).run_due()
    failed = [r for r in ran if r.status == "failed"]
    if as_json:
        emit_json(
            {
                "ok": not failed,
                "at": tick.at.isoformat(),
                "recovered": [r.as_dict() for r in tick.recovered],
                "queued": [r.id for r in tick.queued],
                "runs": [r.as_dict() for r in ran],
            }
        )
    else:
        for run in tick.recovered:
            out.print(f"recovered {escape(run.id)}: now {run.status}", highlight=False)
        if not ran:
            out.print("Nothing was due.")
        for run in ran:
            out.print(_run_line(run), highlight=False)
    raise typer.Exit(exitcodes.FAILED if failed else exitcodes.OK)


def worker_cmd(workspace: WsOpt = Path("."), as_json: JsonOpt = False) -> None:
    """Run what is due every [schedule].poll_seconds until stopped (SIGTERM or Ctrl-C); a
    refused tick or a failed run is logged and the worker goes on."""
    import logging

    from thoth.runtime import open_state
    from thoth.schedule.scheduler import Scheduler

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    with errors(as_json):
        ws = Workspace.open(workspace)
        with open_state(ws) as state:
            scheduler = Scheduler(ws, state)
            stop = threading.Event()
            previous = signal.signal(signal.SIGTERM, _stopper(stop))
            try:
                scheduler.serve(stop)
            except KeyboardInterrupt:
                pass
            finally:
                signal.signal(signal.SIGTERM, previous)
    if as_json:
        emit_json({"ok": True, "worker": scheduler.id})
    else:
        out.print(f"schedule worker {scheduler.id} stopped")


def _stopper(stop: threading.Event) -> Any:
    def handle(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    return handle


def _run_line(run: ScheduleRun) -> str:
    if run.status == "failed":
        return f"[red]failed[/] {escape(run.id)} \\[{run.error_code}]: {escape(run.error or '')}"
    return f"[green]{run.status}[/] {escape(run.id)}"


def _render_list(statuses: list[RoutineStatus]) -> None:
    if not statuses:
        out.print(escape("No routine is declared ([[schedule.routines]] in thoth.toml)."))
        return
    table = Table(title="schedule")
    for column in ("routine", "when", "last run", "next due", "state"):
        table.add_column(column)
    for s in statuses:
        last = s.last_finished
        last_text = (
            "never"
            if last is None or last.finished_at is None
            else f"{last.status} {last.finished_at:%Y-%m-%d %H:%M}Z"
        )
        flags = [f for f, on in (("LATE", s.late), ("FAILED", s.failed)) if on]
        table.add_row(
            f"{s.name} ({s.kind})",
            s.when,
            last_text,
            "-" if s.next_due is None else f"{s.next_due:%Y-%m-%d %H:%M}Z",
            f"[red]{' '.join(flags)}[/]" if flags else "ok",
        )
    out.print(table)
    for s in statuses:
        for code, message in s.warnings():
            out.print(f"[yellow]warning[/] \\[{code}] {escape(message)}", highlight=False)
