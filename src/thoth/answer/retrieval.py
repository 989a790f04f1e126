"""Retrieval for answers: one filter, then similarity, then the verbatim floor (seed 004).

Every request field is a document attribute and becomes part of ONE condition applied inside
the index before similarity; nothing downstream filters, and nothing downstream can bring back
what the condition excluded. The only probabilistic step chooses a parameter — the channel —
and only when the caller did not declare one. No field widens scope: each one only adds a
condition, labels included (a point is served only if all its labels are within the caller's —
a label removed from the vocabulary since the generation was built included; a point without
labels is never served).

A technical failure is `failed` with a stable code, never an empty result; a dead embedder
degrades to BM25 alone and says so in `degraded` (and in a WARNING on `thoth.answer`), as does
a relevance floor that could not be applied.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from thoth.answer.ranking import curated_weight, verbatim_floor
from thoth.answer.relevance import (
    MIN_CORPUS,
    Relevance,
    Term,
    candidate_terms,
    carried_across,
    check_terms,
    everywhere,
    judge,
    meaning_shares,
    speaks,
    unknown_words,
)
from thoth.answer.request import SearchRequestError, parse_request, request_fields
from thoth.answer.rerank import Candidate, Reranked, Stems, rerank, term_function
from thoth.answer.routing import ChannelRouter, Route
from thoth.answer.scope import Scope, allowed_labels, check_names, scope
from thoth.config import IndexSettings, Settings
from thoth.documents.records import search_text
from thoth.embed.base import Embedder, EmbedderError, Vectors
from thoth.entities import NO_ENTITIES, EntityList
from thoth.glossary import GLOSSARY_WEIGHT, NO_GLOSSARY, Expansion, Glossary
from thoth.index.base import (
    Exclude,
    Fusion,
    Hit,
    IndexStore,
    SparseVec,
    Where,
    deterministic_top,
)
from thoth.index.bm25 import Bm25Encoder
from thoth.index.fusion import fuse, fusion_from
from thoth.index.generations import IndexBackend
from thoth.index.reader import (
    INDEX_UNAVAILABLE,
    Bm25Branch,
    GenerationReader,
    Readable,
    StateView,
    Unreadable,
)
from thoth.index.records import (
    ANSWER_KINDS,
    RECORD_DOCUMENT,
    AnswerPayload,
    EvidencePayload,
    FragmentPayload,
    parse_payload,
    position,
    read_at,
)
from thoth.llm.rerank import Reranker, RerankerError
from thoth.periods import asked_quarters, covers, is_quarter_term, parse_label, stated_quarters
from thoth.search.outcome import MAX_MESSAGE

log = logging.getLogger("thoth.answer")

__all__ = [
    "NO_RELEVANCE_FLOOR",
    "EntityScope",
    "KnowledgeSearch",
    "Retrieval",
    "RetrievedFragment",
    "SearchRequestError",
    "parse_request",
    "request_fields",
]

Status = Literal["found", "nothing_found", "failed"]
NO_RELEVANCE_FLOOR = "relevance floor not applied: no dense similarity"


@dataclass(frozen=True)
class RetrievedFragment:
    id: str
    rank: int  # 1 = closest
    score: float  # fused (or BM25-only) score, after the curated weight
    record: AnswerPayload  # the typed payload: text, caveats, title, source ...
    dense_rank: int | None  # rank in the dense branch under the same condition, if there
    bm25_rank: int | None
    floor: bool  # added by the verbatim floor
    # Its dense (cosine) similarity to the question, the measure the relevance floor compares
    # with `answers.min_similarity` (None: outside the dense branch's candidates, or no vector).
    dense_similarity: float | None = None
    # Its rank after fusion, before the second stage (thoth.answer.rerank); None: not reranked.
    fused_rank: int | None = None
    # The reranking model's score ([reranker]); None: no model, or beyond its candidates.
    model_score: float | None = None

    @property
    def record_kind(self) -> str:
        return self.record.record_kind

    @property
    def doc_id(self) -> str:
        return self.record.doc_id

    @property
    def title(self) -> str:
        return self.record.title

    @property
    def revision(self) -> str:
        """The Git revision the fragment's text was read at (see Source.revision)."""
        return read_at(self.record)

    @property
    def ordinal(self) -> int:
        """Its position in its document (or Evidence Unit): what a source's link opens."""
        return position(self.record)

    @property
    def row(self) -> str | None:
        """A FAQ table's row (its id or number): its own source; None for any other record."""
        return self.record.qa_row if isinstance(self.record, FragmentPayload) else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "rank": self.rank,
            "score": self.score,
            "record_kind": self.record_kind,
            "doc_id": self.doc_id,
            "title": self.title,
            "payload": self.record.to_payload(),
            "dense_rank": self.dense_rank,
            "bm25_rank": self.bm25_rank,
            "floor": self.floor,
            "dense_similarity": self.dense_similarity,
            "fused_rank": self.fused_rank,
            "model_score": self.model_score,
        }


