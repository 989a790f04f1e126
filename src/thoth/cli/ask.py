"""`tht ask` and `tht answers log`: grounded answers from the corpus, and their log.

Exit codes of `tht ask`: 0 answered (found, nothing_found, truncated, not_searched, computed,
needs_parameter); 1 the search, the analytics store or the answer model failed; 2 bad request
(unknown field, label, channel or source).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from thoth.cli import exitcodes, feedback
from thoth.cli.common import JsonOpt, emit_json, errors, out
from thoth.workspace import Workspace

if TYPE_CHECKING:
    from thoth.answer.service import Answer

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]

# The statuses an answer is logged with (thoth.state.ANSWER_STATUSES, which is not imported
# here: the state store loads SQLAlchemy, and `tht --help` must not). A test keeps them equal.
ANSWER_STATUSES: Final = (
    "not_searched",
    "nothing_found",
    "failed",
    "truncated",
    "found",
    "computed",
    "needs_parameter",
)

# Request field (KnowledgeSearch.search's keyword) -> the option that sets it. A test compares
# the keys with request_fields(): a new filter without an option here fails it.
REQUEST_OPTIONS: Final = {
    "channel": "--channel",
    "labels": "--label",
    "source": "--source",
    "year": "--year",
    "doc_format": "--format",
}


def register(app: typer.Typer) -> None:
    app.command("ask")(ask_cmd)
    answers_app = typer.Typer(no_args_is_help=True, help="The log of served answers.")
    app.add_typer(answers_app, name="answers")
    answers_app.command("log")(log_cmd)
    answers_app.command("stats")(stats_cmd)
    feedback.register(answers_app)


def ask_cmd(
    question: Annotated[str, typer.Argument(help="The question, in plain words.")],
    channel: Annotated[
        str | None, typer.Option("--channel", help="Search this channel only.")
    ] = None,
    labels: Annotated[
        list[str] | None,
        typer.Option("--label", help="A confidentiality label you may see (repeatable)."),
    ] = None,
    source: Annotated[str | None, typer.Option("--source", help="One declared source.")] = None,
    year: Annotated[int | None, typer.Option("--year", help="Documents of this year.")] = None,
    doc_format: Annotated[
        str | None, typer.Option("--format", help="Documents of this format (md, pdf ...).")
    ] = None,
    instructions: Annotated[
        str | None, typer.Option("--instructions", help="Style instructions for the answer.")
    ] = None,
    diagnostics: Annotated[
        bool, typer.Option("--diagnostics", help="Show ranks, scores, route and filters.")
    ] = False,
    show_context: Annotated[
        bool,
        typer.Option(
            "--show-context",
            help="List every fragment the answerer received, whole, with the doc id `tht "
            "docs show` takes and its score per branch (in --json: `context`).",
        ),
    ] = False,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Answer a question from the corpus, with its sources and the search status."""
    from thoth.runtime import open_answer_service

    given: dict[str, Any] = {
        "channel": channel,
        "labels": labels or None,  # no --label: the workspace's default labels
        "source": source,
        "year": year,
        "doc_format": doc_format,
    }
    request = {name: given[name] for name in REQUEST_OPTIONS}
    with errors(as_json):
        check_options(request)  # before anything is opened or read
        service = open_answer_service(Workspace.open(workspace))
        try:
            # The service validates the request with parse_request and logs a refusal too.
            answer = service.ask(question, instructions=instructions, **request)
        finally:
            service.close()
    if as_json:
        emit_json({"ok": answer.status != "failed", **answer.as_dict(show_context)})
    else:
        print_answer(out, answer, diagnostics)
        if show_context:
            print_context(out, answer.context or [])
    raise typer.Exit(exitcodes.FAILED if answer.status == "failed" else exitcodes.OK)


def check_options(request: dict[str, Any]) -> None:
    """The request's fields checked as the service will check them, before anything is opened;
    an error about a field names the option that set it (`--year`)."""
    from thoth.answer.request import SearchRequestError, parse_request

    try:
        parse_request(request)
    except SearchRequestError as exc:
        fields = [p.field for p in exc.problems if p.field in REQUEST_OPTIONS]
        if not fields:
            raise
        option = REQUEST_OPTIONS[str(fields[0])]
        raise SearchRequestError(
            f"{option}: {exc.message_text()}",
            problems=[replace(p, where=option) for p in exc.problems],
        ) from exc


