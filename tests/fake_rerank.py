"""A real local HTTP server speaking the `POST /v1/rerank` wire format (Jina, Cohere; served
by llama.cpp's llama-server --reranking and vLLM), for tests.

`HttpReranker` talks to it over TCP on 127.0.0.1; nothing in Thoth is mocked. Its scores are
scripted: a document scores the weight of every `favour` phrase it holds (0 otherwise), and
the results come best first, as real servers return them (the client must put them back in
the documents' order by `index`). A queued `Reply` overrides one request: an HTTP error, a raw
body, or a delay. Every request is recorded before it is answered.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from typing import Any

from tests.fake_http import JsonHandler, LocalHTTPFake

RERANK_PATH = "/v1/rerank"


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: str | None = None  # sent verbatim (malformed replies)
    delay: float = 0.0


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any


class _Handler(JsonHandler):
    def do_POST(self) -> None:
        fake: FakeRerankServer = self.server.fake
        _, body = self.read_json()
        reply = fake._record(RecordedRequest(self.path, self.headers_dict(), body))
        if self.path != RERANK_PATH:
            self.send_text(404, json.dumps({"error": f"no such endpoint: {self.path}"}))
            return
        if reply.delay and fake._stopping.wait(reply.delay):
            return
        if reply.body is not None or reply.status != 200:
            self.send_text(reply.status, reply.body or json.dumps({"error": "scripted"}))
            return
        documents = body.get("documents") if isinstance(body, dict) else None
        if not isinstance(documents, list) or not all(isinstance(d, str) for d in documents):
            self.send_text(400, json.dumps({"error": "'documents' must be strings"}))
            return
        scores = [sum(w for phrase, w in fake.favour.items() if phrase in doc) for doc in documents]
        results = sorted(
            ({"index": i, "relevance_score": s} for i, s in enumerate(scores)),
            key=lambda r: -float(r["relevance_score"]),
        )
        self.send_text(200, json.dumps({"model": body.get("model"), "results": results}))


class FakeRerankServer(LocalHTTPFake):
    """`with FakeRerankServer({"Gross margin": 1.0}) as server:` on 127.0.0.1:<free port>."""

    def __init__(self, favour: dict[str, float] | None = None) -> None:
        super().__init__(_Handler, "fake-rerank")
        self.favour = dict(favour or {})
        self._replies: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, reply: Reply) -> None:
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
