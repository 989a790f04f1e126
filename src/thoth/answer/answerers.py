"""Answerers: turn an assembled context into the answer's text.

- `ExtractiveAnswerer` (the offline default, no model): quotes the retrieved sentences and table
  rows that hold the question's distinctive terms (weighted by how rare they are in the context,
  a table row or a unit with a figure preferred; a row's length is its name and cells, not the
  headers spelled beside them), a table row spelled out with its header (the period) and
  section, a row quoted for its section alone bringing the section's other rows (the breakdown
  asked), a table row a chosen quote already gives (all its amounts, or its section and label:
  the filing's restatements) left out, each quote with its [n] marker and page; puts a
  source's warning right next to any quoted sentence whose number the warning mentions, then
  lists every caveat verbatim.
- `ModelAnswerer` (OpenAI-compatible or Anthropic): system prompt = the caller's instructions
  + the honesty floor; user message = question + numbered context. A model failure is an
  error naming provider, model and server: never retried, never replaced by the extractive
  answer (that would hide the failure behind a different kind of answer).

`make_answerer(settings)` is the one place the configuration picks one.
"""

from __future__ import annotations

import html
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from itertools import zip_longest
from typing import Any, Final, Literal, Protocol

from thoth.answer.context import AssembledContext, ContextEntry, system_prompt, user_prompt
from thoth.answer.rerank import Stems, term_function
from thoth.answer.seams import NumericAnswer, Pseudonymizer
from thoth.answer.wording import NOT_IN_CONTEXT, Wording, wording_for
from thoth.config import BM25_LANGUAGES, Settings
from thoth.errors import ThothError
from thoth.figures import check as check_figures
from thoth.figures import last_digit_unit, statement_cell
from thoth.glossary import Expansion
from thoth.llm.client import LLMError, TextClient, text_client
from thoth.markup import markdown_table, table_cells
from thoth.periods import (
    asks_a_quarter,
    is_quarter_term,
    period_phrases,
    span_without_quarter,
    without_periods,
)

MAX_QUOTES = 5
# A quantitative question is answered by several figures ("the main contributors to net
# income": revenue, operating income, interest, tax), each a short row of a statement: past the
# first MAX_QUOTES, up to this many more table rows or units holding a figure may be quoted
# (the same share of the best score applies). Measured on the 10-Q filings: 22 -> 29 of 103
# reviewed figures in the offline answer (EN and IT alike); on SQuAD-it 11 answers of 100 gain a
# quote, the gold span in the answer unchanged (79). At eight fragments (top_k) more rows pass
# the share: 5 -> 8 took EN 50 -> 57, IT 51 -> 58 (10: 60 / 58, 15: 61 / 59), the median
# answer 10 -> 13 quotes (1,700 -> 2,070 characters); SQuAD-it unchanged (80 gold spans of 100).
MAX_FIGURE_QUOTES = 8
# No fragment fills the quotes: past this many from one fragment, its further units wait until
# the other fragments' units above the share of the best are taken (a statement's dozen short
# rows, each holding one asked word, took every quote from the sentence giving the asked
# figure); a fragment alone still fills them. Rows a quoted section brings are apart.
# Measured on the 10-Q filings: Italian 38 -> 45 of 103 reviewed figures in the answer,
# English 40 unchanged; SQuAD-it unchanged (79 gold spans of 100).
MAX_QUOTES_PER_FRAGMENT = 5
# A spelled-out row's length, for the length normalisation: its section and label, and this
# many words per cell (a value and the word that tells it apart: 1 let a short row of another
# company's statement pass the share of the best; the whole header, 5 or more, made a statement
# row as long as a paragraph).
CELL_WORDS = 2
# A section's rows quoted with one of them quoted for the section alone: at most this many.
SECTION_ROWS = 8
_TOTAL_WORD = re.compile(r"^\s*total[ei]?\b", re.IGNORECASE)  # "Total", Italian "Totale"
# A quote must score at least this share of the best one: a weak match next to a strong one is
# noise (a sentence that shares one common word with the question). Rows and sentences are not
# scored on one scale (a row's length is its label and CELL_WORDS per cell, a sentence's all its
# words): a short row holding the asked words outscores every sentence several times over, and
# a sentence giving figures in MD&A or a note ("obligations totaling $11.15 billion") fell under
# the row's share. So a sentence giving a figure is held to the best sentence's share instead,
# when that best sentence itself passes the best unit's: sentences are answers here, and are
# measured among themselves. A sentence without a figure (a table's introduction) and sentences
# that all fall under the row (a story under "Research and development") keep the best unit's
# share. Measured on the 10-Q filings (benchmarks/README.md): figures in the offline answer,
# tuning EN 68 -> 69 of 103 (IT 62 unchanged), validation 39 -> 41 of 101.
KEEP_SHARE = 0.3
# A sentence or row holding a figure weighs this much more: the questions an extractive answer
# serves best ask for quantities, and a figure with the asked terms around it is the answer.
FIGURE_WEIGHT = 2.0  # measured on the sec10q contexts: 1.5 and 2.0 alike, 2.0 with length norm
LENGTH_NORM = 0.5  # BM25's b: how much a unit's length discounts its score
# Units are taken in the order of score / (1 + RANK_DECAY * n), n the fragment's rank from 0:
# an eighth fragment's unit must weigh a third more than one of the first to come before it.
# Measured on the sec10q contexts at top_k 8 (benchmarks/README.md): 0.05 quoted the most
# figures (as a score factor, 0.03, 0.08, 0.15 and none quoted fewer).
RANK_DECAY = 0.05
OTHER_ENTITY = 0.25  # a unit of a fragment holding none of the question's entities weighs this
# A sentence ends at . ! ? ; and a space, but not after an initial or an abbreviation written
# with them ("U.S. dollar", "e.g. the"): a quote must not start in the middle of a sentence.
# Nor after a period the next word opens in lower case, with a digit or a parenthesis: an
# abbreviation ("Amazon.com, Inc. alleging", "U.S. Patent No. 7,177,798", "Epic Games, Inc.
# (“Epic”) filed").
_SENTENCE_END = re.compile(
    r"(?<=[.!?;])(?<!\b[A-Za-z]\.)(?<!\b[A-Za-z]\.[A-Za-z]\.)(?<!\.(?=\s+[a-z\d(]))\s+"
)
_MARKUP = re.compile(r"^[\s#>*\-|]+|[\s|*]+$")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_AMOUNT = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")  # "1,234.5", "42.5"
_WORD = re.compile(r"\w+")
_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")
_LIST_ITEM = re.compile(r"^(?:[-*+•]|\d+[.)])\s")
# The opening row of a roll-forward: what the changes below it add to.
_OPENING: Final = re.compile(r"(?:balances?|beginning|opening)\b", re.IGNORECASE)
# A figure: an amount, a percentage, a number with thousands separators or decimals (a year or a
# day is not one).
_FIGURE = re.compile(r"[$€£]\s?\(?\d|\d\s?%|\d{1,3}(?:[.,]\d{3})+|\d[.,]\d")
_YEAR = re.compile(r"(?:1[89]|2\d)\d\d")
_PAGE_HEAD = re.compile(r"(?i)pages?|pagin[ae]|pag\.?")  # a table of contents' column
# A row giving the share of the row above: "Percentage of total net sales", "% of revenue",
# "As a percentage of net revenue", "Percentuale sui ricavi".
_SHARE_ROW = re.compile(r"(?i)(?:as an? )?(?:percentage|percent|%|percentuale) (?:of|on|su\w*)\b")
_NOTE = re.compile(r"^\(.*\)$")  # "(In millions)": a table's unit, not a column or a row
_QUESTION_TOKEN = re.compile(r"\w[\w\-]*")
# Adjectives the language's stemmer gives the stem of the noun or verb they come from
# ("effective" and "effects": "effect"): the answerer keeps them apart (_adjectives_apart).
_DERIVED_ADJECTIVE: Final = {"english": re.compile(r"\b\w{3,}(?<!e)ive(?:s|ly)?\b", re.IGNORECASE)}


