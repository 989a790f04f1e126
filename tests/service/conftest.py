"""A real `tht serve` in a subprocess on a free 127.0.0.1 port, over a published workspace
(the answer tests' corpus: a sealed Qdrant Edge generation, a SQLite state store, the
OpenAI-compatible embedder talking to a local fake embeddings server), called with httpx."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx
import pytest

from tests.answer.test_answer import Corpus
from tests.fake_embeddings import FakeEmbeddingServer
from thoth.service.registry import add_caller

STARTUP_S = 180.0  # a loaded 2-core CI machine imports the engine slowly
THT = (sys.executable, "-m", "thoth.cli.main")
LLM_KEY_ENV = "OPENAI_API_KEY"  # [llm]'s default api_key_env
SERVICE = """
[service]
max_body_bytes = {body}
max_question_chars = 300
max_concurrent = {concurrent}
body_timeout_seconds = {body_timeout}
"""


def relabel(link: str, labels: list[str] | None) -> str:
    """`link` with its `labels` parameters replaced by `labels` (None: none, the default
    labels): a link opened under labels other than those it was given with."""
    path, _, query = link.partition("?")
    kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "labels"]
    return f"{path}?{urlencode([*kept, *(('labels', label) for label in labels or [])])}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def base_env() -> dict[str, str]:
    """The test's environment without a model key: no [llm] is usable unless a test says so."""
    return {k: v for k, v in os.environ.items() if k != LLM_KEY_ENV}


def wait_healthy(
    process: subprocess.Popen[bytes], url: str, log: Path, poll_s: float = 0.1
) -> None:
    """Until `tht serve` at `url` answers /v1/health (uvicorn listens once the engine is open);
    an AssertionError with its log when it exits or takes more than STARTUP_S."""
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"tht serve exited: {log.read_text()}")
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(poll_s)
    raise AssertionError(f"tht serve did not start in {STARTUP_S}s: {log.read_text()}")


class Server:
    """One `tht serve` process; `keys` maps caller names to their API keys."""

    def __init__(
        self,
        root: Path,
        keys: dict[str, str],
        log: Path,
        env: dict[str, str] | None = None,
        workers: int = 1,
    ) -> None:
        self.root = root
        self.keys = keys
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self._out = log.open("wb")
        self.process = subprocess.Popen(
            [*THT, "serve", "--port", str(self.port), "--workers", str(workers), "-w", str(root)],
            stdout=self._out,
            stderr=subprocess.STDOUT,
            env={**base_env(), "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        self._wait()

    def _wait(self) -> None:
        try:
            wait_healthy(self.process, self.url, self.log)
        except AssertionError:
            self.stop()
            raise

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._out.close()

    def headers(self, caller: str | None = "portal") -> dict[str, str]:
        return {} if caller is None else {"Authorization": f"Bearer {self.keys[caller]}"}

    def post(self, path: str, body: Any, caller: str | None = "portal") -> httpx.Response:
        return httpx.post(f"{self.url}{path}", json=body, headers=self.headers(caller), timeout=30)

    def get(self, path: str, caller: str | None = "portal") -> httpx.Response:
        return httpx.get(f"{self.url}{path}", headers=self.headers(caller), timeout=30)


def prepare_workspace(
    base: Path,
    embeddings: FakeEmbeddingServer,
    *,
    body: int = 4096,
    concurrent: int = 4,
    body_timeout: float = 10.0,
) -> tuple[Corpus, dict[str, str]]:
    """The answer tests' published corpus, with Evidence labelled `internal`, service limits
    and three callers: portal (public), analyst (public, internal), night (internal only)."""
    root = base / "ws"
    root.mkdir()
    corpus = Corpus(root, embeddings)
    corpus.publish()
    config = root / "thoth.toml"
    text = config.read_text(encoding="utf-8")
    text = text.replace("[answers]\n", '[answers]\nevidence_labels = ["internal"]\n', 1)
    config.write_text(
        text + SERVICE.format(body=body, concurrent=concurrent, body_timeout=body_timeout),
        encoding="utf-8",
    )
    keys: dict[str, str] = {}
    for name, labels in (
        ("portal", ["public"]),
        ("analyst", ["public", "internal"]),
        ("night", ["internal"]),
    ):
        _, keys[name] = add_caller(root, name, labels)
    return corpus, keys


@pytest.fixture(scope="module")
def embeddings() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


@pytest.fixture(scope="module")
def workspace(
    tmp_path_factory: pytest.TempPathFactory, embeddings: FakeEmbeddingServer
) -> tuple[Corpus, dict[str, str]]:
    return prepare_workspace(tmp_path_factory.mktemp("service"), embeddings)


@pytest.fixture(scope="module")
def server(
    workspace: tuple[Corpus, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    corpus, keys = workspace
    served = Server(corpus.root, keys, tmp_path_factory.mktemp("log") / "serve.log")
    try:
        yield served
    finally:
        served.stop()


def finish_partial(root: Path, job_id: str | None, caller: str, result: dict[str, Any]) -> str:
    """End a job `partial` as a worker would after a failed knowledge search: `job_id` (or a
    new job of `caller`) claimed — every other queued job cancelled first, so the claim takes
    this one — and finished with `result`, code index_unavailable and `result["rests_on"]`."""
    from thoth.runtime import open_state
    from thoth.state import JobQueue
    from thoth.workspace import Workspace

    ws = Workspace.open(root)
    with open_state(ws) as state:
        queue = JobQueue.on(state)
        if job_id is None:
            context = {"labels": ["public"], "channel": None}
            job_id = queue.create(ws.settings.workspace, caller, "Attese in PS?", context).id
        for waiting in queue.list(ws.settings.workspace):
            if waiting.status == "queued" and waiting.id != job_id:
                queue.cancel(waiting.id)
        claimed = queue.claim("test-worker", 600)
        assert claimed is not None and claimed.id == job_id
        queue.finish(
            job_id,
            "test-worker",
            "partial",
            result=result,
            error_code="index_unavailable",
            error=result["rests_on"],
        )
    return job_id