@dataclass
class Retrieval:
    """The outcome of the reader mapped once to the answer vocabulary: `available` with
    fragments is `found`, `available` with none is `nothing_found`, `unavailable` is
    `failed` with the reader's stable code."""

    status: Status
    fragments: list[RetrievedFragment]
    route: Route
    filters: dict[str, Any]  # the applied condition, readable
    generation: str | None
    error_code: str | None = None
    error: str | None = None
    degraded: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    # The closest fragment's dense similarity under the condition (None without embedder);
    # below `answers.min_similarity` the corpus holds nothing close enough: nothing_found.
    best_similarity: float | None = None
    # Both signals of the relevance check and its verdict (thoth.answer.relevance).
    relevance: Relevance | None = None
    # The languages the question was encoded in for BM25, one branch each (Qdrant's names).
    bm25_languages: list[str] = field(default_factory=list)
    # The entities the question names and the scope they gave (None: it names none).
    entities: EntityScope | None = None
    # The relevance floor's standing: "calibrated" (a number in thoth.toml), "uncalibrated"
    # (`auto`: the bundled embedder's generic floor, or none for another embedder), "off".
    floor: str | None = None
    # What the workspace glossary matched in the question and added to its search.
    glossary: Expansion | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "fragments": [f.as_dict() for f in self.fragments],
            "route": self.route.as_dict(),
            "filters": self.filters,
            "generation": self.generation,
            "error_code": self.error_code,
            "error": self.error,
            "degraded": list(self.degraded),
            "counts": dict(self.counts),
            "best_similarity": self.best_similarity,
            "relevance": self.relevance.as_dict() if self.relevance else None,
            "bm25_languages": list(self.bm25_languages),
            "entities": self.entities.as_dict() if self.entities else None,
            "floor": self.floor,
            "glossary": self.glossary.as_dict() if self.glossary else None,
        }


@dataclass(frozen=True)
class EntityScope:
    """The entities a question names (thoth.entities) and what the scope made of them."""

    named: tuple[str, ...]  # ids, as the list declares them
    scope: tuple[str, ...]  # those with documents under the request's condition
    without_documents: tuple[str, ...]
    names: dict[str, str] = field(default_factory=dict)  # id -> display name

    @property
    def reason(self) -> str | None:
        """Why nothing is answered, when no named entity has a document to answer from."""
        if self.scope:
            return None
        shown = ", ".join(f"{self.names.get(e, e)} ({e})" for e in self.without_documents)
        return (
            f"the question names {shown}: no document of it is indexed under this request's "
            "condition, and another entity's documents never answer for it"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "named": list(self.named),
            "scope": list(self.scope),
            "without_documents": list(self.without_documents),
            "reason": self.reason,
        }


# One BM25 branch of a query: the question encoded in a language, and the condition that keeps
# the fragments encoded in it (added to the request's).
Bm25Query = tuple[SparseVec, Where]


@dataclass(frozen=True)
class _Candidates:
    hits: list[Hit]  # fused (BM25 alone without a dense vector), best first
    dense_ranks: dict[str, int]
    bm25_ranks: dict[str, int]
    best_similarity: float | None
    dense_scores: dict[str, float] = field(default_factory=dict)  # id -> dense similarity