class AnswerModelError(LLMError, ThothError):
    """The answer model failed; the message names provider, model and server."""


class CitationOutsideContext(AnswerModelError):
    """The model cited a marker no document of its context carries."""

    code = "citation_outside_context"


class UncitedAnswer(AnswerModelError):
    """The model answered from a non-empty context without citing any of it."""

    code = "uncited_answer"


class EchoedContext(AnswerModelError):
    """The model copied its numbered context back instead of answering from it."""

    code = "echoed_context"


# "[2]", "[1, 3]", "[1; 2]": the markers the answer prompt asks the model to cite with.
_CITATION = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")


def check_citations(reply: str, context: AssembledContext, model: str) -> None:
    """Every [n] of `reply` names a document of the numbered context; otherwise the reply
    cites a source the model never received, and is refused. A reply that cites nothing of a
    non-empty context is refused too: nothing ties it to the sources it would be served with
    (a small model echoing its instructions, or prose from its own memory); so is a reply
    that copies the context back, document headers and all."""
    markers = {entry.marker for entry in context.entries}
    if _copies_a_header(html.unescape(reply), context):
        # "[1] Title (source:path)" is how the prompt presents a document, never how an
        # answer cites one: the reply is the context copied back (seen with a 270M model).
        raise EchoedContext(
            f"the answer model {model} copied its context back (a line such as "
            f"{context.entries[0].render().split(chr(10), 1)[0]!r} is in its reply): the "
            "answer is not served -> ask again, or use a model that follows the answer "
            "instructions"
        )
    cited = _cited(reply)
    outside = sorted({n for n in cited if n not in markers})
    if markers and not cited:
        raise UncitedAnswer(
            f"the answer model {model} cited none of the {len(markers)} documents of its "
            "context (no [n] marker): an answer not tied to its sources is not served -> ask "
            "again, or use a model that follows the citation instructions"
        )
    if not outside:
        return
    allowed = f"[1] to [{max(markers)}]" if markers else "none (the context was empty)"
    raise CitationOutsideContext(
        f"the answer model {model} cited {', '.join(f'[{n}]' for n in outside)}, which no "
        f"document of its context carries (markers {allowed}): the answer is not served -> "
        "ask again, or use a model that follows the citation instructions"
    )


def _cited(text: str) -> list[int]:
    """The [n] markers a text cites, in order: "[1, 3]" and "[1; 2]" are two each."""
    return [int(n) for m in _CITATION.finditer(text) for n in re.split(r"[,;]", m[1])]


def _copies_a_header(reply: str, context: AssembledContext) -> bool:
    """Whether `reply` (unescaped: llama-cpp-python's chat template HTML-escapes the prompt,
    so a copy reads "d&#39;America") holds a line shaped like the prompt's document headers:
    "[n] Title (source:path)" with one of the context's sources — under any marker and with
    any path, for a copy may pair a title with another document's [n] or id (both seen)."""
    sources = {e.fragment.doc_id.split(":", 1)[0] for e in context.entries}
    if not sources:
        return False
    names = "|".join(re.escape(s) for s in sorted(sources))
    # A path may hold spaces ("filings:docs/2023 Q3 INTC.pdf"): up to the line's last ")".
    header = re.compile(rf"^\s*\[\d+\] .+ \((?:{names}):[^\n]+\)\s*$", re.MULTILINE)
    return header.search(reply) is not None


def mark_other_periods(
    question: str, reply: str, context: AssembledContext, wording: Wording
) -> str:
    """The offline answer's period rule, checked on a model's reply. Asked about a quarter, a
    figure of the reply that the documents it cites (all of the context when its sentence cites
    none) hold only in units stating a year or a longer span and no quarter is another period's:
    it is listed after the reply with the period its source states, and when every figure of
    the reply found in the context is, the answer opens by saying so. Figures are read and
    matched as the agent's are (thoth.figures: "$81.8 billion" is held by "81,797" in
    millions); one the model computed is its own, and not checked here. The model's words stay
    as written: the check adds, it never edits (a model that said the period already is only
    confirmed)."""
    if not asks_a_quarter(question):
        return reply
    units = [
        (entry.marker, unit) for entry in context.entries for unit in quotable_units(entry.text)
    ]
    marks: list[str] = []
    checked: set[str] = set()  # the reply's figures found in the context
    marked: set[str] = set()  # of which the documents state another period
    for line in reply.splitlines():
        for sentence in _SENTENCE_END.split(line):
            cited = set(_cited(sentence))
            pool = [(marker, unit) for marker, unit in units if not cited or marker in cited]
            held = check_figures(sentence, [unit for _, unit in pool])
            for figure in held.direct:
                holding = [pool[k] for k in held.held_by[figure]]
                checked.add(figure)
                spans = [span_without_quarter(unit) for _, unit in holding]
                if None in spans:
                    continue
                marked.add(figure)
                mark = f"- {figure} [{holding[0][0]}] " + wording.other_period.format(
                    period=spans[0]
                )
                if mark not in marks:
                    marks.append(mark)
    if not marks:
        return reply
    headline = wording.no_quarter_figure + "\n\n" if marked == checked else ""
    return f"{headline}{reply}\n\n{wording.model_other_period}\n" + "\n".join(marks)


def unanswered(context: AssembledContext, wording: Wording) -> str:
    """The answer to an empty context, worded by Thoth whichever the answerer: nothing was
    found, or evidence was found and none of it fitted (a budget problem, never worded as an
    empty corpus)."""
    if context.dropped_fragments:
        return wording.all_dropped.format(fragments=context.dropped_fragments)
    return wording.nothing_found


@dataclass(frozen=True)
class Declined:
    """The answerer read its context and found no answer in it: a value, not a failure — the
    service serves it as nothing_found, saying why. `not_in_context`: a model replied so (the
    honesty floor's NOT_IN_CONTEXT); `no_terms`: no passage of the context holds any of the
    question's terms (the offline answerer), so quoting the closest one would answer nothing."""

    model: str
    verdict: Literal["not_in_context", "no_terms"] = "not_in_context"


# The declining reply as a model writes it: the token, in any case, in Markdown emphasis or
# code, with a full stop, alone on its first line (what follows is the model's excuse).
_DECLINING = re.compile(rf"[\s*_`\"'«]*{NOT_IN_CONTEXT}[\s*_`\"'».]*(?:\n|$)", re.IGNORECASE)


def declines(reply: str) -> bool:
    """Whether a reply is the model declining: NOT_IN_CONTEXT opens it, alone on its line.
    The token inside prose is no declining (an answer that says it is checked as one)."""
    return _DECLINING.match(reply) is not None


