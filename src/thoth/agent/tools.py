"""The agent's tools: the curated wiki (list, read, search), the knowledge search under the
caller's labels and channel, the analytics catalog (list, run a reviewed query) and free
read-only SQL on the analytics store — offered here only, never on the synchronous path.

A call returns a `ToolOutcome`: what the model reads (`content`), the sources it actually
returned (cited by the job's result: the citations come from here, never from the model's
words) and, for a refused or failed call, a stable `error_code`. A tool never raises into
the loop for something the model did: bad arguments, a path outside the wiki, an unknown
query are outcomes the model sees, and the job goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

from thoth.agent.errors import BAD_ARGUMENTS, TOOL_FAILED, UNFORESEEN, UNKNOWN_TOOL, ToolRefused
from thoth.agent.wiki import WikiShelf
from thoth.analytics.branch import AnalyticsService
from thoth.analytics.query_view import query_link
from thoth.analytics.store import AnalyticsError, json_value
from thoth.answer.passage import link
from thoth.answer.retrieval import KnowledgeSearch, SearchRequestError
from thoth.answer.scope import readable
from thoth.database import DatabaseUnavailable, Dialect, StatementRefused, check_statement
from thoth.errors import ThothError
from thoth.llm import ToolCall, ToolSpec
from thoth.privacy import Pseudonymizer
from thoth.privacy.lineage import output_kinds

log = logging.getLogger("thoth.agent")

DEFAULT_LIMIT: Final = 8
MAX_LIMIT: Final = 20
SQL_REFUSED: Final = "sql_refused"
LABELS_REFUSED: Final = "labels_refused"


@dataclass(frozen=True)
class ToolOutcome:
    content: dict[str, Any]
    sources: tuple[dict[str, Any], ...] = ()
    error_code: str | None = None


@dataclass
class Toolbox:
    """The tools of one job: its wiki shelf (the caller's labels), the knowledge search with
    the caller's request, the analytics service when `[analytics]` is declared."""

    wiki: WikiShelf
    knowledge: KnowledgeSearch | None
    analytics: AnalyticsService | None
    request: Mapping[str, Any]
    pseudonymizer: Pseudonymizer
    _handlers: dict[str, Callable[[dict[str, Any]], ToolOutcome]] = field(
        init=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        self._handlers = {
            "wiki_list": self._wiki_list,
            "wiki_read": self._wiki_read,
            "wiki_search": self._wiki_search,
        }
        if self.knowledge is not None:
            self._handlers["knowledge_search"] = self._knowledge_search
        if self.analytics is not None:
            self._handlers.update(
                catalog_list=self._catalog_list,
                catalog_run=self._catalog_run,
                run_sql=self._run_sql,
            )

    def specs(self) -> list[ToolSpec]:
        return [spec for spec in SPECS if spec.name in self._handlers]

    def call(self, call: ToolCall) -> ToolOutcome:
        """Run one call of the model; every refusal is an outcome with its code."""
        handler = self._handlers.get(call.name)
        if handler is None:
            return _refused(
                UNKNOWN_TOOL,
                f"no tool named {call.name!r} -> use one of {', '.join(self._handlers)}",
            )
        if call.arguments is None:
            return _refused(BAD_ARGUMENTS, f"{call.name}: {call.error}")
        try:
            return handler(call.arguments)
        except ToolRefused as exc:
            return _refused(exc.code, str(exc))
        except ThothError as exc:
            return _refused(exc.code, f"{call.name} failed: {exc}")
        except UNFORESEEN as exc:
            # A tool that breaks on hostile input (a name too long, a link loop, a parser's
            # recursion, memory) must not take the worker with it: the model reads a coded
            # failure, the log keeps the traceback, the job goes on.
            log.exception("tool %s failed on its input", call.name)
            return _refused(
                TOOL_FAILED,
                f"{call.name} failed on this input ({type(exc).__name__}: {str(exc)[:200]}); "
                "try other arguments or another tool",
            )

    # -- the wiki -------------------------------------------------------------------------

    def _wiki_list(self, args: dict[str, Any]) -> ToolOutcome:
        prefix = _text(args, "prefix", required=False)
        pages = self.wiki.pages(prefix)
        return ToolOutcome({"pages": [{"path": p.path, "title": p.title} for p in pages]})

    def _wiki_read(self, args: dict[str, Any]) -> ToolOutcome:
        page = self.wiki.read(_text(args, "path"))
        return ToolOutcome(
            {"path": page.path, "title": page.title, "text": page.text}, (page.source(),)
        )

    def _wiki_search(self, args: dict[str, Any]) -> ToolOutcome:
        found = self.wiki.search(_text(args, "query"), _limit(args))
        return ToolOutcome(
            {
                "pages": [
                    {"path": p.path, "title": p.title, "hits": hits, "snippet": snippet}
                    for p, hits, snippet in found
                ]
            }
        )

    # -- the knowledge search -------------------------------------------------------------

    def _knowledge_search(self, args: dict[str, Any]) -> ToolOutcome:
        assert self.knowledge is not None
        query = _text(args, "query")
        try:
            found = self.knowledge.search(
                query, channel=self.request.get("channel"), labels=self.request.get("labels")
            )
        except SearchRequestError as exc:
            return _refused(exc.code, str(exc))
        if found.status == "failed":
            return _refused(
                found.error_code or "search_failed",
                f"the knowledge search failed (not an empty result): {found.error}",
            )
        fragments = found.fragments[: _limit(args)]
        content = {
            "status": found.status,
            "fragments": [
                {
                    "doc_id": f.doc_id,
                    "title": f.title,
                    "kind": f.record_kind,
                    "text": f.record.text,
                    "caveats": list(f.record.caveats),
                }
                for f in fragments
            ],
        }
        sources = tuple(
            {
                "kind": f.record_kind,
                "doc_id": f.doc_id,
                "title": f.title or f.doc_id,
                # the passage it rests on, under the job's labels
                "link": link(f.doc_id, f.revision, f.ordinal, self.wiki.allowed),
            }
            for f in fragments
        )
        return ToolOutcome(content, sources)

    # -- the analytics store --------------------------------------------------------------

    def _catalog_list(self, args: dict[str, Any]) -> ToolOutcome:
        assert self.analytics is not None
        served = self._served()
        return ToolOutcome(
            {
                "queries": [
                    {
                        "id": q.id,
                        "description": q.description,
                        "parameters": {
                            name: {
                                "type": p.type,
                                "description": p.description,
                                "required": p.is_required,
                                **(
                                    {"values": values}
                                    if (values := served.choices.get(q.id, {}).get(name))
                                    else {}
                                ),
                            }
                            for name, p in q.parameters.items()
                        },
                    }
                    for q in served.queries.values()
                    if self.analytics.visible(q, self.wiki.allowed)
                ]
            }
        )

    def _catalog_run(self, args: dict[str, Any]) -> ToolOutcome:
        assert self.analytics is not None
        query_id = _text(args, "query_id")
        parameters = args.get("parameters") or {}
        if not isinstance(parameters, dict):
            raise ToolRefused("parameters must be an object of name: value", code=BAD_ARGUMENTS)
        query = self._served().queries.get(query_id)
        if query is not None and not self.analytics.visible(query, self.wiki.allowed):
            # Said as for an unknown query: the job's labels do not reach this one.
            return _refused(
                "unknown_query",
                f"{query_id!r} is not a query this job may run "
                f"(labels {', '.join(self.wiki.allowed)})",
            )
        try:
            done = self.analytics.compute(query_id, parameters)
        except AnalyticsError as exc:
            return _refused(exc.code, str(exc))
        query = self._served().queries[query_id]
        reviewed = {name: col.kind for name, col in query.result.columns.items()}
        rows = self.pseudonymizer.protect_rows(done.columns, done.rows, reviewed)
        provenance = done.provenance()
        content = {
            "columns": list(done.columns),
            "rows": [[json_value(v) for v in row] for row in rows],
            "truncated": done.truncated,
            "data_date": done.data_date,
            "parameters": provenance["parameters"],
        }
        source = {
            "kind": "catalog_query",
            "query_id": done.query_id,
            "parameters": provenance["parameters"],
            "data_date": done.data_date,
            "catalog_revision": done.revision,
            # the reviewed query behind the figures, under the job's labels
            "link": query_link(provenance, self.wiki.allowed),
        }
        return ToolOutcome(content, (source,))

    def _run_sql(self, args: dict[str, Any]) -> ToolOutcome:
        assert self.analytics is not None
        sql = _text(args, "sql")
        store = self.analytics.store
        carried = self.analytics.settings.labels
        if not readable(carried, self.wiki.allowed):
            # Free SQL reads the whole store: the store's labels must all be the job's.
            return _refused(
                LABELS_REFUSED,
                f"the analytics store's labels ({', '.join(carried) or 'none'}) are not all "
                f"among this job's ({', '.join(self.wiki.allowed)}): run_sql is not available",
            )
        verdict = check_statement(sql, cast(Dialect, store.dialect))
        if not verdict.ok:
            return _refused(SQL_REFUSED, f"refused before it ran: {verdict.summary()}")
        try:
            data_date = store.data_date()
            with store.database() as db:
                result = db.run(sql, limit=store.settings.row_limit)
        except StatementRefused as exc:
            return _refused(exc.code, f"the database refused it: {exc}")
        except (DatabaseUnavailable, AnalyticsError) as exc:
            return _refused(exc.code, f"the analytics store cannot be read: {exc}")
        # The protection of each output follows its lineage to the store's columns, whose
        # kinds the reviewed catalog queries declare: an alias launders nothing.
        kinds = output_kinds(
            result.columns, sql, store.dialect, self._served().source_kinds(store.dialect)
        )
        reviewed = {k.name: k.kind for k in kinds}
        rows = self.pseudonymizer.protect_rows(result.columns, result.rows, reviewed)
        content = {
            "columns": list(result.columns),
            "rows": [[json_value(v) for v in row] for row in rows],
            "truncated": result.truncated,
            "truncated_by": result.truncated_by,
            "data_date": data_date,
            "column_kinds": {k.name: {"kind": k.kind, "why": k.why} for k in kinds},
        }
        return ToolOutcome(content, ({"kind": "sql", "sql": sql, "data_date": data_date},))

    def _served(self) -> Any:
        assert self.analytics is not None
        return self.analytics.served_catalog()


def _refused(code: str, message: str) -> ToolOutcome:
    return ToolOutcome({"error": {"code": code, "message": message}}, (), code)


def _text(args: Mapping[str, Any], name: str, *, required: bool = True) -> str:
    value = args.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise ToolRefused(f"argument {name} must be a non-empty string", code=BAD_ARGUMENTS)
    return value


def _limit(args: Mapping[str, Any]) -> int:
    value = args.get("limit", DEFAULT_LIMIT)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise ToolRefused(f"limit must be an integer from 1 to {MAX_LIMIT}", code=BAD_ARGUMENTS)
    return value


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_LIMIT_SCHEMA: Final = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}

SPECS: Final = (
    ToolSpec(
        "wiki_list",
        "List the pages of the curated wiki (path and title), optionally under a path prefix.",
        _object({"prefix": {"type": "string"}}, []),
    ),
    ToolSpec(
        "wiki_read",
        "Read one page of the curated wiki by its path (as wiki_list gives it).",
        _object({"path": {"type": "string"}}, ["path"]),
    ),
    ToolSpec(
        "wiki_search",
        "Find the wiki pages holding the words of a query, most hits first, with a snippet.",
        _object({"query": {"type": "string"}, "limit": _LIMIT_SCHEMA}, ["query"]),
    ),
    ToolSpec(
        "knowledge_search",
        "Search the indexed knowledge (documents and wiki fragments) by meaning; returns the "
        "closest fragments with their document, title and caveats.",
        _object({"query": {"type": "string"}, "limit": _LIMIT_SCHEMA}, ["query"]),
    ),
    ToolSpec(
        "catalog_list",
        "List the reviewed queries of the analytics catalog with their parameters.",
        _object({}, []),
    ),
    ToolSpec(
        "catalog_run",
        "Run one reviewed catalog query with its parameters; returns rows and the data date.",
        _object({"query_id": {"type": "string"}, "parameters": {"type": "object"}}, ["query_id"]),
    ),
    ToolSpec(
        "run_sql",
        "Run one read-only SELECT on the analytics store (its views); returns at most the "
        "configured number of rows and the data date.",
        _object({"sql": {"type": "string"}}, ["sql"]),
    ),
)
