"""A real local HTTP embeddings server speaking OpenAI's `POST /v1/embeddings`, for tests.

`OpenAICompatEmbedder` talks to it over TCP on 127.0.0.1; nothing in Thoth is mocked. With no
scripted reply queued it answers every request with deterministic vectors (a function of the
text, deliberately not unit length, so the client's normalisation is exercised). A queued
`Reply` overrides one request: an HTTP error, a raw body, a delay, another dimension or the
`data` items in reverse order. Every request is recorded before it is answered, so a test can
count requests even when the client gave up (timeout).
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests.fake_http import JsonHandler, LocalHTTPFake

EMBEDDINGS_PATH = "/v1/embeddings"


@dataclass(frozen=True)
class Reply:
    """One scripted answer. `body` is sent verbatim when given (malformed replies)."""

    status: int = 200
    body: str | None = None
    delay: float = 0.0
    dim: int | None = None  # vectors of this dimension instead of the server's
    reverse: bool = False  # list `data` in reverse index order


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # decoded JSON, None when not JSON

    @property
    def inputs(self) -> list[str]:
        inp = self.body.get("input") if isinstance(self.body, dict) else None
        return list(inp) if isinstance(inp, list) else []


def fake_vector(text: str, dim: int) -> list[float]:
    """Deterministic, not normalised (norm about 3 * sqrt(dim))."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    return [float(x) for x in 3.0 * np.random.default_rng(seed).standard_normal(dim)]


def normalised(text: str, dim: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """What a correct client returns for `text`: the fake vector at unit length."""
    vec = np.asarray(fake_vector(text, dim), dtype=np.float32)
    return (vec / np.linalg.norm(vec)).astype(np.float32)


class _Handler(JsonHandler):
    def do_POST(self) -> None:
        fake: FakeEmbeddingServer = self.server.fake
        _, body = self.read_json()
        reply = fake._record(
            RecordedRequest(path=self.path, headers=self.headers_dict(), body=body)
        )
        if self.path != EMBEDDINGS_PATH:
            self.send_text(404, _error(f"no such endpoint: {self.path}"))
            return
        if reply.delay and fake._stopping.wait(reply.delay):
            return  # the server is shutting down: drop the request
        if reply.body is not None:
            self.send_text(reply.status, reply.body)
            return
        if reply.status != 200:
            self.send_text(reply.status, _error("scripted failure"))
            return
        texts = body.get("input") if isinstance(body, dict) else None
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            self.send_text(400, _error("'input' must be an array of strings"))
            return
        dim = reply.dim or fake.dim
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(t, dim)}
            for i, t in enumerate(texts)
        ]
        if reply.reverse:
            data.reverse()
        payload = {"object": "list", "data": data, "model": body.get("model"), "usage": {}}
        self.send_text(200, json.dumps(payload))


def _error(message: str) -> str:
    return json.dumps({"error": {"message": message, "type": "server_error", "code": None}})


class FakeEmbeddingServer(LocalHTTPFake):
    """`with FakeEmbeddingServer(dim=8) as server:` serves on 127.0.0.1:<free port>."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__(_Handler, "fake-embeddings")
        self.dim = dim
        self._replies: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []

    @property
    def url(self) -> str:
        """The OpenAI-style base URL, `http://127.0.0.1:<port>/v1`."""
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, reply: Reply) -> None:
        """Queue one answer for the next request (later requests get the default answer)."""
        with self._lock:
            self._replies.append(reply)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def _record(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self._requests.append(request)
            return self._replies.popleft() if self._replies else Reply()