@dataclass(frozen=True)
class WordedFigures:
    """A computed answer's text, and what of its figures the model did not see: the columns
    the pseudonymiser masked ({column, values, rule}), for a reader's over_masked report."""

    text: str
    masked: tuple[dict[str, Any], ...] = ()


class Answerer(Protocol):
    name: str

    def answer(
        self,
        question: str,
        context: AssembledContext,
        *,
        instructions: str | None,
        pseudonymizer: Pseudonymizer,
    ) -> str | Declined:
        """The answer text for a context that is found, truncated or nothing_found; Declined
        when a model read the context and found no answer in it."""
        ...

    def answer_figures(
        self,
        question: str,
        numeric: NumericAnswer,
        *,
        instructions: str | None,
        pseudonymizer: Pseudonymizer,
    ) -> WordedFigures:
        """The text of a computed answer (status computed): the figures and their data date."""
        ...


def make_answerer(settings: Settings) -> Answerer:
    """`[answers].answerer`: "extractive", or "llm" for the model `[llm]` describes."""
    wording = wording_for(settings.language)
    if settings.answers.answerer == "llm":
        return ModelAnswerer(text_client(settings.llm), wording)
    return ExtractiveAnswerer(settings.language, wording)


class ModelAnswerer:
    def __init__(self, client: TextClient, wording: Wording) -> None:
        self._client = client
        self._wording = wording
        self.name = client.name

    def answer(
        self,
        question: str,
        context: AssembledContext,
        *,
        instructions: str | None,
        pseudonymizer: Pseudonymizer,
    ) -> str | Declined:
        if not context.entries:
            # Nothing to answer from: the fixed wording, as offline. A model given no context
            # echoed the prompt (Gemma 3 270M), and one could answer from its own memory.
            return unanswered(context, self._wording)
        system = system_prompt(instructions, context, self._wording)
        user = user_prompt(question, context, self._wording)
        try:
            reply = self._client.complete_text(
                pseudonymizer.protect(system), pseudonymizer.protect(user)
            )
        except LLMError as exc:
            raise self._failed(exc) from exc
        if declines(reply):
            return Declined(self._client.name)
        check_citations(reply, context, self._client.name)
        return mark_other_periods(question, pseudonymizer.restore(reply), context, self._wording)

    def _failed(self, exc: LLMError) -> AnswerModelError:
        """The error naming the model and server; the call's own hint when it has one (a
        reply cut at max_tokens: raise it), else where to look."""
        hint = (
            ""
            if " -> " in str(exc)
            else " -> check that the server is up and [llm] in thoth.toml (provider, model, "
            'base_url, api_key_env), or set [answers].answerer = "extractive"'
        )
        return AnswerModelError(
            f"answer model {self._client.name} at {self._client.base_url} failed: {exc}{hint}"
        )

    def answer_figures(
        self,
        question: str,
        numeric: NumericAnswer,
        *,
        instructions: str | None,
        pseudonymizer: Pseudonymizer,
    ) -> WordedFigures:
        """The model words the figures; they reach it only through `protect_rows` (identities
        replaced, columns not recognised as harmless masked). The figures themselves, their
        data date and the query then follow as Thoth computed them, whatever the model wrote
        (and whatever the pseudonymiser masked from it)."""
        w = self._wording
        names = [c.name for c in numeric.columns]
        reviewed = {c.name: c.kind for c in numeric.columns}
        rows = pseudonymizer.protect_rows(names, numeric.rows, reviewed)
        header = [c.label + (f" ({c.unit})" if c.unit else "") for c in numeric.columns]
        table = markdown_table(header, [[str(v) for v in row] for row in rows])
        dated = w.data_date.format(date=numeric.data_date)
        system = (
            (instructions or w.default_instructions)
            + "\n\n"
            + w.floor_heading
            + ("\n" + w.floor_figures)
        )
        user = (
            pseudonymizer.protect(f"{w.question_heading}\n{question}\n\n")
            + f"{w.numbers_heading}\n{pseudonymizer.protect(numeric.description)} ({dated})"
            + f"\n\n{table}"
        )
        try:
            reply = self._client.complete_text(pseudonymizer.protect(system), user)
        except LLMError as exc:
            raise self._failed(exc) from exc
        return WordedFigures(
            f"{pseudonymizer.restore(reply).strip()}\n\n{numeric.text}",
            tuple(pseudonymizer.masked_columns(names, numeric.rows, reviewed)),
        )


@dataclass(frozen=True)
class _Unit:
    """A quotable unit of the context: a sentence, a list item or a table row spelled out."""

    entry: int  # index of its entry in the context (rank order)
    position: int  # within the entry's text
    text: str
    score: float  # weight of the distinctive question terms it holds (0: none)
    figures: bool = False  # a table row, or a unit holding a figure


class _Row(str):
    """A table row spelled out with its header: a `str` to every reader of the text, and
    known as a row to the answerer (its plain cells, "187", are figures in a statement), with
    the section it sits under ("Net revenue"), its own label ("Mobileye") and its cell count."""

    section: str
    label: str
    cells: int
    contents: bool  # a row of a table of contents: a title and its page, no figure
    said: str  # what it says of the question's words: not the periods of its column headers
    figures: bool  # whether a cell holds a number: a table of words ("fino a 5") holds none
    values: tuple[str, ...]  # its cells, without the label

    def __new__(
        cls,
        text: str,
        *,
        section: str = "",
        label: str = "",
        cells: int = 0,
        contents: bool = False,
        said: str | None = None,
        figures: bool = True,
        values: Sequence[str] = (),
    ) -> _Row:
        row = super().__new__(cls, text)
        row.section, row.label, row.cells, row.contents = section, label, cells, contents
        row.said = text if said is None else said
        row.figures = figures and not contents
        row.values = tuple(values)
        return row

    @property
    def length(self) -> int:
        """Its words for length normalisation: its section and label, and CELL_WORDS per
        cell. The headers spelled beside every cell repeat the table's own words, row after
        row: counting them made a statement row weigh as a paragraph, and one-clause sentences
        holding the same asked word outranked it."""
        return len(_WORD.findall(f"{self.section} {self.label}")) + CELL_WORDS * self.cells


