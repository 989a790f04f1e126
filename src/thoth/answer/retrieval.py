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

import inspect
import logging
import typing
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from types import NoneType, UnionType
from typing import Any, Literal

from thoth.answer.routing import ChannelRouter, Route
from thoth.config import Settings
from thoth.documents.records import ANSWER_KINDS, CURATED_KINDS, RECORD_DOCUMENT
from thoth.embed.base import Embedder, EmbedderError, Vectors
from thoth.errors import RequestError, ThothError
from thoth.index.base import (
    Hit,
    IndexStore,
    IndexUnavailable,
    Match,
    SparseVec,
    deterministic_top,
)
from thoth.index.bm25 import Bm25Encoder
from thoth.index.generations import IndexBackend
from thoth.search.outcome import (
    EMBEDDER_MISMATCH,
    GENERATION_NOT_ACTIVE,
    INDEX_UNAVAILABLE,
    MAX_MESSAGE,
    STATE_UNAVAILABLE,
)
from thoth.search.service import StateView

log = logging.getLogger("thoth.answer")

Status = Literal["found", "nothing_found", "failed"]
NO_RELEVANCE_FLOOR = "relevance floor not applied: no dense similarity"


class SearchRequestError(RequestError):
    """The request is malformed: unknown field, label, channel or source, or a wrong type."""

    exit_code = 2


@dataclass(frozen=True)
class RetrievedFragment:
    id: str
    rank: int  # 1 = closest
    score: float  # fused (or BM25-only) score, after the curated weight
    record_kind: str
    doc_id: str
    title: str
    payload: dict[str, Any]
    dense_rank: int | None  # rank in the dense branch under the same condition, if there
    bm25_rank: int | None
    floor: bool  # added by the verbatim floor


@dataclass
class Retrieval:
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

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["route"] = self.route.as_dict()
        return data