class KnowledgeSearch:
    """Steps: request -> scope -> readable generation -> vectors -> channel route -> hybrid
    candidates -> relevance floor -> curated weight -> second stage -> reranking model (when
    configured) -> verbatim floor -> typed fragments."""

    def __init__(
        self,
        settings: Settings,
        state: StateView,
        backend: IndexBackend,
        embedder: Embedder,
        entities: EntityList = NO_ENTITIES,
        glossary: Glossary = NO_GLOSSARY,
        reranker: Reranker | None = None,
    ) -> None:
        self.settings = settings
        self.reranker = reranker
        self.embedder = embedder  # the relevance check weighs unmatched words with it
        self.entities = entities
        self.glossary = glossary
        self._reader = GenerationReader(
            settings.workspace, state, backend, embedder, default_language=settings.language
        )
        answers = settings.answers
        self.router = ChannelRouter(
            settings.channels,
            embedder,
            answers.routing.channel_threshold,
            margin=answers.routing.channel_margin,
            language=settings.language,
        )
        self._channel_counts: dict[tuple[str, str], set[str]] = {}
        self._stemmers: dict[str, Stems] = {}
        # The relevance floor in effect: the configured value, or for "auto" the one
        # calibrated for this embedder (None: no floor).
        self.min_similarity = answers.floor_for(embedder.identity)
        # How much lower the embedder reads a passage in another language (0.0: not measured).
        self.language_drop = answers.language_drop_for(embedder.identity)

    # -- the contract ----------------------------------------------------------------

    def search(
        self,
        question: str,
        *,
        channel: str | None = None,
        labels: Sequence[str] | None = None,
        source: str | None = None,
        year: int | None = None,
        doc_format: str | None = None,
    ) -> Retrieval:
        """The closest fragments under the request's condition. The request is validated
        before the index is touched: a bad request raises SearchRequestError."""
        request = self.validate(
            question,
            {
                "channel": channel,
                "labels": labels,
                "source": source,
                "year": year,
                "doc_format": doc_format,
            },
        )
        text = " ".join(question.split())
        allowed = allowed_labels(self.settings, request)
        # Readable before the generation is known, for a failure report; the condition itself
        # is built once the generation says which labels it holds.
        scoped = scope(self.settings, request, allowed, ())
        route = Route(
            channel=channel,
            channel_source="request" if channel else "all",
            threshold=self.router.threshold,
        )
        gen_id: str | None = None
        degraded: list[str] = []
        languages: list[str] = []
        named = self.entities.named_in(text)
        entities: EntityScope | None = None
        # Terms the glossary says mean the same in the index's languages: for BM25 and the
        # second stage (the dense branch is multilingual); relevance reads the question, a name
        # held through the glossary aside.
        expansion = self.glossary.expand(text)
        try:
            with self._reader.guard():
                gen = self._reader.active()
                gen_id = gen.id
                languages = [b.language for b in gen.branches]
                scoped = scope(self.settings, request, allowed, gen.labels())
                if named:
                    entities = self._entity_scope(gen, scoped, named)
                    scoped = scoped.with_entities(entities.scope)
                    if not entities.scope:
                        return Retrieval(
                            status="nothing_found",
                            fragments=[],
                            route=route,
                            filters={**scoped.readable, "entity": list(named)},
                            generation=gen_id,
                            counts={"entity_without_documents": len(named)},
                            bm25_languages=languages,
                            entities=entities,
                            floor=self.floor_state,
                            glossary=expansion,
                        )
                # The one embedding call of the question: retrieval and routing share it.
                vectors = self._reader.vectors(gen, text, degrade=True)
                if vectors.embedder_error is not None:
                    degraded.append(f"dense: {vectors.embedder_error}")
                    route = replace(route, embedder_error=vectors.embedder_error)
                if channel is None:
                    competing = self._channels(gen, scoped.where)
                    route = self._route(text, competing, vectors.raw, route)
                    if vectors.raw is not None and route.embedder_error is not None:
                        degraded.append(f"routing: keywords ({route.embedder_error})")
                # How rare a word is, is counted under the request's condition before routing:
                # a channel's few fragments are no measure of the domain's vocabulary.
                corpus = scoped.where
                scoped = scoped.with_channel(route.searched)
                bm25 = _bm25_queries(gen, text, vectors.sparse, expansion)
                if entities is not None and len(entities.scope) > 1:
                    fragments, counts, relevance = self._retrieve_each(
                        gen,
                        text,
                        vectors.dense,
                        bm25,
                        scoped,
                        entities.scope,
                        expansion,
                        degraded,
                        corpus,
                    )
                else:
                    fragments, counts, relevance = self._retrieve(
                        gen, text, vectors.dense, bm25, scoped, expansion, degraded, corpus
                    )
            if fragments and relevance.similarity is None and self.min_similarity is not None:
                degraded.append(NO_RELEVANCE_FLOOR)
        except Unreadable as exc:
            return self._failed(
                route, scoped.readable, exc.generation or gen_id, exc.code, str(exc), degraded
            )
        _warn(degraded)
        return Retrieval(
            status="found" if fragments else "nothing_found",
            fragments=fragments,
            route=route,
            filters=scoped.readable,
            generation=gen_id,
            degraded=degraded,
            counts=counts,
            best_similarity=relevance.similarity,
            relevance=relevance,
            bm25_languages=languages,
            entities=entities,
            floor=self.floor_state,
            glossary=expansion,
        )

    @property
    def floor_state(self) -> str:
        """Whether the relevance floor was calibrated for this workspace (see Retrieval)."""
        raw = self.settings.answers.min_similarity
        if raw is None or raw == "off":
            return "off"
        return "uncalibrated" if raw == "auto" else "calibrated"

    def _entity_scope(self, gen: Readable, scoped: Scope, named: Sequence[str]) -> EntityScope:
        """Which named entities have a document under the request's condition: a named entity
        without one is never answered from another entity's text."""
        present = tuple(e for e in named if gen.store.count({**scoped.where, "entity": [e]}))
        names = {e: entity.name for e in named if (entity := self.entities.get(e))}
        return EntityScope(
            tuple(named), present, tuple(e for e in named if e not in present), names
        )

    def _retrieve_each(
        self,
        gen: Readable,
        question: str,
        dense: list[float] | None,
        bm25: Sequence[Bm25Query],
        scoped: Scope,
        entities: Sequence[str],
        expansion: Expansion,
        degraded: list[str],
        corpus: Mapping[str, Any],
    ) -> tuple[list[RetrievedFragment], dict[str, int], Relevance]:
        """A question naming several entities retrieves for each (one scope each), then takes
        their fragments in turn: the closest of each entity first, so that no entity's
        documents crowd out another's."""
        per = [
            self._retrieve(
                gen,
                question,
                dense,
                bm25,
                scoped.with_entities([e]),
                expansion,
                degraded,
                {**corpus, "entity": [e]},
            )
            for e in entities
        ]
        relevant = [r for r in per if r[0]]
        if not relevant:
            return per[0]
        top_k = self.settings.answers.top_k
        merged: list[RetrievedFragment] = []
        seen: set[str] = set()
        for turn in itertools.zip_longest(*(r[0] for r in relevant)):
            for frag in turn:
                if frag is not None and frag.id not in seen and len(merged) < top_k:
                    seen.add(frag.id)
                    merged.append(replace(frag, rank=len(merged) + 1))
        counts: Counter[str] = Counter()
        for _, c, _ in relevant:
            counts.update(c)
        best = max(relevant, key=lambda r: r[2].similarity or 0.0)
        return merged, dict(counts), best[2]

    def validate(self, question: str, request: Mapping[str, Any]) -> dict[str, Any]:
        """The request `search` would run, checked without touching the state store or the
        index: a non-empty question, known fields of the right type (`parse_request`), and
        labels, channel and source that are declared. Returns the fields given, normalised;
        raises SearchRequestError naming what is wrong. Callers that do not search (the
        numeric branch) validate with it too, so no path skips a check."""
        if not question.strip():
            raise SearchRequestError("the question is empty -> ask something")
        parsed = parse_request(request)
        check_names(self.settings, parsed)
        allowed_labels(self.settings, parsed)
        return parsed

    def close(self) -> None:
        self._reader.close()
        if self.reranker is not None:
            self.reranker.close()

    # -- steps -------------------------------------------------------------------------

    def _channels(self, gen: Readable, where: Mapping[str, Any]) -> set[str]:
        """Declared channels with at least one point under `where`, per generation."""
        key = (gen.id, repr(sorted(where.items())))
        if key not in self._channel_counts:
            if any(g != gen.id for g, _ in self._channel_counts):
                self._channel_counts.clear()  # a new generation: older counts are moot
            self._channel_counts[key] = {
                c.name
                for c in self.settings.channels
                if gen.store.count({**where, "channel": c.name})
            }
        return self._channel_counts[key]

    def _route(
        self, text: str, competing: set[str], vector: Vectors | None, fallback: Route
    ) -> Route:
        """Only channels that can return something under the caller's condition compete."""
        if vector is None:
            return self.router.route_by_keywords(
                text, channels_with_documents=competing, reason=fallback.embedder_error or ""
            )
        return self.router.route(text, channels_with_documents=competing, query_vector=vector)

    def _retrieve(
        self,
        gen: Readable,
        question: str,
        dense: list[float] | None,
        bm25: Sequence[Bm25Query],
        where: Scope,
        expansion: Expansion,
        degraded: list[str],
        corpus: Mapping[str, Any],
    ) -> tuple[list[RetrievedFragment], dict[str, int], Relevance]:
        answers = self.settings.answers
        store = gen.store
        depth = max(self.settings.index.prefetch_limit, 4 * answers.top_k)
        found = _candidates(store, dense, bm25, where.where, depth, self.settings.index)
        relevance = self._relevance(gen, question, found, where, expansion, corpus, degraded, dense)
        if not relevance.relevant:
            # A fused ranking always has a "closest" fragment, even for a question the corpus
            # knows nothing about: below the floor, or about a name or period the documents it
            # would come from never mention, that is not an answer.
            counts = {"candidates": len(found.hits), f"relevance_{relevance.verdict}": 1}
            if relevance.verdict == "below_similarity":
                counts["below_min_similarity"] = 1
            return [], counts, relevance
        # The curated weight is a score bonus, the second stage an order: it comes after.
        hits = curated_weight(found.hits, answers.curated_weight)
        reranked: Reranked | None = None
        # Only inside an entity scope: there the names that located the documents no longer
        # rank within them. Unscoped, BM25 already scores every word of the question, and the
        # second stage lowered TAT-QA's hit@1 (0.535 -> 0.517, benchmarks/README.md).
        scoped_to_entity = bool(where.where.get("entity"))
        if answers.rerank and hits and scoped_to_entity:
            asked = self.entities.without_names(question)
            reranked = rerank(
                asked,
                [Candidate(h, _searched(h), self._language_of(h)) for h in hits],
                self._stems,
                lambda language: self.glossary.question_in(asked, expansion, language),
                lambda language: " ".join(expansion.terms_in(language)),
            )
            hits = reranked.hits
        model_scores, model_error = self._model_rerank(question, hits)
        if model_scores:
            hits = _by_model(hits, model_scores)
        elif model_error is not None and f"rerank: {model_error}" not in degraded:
            degraded.append(f"rerank: {model_error}")  # once, whatever the entities asked
        only_docs = {**where.where, "record_kind": RECORD_DOCUMENT}
        top, floor_ids = verbatim_floor(
            hits,
            answers.top_k,
            answers.verbatim_floor,
            # Deeper, same condition, documents only: the floor never crosses the filter.
            lambda: _candidates(store, dense, bm25, only_docs, depth, self.settings.index).hits,
        )
        fragments = [
            RetrievedFragment(
                id=hit.id,
                rank=rank,
                score=hit.score,
                record=_answer_record(hit),
                dense_rank=found.dense_ranks.get(hit.id),
                bm25_rank=found.bm25_ranks.get(hit.id),
                floor=hit.id in floor_ids,
                dense_similarity=found.dense_scores.get(hit.id),
                fused_rank=reranked.first_stage.get(hit.id) if reranked else None,
                model_score=model_scores.get(hit.id),
            )
            for rank, hit in enumerate(top, start=1)
        ]
        counts = {
            "candidates": len(found.hits),
            **{kind: sum(f.record_kind == kind for f in fragments) for kind in ANSWER_KINDS},
            "floor_added": len(floor_ids),
        }
        if reranked is not None:
            counts["reranked" if reranked.applied else "rerank_skipped_few_terms"] = 1
        elif answers.rerank and not scoped_to_entity:
            counts["rerank_skipped_no_entity"] = 1
        if model_scores:
            counts["model_reranked"] = 1
        elif model_error is not None:
            counts["model_rerank_failed"] = 1
        return fragments, counts, relevance

    def _model_rerank(
        self, question: str, hits: Sequence[Hit]
    ) -> tuple[dict[str, float], str | None]:
        """The reranking model's score of each of the top `candidates` hits (id -> score),
        or the error it failed with: the order it had then stands, and the answer says it
        is degraded — a ranking signal lost, never a reason to answer nothing."""
        if self.reranker is None or not hits:
            return {}, None
        head = hits[: self.reranker.candidates]
        try:
            scores = self.reranker.scores(question, [_searched(h) for h in head])
        except RerankerError as exc:  # logged with the other degradations (_warn)
            return {}, str(exc)
        return {h.id: score for h, score in zip(head, scores, strict=True)}, None

    def _language_of(self, hit: Hit) -> str:
        """The language a candidate's BM25 terms were made in (its source's, an Evidence
        Unit's own, else the workspace's)."""
        language = hit.payload.get("bm25_language") or hit.payload.get("language")
        return str(language or self.settings.language)

    def _stems(self, language: str) -> Stems:
        if language not in self._stemmers:
            self._stemmers[language] = term_function(language)
        return self._stemmers[language]

    def _relevance(
        self,
        gen: Readable,
        question: str,
        found: _Candidates,
        where: Scope,
        expansion: Expansion,
        corpus: Mapping[str, Any],
        degraded: list[str],
        dense: Sequence[float] | None,
    ) -> Relevance:
        """Both signals of thoth.answer.relevance on the candidates the answer would use.
        `dense`: the question's vector, the search's (the meaning share starts from it)."""
        if not found.hits:
            return judge(found.best_similarity, self.min_similarity, None)
        if not self.settings.answers.term_check:
            return judge(found.best_similarity, self.min_similarity, None)
        top = found.hits[: self.settings.answers.top_k]
        docs = [str(h.payload.get("doc_id") or "") for h in top]
        scoped = bool(where.where.get("entity"))
        # The quarters the documents the answer would come from report on (thoth.periods),
        # and whether they hold one the question asks, as a calendar or a fiscal quarter of
        # the entities in scope.
        covered = {
            q
            for h in top
            for text in (h.payload.get("periods") or ())
            if (q := parse_label(str(text))) is not None
        }
        ends = [
            e.fiscal_year_end
            for eid in where.where.get("entity") or ()
            if (e := self.entities.get(eid)) is not None
        ]
        held = covers(asked_quarters(question), covered, ends)
        stated = stated_quarters(question)
        # A period end the question states is one term, checked against the quarters reported
        # (calendar only: an exact date has no fiscal reading); its words are no terms, for a
        # filing of April 1 holds "July", "1" and "2023" somewhere too.
        stated_words = {w.lower() for phrase, _ in stated for w in re.findall(r"\w+", phrase)}
        stated_terms = (
            [
                Term(phrase, "period", (), corpus=int(q in covered), retrieved=q in covered)
                for phrase, q in stated
            ]
            if covered
            else []
        )
        quarter_terms: list[Term] = []
        # Terms go through each language's analyser, under the condition that keeps the
        # fragments encoded in it: a name in an English filing is matched by English stems.
        checked: list[list[Term]] = []
        branches = gen.branches or (Bm25Branch(gen.encoder.language, gen.encoder, {}),)
        # Whether the question is in each branch's language. In none: its words the corpus
        # does not hold are checked by no analyser (`unchecked`, in every branch), and a term
        # every document in scope holds vouches for no passage (`universal`).
        spoken = [speaks(question, _analyser(b.encoder)) for b in branches]
        other = not any(spoken)
        # A word no fragment of a language holds tells the question is another's only when the
        # answer opens with a fragment of that language: an Italian question the English
        # filing answers lacks its Italian words by translation, left to the dense signal.
        leads = [_in_branch(top[0], b) for b in branches]
        unchecked: list[str] | None = None
        universal: set[str] = set()
        translated: list[Term] = []  # unchecked words held through the glossary
        small: int | None = None  # the fewest fragments of a language, under MIN_CORPUS
        for branch, in_language, lead in zip(branches, spoken, leads, strict=True):
            encoder = branch.encoder
            terms = candidate_terms(question, _analyser(encoder))
            if scoped:
                # The entity scope already decided whose documents answer: they need not write
                # their entity's name (a filing says "the Company"), and another named entity
                # has its own scope (or is reported without documents). No name is a term.
                terms = [t for t in terms if not self.entities.named_in(t.text)]
            if stated_terms:
                terms = [t for t in terms if t.text.lower() not in stated_words]
            quarters = [t for t in terms if t.kind == "period" and is_quarter_term(t.text)]
            if quarters and covered:
                # "Q2" is checked against the quarters the retrieved documents report on,
                # never against their words (a filing writes "three months ended July 1").
                terms = [t for t in terms if t not in quarters]
                quarter_terms = [replace(t, corpus=int(held), retrieved=held) for t in quarters]
            stems = {
                i
                for h in top
                for i in encoder.query(
                    f"{h.payload.get('title') or ''} {h.payload.get('text') or ''}"
                ).indices
            }
            within = {**where.where, **branch.where}
            visible = gen.store.count({**corpus, **branch.where})
            if 0 < visible < MIN_CORPUS:  # the words its fragments hold are not weighed
                small = visible if small is None else min(small, visible)
            holding = check_terms(
                gen.store,
                within,
                terms,
                [d for d in docs if d],
                stems,
                corpus_where={**corpus, **branch.where},
                in_language=in_language and lead,
                visible=visible,
            )
            if expansion:
                holding = _through_glossary(
                    gen.store, within, holding, expansion, docs, encoder, stems
                )
            checked.append(holding)
            if other:
                kept = {t.text for t in holding}
                here = unknown_words(
                    gen.store, {**corpus, **branch.where}, [t for t in terms if t.text not in kept]
                )
                for word in list(here):
                    via = _glossary_held(word, expansion, encoder, stems)
                    if via is not None:
                        here.remove(word)
                        translated.append(Term(word, "rare", (), matched=True, via=via))
                unchecked = here if unchecked is None else [w for w in unchecked if w in here]
                # Every document of the request's condition, whatever entity it names.
                request = {k: v for k, v in corpus.items() if k != "entity"}
                documents = {**request, **branch.where, "record_kind": RECORD_DOCUMENT}
                universal |= {
                    t.text
                    for t in holding
                    if t.held
                    and t.kind in ("name", "period")
                    and t.stems
                    and everywhere(gen.store, documents, t.stems)
                }
        merged = _merge_terms(checked) + stated_terms + quarter_terms
        decide = self.settings.answers.distinctive_terms == "decide"
        if decide:  # measured only where it decides: query embeddings, a few per question
            merged = self._weigh_meaning(question, merged, degraded, dense)
        drop = 0.0
        carried = True
        if other:
            # What the passages hold of a question in another language, less the names and
            # periods every document holds: its shared words carry it to the lowered floor,
            # and something of it must be there to vouch for the words no analyser checked.
            evidence = [t for t in merged if t.held and t.text not in universal] + translated
            if self._within_drop(found.best_similarity):
                drop = self.language_drop if self._carries(question, evidence, dense) else 0.0
            # A period says when, not what: a year the passage shares vouches for no subject.
            carried = any(t.kind != "period" for t in evidence)
        return judge(
            found.best_similarity,
            self.min_similarity,
            merged,
            decide_unmatched=decide,
            language_drop=drop,
            unchecked=unchecked or (),
            carried=carried,
            small_corpus=small,
        )

    def _carries(self, question: str, terms: Sequence[Term], dense: Sequence[float] | None) -> bool:
        """relevance.carried_across with the search's embedder; it failing, the floor is left
        as it is."""
        try:
            return carried_across(question, terms, self.embedder.embed_queries, whole=dense)
        except EmbedderError:
            return False

    def _within_drop(self, similarity: float | None) -> bool:
        """Whether the closest passage is under the floor by less than the embedder's drop
        across languages: a question in another language is then held to the lowered floor
        when what the passages hold of it carries its meaning (relevance.carried_across)."""
        floor = self.min_similarity
        if not self.language_drop or similarity is None or floor is None:
            return False
        return floor - self.language_drop <= similarity < floor

    def _weigh_meaning(
        self,
        question: str,
        terms: list[Term],
        degraded: list[str],
        dense: Sequence[float] | None,
    ) -> list[Term]:
        """The distinctive words the quoted fragments lack, each with its share of the
        question's meaning for the embedder (thoth.answer.relevance.meaning_shares): what
        decides whether they make the question another's. Measured only when there is one;
        without the embedder they are weighed by idf, and the answer says so."""
        lacking = {t.text.lower() for t in terms if t.lacking}
        if not lacking:
            return terms
        try:
            shares = meaning_shares(question, self.embedder.embed_queries, lacking, whole=dense)
        except EmbedderError as exc:
            degraded.append(f"relevance: unmatched words weighed by idf ({exc})")
            return terms
        return [
            replace(t, share=shares.get(t.text.lower(), 0.0)) if t.lacking else t for t in terms
        ]

    def _failed(
        self,
        route: Route,
        filters: dict[str, Any],
        gen_id: str | None,
        code: str,
        message: str,
        degraded: list[str],
    ) -> Retrieval:
        text = " ".join(message.split())
        if len(text) > MAX_MESSAGE:
            text = text[: MAX_MESSAGE - 3] + "..."
        _warn(degraded)
        log.error("answer retrieval failed [%s]: %s", code, text)
        return Retrieval(
            status="failed",
            fragments=[],
            route=route,
            filters=filters,
            generation=gen_id,
            error_code=code,
            error=text,
            degraded=degraded,
            floor=self.floor_state,
        )


