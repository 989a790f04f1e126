"""`tht schema sync | show | link`: the session database's schema in the index.

- `sync` introspects the [database] read-only and builds the schema records (only changed
  tables are embedded; every change by name in the report and in `tht docs runs`);
- `show` lists the tables and columns of the active generation's snapshot;
- `link "question"` shows what schema linking proposes for a question, outside any session.

Exit codes: 0 done; 1 failed; 4 refused to start (no [database], database unreachable, no
schema synced).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from thoth.cli import exitcodes
from thoth.cli.common import JsonOpt, emit_json, errors, out, phase_bars
from thoth.errors import PreconditionError, ThothError
from thoth.workspace import Workspace

if TYPE_CHECKING:
    from thoth.index.reader import Unreadable
    from thoth.schema import SchemaProposal
    from thoth.schema.sync import SchemaSyncReport

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]

# thoth.schema.DEFAULT_PROPOSAL_COLUMNS, not imported here (it loads the index reader, and
# `tht --help` must not). A test keeps them equal.
DEFAULT_PROPOSAL_COLUMNS: Final = 20


def register(app: typer.Typer) -> None:
    schema_app = typer.Typer(
        no_args_is_help=True, help="The session database's schema: sync, show, link."
    )
    app.add_typer(schema_app, name="schema")
    schema_app.command("sync")(sync_cmd)
    schema_app.command("show")(show_cmd)
    schema_app.command("link")(link_cmd)


def _unreadable(exc: Unreadable) -> ThothError:
    return PreconditionError(str(exc), code=exc.code)


def sync_cmd(
    full: Annotated[
        bool, typer.Option("--full", help="Embed every table again, changed or not.")
    ] = False,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Introspect the [database] read-only and index its tables and columns.

    Exit 0 synced (or unchanged), 1 failed (the active generation is untouched, unless the
    failure came after an activation: the error says which serves), 4 refused to start
    (no [database], database unreachable, another sync running)."""
    from thoth.runtime import open_runtime
    from thoth.schema import SchemaSync

    with (
        errors(as_json),
        open_runtime(Workspace.open(workspace)) as rt,
        rt.database() as db,
        phase_bars(not as_json, "schema sync") as tick,
    ):
        report = SchemaSync(rt.ws, rt.state, rt.backend, rt.embedder, db, progress=tick).run(
            full=full
        )
    if as_json:
        emit_json({"ok": True, **report.as_dict()})
    else:
        render_sync(out, report)
    raise typer.Exit(exitcodes.OK)


def render_sync(console: Console, report: SchemaSyncReport) -> None:
    console.print(
        f"Schema sync run [bold]{report.run_id}[/] ({report.dialect}) by "
        f"{escape(report.run_by)}{' (--full)' if report.full else ''}, "
        f"{report.duration_s:.1f}s: {escape(report.message)}"
    )
    counts = Table(title="counts", show_header=False)
    counts.add_column("what")
    counts.add_column("n", justify="right")
    for key, value in report.counts.items():
        counts.add_row(key.replace("_", " "), str(value))
    console.print(counts)
    new_tables = set(report.tables_created)
    # The JSON and the run registry list every column; on screen, the columns of a new table
    # are implied by the table.
    columns_created = [c for c in report.columns_created if c.rsplit(".", 1)[0] not in new_tables]
    for title, rows, colour in (
        ("tables created", report.tables_created, "green"),
        ("tables changed", report.tables_changed, "yellow"),
        ("tables dropped", report.tables_dropped, "red"),
        ("columns created", columns_created, "green"),
        ("columns changed", report.columns_changed, "yellow"),
        ("columns dropped", report.columns_dropped, "red"),
    ):
        if rows:
            console.print(f"[bold {colour}]{title}[/] ({len(rows)}): " + escape(", ".join(rows)))
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)