class ExtractiveAnswerer:
    """Deterministic: the same context and question always give the same text."""

    name = "extractive"

    def __init__(self, language: str, wording: Wording) -> None:
        self._wording = wording
        self._language = language
        self._stemmers: dict[str, Stems] = {}

    def answer(
        self,
        question: str,
        context: AssembledContext,
        *,
        instructions: str | None,
        pseudonymizer: Pseudonymizer,
    ) -> str | Declined:
        # No model: nothing leaves the process, so the pseudonymizer has nothing to protect,
        # and there is no one to give the caller's instructions to.
        w = self._wording
        if not context.entries:
            return unanswered(context, w)
        parts: list[str] = []
        chosen = self._choose(question, context.entries, context.glossary)
        if chosen[0].score == 0:
            # Not one of the question's terms in any passage: the closest passage is no answer.
            return Declined(self.name, "no_terms")
        row = _faq_row_answer(context.entries[0])
        if row is not None:
            # A FAQ row ranked first is the answer: that row's answer whole, no other row's.
            chosen = [_Unit(0, 0, row, chosen[0].score)]
        # Asked about a quarter, a figure that states a year or a longer span (and no quarter)
        # is another period's: "Nel 2024 ... 5,9%" must not pass for the third quarter's.
        quarter = asks_a_quarter(question)
        spans = [span_without_quarter(u.text) if quarter and u.figures else None for u in chosen]
        of_figures = [span for u, span in zip(chosen, spans, strict=True) if u.figures]
        if quarter and of_figures and None not in of_figures:
            parts.append(w.no_quarter_figure)
        parts.append(
            "\n".join(
                self._quote(u, context.entries[u.entry], span)
                for u, span in zip(chosen, spans, strict=True)
            )
        )
        caveats = _caveat_block(context.entries)
        if caveats:
            parts.append(w.caveats_heading + "\n" + "\n".join(caveats))
        if context.dropped_fragments:
            parts.append(
                w.truncated.format(
                    fragments=context.dropped_fragments, documents=context.dropped_documents
                )
            )
        return "\n\n".join(parts)

    def answer_figures(
        self,
        question: str,
        numeric: NumericAnswer,
        *,
        instructions: str | None,
        pseudonymizer: Pseudonymizer,
    ) -> WordedFigures:
        # No model: the figures as the analytics branch wrote them, data date included.
        return WordedFigures(numeric.text)

    def _entry_language(self, entry: ContextEntry) -> str:
        """The language a fragment's source was indexed in; the workspace's for Evidence
        Units and fragments indexed before sources had one."""
        return getattr(entry.fragment.record, "bm25_language", None) or self._language

    def _stemmer(self, language: str) -> Stems:
        if language not in self._stemmers:
            self._stemmers[language] = _adjectives_apart(term_function(language), language)
        return self._stemmers[language]

    def _choose(
        self,
        question: str,
        entries: tuple[ContextEntry, ...],
        glossary: Expansion | None,
    ) -> list[_Unit]:
        """The units holding the most weight of the question's distinctive terms, in reading
        order. A term's weight is its rarity among the context's units (a word every passage
        repeats says little); the question's names that name the document (held by its title
        or identifier: the company, the filing) and its periods and form names ("Q2", "2023",
        "10-Q") weigh nothing, for they locate the passage without saying anything:
        boilerplate that matches only them is never quoted."""
        # Each fragment is matched in the language its source was indexed in (an English
        # filing in an Italian workspace is stemmed as English), the question in every language
        # of the context. A term is a (language, stem) pair: stems of two languages never meet.
        languages = [self._entry_language(e) for e in entries]

        def terms(text: str, language: str) -> set[tuple[str, int | str]]:
            return {(language, t) for t in self._stemmer(language)(text)}

        # A word that is a stopword in one of the languages at play is no term in any: the
        # Italian "e" stemmed as English met the "(e)" of "Rules 13a-15(e)", and an Italian
        # question quoted an English filing's certifications. At play: the sources', the
        # workspace's, and those in which the glossary matched the question's words.
        matched = sorted((glossary.used or {}).keys()) if glossary else []
        spoken = sorted({*languages, self._language, *matched})

        def everywhere(text: str) -> set[tuple[str, int | str]]:
            words = " ".join(
                w for w in _WORD.findall(text) if all(self._stemmer(lang)(w) for lang in spoken)
            )
            return set().union(*(terms(words, lang) for lang in sorted(set(languages))))

        own = everywhere(question)
        # "ricavi netti" asked, "Net sales" written: the glossary's terms in each fragment's
        # language are asked too, but not its periods: "trimestre" is "three months ended",
        # which heads every column of a quarter's table and made the derivatives rows above
        # Microsoft's inventories note the answer about stocks.
        phrases = [
            phrase
            for lang in sorted(set(languages))
            for term in (glossary.added_in(lang) if glossary else ())
            if (phrase := frozenset(terms(without_periods(term), lang)))
        ]
        asked = own.union(*phrases)

        def holds(said: set[tuple[str, int | str]]) -> set[tuple[str, int | str]]:
            """The asked terms a unit holds: the question's own words one by one, a term the
            glossary adds only when the unit holds most of its words ("net earnings", added
            for "utile netto", is not held by "Retained earnings", whose rows all came as the
            answer about Apple's net income; "Provision for (benefit from) taxes" holds
            "provision for income taxes")."""
            return (said & own).union(*(p & said for p in phrases if 2 * len(p & said) > len(p)))

        tokens = _QUESTION_TOKEN.findall(question)
        # A number that only says when or which document weighs nothing: a year, a quarter
        # ("Q2"), a form name ("10-Q"), a number inside a period phrase ("3° trimestre",
        # "September 30, 2023"). Any other is asked: "livello 3", "30 giorni".
        said_when = " ".join(period_phrases(question))
        dated = set(_QUESTION_TOKEN.findall(said_when))
        periods = set().union(
            *(
                everywhere(t)
                for t in tokens
                if _DIGIT.search(t)
                and (t in dated or _YEAR.fullmatch(t) or is_quarter_term(t) or _LETTER.search(t))
            )
        )
        names = set().union(*(everywhere(t) for t in tokens if t != t.lower()))
        # The entities the question is about: its capitalised words past the first, without
        # a digit ("Apple", "Intelligent Cloud"). A fragment none of them occurs in (its
        # document's title, identifier or text) is about something else: another company's
        # "net income" row is not Apple's.
        entities = set().union(
            *(everywhere(t) for t in tokens[1:] if t != t.lower() and not _DIGIT.search(t))
        )
        units_of = [_units_under(entry.fragment.record.text) for entry in entries]
        raw = [
            (i, pos, text)
            for i, units_here in enumerate(units_of)
            for pos, (text, _) in enumerate(units_here)
        ]
        # The heading each unit sits under: the fragment's heading path, and the last heading
        # of its text above it.
        sections = [
            "\n".join([*getattr(entries[i].fragment.record, "heading_path", ()), heading])
            for i, units_here in enumerate(units_of)
            for _, heading in units_here
        ]
        if not raw:
            return [_Unit(0, 0, entries[0].fragment.record.text.strip(), 0.0)]
        # A name of the question that the document's title or identifier holds names the
        # document ("Apple" in Apple's filing): a lowercase word of the title ("triage" in a
        # page titled "Triage") is still asked about.
        naming = [
            (terms(f"{e.fragment.title} {e.fragment.doc_id}", languages[i]) & names) | periods
            for i, e in enumerate(entries)
        ]
        held = [holds(terms(_said(text), languages[i])) - naming[i] for i, _, text in raw]
        # The question's period words tell a unit apart only beside a word of what is asked:
        # "during the second quarter of 2023" alone says nothing of research and development.
        when = everywhere(said_when)
        held = [held_terms if held_terms - when else set() for held_terms in held]
        # A section's heading says what its sentences are about ("Legal Proceedings" above a
        # lawsuit's story): a term only the headings hold counts half.
        headed = [
            (terms(_headings(e), languages[i]) & asked) - naming[i] for i, e in enumerate(entries)
        ]
        spread = Counter(t for held_terms in held for t in held_terms)
        spread.update(t for headed_terms in headed for t in headed_terms)
        weight = {t: math.log(1 + len(raw) / n) for t, n in spread.items()}
        # A passage about the question holds many of its terms: a sentence of it outweighs one
        # that shares as many words but stands alone in a passage about something else.
        covered = [set(headed[i]) for i in range(len(entries))]
        for (i, _, _), held_terms in zip(raw, held, strict=True):
            covered[i] |= held_terms
        passage = [sum(weight[t] for t in c) for c in covered]
        top = max(passage) or 1.0
        about = [
            not entities
            or bool(
                entities & terms(f"{e.fragment.title} {e.fragment.doc_id} {e.text}", languages[i])
            )
            for i, e in enumerate(entries)
        ]
        # A long unit holds more of the question's words by chance (a page-long "forward-looking
        # statements" sentence): scores are normalised by length, as BM25 does.
        lengths = [_length(text) for _, _, text in raw]
        average = sum(lengths) / len(lengths) or 1.0
        units = []
        for (i, pos, text), unit_terms, length, section in zip(
            raw, held, lengths, sections, strict=True
        ):
            score = sum(weight[t] for t in unit_terms)
            if score:
                score += sum(0.5 * weight[t] for t in headed[i] - unit_terms)
            else:
                # A unit holding none of the asked words, under a heading that names what is
                # asked ("Legal Proceedings" above a lawsuit's story, "NOTE 6 — INVENTORIES"
                # above "Raw materials $520"): its heading speaks for it, at half weight.
                under = (terms(section, languages[i]) & asked) - naming[i]
                score = sum(0.5 * weight[t] for t in under if t in weight)
            if score:
                score *= 0.5 + 0.5 * passage[i] / top
                # Length says how likely a unit's own words met the question by chance; one
                # that holds none speaks for its heading, and its section opens first.
                if unit_terms:
                    score /= 1 - LENGTH_NORM + LENGTH_NORM * length / average
            figures = text.figures if isinstance(text, _Row) else bool(_FIGURE.search(text))
            if score and figures:
                score *= FIGURE_WEIGHT
            if score and not about[i]:
                score *= OTHER_ENTITY
            units.append(_Unit(i, pos, text, round(score, 6), figures))
        # A title-like line (short, no figure, no final punctuation: a PDF section heading)
        # matches the question's words and says nothing: quoted only when nothing else matches.
        # The fused ranking is evidence too: of two units, the closer fragment's comes first
        # unless the other's words weigh clearly more; the share of the best a unit must
        # reach (KEEP_SHARE) is of its own score.
        ranked = sorted(
            (u for u in units if u.score),
            key=lambda u: (
                _title_like(u.text),
                -u.score / (1 + RANK_DECAY * u.entry),
                u.entry,
                u.position,
            ),
        )
        if not ranked:
            return _closest(units)
        title_first = _title_like(ranked[0].text)  # only title-like lines match
        best = max(u.score for u in ranked if _title_like(u.text) == title_first)
        # A sentence giving a figure is held to the best sentence when that one passes the
        # best unit's share: rows and sentences are not scored on one scale (KEEP_SHARE).
        best_sentence = max((u.score for u in ranked if _sentence(u.text)), default=best)
        best_said = best_sentence if best_sentence >= KEEP_SHARE * best else best
        chosen: list[_Unit] = []
        waiting: list[_Unit] = []  # past MAX_QUOTES_PER_FRAGMENT of their fragment

        def full() -> bool:
            # Past MAX_QUOTES, only units holding figures, up to MAX_FIGURE_QUOTES more.
            return len(chosen) >= MAX_QUOTES + MAX_FIGURE_QUOTES

        def take(unit: _Unit) -> None:
            if len(chosen) < MAX_QUOTES or unit.figures:
                chosen.append(unit)

        for unit in ranked:
            if full():
                break
            said = unit.figures and _sentence(unit.text)
            if unit.score < KEEP_SHARE * (best_said if said else best):
                continue  # ranked with the fragment's rank: one further down may pass
            if chosen and _title_like(unit.text):
                break  # title-like lines come last: only when nothing else matched
            if any(unit.text == c.text for c in chosen):  # chunks overlap: quote once
                continue
            if _repeats(unit.text, chosen):
                continue  # the statement again (MD&A, an equity statement): nothing new
            if sum(c.entry == unit.entry for c in chosen) == MAX_QUOTES_PER_FRAGMENT:
                waiting.append(unit)  # the other fragments first
                continue
            take(unit)
        for unit in waiting:
            if full():
                break
            if not _repeats(unit.text, chosen):
                take(unit)

        def says_asked(name: str, entry: int) -> bool:
            """Whether a row's label or section holds a word of what is asked."""
            return bool((terms(name, languages[entry]) & asked) - naming[entry])

        # A row quoted for its section alone ("Revenue: Total" to "revenue across segments")
        # stands for the section: its sibling rows, the breakdown asked, come with it.
        # A total's own word says nothing of its own ("Total" under "Revenue" is the section's
        # sum): a glossary's "total net sales" asked "total", and an Italian question about the
        # segments' revenue got the total alone.
        for unit in list(chosen):
            row = unit.text
            if not isinstance(row, _Row) or not row.section:
                continue
            label = _TOTAL_WORD.sub("", row.label)
            if says_asked(label, unit.entry) or not says_asked(row.section, unit.entry):
                continue
            siblings = [
                u
                for u in units
                if u.entry == unit.entry
                and isinstance(u.text, _Row)
                and u.text.section == row.section
            ][:SECTION_ROWS]
            for sibling in siblings:
                if all(sibling.text != c.text for c in chosen) and not _repeats(
                    sibling.text, chosen
                ):
                    chosen.append(sibling)
        # Reading order, the closest fragment first: ordered by the fragment holding the best
        # quote instead, "Total other income/(expense), net" (a small note holding "total" and
        # "net") came before Apple's "Total net sales" row, which the closest fragment holds.
        return sorted(chosen, key=lambda u: (u.entry, u.position))

    def _quote(self, unit: _Unit, entry: ContextEntry, other_period: str | None = None) -> str:
        line = f"- «{unit.text}» [{entry.marker}]"
        # Which fragment: a document cited as [n] has many; its page says where the quote is.
        page = getattr(entry.fragment.record, "page", None)
        if page is not None:
            line += f" ({self._wording.page.format(page=page)})"
        if other_period is not None:
            line += " " + self._wording.other_period.format(period=other_period)
        # A number the source flags must never travel without its warning: put it right here.
        numbers = _numbers(unit.text)
        for caveat in entry.caveats:
            if numbers & _numbers(caveat):
                line += f"\n  {self._wording.number_warning} [{entry.marker}]: {caveat}"
        return line


