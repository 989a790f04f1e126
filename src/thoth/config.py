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


class Settings(_Strict):
    workspace: str = Field(min_length=1)
    language: str = Field(default="it", pattern=r"^[a-z]{2}(-[A-Z]{2})?$")
    evidence: EvidenceSettings = EvidenceSettings()
    llm: LLMSettings = LLMSettings()


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
'''
