"""`tht index check`: re-validate every retained index generation without writing anything."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated

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
