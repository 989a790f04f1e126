"""The demo's service step: the demo workspace answering over HTTP, as a calling system and
the web page reach it. A caller is declared (`tht service add-caller`), the application of
`tht serve` runs in this process on a free port of 127.0.0.1 (uvicorn in a thread) while one
question is asked through POST /v1/ask, then it stops. The same question then goes through
`tht mcp`, as an assistant asks it."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import httpx
import uvicorn
from fastapi import FastAPI
from rich.console import Console

from thoth.errors import PreconditionError
from thoth.service.http import create_app
from thoth.service.registry import add_caller
from thoth.workspace import Workspace

DEMO_CALLER: Final = "demo-portal"
DEMO_CEILING: Final = ("public", "internal")
START_TIMEOUT_S: Final = 180.0  # the engine opens at start (the bundled embedder loads)
ASK_TIMEOUT_S: Final = 120.0


@contextmanager
def running_service(root: Path) -> Iterator[str]:
    """`tht serve`'s application for the workspace at `root`, served until the block ends;
    yields its base URL."""
    with running_app(create_app(root), f"the service for {root}") as url:
        yield url


@contextmanager
def running_app(app: FastAPI, what: str = "the application") -> Iterator[str]:
    """`app` served by uvicorn in a thread on 127.0.0.1 until the block ends; yields its base
    URL. The socket is bound before uvicorn starts: no port race."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="thoth-demo-service", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise PreconditionError(
                    f"{what} did not start -> run `tht serve` to see why (its log names the "
                    "component that failed)"
                )
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def demo_service(console: Console, ws: Workspace, question: str) -> str:
    """Declare the demo's caller, serve, ask `question` over HTTP and print what came back;
    returns the answer's status."""
    caller, key = add_caller(ws.root, DEMO_CALLER, list(DEMO_CEILING))
    console.print(
        f"`tht service add-caller {caller.name} --labels {','.join(caller.labels)}`: "
        "thoth.toml keeps the SHA-256 of its key, the key is shown once:\n"
        f"  {key}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    with running_service(ws.root) as url:
        console.print(f"Serving on {url} (for this step only).", highlight=False, markup=False)
        auth = {"Authorization": f"Bearer {key}"}
        ready = httpx.get(f"{url}/v1/ready", headers=auth, timeout=ASK_TIMEOUT_S)
        console.print(f"GET  /v1/ready -> {ready.status_code}", highlight=False, markup=False)
        response = httpx.post(
            f"{url}/v1/ask",
            json={"question": question},
            headers=auth,
            timeout=ASK_TIMEOUT_S,
        )
        body = response.json()
        if response.status_code != 200:
            raise PreconditionError(
                f"POST /v1/ask answered {response.status_code} {body.get('code')}: "
                f"{body.get('message')} -> run `tht serve -w {ws.root}` and read its log"
            )
        status: str = body["status"]
        console.print(
            f"POST /v1/ask {question!r} -> {response.status_code}: status {status}, "
            f"{len(body.get('sources') or [])} source(s), answer id {body['id']} "
            f"(logged for caller {caller.name})",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        page = httpx.get(f"{url}/", timeout=ASK_TIMEOUT_S)
        console.print(
            f"GET  / -> {page.status_code} {page.headers.get('content-type', '')}: the web page",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    console.print(
        f"Stopped. To use the page: `tht serve -w {ws.root}`, open http://127.0.0.1:8787/ "
        "and paste the key above.",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    return status


def demo_mcp(console: Console, ws: Workspace, question: str) -> str:
    """Ask `question` through `tht mcp` as an assistant would: the SDK's stdio client spawns
    the server as a child process (the demo's caller bounds the labels); returns the status."""
    # Imported here: only this step speaks MCP, and the SDK is not free to import.
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    script = Path(sys.executable).with_name("tht")  # the console script beside this Python
    launcher = [str(script)] if script.exists() else [sys.executable, "-m", "thoth.cli.main"]
    params = StdioServerParameters(
        command=launcher[0],
        args=[*launcher[1:], "mcp", "-w", str(ws.root), "--caller", DEMO_CALLER],
        # The child is our own `tht`: it needs the variables the workspace's settings name
        # ([index].url_env, api_key_env ...), which the SDK's default environment leaves out.
        env=dict(os.environ),
    )
    log_path = ws.root / ".thoth" / "demo-mcp.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)

    async def ask() -> tuple[list[str], dict[str, Any] | None, bool]:
        with log_path.open("a", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                tools = [tool.name for tool in (await session.list_tools()).tools]
                result = await session.call_tool("ask", {"question": question})
                return tools, result.structured_content, bool(result.is_error)

    tools, data, failed = anyio.run(ask)
    if failed or data is None:
        detail = data or {}
        raise PreconditionError(
            f"the MCP tool ask failed [{detail.get('code')}]: {detail.get('message')} -> run "
            f"`tht mcp -w {ws.root} --caller {DEMO_CALLER}` and read {log_path}"
        )
    status: str = data["status"]
    console.print(
        f"`tht mcp --caller {DEMO_CALLER}` (stdio) offers {', '.join(tools)}; "
        f"ask {question!r} -> status {status}, {len(data.get('sources') or [])} source(s)",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    return status
