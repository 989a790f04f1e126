"""The composition root: the one place where the state store, the index backend and the
embedder are chosen from a workspace's configuration."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thoth.config import AnalyticsSettings, url_from_environment
from thoth.errors import ConfigError
from thoth.index.base import IndexUnavailable
from thoth.index.generations import EdgeBackend, IndexBackend
from thoth.index.live import EdgeLiveCollection, LiveCollection
from thoth.state import StateStore, state_url
from thoth.workspace import Workspace

if TYPE_CHECKING:
    # What a command needs is imported where it is composed, not here: a command that only
    # reads the state store must not load the model SDKs, the embedder or qdrant-client (about
    # a second to import, loaded only with the server backend).
    from qdrant_client import QdrantClient

    from thoth.analytics.branch import AnalyticsService
    from thoth.analytics.store import AnalyticsStore
    from thoth.answer.retrieval import KnowledgeSearch
    from thoth.answer.service import AnswerService
    from thoth.database import ReadOnlyDatabase
    from thoth.embed.base import Embedder
    from thoth.evaluation.answers import AnswerCase, AnswerEvalReport
    from thoth.index.reader import GenerationReader
    from thoth.privacy import Pseudonymizer, Registry
    from thoth.search.service import EvidenceSearch

STATE_DIR = ".thoth"

# What the entry points below accept: an open workspace, or its root as a str or a path.
WorkspaceLike = Workspace | str | os.PathLike[str]


def as_workspace(ws: WorkspaceLike) -> Workspace:
    """`ws` itself, or the workspace opened at that root."""
    return ws if isinstance(ws, Workspace) else Workspace.open(ws)


def state_dir(ws: Workspace) -> Path:
    return ws.root / STATE_DIR


def sessions_dir(ws: Workspace) -> Path:
    return state_dir(ws) / "sessions"


def memory_registry_path(ws: Workspace) -> Path:
    return state_dir(ws) / "memory" / "registry.jsonl"


def live_collection_path(ws: Workspace, name: str) -> Path:
    """Where the Edge shard of the live collection `name` lives: beside (never inside) the
    directory of the workspace's generations, which holds generations only."""
    return state_dir(ws) / "index" / f"{ws.settings.workspace}.{name}"


def memory_index_path(ws: Workspace) -> Path:
    """The live memory shard with the Qdrant Edge backend. With the server backend, the shard
    left here by an earlier release is what `tht memory migrate` copies."""
    return live_collection_path(ws, "memory")


def open_embedder(ws: Workspace) -> Embedder:
    from thoth.embed import make_embedder

    return make_embedder(ws.settings.embedding, state_dir(ws) / "cache")


def index_prefix(ws: Workspace) -> str:
    """The name prefix of the workspace's server collections."""
    return "thoth_" + re.sub(r"[^A-Za-z0-9_]+", "_", ws.settings.workspace)


def qdrant_client(ws: Workspace) -> QdrantClient:
    """The client `[index]` describes for the server backend."""
    from qdrant_client import QdrantClient

    cfg = ws.settings.index
    if cfg.url:
        key = os.environ.get(cfg.api_key_env) if cfg.api_key_env else None
        return QdrantClient(url=cfg.url, api_key=key)
    if cfg.path:
        path = ws.root / cfg.path
        try:
            return QdrantClient(path=str(path))
        except RuntimeError as exc:  # local mode: the path is held by another client
            raise IndexUnavailable(
                f"{path}: cannot open the Qdrant client ({exc}) -> local mode allows one "
                "process at a time; use a Qdrant server ([index].url) to share it"
            ) from exc
    raise ConfigError(
        '[index].backend = "server" needs [index].url (a Qdrant server) or '
        "[index].path (qdrant-client local mode)"
    )


def postgres_index(ws: Workspace) -> tuple[str, str]:
    """The PostgreSQL URL and schema `[index]` names for the postgres backend."""
    cfg = ws.settings.index
    url = cfg.url
    if cfg.url_env:
        url = url_from_environment("index", cfg.url_env, "the PostgreSQL URL of the index")
    if not url:
        raise ConfigError('[index].backend = "postgres" needs [index].url or [index].url_env')
    schema = cfg.schema_name or index_prefix(ws).lower()
    if len(schema) > 63:
        raise ConfigError(
            f"[index]: the default schema {schema!r} is longer than PostgreSQL's 63 "
            "characters -> set [index].schema"
        )
    return url, schema


def make_backend(ws: Workspace, client: QdrantClient | None = None) -> IndexBackend:
    """`client`: a server client to use (and close with the backend) instead of a new one."""
    cfg = ws.settings.index
    if cfg.backend == "server":
        from thoth.index.server import ServerBackend

        return ServerBackend(client or qdrant_client(ws), index_prefix(ws))
    if cfg.backend == "postgres":
        from thoth.index.postgres import PostgresBackend

        return PostgresBackend(*postgres_index(ws), ws.settings.workspace)
    root = ws.root / cfg.path if cfg.path else state_dir(ws) / "index" / ws.settings.workspace
    return EdgeBackend(root)


