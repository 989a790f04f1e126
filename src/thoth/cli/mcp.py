"""`tht mcp`: the workspace's tools for an assistant, over the Model Context Protocol (stdio).

Exit codes: 0 when the client closed the connection; 4 when the workspace or the caller is
misconfigured (said on stderr: stdout belongs to the protocol)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from thoth.cli.common import errors
from thoth.workspace import Workspace

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_cmd)


def mcp_cmd(
    caller: Annotated[
        str,
        typer.Option(
            "--caller",
            help="The calling system of [service].callers the assistant acts as: its label "
            "ceiling bounds every request, its name goes to the answer log.",
        ),
    ],
    workspace: WsOpt = Path("."),
) -> None:
    """Serve ask, Evidence and knowledge search, and session consult/show as MCP tools on
    stdin/stdout (configure it as a stdio server in the assistant; docs/mcp.md)."""
    import logging

    from thoth.cli.service import LOG_FORMAT
    from thoth.service.mcp_server import run_stdio

    # stderr is the server's log (stdout belongs to the protocol): failures in full, under
    # the request id their tool error carries.
    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
    with errors(as_json=False):
        run_stdio(Workspace.open(workspace), caller)
