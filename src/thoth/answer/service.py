"""`ask`: one question in, one answer out, logged whatever happened.

Order of work: validate the request (`KnowledgeSearch.validate`, for every branch); the first
fork (`AnalyticsBranch`, level 3): a question a reviewed catalog query computes is answered with
its figures (status "computed", a `provenance` object, no `sources`: the corpus is not searched),
one that lacks a parameter is "needs_parameter", and a store that fails is "failed"; every
other question is a text question, searched under the request's one condition; the context is
assembled under the budget; the answerer writes the text (saying first that a figure is not
available when the question asked one no query computes). A technical failure is an answer
with status "failed" that says so — never one that looks like an empty corpus.

The answer keeps what a reader needs (text, sources, status, and what the search did without:
`degraded`) apart from what an administrator needs (diagnostics). `sources` is present whenever
retrieval was attempted, even empty, and absent when it was not.

Every answer is logged in the state store's answer log. A log that cannot be written is an
ERROR on `thoth.answer` and `diagnostics["logged"] = False`: the answer is still served, and an
error being raised is never replaced by the logging one.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from thoth.answer.answerers import Answerer, AnswerModelError, Declined
from thoth.answer.context import AssembledContext, assemble_context
from thoth.answer.retrieval import KnowledgeSearch, Retrieval, SearchRequestError
from thoth.answer.scope import allowed_labels
from thoth.answer.seams import (
    AnalyticsBranch,
    NoAnalytics,
    NoPseudonymizer,
    NumericAnswer,
    Pseudonymizer,
)
from thoth.answer.sources import Source
from thoth.answer.wording import Wording, wording_for
from thoth.config import Settings
from thoth.errors import ThothError, file_access_error
from thoth.state import StateStore

log = logging.getLogger("thoth.answer")

AnswerStatus = Literal[
    "not_searched", "nothing_found", "failed", "truncated", "found", "computed", "needs_parameter"
]
BAD_REQUEST = "bad_request"
ANSWER_FAILED = "answer_failed"  # any other error: above all, the answer model failed


def new_answer_id() -> str:
    return f"ans-{secrets.token_hex(6)}"


@dataclass
class Answer:
    """What `ask` serves: text, sources and status for the reader; diagnostics apart."""

    id: str
    question: str
    text: str
    status: AnswerStatus
    sources: list[Source] | None  # None: retrieval was not attempted (absent from the JSON)
    answerer: str
    dropped: dict[str, int] = field(default_factory=lambda: {"fragments": 0, "documents": 0})
    # What the search did without (the dense branch, the relevance floor ...): the answer is
    # served, but not by the whole engine. Empty when nothing degraded or nothing was searched.
    degraded: list[str] = field(default_factory=list)
    error_code: str | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)
    # The numeric path: how the figures were computed (always present when status is
    # "computed": query id, catalog revision, parameters, SQL, row count, data date), and the
    # figures themselves (columns with label, unit and kind; rows). None elsewhere (absent).
    provenance: dict[str, Any] | None = None
    figures: dict[str, Any] | None = None
    # status needs_parameter: {query_id, missing: [...], invalid: {name: why}, candidates:
    # [query ids that fit equally]}, for a caller that asks the user for exactly that.
    needs_parameter: dict[str, Any] | None = None
    # What the answerer received, fragment by fragment (context_entries): served only when
    # asked for (`tht ask --show-context`, `show_context` over HTTP and MCP), never logged.
    context: list[dict[str, Any]] | None = None

    def as_dict(self, show_context: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "question": self.question,
            "text": self.text,
            "status": self.status,
        }
        if self.sources is not None:
            data["sources"] = [s.as_dict() for s in self.sources]
        if self.provenance is not None:
            data["provenance"] = self.provenance
        if self.figures is not None:
            data["figures"] = self.figures
        if self.needs_parameter is not None:
            data["needs_parameter"] = self.needs_parameter
        data.update(
            answerer=self.answerer,
            dropped=dict(self.dropped),
            degraded=list(self.degraded),
            error_code=self.error_code,
            diagnostics=self.diagnostics,
        )
        if show_context:
            data["context"] = list(self.context or [])
        return data


# Request fields that name documents: a request carrying one is for the text path.
DOCUMENT_FILTERS: Final = ("source", "doc_format")


class AnswerService:
    def __init__(
        self,
        settings: Settings,
        search: KnowledgeSearch,
        answerer: Answerer,
        state: StateStore,
        analytics: AnalyticsBranch | None = None,
        pseudonymizer: Pseudonymizer | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self._search = search
        self._answerer = answerer
        self._state = state
        self._analytics: AnalyticsBranch = analytics or NoAnalytics()
        # The composition root passes the identity explicitly; None means the same.
        self._pseudonymizer: Pseudonymizer = pseudonymizer or NoPseudonymizer()
        self._wording: Wording = wording_for(settings.language)
        self._on_close = on_close  # what the composition root opened for this service

    def ask(
        self,
        question: str,
        *,
        instructions: str | None = None,
        caller: str | None = None,
        **filters: Any,
    ) -> Answer:
        """Answer one question; every call is logged in the state store's answer_log, with
        the calling system (`caller`) when it came through the service.

        Raises SearchRequestError (bad request) and FileAccessError (the operating system
        refused a path), both logged as failed first. A failed search, routing or model
        answer is an Answer with status "failed" and its code (a model reply refused as
        `uncited_answer`, `echoed_context`, `citation_outside_context`; the model server
        failing, `answer_failed`): one outcome, one shape, from every surface."""
        attempt = _Attempt(new_answer_id(), question)
        request: dict[str, Any] = {"instructions": instructions, **filters}
        try:
            answer = self._answer(attempt, instructions, filters)
        except (ThothError, OSError) as exc:
            # An OSError no layer below worded (a permission denied under .thoth/) is logged
            # and raised as the FileAccessError that names its path.
            error = exc if isinstance(exc, ThothError) else file_access_error(exc)
            code = BAD_REQUEST if isinstance(error, SearchRequestError) else ANSWER_FAILED
            if isinstance(error, AnswerModelError) and error.code != AnswerModelError.code:
                code = error.code  # the model's reply refused, and why
            log.error("answer %s failed [%s]: %s", attempt.id, code, error)
            # A log failure is reported by _log and never replaces the error being raised.
            failure = attempt.failure(str(error), code, self._answerer.name)
            self._log(failure, _storable(request), caller)
            if isinstance(error, AnswerModelError):
                return failure  # an answer that failed: the answer object, as for a search
            if error is exc:
                raise
            raise error from exc
        self._log(answer, request, caller)
        return answer

    def _log(self, answer: Answer, request: dict[str, Any], caller: str | None) -> None:
        """Record the answer in the answer log; `diagnostics["logged"]` says whether it was.
        A state store that cannot record it is an ERROR on `thoth.answer`, never a reason to
        withhold the answer (or to replace the error being reported)."""
        answer.diagnostics["logged"] = True  # as stored: the row exists only if this holds
        try:
            self._state.log_answer(
                answer.id,
                self.settings.workspace,
                answer.question,
                request,
                answer.status,
                answer.as_dict(),
                answer.error_code,
                caller=caller,
            )
        except ThothError as exc:  # StateError: the state store words every database failure
            answer.diagnostics["logged"] = False
            log.error(
                "answer %s (status %s) was not logged in the answer log: %s -> check that the "
                "state store ([state].url) is reachable and writable; this answer is missing "
                "from `tht answers log`",
                answer.id,
                answer.status,
                exc,
            )

    def close(self) -> None:
        self._search.close()
        if self._on_close is not None:
            self._on_close()

    # -- steps ---------------------------------------------------------------------------

    def _answer(
        self, attempt: _Attempt, instructions: str | None, filters: dict[str, Any]
    ) -> Answer:
        question = attempt.question
        # Every branch is validated, the numeric one included: before anything is decided.
        request = self._search.validate(question, filters)
        named = [f for f in DOCUMENT_FILTERS if request.get(f)]
        asked = allowed_labels(self.settings, request)  # what every link of it carries
        numeric = (
            # The caller asked for documents by source or format: the text path answers, as
            # asked, even a question the store could compute.
            NumericAnswer(
                "not_covered",
                diagnostics={"reason": f"the request names documents ({', '.join(named)})"},
            )
            if named
            else self._analytics.answer(question, asked)
        )
        attempt.numeric_degraded = tuple(numeric.degraded)
        attempt.numeric_diagnostics = numeric.diagnostics
        if numeric.outcome != "not_covered":
            return self._numeric(attempt.id, question, numeric, request, instructions)
        retrieval = attempt.retrieval = self._search.search(question, **request)
        if retrieval.status == "failed":
            return self._failed(attempt.id, question, retrieval, numeric.degraded)
        context = attempt.context = assemble_context(
            retrieval, self.settings.answers.context_budget_chars, self._wording
        )
        replied = self._answerer.answer(
            question, context, instructions=instructions, pseudonymizer=self._pseudonymizer
        )
        diagnostics = _diagnostics(retrieval, context)
        diagnostics["analytics"] = numeric.diagnostics
        w = self._wording
        status: AnswerStatus = context.status
        sources = [replace(s, labels=tuple(asked)) for s in context.sources]
        if isinstance(replied, Declined):
            # The answerer read the context and none of it answers: nothing_found, with no
            # source (none answers), the reason said; what it read stays in the diagnostics.
            found_nothing = w.no_overlap if replied.verdict == "no_terms" else w.model_found_nothing
            text = found_nothing.format(documents=len(context.sources))
            status, sources = "nothing_found", []
            diagnostics["answer_model"] = {
                "verdict": replied.verdict,
                "read": len(context.entries),
            }
        else:
            text = replied
        if numeric.figure_requested:
            # A figure no catalog query computes: said first, never invented from the text.
            below = numeric.below_threshold
            if below is not None:
                said = w.figure_below_threshold.format(
                    query=below["query_id"],
                    score=f"{below['score']:.3f}",
                    threshold=f"{below['threshold']:.3f}",
                )
            elif numeric.figure_hedged:
                said = w.figure_maybe_not_available
            else:
                said = w.figure_not_available
            text = f"{said}\n\n{text}"
        return Answer(
            id=attempt.id,
            question=question,
            text=text,
            status=status,
            sources=sources,
            answerer=self._answerer.name,
            dropped={
                "fragments": context.dropped_fragments,
                "documents": context.dropped_documents,
            },
            degraded=[*retrieval.degraded, *numeric.degraded],
            diagnostics=diagnostics,
            context=context_entries(context),
        )

    def _numeric(
        self,
        answer_id: str,
        question: str,
        numeric: NumericAnswer,
        request: dict[str, Any],
        instructions: str | None,
    ) -> Answer:
        # Numbers are never taken from text: no corpus search, and no sources key at all.
        diagnostics: dict[str, Any] = {"analytics": numeric.diagnostics, "filters": request}
        if numeric.outcome == "computed":
            worded = self._answerer.answer_figures(
                question, numeric, instructions=instructions, pseudonymizer=self._pseudonymizer
            )
            # What of the figures the model did not see: a reader's over_masked report names it.
            diagnostics["masked"] = list(worded.masked)
            return Answer(
                id=answer_id,
                question=question,
                text=worded.text,
                status="computed",
                sources=None,
                answerer=self._answerer.name,
                diagnostics=diagnostics,
                provenance=numeric.provenance,
                figures=numeric.figures(),
                degraded=list(numeric.degraded),
            )
        if numeric.outcome == "failed":
            log.error(
                "answer %s: the numeric answer failed [%s]: %s",
                answer_id,
                numeric.error_code,
                numeric.text,
            )
        needs = numeric.outcome == "needs_parameter"
        return Answer(
            id=answer_id,
            question=question,
            text=numeric.text,
            status="needs_parameter" if needs else "failed",
            sources=None,
            answerer="none",
            error_code=numeric.error_code,
            diagnostics=diagnostics,
            degraded=list(numeric.degraded),
            needs_parameter={
                "query_id": numeric.query_id,
                "missing": list(numeric.missing),
                "invalid": dict(numeric.invalid),
                "candidates": list(numeric.candidates),
            }
            if needs
            else None,
        )

    def _failed(
        self,
        answer_id: str,
        question: str,
        retrieval: Retrieval,
        numeric_degraded: Sequence[str] = (),
    ) -> Answer:
        code = retrieval.error_code or "unknown"
        log.error("answer %s: the search failed [%s]: %s", answer_id, code, retrieval.error)
        return Answer(
            id=answer_id,
            question=question,
            text=self._wording.search_failed.format(code=code, error=retrieval.error),
            status="failed",
            sources=[],  # retrieval was attempted: present, and empty
            answerer="none",
            degraded=[*retrieval.degraded, *numeric_degraded],
            error_code=code,
            diagnostics=_diagnostics(retrieval, None),
        )


@dataclass
class _Attempt:
    """How far one `ask` got: what a failure record can still tell."""

    id: str
    question: str
    retrieval: Retrieval | None = None
    context: AssembledContext | None = None
    # What the numeric fork decided and degraded (a model that could not route): a failure
    # still says it.
    numeric_degraded: tuple[str, ...] = ()
    numeric_diagnostics: dict[str, Any] | None = None

    def failure(self, message: str, code: str, answerer: str) -> Answer:
        # Sources stay present once retrieval ran, absent before: the same rule as answers.
        sources = (
            None if self.retrieval is None else list(self.context.sources if self.context else [])
        )
        return Answer(
            id=self.id,
            question=self.question,
            text=message,
            status="failed",
            sources=sources,
            answerer=answerer,
            degraded=[
                *(() if self.retrieval is None else self.retrieval.degraded),
                *self.numeric_degraded,
            ],
            error_code=code,
            diagnostics=self._diagnostics(),
        )

    def _diagnostics(self) -> dict[str, Any]:
        found = {} if self.retrieval is None else _diagnostics(self.retrieval, self.context)
        if self.numeric_diagnostics is not None:
            found["analytics"] = self.numeric_diagnostics
        return found


def _diagnostics(retrieval: Retrieval, context: AssembledContext | None) -> dict[str, Any]:
    """Everything an administrator needs to see why these sources: kept apart from them."""
    markers = {e.fragment.id: e.marker for e in context.entries} if context else {}
    return {
        "route": retrieval.route.as_dict(),
        "filters": retrieval.filters,
        "generation": retrieval.generation,
        "degraded": list(retrieval.degraded),
        "error": retrieval.error,
        # Both signals behind found / nothing_found (thoth.answer.relevance).
        "best_similarity": retrieval.best_similarity,
        "relevance": retrieval.relevance.as_dict() if retrieval.relevance else None,
        # One BM25 list per language the question was encoded in (docs/documents.md).
        "bm25_languages": list(retrieval.bm25_languages),
        # The entities the question names and the scope they gave (thoth.entities).
        "entities": retrieval.entities.as_dict() if retrieval.entities else None,
        # Whether the relevance floor was calibrated on this workspace's questions.
        "floor": retrieval.floor,
        # What the workspace glossary matched in the question and added to its search.
        "glossary": retrieval.glossary.as_dict() if retrieval.glossary else None,
        "counts": {
            "retrieved": len(retrieval.fragments),
            **retrieval.counts,
            **(context.counts() if context else {}),
        },
        "fragments": [
            {
                "rank": f.rank,
                "id": f.id,
                "doc_id": f.doc_id,
                "record_kind": f.record_kind,
                "score": round(f.score, 6),
                "similarity": _rounded(f.dense_similarity),  # what the relevance floor measures
                "dense_rank": f.dense_rank,
                "bm25_rank": f.bm25_rank,
                # The language of the BM25 list `bm25_rank` is in (None: the generation's own).
                "bm25_language": getattr(f.record, "bm25_language", None),
                # Its rank after fusion, before the second stage (None: not reranked).
                "fused_rank": f.fused_rank,
                # The reranking model's score ([reranker]; None: no model, or not scored).
                "model_score": _rounded(f.model_score),
                "floor": f.floor,
                "marker": markers.get(f.id),  # None: dropped for lack of space
                "snippet": snippet(f.record.text),
            }
            for f in retrieval.fragments
        ],
    }


SNIPPET_CHARS = 160


def context_entries(context: AssembledContext) -> list[dict[str, Any]]:
    """Each fragment the answerer received, whole, in the order it read them: its marker, the
    ids `tht docs show` takes (doc_id) and the index holds (id), where it is, its score per
    branch, and the text as given (with its caveats)."""
    out = []
    for entry in context.entries:
        f = entry.fragment
        record = f.record
        out.append(
            {
                "marker": entry.marker,
                "id": f.id,
                "doc_id": f.doc_id,
                "title": f.title,
                "record_kind": f.record_kind,
                "page": getattr(record, "page", None),
                "heading_path": list(getattr(record, "heading_path", ()) or ()),
                "score": round(f.score, 6),
                "dense_rank": f.dense_rank,
                "similarity": _rounded(f.dense_similarity),
                "bm25_rank": f.bm25_rank,
                "fused_rank": f.fused_rank,
                "model_score": _rounded(f.model_score),
                "text": entry.text,
            }
        )
    return out


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The start of a fragment's text on one line, cut at a word with an ellipsis."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: limit - 1].rsplit(" ", 1)[0] + "…"


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _storable(request: dict[str, Any]) -> dict[str, Any]:
    """A refused request may hold anything: keep it readable rather than fail to log it."""
    return {
        str(k): v if isinstance(v, str | int | float | bool | type(None) | list) else repr(v)
        for k, v in request.items()
    }