def make_live_collection(
    ws: Workspace, name: str, client: QdrantClient | None = None
) -> LiveCollection:
    """The workspace's live collection `name` on the configured backend: a shard beside the
    generations (Edge), the collection `<prefix>__<name>` (server) or its tables in the
    index schema (postgres). `client`: a server
    client shared with the caller, who closes it (qdrant-client's local mode allows one per
    path); without it the collection opens and closes its own."""
    if ws.settings.index.backend == "server":
        from thoth.index.server_live import ServerLiveCollection

        if client is not None:
            return ServerLiveCollection(client, index_prefix(ws), name)
        return ServerLiveCollection(qdrant_client(ws), index_prefix(ws), name, owns_client=True)
    if ws.settings.index.backend == "postgres":
        from thoth.index.postgres import PostgresLiveCollection

        return PostgresLiveCollection(*postgres_index(ws), ws.settings.workspace, name)
    return EdgeLiveCollection(live_collection_path(ws, name), name)


@dataclass
class Runtime:
    ws: Workspace
    state: StateStore
    backend: IndexBackend
    embedder: Embedder
    qdrant: QdrantClient | None = None  # the server backend's client, shared, closed with it

    def search(self) -> EvidenceSearch:
        from thoth.index.fusion import fusion_from
        from thoth.search.service import EvidenceSearch

        return EvidenceSearch(
            self.ws.settings.workspace,
            self.ws.root,
            self.state,
            self.backend,
            self.embedder,
            prefetch_limit=self.ws.settings.index.prefetch_limit,
            fusion=fusion_from(self.ws.settings.index),
        )

    def reader(self) -> GenerationReader:
        """A reader of this workspace's generations (close it when done)."""
        from thoth.index.reader import GenerationReader

        return GenerationReader(
            self.ws.settings.workspace,
            self.state,
            self.backend,
            self.embedder,
            self.ws.settings.language,
        )

    @cached_property
    def pseudonymizer(self) -> Pseudonymizer:
        """What the workspace's paths to an external model protect identities with
        (`[privacy]`), built on first use: a registry query runs only when a model is asked."""
        return open_pseudonymizer(self.ws)

    def database(self) -> ReadOnlyDatabase:
        """The session database of [database], opened read-only (close it when done)."""
        from thoth.database import open_database
        from thoth.schema import require_database

        return open_database(require_database(self.ws), self.ws.root)

    def close(self) -> None:
        self.backend.close()
        self.state.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def open_state(ws: WorkspaceLike) -> StateStore:
    ws = as_workspace(ws)
    url = state_url(ws.root, ws.settings.state.url, ws.settings.state.url_env)
    if url.startswith("sqlite"):
        state_dir(ws).mkdir(parents=True, exist_ok=True)
    return StateStore.open(url)


def open_runtime(ws: WorkspaceLike, embedder: Embedder | None = None) -> Runtime:
    """The state store, index backend and embedder of the workspace `ws` (or of its root)."""
    ws = as_workspace(ws)
    state = open_state(ws)
    client = qdrant_client(ws) if ws.settings.index.backend == "server" else None
    return Runtime(
        ws=ws,
        state=state,
        backend=make_backend(ws, client),
        embedder=embedder or open_embedder(ws),
        qdrant=client,
    )


def require_analytics(ws: Workspace) -> AnalyticsSettings:
    if ws.settings.analytics is None:
        raise ConfigError(
            f"{ws.root}/thoth.toml declares no [analytics] store -> declare one "
            '(docs/analytics.md, "Declaring the store")'
        )
    return ws.settings.analytics


def open_analytics_store(ws: Workspace) -> AnalyticsStore:
    from thoth.analytics.store import AnalyticsStore

    return AnalyticsStore(require_analytics(ws), ws.root)


def make_analytics(rt: Runtime) -> AnalyticsService:
    """The analytics branch `[analytics]` describes: the model's function call routes when
    `[answers].answerer = "llm"` (the model is configured), similarity offline otherwise."""
    from thoth.analytics.branch import AnalyticsService
    from thoth.analytics.routing import ModelRouter, OfflineRouter
    from thoth.analytics.store import AnalyticsStore
    from thoth.answer.wording import wording_for
    from thoth.llm.client import tool_client

    ws = rt.ws
    settings = require_analytics(ws)
    model = (
        ModelRouter(tool_client(ws.settings.llm), rt.pseudonymizer)
        if ws.settings.answers.answerer == "llm"
        else None
    )
    return AnalyticsService(
        settings,
        ws.root,
        ws.settings.workspace,
        rt.state,
        AnalyticsStore(settings, ws.root),
        OfflineRouter(rt.embedder),
        wording_for(ws.settings.language),
        language=ws.settings.language,
        model_router=model,
    )


class StoreReference:
    """The first figure the analytics store computes for a query and its parameters: what a
    numeric evaluation case without a written value is checked against (`tht eval run` and
    the eval_run routine alike)."""

    def __init__(self, ws: Workspace) -> None:
        self._rt = open_runtime(ws)
        self._service = make_analytics(self._rt)

    def figure(self, query_id: str, parameters: Mapping[str, Any]) -> object:
        from thoth.evaluation.answers import first_figure

        return first_figure(self._service.compute(query_id, parameters).rows)

    def close(self) -> None:
        self._service.close()
        self._rt.close()


