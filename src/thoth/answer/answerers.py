"""Answerers: turn an assembled context into the answer's text.

- `ExtractiveAnswerer` (the offline default, no model): quotes the retrieved sentences that
  best overlap the question, with [n] markers, puts a source's warning right next to any quoted
  sentence whose number the warning mentions, then lists every caveat verbatim.
- `ModelAnswerer` (OpenAI-compatible or Anthropic): system prompt = the caller's instructions
  + the honesty floor; user message = question + numbered context. A model failure is an
  error naming provider, model and server: never retried, never replaced by the extractive
  answer (that would hide the failure behind a different kind of answer).

`make_answerer(settings)` is the one place the configuration picks one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from thoth.answer.context import AssembledContext, ContextEntry, system_prompt, user_prompt
from thoth.answer.routing import fold
from thoth.answer.seams import NumericAnswer, Pseudonymizer
from thoth.answer.wording import Wording, wording_for
from thoth.config import Settings
from thoth.errors import ThothError
from thoth.index.bm25 import Bm25Encoder
from thoth.llm.client import LLMError, TextClient, text_client
from thoth.markup import markdown_table, table_cells

MAX_SENTENCES = 3
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_MARKUP = re.compile(r"^[\s#>*\-|]+|[\s|*]+$")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"\w+")
_DIGIT = re.compile(r"\d")
_LIST_ITEM = re.compile(r"^(?:[-*+•]|\d+[.)])\s")


class AnswerModelError(LLMError, ThothError):
    """The answer model failed; the message names provider, model and server."""


class Answerer(Protocol):
    name: str

    def answer(
        self,
        question: str,
        context: AssembledContext,
        *,
        instructions: str | None,
        pseudonymizer: Pseudonymizer,
    ) -> str:
        """The answer text for a context that is found, truncated or nothing_found."""
        ...

    def answer_figures(
        self,
        question: str,
        numeric: NumericAnswer,
        *,
        instructions: str | None,
        pseudonymizer: Pseudonymizer,
    ) -> str:
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
    ) -> str:
        system = system_prompt(instructions, context, self._wording)
        user = user_prompt(question, context, self._wording)
        try:
            reply = self._client.complete_text(
                pseudonymizer.protect(system), pseudonymizer.protect(user)
            )
        except LLMError as exc:
            raise AnswerModelError(
                f"answer model {self._client.name} at {self._client.base_url} failed: {exc} "
                "-> check that the server is up and [llm] in thoth.toml (provider, model, "
                'base_url, api_key_env), or set [answers].answerer = "extractive"'
            ) from exc
        return pseudonymizer.restore(reply)

    def answer_figures(
        self,
        question: str,
        numeric: NumericAnswer,
        *,
        instructions: str | None,
        pseudonymizer: Pseudonymizer,
    ) -> str:
        """The model words the figures; they reach it only through `protect_rows` (identities
        replaced, columns not recognised as harmless masked). The figures themselves, their
        data date and the query then follow as Thoth computed them, whatever the model wrote
        (and whatever the pseudonymiser masked from it)."""
        w = self._wording
        names = [c.name for c in numeric.columns]
        rows = pseudonymizer.protect_rows(
            names, numeric.rows, {c.name: c.kind for c in numeric.columns}
        )
        header = [c.label + (f" ({c.unit})" if c.unit else "") for c in numeric.columns]
        table = markdown_table(header, [[str(v) for v in row] for row in rows])
        dated = w.data_date.format(date=numeric.data_date)
        system = (
            (instructions or w.default_instructions)
            + "\n\n"
            + w.floor_heading
            + ("\n" + w.floor_ground)
        )
        user = (
            pseudonymizer.protect(f"{w.question_heading}\n{question}\n\n")
            + f"{w.numbers_heading}\n{pseudonymizer.protect(numeric.description)} ({dated})"
            + f"\n\n{table}"
        )
        try:
            reply = self._client.complete_text(pseudonymizer.protect(system), user)
        except LLMError as exc:
            raise AnswerModelError(
                f"answer model {self._client.name} at {self._client.base_url} failed: {exc} "
                "-> check that the server is up and [llm] in thoth.toml, or set "
                '[answers].answerer = "extractive"'
            ) from exc
        return f"{pseudonymizer.restore(reply).strip()}\n\n{numeric.text}"


@dataclass(frozen=True)
class _Sentence:
    entry: int  # index of its entry in the context (rank order)
    position: int  # within the entry's text
    text: str
    overlap: int  # distinct question terms it holds


class ExtractiveAnswerer:
    """Deterministic: the same context and question always give the same text."""

    name = "extractive"

    def __init__(self, language: str, wording: Wording) -> None:
        self._wording = wording
        self._terms = _term_function(language)

    def answer(
        self,
        question: str,
        context: AssembledContext,
        *,
        instructions: str | None,
        pseudonymizer: Pseudonymizer,
    ) -> str:
        # No model: nothing leaves the process, so the pseudonymizer has nothing to protect,
        # and there is no one to give the caller's instructions to.
        w = self._wording
        if not context.entries:
            if context.dropped_fragments:
                return w.all_dropped.format(fragments=context.dropped_fragments)
            return w.nothing_found
        parts: list[str] = []
        chosen = self._choose(question, context.entries)
        if chosen[0].overlap == 0:
            parts.append(w.no_overlap)
        parts.append("\n".join(self._quote(s, context.entries[s.entry]) for s in chosen))
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
    ) -> str:
        # No model: the figures as the analytics branch wrote them, data date included.
        return numeric.text

    def _choose(self, question: str, entries: tuple[ContextEntry, ...]) -> list[_Sentence]:
        asked = self._terms(question)
        found = [
            _Sentence(i, pos, text, len(asked & self._terms(text)))
            for i, entry in enumerate(entries)
            for pos, text in enumerate(_sentences(entry.fragment.record.text))
        ]
        if not found:
            return [_Sentence(0, 0, entries[0].fragment.record.text.strip(), 0)]
        # A title-like line (short, no figure, no final punctuation: a PDF section heading)
        # matches the question's words and says nothing: quoted only when nothing else matches.
        matching = sorted(
            (s for s in found if s.overlap),
            key=lambda s: (_title_like(s.text), -s.overlap, s.entry, s.position),
        )[:MAX_SENTENCES]
        if not matching:
            return [found[0]]  # the top fragment's first sentence: the closest passage
        return sorted(matching, key=lambda s: (s.entry, s.position))  # reading order

    def _quote(self, sentence: _Sentence, entry: ContextEntry) -> str:
        line = f"- «{sentence.text}» [{entry.marker}]"
        # A number the source flags must never travel without its warning: put it right here.
        numbers = _numbers(sentence.text)
        for caveat in entry.caveats:
            if numbers & _numbers(caveat):
                line += f"\n  {self._wording.number_warning} [{entry.marker}]: {caveat}"
        return line


def _sentences(text: str) -> list[str]:
    """The quotable units of a fragment: sentences of unwrapped paragraphs (PDF and Markdown
    lines are hard-wrapped: a sentence must not stop at a line end), list items one by one, and
    table rows spelled out with their header ("Codice: arancione; Attesa max: 15"), so a quoted
    cell never travels without the column that gives it meaning."""
    found: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        table = table_cells(block) if lines and lines[0].startswith("|") else None
        if table is not None:
            found += _table_rows(*table)
            continue
        paragraph: list[str] = []
        for line in [*lines, ""]:
            if paragraph and (not line or _LIST_ITEM.match(line) or line.startswith("#")):
                found += _split_sentences(" ".join(paragraph))
                paragraph = []
            # A heading names a section, it answers nothing: never quoted on its own.
            if line and not line.startswith("#"):
                paragraph.append(line)
    return found


def _title_like(text: str) -> bool:
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


def _table_rows(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    spelled = []
    for row in rows:
        pairs = [f"{h}: {c}" if h else c for h, c in zip(header, row, strict=False) if c]
        if pairs:
            spelled.append("; ".join(pairs))
    return spelled


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


def _term_function(language: str) -> Callable[[str], set[int | str]]:
    """Accent- and case-insensitive terms: BM25's own stems and stopwords for the language
    (so "ricoveri" meets "ricovero"), plain folded words for a language it has no stemmer for."""
    try:
        encoder = Bm25Encoder(language, 1.0)
    except ValueError:
        return lambda text: {w for w in _WORD.findall(fold(text)) if len(w) > 2}

    def stems(text: str) -> set[int | str]:
        return set(encoder.query(fold(text)).indices)

    return stems
