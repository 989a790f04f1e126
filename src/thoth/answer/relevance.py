"""Whether what was retrieved is about the question: the relevance check behind `found`.

A fused ranking always has a closest fragment, even for a question the corpus knows nothing
about. Two signals decide whether it is an answer or `nothing_found`:

1. **Dense similarity** — the closest fragment's cosine to the question must reach
   `answers.min_similarity` (calibrated for the embedder: docs/answers.md). A question in
   none of the index's languages is held to the floor less the embedder's drop across
   languages, when the terms it shares with the passages carry its meaning (`carried_across`).
   Its words the corpus does not hold are checked by no analyser (`unknown_words`): it is
   `other_language` when the passages hold nothing else of it that tells one passage from
   another — only periods, names every document in scope holds (`everywhere`), or nothing.
2. **Distinctive terms** — the question's names, entities and periods (capitalised tokens that
   do not merely open a sentence, acronyms, possessives, tokens holding a digit) must occur in
   the documents the answer would come from. A name or period the corpus under the condition
   does not hold at all, or that none of the retrieved documents mentions, means the question
   is about something else ("Tesla's Q2 2023 revenue" on filings of five other companies).
3. **Distinctive words** — the question's other words that are rare in the corpus (held by at
   most DISTINCTIVE_SHARE of the fragments under the request's condition, before any channel
   routing) or that the corpus does not hold at all: those the fragments the answer would
   quote do not hold must not carry UNMATCHED_SHARE or more of the question's meaning, as the
   embedder reads it (`meaning_shares`: how far the question moves without each word).
   Being in the domain is no answer: "may pets enter the emergency department?" shares only
   the domain's frequent words ("emergency department") with the manual it retrieves, and its
   subject ("pets"), which carries the question, is nowhere; the question's framing
   ("latest", "analyze the relationship") is as absent from the filings that answer, but
   carries little. Without the embedder the unmatched words are weighed by their BM25 inverse
   document frequency against the distinctive terms held. Under MIN_CORPUS fragments no word
   some fragment holds is rare, and only the words none holds are weighed (`small_corpus`).

Terms are matched through BM25's own analyser (the generation's encoder): the same stems,
stopwords and token ids as the sparse index, and counted by the index itself — no word list.
A word the corpus does not hold counts only when the question is written in the analyser's
language (`speaks`: a share of its words are the analyser's stopwords) and the answer's first
fragment is in it (the caller's `in_language`); an Italian question on English documents says
nothing by its unknown words and is left to the dense signal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from thoth.folding import fold
from thoth.index.base import Exclude, IndexStore, SparseVec

if TYPE_CHECKING:
    import numpy.typing as npt

TermKind = Literal["name", "period", "rare", "unknown"]
Verdict = Literal[
    "relevant", "below_similarity", "absent_term", "unmatched_terms", "other_language", "unchecked"
]

# A word, with an optional possessive ("Apple's", "NVIDIA’s"). Apostrophes otherwise split
# ("l'aliquota" -> "l", "aliquota"; "d'Italia" -> "d", "Italia").
_TOKEN = re.compile(r"(?P<word>[^\W_](?:[\w&.\-]*[^\W_])?)(?P<poss>['’]s\b)?")
_SENTENCE_END = re.compile(r"[.?!:;¿¡\"“«(\[]\s*$")
_YEAR = re.compile(r"(1[89]|2[0-9])[0-9]{2}")
# A year written short: an apostrophe before two digits ("del '73", "anni '80", "the '90s").
_SHORT_YEAR = re.compile(r"['’](?P<yy>[0-9]{2})s?")
# A word is distinctive (it weighs in the verdict) when at most this share holds it: above it,
# the word is the domain's own vocabulary ("pronto soccorso" in an emergency department's
# manuals), which every in-domain question shares with the corpus.
DISTINCTIVE_SHARE = 0.05
# Below this many fragments no word some fragment holds is rare (every word held twice is
# above the share): held words are not weighed. A word no fragment holds still is, for the
# corpus's size says nothing of a subject it never writes ("animali" among 6 public pages).
MIN_CORPUS = round(1 / DISTINCTIVE_SHARE)
# The question is in the analyser's language when at least this share of its words are the
# analyser's stopwords (an Italian question has "il", "di", "per"; on an English analyser
# almost none of its words are stopwords).
STOPWORD_SHARE = 0.15
# Unmatched distinctive words decide (`[answers] distinctive_terms = "decide"`) when together
# they carry at least this share of the question's meaning, as the embedder reads it
# (meaning_shares): the subject a passage lacks ("animali domestici") carries a third or more,
# the question's framing ("latest", "relationship", "analizza") a few hundredths each. Chosen
# on the tuning sets side by side (demo, 10-Q, FAQ paraphrases; benchmarks/README.md): 0.25
# and 0.3 make as many errors, and 0.25 refuses more of the unanswerable questions.
UNMATCHED_SHARE = 0.25
# meaning_shares embeds the other words (beside the lacking ones) this many at a time. One:
# a call of n short queries costs the bundled model less than n calls of one on an idle
# machine, but about as much under load (2 cores, load 8: cost per text), so a text the stop
# then leaves out is never worth it; the first other word is embedded with the lacking ones,
# as the measure needs it whenever they carry anything (benchmarks/README.md, "embed_queries").
MEANING_BATCH = 1
# The fragments holding a term read to tell whether every document holds it (`everywhere`).
EVERYWHERE_LIMIT = 2000
# Why a question in another language than the sources is nothing_found, and what to do.
OTHER_LANGUAGE = (
    "the question is in another language than the sources: its words listed in `unchecked` "
    "could not be checked against the passages, and the passages hold nothing else of it but "
    "periods, or names every document in scope writes, which vouch for no passage -> ask in "
    "the sources' language, or add a glossary entry giving those words as the sources write them"
)
# What the diagnostics say when the request's condition leaves fewer than MIN_CORPUS fragments.
SMALL_CORPUS = (
    "only {visible} fragment(s) are visible under the request's condition, below {min_corpus} "
    "(MIN_CORPUS): the question's words some fragment holds were not weighed, for none can be "
    "rare among so few; those no fragment holds were -> ask with the labels of more sources, "
    "or add sources, for the word check to weigh every word"
)


@dataclass(frozen=True)
class Term:
    text: str  # as written in the question
    kind: TermKind
    stems: tuple[int, ...]  # BM25 token ids (the generation's analyser)
    corpus: int = 0  # fragments holding every stem under the condition (capped)
    retrieved: bool = False  # held by a document the answer would come from
    # The stems of the word without its accents, when they differ ("Québec" -> "quebec"): a
    # document may write it either way, and the index keeps words as written. For a year
    # written short ("'73"), the 20NN reading beside the 19NN one in `stems`.
    folded: tuple[int, ...] = ()
    # The glossary term held in its place ("Stati Uniti" for "USA": thoth.glossary).
    via: str | None = None
    # A distinctive word's BM25 inverse document frequency under the condition (0: the word
    # does not weigh in the verdict), and whether the fragments the answer would quote hold it.
    weight: float = 0.0
    matched: bool = False
    # The share of the question's meaning the word carries for the embedder (meaning_shares);
    # None: not measured (the word is matched, `distinctive_terms = "report"`, or the
    # embedder failed); an upper bound when the measure stopped early (meaning_shares).
    share: float | None = None

    @property
    def held(self) -> bool:
        """Held where it counts: a word by the quoted fragments, a name or period by the
        retrieved documents (a year by the fragments: check_terms)."""
        return self.matched if self.kind in ("rare", "unknown") else self.retrieved

    @property
    def lacking(self) -> bool:
        """A distinctive word the quoted fragments do not hold: what `outweighed` weighs."""
        return self.kind in ("rare", "unknown") and not self.matched

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "text": self.text,
            "kind": self.kind,
            "corpus": self.corpus,
            "retrieved": self.retrieved,
        }
        if self.weight:
            out["weight"] = round(self.weight, 3)
            out["matched"] = self.held
        if self.share is not None:
            out["share"] = round(self.share, 3)
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
    # The question's words no analyser of the index could check: it is in none of the
    # index's languages and the corpus does not hold them (`other_language`).
    unchecked: tuple[str, ...] = ()
    # The fragments visible under the request's condition (in a language's analyser) when
    # fewer than MIN_CORPUS: the words they hold were not weighed (check_terms).
    small_corpus: int | None = None

    @property
    def relevant(self) -> bool:
        return self.verdict in ("relevant", "unchecked")

    @property
    def distinctive(self) -> tuple[Term, ...]:
        """The terms that weigh in the verdict: names, periods and distinctive words."""
        return tuple(t for t in self.terms if t.weight > 0)

    def as_dict(self) -> dict[str, Any]:
        weighed = self.distinctive
        return {
            "verdict": self.verdict,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "min_similarity": self.min_similarity,
            "terms": [t.as_dict() for t in self.terms],
            "missing": list(self.missing),
            # The distinctive terms the answer's fragments hold and those they do not, and
            # what each side weighs (BM25 idf): the held side must not be outweighed.
            "matched": [t.text for t in weighed if t.held],
            "unmatched": [t.text for t in weighed if not t.held],
            "weight": {
                "matched": round(sum(t.weight for t in weighed if t.held), 3),
                "unmatched": round(sum(t.weight for t in weighed if not t.held), 3),
            },
            "unchecked": list(self.unchecked),
            "reason": OTHER_LANGUAGE if self.verdict == "other_language" else None,
            "small_corpus": None
            if self.small_corpus is None
            else SMALL_CORPUS.format(visible=self.small_corpus, min_corpus=MIN_CORPUS),
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
        short = _SHORT_YEAR.fullmatch(question[max(0, m.start() - 1) : m.end()])
        if short is not None:
            # The year in full, as documents write it: 19NN, else 20NN (the second chance).
            yy = short.group("yy")
            seen.add(ids)
            century = tuple(sorted(set(stems(f"19{yy}"))))
            later = tuple(sorted(set(stems(f"20{yy}"))))
            out.append(Term(short.group(), "period", century, folded=later))
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


def meaning_shares(
    question: str,
    embed: Callable[[list[str]], npt.ArrayLike],
    lacking: Collection[str] | None = None,
    *,
    whole: npt.ArrayLike | None = None,
) -> dict[str, float]:
    """What each word of the question carries of its meaning for the embedder: the question
    embedded without the word moves away from the question embedded whole by 1 - cosine; a
    word's share is its move over the sum of every word's (each distinct word, two letters or
    more, case aside). A question's subject moves it far, its framing words ("latest",
    "compare", "analizza") hardly: the embedder, not a list, says which is which. `embed`:
    queries' unit-length vectors, one row per text (Embedder.embed_queries). Keys are the
    words folded to lowercase.

    `lacking` (the unmatched words, lowercase): only their share is wanted, against
    UNMATCHED_SHARE. They are measured first, then the other words, heaviest-looking first
    (a digit or a capital, then the longest), only while the lacking words still hold
    UNMATCHED_SHARE of what is measured: every move is >= 0, so once they fall under it no
    other word can lift them back, and the verdict is the one every word's move gives.
    Stopped early, the shares are upper bounds over the words measured. `whole`: the
    question's own vector when the caller has it already (the search's), one embedding less.

    The texts go to the embedder in batches (one call of n texts costs less than n calls of
    one): the question and the lacking words with the first MEANING_BATCH other words, then
    MEANING_BATCH at a time while the measure goes on. A batch may embed a few words the
    measure then stops before: they are left out, so the shares are those of measuring one
    word at a time (tests/answer/test_meaning_batches.py)."""
    import numpy as np

    spelled = [m.group("word") for m in _TOKEN.finditer(question) if len(m.group("word")) > 1]
    words = list(dict.fromkeys(w.lower() for w in spelled))
    wanted = set(lacking) if lacking is not None else set(words)
    first = [w for w in words if w in wanted]
    others: list[str] = []
    if lacking is not None:
        looks = {w.lower(): any(c.isdigit() or c.isupper() for c in w) for w in spelled}
        others = sorted(
            (w for w in words if w not in wanted), key=lambda w: (not looks[w], -len(w))
        )
    rests = {w: _without(question, w) for w in first + others}
    # The texts in the order the measure may need them (a word that is the whole question
    # has no rest and no move); the first batch holds every lacking word's.
    queue = [rests[w] for w in first + others if rests[w]]
    done = 0  # texts of the queue embedded
    vectors: dict[str, Any] = {}
    asked: Any = None if whole is None else np.asarray(whole, dtype=np.float64)

    def fetch() -> None:
        nonlocal asked, done
        size = MEANING_BATCH + (sum(1 for w in first if rests[w]) if not done else 0)
        texts = queue[done : done + size]
        rows = np.asarray(embed(texts if asked is not None else [question, *texts]))
        if asked is None:
            asked, rows = np.asarray(rows[0], dtype=np.float64), rows[1:]
        vectors.update(zip(texts, rows, strict=True))
        done += len(texts)

    def move(word: str) -> float | None:
        rest = rests[word]
        if not rest:
            return None
        while rest not in vectors:
            fetch()
        return max(0.0, 1.0 - float(np.dot(asked, vectors[rest])))

    moves: dict[str, float] = {}
    for word in first:
        if (m := move(word)) is not None:
            moves[word] = m
    carried = sum(moves.values())  # what the lacking words carry
    measured = carried
    for word in others:
        if carried == 0.0 or carried < UNMATCHED_SHARE * measured:
            break  # the lacking words' share can only fall from here
        if (m := move(word)) is not None:
            moves[word] = m
            measured += m
    total = sum(moves.values())
    return {w: (m / total if total else 0.0) for w, m in moves.items()}


def _without(question: str, word: str) -> str:
    """The question without every occurrence of `word` (and its possessive), spaces folded."""
    pattern = r"(?<!\w)" + re.escape(word) + r"(?:['’]s)?(?!\w)"
    return " ".join(re.sub(pattern, " ", question, flags=re.IGNORECASE).split())


def speaks(question: str, stems: Callable[[str], Sequence[int]]) -> bool:
    """Whether the question is written in the analyser's language: at least STOPWORD_SHARE of
    its words (two letters or more, no digit) are the analyser's stopwords (no stem)."""
    words = [
        w
        for m in _TOKEN.finditer(question)
        if len(w := m.group("word")) > 1 and not any(c.isdigit() for c in w)
    ]
    if not words:
        return False
    return sum(not stems(w) for w in words) >= STOPWORD_SHARE * len(words)


