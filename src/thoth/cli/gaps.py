"""`tht session gap` and `tht evidence gaps`: what sessions were missing, and the curators'
queue of it (thoth.session.gaps).

Exit codes: 0 done; 1 a refused entry, an unknown session or a gap that is not open.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from thoth.cli.common import JsonOpt, emit_json, errors, out
from thoth.workspace import Workspace

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]


def gap_cmd(
    session_id: Annotated[str, typer.Argument(help="Session id (s-YYYYMMDD-HHMMSS-xxxxxx).")],
    stage: Annotated[str, typer.Option("--stage", help="The stage that missed it.")],
    subject: Annotated[
        str, typer.Option("--subject", help="The concept no Evidence defines, or the search.")
    ],
    detail: Annotated[str, typer.Option("--detail", help="What was missing.")] = "",
    receipt_seq: Annotated[
        int | None,
        typer.Option("--receipt-seq", help="The receipt of a consultation that found nothing."),
    ] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Record a knowledge gap in a session's ledger, for the curators' queue."""
    from thoth.runtime import sessions_dir
    from thoth.session import SessionStore
    from thoth.session.ledger import GAP_TYPE
    from thoth.workflow.overview import entry_dict

    with errors(as_json):
        ws = Workspace.open(workspace)
        session = SessionStore(sessions_dir(ws)).open(session_id)
        entry = session.append(stage, GAP_TYPE, subject=subject, detail=detail, refs=receipt_seq)
    if as_json:
        emit_json({"ok": True, "session": session.id, "entry": entry_dict(entry)})
    else:
        out.print(f"knowledge_gap recorded: seq {entry.seq} in session {session.id}.")


def gaps_cmd(
    to_source: Annotated[
        str | None,
        typer.Option(
            "--to-source",
            help="Turn the gap <session>:<seq> into a source note under evidence/source/gaps/ "
            "(for `tht evidence prepare`) and take it off the queue.",
        ),
    ] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """The knowledge gaps sessions recorded that no curator took yet (every session's)."""
    from thoth.runtime import sessions_dir
    from thoth.session.gaps import GapQueue

    with errors(as_json):
        ws = Workspace.open(workspace)
        queue = GapQueue(sessions_dir(ws), ws.evidence)
        if to_source is not None:
            gap, note = queue.take(to_source)
            rel = note.relative_to(ws.root).as_posix()
        else:
            gaps = queue.open_gaps()
    if to_source is not None:
        if as_json:
            emit_json({"ok": True, "gap": gap.as_dict(), "note": rel})
        else:
            out.print(f"gap {gap.id} taken: {rel} (curate it, then `tht evidence prepare`).")
        return
    if as_json:
        emit_json({"ok": True, "gaps": [g.as_dict() for g in gaps]})
        return
    if not gaps:
        out.print("No open knowledge gap.")
        return
    table = Table("gap", "stage", "subject", "detail", "question")
    for g in gaps:
        table.add_row(g.id, g.stage, escape(g.subject), escape(g.detail), escape(g.question))
    out.print(table)