def print_answer(console: Console, answer: Answer, diagnostics: bool = False) -> None:
    out = console
    out.print(answer.text, markup=False, highlight=False, soft_wrap=True)
    if answer.sources is not None:
        out.print()
        out.print("Sources:" if answer.sources else "Sources: none", highlight=False)
        for n, src in enumerate(answer.sources, start=1):
            out.print(f"  {n}. {src.title} — {src.doc_id}", markup=False, highlight=False)
            # The passage it rests on: `tht serve` opens the link (GET, with a caller's key).
            out.print(f"     {src.link}", markup=False, highlight=False, soft_wrap=True)
    if answer.provenance is not None:
        p = answer.provenance
        params = ", ".join(f"{k}={v}" for k, v in p["parameters"].items()) or "-"
        out.print()
        out.print(
            f"Provenance: query {p['query_id']} @ {str(p['catalog_revision'])[:12]}; "
            f"parameters {params}; {p['row_count']} row(s); data date {p['data_date']}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        if p.get("link"):
            out.print(f"  {p['link']}", markup=False, highlight=False, soft_wrap=True)
    out.print()
    if answer.degraded:
        # The answer was served without part of the engine: said where the reader looks.
        out.print(
            "Degraded: " + "; ".join(answer.degraded),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    out.print(f"Status: {_status_line(answer)}  (answer id {answer.id})", markup=False)
    if answer.status == "nothing_found" and (why := _why_nothing(answer.diagnostics)):
        # What decided it, said where the reader looks: the diagnostics hold the rest.
        out.print(f"Why: {why}", markup=False, highlight=False, soft_wrap=True)
    if answer.diagnostics.get("floor") == "uncalibrated":
        # Said on every answer until the workspace calibrates: found / nothing_found rest on
        # a generic floor, not on this corpus's own questions.
        out.print(
            "Note: floor: uncalibrated — found / nothing_found use the embedder's generic "
            "relevance floor -> label questions in answers/channels.yaml and run `tht channels "
            "calibrate`, then set [answers] min_similarity",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if diagnostics:
        _print_diagnostics(console, answer.diagnostics)


def print_context(console: Console, context: list[dict[str, Any]]) -> None:
    """What the answerer read, fragment by fragment, wrapped (never cut) to the terminal."""
    console.print()
    if not context:
        console.print("Context: none (the answerer received no fragment)", markup=False)
        return
    console.print(f"Context: {len(context)} fragment(s) the answerer received", markup=False)
    for entry in context:
        page = "" if entry["page"] is None else f", page {entry['page']}"
        heading = " > ".join(entry["heading_path"])
        similarity = "-" if entry["similarity"] is None else f"{entry['similarity']:.4f}"
        console.print()
        console.print(
            f"[{entry['marker']}] {entry['doc_id']}{page}{' — ' + heading if heading else ''}",
            markup=False,
            highlight=False,
            soft_wrap=False,
        )
        model = entry.get("model_score")
        console.print(
            f"    score {entry['score']:.4f}; dense rank {entry['dense_rank'] or '-'} "
            f"(similarity {similarity}); bm25 rank {entry['bm25_rank'] or '-'}; "
            f"fused rank {entry.get('fused_rank') or '-'}; "
            + ("" if model is None else f"model score {_score(model)}; ")
            + f"`tht docs show '{entry['doc_id']}'` shows its document",
            markup=False,
            highlight=False,
        )
        console.print(entry["text"], markup=False, highlight=False)


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _status_line(answer: Answer) -> str:
    if answer.status == "truncated":
        return (
            f"truncated: {answer.dropped['fragments']} fragments from "
            f"{answer.dropped['documents']} documents left out for lack of space"
        )
    if answer.status == "failed":
        return f"failed [{answer.error_code}]"
    if answer.status == "computed":
        return "computed (by a catalog query of the analytics store; no text source consulted)"
    if answer.status == "needs_parameter":
        return f"needs_parameter [{answer.error_code}]"
    return answer.status


def _why_nothing(diagnostics: dict[str, Any]) -> str | None:
    """The relevance check's reason for a nothing_found, in a line; None when it was not the
    relevance check that decided (no fragment at all, a filter no document passes)."""
    rel = diagnostics.get("relevance") or {}
    verdict = rel.get("verdict")
    if rel.get("reason"):
        return str(rel["reason"])
    if verdict == "below_similarity":
        return (
            f"no passage is close enough to the question (best similarity "
            f"{rel.get('similarity')}, floor {rel.get('min_similarity')})"
        )
    if verdict == "absent_term" and rel.get("missing"):
        return "no document holds " + ", ".join(f"'{t}'" for t in rel["missing"])
    if verdict == "unmatched_terms" and rel.get("unmatched"):
        return (
            "the passages found do not hold the question's words "
            + ", ".join(f"'{t}'" for t in rel["unmatched"])
            + ", which carry its subject"
        )
    return None


def _print_diagnostics(out: Console, data: dict[str, Any]) -> None:
    fragments = data.get("fragments") or []
    if fragments:
        table = Table(title="retrieved fragments")
        for col in ("rank", "cited as", "doc_id", "kind", "score"):
            table.add_column(col)
        table.add_column("similarity", min_width=10)  # dense: what the relevance floor measures
        scored = any(f.get("model_score") is not None for f in fragments)
        for col in ("dense", "bm25", "fused", *(("model",) if scored else ()), "floor"):
            table.add_column(col)
        for f in fragments:
            similarity = f.get("similarity")
            table.add_row(
                str(f["rank"]),
                "dropped" if f["marker"] is None else f"\\[{f['marker']}]",
                escape(f["doc_id"]),
                f["record_kind"],
                f"{f['score']:.4f}",
                "-" if similarity is None else f"{similarity:.4f}",
                str(f["dense_rank"] or "-"),
                _bm25_cell(f, len(data.get("bm25_languages") or []) > 1),
                str(f.get("fused_rank") or "-"),
                *((_score(f.get("model_score")),) if scored else ()),
                "yes" if f["floor"] else "",
            )
        out.print(table)
        for f in fragments:  # below the table: a terminal is too narrow for the text in it
            out.print(f"  {f['rank']}. {f.get('snippet') or ''}", markup=False, highlight=False)
    relevance = data.get("relevance")
    if relevance:
        out.print(_relevance_line(relevance), markup=False, highlight=False, soft_wrap=True)
    keys = (
        *("route", "filters", "generation", "bm25_languages", "entities", "glossary"),
        *("degraded", "counts", "error", "analytics"),
    )
    for key in keys:
        if key in data and data[key] not in (None, [], {}):
            out.print(f"{key}: {data[key]}", markup=False, highlight=False, soft_wrap=True)


def _bm25_cell(fragment: dict[str, Any], several: bool) -> str:
    """The BM25 rank, with the language of its list when the question was encoded in
    several ("3 english")."""
    rank = fragment.get("bm25_rank")
    if rank is None:
        return "-"
    language = fragment.get("bm25_language")
    return f"{rank} {language}" if several and language else str(rank)


def _relevance_line(relevance: dict[str, Any]) -> str:
    """What the relevance check compared: the closest fragment's dense similarity against
    `[answers] min_similarity`, and the question's distinctive terms missing from what was
    retrieved (thoth.answer.relevance)."""
    best, floor = relevance.get("similarity"), relevance.get("min_similarity")
    missing = relevance.get("missing") or []
    shown = "-" if best is None else f"{best:.4f}"
    if floor is None:
        line = f"relevance floor: best similarity {shown}; none set ([answers] min_similarity)"
    elif best is None:
        line = f"relevance floor: min_similarity {floor} not applied (no dense similarity)"
    else:
        verdict = "passed" if best >= floor else "below: nothing_found"
        line = f"relevance floor: best similarity {shown} vs min_similarity {floor} ({verdict})"
    terms = f"missing terms: {', '.join(missing)}" if missing else "no distinctive term missing"
    line = f"{line}; {terms} (verdict {relevance.get('verdict')})"
    if relevance.get("small_corpus"):  # the word check was limited: said beside the verdict
        line = f"{line}; word check limited: {relevance['small_corpus']}"
    return line


def log_cmd(
    limit: Annotated[int, typer.Option("--limit", min=1, help="Answers to list.")] = 20,
    status: Annotated[
        str | None,
        typer.Option("--status", help=f"Only this status ({', '.join(ANSWER_STATUSES)})."),
    ] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """The most recent answers, newest first (ids for `tht eval add-from-answer`)."""
    from thoth.runtime import open_state

    if status is not None and status not in ANSWER_STATUSES:
        raise typer.BadParameter(
            f"{status!r} is not an answer status -> use one of {', '.join(ANSWER_STATUSES)}",
            param_hint="--status",
        )
    with errors(as_json):
        ws = Workspace.open(workspace)
        with open_state(ws) as state:
            logged = state.list_answers(ws.settings.workspace, limit, status)
    if as_json:
        emit_json(
            {
                "ok": True,
                "answers": [
                    {
                        "id": a.id,
                        "created_at": a.created_at.isoformat(),
                        "status": a.status,
                        "error_code": a.error_code,
                        "caller": a.caller,
                        "question": a.question,
                        "request": a.request,
                        "sources": a.answer.get("sources"),
                        "text": a.answer.get("text"),
                    }
                    for a in logged
                ],
            }
        )
        return
    if not logged:
        out.print("No answer logged" + (f" with status {status}." if status else "."))
        return
    table = Table(title=f"answers of {ws.settings.workspace}")
    for col in ("id", "when (UTC)", "caller", "status", "sources", "question"):
        table.add_column(col)
    for a in logged:
        sources = a.answer.get("sources")
        table.add_row(
            a.id,
            a.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            escape(a.caller or "-"),
            a.status + (f" [{a.error_code}]" if a.error_code else ""),
            "-" if sources is None else str(len(sources)),
            escape(a.question),
        )
    out.print(table)


def stats_cmd(
    days: Annotated[
        int, typer.Option("--days", min=1, help="Days to count, today (UTC) included.")
    ] = 7,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Per day and per calling system: answers by status, failures by code, answers served
    with context dropped or a degraded search, values masked for the model, and readers'
    reports by kind (from the answer log and the feedback)."""
    from thoth.runtime import open_state
    from thoth.state.stats import tally, window_start

    since = window_start(days)
    with errors(as_json):
        ws = Workspace.open(workspace)
        with open_state(ws) as state:
            name = ws.settings.workspace
            tallies = tally(
                state.answers_since(name, since), state.list_feedback(name, since=since)
            )
    if as_json:
        emit_json(
            {"ok": True, "since": since.date().isoformat(), "days": [t.as_dict() for t in tallies]}
        )
        return
    if not tallies:
        out.print(f"No answer logged since {since.date().isoformat()}.")
        return
    # A block per day and caller: readable at any terminal width, one line per measure.
    out.print(
        f"[bold]Answers of {escape(ws.settings.workspace)} since {since.date().isoformat()}[/]"
    )
    for t in tallies:
        statuses = ", ".join(f"{s} {t.statuses[s]}" for s in ANSWER_STATUSES if t.statuses[s])
        failed = ", ".join(f"{code} {n}" for code, n in sorted(t.failed.items())) or "-"
        reports = ", ".join(f"{k} {n}" for k, n in sorted(t.feedback.items())) or "-"
        out.print(f"\n[bold]{t.day}  {escape(t.caller)}[/]  {t.answers} answer(s)")
        out.print(f"  by status: {statuses or '-'}", highlight=False)
        out.print(f"  failed by code: {failed}", highlight=False)
        out.print(
            f"  context dropped {t.context_dropped}, degraded {t.degraded}, "
            f"masked values {t.masked_values} (in {t.masked_answers} answer(s))",
            highlight=False,
        )
        out.print(f"  readers' reports: {reports}", highlight=False)
