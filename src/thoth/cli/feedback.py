"""`tht answers feedback add|list|to-eval`: what readers said of their answers, the curator's
queue, and a reported question turned into a reference question of `tht eval`.

Exit codes: 0 done; 1 the state store failed or the answer is not logged; 2 a report that
cannot be stored (unknown kind, a note too long or holding markup); 4 the answer is already
an evaluation case.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Final

import typer
from rich.markup import escape

from thoth.cli.common import JsonOpt, emit_json, errors, out
from thoth.workspace import Workspace

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]

# thoth.state.FEEDBACK_KINDS, not imported here (the state store loads SQLAlchemy, and
# `tht --help` must not). A test keeps them equal.
FEEDBACK_KINDS: Final = ("wrong", "incomplete", "over_masked", "good")


def register(answers_app: typer.Typer) -> None:
    feedback_app = typer.Typer(
        no_args_is_help=True, help="Readers' reports on answers, and the curator's queue."
    )
    answers_app.add_typer(feedback_app, name="feedback")
    feedback_app.command("add")(add_cmd)
    feedback_app.command("list")(list_cmd)
    feedback_app.command("to-eval")(to_eval_cmd)


def add_cmd(
    answer_id: Annotated[str, typer.Argument(help="The answer's id (`tht answers log`).")],
    kind: Annotated[str, typer.Argument(help=f"One of {', '.join(FEEDBACK_KINDS)}.")],
    note: Annotated[str, typer.Option("--note", help="What is wrong, in plain text.")] = "",
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Report an answer as wrong, incomplete, over_masked (a useful value was covered) or
    good, with a note."""
    from thoth.answer.feedback import report
    from thoth.runtime import open_state

    with errors(as_json):
        ws = Workspace.open(workspace)
        with open_state(ws) as state:
            saved = report(state, ws.settings.workspace, answer_id, kind, note)
    if as_json:
        emit_json({"ok": True, "feedback": saved.as_dict()})
        return
    out.print(f"Recorded report {saved.id} ({saved.kind}) on answer {saved.answer_id}.")
    for m in saved.masked:
        out.print(f"  masked: {escape(m['column'])} ({m['values']} values) — {escape(m['rule'])}")


def list_cmd(
    kind: Annotated[
        str | None, typer.Option("--kind", help=f"Only this kind ({', '.join(FEEDBACK_KINDS)}).")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Reports to list.")] = 50,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """The curator's queue: readers' reports, newest first, with the question they were on."""
    from thoth.runtime import open_state

    if kind is not None and kind not in FEEDBACK_KINDS:
        raise typer.BadParameter(
            f"{kind!r} is not a feedback kind -> use one of {', '.join(FEEDBACK_KINDS)}",
            param_hint="--kind",
        )
    with errors(as_json):
        ws = Workspace.open(workspace)
        with open_state(ws) as state:
            reports = state.list_feedback(ws.settings.workspace, kind=kind, limit=limit)
            questions = {r.answer_id: state.get_answer(r.answer_id) for r in reports}
    if as_json:
        emit_json(
            {
                "ok": True,
                "feedback": [
                    {
                        **r.as_dict(),
                        "question": questions[r.answer_id].question,
                        "status": questions[r.answer_id].status,
                    }
                    for r in reports
                ],
            }
        )
        return
    if not reports:
        out.print("No report" + (f" of kind {kind}." if kind else "."))
        return
    # A block per report, not a table: the question and the note are what the curator reads,
    # and a table squeezes them to nothing on a narrow terminal.
    out.print(f"[bold]Feedback on answers of {escape(ws.settings.workspace)}[/] (newest first)")
    for r in reports:
        logged = questions[r.answer_id]
        out.print(
            f"\n[bold]#{r.id} {r.kind}[/] — {r.created_at.strftime('%Y-%m-%d %H:%M')} UTC — "
            f"caller {escape(r.caller or '-')} — answer {r.answer_id} ({logged.status})"
        )
        out.print(f"  question: {escape(logged.question)}", highlight=False)
        out.print(f"  note: {escape(r.note) or '-'}", highlight=False)
        for m in r.masked:
            out.print(
                f"  masked: {escape(m['column'])} ({m['values']} values) — {escape(m['rule'])}",
                highlight=False,
            )


def to_eval_cmd(
    feedback_id: Annotated[int, typer.Argument(help="A report id (`tht answers feedback list`).")],
    source: Annotated[
        list[str] | None,
        typer.Option("--source", help="A document id the right answer rests on (repeatable)."),
    ] = None,
    nothing_found: Annotated[
        bool,
        typer.Option("--nothing-found", help="The corpus holds no answer: expect nothing_found."),
    ] = False,
    file: Annotated[
        Path | None,
        typer.Option("--file", help="Evaluation file (default: [answers].evaluation)."),
    ] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Turn a reported question into a reference question of `tht eval`: expecting the
    documents given with --source, or nothing_found; without either, the answer's own sources,
    for review."""
    from thoth.evaluation.answers import append_case, case_from_answer
    from thoth.runtime import open_state

    if source and nothing_found:
        raise typer.BadParameter(
            "a case expects documents or nothing_found, not both", param_hint="--nothing-found"
        )
    with errors(as_json):
        ws = Workspace.open(workspace)
        rel = file or Path(ws.settings.answers.evaluation)
        with open_state(ws) as state:
            reported = state.get_feedback(ws.settings.workspace, feedback_id)
            logged = state.get_answer(reported.answer_id)
        sources = source or [str(s["doc_id"]) for s in logged.answer.get("sources") or []]
        entry = case_from_answer(
            logged.id,
            logged.question,
            logged.request,
            sources,
            str(logged.answer.get("text")),
            nothing_found=nothing_found,
            reported=f"{reported.kind}: {reported.note}".rstrip(": "),
        )
        append_case(ws.root / rel, str(rel), logged.id, entry)
    case_id = f"from-{logged.id}"
    if as_json:
        emit_json({"ok": True, "file": str(rel), "id": case_id, "entry": entry})
    else:
        out.print(f"Appended case [bold]{case_id}[/] to {rel}; `tht eval run` runs it.")
