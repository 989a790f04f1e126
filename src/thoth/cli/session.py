"""`tht session ...`: drive a question→SQL session by hand (or as an agent, with `--json`), or
let a model propose decisions for a reviewer (`drive`, then `accept` / `reject`); and
`tht evidence import-proposals`, which turns a session's Formula proposals into sources.

Sessions live in `<workspace>/.thoth/sessions/` (`thoth.runtime.sessions_dir`) and never touch
the workspace's Git repo.
Exit codes: 0 done; 1 refused or failed (an unavailable Evidence search included, with its
stable code); 4 not ready (a stage's inputs are not decided yet) or misconfigured.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import typer
from rich.markup import escape
from rich.table import Table

from thoth.cli import exitcodes, gaps, render
from thoth.cli.common import JsonOpt, WorkspaceArg, emit_json, err, errors, out
from thoth.cli.schema import render_proposal
from thoth.workspace import Workspace

if TYPE_CHECKING:
    from thoth.runtime import Runtime
    from thoth.service.sessions import SessionDoor
    from thoth.session import Entry, Session, SessionStore
    from thoth.session.proposals import ProposalView
    from thoth.workflow.consult import StageBlocked
    from thoth.workflow.sql import RunFailed

T = TypeVar("T")
WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]
IdArg = Annotated[str, typer.Argument(help="Session id (s-YYYYMMDD-HHMMSS-xxxxxx).")]
StageOpt = Annotated[str, typer.Option("--stage", help="Stage name, e.g. clarification.")]
RationaleOpt = Annotated[str, typer.Option("--rationale", help="Why, for the audit trail.")]


def register(app: typer.Typer, evidence_app: typer.Typer) -> None:
    session_app = typer.Typer(
        no_args_is_help=True, help="Question→SQL sessions: consult, decide, drive, review."
    )
    app.add_typer(session_app, name="session")
    for name, command in (
        ("new", new_cmd),
        ("list", list_cmd),
        ("show", show_cmd),
        ("consult", consult_cmd),
        ("decide", decide_cmd),
        ("retract", retract_cmd),
        ("reopen", reopen_cmd),
        ("rollback", rollback_cmd),
        ("drive", drive_cmd),
        ("accept", accept_cmd),
        ("reject", reject_cmd),
        ("run", run_cmd),
    ):
        session_app.command(name)(command)
    evidence_app.command("import-proposals")(import_proposals_cmd)
    session_app.command("gap")(gaps.gap_cmd)  # knowledge gaps (thoth.cli.gaps)
    evidence_app.command("gaps")(gaps.gaps_cmd)


def sessions(ws: Workspace) -> SessionStore:
    from thoth.runtime import sessions_dir
    from thoth.session import SessionStore

    return SessionStore(sessions_dir(ws))


def door(ws: Workspace) -> SessionDoor:
    """The session verbs for the local user (every session of the workspace), with a
    runtime opened for the verbs that need one."""
    from thoth.runtime import open_runtime
    from thoth.service.sessions import SessionDoor

    def with_runtime(work: Callable[[Runtime], T]) -> T:
        with open_runtime(ws) as rt:
            return work(rt)

    return SessionDoor(ws, None, with_runtime)


def open_session(workspace: Path, session_id: str) -> tuple[Workspace, Session]:
    ws = Workspace.open(workspace)
    return ws, sessions(ws).open(session_id)


def _entry_line(e: Entry) -> str:
    from thoth.session import DISPLAY_CODES

    text = f"{e.seq:>3}  {DISPLAY_CODES[e.stage]} {e.stage:<16} {e.type:<26} {escape(e.subject)}"
    if e.detail:
        text += f"  [dim]{escape(' '.join(e.detail.split())[:120])}[/]"
    return text


def _written(session: Session, entry: Entry, as_json: bool, what: str) -> None:
    from thoth.workflow.overview import entry_dict

    if as_json:
        emit_json({"ok": True, "session": session.id, "entry": entry_dict(entry)})
    else:
        out.print(f"{what}: seq {entry.seq} in session {session.id}.")


def _exit_blocked(blocked: StageBlocked, as_json: bool) -> NoReturn:
    """A stage that could not consult Evidence: say why (JSON or stderr), exit 1."""
    if as_json:
        emit_json(blocked.as_dict())
    else:
        err.print(f"[bold red]blocked:[/] {escape(str(blocked))}", highlight=False)
    raise typer.Exit(exitcodes.FAILED)


# ---------------------------------------------------------------------- commands


def new_cmd(
    question: Annotated[str, typer.Argument(help="The question, as the user asked it.")],
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Start a session for a question."""
    from thoth.service.sessions import SessionNewBody

    with errors(as_json):
        created = door(Workspace.open(workspace)).create(SessionNewBody(question=question))
    session_id = created["session"]
    if as_json:
        emit_json(created)
    else:
        out.print(
            f"Session [bold]{session_id}[/]. Next: `tht session consult {session_id} "
            "--stage clarification`."
        )


