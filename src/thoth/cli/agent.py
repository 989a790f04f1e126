"""`tht agent`: the deep-analysis agent's queue (docs/agent.md).

- `tht agent submit QUESTION [--label L]... [--channel C]`: queue a question; refused
  (exit 4, code `agent_unavailable`) when no model is configured.
- `tht agent worker [--once] [--id NAME]`: take and run jobs (Ctrl-C stops it between jobs;
  a job it was running is recovered by the next worker once its lease expires).
- `tht agent show ID`: status, usage, answer and sources, or the reason it failed; the
  transcript with `--transcript` (always in `--json`).
- `tht agent list`, `tht agent cancel ID`.

Exit codes: 0 done; 1 a job not found or already finished, a state-store failure; 2 a bad
request (unknown label or channel); 4 no model for the agent, or no/bad workspace.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from thoth.cli.common import JsonOpt, emit_json, errors, out
from thoth.workspace import Workspace

if TYPE_CHECKING:
    from thoth.state import Job

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]
JobArg = Annotated[str, typer.Argument(help="The job id (`tht agent list` shows them).")]


def register(app: typer.Typer) -> None:
    agent_app = typer.Typer(no_args_is_help=True, help="The deep-analysis agent and its jobs.")
    app.add_typer(agent_app, name="agent")
    agent_app.command("submit")(submit_cmd)
    agent_app.command("worker")(worker_cmd)
    agent_app.command("show")(show_cmd)
    agent_app.command("list")(list_cmd)
    agent_app.command("cancel")(cancel_cmd)
    agent_app.command("retry")(retry_cmd)


def submit_cmd(
    question: Annotated[str, typer.Argument(help="The question to analyse.")],
    labels: Annotated[
        list[str] | None,
        typer.Option("--label", "--labels", help="A label the job may see (repeatable)."),
    ] = None,
    channel: Annotated[str | None, typer.Option("--channel", help="Search this channel.")] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Queue a question for the agent; a worker (`tht agent worker`) runs it."""
    from thoth.agent import submit_job
    from thoth.runtime import open_state
    from thoth.state import JobQueue

    with errors(as_json):
        ws = Workspace.open(workspace)
        split = [part for label in labels or [] for part in label.split(",") if part.strip()]
        with open_state(ws) as state:
            job = submit_job(
                ws.settings,
                JobQueue.on(state),
                question,
                labels=split or None,
                channel=channel,
            )
    if as_json:
        emit_json(job.as_dict())
    else:
        out.print(f"queued [bold]{job.id}[/] -> `tht agent show {job.id}` to follow it")


