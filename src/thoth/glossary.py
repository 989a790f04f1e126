"""Terms that mean the same across languages: the workspace's reviewed glossary.

An Italian question over English filings shares almost no word with them: "ricavi netti" is
written "net sales", "utile netto" "net income". The dense branch bridges some of it (the
embedder is multilingual); the BM25 branch and the second stage of ranking see nothing. The
glossary lists, per entry, the words of each language that name the same thing, and a question
that uses one is searched with the others as well, each language's words in the BM25 branch of
that language::

    - it: [ricavi netti, fatturato]
      en: [net sales, revenue]
    - it: [utile netto]
      en: [net income, net earnings]

A term is matched on its stems in the language it is listed under (so "ricavo" meets "ricavi",
"revenues" meets "revenue"), as consecutive words of the question, stopwords aside; an acronym
("USA", "UN") only as written. The offline answerer matches the added terms too, choosing
what to quote. The dense branch reads the question as written. The relevance
check reads the question's own words, with one allowance: a name the retrieved documents do not
write is held when they write what the glossary says stands for it ("USA" asked, "Stati Uniti"
written). Diagnostics say which terms were matched and which added (`glossary`).

`glossary = "glossary.yaml"` in thoth.toml, reviewed in Git like the entity list.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from pydantic import RootModel, field_validator

from thoth.config import BM25_LANGUAGES
from thoth.errors import ProblemsError
from thoth.folding import fold
from thoth.index.bm25 import Bm25Encoder
from thoth.reviewed_yaml import read_list

# A word; capitals joined by "&" ("A&E", "R&D", "P&L") are one, so that an acronym of the
# glossary is never its single letters (the Italian "e" is no "A&E").
_WORD: Final = re.compile(r"\w+(?:&\w+)*")
# How much more a term of the glossary weighs than another word of the question, in the BM25
# query and in the second stage of ranking: the reviewed vocabulary names what the documents
# report ("revenue", "inventories"), a long question's other words frame it ("how does the
# distribution compare"), and prose echoes the framing. Measured on five 10-Q filings
# (benchmarks/README.md): 2 against 1.5, 3 and 4.
GLOSSARY_WEIGHT: Final = 2.0


class GlossaryEntry(RootModel[dict[str, tuple[str, ...]]]):
    """One entry: language code -> the terms of that language meaning the same thing."""

    @field_validator("root")
    @classmethod
    def _checked(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        unknown = sorted(k for k in value if k.split("-")[0] not in BM25_LANGUAGES)
        if unknown:
            raise ValueError(
                f"unknown language code(s) {', '.join(unknown)}: use one of "
                f"{', '.join(sorted(BM25_LANGUAGES))}"
            )
        cleaned = {k: tuple(" ".join(t.split()) for t in terms) for k, terms in value.items()}
        if any(not t for terms in cleaned.values() for t in terms):
            raise ValueError("an empty term: remove it")
        if sum(len(terms) for terms in cleaned.values()) < 2:
            raise ValueError("an entry needs at least two terms (a term and what it also is)")
        return cleaned


@cache
def _encoder(language: str) -> Bm25Encoder:
    return Bm25Encoder(language, 1.0)


def _acronym(word: str) -> bool:
    """An acronym ("USA", "UE", "PIL", "A&E") is matched as written, never as a lower-case
    word."""
    return len(word) >= 2 and word.isupper() and word.replace("&", "").isalpha()


# Negations, stopwords to BM25 but never to a term: "ricovero non programmato" is the
# opposite of "ricovero programmato", "non-elective" of "elective". In a term and in a question
# they are one stem of their own, whatever the language, so a term matches only where the
# question negates as the term does.
_NEGATIONS: Final = frozenset({"non", "not", "no", "senza", "without"})
_NEGATION_STEM: Final = (-1 - zlib.crc32(b"\0negation"),)


def _stems(text: str, language: str, acronyms: frozenset[str]) -> list[tuple[str, tuple[int, ...]]]:
    """`text`'s words with their stems in `language`, stopwords dropped (negations kept, as
    one stem), in order. A word of `acronyms` (the glossary's) is its own stem, as written:
    "UN" is not the Italian article "un", and a question in capitals is still stemmed."""
    encoder = _encoder(language)
    out: list[tuple[str, tuple[int, ...]]] = []
    for word in _WORD.findall(text):
        if word in acronyms:
            # Negative: never one of BM25's token ids, which are unsigned.
            out.append((word, (-1 - zlib.crc32(word.encode()),)))
            continue
        if word.casefold() in _NEGATIONS:
            out.append((word, _NEGATION_STEM))
            continue
        ids = tuple(encoder.query(fold(word)).indices)
        if ids:
            out.append((word, ids))
    return out


def _find(
    needle: Sequence[tuple[int, ...]], hay: Sequence[tuple[str, tuple[int, ...]]]
) -> list[str]:
    """The words of `hay` where the stems of `needle` occur consecutively (empty: nowhere)."""
    n = len(needle)
    stems = [ids for _, ids in hay]
    for i in range(len(hay) - n + 1 if n else 0):
        if stems[i : i + n] == list(needle):
            return [word for word, _ in hay[i : i + n]]
    return []


@dataclass(frozen=True)
class Expansion:
    """What the glossary made of a question: the terms it matched and, per language, the
    terms it adds."""

    matched: tuple[str, ...] = ()
    added: Mapping[str, tuple[str, ...]] | None = None
    # Language -> the question's words a term of that language matched.
    used: Mapping[str, frozenset[str]] | None = None
    # A question's word (case-folded) a term matched -> the other terms of that entry, any
    # language: what a document may write instead ("USA" asked, "Stati Uniti" written).
    alternatives: Mapping[str, tuple[str, ...]] | None = None

    def __bool__(self) -> bool:
        return bool(self.matched)

    def added_in(self, language: str) -> tuple[str, ...]:
        """The added terms of `language` (a code, "en-US", or Qdrant's name, "english")."""
        return (self.added or {}).get(_code(language), ())

    def terms_in(self, language: str) -> tuple[str, ...]:
        """The words of the question a term of `language` matched, then the terms of that
        language the glossary adds: the reviewed vocabulary of what the question asks."""
        used = sorted((self.used or {}).get(_code(language), frozenset()))
        return (*used, *self.added_in(language))

    def alternatives_of(self, word: str) -> tuple[str, ...]:
        """What the glossary says a document may write for the question's `word`."""
        return (self.alternatives or {}).get(word.casefold(), ())

    def as_dict(self) -> dict[str, Any]:
        return {
            "matched": list(self.matched),
            "added": {k: list(v) for k, v in (self.added or {}).items()},
        }


def _code(language: str) -> str:
    code = language.split("-")[0].casefold()
    if code in BM25_LANGUAGES:
        return code
    names = {name: c for c, name in BM25_LANGUAGES.items()}
    return names.get(language.casefold(), code)


class Glossary:
    """The reviewed glossary with its stems. Empty: nothing is ever added."""

    def __init__(self, entries: Sequence[Mapping[str, Sequence[str]]]) -> None:
        terms = [term for entry in entries for listed in entry.values() for term in listed]
        self._acronyms = frozenset(w for t in terms for w in _WORD.findall(t) if _acronym(w))
        # Per entry: (language, term, its stems in that language).
        self._entries = [
            [
                (_code(lang), term, [ids for _, ids in _stems(term, lang, self._acronyms)])
                for lang, listed in entry.items()
                for term in listed
            ]
            for entry in entries
        ]
        self._languages = sorted({lang for entry in self._entries for lang, _, _ in entry})

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def expand(self, question: str) -> Expansion:
        """The entries whose terms the question uses, and what they add: every other term
        of those entries, by language, in the glossary's order."""
        if not self._entries:
            return Expansion()
        asked = {lang: _stems(question, lang, self._acronyms) for lang in self._languages}
        matched: list[str] = []
        added: dict[str, list[str]] = {}
        used: dict[str, set[str]] = {}
        alternatives: dict[str, list[str]] = {}
        for entry in self._entries:
            hits: list[str] = []
            for lang, term, stems in entry:
                words = _find(stems, asked[lang])
                if words:
                    hits.append(term)
                    used.setdefault(lang, set()).update(w.casefold() for w in words)
                    others = [t for _, t, _ in entry if t != term]
                    for word in words:
                        known = alternatives.setdefault(word.casefold(), [])
                        known.extend(t for t in others if t not in known)
            if not hits:
                continue
            matched.extend(t for t in hits if t not in matched)
            for lang, term, _ in entry:
                if term not in hits and term not in added.get(lang, []):
                    added.setdefault(lang, []).append(term)
        return Expansion(
            tuple(matched),
            {k: tuple(v) for k, v in added.items()},
            {k: frozenset(v) for k, v in used.items()},
            {k: tuple(v) for k, v in alternatives.items()},
        )

    def question_in(self, question: str, expansion: Expansion, language: str) -> str:
        """What of `question` a text in `language` can hold, for matching words against it
        (the second stage of ranking): the terms the glossary adds in that language in place
        of the words it matched in another, and none of the stopwords of the glossary's
        languages ("quali", "sono" are no English words to look for). Without a match the
        question as written."""
        if not expansion:
            return question
        code = _code(language)
        own = (expansion.used or {}).get(code, frozenset())
        elsewhere = {
            w for lang, words in (expansion.used or {}).items() if lang != code for w in words
        }
        kept = [
            w
            for w in _WORD.findall(question)
            if not (w.casefold() in elsewhere and w.casefold() not in own) and not self.stopword(w)
        ]
        return " ".join([*kept, *expansion.added_in(code)])

    def stopword(self, word: str) -> bool:
        """Whether `word` is a stopword of one of the glossary's languages ("quali", "sono"
        next to English "which", "are"): what the second stage of ranking may leave aside in
        a question written in another language than the text it ranks."""
        return any(not _encoder(lang).query(fold(word)).indices for lang in self._languages)


NO_GLOSSARY: Final = Glossary(())


def load_glossary(root: Path, relative: str | None) -> Glossary:
    """The glossary `thoth.toml` names (`glossary = "glossary.yaml"`), checked whole."""
    if relative is None:
        return NO_GLOSSARY
    entries, _, problems = read_list(
        root,
        relative,
        GlossaryEntry,
        setting="glossary",
        what="glossary",
        example="{it: [ricavi netti], en: [net sales, revenue]}",
    )
    if problems:
        raise ProblemsError(f"{relative}: the glossary has problems", problems)
    return Glossary([e.root for e in entries])


__all__ = ["NO_GLOSSARY", "Expansion", "Glossary", "GlossaryEntry", "load_glossary"]