def list_cmd(workspace: WsOpt = Path("."), as_json: JsonOpt = False) -> None:
    """Every session of the workspace, oldest first."""
    with errors(as_json):
        found = door(Workspace.open(workspace)).sessions()["sessions"]
    if as_json:
        emit_json({"ok": True, "sessions": found})
        return
    if not found:
        out.print('No sessions yet: `tht session new "<question>"`.')
    for s in found:
        out.print(
            f"{s['id']}  {s['decisions']:>3} decisions  {escape(s['question'])}", highlight=False
        )


def show_cmd(session_id: IdArg, workspace: WsOpt = Path("."), as_json: JsonOpt = False) -> None:
    """The session's standing decisions, Evidence receipts, proposals and memories."""
    from thoth.workflow.overview import session_overview

    with errors(as_json):
        ws, session = open_session(workspace, session_id)
        view = session_overview(ws, session)
    if as_json:
        emit_json(view.as_dict())
        return
    entries, effective, gone = view.entries, view.effective, view.withdrawn
    standing = {e.seq for e in effective}
    receipts, runs, markers = view.receipts, view.runs, view.memory_markers
    out.print(f"[bold]{session.id}[/]  {escape(session.question)}", highlight=False)
    out.print("[bold]Standing decisions[/]" if effective else "No standing decision yet.")
    for e in effective:
        out.print(_entry_line(e), highlight=False)
    for e in markers:
        out.print(_entry_line(e), highlight=False)
    if receipts:
        out.print("[bold]Evidence receipts[/]")
    for e in receipts:
        r = e.receipt
        ids = ", ".join(r.evidence_ids) if r and r.evidence_ids else "no match"
        stale = "" if e.seq not in gone else f" [dim](stale: seq {gone[e.seq].by})[/]"
        out.print(
            f"{e.seq:>3}  {e.stage:<16} {r.purpose if r else ''}: {escape(ids)}{stale}",
            highlight=False,
        )
    if runs:
        out.print("[bold]Runs of the final SQL[/] (receipts: no rows are kept)")
    for e in runs:
        run = e.run
        assert run is not None
        what = (
            f"{run.row_count} row(s){' truncated' if run.truncated else ''}, "
            f"columns {', '.join(run.columns)}"
            if run.status == "succeeded"
            else f"[red]failed [{run.code}][/] {escape(run.reason[:200])}"
        )
        out.print(
            f"{e.seq:>3}  {e.timestamp}  seq {run.final_sql_seq} ({run.dialect}, "
            f"{run.duration_ms:.1f} ms, data date {run.data_date or '-'}, sha256 "
            f"{run.statement_sha256[:12]}): {what}",
            highlight=False,
        )
    withdrawn = [e for e in entries if e.seq in gone and e.seq not in standing]
    if withdrawn:
        out.print(
            "[dim]Withdrawn: "
            + ", ".join(
                f"seq {e.seq} ({gone[e.seq].reason} by {gone[e.seq].by})" for e in withdrawn
            )
            + "[/]"
        )
    _print_proposals(view.proposals)
    out.print(escape(view.memories.markdown().rstrip()), highlight=False)


def _print_proposals(views: list[ProposalView]) -> None:
    pending = [v for v in views if v.status == "pending"]
    if pending:
        out.print("[bold]Proposals waiting for review[/]")
    for v in pending:
        p = v.proposal
        out.print(
            f"  #{p.no} {p.stage} {p.type} {escape(p.subject)}  [dim]{escape(p.model)}: "
            f"{escape(' '.join(p.rationale.split())[:160])}[/]",
            highlight=False,
        )


