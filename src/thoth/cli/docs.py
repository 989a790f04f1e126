"""`tht docs sync` and `tht docs runs`: index the declared document and wiki sources, and read
the registry of sync runs."""

from __future__ import annotations

import socket
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from thoth.cli import exitcodes
from thoth.cli.common import (
    JsonOpt,
    as_thoth_error,
    emit_json,
    err,
    errors,
    out,
    phase_bars,
    report_error,
)
from thoth.errors import PreconditionError, ThothError
from thoth.workspace import Workspace

if TYPE_CHECKING:
    from thoth.answer.document_view import DocumentView
    from thoth.knowledge.sync import DocsSync, SyncPlan, SyncReport
    from thoth.runtime import Runtime
    from thoth.state import SyncRun

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]
FullOpt = Annotated[
    bool,
    typer.Option(
        "--full",
        help="Rebuild every document and page (after a pipeline upgrade); the report counts "
        "the fragments still built by an older pipeline, which must be 0.",
    ),
]


def register(app: typer.Typer) -> None:
    docs_app = typer.Typer(
        no_args_is_help=True, help="Index the declared document and wiki sources."
    )
    app.add_typer(docs_app, name="docs")
    docs_app.command("sync")(sync_cmd)
    docs_app.command("runs")(runs_cmd)
    docs_app.command("show")(show_cmd)


