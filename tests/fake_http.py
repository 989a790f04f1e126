"""The HTTP plumbing the fake model servers share: a real server on 127.0.0.1:<free port> in a
daemon thread, JSON in and out, and a lifecycle usable as a context manager."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


class LocalServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: Any  # the LocalHTTPFake that owns it: handlers reach their script through it


class JsonHandler(BaseHTTPRequestHandler):
    server: LocalServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines on stderr."""

    def read_json(self) -> tuple[bytes, Any]:
        """The raw body and its JSON (None when empty or not JSON: the fake answers it)."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return raw, json.loads(raw) if raw else None
        except ValueError:
            return raw, None

    def headers_dict(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def send_text(self, status: int, text: str) -> None:
        data = text.encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first (a timeout test): nothing to answer
        self.close_connection = True


class LocalHTTPFake:
    """Owns the server thread; subclasses keep their scripts and recorded requests."""

    def __init__(self, handler: type[JsonHandler], name: str) -> None:
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = LocalServer(("127.0.0.1", 0), handler)
        self._httpd.fake = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name=name, daemon=True
        )

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])
