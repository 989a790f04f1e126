"""Issue 24, point 5: with `[reranker]` configured, the answer engine's top candidates are
reordered by the reranking model (a real local server speaking /v1/rerank with scripted
scores); a model that fails leaves the order it had, and the answer says it is degraded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.answer.test_entities import build
from tests.fake_rerank import FakeRerankServer, Reply
from thoth.answer.service import AnswerService
from thoth.runtime import open_answer_service
from thoth.workspace import Workspace

QUESTION = "How much did demand for industrial pumps in Europe grow in 2023?"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("model-rerank") / "ws"
    report = build(root)
    assert report.outcome == "activated", report.message
    return root


@pytest.fixture(scope="module")
def server() -> Iterator[FakeRerankServer]:
    # The model likes the inverter sentence best, which fusion does not put first.
    with FakeRerankServer({"solar inverters": 5.0, "industrial pumps": 1.0}) as fake:
        yield fake


@pytest.fixture(scope="module")
def plain(root: Path) -> Iterator[AnswerService]:
    svc = open_answer_service(Workspace.open(root))
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def reranked(root: Path, server: FakeRerankServer) -> Iterator[AnswerService]:
    copy = root.parent / "with-model"
    if not copy.exists():
        import shutil

        shutil.copytree(root, copy)
        toml = copy / "thoth.toml"
        toml.write_text(
            toml.read_text(encoding="utf-8")
            + f'\n[reranker]\nbase_url = "{server.url}"\nmodel = "bge-reranker"\ncandidates = 5\n',
            encoding="utf-8",
        )
    svc = open_answer_service(Workspace.open(copy))
    yield svc
    svc.close()


def test_the_model_reorders_the_top_candidates(
    plain: AnswerService, reranked: AnswerService, server: FakeRerankServer
) -> None:
    before = plain.ask(QUESTION)
    assert before.diagnostics["fragments"][0]["doc_id"].endswith("market-note.md")
    assert all(f["model_score"] is None for f in before.diagnostics["fragments"])
    after = reranked.ask(QUESTION)
    assert after.status == "found", after.text
    fragments = after.diagnostics["fragments"]
    assert fragments[0]["doc_id"].endswith("fab-report.txt"), fragments
    assert fragments[0]["model_score"] == 5.0
    assert after.diagnostics["counts"].get("model_reranked") == 1
    assert not after.degraded
    # The model read the question whole and each candidate as the branches searched it.
    request = server.requests[-1].body
    assert request["query"] == QUESTION
    assert 1 < len(request["documents"]) <= 5
    assert any("solar inverters" in d for d in request["documents"])


def test_a_failing_model_leaves_the_order_and_says_the_answer_is_degraded(
    plain: AnswerService, reranked: AnswerService, server: FakeRerankServer
) -> None:
    server.script(Reply(status=503))
    answer = reranked.ask(QUESTION)
    assert answer.status == "found", answer.text
    expected = [f["id"] for f in plain.ask(QUESTION).diagnostics["fragments"]]
    assert [f["id"] for f in answer.diagnostics["fragments"]] == expected
    assert answer.diagnostics["counts"].get("model_rerank_failed") == 1
    [degraded] = [d for d in answer.degraded if d.startswith("rerank: ")]
    assert f"reranking model 'bge-reranker' at {server.url}/rerank: HTTP 503" in degraded


def test_a_question_naming_two_entities_is_reranked_per_entity_and_degraded_once(
    reranked: AnswerService, server: FakeRerankServer
) -> None:
    # One retrieval per entity, so one model call each; a model that fails both times is
    # one degradation, not two.
    server.script(Reply(status=503))
    server.script(Reply(status=503))
    asked = len(server.requests)
    answer = reranked.ask("What was the revenue of Contoso and of Fabrikam in Q2 2023?")
    assert len(server.requests) == asked + 2
    assert answer.status == "found", answer.text
    assert len([d for d in answer.degraded if d.startswith("rerank: ")]) == 1, answer.degraded
