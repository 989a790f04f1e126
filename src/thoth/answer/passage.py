"""Sources you can open: the link every source of an answer carries, and the passage it opens.

A link names the source (`doc_id`), the revision the answer read it at, the fragment it
rests on and the labels the question was asked with:
`/v1/passage?doc_id=...&revision=...&fragment=N&labels=...`, so it opens as given (the labels
are still resolved against the opening caller's ceiling). The passage is that fragment with
its neighbours, highlighted, with its page and heading path, read from the active generation
— the text the answer was written from, never the working tree. The same label rule as the
answer applies: every fragment must carry only labels the request may see, or the link is
refused with `source_not_allowed` and shows nothing. A source no generation serves (a path
outside the sources, an id of another workspace) is `source_not_found`; a revision other than
one a sync served is `revision_not_served`. A revision some earlier sync served, which the
index no longer holds, opens through `earlier` (thoth.knowledge.history: the file at that
commit, prepared again by the same pipeline).
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
from thoth.index.records import (
    EvidencePayload,
    FragmentPayload,
    parse_payload,
    position,
    read_at,
)

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


def link(doc_id: str, revision: str, fragment: int | None, labels: Sequence[str] = ()) -> str:
    """The link of a source: relative to the service, with what identifies the passage and
    the labels it was found under (one `labels` parameter each; none: the default labels)."""
    query: list[tuple[str, str | int]] = [("doc_id", doc_id), ("revision", revision)]
    if fragment is not None:
        query.append(("fragment", fragment))
    query += [("labels", label) for label in labels]
    return f"{LINK_PATH}?{urlencode(query)}"


@dataclass(frozen=True)
class Piece:
    """One fragment as a passage shows it, from the index or from an earlier revision."""

    ordinal: int
    page: int | None
    heading_path: tuple[str, ...]
    text: str
    caveats: tuple[str, ...]
    labels: tuple[str, ...]
    title: str
    kind: str  # document | wiki | evidence


# The fragments of a source at an earlier revision some sync served (None: none did).
Earlier = Callable[[str, str], Sequence[Piece] | None]


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
    earlier: Earlier | None = None,
) -> Passage:
    """The passage a link opens, under `allowed` labels (see the module). A revision the
    index no longer serves opens through `earlier`, when a sync served it."""
    readable_gen = reader.active()
    with reader.guard():
        records = list(readable_gen.store.scroll({"doc_id": doc_id, "workspace_id": workspace}))
    payloads = [
        p
        for p in (parse_payload(r.payload, r.id) for r in records)
        if isinstance(p, FragmentPayload | EvidencePayload)
    ]
    _may_see(doc_id, [tuple(p.labels) for p in payloads], allowed)
    url: str | None = None
    if payloads and revision in {read_at(p) for p in payloads}:
        pieces = [_piece(p) for p in payloads]
        evidence = [p for p in payloads if isinstance(p, EvidencePayload)]
        if evidence and evidence[0].evidence_kind == "reference":
            url = reference_url(evidence[0])
    else:
        older = earlier(doc_id, revision) if earlier is not None else None
        if older is None:
            if not payloads:
                raise SourceNotFound(
                    f"no source {doc_id[:200]!r} is served in workspace {workspace} -> open "
                    "the links of an answer of this workspace"
                )
            raise RevisionNotServed(
                f"source {doc_id!r} was never served at revision {revision[:40]!r} -> the "
                "link was altered, or the answer came from a revision no sync served: ask "
                "the question again"
            )
        pieces = list(older)
        _may_see(doc_id, [p.labels for p in pieces], allowed)
    ordered = sorted(pieces, key=lambda p: p.ordinal)
    ordinals = [p.ordinal for p in ordered]
    chosen = ordinals[0] if fragment is None else fragment
    if chosen not in ordinals:
        raise RequestError(
            f"source {doc_id!r} has no fragment {fragment} (it has {len(ordinals)}) -> open the "
            "link as the answer gave it",
            code="fragment_not_found",
        )
    at = ordinals.index(chosen)
    window = ordered[max(0, at - WINDOW) : at + WINDOW + 1]
    shown = ordered[at]
    return Passage(
        doc_id=doc_id,
        kind=shown.kind,
        title=shown.title,
        revision=revision,
        generation=readable_gen.id,
        fragment=chosen,
        page=shown.page,
        heading_path=shown.heading_path,
        fragments=tuple(
            PassageFragment(
                p.ordinal, p.page, p.heading_path, p.text, p.caveats, p.ordinal == chosen
            )
            for p in window
        ),
        url=url,
    )


def _may_see(doc_id: str, carried: Sequence[tuple[str, ...]], allowed: Sequence[str]) -> None:
    if not all(readable(labels, allowed) for labels in carried):
        raise SourceNotAllowed(
            f"source {doc_id[:200]!r} carries labels outside {', '.join(allowed)}: nothing of "
            "it is shown -> ask with labels your caller may use, or ask an administrator"
        )


def _piece(p: FragmentPayload | EvidencePayload) -> Piece:
    return Piece(
        position(p), _page(p), _headings(p), p.text, tuple(p.caveats), tuple(p.labels),
        p.title, p.record_kind,
    )  # fmt: skip


def _page(p: FragmentPayload | EvidencePayload) -> int | None:
    return p.page if isinstance(p, FragmentPayload) else None


def _headings(p: FragmentPayload | EvidencePayload) -> tuple[str, ...]:
    if isinstance(p, EvidencePayload):
        return (p.fragment_section,) if p.fragment_section else ()
    return tuple(p.heading_path)
