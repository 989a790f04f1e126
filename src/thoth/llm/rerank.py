"""A reranking model behind a server's `POST /rerank`, in the wire format Jina and Cohere
defined and llama.cpp's `llama-server --reranking`, vLLM and Infinity serve:

    {"model": "...", "query": "...", "documents": ["...", ...], "top_n": n}
    -> {"results": [{"index": 0, "relevance_score": 0.93}, ...]}

A cross-encoder reads the question and each candidate together, which neither search branch
does; no such model ships with Thoth (none that runs offline under a licence the project can
ship was found), so it is one a workspace points to (`[reranker]`, docs/answers.md).

No retries, and every reply is checked whole: one score per document, each index exactly
once. A failure is a RerankerError naming the URL, the model and what to do.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any, Protocol

import httpx

from thoth.config import RerankerSettings, Settings
from thoth.errors import ConfigError, ThothError
from thoth.httpurl import endpoint

__all__ = ["HttpReranker", "Reranker", "RerankerError", "make_reranker"]


class RerankerError(ThothError):
    """The reranking model failed: unreachable server, HTTP error, a reply not in the format."""

    code = "reranker_failed"


class Reranker(Protocol):
    candidates: int  # how many of the top candidates it reorders

    def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score per document, in the documents' order; raises RerankerError."""
        ...

    def close(self) -> None: ...


class HttpReranker:
    def __init__(self, settings: RerankerSettings, api_key: str | None = None) -> None:
        self.model = settings.model
        self.candidates = settings.candidates
        self.timeout = settings.timeout_seconds
        try:
            self.url = endpoint(settings.base_url, "rerank")
        except ValueError as exc:
            raise ConfigError(
                f"[reranker].base_url {settings.base_url!r} {exc} -> use e.g. "
                "http://127.0.0.1:8012/v1"
            ) from exc
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=self.timeout, headers=headers)

    def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        body = {"model": self.model, "query": query, "documents": list(documents)}
        try:
            response = self._client.post(self.url, json={**body, "top_n": len(documents)})
        except httpx.TimeoutException as exc:
            raise self._fail(
                f"no reply within {self.timeout}s ({type(exc).__name__})",
                "check the server, or raise [reranker].timeout_seconds",
            ) from exc
        except httpx.RequestError as exc:  # connection refused/reset, DNS ...
            raise self._fail(
                f"request failed ({type(exc).__name__}: {exc})",
                "is the server running and is [reranker].base_url right?",
            ) from exc
        if response.status_code != 200:
            hint = _status_hint(response.status_code)
            raise self._fail(
                f"HTTP {response.status_code} {response.reason_phrase}: {response.text[:300]!r}",
                hint,
            )
        try:
            payload: Any = response.json()
        except ValueError as exc:
            raise self._fail(
                f"the reply is not JSON ({exc}); it starts {response.text[:200]!r}", _WIRE
            ) from exc
        return self._scores(payload, len(documents))

    def _scores(self, payload: Any, count: int) -> list[float]:
        results = payload.get("results") if isinstance(payload, dict) else None
        if not isinstance(results, list):
            raise self._fail(f"the reply has no 'results' list: {str(payload)[:200]!r}", _WIRE)
        if len(results) != count:
            raise self._fail(f"sent {count} documents, got {len(results)} scores", _WIRE)
        scores: list[float | None] = [None] * count
        for pos, item in enumerate(results):
            index = item.get("index") if isinstance(item, dict) else None
            score = item.get("relevance_score") if isinstance(item, dict) else None
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
                raise self._fail(f"results[{pos}].index is {index!r}, not in 0..{count - 1}", _WIRE)
            if scores[index] is not None:
                raise self._fail(f"results[{pos}].index {index} appears twice", _WIRE)
            if (
                isinstance(score, bool)
                or not isinstance(score, int | float)
                or not math.isfinite(score)
            ):
                raise self._fail(
                    f"results[{pos}].relevance_score is {score!r}, not a finite number", _WIRE
                )
            scores[index] = float(score)
        return [s for s in scores if s is not None]

    def _fail(self, cause: str, hint: str) -> RerankerError:
        return RerankerError(f"reranking model {self.model!r} at {self.url}: {cause} -> {hint}")

    def close(self) -> None:
        self._client.close()


_WIRE = "the server does not speak the /rerank format (Jina, Cohere); check base_url and model"


def _status_hint(status: int) -> str:
    if status in (401, 403):
        return "check the API key ([reranker].api_key_env)"
    if status in (400, 404, 422):
        return (
            "check [reranker].base_url (most servers want it to end in /v1), the model name, "
            "and that the server reranks (llama-server needs --reranking)"
        )
    return "check the server's log"


def make_reranker(settings: Settings) -> HttpReranker | None:
    """The reranker `[reranker]` describes; None when the workspace configures none. A key
    variable named but not set is refused here, before any question is asked."""
    config = settings.reranker
    if config is None:
        return None
    api_key: str | None = None
    if config.api_key_env:
        api_key = os.environ.get(config.api_key_env)
        if not api_key:
            raise ConfigError(
                f"[reranker].api_key_env names {config.api_key_env}, which is not set -> "
                "export it, or remove api_key_env for a server that takes no key"
            )
    return HttpReranker(config, api_key)