def open_reference(ws: Workspace) -> StoreReference | None:
    """The store's figures, or None when the workspace declares no [analytics] store."""
    return StoreReference(ws) if ws.settings.analytics is not None else None


def evaluate_answers(ws: Workspace, cases: Sequence[AnswerCase], k: int) -> AnswerEvalReport:
    """The answer evaluation of `tht eval run` and the eval_run routine: every case asked of
    the workspace's answer service, numeric ones checked against the store's figures."""
    from thoth.evaluation.answers import run_answer_evaluation

    service = open_answer_service(ws)
    reference = open_reference(ws)
    try:
        return run_answer_evaluation(service, cases, k, reference.figure if reference else None)
    finally:
        service.close()
        if reference is not None:
            reference.close()


REGISTRY_ROW_LIMIT = 1_000_000


def open_pseudonymizer(ws: Workspace) -> Pseudonymizer:
    """What stands between every path and an external model: the one place that reads
    `[privacy] pseudonymise`. Off, the identity (nothing changes, not one `if` in the hooks);
    on, placeholders from the registry file and/or query."""
    from thoth.privacy import NoPseudonymizer, PlaceholderPseudonymizer

    cfg = ws.settings.privacy
    if not cfg.pseudonymise:
        return NoPseudonymizer()
    return PlaceholderPseudonymizer(
        open_registry(ws), min_name_length=cfg.min_name_length, columns=cfg.columns
    )


def open_registry(ws: Workspace) -> Registry:
    """The known names `[privacy] registry` (file) and `registry_sql` (query) give, together."""
    from thoth.database import open_database
    from thoth.privacy import Registry, entities_from_rows, load_registry
    from thoth.privacy.registry import Entity
    from thoth.schema import require_database

    cfg = ws.settings.privacy
    entities: list[Entity] = []
    if cfg.registry:
        entities += load_registry(ws.root / cfg.registry).entities
    if cfg.registry_sql:
        with open_database(require_database(ws), ws.root) as db:
            result = db.run(cfg.registry_sql, limit=REGISTRY_ROW_LIMIT)
        if result.truncated:
            raise ConfigError(
                f"[privacy] registry_sql returned more than {REGISTRY_ROW_LIMIT} rows -> "
                "narrow the query: a registry cut short would leave names in clear"
            )
        entities += entities_from_rows(result.columns, result.rows, "[privacy] registry_sql")
    return Registry(entities)


def knowledge_search(ws: Workspace, rt: Runtime) -> KnowledgeSearch:
    """The answer engine's retrieval on `rt`, with the workspace's entity list (thoth.entities:
    a question naming an entity is scoped to its documents), glossary (thoth.glossary) and
    reranking model (`[reranker]`, thoth.llm.rerank). A bad list raises, naming it."""
    from thoth.answer.retrieval import KnowledgeSearch
    from thoth.entities import load_entities
    from thoth.glossary import load_glossary
    from thoth.llm.rerank import make_reranker

    if ws.settings.reranker is not None and ws.settings.privacy.pseudonymise:
        # The reranking model reads the question and the fragments as stored: in clear.
        raise ConfigError(
            "[reranker] with [privacy] pseudonymise = true: the reranking model would read "
            "the fragments in clear, and no placeholder stands between them -> remove "
            "[reranker], or turn pseudonymisation off for this workspace"
        )
    entities = load_entities(ws.root, ws.settings.entities)
    glossary = load_glossary(ws.root, ws.settings.glossary)
    return KnowledgeSearch(
        ws.settings,
        rt.state,
        rt.backend,
        rt.embedder,
        entities,
        glossary,
        make_reranker(ws.settings),
    )


def open_answer_service(ws: WorkspaceLike, embedder: Embedder | None = None) -> AnswerService:
    """The answer service `[answers]`, `[llm]`, `[analytics]` and `[privacy]` describe.
    Without `[analytics]` the branch that covers nothing is injected; the pseudonymizer of
    `[privacy]` (the identity when it is off) stands between every path and the model.
    `ws`: the workspace, or its root as a str or a path."""
    from thoth.answer.answerers import make_answerer
    from thoth.answer.seams import AnalyticsBranch, NoAnalytics
    from thoth.answer.service import AnswerService

    ws = as_workspace(ws)
    answerer = make_answerer(ws.settings)  # first: a missing API key opens nothing
    rt = open_runtime(ws, embedder)
    search = knowledge_search(ws, rt)
    analytics: AnalyticsBranch = NoAnalytics()
    closers = [rt.close]
    if ws.settings.analytics is not None:
        service = make_analytics(rt)
        analytics = service
        closers.insert(0, service.close)

    def close() -> None:
        for closer in closers:
            closer()

    return AnswerService(
        ws.settings,
        search,
        answerer,
        rt.state,
        analytics=analytics,
        pseudonymizer=rt.pseudonymizer,
        on_close=close,
    )
