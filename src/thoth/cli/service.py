"""`tht serve` and `tht service add-caller|callers|remove-caller|openapi`."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from thoth.cli.common import JsonOpt, emit_json, err, errors, out
from thoth.errors import ConfigError
from thoth.workspace import Workspace

WORKER_STARTUP_S = 120
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
    service_app = typer.Typer(no_args_is_help=True, help="The HTTP service: callers, OpenAPI.")
    app.add_typer(service_app, name="service")
    service_app.command("add-caller")(add_caller_cmd)
    service_app.command("callers")(callers_cmd)
    service_app.command("remove-caller")(remove_caller_cmd)
    service_app.command("openapi")(openapi_cmd)


def serve_cmd(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8787,
    workers: Annotated[
        int, typer.Option(min=1, max=64, help="Worker processes (each opens the engine).")
    ] = 1,
    workspace: WsOpt = Path("."),
) -> None:
    """Serve the HTTP API (docs/service.md) until interrupted."""
    import uvicorn

    from thoth.service.http import WORKSPACE_ENV, create_app

    with errors(False):
        ws = Workspace.open(workspace)  # a broken thoth.toml stops here, with its message
        if not ws.settings.service.callers:
            raise ConfigError(
                f"{ws.root}/thoth.toml declares no caller: every /v1 route would refuse every "
                "request -> run `tht service add-caller NAME --labels ...` first"
            )
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    err.print(
        f"Serving {escape(ws.settings.workspace)} on http://{host}:{port} "
        f"({workers} worker{'s' if workers > 1 else ''}, "
        f"{len(ws.settings.service.callers)} caller(s))",
        highlight=False,
    )
    if workers == 1:
        uvicorn.run(create_app(ws.root), host=host, port=port, log_level="info")
        return
    os.environ[WORKSPACE_ENV] = str(ws.root)
    uvicorn.run(
        "thoth.service.http:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        # A spawned worker imports the whole engine before it can answer the supervisor's
        # health check; uvicorn's 5 s default killed workers in a restart loop on a busy host.
        timeout_worker_healthcheck=WORKER_STARTUP_S,
    )


def add_caller_cmd(
    name: Annotated[str, typer.Argument(help="The calling system's name (in the answer log).")],
    labels: Annotated[
        str, typer.Option("--labels", help="Its label ceiling, comma-separated (public,internal).")
    ],
    curator: Annotated[
        bool,
        typer.Option("--curator", help="May list, retire and merge memories (HTTP, MCP)."),
    ] = False,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Declare a calling system: prints its API key ONCE (thoth.toml keeps only its SHA-256)."""
    from thoth.service.registry import add_caller

    with errors(as_json):
        root = Workspace.open(workspace).root
        caller, key = add_caller(root, name, labels.split(","), curator=curator)
    if as_json:
        emit_json(
            {
                "ok": True,
                "name": caller.name,
                "labels": caller.labels,
                "curator": caller.curator,
                "key": key,
            }
        )
        return
    out.print(
        f"Caller [bold]{escape(caller.name)}[/] added with ceiling "
        f"{escape(', '.join(caller.labels))}. Its key (shown once, store it now):",
        highlight=False,
    )
    out.print(key, markup=False, highlight=False)
    out.print("Restart `tht serve` for it to take effect.", highlight=False)


def callers_cmd(workspace: WsOpt = Path("."), as_json: JsonOpt = False) -> None:
    """The declared calling systems and their ceilings (never a key)."""
    with errors(as_json):
        callers = Workspace.open(workspace).settings.service.callers
    if as_json:
        emit_json(
            {
                "ok": True,
                "callers": [
                    {"name": c.name, "labels": c.labels, "key_sha256": c.key_sha256[:12]}
                    for c in callers
                ],
            }
        )
        return
    if not callers:
        out.print("No caller declared: `tht service add-caller NAME --labels ...`.")
        return
    table = Table(title="callers")
    for col in ("name", "label ceiling", "key sha256"):
        table.add_column(col)
    for c in callers:
        table.add_row(escape(c.name), escape(", ".join(c.labels)), c.key_sha256[:12] + "...")
    out.print(table)


def remove_caller_cmd(
    name: Annotated[str, typer.Argument(help="The caller to remove.")],
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Remove a calling system (its key stops working when the service restarts)."""
    from thoth.service.registry import remove_caller

    with errors(as_json):
        caller = remove_caller(Workspace.open(workspace).root, name)
    if as_json:
        emit_json({"ok": True, "removed": caller.name})
    else:
        out.print(f"Caller {escape(caller.name)} removed. Restart `tht serve`.", highlight=False)


def openapi_cmd() -> None:
    """Print the OpenAPI document (docs/openapi.json is this output)."""
    from thoth.service.http import create_app

    schema = create_app(Path(".")).openapi()
    typer.echo(json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True))
