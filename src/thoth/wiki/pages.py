"""Curated wiki pages (level 2): Markdown in Git with front matter and declared caveats.

A page declares its title, channel and labels (inherited from its source unless declared), the
documents it refers to (optionally pinned to the version it was written against), the documents
that contradict it, and its caveats. Caveats come from the front matter and from a section whose
heading is one of the source's `caveat_headings`; they travel with every fragment of the page in
the text the model reads, never in the embedded text (see thoth.documents.records).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from thoth.config import Settings
from thoth.documents.chunk import chunk_blocks
from thoth.documents.extract import Block, Document, markdown_document
from thoth.documents.records import (
    MAX_YEAR,
    MIN_YEAR,
    RECORD_WIKI,
    KnowledgeFragment,
    caveats_for,
    doc_identifier,
)
from thoth.documents.sources import SourceFile
from thoth.errors import Problem, ProblemsError
from thoth.markup import split_front_matter

FRONT_MATTER_FIELDS = (
    "title",
    "channel",
    "labels",
    "documents",
    "contradicted_by",
    "caveats",
    "year",
    "knowledge",  # false: a page for curators only, never indexed (the metrics page)
)
MARKDOWN_SUFFIXES = (".md", ".markdown")
_DOC_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}:\S.*$")  # `<source>:<path>`
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_DOC_ID_HINT = "write it as `<source>:<path>`, e.g. `documenti:bandi/export-2025.pdf`"
LIST_ITEM = re.compile(r"^(?P<indent>[ \t]*)(?P<bullet>[-*+]|\d{1,9}[.)])(?:[ \t]+|$)(?P<text>.*)$")
_SECTION_NUMBER = re.compile(r"^\d{1,3}(?:\.\d{1,3})*\.?\s+")


@dataclass(frozen=True)
class PageRef:
    doc_id: str
    sha256: str | None  # pin: the document version the page was written against


@dataclass(frozen=True)
class WikiPage:
    doc_id: str
    source: str
    path: str
    title: str
    channel: str
    labels: tuple[str, ...]
    refers_to: tuple[PageRef, ...]
    contradicted_by: tuple[str, ...]
    caveats: tuple[str, ...]
    body: str  # the Markdown below the front matter
    sha256: str
    revision: str
    year: int | None = None


def _texts(value: object, doc_id: str, field: str, problems: list[Problem], hint: str) -> list[str]:
    """A list of non-empty strings (a single string is accepted as a list of one)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) and i.strip() for i in items):
        problems.append(
            Problem(doc_id, f"{field} must be a list of non-empty texts", field=field, hint=hint)
        )
        return []
    return [" ".join(item.split()) for item in items]


def _doc_ids(values: Iterable[str], doc_id: str, field: str, problems: list[Problem]) -> list[str]:
    good: list[str] = []
    for value in values:
        if _DOC_ID.match(value):
            good.append(value)
        else:
            problems.append(
                Problem(doc_id, f"{value!r} is not a document id", field=field, hint=_DOC_ID_HINT)
            )
    return good


def _refs(value: object, doc_id: str, problems: list[Problem]) -> list[PageRef]:
    hint = "list doc ids, or `{doc: <source>:<path>, sha256: <64 hex>}` to pin a version"
    if not isinstance(value, list):
        problems.append(Problem(doc_id, "documents must be a list", field="documents", hint=hint))
        return []
    refs: list[PageRef] = []
    for item in value:
        if isinstance(item, str):
            refs += [PageRef(ref, None) for ref in _doc_ids([item], doc_id, "documents", problems)]
            continue
        if not isinstance(item, dict) or not isinstance(item.get("doc"), str):
            problems.append(
                Problem(doc_id, f"cannot read document reference {item!r}", "documents", hint)
            )
            continue
        extra = sorted(str(key) for key in item if key not in ("doc", "sha256"))
        if extra:
            problems.append(
                Problem(
                    doc_id,
                    f"unknown field(s) {', '.join(extra)} in document reference {item['doc']!r}",
                    field="documents",
                    hint="a reference has `doc` and, optionally, `sha256`",
                )
            )
        pin = item.get("sha256")
        if pin is not None and not (isinstance(pin, str) and _SHA256.match(pin.lower())):
            problems.append(
                Problem(
                    doc_id,
                    f"sha256 of {item['doc']!r} is not 64 hexadecimal digits: {pin!r}",
                    field="documents",
                    hint="copy the document's sha256 from `tht docs` output or `sha256sum`",
                )
            )
            pin = None
        for ref in _doc_ids([item["doc"]], doc_id, "documents", problems):
            refs.append(PageRef(ref, pin.lower() if isinstance(pin, str) else None))
    return refs


