"""`tht docs show`: one document's fragments as the active generation stores them.

Read through the one generation reader (the active generation, its private read handle; no
shard is opened for writing). Each fragment shows both texts the answer engine keeps apart:
the search text (what the embedder and BM25 saw: title, heading path and text, made from the
payload by the same `search_text` docs sync used) and the read text (what an answerer reads
for it: the text and every caveat, joined by `reading_text` as the context does).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from thoth.documents.records import reading_text, search_text
from thoth.errors import RequestError
from thoth.index.base import IndexRecord
from thoth.index.reader import GenerationReader
from thoth.index.records import DOCUMENT_KINDS, FragmentPayload, parse_payload


class DocumentNotIndexed(RequestError):
    """No document or wiki page of the active generation has that id or path."""

    code = "document_not_indexed"


@dataclass(frozen=True)
class FragmentView:
    ordinal: int
    record_kind: str  # document | wiki
    chunk_kind: str  # text | table | qa
    heading_path: tuple[str, ...]
    page: int | None
    title: str
    labels: tuple[str, ...]
    channel: str
    search_text: str  # embedded and BM25-encoded
    read_text: str  # what the answerer reads: the text and its caveats
    caveats: tuple[str, ...]


@dataclass(frozen=True)
class DocumentView:
    doc_id: str
    source: str
    path: str
    doc_format: str
    revision: str
    year: int | None
    generation: str
    fragments: tuple[FragmentView, ...]
    entity: str | None = None  # whose the document is (thoth.entities)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def show_document(reader: GenerationReader, ref: str, caveat_label: str) -> DocumentView:
    """The fragments of the document or wiki page `ref` names, by doc id (`source:path`, as
    `tht docs sync` lists them) or by path when one document has it. DocumentNotIndexed, with
    the closest ids, when none does; Unreadable when the generation cannot be read."""
    readable = reader.active()
    kinds = list(DOCUMENT_KINDS)
    with reader.guard():
        records = list(readable.store.scroll({"doc_id": ref, "record_kind": kinds}))
        if not records:
            everything = list(readable.store.scroll({"record_kind": kinds}))
            records = [r for r in everything if r.payload.get("path") == ref]
            ids = sorted({str(r.payload.get("doc_id")) for r in records})
            if len(ids) > 1:
                raise RequestError(
                    f"{ref} is the path of {len(ids)} indexed documents ({', '.join(ids)}) -> "
                    "name one by its doc id",
                    code="document_ambiguous",
                )
            if not records:
                raise _not_indexed(ref, readable.id, everything)
    payloads = [_fragment(r) for r in records]
    payloads.sort(key=lambda p: p.ordinal)
    first = payloads[0]
    return DocumentView(
        doc_id=first.doc_id,
        source=first.source,
        path=first.path,
        doc_format=first.doc_format,
        revision=first.revision,
        year=first.year,
        generation=readable.id,
        fragments=tuple(_view(p, caveat_label) for p in payloads),
        entity=first.entity,
    )


def _fragment(record: IndexRecord) -> FragmentPayload:
    payload = parse_payload(record.payload, record.id)
    assert isinstance(payload, FragmentPayload)  # the scroll asked for document kinds only
    return payload


def _view(p: FragmentPayload, caveat_label: str) -> FragmentView:
    return FragmentView(
        ordinal=p.ordinal,
        record_kind=p.record_kind,
        chunk_kind=p.chunk_kind,
        heading_path=p.heading_path,
        page=p.page,
        title=p.title,
        labels=p.labels,
        channel=p.channel,
        search_text=search_text(p),
        read_text=reading_text(p, caveat_label),
        caveats=p.caveats,
    )


def _not_indexed(ref: str, generation: str, records: Iterable[IndexRecord]) -> DocumentNotIndexed:
    ids = sorted({str(r.payload.get("doc_id")) for r in records})
    close = difflib.get_close_matches(ref, ids, n=3, cutoff=0.5)
    hint = (
        f"did you mean {', '.join(close)}?"
        if close
        else "`tht docs sync` indexes the declared sources; name a document as its report does "
        "(source:path) or by its path"
    )
    return DocumentNotIndexed(
        f"no document or wiki page {ref!r} in the active generation {generation} -> {hint}"
    )