class _Failed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class KnowledgeSearch:
    def __init__(
        self, settings: Settings, state: StateView, backend: IndexBackend, embedder: Embedder
    ) -> None:
        self.settings = settings
        self._state = state
        self._backend = backend
        self._embedder = embedder
        answers = settings.answers
        self.router = ChannelRouter(
            settings.channels,
            embedder,
            answers.routing.channel_threshold,
            language=settings.language,
        )
        self._stores: dict[str, IndexStore] = {}
        self._channel_counts: dict[tuple[str, str], set[str]] = {}
        self._encoders: dict[tuple[str, float], Bm25Encoder] = {}

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
        allowed = self._allowed(request)
        # Readable before the generation is known, for a failure report; the condition itself
        # is built once the generation says which labels it holds.
        _, readable = self._condition(request, allowed, ())
        route = Route(
            channel=channel,
            channel_source="request" if channel else "all",
            threshold=self.router.threshold,
        )
        gen_id: str | None = None
        degraded: list[str] = []
        try:
            gen = self._generation()
            gen_id = gen.id
            base, readable = self._condition(request, allowed, _labels_of(gen))
            store = self._store(gen.id)
            self._check_embedder(gen)
            sparse = self._encoder(gen).query(text)
            # The one embedding call of the question: retrieval and routing share it.
            vector: Vectors | None = None
            dense: list[float] | None = None
            try:
                vector = self._embedder.embed_query(text)
            except EmbedderError as exc:
                degraded.append(f"dense: {exc}")
                route = replace(route, embedder_error=str(exc))
            if vector is not None:
                dense = self._dense(vector, gen)
            if channel is None:
                route = self._route(text, self._channels(store, gen.id, base), vector, route)
                if vector is not None and route.embedder_error is not None:
                    degraded.append(f"routing: keywords ({route.embedder_error})")
            where = dict(base)
            if route.channel is not None:
                where["channel"] = route.channel
                readable["channel"] = route.channel
            fragments, counts, best = self._retrieve(store, dense, sparse, where)
            if fragments and best is None and self.settings.answers.min_similarity is not None:
                degraded.append(NO_RELEVANCE_FLOOR)
        except _Failed as exc:
            return self._failed(route, readable, gen_id, exc.code, str(exc), degraded)
        except IndexUnavailable as exc:
            self._drop_stores()  # the next search reopens (and reports again if still broken)
            return self._failed(route, readable, gen_id, INDEX_UNAVAILABLE, str(exc), degraded)
        _warn(degraded)
        return Retrieval(
            status="found" if fragments else "nothing_found",
            fragments=fragments,
            route=route,
            filters=readable,
            generation=gen_id,
            degraded=degraded,
            counts=counts,
            best_similarity=best,
        )

    def validate(self, question: str, request: Mapping[str, Any]) -> dict[str, Any]:
        """The request `search` would run, checked without touching the state store or the
        index: a non-empty question, known fields of the right type (`parse_request`), and
        labels, channel and source that are declared. Returns the fields given, normalised;
        raises SearchRequestError naming what is wrong. Callers that do not search (the
        numeric branch) validate with it too, so no path skips a check."""
        if not question.strip():
            raise SearchRequestError("the question is empty -> ask something")
        parsed = parse_request(request)
        self._check_names(parsed)
        self._allowed(parsed)
        return parsed

    def close(self) -> None:
        self._drop_stores()

    # -- the condition -----------------------------------------------------------------

    def _allowed(self, request: Mapping[str, Any]) -> list[str]:
        """The caller's labels (or the default ones): never empty."""
        answers = self.settings.answers
        requested = request.get("labels")
        allowed = sorted(set(answers.default_labels if requested is None else requested))
        if not allowed:
            raise SearchRequestError(
                "no labels requested and answers.default_labels is empty: nothing may be "
                f"served -> pass labels (vocabulary: {', '.join(answers.labels)})"
            )
        return allowed

    def _condition(
        self, request: Mapping[str, Any], allowed: list[str], present: Collection[str]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The one condition (without the routed channel) and its readable form. `present`:
        the labels the generation holds, which may include labels removed from the vocabulary
        since it was built; every label that is not allowed is excluded, whichever list
        names it."""
        excluded = sorted((set(self.settings.answers.labels) | set(present)) - set(allowed))
        where: dict[str, Any] = {
            "workspace_id": self.settings.workspace,
            "record_kind": list(ANSWER_KINDS),
            # Fail closed: at least one allowed label and none outside the allowed set; a point
            # without labels matches no `any_of`, so it is never served.
            "labels": Match(any_of=tuple(allowed), none_of=tuple(excluded)),
        }
        readable: dict[str, Any] = {
            "workspace_id": self.settings.workspace,
            "record_kind": list(ANSWER_KINDS),
            "labels": {"allowed": allowed, "excluded": excluded, "unlabelled": "never served"},
            "channel": None,
        }
        for name in ("channel", "source", "year", "doc_format"):
            value = request.get(name)
            if value is not None:
                where[name] = value
                readable[name] = value
        return where, readable

    def _check_names(self, request: Mapping[str, Any]) -> None:
        """Labels, channel and source must be declared: an unknown one is an error, never an
        empty result."""
        vocabulary = list(self.settings.answers.labels)
        labels = request.get("labels")
        if labels is not None:
            if not labels:
                raise SearchRequestError(
                    "request field labels is an empty list -> omit it to use "
                    "answers.default_labels, or list labels from the vocabulary "
                    f"({', '.join(vocabulary)})"
                )
            unknown = sorted(set(labels) - set(vocabulary))
            if unknown:
                raise SearchRequestError(
                    f"unknown label(s) {', '.join(unknown)} -> the label vocabulary "
                    f"(answers.labels) is: {', '.join(vocabulary)}"
                )
        declared = {
            "channel": [c.name for c in self.settings.channels],
            "source": [s.name for s in self.settings.sources],
        }
        for name, names in declared.items():
            value = request.get(name)
            if value is not None and value not in names:
                raise SearchRequestError(
                    f"unknown {name} {value!r} -> declared {name}s: "
                    f"{', '.join(names) or 'none (declare them in thoth.toml)'}"
                )

    # -- steps -------------------------------------------------------------------------

    def _generation(self) -> Any:
        workspace = self.settings.workspace
        try:
            gen = self._state.active_generation(workspace)
        except ThothError as exc:
            raise _Failed(STATE_UNAVAILABLE, f"state store: {exc}") from exc
        if gen is None:
            raise _Failed(
                GENERATION_NOT_ACTIVE,
                f"workspace {workspace} has no active index generation -> run "
                "`tht docs sync` or `tht workspace preprocess evidence`",
            )
        return gen

    def _store(self, gen_id: str) -> IndexStore:
        if gen_id not in self._stores:
            # Another generation is active now: the handles of the old ones are released (a
            # rollback to one of them reopens it). Sealed generations are immutable, so the
            # active one's handle stays valid for as long as it stays active.
            self._drop_stores()
            self._stores[gen_id] = self._backend.open(gen_id)
        return self._stores[gen_id]

    def _drop_stores(self) -> None:
        for gen_id in list(self._stores):
            self._stores.pop(gen_id).close()

    def _check_embedder(self, gen: Any) -> None:
        expected = (gen.config or {}).get("embedder")
        if expected and expected != self._embedder.identity:
            raise _Failed(
                EMBEDDER_MISMATCH,
                f"generation {gen.id} was embedded with {expected}, this process uses "
                f"{self._embedder.identity} -> configure the same [embedding] or rebuild",
            )

    def _dense(self, vector: Vectors, gen: Any) -> list[float]:
        dim = (gen.config or {}).get("dim", self._embedder.dim)
        if vector.shape != (1, dim):
            raise _Failed(
                EMBEDDER_MISMATCH,
                f"{self._embedder.identity} returned shape {vector.shape}, generation "
                f"{gen.id} expects dimension {dim}",
            )
        return [float(x) for x in vector[0]]

    def _encoder(self, gen: Any) -> Bm25Encoder:
        bm25 = (gen.config or {}).get("bm25") or {}
        key = (str(bm25.get("language", self.settings.language)), float(bm25.get("avg_len", 1.0)))
        if key not in self._encoders:
            self._encoders[key] = Bm25Encoder(*key)
        return self._encoders[key]

    def _channels(self, store: IndexStore, gen_id: str, where: Mapping[str, Any]) -> set[str]:
        """Declared channels with at least one point under `where`, per generation."""
        key = (gen_id, repr(sorted(where.items())))
        if key not in self._channel_counts:
            if any(g != gen_id for g, _ in self._channel_counts):
                self._channel_counts.clear()  # a new generation: older counts are moot
            self._channel_counts[key] = {
                c.name for c in self.settings.channels if store.count({**where, "channel": c.name})
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
        store: IndexStore,
        dense: list[float] | None,
        sparse: SparseVec,
        where: dict[str, Any],
    ) -> tuple[list[RetrievedFragment], dict[str, int], float | None]:
        answers = self.settings.answers
        depth = max(self.settings.index.prefetch_limit, 4 * answers.top_k)
        candidates, dense_ranks, bm25_ranks, best = self._query(store, dense, sparse, where, depth)
        if (
            best is not None
            and answers.min_similarity is not None
            and best < answers.min_similarity
        ):
            # Relevance floor: a fused ranking always has a "closest" fragment, even for a
            # question the corpus knows nothing about. Below the floor that is not an answer.
            return [], {"candidates": len(candidates), "below_min_similarity": 1}, best
        weighted = _weighted(candidates, answers.curated_weight)
        top = weighted[: answers.top_k]
        floor_ids: set[str] = set()
        floor = min(answers.verbatim_floor, answers.top_k)
        missing = floor - sum(_kind(h) == RECORD_DOCUMENT for h in top)
        if missing > 0:
            taken = {h.id for h in top}
            pool = [h for h in weighted if _kind(h) == RECORD_DOCUMENT and h.id not in taken]
            if len(pool) < missing:
                # Deeper, same condition, documents only: the floor never crosses the filter.
                only_docs = {**where, "record_kind": RECORD_DOCUMENT}
                extra, _, _, _ = self._query(store, dense, sparse, only_docs, depth)
                seen = taken | {h.id for h in pool}
                pool += [h for h in extra if h.id not in seen]
            added = pool[:missing]
            floor_ids = {h.id for h in added}
            top = _make_room(top, len(added), answers.top_k) + added
        fragments = [
            RetrievedFragment(
                id=hit.id,
                rank=rank,
                score=hit.score,
                record_kind=_kind(hit),
                doc_id=str(hit.payload.get("doc_id", "")),
                title=str(hit.payload.get("title", "")),
                payload=hit.payload,
                dense_rank=dense_ranks.get(hit.id),
                bm25_rank=bm25_ranks.get(hit.id),
                floor=hit.id in floor_ids,
            )
            for rank, hit in enumerate(top, start=1)
        ]
        counts = {
            "candidates": len(candidates),
            **{kind: sum(f.record_kind == kind for f in fragments) for kind in ANSWER_KINDS},
            "floor_added": len(floor_ids),
        }
        return fragments, counts, best

    def _query(
        self,
        store: IndexStore,
        dense: list[float] | None,
        sparse: SparseVec,
        where: dict[str, Any],
        depth: int,
    ) -> tuple[list[Hit], dict[str, int], dict[str, int], float | None]:
        """Fused candidates (BM25 alone without a dense vector), each branch's ranks and the
        best dense similarity."""
        # Branch lists are re-sorted by (score desc, id) like the fused one: equal scores
        # always rank the same way.
        bm25 = store.query_sparse(sparse, where, depth) if sparse.indices else []
        bm25 = deterministic_top(bm25, depth)
        bm25_ranks = _ranks(bm25)
        if dense is None:
            return bm25, {}, bm25_ranks, None
        dense_hits = deterministic_top(store.query_dense(dense, where, depth), depth)
        best = dense_hits[0].score if dense_hits else None
        if not sparse.indices:  # only stopwords: the sparse branch has nothing to say
            return dense_hits, _ranks(dense_hits), bm25_ranks, best
        fused = store.query_hybrid(dense, sparse, where, limit=depth, prefetch_limit=depth)
        return fused, _ranks(dense_hits), bm25_ranks, best

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
        )


def _labels_of(gen: Any) -> list[str]:
    """The labels a generation records in its counts (every label present in it); empty for a
    generation built before it recorded them."""
    labels = (gen.counts or {}).get("labels") or []
    return [str(label) for label in labels] if isinstance(labels, list) else []


def _warn(degraded: Sequence[str]) -> None:
    if degraded:
        log.warning("answer retrieval degraded: %s", "; ".join(degraded))


def _kind(hit: Hit) -> str:
    return str(hit.payload.get("record_kind", ""))


def _ranks(hits: Sequence[Hit]) -> dict[str, int]:
    return {h.id: rank for rank, h in enumerate(hits, start=1)}


def _weighted(hits: Sequence[Hit], weight: float) -> list[Hit]:
    """Curated hits get `score * (1 + weight)`; sorted by (score desc, id) so ties always
    break the same way."""
    if weight:
        hits = [
            Hit(h.id, h.score * (1 + weight), h.payload) if _kind(h) in CURATED_KINDS else h
            for h in hits
        ]
    return sorted(hits, key=lambda h: (-h.score, h.id))


def _make_room(top: list[Hit], needed: int, top_k: int) -> list[Hit]:
    """`top` with room for `needed` floor chunks: free slots first, then the lowest-ranked
    curated hits leave."""
    drop = max(0, len(top) + needed - top_k)
    kept = list(top)
    for index in range(len(kept) - 1, -1, -1):
        if drop == 0:
            break
        if _kind(kept[index]) in CURATED_KINDS:
            del kept[index]
            drop -= 1
    return kept


# -- the request ---------------------------------------------------------------------------


def request_fields() -> tuple[str, ...]:
    """The accepted request parameters: the keyword-only parameters of KnowledgeSearch.search.
    Derived, never listed by hand, so a new filter cannot be silently dropped by a caller."""
    params = inspect.signature(KnowledgeSearch.search).parameters.values()
    return tuple(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)


def parse_request(data: Mapping[str, Any]) -> dict[str, Any]:
    """Check names against request_fields() and values against the annotations of
    KnowledgeSearch.search; None means "not given". Returns the fields given, normalised."""
    accepted = request_fields()
    unknown = sorted(str(k) for k in data if k not in accepted)
    if unknown:
        raise SearchRequestError(
            f"unknown request field(s) {', '.join(unknown)} -> accepted: {', '.join(accepted)}"
        )
    hints = typing.get_type_hints(KnowledgeSearch.search)
    parsed: dict[str, Any] = {}
    for name, value in data.items():
        if value is None:
            continue
        parsed[name] = _typed(name, value, hints[name])
    return parsed


def _typed(name: str, value: Any, annotation: Any) -> Any:
    options = (
        [a for a in typing.get_args(annotation) if a is not NoneType]
        if isinstance(annotation, UnionType) or typing.get_origin(annotation) is typing.Union
        else [annotation]
    )
    for option in options:
        origin = typing.get_origin(option)
        if option is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if option is str and isinstance(value, str):
            if not value.strip():
                raise SearchRequestError(f"request field {name} is empty -> omit it or fill it")
            return value.strip()
        # A bare string is a Sequence[str] too: refused, it would split into characters.
        if (
            origin is Sequence
            and typing.get_args(option) == (str,)
            and isinstance(value, list | tuple)
            and all(isinstance(v, str) for v in value)
        ):
            return [v.strip() for v in value]
    expected = " or ".join(_type_name(o) for o in options)
    raise SearchRequestError(
        f"request field {name}: expected {expected}, got {type(value).__name__} {value!r}"
    )


def _type_name(annotation: Any) -> str:
    if typing.get_origin(annotation) is Sequence:
        return "a list of strings"
    return getattr(annotation, "__name__", str(annotation))
