"""Whether what was retrieved is about the question: the relevance check behind `found`.

A fused ranking always has a closest fragment, even for a question the corpus knows nothing
about. Two signals decide whether it is an answer or `nothing_found`:

1. **Dense similarity** — the closest fragment's cosine to the question must reach
   `answers.min_similarity` (calibrated for the embedder: docs/answers.md).
2. **Distinctive terms** — the question's names, entities and periods (capitalised tokens that
   do not merely open a sentence, acronyms, possessives, tokens holding a digit) and its rare
   words (by the index's own document frequencies under the request's condition) must occur in
   the documents the answer would come from. A name or period the corpus under the condition
   does not hold at all, or that none of the retrieved documents mentions, means the question
   is about something else ("Tesla's Q2 2023 revenue" on filings of five other companies).

Terms are matched through BM25's own analyser (the generation's encoder): the same stems,
stopwords and token ids as the sparse index, and counted by the index itself — no word list.
A word the corpus does not hold that is neither a name nor a period (an Italian question on
English documents, a paraphrase) says nothing and is not counted: the dense signal covers it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from thoth.folding import fold
from thoth.index.base import IndexStore, SparseVec

TermKind = Literal["name", "period", "rare"]
Verdict = Literal["relevant", "below_similarity", "absent_term", "unchecked"]

# A word, with an optional possessive ("Apple's", "NVIDIA’s"). Apostrophes otherwise split
# ("l'aliquota" -> "l", "aliquota"; "d'Italia" -> "d", "Italia").
_TOKEN = re.compile(r"(?P<word>[^\W_](?:[\w&.\-]*[^\W_])?)(?P<poss>['’]s\b)?")
_SENTENCE_END = re.compile(r"[.?!:;¿¡\"“«(\[]\s*$")
_YEAR = re.compile(r"(1[89]|2[0-9])[0-9]{2}")
# A word is rare when at most this share of the fragments under the condition holds it.
RARE_SHARE = 0.02


@dataclass(frozen=True)
class Term:
    text: str  # as written in the question
    kind: TermKind
    stems: tuple[int, ...]  # BM25 token ids (the generation's analyser)
    corpus: int = 0  # fragments holding every stem under the condition (capped)
    retrieved: bool = False  # held by a document the answer would come from
    # The stems of the word without its accents, when they differ ("Québec" -> "quebec"): a
    # document may write it either way, and the index keeps words as written.
    folded: tuple[int, ...] = ()
    # The glossary term held in its place ("Stati Uniti" for "USA": thoth.glossary).
    via: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "text": self.text,
            "kind": self.kind,
            "corpus": self.corpus,
            "retrieved": self.retrieved,
        }
        if self.via is not None:
            out["via"] = self.via
        return out


@dataclass(frozen=True)
class Relevance:
    """The evidence behind `found` / `nothing_found`, for diagnostics and calibration."""

    verdict: Verdict
    similarity: float | None
    min_similarity: float | None
    terms: tuple[Term, ...] = ()
    missing: tuple[str, ...] = ()  # distinctive terms the corpus or the retrieved lack
    checked: bool = True  # False: the term check is off (answers.term_check = false)
    notes: list[str] = field(default_factory=list)

    @property
    def relevant(self) -> bool:
        return self.verdict in ("relevant", "unchecked")

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "min_similarity": self.min_similarity,
            "terms": [t.as_dict() for t in self.terms],
            "missing": list(self.missing),
        }


def candidate_terms(question: str, stems: Callable[[str], Sequence[int]]) -> list[Term]:
    """Names and periods of the question by their shape, and every other content word as a
    rare-term candidate (its rarity is the index's to say). `stems` is the analyser: no stem
    means a stopword. Duplicates (same stems) are kept once."""
    out: list[Term] = []
    seen: set[tuple[int, ...]] = set()
    for m in _TOKEN.finditer(question):
        word = m.group("word").strip(".-&")
        if not word:
            continue
        ids = tuple(sorted(set(stems(word))))
        if not ids or ids in seen:
            continue
        kind = _kind(word, possessive=bool(m.group("poss")), opens=_opens(question, m.start()))
        if kind is None:
            continue
        seen.add(ids)
        folded = tuple(sorted(set(stems(fold(word)))))
        out.append(Term(word, kind, ids, folded=folded if folded != ids else ()))
    return out


def _opens(text: str, start: int) -> bool:
    """Whether the word at `start` opens a sentence (its capital says nothing then)."""
    before = text[:start]
    return not before.strip() or bool(_SENTENCE_END.search(before))


def _kind(word: str, *, possessive: bool, opens: bool) -> TermKind | None:
    if any(c.isdigit() for c in word):
        return "period"  # years, quarters, form names: 2023, Q2, 10-Q
    if len(word) < 2:
        return None
    if any(c.isupper() for c in word[1:]) or (word[0].isupper() and (possessive or not opens)):
        return "name"  # NVIDIA, iRobot, FIFA; Apple's; a capital inside a sentence
    if word[0].isupper():
        return None  # a capital that only opens the sentence: "Examine", "Esamina"
    return "rare" if len(word) > 3 else None


def check_terms(
    store: IndexStore,
    where: Mapping[str, Any],
    terms: Sequence[Term],
    retrieved_docs: Sequence[str],
    retrieved_stems: Collection[int] = (),
) -> list[Term]:
    """Count each candidate term in the index under `where` and in what was retrieved.
    Names, and periods other than years, must be held by a retrieved document; a year must
    be held by a retrieved fragment itself (`retrieved_stems`: the stems of their texts), for
    a filing mentions many years in passing ("notes due 2030") and a year asked about is the
    question's subject. A lowercase word is kept only when it is rare (held by at most
    RARE_SHARE of the fragments, and at least one)."""
    total = store.count(where)
    rare_cap = max(1, int(total * RARE_SHARE))
    docs = sorted(set(retrieved_docs))
    checked: list[Term] = []
    for term in terms:
        limit = rare_cap + 1 if term.kind == "rare" else 1
        stems = term.stems
        corpus = _holding(store, where, stems, limit)
        if not corpus and term.folded:  # "Québec" asked, "Quebec" written
            stems = term.folded
            corpus = _holding(store, where, stems, limit)
        if term.kind == "rare" and not 0 < corpus <= rare_cap:
            continue  # common, or unknown to the corpus (another language, a paraphrase)
        retrieved = bool(corpus) and bool(docs)
        if retrieved and _YEAR.fullmatch(term.text):
            retrieved = set(stems) <= set(retrieved_stems)
        elif retrieved:
            inside = {**where, "doc_id": docs if len(docs) > 1 else docs[0]}
            retrieved = _holding(store, inside, stems, 1) > 0
        checked.append(Term(term.text, term.kind, stems, corpus=corpus, retrieved=retrieved))
    return checked


def _holding(store: IndexStore, where: Mapping[str, Any], stems: Sequence[int], limit: int) -> int:
    """Fragments under `where` holding the term, by the sparse index, up to `limit`: for a
    term of several stems ("10-Q"), the count of its least held stem."""
    return min(len(store.query_sparse(SparseVec([s], [1.0]), where, limit)) for s in stems)


def judge(
    similarity: float | None,
    min_similarity: float | None,
    terms: Sequence[Term] | None,
) -> Relevance:
    """The verdict: below the similarity floor, or a name or period that the corpus or the
    retrieved documents lack, is not relevant. `terms=None`: the term signal was not
    computed. `missing` is filled whatever the verdict (calibration reads both signals)."""
    checked = tuple(terms or ())
    missing = tuple(t.text for t in checked if t.kind != "rare" and not t.retrieved)
    below = similarity is not None and min_similarity is not None and similarity < min_similarity
    verdict: Verdict
    if below:
        verdict = "below_similarity"
    elif terms is None:
        verdict = "unchecked"
    elif missing:
        verdict = "absent_term"
    else:
        verdict = "relevant"
    return Relevance(verdict, similarity, min_similarity, checked, missing, terms is not None)


__all__ = ["RARE_SHARE", "Relevance", "Term", "candidate_terms", "check_terms", "judge"]