def heading_key(text: str) -> str:
    # "3. Avvertenze:" in a numbered page is still the caveat section.
    return _SECTION_NUMBER.sub("", text).strip().rstrip(":").strip().casefold()


def _list_items(text: str) -> list[str]:
    """Top-level items of a Markdown list block; continuation and nested lines stay with their
    item, whitespace normalised (as `caveats_for` compares it)."""
    items: list[list[str]] = []
    base: int | None = None
    for line in text.split("\n"):
        match = LIST_ITEM.match(line)
        indent = len(match.group("indent").expandtabs(4)) if match else None
        if match and (base is None or (indent is not None and indent <= base)):
            base = indent if base is None else base
            items.append([match.group("text")])
        elif items:
            items[-1].append(line)
    return [" ".join(" ".join(item).split()) for item in items if " ".join(item).strip()]


def section_caveats(document: Document, headings: Sequence[str]) -> list[str]:
    """Caveats declared in a section whose heading (any level) is one of `headings`: each list
    item, or each paragraph when the section has no list, up to the next heading of the same or
    a higher level."""
    wanted = {heading_key(heading) for heading in headings}
    blocks = document.blocks
    caveats: list[str] = []
    index = 0
    while index < len(blocks):
        block = blocks[index]
        index += 1
        if block.kind != "heading" or heading_key(block.text) not in wanted:
            continue
        level = block.level or 1
        section: list[Block] = []
        while index < len(blocks) and not (
            blocks[index].kind == "heading" and (blocks[index].level or 1) <= level
        ):
            section.append(blocks[index])
            index += 1
        lists = [b for b in section if b.kind == "list"]
        if lists:
            caveats += [item for b in lists for item in _list_items(b.text)]
        else:
            caveats += [" ".join(b.text.split()) for b in section if b.kind == "paragraph"]
    return caveats


def _year(value: object, doc_id: str, problems: list[Problem]) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and MIN_YEAR <= value <= MAX_YEAR:
        return value
    problems.append(
        Problem(
            doc_id,
            f"year must be a year between {MIN_YEAR} and {MAX_YEAR}, got {value!r}",
            field="year",
            hint="write it as a number, e.g. `year: 2024`",
        )
    )
    return None