def sync_cmd(
    full: FullOpt = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Say what would be built, carried and removed, and an estimate of the time, "
            "without aligning, building or recording anything.",
        ),
    ] = False,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Align every declared source to its latest revision and re-index what changed.

    Exit 0 synced (or nothing changed), 1 failed (the error says which generation serves: the
    active one, untouched, unless the failure came after an activation), 4 refused to start
    (another sync is running, no Git commit)."""
    from thoth.knowledge.sync import DocsSync
    from thoth.runtime import open_runtime

    if dry_run:
        with errors(as_json), open_runtime(Workspace.open(workspace)) as rt:
            plan = DocsSync(rt.ws, rt.state, rt.backend, rt.embedder).plan(full)
        if as_json:
            emit_json({"ok": True, **plan.as_dict()})
        else:
            render_plan(out, plan)
        raise typer.Exit(exitcodes.OK)
    with (
        errors(as_json),
        open_runtime(Workspace.open(workspace)) as rt,
        phase_bars(not as_json, "docs sync") as tick,
    ):
        sync = DocsSync(rt.ws, rt.state, rt.backend, rt.embedder, progress=tick)
        try:
            report = sync.run(full=full)
        except (ThothError, OSError) as exc:
            _failed(as_thoth_error(exc), sync, as_json)
    if as_json:
        emit_json({"ok": True, **report.as_dict()})
    else:
        render_sync(out, report)
    raise typer.Exit(exitcodes.OK)


def render_plan(console: Console, plan: SyncPlan) -> None:
    files = ", ".join(f"{name} {n}" for name, n in plan.files.items())
    console.print(f"Files matched by the sources at their current commit: {files}.")
    console.print(
        f"Would build {len(plan.to_build)} document(s) ({plan.build_bytes / 1e6:.1f} MB to "
        f"extract, chunk and embed), carry {plan.unchanged} unchanged, remove "
        f"{len(plan.to_delete)}; {plan.not_knowledge} file(s) are not knowledge."
        + (" (--full: every document is built again.)" if plan.full else "")
    )
    for doc_id in plan.to_build:
        console.print(f"  build  {escape(doc_id)}", highlight=False)
    for doc_id in plan.to_delete:
        console.print(f"  remove {escape(doc_id)}", highlight=False)
    if plan.stale_fragments:
        console.print(
            f"{plan.stale_fragments} carried fragment(s) were built by an older pipeline -> "
            "`tht docs sync --full` rebuilds them (try `--dry-run --full` for its size)."
        )
    estimate = "none" if plan.estimate_s is None else f"about {plan.estimate_s:.0f} s"
    console.print(f"Estimate: {estimate} ({plan.estimate_basis}).", highlight=False)
    console.print(
        "Nothing was aligned, built or recorded; a real run first fast-forwards each source."
    )


def _failed(exc: ThothError, sync: DocsSync, as_json: bool) -> NoReturn:
    """Report a failed run with its registry id and what serves now; exit with the error's
    code."""
    run_id, report = sync.run_id, sync.report
    if run_id is None:
        recorded = "no run was started"
    elif sync.recorded:
        recorded = f"run {run_id} is recorded as failed (`tht docs runs`)"
    else:
        recorded = (
            f"run {run_id} could not be recorded as failed and stays 'running': the next sync "
            f"on this host closes it once this process has exited, or `tht docs runs "
            f"--interrupt {run_id}` does"
        )
    if report is not None and report.after_failure:
        serving = report.after_failure
    else:  # refused before the run started, or before anything was read
        serving = "nothing was built: the active generation is unchanged"
    notes = [str(n) for n in getattr(exc, "__notes__", [])]  # e.g. why the row stays open
    extra: dict[str, Any] = {
        "notes": notes,
        "run_id": run_id,
        "run_recorded": sync.recorded,
        "serving": serving,
        "generation": report.generation if report else None,
        "abandoned_generation": report.abandoned_generation if report else None,
    }
    code = report_error(exc, as_json, extra, notes)
    if not as_json:
        err.print(f"[dim]{escape(recorded)}; {escape(serving)}.[/]", highlight=False)
    raise typer.Exit(code) from exc


def render_sync(console: Console, report: SyncReport) -> None:
    """The run report: revisions, counts, and every change by name."""
    console.print(
        f"Sync run [bold]{report.run_id}[/] by {escape(report.run_by)}"
        f"{' (--full)' if report.full else ''}, pipeline version {report.pipeline_version}, "
        f"{report.duration_s:.1f}s."
    )
    for source, revision in report.revisions.items():
        console.print(f"  source [bold]{escape(source)}[/] @ {revision[:12]}", highlight=False)
    table = Table(title="counts", show_header=False)
    table.add_column("what")
    table.add_column("n", justify="right")
    for key, value in report.counts.items():
        style = "bold red" if key == "stale_fragments" and value else ""
        table.add_row(key.replace("_", " "), f"[{style}]{value}[/]" if style else str(value))
    console.print(table)

    def listing(title: str, rows: list[str], colour: str = "") -> None:
        if not rows:
            return
        console.print(f"[bold {colour}]{title}[/] ({len(rows)})")
        for row in rows:
            console.print(f"  {escape(row)}", highlight=False, soft_wrap=True)

    listing("created", report.created, "green")
    listing("updated", report.updated)
    listing("deleted", [f"{d['doc_id']}: {d['reason']}" for d in report.deleted], "red")
    # Always by name: a change of labels changes who may read a document.
    listing(
        "labels changed",
        [
            f"{c['doc_id']}: [{', '.join(c['old'])}] -> [{', '.join(c['new'])}]"
            + (
                f" (channel {c['old_channel'] or '-'} -> {c['new_channel'] or '-'})"
                if "new_channel" in c
                else ""
            )
            for c in report.labels_changed
        ],
        "yellow",
    )
    listing("not knowledge", [f"{d['doc_id']}: {d['reason']}" for d in report.not_knowledge])
    listing(
        "routed to curation",
        [
            f"{d['doc_id']}: {d['reason']} (kept {d['kept_fragments']} indexed fragments)"
            for d in report.curation
        ],
        "yellow",
    )
    listing(
        "uncommitted (not read)",
        [f"{source}: {path}" for source, paths in report.uncommitted.items() for path in paths],
        "yellow",
    )
    listing("notes", [f"{n['doc_id']}: {n['note']}" for n in report.notes])
    listing(
        "secrets exempted (secret-exemptions.yaml)",
        [
            f"{e['doc_id']}: {e['kind']} on {e['place']} [digest {e['digest']}], reviewed by "
            f"{e['reviewed_by']}: {e['reason']}"
            for e in report.secrets_exempted
        ],
        "yellow",
    )
    listing("warnings", report.warnings, "yellow")
    if report.chunk_stats and report.chunk_stats["count"]:
        s = report.chunk_stats
        console.print(
            f"chunks built: {s['count']} (chars min {s['min']}, p50 {s['p50']}, p90 {s['p90']}, "
            f"max {s['max']}; {s['under_floor']} under the floor, {s['over_max']} over the max)"
        )
    if report.dropped_generations:
        console.print(f"dropped by retention: {', '.join(report.dropped_generations)}")
    colour = "green" if report.outcome in ("activated", "unchanged") else "red"
    console.print(f"[{colour}]{report.outcome}[/]: {escape(report.message)}")


def runs_cmd(
    limit: Annotated[int, typer.Option("--limit", min=1, help="Runs to show.")] = 20,
    interrupt: Annotated[
        int | None,
        typer.Option(
            "--interrupt",
            help="Close a 'running' run whose process is gone (e.g. on a machine that no "
            "longer exists), so that a new sync may start. Refused while the run's process "
            "is alive on this host.",
        ),
    ] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """The registry of sync runs (and of the Evidence publications that share their lock),
    newest first."""
    from thoth.runtime import open_runtime

    with errors(as_json), open_runtime(Workspace.open(workspace)) as rt:
        name = rt.ws.settings.workspace
        if interrupt is not None:
            _interrupt(rt, interrupt)
        runs = rt.state.list_sync_runs(name, limit)
    if as_json:
        emit_json({"workspace": name, "runs": [run_dict(r) for r in runs]})
        return
    # Narrow enough for an 80-column terminal; `--json` has every field (host, pid, revisions,
    # the changes by name).
    table = Table(title=f"sync runs of {name}")
    for col in ("id", "kind", "status", "started", "by", "+new ~upd -del", "stale"):
        table.add_column(col, overflow="fold")
    for r in runs:
        c = r.counts
        table.add_row(
            str(r.id),
            r.kind + (" full" if r.full else ""),
            r.status,
            r.started_at.strftime("%m-%d %H:%M"),
            escape(r.run_by),
            f"+{c.get('created', 0)} ~{c.get('updated', 0)} -{c.get('deleted', 0)}"
            if r.kind == "docs"
            else "",
            str(c.get("stale_fragments", "")),
        )
    out.print(table)
    for r in runs:  # why a run did not succeed is the line an operator looks for
        if r.status != "succeeded":
            out.print(f"run {r.id} {r.status}: {escape(_first_line(r.message, 300))}")


def _interrupt(rt: Runtime, run_id: int) -> None:
    from thoth.gitrepo import default_run_by
    from thoth.state.store import pid_alive

    run = rt.state.get_sync_run(run_id)
    if run is None or run.workspace != rt.ws.settings.workspace:
        raise PreconditionError(
            f"no sync run {run_id} in workspace {rt.ws.settings.workspace} -> see `tht docs runs`"
        )
    if run.status != "running":
        raise PreconditionError(f"sync run {run_id} is already {run.status!r}: nothing to close")
    if run.host == socket.gethostname() and pid_alive(run.pid):
        # Closing it would release the lock under a live build: two builds from one generation.
        raise PreconditionError(
            f"sync run {run_id} is still running: its process (pid {run.pid}) is alive on "
            f"this host ({run.host}) -> wait for it to finish, or stop it (check with `ps -p "
            f"{run.pid}` that it is the sync or publication, then `kill {run.pid}`); a run "
            "whose process is gone is closed by the next build on this host"
        )
    rt.state.finish_sync_run(
        run_id,
        "interrupted",
        run.revisions,
        run.generation,
        run.counts,
        run.changes,
        f"closed by hand by {default_run_by(rt.ws.root)}: its process ({run.host}, pid {run.pid}) "
        "was declared gone",
    )


def _first_line(text: str, width: int) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= width else line[: width - 1] + "…"


def run_dict(run: SyncRun) -> dict[str, Any]:
    data = asdict(run)
    data["started_at"] = run.started_at.isoformat()
    data["finished_at"] = run.finished_at.isoformat() if run.finished_at else None
    return data


def show_cmd(
    document: Annotated[
        str,
        typer.Argument(
            help="A document or wiki page: its doc id (source:path, as `tht docs sync` lists "
            "it) or its path."
        ),
    ],
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """A document's fragments in the active generation: heading path, page, kind, title,
    labels, and the search text (embedded, BM25) beside the read text (what the answerer
    reads: the text and its caveats).

    Exit 0 shown, 2 no such document, 4 no readable generation."""
    from thoth.answer.document_view import show_document
    from thoth.answer.wording import wording_for
    from thoth.index.reader import Unreadable
    from thoth.runtime import open_runtime

    with errors(as_json):
        ws = Workspace.open(workspace)
        label = wording_for(ws.settings.language).caveat_label
        with open_runtime(ws) as rt:
            reader = rt.reader()
            try:
                view = show_document(reader, document, label)
            except Unreadable as exc:
                raise PreconditionError(str(exc), code=exc.code) from exc
            finally:
                reader.close()
    if as_json:
        emit_json({"ok": True, **view.as_dict()})
    else:
        render_document(out, view)


def render_document(console: Console, view: DocumentView) -> None:
    console.print(
        f"[bold]{escape(view.doc_id)}[/] ({view.doc_format}, source {escape(view.source)}, "
        f"revision {view.revision[:12] or '-'}, generation {view.generation}"
        f"{f', entity {escape(view.entity)}' if view.entity else ''}): "
        f"{len(view.fragments)} fragment(s)",
        highlight=False,
    )
    for f in view.fragments:
        where = " > ".join(f.heading_path) or "-"
        page = "-" if f.page is None else str(f.page)
        console.print()
        console.print(
            f"[bold]#{f.ordinal}[/] {f.record_kind}/{f.chunk_kind}  page {page}  "
            f"labels {escape(', '.join(f.labels) or '(none: never served)')}  "
            f"channel {escape(f.channel or '-')}",
            highlight=False,
        )
        console.print(f"  title: {escape(f.title or '-')}", highlight=False)
        console.print(f"  heading path: {escape(where)}", highlight=False)
        console.print("  search text (embedded, BM25):", style="dim")
        console.print(f.search_text, markup=False, highlight=False, soft_wrap=True)
        if f.read_text == f.search_text:
            console.print("  read text: the same (no caveats)", style="dim")
        else:
            console.print("  read text (what the answerer reads):", style="dim")
            console.print(f.read_text, markup=False, highlight=False, soft_wrap=True)
