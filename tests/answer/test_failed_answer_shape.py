"""Issue 46, point 7: one outcome, one shape. A failed model answer (the model's reply refused
as uncited, echoed, or the model server failing) is the answer object with `status: failed`
and its code — as a failed search or routing is — from `tht ask --json` and from the service
(which /v1/ask and MCP return as it is), never an error envelope without `status`. It is
logged as failed with the same code."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.answer.test_answer import (  # noqa: F401 (fixtures)
    QUESTION,
    Corpus,
    corpus,
    embeddings,
    llm,
)
from tests.fake_llm import FakeLLMServer
from thoth.cli.main import app

ANSWER_KEYS = {"id", "question", "text", "status", "answerer", "error_code"}


def test_an_uncited_model_answer_is_a_failed_answer_object_on_the_cli(
    corpus: Corpus,  # noqa: F811
    llm: FakeLLMServer,  # noqa: F811
) -> None:
    corpus.configure(llm)
    llm.reply("La risposta è quarantadue, senza citare nulla.")
    result = CliRunner().invoke(app, ["ask", QUESTION, "--json", "-w", str(corpus.root)])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert set(data) >= ANSWER_KEYS, data
    assert data["ok"] is False and data["status"] == "failed"
    assert data["error_code"] == "uncited_answer"
    assert data["sources"] is not None  # retrieval ran: present, as for any answer
    [row] = corpus.answer_log()
    assert (row.status, row.error_code) == ("failed", "uncited_answer")
    assert row.answer["id"] == data["id"]


def test_the_service_returns_a_failed_model_answer_as_an_answer(
    corpus: Corpus,  # noqa: F811
    llm: FakeLLMServer,  # noqa: F811
) -> None:
    llm.reply(status=500)
    service = corpus.service(llm)
    try:
        answer = service.ask(QUESTION)
    finally:
        service.close()
    data = answer.as_dict()
    assert data["status"] == "failed" and data["error_code"] == "answer_failed"
    assert "fake-model" in data["text"]


def test_post_v1_ask_returns_the_same_failed_answer_object(
    corpus: Corpus,  # noqa: F811
    llm: FakeLLMServer,  # noqa: F811
) -> None:
    from fastapi.testclient import TestClient

    from thoth.service.http import create_app
    from thoth.service.registry import add_caller

    corpus.configure(llm)
    _, key = add_caller(corpus.root, "portal", ["public"])
    llm.reply("La risposta è quarantadue, senza citare nulla.")
    with TestClient(create_app(corpus.root)) as client:
        response = client.post(
            "/v1/ask", json={"question": QUESTION}, headers={"Authorization": f"Bearer {key}"}
        )
    assert response.status_code == 200, response.text
    data = response.json()
    assert set(data) >= ANSWER_KEYS
    assert (data["status"], data["error_code"]) == ("failed", "uncited_answer")