def _bm25_queries(
    gen: Readable, text: str, own: SparseVec, expansion: Expansion
) -> list[Bm25Query]:
    """The question encoded in each BM25 language of the generation (its own language's
    vector is the one already computed), with the glossary's terms of that language, which
    weigh `GLOSSARY_WEIGHT` times more than the question's other words: measured on five
    10-Q filings, the English questions' framing words ("how do the details relate to the
    insights") let prose pass the income statement whose "Operating expenses" was asked."""

    def encoded(encoder: Bm25Encoder) -> SparseVec:
        named = expansion.terms_in(encoder.language)
        if not named:
            return own if encoder is gen.encoder else encoder.query(text)
        query = encoder.query(" ".join([text, *expansion.added_in(encoder.language)]))
        stems = set(encoder.query(" ".join(named)).indices)
        return SparseVec(
            query.indices,
            [
                v * GLOSSARY_WEIGHT if i in stems else v
                for i, v in zip(query.indices, query.values, strict=True)
            ],
        )

    if not gen.branches:
        return [(encoded(gen.encoder), {})]
    return [(encoded(b.encoder), b.where) for b in gen.branches]


def _candidates(
    store: IndexStore,
    dense: list[float] | None,
    bm25: Sequence[Bm25Query],
    where: Mapping[str, Any],
    depth: int,
    index: IndexSettings,
) -> _Candidates:
    """Fused candidates (BM25 alone without a dense vector), each branch's ranks and the best
    dense similarity. Branch lists are re-sorted by (score desc, id) like the fused one: equal
    scores always rank the same way. One BM25 list per language (each fragment is in one at
    most), fused with dense by the `[index]` fusion (thoth.index.fusion)."""
    lists = [
        deterministic_top(store.query_sparse(sparse, {**where, **extra}, depth), depth)
        for sparse, extra in bm25
        if sparse.indices
    ]
    bm25_ranks: dict[str, int] = {}
    for hits in lists:
        for hit_id, rank in _ranks(hits).items():
            bm25_ranks[hit_id] = min(rank, bm25_ranks.get(hit_id, rank))
    if dense is None:
        bm25_only = (
            lists[0]
            if len(lists) == 1
            else fuse(
                lists,
                depth,
                Fusion(index.fusion, index.fusion_k, (index.bm25_weight,) * len(lists)),
            )
        )
        return _Candidates(bm25_only if lists else [], {}, bm25_ranks, None)
    dense_hits = deterministic_top(store.query_dense(dense, where, depth), depth)
    best = dense_hits[0].score if dense_hits else None
    scores = {h.id: h.score for h in dense_hits}
    if not lists:  # only stopwords: the sparse branch has nothing to say
        return _Candidates(dense_hits, _ranks(dense_hits), bm25_ranks, best, scores)
    # The branch lists already fetched (dense, then one BM25 list per language), fused by the
    # function query_hybrid uses: the same ranks as EvidenceSearch, without querying twice.
    fused = fuse([dense_hits, *lists], depth, fusion_from(index, len(lists)))
    return _Candidates(fused, _ranks(dense_hits), bm25_ranks, best, scores)


