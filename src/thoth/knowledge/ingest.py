"""Admission and preparation: which declared files become knowledge, and their fragments.

Every file of every source passes one closed decision tree (`admit`), in this order:

1. NOT KNOWLEDGE: a `not_knowledge` glob of its source matches, a Markdown document's front
   matter says `knowledge: false` (forms, receipts, transmittal mails), or it is a domain
   expert's questionnaire. Excluded, listed.
2. ROUTED TO CURATION: a document a wiki page pinned to another version (sha256), or one a page
   declares contradicts it. Reported, not indexed: otherwise the service would serve two
   conflicting truths.
3. INDEXED, as is.

`prepare_document` and `prepare_page` turn an admitted file into `KnowledgeFragment`s;
`credential_problems` says where a prepared file carries a secret (thoth.secrets), so that sync
refuses it before anything is indexed.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from thoth.config import Settings, SourceSettings
from thoth.documents.chunk import Chunk, QaMarkers, chunk
from thoth.documents.extract import DocumentFormat, ExtractProgress, extract
from thoth.documents.records import MAX_YEAR, MIN_YEAR, RECORD_DOCUMENT, KnowledgeFragment
from thoth.documents.secretscan import (
    RAW_TEXT_FORMATS,
    SecretFinding,
    document_findings,
    text_findings,
)
from thoth.documents.sources import (
    SourceFile,
    SourceSnapshot,
    entity_override,
    first_match,
    title_override,
)
from thoth.entities import NO_ENTITIES, EntityList
from thoth.errors import Problem, ProblemsError
from thoth.knowledge.exemptions import NO_EXEMPTIONS, SecretExemptions, entry_yaml
from thoth.markup import split_front_matter
from thoth.periods import covered_quarters, label
from thoth.wiki.pages import MARKDOWN_SUFFIXES, WikiPage, page_fragments, parse_page
from thoth.wiki.questionnaire import is_questionnaire

Outcome = Literal["indexed", "not_knowledge", "curation"]
FileKind = Literal["document", "wiki"]

# The `doc_format` payload value: one name per format, whatever the suffix (.htm, .xlsm ...).
_DOC_FORMAT: dict[DocumentFormat, str] = {
    "markdown": "md",
    "text": "txt",
    "html": "html",
    "pdf": "pdf",
    "docx": "docx",
    "xlsx": "xlsx",
    "csv": "csv",
}
_YEAR_IN_NAME = re.compile(r"(?<!\d)(19\d\d|20\d\d)(?!\d)")


@dataclass(frozen=True)
class Admission:
    doc_id: str
    source: str
    path: str
    kind: FileKind
    outcome: Outcome
    reason: str  # human readable: why this outcome, and what to do when it needs action


@dataclass(frozen=True)
class PreparedDocument:
    doc_id: str
    source: str
    path: str
    title: str
    kind: FileKind
    channel: str
    labels: tuple[str, ...]
    year: int | None
    sha256: str
    revision: str
    fragments: tuple[KnowledgeFragment, ...]
    notes: tuple[str, ...] = ()  # extraction notes for the run report (e.g. scanned pages)
    entity: str | None = None  # the entity the document belongs to (thoth.entities)
    # What the secret scanner found in the file as written and as extracted (never a value).
    secrets: tuple[SecretFinding, ...] = ()


# --------------------------------------------------------------------------------------------
# Raw documents' front matter


@dataclass(frozen=True)
class _DocumentMeta:
    title: str | None = None
    year: int | None = None
    knowledge: bool = True
    entity: str | None = None


def _is_markdown(path: str) -> bool:
    return PurePosixPath(path).suffix.lower() in MARKDOWN_SUFFIXES


def _document_meta(file: SourceFile) -> _DocumentMeta:
    """Front matter of a raw Markdown document: `title`, `year`, `knowledge`, `entity`. Other
    keys are ignored: raw documents are not curated, only these change what Thoth does."""
    if not _is_markdown(file.path):
        return _DocumentMeta()
    meta = split_front_matter(file.text(), file.doc_id).fields
    if not meta:
        return _DocumentMeta()
    problems: list[Problem] = []

    def check(key: str, ok: bool, expected: str, example: str) -> Any:
        value = meta.get(key)
        if value is None:
            return None
        if ok:
            return value
        problems.append(
            Problem(
                file.doc_id,
                f"{key} must be {expected}, got {value!r}",
                field=key,
                hint=f"write it as `{example}` in the front matter",
            )
        )
        return None

    title, year, knowledge = meta.get("title"), meta.get("year"), meta.get("knowledge")
    title = check("title", isinstance(title, str) and bool(title.strip()), "a text", "title: …")
    year_ok = isinstance(year, int) and not isinstance(year, bool) and MIN_YEAR <= year <= MAX_YEAR
    year = check("year", year_ok, f"a year between {MIN_YEAR} and {MAX_YEAR}", "year: 2024")
    knowledge = check("knowledge", isinstance(knowledge, bool), "true or false", "knowledge: false")
    entity = meta.get("entity")
    entity = check("entity", isinstance(entity, str) and bool(entity.strip()), "an id", "entity: …")
    if problems:
        raise ProblemsError(f"cannot read the front matter of {file.doc_id}", problems)
    return _DocumentMeta(
        title=" ".join(title.split()) if title else None,
        year=year,
        knowledge=knowledge is not False,
        entity=entity.strip() if entity else None,
    )


# --------------------------------------------------------------------------------------------
# Admission


def _declares_not_knowledge(file: SourceFile) -> bool:
    try:
        return not _document_meta(file).knowledge
    except ProblemsError:
        # Unreadable front matter is not decided here: the file is admitted and
        # `prepare_document` raises the same error naming it, so it is never indexed silently.
        return False


def _questionnaire(file: SourceFile) -> bool:
    try:
        return is_questionnaire(file.text())
    except ProblemsError:
        return False  # not UTF-8: prepared later, and refused there naming the file


def _decide(
    file: SourceFile,
    kind: FileKind,
    contradictions: dict[str, list[str]],
    pins: Sequence[tuple[str, str, str]],
) -> tuple[Outcome, str]:
    source = file.source
    glob = first_match(file.path, source.not_knowledge)
    if glob is not None:
        return "not_knowledge", f"matches not_knowledge glob {glob!r}"
    # A wiki page may declare it too: the metrics page `tht analytics metrics-page` writes is
    # for curators, and structured figures never enter the semantic index (seed 004).
    if _is_markdown(file.path) and _declares_not_knowledge(file):
        return "not_knowledge", "front matter knowledge: false"
    # A domain expert's questionnaire holds wording nobody approved yet: never an answer,
    # even moved into an indexed folder with its front matter edited (thoth.wiki.questionnaire).
    if _is_markdown(file.path) and _questionnaire(file):
        return "not_knowledge", "a questionnaire for a domain expert (never indexed)"
    if kind == "wiki":
        return "indexed", f"declared source {source.name!r}"
    reasons = [
        f"changed since wiki page {page_id} pinned it (sha256 {pin[:8]}… -> "
        f"{file.sha256[:8]}…): review the page and update its pin"
        for ref_id, page_id, pin in pins
        if ref_id == file.doc_id and pin != file.sha256
    ]
    reasons += contradictions.get(file.doc_id, [])
    if reasons:
        return "curation", "; ".join(reasons)
    return "indexed", f"declared source {source.name!r}"


def admit(snapshots: Sequence[SourceSnapshot], pages: Sequence[WikiPage]) -> list[Admission]:
    """The closed decision tree for every file of every snapshot, in snapshot and path order.

    References from pages to documents that do not exist, and references to other wiki pages
    (a page is never routed to curation, so such a reference decides nothing here), are not
    decided here: `verify` reports them as errors.
    """
    contradictions: dict[str, list[str]] = {}
    for page in pages:
        for contradicting in page.contradicted_by:
            contradictions.setdefault(contradicting, []).append(
                f"wiki page {page.doc_id} declares it contradicts the page: review the page, "
                "then drop the document from its `contradicted_by`"
            )
    pins = [
        (ref.doc_id, page.doc_id, ref.sha256)
        for page in pages
        for ref in page.refers_to
        if ref.sha256 is not None
    ]
    admissions: list[Admission] = []
    for snapshot in snapshots:
        kind: FileKind = "wiki" if snapshot.source.kind == "wiki" else "document"
        for file in snapshot.files:
            outcome, reason = _decide(file, kind, contradictions, pins)
            admissions.append(
                Admission(file.doc_id, snapshot.source.name, file.path, kind, outcome, reason)
            )
    return admissions


# --------------------------------------------------------------------------------------------
# Preparation


@contextmanager
def _naming(doc_id: str, temp: Path) -> Iterator[None]:
    """Errors about the temporary copy name the document (`source:path`) instead."""
    try:
        yield
    except ProblemsError as exc:
        old = str(temp)

        def fix(text: str) -> str:
            return text.replace(old, doc_id)

        problems = [replace(p, where=fix(p.where), message=fix(p.message)) for p in exc.problems]
        raise type(exc)(fix(exc.summary), problems) from exc


def _year(meta: _DocumentMeta, path: str) -> int | None:
    if meta.year is not None:
        return meta.year
    found = _YEAR_IN_NAME.search(PurePosixPath(path).name)
    return int(found.group(1)) if found else None


def _check_fragments(doc_id: str, source: SourceSettings, count: int) -> None:
    """Bounded input: a file that becomes more fragments than its source allows is refused
    before anything is embedded (a 50 MB text file once became 46,029 fragments)."""
    limit = source.max_document_fragments
    if count <= limit:
        return
    raise ProblemsError(
        f"{doc_id}: {count:,} fragments, over the limit of source {source.name!r}; nothing "
        "was indexed",
        [
            Problem(
                doc_id,
                f"{count:,} fragments; the limit of source {source.name!r} is {limit:,}",
                field="max_document_fragments",
                hint=f"split the file, or raise max_document_fragments in the [[sources]] "
                f"entry {source.name!r} of thoth.toml (at least {count})",
                code="too_many_fragments",
            )
        ],
        code="too_many_fragments",
    )


def prepare_document(
    file: SourceFile,
    settings: Settings,
    progress: ExtractProgress | None = None,
    entities: EntityList = NO_ENTITIES,
) -> PreparedDocument:
    """Extract and chunk one document of a `documents` source into its fragments, with the
    source's heading dialect, strategy, channel and labels, and its entity (`entities`: the
    workspace's list). `progress(done, total)` follows the extraction (pages of a PDF, rows of
    a workbook)."""
    source = settings.source(file.source.name)
    doc_id = file.doc_id
    meta = _document_meta(file)
    year = _year(meta, file.path)
    if source.year_expected and year is None:
        where = "the file name (e.g. report-2024.pdf)"
        if _is_markdown(file.path):
            where = "the front matter (`year: 2024`) or to the file name"
        raise ProblemsError(
            f"{doc_id}: no year, and source {source.name!r} expects one",
            [
                Problem(
                    doc_id,
                    "no year in the front matter or in the file name",
                    field="year",
                    hint=f"add the year to {where}, or set year_expected = false for the source",
                    code="year_missing",
                )
            ],
        )
    markers = None
    if source.strategy == "qa":
        markers = QaMarkers.prefixes(source.qa_markers.question, source.qa_markers.answer)
    with tempfile.TemporaryDirectory(prefix="thoth-doc-") as tmp:
        # The extractors read files: a copy of the committed bytes, with the same name.
        temp = Path(tmp) / PurePosixPath(file.path).name
        temp.write_bytes(file.data)
        with _naming(doc_id, temp):
            document = extract(temp, heading_dialect=source.heading_dialect, progress=progress)
            columns = (source.qa_columns[0], source.qa_columns[1]) if source.qa_columns else None
            chunks = chunk(
                document,
                source.strategy,
                qa_markers=markers,
                qa_columns=columns,
                qa_keep_columns=source.qa_keep_columns,
                qa_id_column=source.qa_id_column,
            )
            raw = file.text() if document.format in RAW_TEXT_FORMATS else None
            secrets = tuple(document_findings(file.data, document.format, document, raw))
    _check_fragments(doc_id, source, len(chunks))
    # A title given in thoth.toml wins over the front matter's and the extracted one.
    title = title_override(source, file.path) or meta.title or document.title
    entity, entity_note = _entity(file, meta, title, chunks, entities)
    periods = tuple(sorted(label(q) for q in covered_quarters("\n".join(c.text for c in chunks))))
    fragments = tuple(
        KnowledgeFragment(
            record_kind=RECORD_DOCUMENT,
            doc_id=doc_id,
            source=source.name,
            path=file.path,
            title=title,
            channel=source.channel,
            labels=tuple(source.labels),
            ordinal=piece.ordinal,
            text=piece.text,
            page=piece.page,
            heading_path=piece.heading_path,
            chunk_kind=piece.kind,
            doc_format=_DOC_FORMAT[document.format],
            year=year,
            content_sha256=file.sha256,
            revision=file.revision,
            entity=entity,
            periods=periods,
            qa_row=piece.row,
        )
        for piece in chunks
    )
    return PreparedDocument(
        doc_id=doc_id,
        source=source.name,
        path=file.path,
        title=title,
        kind="document",
        channel=source.channel,
        labels=tuple(source.labels),
        year=year,
        sha256=file.sha256,
        revision=file.revision,
        fragments=fragments,
        notes=(*document.notes, *entity_note),
        entity=entity,
        secrets=secrets,
    )


def _entity(
    file: SourceFile,
    meta: _DocumentMeta,
    title: str,
    chunks: Sequence[Chunk],
    entities: EntityList,
) -> tuple[str | None, tuple[str, ...]]:
    """The document's entity and the run report's note when none is found: the front
    matter's, else thoth.toml's, else the one its title, path and opening name most. A named
    entity that is not in the list is an error: the document would be out of every scope."""
    source = file.source
    declared = [
        (f"the front matter of {file.doc_id}", "entity", meta.entity),
        (f"sources.{source.name}.entities", file.path, entity_override(source, file.path)),
    ]
    for where, key, value in declared:
        if value is None:
            continue
        if entities.get(value) is None:
            known = ", ".join(sorted(entities.entities)) or "none: set `entities` in thoth.toml"
            raise ProblemsError(
                f"{file.doc_id}: entity {value!r} is not in the workspace's entity list",
                [
                    Problem(
                        where,
                        f"entity {value!r} of {key} is not in the entity list (known: {known})",
                        field="entity",
                        hint="add it to the entity list, or fix the id",
                        code="entity_unknown",
                    )
                ],
            )
        return value, ()
    if not entities:
        return None, ()
    opening = "\n".join(c.text for c in chunks[:12])
    found = entities.of_document(title, file.path, opening)
    if found is not None:
        return found, ()
    return None, (
        f"{file.doc_id}: no entity found in its title, path or opening -> name it in "
        f"thoth.toml (sources.{source.name}.entities) or in the front matter (`entity: id`); "
        "a question naming an entity never reads it",
    )


def prepare_page(file: SourceFile, settings: Settings) -> PreparedDocument:
    """One wiki page: front matter checked, body chunked, caveats on every fragment."""
    page = parse_page(file, settings)
    fragments = tuple(page_fragments(page, settings))
    _check_fragments(page.doc_id, settings.source(file.source.name), len(fragments))
    return PreparedDocument(
        doc_id=page.doc_id,
        source=page.source,
        path=page.path,
        title=page.title,
        kind="wiki",
        channel=page.channel,
        labels=page.labels,
        year=page.year,
        sha256=page.sha256,
        revision=page.revision,
        fragments=fragments,
        secrets=tuple(text_findings(file.text())),
    )


# --------------------------------------------------------------------------------------------
# Secrets

_SECRET_HINT = (
    "remove the secret from the file (or replace it with a placeholder such as <password>) "
    "and commit; nothing is indexed until no file carries one. If a reviewer finds it is not "
    "a secret, exempt it: add this entry to secret-exemptions.yaml and commit it: {entry}"
)


def credential_check(
    doc: PreparedDocument, exemptions: SecretExemptions = NO_EXEMPTIONS
) -> tuple[list[Problem], list[dict[str, str]]]:
    """The secrets of a prepared file as `credential` Problems, naming the file (`source:path`),
    the place (line; page or section and line of its text; sheet and cell) and the finding's
    digest, never the secret; and the findings a reviewed exemption covers (file, kind, place,
    digest, reviewed_by, reason), which the sync reports instead of refusing."""
    problems: list[Problem] = []
    exempted: list[dict[str, str]] = []
    for f in doc.secrets:
        entry = exemptions.match(doc.doc_id, f.kind, f.digest)
        if entry is not None:
            exempted.append(
                {
                    "doc_id": doc.doc_id,
                    "kind": f.kind,
                    "place": f.place,
                    "digest": f.digest,
                    "reviewed_by": entry.reviewed_by,
                    "reason": entry.reason,
                }
            )
            continue
        problems.append(
            Problem(
                doc.doc_id,
                f"contains what looks like a credential ({f.kind}) on {f.place} "
                f"[digest {f.digest}]",
                hint=_SECRET_HINT.format(entry=entry_yaml(doc.doc_id, f.kind, f.digest)),
                code="credential",
            )
        )
    return problems, exempted


def credential_problems(file: SourceFile, doc: PreparedDocument) -> list[Problem]:
    """One `credential` Problem per secret in a prepared file (`credential_check` without
    exemptions); `file` is the file `doc` was prepared from."""
    if file.doc_id != doc.doc_id:
        raise ValueError(f"{doc.doc_id} was not prepared from {file.doc_id}")
    return credential_check(doc)[0]
