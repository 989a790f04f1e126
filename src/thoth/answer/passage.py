"""Sources you can open: the link every source of an answer carries, and the passage it opens.

A link names the source (`doc_id`), the revision the answer read it at and the fragment it
rests on: `/v1/passage?doc_id=...&revision=...&fragment=N`. The passage is that fragment with
its neighbours, highlighted, with its page and heading path, read from the active generation
— the text the answer was written from, never the working tree. The same label rule as the
answer applies: every fragment must carry only labels the request may see, or the link is
refused with `source_not_allowed` and shows nothing. A source no generation serves (a path
outside the sources, an id of another workspace) is `source_not_found`; a revision other than
the one served (forged, or the source changed since) is `revision_not_served`: ask again.
A `reference` Evidence Unit passes on its own URL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final
from urllib.parse import urlencode

from thoth.answer.scope import readable
from thoth.errors import RequestError, ThothError
from thoth.index.reader import GenerationReader
from thoth.index.records import EvidencePayload, FragmentPayload, parse_payload

LINK_PATH: Final = "/v1/passage"
WINDOW: Final = 2  # fragments shown on each side of the highlighted one


class SourceNotFound(ThothError):
    """No source with that id is served to this workspace."""

    code = "source_not_found"


class SourceNotAllowed(ThothError):
    """The source carries a label the request may not see: nothing of it is shown."""

    code = "source_not_allowed"


class RevisionNotServed(ThothError):
    """The link's revision is not the one the index serves for that source."""

    code = "revision_not_served"


def link(doc_id: str, revision: str, fragment: int | None) -> str:
    """The link of a source: relative to the service, with what identifies the passage."""
    query: dict[str, str | int] = {"doc_id": doc_id, "revision": revision}
    if fragment is not None:
        query["fragment"] = fragment
    return f"{LINK_PATH}?{urlencode(query)}"


@dataclass(frozen=True)
class PassageFragment:
    ordinal: int
    page: int | None
    heading_path: tuple[str, ...]
    text: str
    caveats: tuple[str, ...]
    highlight: bool


@dataclass(frozen=True)
class Passage:
    doc_id: str
    kind: str  # document | wiki | evidence
    title: str
    revision: str
    generation: str
    fragment: int  # the highlighted one
    page: int | None
    heading_path: tuple[str, ...]
    fragments: tuple[PassageFragment, ...]
    url: str | None = None  # a `reference` unit's own URL

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_passage(
    reader: GenerationReader,
    workspace: str,
    doc_id: str,
    revision: str,
    fragment: int | None,
    allowed: Sequence[str],
    reference_url: Callable[[EvidencePayload], str | None] = lambda _: None,
) -> Passage:
    """The passage a link opens, under `allowed` labels (see the module)."""
    readable_gen = reader.active()
    with reader.guard():
        records = list(readable_gen.store.scroll({"doc_id": doc_id, "workspace_id": workspace}))
    payloads = [
        p
        for p in (parse_payload(r.payload, r.id) for r in records)
        if isinstance(p, FragmentPayload | EvidencePayload)
    ]
    if not payloads:
        raise SourceNotFound(
            f"no source {doc_id[:200]!r} is served in workspace {workspace} -> open the links "
            "of an answer of this workspace; a removed document has no passage"
        )
    if not all(readable(p.labels, allowed) for p in payloads):
        raise SourceNotAllowed(
            f"source {doc_id[:200]!r} carries labels outside {', '.join(allowed)}: nothing of "
            "it is shown -> ask with labels your caller may use, or ask an administrator"
        )
    served = {_revision(p) for p in payloads}
    if revision not in served:
        raise RevisionNotServed(
            f"source {doc_id!r} is not served at revision {revision[:40]!r} (served: "
            f"{', '.join(sorted(r[:12] for r in served))}) -> the source changed since the "
            "answer, or the link was altered: ask the question again"
        )
    ordered = sorted(payloads, key=_ordinal)
    ordinals = [_ordinal(p) for p in ordered]
    chosen = ordinals[0] if fragment is None else fragment
    if chosen not in ordinals:
        raise RequestError(
            f"source {doc_id!r} has no fragment {fragment} (it has {len(ordinals)}) -> open the "
            "link as the answer gave it",
            code="fragment_not_found",
        )
    at = ordinals.index(chosen)
    window = ordered[max(0, at - WINDOW) : at + WINDOW + 1]
    first = ordered[at]
    return Passage(
        doc_id=doc_id,
        kind=first.record_kind,
        title=first.title,
        revision=revision,
        generation=readable_gen.id,
        fragment=chosen,
        page=_page(first),
        heading_path=_headings(first),
        fragments=tuple(
            PassageFragment(
                _ordinal(p), _page(p), _headings(p), p.text, tuple(p.caveats), _ordinal(p) == chosen
            )
            for p in window
        ),
        url=reference_url(first)
        if isinstance(first, EvidencePayload) and first.evidence_kind == "reference"
        else None,
    )


def _revision(p: FragmentPayload | EvidencePayload) -> str:
    return p.workspace_revision if isinstance(p, EvidencePayload) else p.revision


def _ordinal(p: FragmentPayload | EvidencePayload) -> int:
    return p.fragment_ordinal if isinstance(p, EvidencePayload) else p.ordinal


def _page(p: FragmentPayload | EvidencePayload) -> int | None:
    return p.page if isinstance(p, FragmentPayload) else None


def _headings(p: FragmentPayload | EvidencePayload) -> tuple[str, ...]:
    if isinstance(p, EvidencePayload):
        return (p.fragment_section,) if p.fragment_section else ()
    return tuple(p.heading_path)
