"""The URL of an HTTP endpoint under a configured base URL, checked once for every client that
talks to a server of the user's (an embedding server, a reranking model)."""

from __future__ import annotations

import httpx


def endpoint(base_url: str, path: str) -> str:
    """`base_url` without its trailing slashes, then `/path`: "http://h:8000/v1" and
    "embeddings" give "http://h:8000/v1/embeddings". Raises ValueError, saying why, for a
    string that is no URL or no http(s) URL with a host (callers name their setting in their
    own error)."""
    url = f"{base_url.rstrip('/')}/{path.lstrip('/')}"
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"is not a URL ({exc})") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError("is not an http(s) URL")
    return url