def _through_glossary(
    store: IndexStore,
    where: Mapping[str, Any],
    terms: Sequence[Term],
    expansion: Expansion,
    docs: Sequence[str],
    encoder: Bm25Encoder,
    quoted: Collection[int],
) -> list[Term]:
    """A name or period the retrieved documents do not hold is held when they hold what the
    glossary says stands for it ("USA" asked, "Stati Uniti" written): the term says `via`. A
    distinctive word the quoted fragments do not hold is matched when they hold what the
    glossary says stands for it."""
    out: list[Term] = []
    for term in terms:
        alternatives = expansion.alternatives_of(term.text)
        if term.held or not alternatives:
            out.append(term)
            continue
        if term.kind in ("rare", "unknown"):
            written = _glossary_held(term.text, expansion, encoder, quoted)
            out.append(term if written is None else replace(term, matched=True, via=written))
            continue
        instead = [
            Term(alt, term.kind, tuple(ids))
            for alt in alternatives
            if (ids := sorted(set(encoder.query(alt).indices)))
        ]
        held = [
            t for t in check_terms(store, where, instead, [d for d in docs if d]) if t.retrieved
        ]
        out.append(
            replace(term, corpus=held[0].corpus, retrieved=True, via=held[0].text) if held else term
        )
    return out