def parse_page(file: SourceFile, settings: Settings) -> WikiPage:
    """Read a wiki page: its front matter (checked against the declared channels and the label
    vocabulary) and its caveats. Every problem of the page is reported at once."""
    source = file.source
    doc_id = doc_identifier(source.name, file.path)
    if PurePosixPath(file.path).suffix.lower() not in MARKDOWN_SUFFIXES:
        raise ProblemsError(
            f"wiki page {doc_id} is invalid",
            [
                Problem(
                    doc_id,
                    "a wiki page must be a Markdown file (.md)",
                    hint="exclude the file from the wiki source's globs, or convert it",
                    code="unsupported",
                )
            ],
        )
    split = split_front_matter(file.text(), doc_id)
    meta, body = split.fields, split.body
    if meta is None:
        raise ProblemsError(
            f"wiki page {doc_id} is invalid",
            [
                Problem(
                    doc_id,
                    "no front matter",
                    field="title",
                    hint="start the page with a `---` line, `title: <page title>`, and a "
                    "closing `---` line",
                    code="front_matter",
                )
            ],
        )
    problems: list[Problem] = [
        Problem(
            doc_id,
            f"unknown front-matter field {key!r}",
            field=key,
            hint=f"accepted fields: {', '.join(FRONT_MATTER_FIELDS)}",
        )
        for key in meta
        if key not in FRONT_MATTER_FIELDS
    ]
    title = meta.get("title")
    if not isinstance(title, str) or not title.strip():
        problems.append(
            Problem(
                doc_id,
                "missing title" if title is None else f"title must be a text, got {title!r}",
                field="title",
                hint="add `title: <page title>` to the front matter",
            )
        )
    channel = meta.get("channel", source.channel)
    declared = [c.name for c in settings.channels]
    if channel not in declared:
        problems.append(
            Problem(
                doc_id,
                f"channel {channel!r} is not a declared channel",
                field="channel",
                hint=f"use one of: {', '.join(declared) or 'none declared: add [[channels]]'}",
            )
        )
    vocabulary = settings.answers.labels
    labels = (
        _texts(meta["labels"], doc_id, "labels", problems, f"use labels of: {vocabulary}")
        if "labels" in meta
        else list(source.labels)
    )
    for label in labels:
        if label not in vocabulary:
            problems.append(
                Problem(
                    doc_id,
                    f"label {label!r} is not in the label vocabulary",
                    field="labels",
                    hint=f"use labels of answers.labels: {', '.join(vocabulary)}",
                )
            )
    refs = _refs(meta["documents"], doc_id, problems) if "documents" in meta else []
    hint = "list the ids of the documents that contradict the page"
    contradicted = _doc_ids(
        _texts(meta.get("contradicted_by", []), doc_id, "contradicted_by", problems, hint),
        doc_id,
        "contradicted_by",
        problems,
    )
    declared_caveats = _texts(
        meta.get("caveats", []), doc_id, "caveats", problems, "list one caveat per item"
    )
    year = _year(meta["year"], doc_id, problems) if "year" in meta else None
    if problems:
        raise ProblemsError(f"wiki page {doc_id} is invalid: {len(problems)} problem(s)", problems)
    assert isinstance(title, str) and isinstance(channel, str)  # checked above
    document = markdown_document(body, Path(doc_id), source.heading_dialect)
    caveats = declared_caveats + section_caveats(document, source.caveat_headings)
    return WikiPage(
        doc_id=doc_id,
        source=source.name,
        path=file.path,
        title=" ".join(title.split()),
        channel=channel,
        labels=tuple(dict.fromkeys(labels)),
        refers_to=tuple(refs),
        contradicted_by=tuple(dict.fromkeys(contradicted)),
        caveats=tuple(dict.fromkeys(caveats)),
        body=body,
        sha256=file.sha256,
        revision=file.revision,
        year=year,
    )


def page_fragments(page: WikiPage, settings: Settings) -> list[KnowledgeFragment]:
    """The page's fragments: its body chunked by blocks, each carrying the page's caveats
    except those already in its own text."""
    source = settings.source(page.source)
    document = markdown_document(page.body, Path(page.doc_id), source.heading_dialect)
    if not document.blocks:
        raise ProblemsError(
            f"wiki page {page.doc_id} has no content",
            [
                Problem(
                    page.doc_id,
                    "nothing below the front matter",
                    hint="write the page's content, or remove the page",
                    code="empty",
                )
            ],
        )
    refers_to = tuple(dict.fromkeys(ref.doc_id for ref in page.refers_to))
    return [
        KnowledgeFragment(
            record_kind=RECORD_WIKI,
            doc_id=page.doc_id,
            source=page.source,
            path=page.path,
            title=page.title,
            channel=page.channel,
            labels=page.labels,
            ordinal=piece.ordinal,
            text=piece.text,
            caveats=caveats_for(piece.text, page.caveats),
            page=None,
            heading_path=piece.heading_path,
            chunk_kind=piece.kind,
            doc_format="md",
            year=page.year,
            content_sha256=page.sha256,
            revision=page.revision,
            refers_to=refers_to,
        )
        for piece in chunk_blocks(document)
    ]
