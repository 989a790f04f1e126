"""`tht index check`: re-validate every retained index generation without writing anything.
`tht index migrate`: move the index to another backend (thoth.workflow.index_migration)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.markup import escape
from rich.table import Table

from thoth.cli import exitcodes
from thoth.cli.common import JsonOpt, emit_json, errors, out
from thoth.workspace import Workspace

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]


def register(app: typer.Typer) -> None:
    index_app = typer.Typer(no_args_is_help=True, help="Inspect the index generations.")
    app.add_typer(index_app, name="index")
    index_app.command("check")(check_cmd)
    index_app.command("migrate")(migrate_cmd)


def check_cmd(workspace: WsOpt = Path("."), as_json: JsonOpt = False) -> None:
    """Check every generation that still has index data: its files against what its builder
    sealed (size and SHA-256 of each), its points per record kind against the sealed counts.

    Exit 0 every generation intact, 1 one or more damaged (the active one included or not)."""
    from thoth.index.reader import check_generations
    from thoth.runtime import open_runtime

    with errors(as_json), open_runtime(Workspace.open(workspace)) as rt:
        checks = check_generations(rt.state.list_generations(rt.ws.settings.workspace), rt.backend)
    ok = all(c.ok for c in checks)
    if as_json:
        emit_json({"ok": ok, "generations": [asdict(c) for c in checks]})
    else:
        table = Table(title="index generations")
        for col in ("generation", "status", "result", "files checked"):
            table.add_column(col)
        for c in checks:
            result = "[green]intact[/]" if c.ok else f"[red]{c.code}[/]"
            table.add_row(c.generation, c.status, result, "yes" if c.checked_files else "no")
        out.print(table)
        for c in checks:
            if not c.ok:
                out.print(f"[red]{c.generation}[/]: {escape(c.message)}")
        if not checks:
            out.print("No generation holds index data yet.")
    raise typer.Exit(exitcodes.OK if ok else exitcodes.FAILED)


BackendOpt = Annotated[
    str, typer.Option("--to", help="The target backend: edge, server or postgres.")
]


def migrate_cmd(
    to: BackendOpt,
    url: Annotated[
        str | None, typer.Option("--url", help="postgres/server: the target's URL.")
    ] = None,
    url_env: Annotated[
        str | None,
        typer.Option("--url-env", help="postgres: the environment variable holding the URL."),
    ] = None,
    schema: Annotated[
        str | None, typer.Option("--schema", help="postgres: the schema of the index tables.")
    ] = None,
    path: Annotated[
        str | None,
        typer.Option("--path", help="edge: the generations' directory; server: local mode."),
    ] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Copy the active generation, the ones kept for rollback and the memory index to another
    backend (nothing re-embedded), verify counts, ids and sample searches, then switch
    `[index]` in thoth.toml. The source is left in place.

    Exit 0 switched; otherwise a coded refusal (same backend, target unreachable, no pgvector,
    a schema of another workspace, a dimension mismatch, a copy that did not verify) and the
    workspace still on its backend."""
    from thoth.workflow.index_migration import Target, migrate_index

    if to not in ("edge", "server", "postgres"):
        raise typer.BadParameter(f"--to {to!r}: expected edge, server or postgres")
    backend: Literal["edge", "server", "postgres"] = to  # type: ignore[assignment]
    with errors(as_json):
        report = migrate_index(
            Workspace.open(workspace),
            Target(backend, url=url, url_env=url_env, schema=schema, path=path),
        )
    if as_json:
        emit_json(report.as_dict())
        return
    out.print(f"index migrated: {escape(report.source)} -> {escape(report.target)}")
    for g in report.generations:
        out.print(
            f"  {g.id} ({g.status}): {g.records} records, {g.dense_queries} dense and "
            f"{g.bm25_queries} BM25 searches identical"
        )
    for name, kinds in report.live.items():
        out.print(f"  live {name}: {sum(kinds.values())} records")
    out.print(f"{escape(report.config)} now names the target; the source was left in place.")
