"""No failure body names where the server keeps its files: a failed answer, a failed search,
an unavailable Evidence search, a not-ready component and a problem response carry paths
relative to the workspace (or redacted), and the server log keeps the full message under the
response's request id."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx

from tests.answer.test_answer import QUESTION
from tests.fake_embeddings import FakeEmbeddingServer
from tests.service.conftest import Server, prepare_workspace
from thoth.runtime import state_dir
from thoth.workspace import Workspace


def _absolute_forms(root: Path) -> set[str]:
    return {str(root), str(root.resolve())}


def _leaks(response: httpx.Response, root: Path) -> list[str]:
    return [form for form in _absolute_forms(root) if form in response.text]


def test_no_failure_body_names_an_absolute_path_of_the_workspace(
    tmp_path: Path, embeddings: FakeEmbeddingServer
) -> None:
    corpus, keys = prepare_workspace(tmp_path, embeddings)
    ws = Workspace.open(corpus.root)
    generation = state_dir(ws) / "index" / ws.settings.workspace / corpus.generation
    shutil.rmtree(generation)  # the active generation is gone: every search fails
    log = tmp_path / "serve.log"
    served = Server(corpus.root, keys, log)
    try:
        responses = {
            "ready": served.get("/v1/ready"),
            "ask": served.post("/v1/ask", {"question": QUESTION}),
            "knowledge": served.post("/v1/knowledge/search", {"query": QUESTION}),
            "evidence": served.post(
                "/v1/evidence/search", {"query": "x", "purpose": "rewriting"}, "analyst"
            ),
        }
    finally:
        served.stop()
    assert responses["ask"].json()["status"] == "failed"
    assert responses["knowledge"].json()["status"] == "failed"
    assert responses["evidence"].json()["status"] == "unavailable"
    assert responses["ready"].status_code == 503
    for name, response in responses.items():
        assert _leaks(response, corpus.root) == [], (name, response.text)
    # The failure still names the generation's place, relative to the workspace.
    relative = str(generation.relative_to(corpus.root))
    assert relative in responses["ask"].text, responses["ask"].text
    # What was rewritten is in the server log in full, under the request id the caller got.
    text = log.read_text()
    rewritten = [n for n, r in responses.items() if "<workspace>" in r.text]
    assert {"ask", "knowledge", "ready"} <= set(rewritten), rewritten
    for name in rewritten:
        request_id = responses[name].headers["x-request-id"]
        lines = [line for line in text.splitlines() if request_id in line]
        assert any(str(corpus.root) in line for line in lines), (name, request_id, text)


def test_a_problem_response_names_no_absolute_path(
    tmp_path: Path, embeddings: FakeEmbeddingServer
) -> None:
    """A state store that cannot be read is a 503 problem naming the store's file: relative."""
    corpus, keys = prepare_workspace(tmp_path, embeddings)
    ws = Workspace.open(corpus.root)
    log = tmp_path / "serve.log"
    served = Server(corpus.root, keys, log)
    try:
        for db in state_dir(ws).glob("*.sqlite*"):
            db.write_bytes(b"not a database" * 100)
        response = served.post("/v1/jobs", {"question": QUESTION})
        listed = served.get("/v1/jobs")
    finally:
        served.stop()
    for reply in (response, listed):
        assert reply.status_code >= 400, reply.text
        assert reply.headers["content-type"].startswith("application/problem+json")
        assert _leaks(reply, corpus.root) == [], reply.text


def test_the_redactor_makes_workspace_paths_relative_and_hides_other_server_paths(
    tmp_path: Path,
) -> None:
    from thoth.service.redact import PathRedactor

    root = tmp_path / "ws"
    root.mkdir()
    redactor = PathRedactor(root)
    inside = f"cannot open {root}/.thoth/index/w/gen-1: gone"
    assert redactor.text(inside) == "cannot open <workspace>/.thoth/index/w/gen-1: gone"
    assert redactor.text(f"workspace {root} has no state") == "workspace <workspace> has no state"
    assert redactor.text(f"file {root.resolve()}/thoth.toml") == "file <workspace>/thoth.toml"
    assert redactor.text(f"a sibling {root}-old/x") == "a sibling <server path>"
    url = f"state store sqlite:///{root}/.thoth/state.sqlite: locked"
    assert redactor.text(url) == "state store sqlite:///<workspace>/.thoth/state.sqlite: locked"
    outside = f"model at {Path.home()}/models/e5 failed"
    assert str(Path.home()) not in redactor.text(outside)
    # Not server paths: routes, URLs, relative paths, doc ids stay as they are.
    for kept in (
        "GET /v1/jobs lists yours",
        "embedding model 'e5' at http://127.0.0.1:8080/v1/embeddings: refused",
        "docs:guide/intro.md has no label",
        "ratio 3/4 of 1/2",
    ):
        assert redactor.text(kept) == kept
    nested = {"a": [f"{root}/x", {"b": f"{root}"}], "n": 3, "ok": True}
    public = {"a": ["<workspace>/x", {"b": "<workspace>"}], "n": 3, "ok": True}
    assert redactor.data(nested) == public
    # Only failures are rewritten: a found answer quotes its documents as they are.
    found = {"status": "found", "text": f"see {root}/x"}
    failed = {"status": "failed", "error_code": "index_unavailable", "text": f"{root}/x gone"}
    result, changed = redactor.failures({"answers": [found, failed]})
    assert result == {"answers": [found, {**failed, "text": "<workspace>/x gone"}]}
    assert changed == [f"{root}/x gone"]
    assert json.dumps(redactor.failures(failed)[0]).find(str(root)) == -1
