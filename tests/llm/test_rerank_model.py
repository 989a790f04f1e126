"""Issue 24, point 5: a reranking model behind a server's /rerank (the Jina / Cohere format),
as the answer engine's last ordering step when a workspace configures one. The client is
tested against a real local HTTP server speaking that format with scripted scores."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_rerank import FakeRerankServer, Reply
from thoth.config import RerankerSettings, Settings
from thoth.errors import ConfigError
from thoth.llm.rerank import HttpReranker, RerankerError, make_reranker


@pytest.fixture
def server() -> Iterator[FakeRerankServer]:
    with FakeRerankServer({"gross margin": 2.0, "revenue": 1.0}) as fake:
        yield fake


def reranker(url: str, **extra: object) -> HttpReranker:
    return HttpReranker(
        RerankerSettings.model_validate({"base_url": url, "model": "bge-reranker", **extra})
    )


def test_scores_come_back_in_the_documents_order(server: FakeRerankServer) -> None:
    docs = [
        "the cover page",
        "revenue was $4,210",
        "gross margin 1,830",
        "revenue and gross margin",
    ]
    # The server lists results best first; the client puts them back by index.
    assert reranker(server.url).scores("gross margin?", docs) == [0.0, 1.0, 2.0, 3.0]
    [request] = server.requests
    assert request.path == "/v1/rerank"
    assert request.body == {
        "model": "bge-reranker",
        "query": "gross margin?",
        "documents": docs,
        "top_n": 4,
    }


def test_the_key_travels_as_a_bearer_token(
    server: FakeRerankServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RERANK_KEY", "s3cret")
    settings = Settings.model_validate(
        {
            "workspace": "w",
            "reranker": {"base_url": server.url, "model": "m", "api_key_env": "RERANK_KEY"},
        }
    )
    client = make_reranker(settings)
    assert client is not None
    client.scores("q", ["a"])
    assert server.requests[0].headers["authorization"] == "Bearer s3cret"


def test_no_reranker_section_no_reranker() -> None:
    assert make_reranker(Settings.model_validate({"workspace": "w"})) is None


def test_a_key_variable_that_is_not_set_is_refused_before_any_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RERANK_KEY", raising=False)
    settings = Settings.model_validate(
        {
            "workspace": "w",
            "reranker": {
                "base_url": "http://127.0.0.1:9/v1",
                "model": "m",
                "api_key_env": "RERANK_KEY",
            },
        }
    )
    with pytest.raises(ConfigError, match=r"\[reranker\].api_key_env names RERANK_KEY"):
        make_reranker(settings)


def test_a_base_url_that_is_no_http_url_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"\[reranker\].base_url 'ftp://x' is not an http"):
        reranker("ftp://x")


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (Reply(status=500), "HTTP 500"),
        (Reply(status=401), "check the API key"),
        (Reply(body="not json"), "the reply is not JSON"),
        (Reply(body='{"data": []}'), "the reply has no 'results' list"),
        (
            Reply(body='{"results": [{"index": 0, "relevance_score": 1}]}'),
            "sent 2 documents, got 1",
        ),
        (
            Reply(
                body='{"results": [{"index": 0, "relevance_score": 1}, '
                '{"index": 0, "relevance_score": 2}]}'
            ),
            "results[1].index 0 appears twice",
        ),
        (
            Reply(
                body='{"results": [{"index": 0, "relevance_score": 1}, '
                '{"index": 5, "relevance_score": 2}]}'
            ),
            "results[1].index is 5, not in 0..1",
        ),
        (
            Reply(
                body='{"results": [{"index": 0, "relevance_score": "high"}, '
                '{"index": 1, "relevance_score": 2}]}'
            ),
            "results[0].relevance_score is 'high', not a finite number",
        ),
    ],
)
def test_a_bad_reply_is_an_error_naming_the_server_and_the_model(
    server: FakeRerankServer, reply: Reply, says: str
) -> None:
    server.script(reply)
    client = reranker(server.url)
    with pytest.raises(RerankerError) as caught:
        client.scores("q", ["a", "b"])
    message = str(caught.value)
    assert says in message, message
    assert f"reranking model 'bge-reranker' at {server.url}/rerank" in message
    assert " -> " in message  # what to do
    assert caught.value.code == "reranker_failed"


def test_a_server_that_does_not_answer_in_time_is_an_error(server: FakeRerankServer) -> None:
    server.script(Reply(delay=2.0))
    with pytest.raises(RerankerError, match=r"no reply within 0.3s .*timeout_seconds"):
        reranker(server.url, timeout_seconds=0.3).scores("q", ["a"])


def test_a_server_that_is_not_there_is_an_error() -> None:
    with FakeRerankServer() as gone:
        url = gone.url
    with pytest.raises(RerankerError, match=r"request failed .* is the server running"):
        reranker(url).scores("q", ["a"])


def test_a_base_url_that_is_no_url_at_all_is_refused_naming_why() -> None:
    with pytest.raises(ConfigError, match=r"\[reranker\].base_url 'http://\[::1' is not a URL"):
        reranker("http://[::1")
