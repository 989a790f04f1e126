"""The analytics branch: route, extract, compute (the answer service's `AnalyticsBranch`).

Per question: the catalog of the activated revision (cached per revision, with its enum values
and glossary synonyms); the router (the model's one function call, or similarity offline);
the parameters (validated whoever proposed them); the query run read-only through views with
the data date. Failures of the store are a `failed` NumericAnswer with the reason, logged —
never an exception that could look like an empty answer, never a number without its date."""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from thoth.analytics.catalog import Catalog, CatalogQuery, CatalogUnreadable, load_catalog_at
from thoth.analytics.decide import Decision, Vocabulary, decide, decide_chosen
from thoth.analytics.extract import Extraction, Matcher, validate
from thoth.analytics.glossary import glossary_synonyms
from thoth.analytics.query_view import figure_labels, query_link
from thoth.analytics.render import computed_text
from thoth.analytics.routing import Choice, ModelRouter, OfflineRouter, RoutingFailed
from thoth.analytics.store import AnalyticsError, AnalyticsStore, Computation
from thoth.answer.scope import readable
from thoth.answer.seams import FigureColumn, NumericAnswer
from thoth.answer.wording import Wording
from thoth.config import AnalyticsSettings, ColumnKind
from thoth.embed.base import EmbedderError
from thoth.llm.client import LLMError
from thoth.privacy.lineage import reviewed_sources

log = logging.getLogger("thoth.analytics")

CATALOG_UNREADABLE = "catalog_unreadable"
NO_ACTIVE_REVISION = "no_active_revision"


class RevisionSource(Protocol):
    def active_revision(self, workspace: str) -> str | None: ...


@dataclass
class ServedCatalog:
    """The catalog of one revision as it is served: its valid queries, their enum values and
    synonyms (value -> words)."""

    catalog: Catalog
    queries: dict[str, CatalogQuery]
    choices: dict[str, dict[str, dict[str, list[str]]]] = field(default_factory=dict)
    # The store's views (`schema.view`) and their columns' names.
    schema_names: dict[str, list[str]] = field(default_factory=dict)
    # Per view, its columns of a date type (the events its rows record).
    event_columns: dict[str, list[str]] = field(default_factory=dict)
    _source_kinds: dict[str, ColumnKind] | None = field(default=None, repr=False)
    _vocabulary: Vocabulary | None = field(default=None, repr=False)

    def vocabulary(self, matcher: Matcher) -> Vocabulary:
        """The stems the queries are written with (what the decision reads questions against)."""
        if self._vocabulary is None:
            self._vocabulary = Vocabulary.of(
                self.queries, self.choices, matcher, self.schema_names, self.event_columns
            )
        return self._vocabulary

    def source_kinds(self, dialect: str) -> dict[str, ColumnKind]:
        """The store's columns (`schema.view.column`) with the kinds the reviewed queries give
        the result columns that read them: what protects a free query's output (its
        lineage) on the agent's run_sql."""
        if self._source_kinds is None:
            self._source_kinds = reviewed_sources(
                [
                    (q.sql, {name: col.kind for name, col in q.result.columns.items()})
                    for q in self.queries.values()
                ],
                dialect,
            )
        return self._source_kinds

    def enum_values(self) -> dict[str, dict[str, list[str]]]:
        return {
            qid: {name: list(values) for name, values in params.items()}
            for qid, params in self.choices.items()
        }