def _glossary_held(
    word: str, expansion: Expansion, encoder: Bm25Encoder, quoted: Collection[int]
) -> str | None:
    """What the glossary says a document may write for `word` that the quoted fragments hold
    (their stems `quoted`), if any: a distinctive word matched through its reviewed
    alternative, or the translation of a word no analyser checks."""
    for alt in expansion.alternatives_of(word):
        ids = set(encoder.query(alt).indices)
        if ids and ids <= set(quoted):
            return alt
    return None


def _in_branch(hit: Hit, branch: Bm25Branch) -> bool:
    """Whether the candidate is among the fragments `branch` searches (its language's)."""
    kept = branch.where.get("bm25_language")
    language = hit.payload.get("bm25_language")
    if kept is None:
        return True
    if isinstance(kept, Exclude):
        return language not in kept.none_of
    return bool(language == kept)


def _analyser(encoder: Bm25Encoder) -> Callable[[str], list[int]]:
    """A word's BM25 token ids in `encoder`'s language (none: a stopword)."""
    return lambda word: encoder.query(word).indices


def _merge_terms(per_language: Sequence[Sequence[Term]]) -> list[Term]:
    """One checked term per question word over the languages' analysers: a term is held if
    any language holds it (a name in an English filing, a year in an Italian manual)."""
    if len(per_language) == 1:
        return list(per_language[0])
    merged: dict[str, Term] = {}
    for terms in per_language:
        for term in terms:
            seen = merged.get(term.text)
            if seen is None or (term.held, term.retrieved, term.corpus) > (
                seen.held,
                seen.retrieved,
                seen.corpus,
            ):
                merged[term.text] = term
    return list(merged.values())


