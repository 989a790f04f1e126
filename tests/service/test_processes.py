"""Fail-closed statuses over HTTP, and several `tht serve` processes on one workspace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.answer.test_answer import QUESTION, Corpus
from tests.fake_embeddings import FakeEmbeddingServer
from tests.service.conftest import Server, prepare_workspace
from thoth.runtime import open_state, state_dir
from thoth.workspace import Workspace


def test_a_damaged_index_fails_visibly_on_every_route(
    tmp_path: Path, embeddings: FakeEmbeddingServer
) -> None:
    corpus, keys = prepare_workspace(tmp_path, embeddings)
    ws = Workspace.open(corpus.root)
    shutil.rmtree(state_dir(ws) / "index" / ws.settings.workspace / corpus.generation)
    served = Server(corpus.root, keys, tmp_path / "serve.log")
    try:
        ready = served.get("/v1/ready")
        assert ready.status_code == 503, ready.text
        body = ready.json()
        assert body["ready"] is False
        assert body["components"]["index"]["ok"] is False
        assert "index_unavailable" in body["components"]["index"]["detail"]
        assert body["components"]["state"]["ok"] and body["components"]["embedder"]["ok"]

        answer = served.post("/v1/ask", {"question": QUESTION})
        assert answer.status_code == 200, answer.text
        data = answer.json()
        assert (data["status"], data["error_code"], data["sources"]) == (
            "failed",
            "index_unavailable",
            [],
        )

        search = served.post("/v1/knowledge/search", {"query": QUESTION}).json()
        assert (search["status"], search["error_code"], search["fragments"]) == (
            "failed",
            "index_unavailable",
            [],
        )
        evidence = served.post(
            "/v1/evidence/search", {"query": "x", "purpose": "rewriting"}, "analyst"
        ).json()
        assert evidence["status"] == "unavailable" and evidence["code"]
    finally:
        served.stop()
    with open_state(ws) as state:
        [row] = state.list_answers(ws.settings.workspace, 10, None)
    assert (row.status, row.error_code, row.caller) == ("failed", "index_unavailable", "portal")


def test_two_processes_on_one_workspace_answer_the_same(
    server: Server, workspace: tuple[Corpus, dict[str, str]], tmp_path: Path
) -> None:
    corpus, keys = workspace
    second = Server(corpus.root, keys, tmp_path / "second.log")
    try:
        answers = []
        for served in (server, second, server, second):
            response = served.post("/v1/ask", {"question": QUESTION}, "analyst")
            assert response.status_code == 200, response.text
            answers.append(response.json())
        for answer in answers[1:]:
            for key in ("status", "text", "sources"):
                assert answer[key] == answers[0][key], key
        searches = [
            s.post("/v1/knowledge/search", {"query": QUESTION}).json() for s in (server, second)
        ]
        assert searches[0]["fragments"] == searches[1]["fragments"]
    finally:
        second.stop()
    ws = Workspace.open(corpus.root)
    with open_state(ws) as state:
        logged = {row.id for row in state.list_answers(ws.settings.workspace, 500, None)}
    assert {a["id"] for a in answers} <= logged
    assert len({a["id"] for a in answers}) == 4


@pytest.mark.slow
def test_workers_of_one_serve_answer_and_log_their_caller(
    workspace: tuple[Corpus, dict[str, str]], tmp_path: Path
) -> None:
    corpus, keys = workspace
    served = Server(corpus.root, keys, tmp_path / "workers.log", workers=2)
    try:
        ready = served.get("/v1/ready")
        assert ready.status_code == 200, ready.text
        answers = [served.post("/v1/ask", {"question": QUESTION}).json() for _ in range(4)]
    finally:
        served.stop()
    assert {a["status"] for a in answers} == {"found"}
    ws = Workspace.open(corpus.root)
    with open_state(ws) as state:
        logged = {r.id: r.caller for r in state.list_answers(ws.settings.workspace, 500, None)}
    assert all(logged[a["id"]] == "portal" for a in answers)