def consult_cmd(
    session_id: IdArg, stage: StageOpt, workspace: WsOpt = Path("."), as_json: JsonOpt = False
) -> None:
    """Search Evidence for a stage with what the session has settled. Exit 1 when unavailable."""
    from thoth.runtime import open_runtime
    from thoth.search.outcome import EvidenceSearchOutcome
    from thoth.workflow.consult import SessionWorkflow, StageBlocked

    blocked: StageBlocked | None = None
    with errors(as_json):
        ws, session = open_session(workspace, session_id)
        with open_runtime(ws) as rt:
            try:
                found = SessionWorkflow(rt, session).consult(stage)
            except StageBlocked as exc:
                blocked = exc
    if blocked is not None:
        _exit_blocked(blocked, as_json)
    if as_json:
        emit_json(found.as_dict())
        return
    render.render_outcome(
        out,
        EvidenceSearchOutcome(
            status="available",
            purpose=found.purpose,
            generation=found.generation,
            revision=found.revision,
            results=found.results,
        ),
    )
    if found.schema is not None:
        render_proposal(out, found.schema)
    out.print(f"Receipt recorded: seq {found.receipt.seq} ({found.stage}, {found.purpose}).")


def run_cmd(
    session_id: IdArg,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, help="Fewer rows than database.row_limit."),
    ] = None,
    csv_file: Annotated[
        Path | None, typer.Option("--csv", help="Also write the rows to this CSV file.")
    ] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Run the approved final SQL read-only and record its receipt (never its rows).

    Exit 0 ran; 1 the database refused it (recorded as a failed run); 4 not ready (no single
    approved final SQL) or the database cannot be reached (nothing recorded)."""
    from thoth.runtime import open_runtime
    from thoth.workflow.sql import RunFailed, run_final_sql

    failed: RunFailed | None = None
    with errors(as_json):
        ws, session = open_session(workspace, session_id)
        with open_runtime(ws) as rt:
            try:
                done = run_final_sql(rt, session, limit)
            except RunFailed as exc:
                failed = exc
    if failed is not None:
        if as_json:
            emit_json({**failed.run.as_dict(), "code": failed.code, "error": str(failed)})
        else:
            err.print(f"[red]{escape(str(failed))}[/]", highlight=False)
        raise typer.Exit(exitcodes.FAILED)
    if csv_file is not None and done.result is not None:
        with csv_file.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(done.result.columns)
            writer.writerows(done.result.rows)
    if as_json:
        emit_json(done.as_dict())
        return
    result = done.result
    assert result is not None
    grid = Table(show_header=True)
    for column in result.columns:
        grid.add_column(escape(column))
    for row in result.rows:
        grid.add_row(*("" if v is None else escape(str(v)) for v in row))
    out.print(grid)
    receipt = done.receipt
    out.print(
        f"{receipt.row_count} row(s){' (truncated)' if receipt.truncated else ''} in "
        f"{receipt.duration_ms:.1f} ms; data date {receipt.data_date or 'not declared'}; "
        f"receipt recorded: seq {done.entry.seq} (statement sha256 "
        f"{receipt.statement_sha256[:12]})."
    )
    for note in done.notes:
        out.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    if csv_file is not None:
        out.print(f"Rows written to {escape(str(csv_file))}.")


def decide_cmd(
    session_id: IdArg,
    stage: StageOpt,
    type: Annotated[str, typer.Option("--type", help="Decision type, e.g. concept_clarified.")],
    subject: Annotated[str, typer.Option("--subject", help="What is decided.")],
    detail: Annotated[
        str,
        typer.Option(
            "--detail",
            help='The content. formula_proposed: {"columns": [...], "sql": "<expression>"}.',
        ),
    ] = "",
    rationale: RationaleOpt = "",
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Record a decision of a stage. With a [database]: tables and columns must exist in the
    schema index, and a final SQL (or a CTE plan written as SQL) must pass the database's
    EXPLAIN, read-only."""
    from thoth.runtime import open_runtime
    from thoth.session import decide
    from thoth.workflow.sql import NAME_CHECKED, SQL_CHECKED, decide_checked

    with errors(as_json):
        ws, session = open_session(workspace, session_id)
        if ws.settings.database is not None and (type in NAME_CHECKED or type in SQL_CHECKED):
            with open_runtime(ws) as rt:
                entry = decide_checked(
                    rt, session, stage, type, subject=subject, detail=detail, rationale=rationale
                )
        else:
            entry = decide(
                session, stage, type, subject=subject, detail=detail, rationale=rationale
            )
    _written(session, entry, as_json, f"{type} recorded")