def _adjectives_apart(stems: Stems, language: str) -> Stems:
    """`stems`, an adjective in -ive (its adverb, a noun in -ives) a term of its own: the
    English stemmer makes "effective" and "effects" one stem, and asked about the effects of
    currency fluctuations, the tax note's "Effective tax rate" row matched (so "derivatives"
    and "derived", "relative" and "relations", "executive" and "execution"). An adjective
    meets the same adjective only."""
    name = BM25_LANGUAGES.get(language.split("-")[0], language)  # "en" or "english"
    adjective = _DERIVED_ADJECTIVE.get(name)
    if adjective is None:
        return stems

    @lru_cache(maxsize=8192)
    def apart(text: str) -> frozenset[int | str]:
        words = adjective.findall(text)
        if not words:
            return stems(text)
        own = {f"{term}:{name}-ive" for word in words for term in stems(word)}
        return stems(adjective.sub(" ", text)) | own

    return apart


def _faq_row_answer(entry: ContextEntry) -> str | None:
    """The answer of a FAQ row (a `qa` fragment of a CSV or a workbook: its question on the
    first line, then the answer and the columns the source keeps), without its question;
    None for any other fragment."""
    record = entry.fragment.record
    if getattr(record, "chunk_kind", None) != "qa":
        return None
    if getattr(record, "doc_format", None) not in ("csv", "xlsx"):
        return None
    _, _, rest = record.text.partition("\n")
    answer = " ".join(rest.split())
    return answer or None


