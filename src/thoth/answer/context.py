"""Context assembly under a budget, and the honesty floor that depends on what survived it.

Fragments enter the context in rank order, each as its reading text (text + every caveat of
its page or unit, joined by `reading_text` only) under a numbered citation marker. The marker
is the position of the fragment's source (its document, or its FAQ row) in the answer's
sources, so [n] means the same thing in the context, in the answer text and in the sources
list. A fragment that does not fit
in what is left of the budget is dropped and counted, and the following (smaller) ones are still
tried, so the budget is used: with any fragment dropped the status is "truncated". When none fits
at all, the context is empty but the evidence existed: the honesty floor says that, never
"nothing found".

The honesty floor is computed here, after the budget, because only here is it known whether
the evidence survived.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from thoth.answer.retrieval import Retrieval, RetrievedFragment
from thoth.answer.sources import Source, aggregate_sources, source_key
from thoth.answer.wording import Wording
from thoth.documents.records import reading_text
from thoth.glossary import Expansion

ContextStatus = Literal["found", "nothing_found", "truncated"]
_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class ContextEntry:
    marker: int  # [n]: 1-based position of the fragment's source (document, FAQ row) in `sources`
    fragment: RetrievedFragment
    text: str  # reading_text(payload): the fragment's text and its caveats

    @property
    def caveats(self) -> tuple[str, ...]:
        return tuple(self.fragment.record.caveats)

    def render(self) -> str:
        f = self.fragment
        return f"[{self.marker}] {f.title or f.doc_id} ({f.doc_id})\n{self.text}"


@dataclass(frozen=True)
class AssembledContext:
    """What the answerer may read: the entries that fitted and what was left out."""

    status: ContextStatus
    entries: tuple[ContextEntry, ...]
    sources: tuple[Source, ...]  # of the entries, in marker order
    retrieved: int  # fragments the search returned
    dropped_fragments: int
    dropped_documents: int  # documents none of whose fragments fitted
    budget_chars: int
    used_chars: int
    # What the workspace glossary says the question's terms are called in the documents'
    # languages (thoth.glossary): the extractive answerer matches them too, as retrieval did.
    glossary: Expansion | None = None

    def render(self) -> str:
        return _SEPARATOR.join(e.render() for e in self.entries)

    def counts(self) -> dict[str, int]:
        return {
            "context_fragments": len(self.entries),
            "dropped_fragments": self.dropped_fragments,
            "dropped_documents": self.dropped_documents,
            "context_chars": self.used_chars,
            "budget_chars": self.budget_chars,
        }


def assemble_context(retrieval: Retrieval, budget_chars: int, wording: Wording) -> AssembledContext:
    """Fill the budget in rank order: a fragment that does not fit is dropped (and counted),
    and the next ones are still tried. `retrieval` must not be a failed one (a failure is
    reported, never assembled)."""
    if retrieval.status == "failed":
        raise ValueError("a failed retrieval has no context: report the failure instead")
    ordered = sorted(retrieval.fragments, key=lambda f: f.rank)
    markers: dict[tuple[str, str], int] = {}
    entries: list[ContextEntry] = []
    dropped: list[RetrievedFragment] = []
    used = 0
    for fragment in ordered:
        # Rank order means a source's first kept fragment is its best kept one, so numbering
        # sources (documents, FAQ rows) as they first enter is exactly aggregate_sources' order.
        key = source_key(fragment)
        marker = markers.get(key, len(markers) + 1)
        entry = ContextEntry(marker, fragment, reading_text(fragment.record, wording.caveat_label))
        cost = len(entry.render()) + (len(_SEPARATOR) if entries else 0)
        if used + cost > budget_chars:
            dropped.append(fragment)
            continue
        markers[key] = marker
        entries.append(entry)
        used += cost
    status: ContextStatus = "truncated" if dropped else "found" if entries else "nothing_found"
    return _context(
        status,
        entries,
        retrieval,
        budget_chars,
        used,
        dropped=len(dropped),
        dropped_docs=len({f.doc_id for f in dropped} - {doc for doc, _ in markers}),
    )


def _context(
    status: ContextStatus,
    entries: list[ContextEntry],
    retrieval: Retrieval,
    budget: int,
    used: int,
    *,
    dropped: int,
    dropped_docs: int,
) -> AssembledContext:
    sources = aggregate_sources(e.fragment for e in entries)
    # The markers were numbered on the way; the shared aggregation must agree with them.
    assert [(s.doc_id, s.row or "") for s in sources] == list(
        dict.fromkeys(source_key(e.fragment) for e in entries)
    )
    return AssembledContext(
        status=status,
        entries=tuple(entries),
        sources=tuple(sources),
        retrieved=len(retrieval.fragments),
        dropped_fragments=dropped,
        dropped_documents=dropped_docs,
        budget_chars=budget,
        used_chars=used,
        glossary=retrieval.glossary,
    )


def honesty_floor(context: AssembledContext, wording: Wording) -> list[str]:
    """The lines a caller's instructions can neither remove nor override, for a model given a
    context: caveats reported unsoftened, an answer grounded in the context (or NOT_IN_CONTEXT
    alone), a figure for the period its source states, and what was dropped for lack of space.
    An empty context reaches no model: its answer is the fixed wording (thoth.answer.answerers
    .unanswered)."""
    lines = [
        wording.floor_heading,
        wording.floor_caveats,
        wording.floor_ground,
        wording.floor_periods,
    ]
    if context.dropped_fragments:
        counts = {"fragments": context.dropped_fragments, "documents": context.dropped_documents}
        lines.append(wording.floor_truncated.format(**counts))
    return lines


def system_prompt(
    instructions: str | None, context: AssembledContext | None, wording: Wording
) -> str:
    """The caller's instructions (or the default ones), then the honesty floor when retrieval
    ran. With no context (no retrieval) the instructions stay exactly the caller's."""
    base = instructions if instructions is not None else wording.default_instructions
    if context is None:
        return base
    return base.rstrip() + "\n\n" + "\n".join(honesty_floor(context, wording))


def user_prompt(question: str, context: AssembledContext, wording: Wording) -> str:
    return f"{wording.question_heading} {question}\n\n{wording.context_heading}\n{context.render()}"