def show_cmd(
    table: Annotated[str | None, typer.Argument(help="Only this table (schema.table).")] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """List the tables and columns of the schema index (the active generation's snapshot)."""
    from thoth.runtime import open_runtime
    from thoth.workflow.sql import read_catalog

    with errors(as_json), open_runtime(Workspace.open(workspace)) as rt:
        catalog = read_catalog(rt, "tht schema show")
        tables = sorted(catalog.tables.values(), key=lambda t: t.table)
        if table is not None:
            problem = catalog.unknown_table(table)
            if problem is not None:
                raise ThothError(problem, code="unknown_name")
            tables = [t for t in tables if t is catalog.table(table)]
        columns = sorted(catalog.columns.values(), key=lambda c: (c.table, c.ordinal))
    if as_json:
        emit_json(
            {
                "ok": True,
                "generation": catalog.generation,
                "tables": [
                    {
                        **t.to_payload(),
                        "columns": [c.to_payload() for c in columns if c.table == t.table],
                    }
                    for t in tables
                ],
            }
        )
        return
    for t in tables:
        out.print(
            f"[bold]{escape(t.table)}[/] ({t.table_kind}) [dim]{escape(t.description)}[/]",
            highlight=False,
            soft_wrap=True,
        )
        for c in columns:
            if c.table != t.table:
                continue
            line = f"  [bold]{escape(c.name)}[/] {escape(c.type)} [cyan]{c.privacy_kind}[/]"
            if c.primary_key:
                line += " PK"
            if c.references:
                line += f" -> {escape(', '.join(c.references))}"
            about = " ".join(filter(None, (c.description, c.values)))
            if about:
                line += f" [dim]{escape(about[:140])}[/]"
            if c.samples:
                line += f" [dim]e.g. {escape(', '.join(c.samples[:5]))}[/]"
            out.print(line, highlight=False, soft_wrap=True)


def link_cmd(
    question: Annotated[str, typer.Argument(help="The question to link to the schema.")],
    size: Annotated[
        int, typer.Option("--size", min=1, max=200, help="Columns proposed, join keys aside.")
    ] = DEFAULT_PROPOSAL_COLUMNS,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """What schema linking proposes for a question (no session, no Evidence)."""
    from thoth.index.reader import Unreadable
    from thoth.runtime import open_runtime
    from thoth.schema import SchemaLinker

    with (
        errors(as_json),
        open_runtime(Workspace.open(workspace)) as rt,
        SchemaLinker(rt.reader()) as linker,
    ):
        try:
            proposal = linker.propose(question, size=size)
        except Unreadable as exc:
            raise _unreadable(exc) from exc
    if as_json:
        emit_json({"ok": True, **proposal.as_dict()})
        return
    render_proposal(out, proposal)


def render_proposal(console: Console, proposal: SchemaProposal) -> None:
    """Proposed tables, then columns (join columns marked), with what the reviewer needs."""
    console.print(
        "[bold]Proposed tables[/]: "
        + ", ".join(
            escape(t.qualified) + (" [dim](bridge)[/]" if t.bridge else "") for t in proposal.tables
        )
    )
    console.print("[bold]Proposed columns[/] (best first; join columns last):")
    for c in proposal.proposed():
        about = " ".join(filter(None, (c.description, c.values)))
        line = f"  [bold]{escape(c.qualified)}[/] {escape(c.type)}"
        if c.join:
            line += " [cyan](join)[/]"
        if about:
            line += f" [dim]{escape(about[:110])}[/]"
        if c.samples:
            line += f" [dim]e.g. {escape(', '.join(c.samples[:4]))}[/]"
        if c.evidence_ids:
            line += f" [green]{escape(', '.join(c.evidence_ids))}[/]"
        console.print(line, highlight=False, soft_wrap=True)
    if proposal.joins:
        console.print(
            "[bold]Joins[/]: "
            + "; ".join(f"{escape(j.left)} = {escape(j.right)}" for j in proposal.joins),
            highlight=False,
        )