def _closest(units: list[_Unit]) -> list[_Unit]:
    """No unit holds a distinctive term of the question (a question in another language than
    the documents, a paraphrase): the closest passage is the top-ranked fragment, which the
    dense search chose; its figures first (its first rows or sentences holding one), else its
    first unit. The answer says it holds none of the question's terms."""
    top = [u for u in units if u.entry == 0]
    with_figures = [u for u in top if _FIGURE.search(u.text)][:MAX_QUOTES]
    return with_figures or top[:1] or units[:1]


def quotable_units(text: str) -> list[str]:
    """The quotable units of a fragment: sentences of unwrapped paragraphs (PDF and Markdown
    lines are hard-wrapped: a sentence must not stop at a line end), list items one by one, and
    table rows spelled out with their header ("Codice: arancione; Attesa max: 15"), so a quoted
    cell never travels without the column that gives it meaning. A line in parentheses before a
    table ("(In millions)") is the table's unit and goes with each of its rows. A table PDF
    extraction left as text lines (a period line "Three Months Ended September 30, 2023 2022",
    a section line "Revenue", rows ending in figures) is spelled out the same way, row by row."""
    return [unit for unit, _ in _units_under(text)]


def _units_under(text: str) -> list[tuple[str, str]]:
    """quotable_units, each with the heading of the fragment's text it sits under ("" above
    the first one): what its section is about."""
    found: list[str] = []
    under: list[str] = []
    heading = ""
    heading_at = -1  # how many units there were at the last heading

    def headed() -> None:
        under.extend([heading] * (len(found) - len(under)))

    loose = _LooseTable()
    for block in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        table = table_cells(block) if lines and lines[0].startswith("|") else None
        if table is not None:
            found += _table_rows(*table, note=loose.note)
            headed()
            loose = _LooseTable()
            continue
        if len(lines) == 1 and _NOTE.match(lines[0]):
            loose = _LooseTable(note=lines[0])
            continue
        paragraph: list[str] = []
        for line in [*lines, ""]:
            row = _loose_row(line)
            if row is None and _period_line(line) is None:
                if paragraph and (not line or _LIST_ITEM.match(line) or line.startswith("#")):
                    found += loose.prose(_split_sentences(" ".join(paragraph)))
                    headed()
                    paragraph = []
                # A heading names a section, it answers nothing: never quoted on its own. One
                # right under another, no text between ("Item 1. Legal Proceedings" then "Epic
                # Games"), is its subsection: its units sit under both.
                if line.startswith("#"):
                    title = line.lstrip("#").strip()
                    heading = f"{heading}\n{title}" if len(found) == heading_at else title
                    heading_at = len(found)
                elif line:
                    paragraph.append(line)
                continue
            # A short line right before a row or under the period line is the rows' section.
            if paragraph and _title_like(paragraph[-1]):
                loose.section = paragraph.pop()
            if paragraph:
                found += loose.prose(_split_sentences(" ".join(paragraph)))
                headed()
                paragraph = []
            if row is None:
                loose.period = _period_line(line)
            else:
                label, values = row
                found.append(
                    _Row(
                        loose.spell(label, values),
                        section=loose.section,
                        label=label,
                        cells=len(values),
                        said=" ; ".join([loose.section, label, *values]),
                        values=values,
                    )
                )
                headed()
    return list(zip(found, under, strict=True))


@dataclass
class _LooseTable:
    """What the rows of a table left as text lines read under: unit, period line, section."""

    note: str = ""
    period: tuple[str, list[str]] | None = None  # ("Three Months Ended September 30,", years)
    section: str = ""

    def prose(self, sentences: list[str]) -> list[str]:
        if any(s.endswith((".", ":", ";")) for s in sentences):
            self.period, self.section, self.note = None, "", ""  # a paragraph ends the table
        return sentences

    def spell(self, label: str, values: list[str]) -> str:
        name = _joined(self.section, label)
        if self.period is not None and len(self.period[1]) == len(values):
            prefix, years = self.period
            pairs = [f"{prefix} {y}: {v}".strip() for y, v in zip(years, values, strict=True)]
            line = f"{name} — " + "; ".join(pairs)
        else:
            line = f"{name} {' '.join(values)}".strip()
            if self.period is not None:
                line += f" ({' '.join([self.period[0], *self.period[1]]).strip()})"
        return f"{line} {self.note}" if self.note else line


_CELL = r"(?:\$\s?)?\(?-?\d(?:[\d,.]*\d)?\)?%?"
_TRAILING_CELLS = re.compile(rf"(?:(?<=\s)|^)(?:{_CELL})(?:\s+{_CELL})+$")


def _loose_row(line: str) -> tuple[str, list[str]] | None:
    """(label, values) of a text line ending in two or more figures that are not all years:
    "Intelligent Cloud 24,259 20,325", "Derivatives $ (16) $ (43)"."""
    m = _TRAILING_CELLS.search(line)
    if m is None or _period_line(line) is not None:
        return None
    values = re.findall(_CELL, m.group(0))
    if all(_YEAR.fullmatch(v) for v in values) or not any(_DIGIT.search(v) for v in values):
        return None
    label = line[: m.start()].strip()
    if label.endswith((".", ";")):  # a sentence ending before the numbers: not a row
        return None
    return label, values


def _period_line(line: str) -> tuple[str, list[str]] | None:
    """A line ending in two or more years and holding no other figure: the period header of a
    table left as text ("Three Months Ended September 30, 2023 2022")."""
    m = re.search(r"(?:\s+(?:1[89]|2\d)\d\d){2,}$", " " + line)
    if m is None:
        return None
    prefix = (" " + line)[: m.start()].strip()
    if _FIGURE.search(prefix):
        return None
    return prefix, m.group(0).split()


def _number_cell(cell: str) -> bool:
    """A cell that is a figure: an amount ("$2,753", "(86)", "6412", "0.055") or one holding a
    percentage or a currency ("42.5%", "€ 3,2 mln"); not a dash, not words around a number
    ("fino a 5", "da 6 a 12")."""
    return bool(_FIGURE.search(cell)) or (
        bool(_DIGIT.search(cell)) and statement_cell(cell) is not None
    )


def _amounts(unit: str) -> set[Decimal]:
    """The amounts a unit gives, sign and currency aside ("$(2,253)" and "2,253" are one): a
    table row's label and cells (not the dates of its headers: the coupon and maturity of
    "2.400% Notes due 2027" tell it from another note of the same amount), a sentence's
    numbers."""
    cells = (unit.label, *unit.values) if isinstance(unit, _Row) else (unit,)
    return {abs(Decimal(n.replace(",", ""))) for cell in cells for n in _AMOUNT.findall(cell)}