def _by_model(hits: Sequence[Hit], scores: Mapping[str, float]) -> list[Hit]:
    """The hits the model scored, best first (ties in their order so far), then the others
    in their order: the model reorders its candidates, it never drops one."""
    position = {h.id: i for i, h in enumerate(hits)}
    scored = sorted(
        (h for h in hits if h.id in scores), key=lambda h: (-scores[h.id], position[h.id])
    )
    return scored + [h for h in hits if h.id not in scores]


def _searched(hit: Hit) -> str:
    """What the branches searched for a candidate: a fragment's search text (title, headings,
    tables as rows), an Evidence Unit's title and text."""
    record = _answer_record(hit)
    if isinstance(record, FragmentPayload):
        return search_text(record)
    return f"{record.title}\n{record.text}"


def _answer_record(hit: Hit) -> AnswerPayload:
    record = parse_payload(hit.payload, hit.id)
    if not isinstance(record, EvidencePayload | FragmentPayload):  # the scope keeps them out
        raise Unreadable(
            INDEX_UNAVAILABLE, f"point {hit.id}: a {record.record_kind} record was served"
        )
    return record


def _warn(degraded: Sequence[str]) -> None:
    if degraded:
        log.warning("answer retrieval degraded: %s", "; ".join(degraded))


def _ranks(hits: Sequence[Hit]) -> dict[str, int]:
    return {h.id: rank for rank, h in enumerate(hits, start=1)}
