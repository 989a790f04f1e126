"""`tht state restore`: put back the copy of the SQLite state file kept before the last sync.

A state file that is truncated, not SQLite or unreadable stops every command with
`state_damaged` (never a silent re-initialisation); this is the one command that recovers. The
damaged file is moved aside, never deleted.

Exit codes: 0 restored; 1 no usable previous copy; 4 no or bad workspace, or a state store
that is not a SQLite file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from thoth.cli.common import JsonOpt, emit_json, errors, out
from thoth.errors import ConfigError
from thoth.workspace import Workspace

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]


def register(app: typer.Typer) -> None:
    state_app = typer.Typer(no_args_is_help=True, help="The state store (.thoth/state.sqlite).")
    app.add_typer(state_app, name="state")
    state_app.command("restore")(restore_cmd)


def restore_cmd(workspace: WsOpt = Path("."), as_json: JsonOpt = False) -> None:
    """Replace the state file with the copy kept before the last sync; the current file is
    moved aside as <name>.damaged-<time>."""
    from thoth.state.backup import restore_previous
    from thoth.state.core import sqlite_file, state_url

    with errors(as_json):
        ws = Workspace.open(workspace)
        url = state_url(ws.root, ws.settings.state.url, ws.settings.state.url_env)
        file = sqlite_file(url)
        if file is None:
            raise ConfigError(
                "[state].url is not a SQLite file: a PostgreSQL state store is restored from "
                "the server's own backups"
            )
        copy, aside = restore_previous(file)
    if as_json:
        emit_json(
            {
                "ok": True,
                "restored": str(file),
                "from": str(copy),
                "moved_aside": str(aside) if aside else None,
            }
        )
        return
    out.print(f"Restored {file} from {copy}.")
    if aside is not None:
        out.print(f"The file it replaced is kept as {aside}.")