def _repeats(unit: str, chosen: Sequence[_Unit]) -> bool:
    """Whether `unit` is a table row that a chosen quote already gives: every amount of it,
    two at least (a filing states its figures again: the statement, MD&A), or its
    measure, a row of the same section and label (the same line in another table: MD&A's
    share of revenue, whose title the row lost, an equity statement's "Net income"). A repeat
    takes a quote from a figure not yet given; the row quoted first, the closer or the better
    matched, stands for its measure. A sentence is never a repeat: it may say why."""
    if not isinstance(unit, _Row):
        return False
    if unit.label and any(
        isinstance(c.text, _Row) and (c.text.section, c.text.label) == (unit.section, unit.label)
        for c in chosen
    ):
        return True
    own = _amounts(unit)  # one amount alone ("1,000") is met again by chance
    return len(own) > 1 and own <= set().union(*(_amounts(c.text) for c in chosen))


def _sentence(unit: str) -> bool:
    """A sentence or a list item: not a table row, not a title-like line."""
    return not isinstance(unit, _Row) and not _title_like(unit)


def _said(unit: str) -> str:
    """The words of a unit the question's words are matched in: a table row's own, without
    the periods its column headers spell beside every cell."""
    return unit.said if isinstance(unit, _Row) else unit


def _length(unit: str) -> int:
    return unit.length if isinstance(unit, _Row) else len(_WORD.findall(unit))


def _headings(entry: ContextEntry) -> str:
    """The headings a fragment sits under (its heading path) and those inside its text."""
    path = getattr(entry.fragment.record, "heading_path", ())
    inside = [line.lstrip("#").strip() for line in entry.text.splitlines() if line[:1] == "#"]
    return "\n".join([*path, *inside])


def _title_like(text: str) -> bool:
    if isinstance(text, _Row) and text.contents:
        return True  # a contents row names a section and its page: a title
    return (
        len(text.split()) <= 8
        and not _DIGIT.search(text)
        and not re.search(r"[.:;!?»)]$", text)
        and ":" not in text
    )


def _split_sentences(paragraph: str) -> list[str]:
    found = []
    for piece in _SENTENCE_END.split(paragraph):
        cleaned = _MARKUP.sub("", piece).strip()
        if _WORD.search(cleaned):
            found.append(cleaned)
    return found


def _table_rows(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, note: str = ""
) -> list[str]:
    """Each row with the header of every value (its period, in a financial table) and the
    section it sits under ("Cost of sales:" above "Services"): "Cost of sales: Services —
    Three Months Ended April 1, 2023: 6,065; ...". A header PDF extraction wrote over two lines
    (| | September 30, | then | (In millions) | 2023 |) is joined back; a row whose only cell
    is its label is a section; a label starting in lower case continues the line above."""
    head = list(header)
    body = [list(row) for row in rows]
    while body and _continues_header(head, body[0]):
        more = body.pop(0)
        head = [" ".join(p for p in (h, c) if p) for h, c in zip_longest(head, more, fillvalue="")]
    label_head = head[0] if head else ""
    # "Three Months Ended September 30, 2023" heads every row of the table and tells none from
    # another; a period in the row's own label ("3° trimestre 2024") does.
    plain_head = [without_periods(h) for h in head[1:]]
    # A "Page" column makes a table of contents: its rows are the document's titles.
    contents = any(_PAGE_HEAD.fullmatch(h.strip()) for h in head[1:])
    if _NOTE.match(label_head):
        note, label_head = note or label_head, ""
    spelled: list[str] = []
    summed = _summed_by(body)
    sections: list[str] = []  # "Net revenue:" then "Client Computing": nested sections
    # Taken for a section, a line may be a label wrapped over two lines ("Common stock
    # withheld ... of equity" above "awards", under "Common stock and paid-in capital:"): when
    # it closed a list, the list is open again at the continuation.
    reopen: list[str] | None = None
    after_section = False
    previous = ""  # the label of the last row holding values
    for index, row in enumerate(body):
        label, values = (row[0] if row else ""), row[1:]
        if after_section and label[:1].islower() and sections:
            label = f"{sections[-1]} {label}"  # a label wrapped over two lines
            sections = reopen if reopen is not None else sections[:-1]
        if label and not any(values):
            reopen = None
            if label.endswith(":"):
                sections = [label]  # "Net sales:", "Cost of sales:": a new top section
            elif after_section or not sections:
                sections = [*sections, label]  # right under the section above: nested
            else:
                if sections[-1].endswith(":"):
                    reopen = sections
                sections = _next_section(label, sections)
            after_section = True
            continue
        if not label and len(sections) > 1:
            label = sections.pop()  # a subsection's subtotal: the row without a label
        # "Percentage of total net sales" under "Research and development $7,457": the share
        # of the row above, which alone says nothing of what it measures.
        if not _SHARE_ROW.match(label):
            previous = label
        elif previous:
            label = f"{previous}, {label[:1].lower()}{label[1:]}"
        after_section = False
        section = ""
        # "Total stockholders' equity" is no accumulated loss: a total naming none of the open
        # sections reads alone (the sections stay open: it may be a subtotal inside them).
        for name in [] if _foreign_total(label, sections) else sections:
            section = _joined(section, name) if section else name
        if not section and index in summed:
            section = summed[index]  # the rows a total below adds up, named by it
        pairs = [f"{h}: {c}" if h else c for h, c in zip(head[1:], values, strict=False) if c]
        if label_head:
            line = "; ".join([f"{label_head}: {label}", *pairs] if label else pairs)
            if section:
                line = f"{_joined(section, label='')} — {line}"
        elif label:
            line = f"{_joined(section, label)} — " + "; ".join(pairs) if pairs else label
        else:
            line = "; ".join(pairs)
        if line:
            headers = [h for h, c in zip(plain_head, values, strict=False) if c]
            spelled.append(
                _Row(
                    f"{line} {note}" if note and pairs else line,
                    section=section,
                    label=label,
                    cells=len(pairs),
                    contents=contents,
                    said=" ; ".join([section, label_head, label, *headers, *values]),
                    figures=any(_number_cell(c) for c in values),
                    values=values,
                )
            )
        sections = _after_total(label, sections)
    return spelled