def idf(held: int, total: int) -> float:
    """BM25's inverse document frequency of a term held by `held` of `total` fragments."""
    return math.log(1 + (total - held + 0.5) / (held + 0.5))


def check_terms(
    store: IndexStore,
    where: Mapping[str, Any],
    terms: Sequence[Term],
    retrieved_docs: Sequence[str],
    retrieved_stems: Collection[int] = (),
    *,
    corpus_where: Mapping[str, Any] | None = None,
    in_language: bool = False,
    visible: int | None = None,
) -> list[Term]:
    """Count each candidate term in the index and in what was retrieved.
    Names, and periods other than years, must be held by a retrieved document (under `where`);
    a year must be held by a retrieved fragment itself (`retrieved_stems`: the stems of their
    texts), for a filing mentions many years in passing ("notes due 2030") and a year asked
    about is the question's subject. A lowercase word is kept only when it is distinctive:
    held by at most DISTINCTIVE_SHARE of the fragments under `corpus_where` (the request's
    condition before routing; default `where`), or by none when the question is written in
    the analyser's language (`in_language`, see `speaks`); it is matched when the quoted
    fragments hold it. Under MIN_CORPUS fragments only the words none holds are kept: no held
    word can be rare among so few, but a word no fragment holds is lacking whatever the
    corpus's size. Every kept term distinctive under `corpus_where` weighs its idf there.
    `visible`: the fragments under `corpus_where`, when the caller has counted them."""
    corpus_at = where if corpus_where is None else corpus_where
    total = store.count(corpus_at) if visible is None else visible
    cap = max(1, int(total * DISTINCTIVE_SHARE))
    docs = sorted(set(retrieved_docs))
    quoted = set(retrieved_stems)
    checked: list[Term] = []
    for term in terms:
        word = term.kind == "rare"
        stems = term.stems
        where_counted = corpus_at if word else where
        limit = cap + 1 if word else 1
        corpus = _holding(store, where_counted, stems, limit)
        if not corpus and term.folded:  # "Québec" asked, "Quebec" written
            stems = term.folded
            corpus = _holding(store, where_counted, stems, limit)
        if word and (
            corpus > cap
            or (not corpus and not in_language)
            or (total < MIN_CORPUS and (corpus or not total))
        ):
            # The domain's vocabulary; unknown in another language (left to dense); held in a
            # corpus too small for any word to be rare in it; or nothing visible to lack it.
            continue
        retrieved = bool(corpus) and bool(docs)
        if retrieved and (_YEAR.fullmatch(term.text) or _SHORT_YEAR.fullmatch(term.text)):
            retrieved = set(stems) <= quoted
        elif retrieved:
            inside = {**where, "doc_id": docs if len(docs) > 1 else docs[0]}
            retrieved = _holding(store, inside, stems, 1) > 0
        if word:
            weight = idf(corpus, total) if total else 0.0
        else:
            # A name or period is the question's subject by its shape, however frequent: held,
            # it weighs its idf (counted up to a quarter of the corpus, where idf levels off).
            reach = max(cap + 1, total // 4 + 1)
            held = _holding(store, corpus_at, stems, reach) if corpus else 0
            weight = idf(held, total) if held and total else 0.0
        checked.append(
            Term(
                term.text,
                "unknown" if word and not corpus else term.kind,
                stems,
                corpus=corpus,
                retrieved=retrieved,
                weight=weight,
                matched=bool(corpus) and set(stems) <= quoted,
            )
        )
    return checked


def unknown_words(store: IndexStore, where: Mapping[str, Any], terms: Sequence[Term]) -> list[str]:
    """The lowercase words among `terms` that no fragment under `where` holds (as written or
    without accents): in a question in another language than the index, what no term signal
    can check (check_terms leaves them out)."""
    return [
        t.text
        for t in terms
        if t.kind == "rare"
        and not _holding(store, where, t.stems, 1)
        and not (t.folded and _holding(store, where, t.folded, 1))
    ]


def everywhere(store: IndexStore, documents: Mapping[str, Any], stems: Sequence[int]) -> bool:
    """Whether every document under `documents` (a condition on document fragments) holds the
    term: then it tells no passage from another (the one company of a corpus of its filings).
    Up to EVERYWHERE_LIMIT fragments holding it are read; past that, False (it still counts)."""
    if not stems or not store.count(documents):
        return False
    holders: set[str] | None = None
    for stem in stems:
        hits = store.query_sparse(SparseVec([stem], [1.0]), documents, EVERYWHERE_LIMIT)
        docs = {str(h.payload.get("doc_id") or "") for h in hits} - {""}
        holders = docs if holders is None else holders & docs
    if not holders:
        return False
    return store.count({**documents, "doc_id": Exclude(tuple(sorted(holders)))}) == 0


def _holding(store: IndexStore, where: Mapping[str, Any], stems: Sequence[int], limit: int) -> int:
    """Fragments under `where` holding the term, by the sparse index, up to `limit`: for a
    term of several stems ("10-Q"), the count of its least held stem."""
    return min(len(store.query_sparse(SparseVec([s], [1.0]), where, limit)) for s in stems)


def outweighed(terms: Sequence[Term]) -> bool:
    """Whether the distinctive words the quoted fragments lack make the question another's:
    when their share of the question's meaning is measured (meaning_shares), together at
    least UNMATCHED_SHARE of it; unmeasured (no embedder), when their idf outweighs that of
    the distinctive terms held."""
    lacking = [t for t in terms if t.lacking]
    if not lacking:
        return False
    if all(t.share is not None for t in lacking):
        return sum(t.share or 0.0 for t in lacking) >= UNMATCHED_SHARE
    return sum(t.weight for t in lacking) > sum(t.weight for t in terms if t.held)


def carried_across(
    question: str,
    terms: Sequence[Term],
    embed: Callable[[list[str]], npt.ArrayLike],
    *,
    whole: npt.ArrayLike | None = None,
) -> bool:
    """Whether the distinctive terms the answer's fragments hold carry the question's meaning:
    together UNMATCHED_SHARE or more of it for the embedder (meaning_shares), the share that,
    lacking, makes a question another's. A question in another language than the passages
    shares with them only names, numbers and loanwords ("DRG", "4.2", "grouper"): when those
    carry it, they vouch for a passage the embedder reads less close across the languages; a
    shared framing word beside a subject the passages never write ("hours" of "visiting hours
    for relatives") does not. Nothing held: False, nothing embedded."""
    held = {t.text.lower() for t in terms if t.held}
    if not held:
        return False
    shares = meaning_shares(question, embed, held, whole=whole)
    return sum(shares.get(w, 0.0) for w in held) >= UNMATCHED_SHARE


def judge(
    similarity: float | None,
    min_similarity: float | None,
    terms: Sequence[Term] | None,
    *,
    decide_unmatched: bool = False,
    language_drop: float = 0.0,
    unchecked: Sequence[str] = (),
    carried: bool = True,
    small_corpus: int | None = None,
) -> Relevance:
    """The verdict: below the similarity floor, a name or period that the corpus or the
    retrieved documents lack, or distinctive words the quoted fragments lack outweighing those
    they hold, is not relevant. `terms=None`: the term signal was not computed. `missing` is
    filled whatever the verdict (calibration reads both signals): the absent names and
    periods, and the unmatched distinctive words when they outweigh the matched ones
    (`outweighed`).
    `decide_unmatched` ([answers] distinctive_terms = "decide"): only then do unmatched words
    make the verdict; otherwise they are reported and the verdict is the other signals'.
    `language_drop`: the question is in another language than the passages and its shared
    terms carry it (`carried_across`): the floor in effect is `min_similarity` less the drop
    the embedder shows across languages (BUNDLED_LANGUAGE_DROP, docs/answers.md).
    `unchecked`: the words of a question in none of the index's languages that the corpus does
    not hold, so no term signal checked them; `carried`: whether the passages hold anything of
    the question that tells one passage from another (a distinctive word, a glossary term, a
    name not every document in scope holds; a period says when, not what). Words unchecked
    and nothing carried: `other_language`, for the verdict would be the similarity's alone.
    `small_corpus`: the fragments visible when fewer than MIN_CORPUS (the diagnostics say
    the words they hold were not weighed)."""
    if min_similarity is not None and language_drop:
        min_similarity = round(min_similarity - language_drop, 4)
    checked = tuple(terms or ())
    missing = tuple(t.text for t in checked if t.kind in ("name", "period") and not t.retrieved)
    unmatched = tuple(t.text for t in checked if t.lacking)
    if not outweighed(checked):
        unmatched = ()
    below = similarity is not None and min_similarity is not None and similarity < min_similarity
    verdict: Verdict
    if below:
        verdict = "below_similarity"
    elif terms is None:
        verdict = "unchecked"
    elif missing:
        verdict = "absent_term"
    elif unmatched and decide_unmatched:
        verdict = "unmatched_terms"
    elif unchecked and not carried:
        verdict = "other_language"
    else:
        verdict = "relevant"
    return Relevance(
        verdict,
        similarity,
        min_similarity,
        checked,
        missing + unmatched,
        terms is not None,
        unchecked=tuple(unchecked),
        small_corpus=small_corpus,
    )


__all__ = [
    "DISTINCTIVE_SHARE",
    "MIN_CORPUS",
    "OTHER_LANGUAGE",
    "SMALL_CORPUS",
    "UNMATCHED_SHARE",
    "Relevance",
    "Term",
    "candidate_terms",
    "carried_across",
    "check_terms",
    "everywhere",
    "idf",
    "judge",
    "meaning_shares",
    "outweighed",
    "speaks",
    "unknown_words",
]