def worker_cmd(
    once: Annotated[bool, typer.Option("--once", help="Run at most one job, then exit.")] = False,
    worker: Annotated[
        str | None, typer.Option("--id", help="The worker's name (default: host:pid:random).")
    ] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Take jobs from the queue and run them; recovers jobs of dead workers at start."""
    from thoth.agent import Worker, worker_id
    from thoth.runtime import open_runtime

    with errors(as_json):
        ws = Workspace.open(workspace)
        with open_runtime(ws) as rt:
            runner = Worker(rt, id=worker or worker_id())
            stop = threading.Event()
            previous = signal.signal(signal.SIGTERM, _stopper(stop))
            try:
                ran = runner.run(once=once, stop=stop)
            except KeyboardInterrupt:
                ran = -1
            finally:
                signal.signal(signal.SIGTERM, previous)
                runner.close()
    if as_json:
        emit_json({"ok": True, "worker": runner.id, "jobs": max(ran, 0)})
    elif ran >= 0:
        out.print(f"worker {runner.id}: {ran} job(s) run")


def _stopper(stop: threading.Event) -> Any:
    def handle(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    return handle


def show_cmd(
    job_id: JobArg,
    transcript: Annotated[
        bool, typer.Option("--transcript", help="Print every step (model turns, tool calls).")
    ] = False,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """A job: status, usage, the answer with its sources and gaps, or why it failed. A
    partial job (an answer written after a failed or refused tool call) says so first."""
    from thoth.runtime import open_state
    from thoth.state import JobQueue

    with errors(as_json):
        ws = Workspace.open(workspace)
        with open_state(ws) as state:
            queue = JobQueue.on(state)
            job = queue.get(job_id)
            steps = queue.steps(job_id)
    if as_json:
        emit_json({**job.as_dict(), "steps": [s.as_dict() for s in steps]})
        return
    out.print(f"[bold]{job.id}[/]  {job.status}  {escape(job.question)}", highlight=False)
    usage = job.usage
    out.print(
        f"  attempts {job.attempts}, {usage.get('turns', 0)} model turn(s), "
        f"{usage.get('tool_calls', 0)} tool call(s), {usage.get('tokens', 0)} tokens, "
        f"{usage.get('seconds', 0)} s, {len(steps)} step(s)"
    )
    if job.status == "partial":
        # Said before the answer: the reader must know what it could not reach first.
        out.print(
            f"[bold yellow]PARTIAL ({job.error_code})[/]: {escape(job.error or '')}",
            highlight=False,
        )
    if job.result is not None:
        out.print(escape(str(job.result.get("answer", ""))), highlight=False)
        out.print("[bold]Sources[/]")
        for source in job.result.get("sources", []):
            out.print(f"  - {escape(_source_line(source))}", highlight=False)
        dated = (job.result.get("figures") or {}).get("dated", [])
        if dated:
            out.print("[bold]Figures from the analytics store[/]")
        for entry in dated:
            out.print(f"  - {escape(dated_line(entry))}", highlight=False)
        gaps = job.result.get("gaps", [])
        if gaps:
            out.print("[bold]Gaps[/]")
        for gap in gaps:
            made_good = " (made good by a later call)" if gap.get("recovered") else ""
            out.print(f"  - {escape(str(gap.get('meaning')))}{made_good}", highlight=False)
    if job.error_code and job.status != "partial":
        out.print(f"[bold red]{job.error_code}[/]: {escape(job.error or '')}", highlight=False)
    if transcript:
        for step in steps:
            out.print(
                f"  [{step.attempt}.{step.seq}] {step.kind}: {escape(_step_line(step.data))}",
                highlight=False,
            )


def _source_line(source: dict[str, Any]) -> str:
    kind = source.get("kind")
    if kind == "wiki_page":
        return f"wiki {source.get('path')} ({source.get('title')})"
    if kind == "catalog_query":
        return (
            f"query {source.get('query_id')} {source.get('parameters')} "
            f"(data as of {source.get('data_date')})"
        )
    if kind == "sql":
        return f"SQL {source.get('sql')} (data as of {source.get('data_date')})"
    return f"{kind} {source.get('doc_id')} ({source.get('title')})"


def dated_line(entry: dict[str, Any]) -> str:
    """ "1.250: query accessi-ps, data as of 2026-11-30" (the page writes the same)."""
    where = f"query {entry.get('query_id')}" if entry.get("kind") == "catalog_query" else "SQL"
    return f"{entry.get('figure')}: {where}, data as of {entry.get('data_date')}"


def _step_line(data: dict[str, Any]) -> str:
    if "call_id" in data:
        code = f" -> {data['error_code']}" if data.get("error_code") else ""
        return f"{data.get('name')}({data.get('arguments')}){code}"
    calls = ", ".join(str(c.get("name")) for c in data.get("calls", []))
    return f"calls {calls}" if calls else f"answer: {str(data.get('text', ''))[:200]}"


def list_cmd(
    limit: Annotated[int, typer.Option("--limit", help="How many, newest first.")] = 20,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """The workspace's jobs, newest first."""
    from thoth.runtime import open_state
    from thoth.state import JobQueue

    with errors(as_json):
        ws = Workspace.open(workspace)
        with open_state(ws) as state:
            jobs = JobQueue.on(state).list(ws.settings.workspace, limit=limit)
    if as_json:
        emit_json([job.as_dict() for job in jobs])
        return
    table = Table("id", "status", "created", "caller", "question")
    for job in jobs:
        table.add_row(
            job.id,
            _status(job),
            job.created_at.strftime("%Y-%m-%d %H:%M"),
            job.caller or "",
            escape(job.question[:80]),
        )
    out.print(table)


def _status(job: Job) -> str:
    if job.status == "running" and job.cancel_requested:
        return "running (cancel asked)"
    return job.status if job.error_code is None else f"{job.status} ({job.error_code})"


def cancel_cmd(job_id: JobArg, workspace: WsOpt = Path("."), as_json: JsonOpt = False) -> None:
    """Cancel a job: a queued one at once, a running one at its next step."""
    from thoth.runtime import open_state
    from thoth.state import JobQueue

    with errors(as_json):
        ws = Workspace.open(workspace)
        with open_state(ws) as state:
            job = JobQueue.on(state).cancel(job_id)
    if as_json:
        emit_json(job.as_dict())
    elif job.status == "cancelled":
        out.print(f"{job.id} cancelled")
    else:
        out.print(f"{job.id} is running: its worker stops it at its next step")


def retry_cmd(job_id: JobArg, workspace: WsOpt = Path("."), as_json: JsonOpt = False) -> None:
    """Run a partial or failed job afresh: a new queued job with the same question and
    context; the old one keeps its result and transcript.

    Exit 0 queued; 1 not partial or failed (job_not_retryable), or no such job."""
    from thoth.runtime import open_state
    from thoth.state import JobQueue

    with errors(as_json):
        ws = Workspace.open(workspace)
        with open_state(ws) as state:
            job = JobQueue.on(state).retry(job_id)
    if as_json:
        emit_json(job.as_dict())
    else:
        out.print(f"{job.id} queued again from {job_id} (its transcript is kept)")
