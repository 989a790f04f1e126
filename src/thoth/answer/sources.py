"""The one aggregation of retrieved fragments into an answer's sources, shared by the answer
service and the evaluation bench: one document counts as one source, ordered by proximity
(the best rank any of its fragments reached) — except a FAQ table, whose every row is its own
source (issue 46): the row is the answer, and the source names it. A second copy could drift
from this one."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from thoth.answer.passage import link


class RankedFragment(Protocol):
    """What the aggregation reads of a retrieved fragment (RetrievedFragment fits)."""

    @property
    def rank(self) -> int: ...

    @property
    def doc_id(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def record_kind(self) -> str: ...

    @property
    def revision(self) -> str: ...

    @property
    def ordinal(self) -> int: ...

    @property
    def row(self) -> str | None:
        """A FAQ table's row (its id or number), None for any other fragment."""
        ...


def source_key(fragment: RankedFragment) -> tuple[str, str]:
    """What counts as one source: the document, or the document's FAQ row."""
    return fragment.doc_id, fragment.row or ""


@dataclass(frozen=True)
class Source:
    """One document an answer rests on: its display title, the identifier to go back to it,
    and the Git revision its text was read at (a document's source repository commit, or the
    workspace commit an Evidence Unit was published from); "" when the record has none."""

    title: str
    doc_id: str
    best_rank: int  # the best rank of its fragments: proximity, kept for ordering
    record_kind: str
    revision: str = ""
    fragment: int | None = None  # the ordinal of its best-ranked fragment: what the link opens
    labels: tuple[str, ...] = ()  # the labels the question was asked with: the link's own
    row: str | None = None  # a FAQ table's row: its id or number (the title says it too)

    @property
    def link(self) -> str:
        """Where the reader opens the passage it rests on (thoth.answer.passage), under the
        labels the question was asked with."""
        return link(self.doc_id, self.revision, self.fragment, self.labels)

    def as_dict(self) -> dict[str, str]:
        data = {
            "title": self.title,
            "doc_id": self.doc_id,
            "revision": self.revision,
            "link": self.link,
        }
        if self.row is not None:
            data["row"] = self.row
        return data


def aggregate_sources(fragments: Iterable[RankedFragment]) -> list[Source]:
    """One source per document (per row of a FAQ table, `source_key`), best rank first (ties:
    doc_id then row, so the order is stable). A row's title says which row it is."""
    best: dict[tuple[str, str], Source] = {}
    for frag in fragments:
        key = source_key(frag)
        seen = best.get(key)
        if seen is None or frag.rank < seen.best_rank:
            title = frag.title or frag.doc_id
            best[key] = Source(
                title=title if frag.row is None else f"{title}, row {frag.row}",
                doc_id=frag.doc_id,
                best_rank=frag.rank,
                record_kind=frag.record_kind,
                revision=frag.revision,
                fragment=frag.ordinal,
                row=frag.row,
            )
    return sorted(best.values(), key=lambda s: (s.best_rank, s.doc_id, s.row or ""))