def retract_cmd(
    session_id: IdArg,
    seq: Annotated[int, typer.Option("--seq", help="The entry to withdraw.")],
    rationale: RationaleOpt,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Withdraw one decision (the line stays in the ledger)."""
    with errors(as_json):
        _, session = open_session(workspace, session_id)
        entry = session.retract(seq, rationale=rationale)
    _written(session, entry, as_json, f"seq {seq} retracted")


def reopen_cmd(
    session_id: IdArg,
    stage: StageOpt,
    rationale: RationaleOpt,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Redo a stage: its decisions and those of later stages stop standing."""
    with errors(as_json):
        _, session = open_session(workspace, session_id)
        entry = session.reopen(stage, rationale=rationale)
    _written(session, entry, as_json, f"{stage} reopened")


def rollback_cmd(
    session_id: IdArg,
    stage: StageOpt,
    rationale: RationaleOpt,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Return to a stage: decisions of later stages stop standing."""
    with errors(as_json):
        _, session = open_session(workspace, session_id)
        entry = session.rollback(stage, rationale=rationale)
    _written(session, entry, as_json, f"rolled back to {stage}")


def drive_cmd(
    session_id: IdArg, stage: StageOpt, workspace: WsOpt = Path("."), as_json: JsonOpt = False
) -> None:
    """Ask the [llm] model to propose decisions for a stage; a reviewer accepts them."""
    from thoth.llm import tool_client
    from thoth.runtime import open_runtime
    from thoth.workflow.consult import SessionWorkflow, StageBlocked
    from thoth.workflow.driver import drive

    blocked: StageBlocked | None = None
    with errors(as_json):
        ws, session = open_session(workspace, session_id)
        client = tool_client(ws.settings.llm)
        with open_runtime(ws) as rt:
            try:
                result = drive(SessionWorkflow(rt, session), stage, client)
            except StageBlocked as exc:
                blocked = exc
    if blocked is not None:
        _exit_blocked(blocked, as_json)
    if as_json:
        emit_json(result.as_dict())
        return
    if result.consultation is not None:
        out.print(
            f"Evidence consulted: receipt seq {result.consultation.receipt.seq}, "
            f"{len(result.consultation.results)} results."
        )
    if result.offered:
        out.print(f"Offered to the model: {escape(', '.join(result.offered))}.")
    if not result.proposals:
        out.print(f"{escape(result.model)} proposed nothing. {escape(result.note)}")
        return
    for p in result.proposals:
        out.print(f"  #{p.no} {p.type} {escape(p.subject)}", highlight=False)
    out.print(
        f"Review them: `tht session accept {session.id} <no>` or `tht session reject "
        f"{session.id} <no>`."
    )


def accept_cmd(
    session_id: IdArg,
    no: Annotated[int, typer.Argument(help="Proposal number (see `tht session show`).")],
    note: Annotated[str, typer.Option("--note", help="The reviewer's own remark.")] = "",
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Accept a model's proposal: it becomes a decision in the ledger (memory stages: applied
    like `tht memory choose`, `save-one` or `decline`)."""
    from thoth.runtime import open_runtime
    from thoth.workflow.driver import accept_proposal
    from thoth.workflow.stores import MemoryStores

    with errors(as_json):
        ws, session = open_session(workspace, session_id)
        # Memory-stage proposals are applied through the memory registry (opened when needed).
        with MemoryStores(ws) as stores, open_runtime(ws) as rt:
            entry = accept_proposal(session, no, note=note, stores=stores, runtime=rt)
    _written(session, entry, as_json, f"proposal {no} accepted")


def reject_cmd(
    session_id: IdArg,
    no: Annotated[int, typer.Argument(help="Proposal number (see `tht session show`).")],
    rationale: RationaleOpt = "",
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Reject a model's proposal (the ledger is not touched)."""
    from thoth.session.proposals import ProposalBook

    with errors(as_json):
        _, session = open_session(workspace, session_id)
        ProposalBook(session).reject(no, rationale=rationale)
    if as_json:
        emit_json({"ok": True, "session": session.id, "rejected": no})
    else:
        out.print(f"Proposal {no} rejected.")


def import_proposals_cmd(
    root: WorkspaceArg,
    session_id: Annotated[str, typer.Option("--session", help="The session to import from.")],
    as_json: JsonOpt = False,
) -> None:
    """Write a session's Formula proposals as sources under evidence/source/proposals/."""
    from thoth.workflow.formulas import import_proposals

    with errors(as_json):
        ws, session = open_session(root, session_id)
        result = import_proposals(ws, session)
    if as_json:
        emit_json({"ok": True, "written": result.written, "unchanged": result.unchanged})
    else:
        out.print(
            f"Wrote {len(result.written)} formula proposals ({len(result.unchanged)} already "
            "there). Review and commit them, then run `tht evidence prepare`."
        )