def _summed_by(body: Sequence[Sequence[str]]) -> dict[int, str]:
    """Rows that a row below adds up to, by position -> that row's name ("Raw materials",
    "Work in process", "Finished goods" above "Total inventories" -> "Inventories"; "Research
    and development", "Marketing, general, and administrative", "Restructuring and other
    charges" above "Operating expenses"): the arithmetic says what the rows are parts of,
    where no section line does. The longest run of rows right above the sum whose cells add up
    to its cells, in every column it fills (to a unit of its last digit: the filings round), at
    least two rows. A row not called "Total ..." is held to more, for the arithmetic of a
    statement holds beyond its breakdowns: two columns at least (in one, a sum met by chance),
    and no row of the run a result itself (a total, a sum or a difference of the rows above
    it: "Operating income" plus "Other income" make "Income before taxes", but operating
    income is no part of pre-tax income) nor an opening balance (a roll-forward: "Net income"
    is no part of the ending balance's name)."""
    # None: a cell that is no number (a word, a percentage); an empty cell adds nothing.
    values = [[statement_cell(c) if c.strip() else Decimal(0) for c in row[1:]] for row in body]
    labels = [row[0].strip() if row else "" for row in body]
    runs = [_run_above(body, values, i) for i in range(len(body))]
    found: dict[int, str] = {}

    def breakdown(i: int) -> range | None:
        run = range(i - runs[i], i)
        # A reconciliation ("Net carrying amount", "Less short-term portion") is no breakdown.
        if not runs[i] or any(labels[n].lower().startswith("less") for n in run):
            return None
        return run

    # The parts of each "Total …" row: a part is no sum of other parts of the same total
    # (notes of $1,000 and $1,000 above one of $2,000, all three in "Total senior notes").
    parts = [
        set(run)
        for i, label in enumerate(labels)
        if _total_of(label) and (run := breakdown(i)) is not None
    ]
    for i, label in enumerate(labels):
        total = _total_of(label)
        run = breakdown(i)
        if run is None or not label or total == set():
            continue
        if total is None:
            if any({i, *run} <= part for part in parts):
                continue
            columns = [j for j, cell in enumerate(body[i][1:]) if cell.strip()]
            if len(columns) < 2 or any(
                runs[n]
                or _total_of(labels[n]) is not None
                or _OPENING.match(labels[n])
                or _difference_above(values, n, columns)
                for n in run
            ):
                continue
        name = " ".join(label.split()[1:]) if total is not None else label
        name = name[:1].upper() + name[1:]
        for n in run:
            if name.lower() not in labels[n].lower():
                found.setdefault(n, name)
    return found


def _run_above(
    body: Sequence[Sequence[str]], values: Sequence[Sequence[Decimal | None]], i: int
) -> int:
    """How many rows right above row `i` its cells are the sum of (0: none, or fewer than two),
    in every column it fills, to a unit of its last digit."""
    row = body[i]
    columns = [j for j, cell in enumerate(row[1:]) if cell.strip()]
    targets = [values[i][j] for j in columns]
    if not row or not row[0].strip() or not columns or None in targets:
        return 0
    tolerance = max(last_digit_unit(t) for t in targets if t is not None)
    longest, sums = 0, [Decimal(0)] * len(columns)
    for k in range(1, i + 1):
        above, cells = body[i - k], values[i - k]
        if not above or not above[0] or not any(c.strip() for c in above[1:]):
            break  # a section line or a label alone: the run stops there
        added = [cells[j] if j < len(cells) else None for j in columns]
        if None in added:
            break  # a cell that is no number
        sums = [s + a for s, a in zip(sums, added, strict=True) if a is not None]
        if k >= 2 and all(
            t is not None and abs(s - t) <= tolerance for s, t in zip(sums, targets, strict=True)
        ):
            longest = k
    return longest


def _difference_above(
    values: Sequence[Sequence[Decimal | None]], n: int, columns: Sequence[int]
) -> bool:
    """Whether row `n` is a row above it less the row right above it, in every column of
    `columns` (to a unit): a margin or an operating income ("Gross margin" less "Total
    operating expenses"), computed by the statement."""

    def cells(row: Sequence[Decimal | None]) -> list[Decimal] | None:
        picked = [c for j in columns if j < len(row) and (c := row[j]) is not None]
        return picked if len(picked) == len(columns) else None

    result, subtracted = cells(values[n]), cells(values[n - 1]) if n else None
    if not result or subtracted is None:
        return False
    tolerance = max(last_digit_unit(r) for r in result)
    for m in range(n - 1):
        minuend = cells(values[m])
        if minuend is not None and all(
            abs(a - b - r) <= tolerance for a, b, r in zip(minuend, subtracted, result, strict=True)
        ):
            return True
        # Less every row between: "Gross margin" less research, sales and administrative
        # expenses, written one by one, is "Operating income".
        between = [cells(values[k]) for k in range(m + 1, n)]
        if minuend is not None and len(between) >= 2 and None not in between:
            spent = [sum(col) for col in zip(*between, strict=True)]
            if all(
                abs(a - b - r) <= tolerance for a, b, r in zip(minuend, spent, result, strict=True)
            ):
                return True
    return False


def _next_section(label: str, sections: list[str]) -> list[str]:
    """The sections open at a section line that follows rows. One named like an open
    section, by its first or its last word ("Designated as Cash Flow Hedging Instruments"
    after "Designated as Fair Value Hedging Instruments"), is that one's sibling; after a
    list ("Changes in operating assets and liabilities:", closed by no total), a new block
    ("Financing"); else the sibling of the innermost."""
    words = _WORD.findall(label.lower())
    for depth, name in enumerate(sections):
        named = _WORD.findall(name.lower())
        if words and named and (words[0] == named[0] or words[-1] == named[-1]):
            return [*sections[:depth], label]
    if sections[-1].endswith(":"):
        return [label]
    return [*sections[:-1], label]


def _foreign_total(label: str, sections: list[str]) -> bool:
    """A "Total …" row that names none of the open sections: it sums more than the last of
    them (the equity statement's "Total stockholders' equity" below its "Accumulated other
    comprehensive loss" section) or rows of its own inside them, and reads under none."""
    summed = _total_of(label)
    if not summed or not sections:
        return False
    return not any(_named(name, summed) for name in sections)


def _after_total(label: str, sections: list[str]) -> list[str]:
    """The sections still open after a row: a total closes the section it sums ("Total cost
    of sales" closes "Cost of sales:" and every subsection under it, so "Gross margin" below
    is no cost of sales), a bare total its innermost subsection."""
    summed = _total_of(label)
    if summed is None:
        return sections
    for depth, name in enumerate(sections):
        if summed and _named(name, summed):
            return sections[:depth]
    return sections[:-1] if len(sections) > 1 else sections


def _total_of(label: str) -> set[str] | None:
    """The words a "Total …" row names (empty for a bare "Total"); None for any other row."""
    words = _WORD.findall(label.lower())
    return set(words[1:]) if words and words[0] == "total" else None


def _named(section: str, summed: set[str]) -> bool:
    """Whether a total's words name `section` (every word of it)."""
    return set(_WORD.findall(section.lower())) <= summed


def _joined(section: str, label: str) -> str:
    if not section:
        return label
    if not label:
        return section.rstrip(":")
    return f"{section} {label}" if section.endswith(":") else f"{section}: {label}"


def _continues_header(head: Sequence[str], row: Sequence[str]) -> bool:
    """A first row whose values are all years, under a header without any year: the second
    line of the header (| | September 30, | over | (In millions) | 2023 |)."""
    values = [c for c in row[1:] if c]
    return (
        bool(values)
        and all(_YEAR.fullmatch(c) for c in values)
        and not any(_YEAR.search(h) for h in head[1:])
    )


def _caveat_block(entries: tuple[ContextEntry, ...]) -> list[str]:
    """Every caveat of every fragment in the context, verbatim, once per source."""
    lines = []
    for entry in entries:
        for caveat in entry.caveats:
            line = f"- [{entry.marker}] {caveat}"
            if line not in lines:
                lines.append(line)
    return lines


def _numbers(text: str) -> set[str]:
    """ "53%", "53" and "53,0" are one number; "3,5" and "3.5" too."""
    found = set()
    for raw in _NUMBER.findall(text):
        value = raw.replace(",", ".")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        found.add(value.lstrip("0") or "0")
    return found