class AnalyticsService:
    def __init__(
        self,
        settings: AnalyticsSettings,
        root: Path,
        workspace: str,
        revisions: RevisionSource,
        store: AnalyticsStore,
        router: OfflineRouter,
        wording: Wording,
        *,
        language: str = "it",
        model_router: ModelRouter | None = None,
    ) -> None:
        self.settings = settings
        self._root = root
        self._workspace = workspace
        self._revisions = revisions
        self.store = store
        self._router = router
        self._model_router = model_router
        self._wording = wording
        self._matcher = Matcher(language)
        self._language = language
        self._served: ServedCatalog | None = None
        self._lock = threading.Lock()

    # -- the catalog of the activated revision --------------------------------------------

    def served_catalog(self) -> ServedCatalog:
        """The activated revision's catalog (AnalyticsError when it cannot be read)."""
        revision = self._revisions.active_revision(self._workspace)
        if revision is None:
            raise AnalyticsError(
                "no activated revision: only catalog queries of the activated revision are "
                "served -> `tht workspace activate` a committed revision",
                code=NO_ACTIVE_REVISION,
            )
        with self._lock:
            if self._served is not None and self._served.catalog.revision == revision:
                return self._served
        try:
            catalog = load_catalog_at(self._root, self.settings.catalog, revision)
        except CatalogUnreadable as exc:
            raise AnalyticsError(
                f"{self.settings.catalog} at {revision[:12]}: {exc}", code=CATALOG_UNREADABLE
            ) from exc
        for problem in catalog.problems:
            # A broken entry is not served; the others are. `tht analytics check` shows it.
            log.warning("catalog entry not served: %s", problem.render())
        served = serve(catalog, self.store, glossary_synonyms(self._root, revision))
        with self._lock:
            self._served = served
        return served

    # -- the fork -------------------------------------------------------------------------

    def answer(self, question: str, labels: Sequence[str]) -> NumericAnswer:
        """The first fork for one question asked with `labels` (the request's, validated)."""
        try:
            served = self.served_catalog()
        except AnalyticsError as exc:
            if exc.code == NO_ACTIVE_REVISION:
                # Nothing may be served: the text path answers, and says why in diagnostics.
                return NumericAnswer(
                    "not_covered", diagnostics={"reason": str(exc)}, degraded=(f"analytics: {exc}",)
                )
            return self._failed(question, exc)
        if not served.queries:
            return NumericAnswer("not_covered", diagnostics={"reason": "empty catalog"})
        fallback: str | None = None
        try:
            try:
                choice = self._choose(question, served)
            except (RoutingFailed, LLMError) as exc:
                # The model could not route (slow, down, or an unusable call): the offline
                # router decides, with the same gates, and the answer says so. One failed
                # routing call must not fail a question the offline decision can serve.
                fallback = (
                    f"analytics routing: the model could not route ({exc}); the offline "
                    "router decided"
                )
                log.warning("%s: %r", fallback, question[:80])
                choice = Choice(
                    None, "similarity", scores=self._router.scores(question, served.queries)
                )
        except EmbedderError as exc:
            # Routing needs the embedder: the text path answers (it degrades to BM25 itself).
            return NumericAnswer(
                "not_covered",
                diagnostics={"reason": f"the embedder did not answer: {exc}"},
                degraded=(f"analytics routing: the embedder did not answer ({exc})",),
            )
        answer = self._decided(question, labels, served, choice)
        if fallback is None:
            return answer
        return replace(
            answer,
            diagnostics=answer.diagnostics | {"route_degraded": fallback},
            degraded=(*answer.degraded, fallback),
        )

    def _decided(
        self, question: str, labels: Sequence[str], served: ServedCatalog, choice: Choice
    ) -> NumericAnswer:
        # The diagnostics go to the caller: they name only the queries its labels reach.
        visible = {qid for qid, q in served.queries.items() if self.visible(q, labels)}
        diagnostics: dict[str, Any] = {
            "route": choice.as_dict(visible),
            "catalog_revision": served.catalog.revision,
        }
        vocab = served.vocabulary(self._matcher)
        if choice.by == "model":
            if choice.query_id is None:
                return NumericAnswer(
                    "not_covered",
                    figure_requested=choice.figure_requested,
                    diagnostics=diagnostics,
                )
            chosen = served.queries[choice.query_id]
            decision = decide_chosen(
                question, chosen, choice.proposed, served.choices.get(chosen.id, {}), vocab
            )
        else:
            decision = decide(
                question,
                served.queries,
                choice.scores,
                served.choices,
                vocab,
                self.settings.threshold,
                self.settings.tie_margin,
            )
        diagnostics["decision"] = shown = decision.as_dict(visible)
        if decision.outcome == "text":
            diagnostics["reason"] = shown["reason"]
            best = decision.best
            uncovered = self.settings.uncovered_threshold
            offline = choice.by == "similarity"
            # Offline only a question with a measure word asks a figure ("quanti", "media",
            # "percentuale"): a text question gets no sentence about the catalog.
            asks_figure = not offline or bool(decision.asked)
            # The closest query no gate refused, below the threshold: it may compute the
            # question, and the answer says so instead of claiming that none does — even when
            # a query above the threshold was refused (that one's gate says nothing of it).
            closest = next((f for f in decision.fits if f.refused is None), None)
            below = None
            if offline and asks_figure and closest is not None and closest.query_id in visible:
                below = {
                    "query_id": closest.query_id,
                    "score": round(closest.score, 4),
                    "threshold": self.settings.threshold,
                }
                diagnostics["below_threshold"] = below
            # A query above the threshold refused by a gate, or a score in the band below it:
            # the question asks a figure no query computes; offline the sentence is hedged.
            figure = asks_figure and (
                decision.refused_above
                or (
                    offline
                    and best is not None
                    and uncovered is not None
                    and best.score >= uncovered
                )
            )
            return NumericAnswer(
                "not_covered",
                figure_requested=figure or below is not None,
                figure_hedged=offline,
                below_threshold=below,
                diagnostics=diagnostics,
            )
        # Decided over the whole catalog, then fenced: a query the caller may not see is never
        # replaced by a neighbour it may see. Not even its id is named (as for a document).
        named = decision.candidates or (decision.query_id,)
        hidden = [qid for qid in named if qid and qid not in visible]
        if hidden:
            diagnostics["reason"] = (
                "labels: the figure asked carries labels outside the request's "
                f"({', '.join(sorted(labels))})"
            )
            return NumericAnswer(
                "not_covered", figure_requested=True, figure_hedged=False, diagnostics=diagnostics
            )
        if decision.outcome == "ambiguous":
            return self._ambiguous(served, decision, diagnostics)
        assert decision.query_id is not None and decision.extraction is not None
        query = served.queries[decision.query_id]
        extraction = decision.extraction
        diagnostics["parameters"] = {
            "values": {k: str(v) for k, v in extraction.values.items()},
            "origin": extraction.origin,
            "missing": extraction.missing,
            "invalid": extraction.invalid,
        }
        if decision.outcome == "needs_parameter":
            return self._needs_parameter(query, extraction, diagnostics)
        try:
            computation = self.store.execute(query, extraction.values, served.catalog.revision)
        except AnalyticsError as exc:
            return self._failed(question, exc, query, diagnostics)
        return self._computed(query, computation, diagnostics, labels, decision.asked)

    def figure_labels(self, query: CatalogQuery) -> list[str]:
        """The labels a figure of `query` carries: the store's and the query's own."""
        return figure_labels(self.settings, query)

    def visible(self, query: CatalogQuery, labels: Collection[str]) -> bool:
        """Whether a request with `labels` may see `query`'s figures (thoth.answer.scope)."""
        return readable(self.figure_labels(query), labels)

    def _ambiguous(
        self, served: ServedCatalog, decision: Decision, diagnostics: dict[str, Any]
    ) -> NumericAnswer:
        """Two queries fit equally: the question must say which, never a guess between them."""
        named = "; ".join(
            f"{qid} ({served.queries[qid].description.strip().split('. ')[0]})"
            for qid in decision.candidates
        )
        return NumericAnswer(
            "needs_parameter",
            text=self._wording.ambiguous_query.format(candidates=named),
            error_code="ambiguous_query",
            candidates=decision.candidates,
            diagnostics=diagnostics,
        )

    def _choose(self, question: str, served: ServedCatalog) -> Choice:
        if self._model_router is not None:
            return self._model_router.route(question, served.queries, served.enum_values())
        return Choice(None, "similarity", scores=self._router.scores(question, served.queries))

    def _computed(
        self,
        query: CatalogQuery,
        computation: Computation,
        diagnostics: dict[str, Any],
        asked: Sequence[str],
        measures: frozenset[str],
    ) -> NumericAnswer:
        """`asked`: the labels the question was asked with; `measures`: the measures it asks
        (the minimum or the maximum names the row holding it)."""
        columns = tuple(
            FigureColumn(
                name,
                spec.label if spec else name,
                spec.kind if spec else "unknown",  # undeclared: masked by the pseudonymiser
                spec.unit if spec else None,
            )
            for name in computation.columns
            for spec in [query.result.columns.get(name)]
        )
        provenance = computation.provenance()
        # The labels its figures carry, and where the reader opens the reviewed query (under
        # the labels the question was asked with).
        provenance |= {
            "labels": self.figure_labels(query),
            "link": query_link(provenance, sorted(asked)),
        }
        return NumericAnswer(
            "computed",
            query_id=query.id,
            description=query.description,
            text=computed_text(
                query, columns, computation, self._wording, self._language, asked=measures
            ),
            columns=columns,
            rows=computation.rows,
            provenance=provenance,
            data_date=computation.data_date,
            diagnostics=diagnostics | {"duration_ms": round(computation.duration_ms, 2)},
        )

    def _needs_parameter(
        self, query: CatalogQuery, extraction: Extraction, diagnostics: dict[str, Any]
    ) -> NumericAnswer:
        if extraction.invalid:
            text = self._wording.invalid_parameter.format(
                query=query.id,
                problems="; ".join(f"{why}" for why in extraction.invalid.values()),
            )
            code = "invalid_parameter"
        else:
            names = ", ".join(
                f"{name} ({query.parameters[name].description})" for name in extraction.missing
            )
            text = self._wording.needs_parameter.format(query=query.id, names=names)
            code = "missing_parameter"
        return NumericAnswer(
            "needs_parameter",
            query_id=query.id,
            description=query.description,
            text=text,
            error_code=code,
            missing=tuple(extraction.missing),
            invalid=dict(extraction.invalid),
            diagnostics=diagnostics,
        )

    def _failed(
        self,
        question: str,
        exc: AnalyticsError,
        query: CatalogQuery | None = None,
        diagnostics: Mapping[str, Any] | None = None,
    ) -> NumericAnswer:
        log.error("analytics: %r failed [%s]: %s", question[:80], exc.code, exc)
        return NumericAnswer(
            "failed",
            query_id=query.id if query else None,
            text=self._wording.numeric_failed.format(code=exc.code, error=exc),
            error_code=exc.code,
            diagnostics=dict(diagnostics or {}),
        )

    def compute(self, query_id: str, parameters: Mapping[str, object]) -> Computation:
        """One query of the activated catalog with the given values (validated like a model's:
        the metrics page, the evaluation's reference figures). AnalyticsError when the query
        is unknown, a value is missing or not allowed, or the store fails."""
        served = self.served_catalog()
        query = served.queries.get(query_id)
        if query is None:
            raise AnalyticsError(
                f"{query_id!r} is not a query of the activated catalog "
                f"({', '.join(sorted(served.queries)) or 'empty'})",
                code="unknown_query",
            )
        extraction = validate(query, parameters, served.choices.get(query.id, {}), "given")
        if not extraction.complete:
            why = [*extraction.invalid.values(), *(f"{m} is missing" for m in extraction.missing)]
            raise AnalyticsError(f"{query_id}: {'; '.join(why)}", code="invalid_parameter")
        return self.store.execute(query, extraction.values, served.catalog.revision)

    def close(self) -> None:
        self.store.close()


def serve(
    catalog: Catalog, store: AnalyticsStore, synonyms: Mapping[str, list[str]]
) -> ServedCatalog:
    """The catalog as it is served: each enum parameter's values (its own list, or read from
    the store's value source) with their synonyms (the query's own, then the glossary's), and
    the names of the store's views and columns, and which of them are dates."""
    served = ServedCatalog(
        catalog,
        catalog.queries,
        schema_names=store.schema_names(),
        event_columns=store.event_columns(),
    )
    for qid, query in served.queries.items():
        for name, param in query.parameters.items():
            if param.type != "enum":
                continue
            values = (
                list(param.values)
                if param.values is not None
                else store.enum_values(param.values_from or "")
            )
            served.choices.setdefault(qid, {})[name] = {
                value: [*param.synonyms.get(value, []), *synonyms.get(_key(value), [])]
                for value in values
            }
    return served


def _key(value: str) -> str:
    return " ".join(value.casefold().split())
