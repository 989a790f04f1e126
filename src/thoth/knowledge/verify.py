"""`tht verify`: check the data where the tests check the code (seed 004, "come si misura").

The silent failures it catches: a correct filter that selects nothing because nobody labelled
the documents, a label value outside the governed vocabulary, a wiki page pointing at a document
that does not exist, or at another wiki page where a document is required (`contradicted_by`,
`documents`: admission decides on documents only, so such a reference would be ignored), and
fragments served as an older pipeline built them (`stale_fragments`: what the pipeline now does
better, they do not have until `tht docs sync --full`). It reads the sources at their committed
revision (without aligning them: verify changes nothing) and, when there is one, the active
generation.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

from thoth.config import Settings
from thoth.documents.records import (
    PIPELINE_VERSION,
    RECORD_DOCUMENT,
    RECORD_EVIDENCE,
    RECORD_WIKI,
)
from thoth.documents.sources import (
    GitMemo,
    SourceSnapshot,
    SourceUnavailable,
    read_source,
)
from thoth.errors import ProblemsError
from thoth.index.base import IndexRecord
from thoth.knowledge.ingest import admit
from thoth.wiki import WikiPage, parse_page
from thoth.workspace import Workspace

Level = Literal["error", "warning"]
# The records of a generation verify reads (schema records carry no labels).
VERIFIED_KINDS: Final = (RECORD_DOCUMENT, RECORD_WIKI, RECORD_EVIDENCE)


@dataclass(frozen=True)
class Finding:
    level: Level
    code: str
    where: str
    message: str
    hint: str = ""
    details: dict[str, Any] = field(default_factory=dict)  # counts, for --json readers


@dataclass
class VerifyReport:
    findings: list[Finding] = field(default_factory=list)
    documents: int = 0
    pages: int = 0
    indexed_records: int | None = None  # None: no active generation to check
    stale_fragments: int = 0  # document and page fragments built by an older pipeline

    @property
    def ok(self) -> bool:
        return not any(f.level == "error" for f in self.findings)

    def add(
        self,
        level: Level,
        code: str,
        where: str,
        message: str,
        hint: str = "",
        details: dict[str, Any] | None = None,
    ) -> None:
        self.findings.append(Finding(level, code, where, message, hint, details or {}))

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "documents": self.documents,
            "pages": self.pages,
            "indexed_records": self.indexed_records,
            "stale_fragments": self.stale_fragments,
            "errors": sum(f.level == "error" for f in self.findings),
            "warnings": sum(f.level == "warning" for f in self.findings),
            "findings": [asdict(f) for f in self.findings],
        }


def verify(ws: Workspace, indexed: Iterable[IndexRecord] | None = None) -> VerifyReport:
    """Every declared filter has documents to match, every label value is in the vocabulary,
    every wiki reference resolves. `indexed`: the records of the active generation, if any."""
    settings = ws.settings
    report = VerifyReport()
    snapshots: list[SourceSnapshot] = []
    memo = GitMemo()  # verify aligns nothing: each repository is asked once
    for source in settings.sources:
        try:
            snapshot = read_source(ws.root, source, align_first=False, memo=memo)
        except (SourceUnavailable, ProblemsError) as exc:
            report.add("error", "source_unreadable", f"sources.{source.name}", str(exc))
            continue
        snapshots.append(snapshot)
        if not snapshot.files:
            report.add(
                "error",
                "source_empty",
                f"sources.{source.name}",
                f"include {source.include} matches no committed file: `source={source.name}` "
                "can match nothing",
                "fix the globs or commit the files",
            )
        if snapshot.uncommitted:
            report.add(
                "warning",
                "uncommitted",
                f"sources.{source.name}",
                f"{len(snapshot.uncommitted)} changed file(s) not committed, not indexed: "
                + ", ".join(snapshot.uncommitted[:5]),
                "commit them, then `tht docs sync`",
            )

    pages = _pages(snapshots, settings, report)
    admissions = admit(snapshots, pages)
    served = [a for a in admissions if a.outcome != "not_knowledge"]
    report.documents = sum(a.kind == "document" for a in served)
    report.pages = sum(a.kind == "wiki" for a in served)
    page_by_id = {p.doc_id: p for p in pages}
    labels_of: dict[str, tuple[str, ...]] = {}
    channel_of: dict[str, str] = {}
    for snapshot in snapshots:
        for file in snapshot.files:
            labels_of[file.doc_id] = tuple(snapshot.source.labels)
            channel_of[file.doc_id] = snapshot.source.channel
    for page in pages:
        labels_of[page.doc_id], channel_of[page.doc_id] = page.labels, page.channel

    _check_filters(settings, served, labels_of, channel_of, report)
    _check_references(pages, set(labels_of), report)
    for a in admissions:
        if a.outcome == "curation":
            report.add("warning", "curation", a.doc_id, f"routed to curation: {a.reason}")
    for doc_id in sorted(d for d, labels in labels_of.items() if not labels):
        if doc_id in page_by_id or any(a.doc_id == doc_id for a in served):
            report.add(
                "warning",
                "unlabelled",
                doc_id,
                "has no label: it is indexed but never served (labels fail closed)",
                "declare `labels` on its source (or in the page's front matter)",
            )
    if indexed is not None:
        _check_index(settings, indexed, report)
    return report


def _pages(
    snapshots: list[SourceSnapshot], settings: Settings, report: VerifyReport
) -> list[WikiPage]:
    pages: list[WikiPage] = []
    for snapshot in snapshots:
        if snapshot.source.kind != "wiki":
            continue
        for file in snapshot.files:
            try:
                pages.append(parse_page(file, settings))
            except ProblemsError as exc:
                for problem in exc.problems:
                    code = "label_unknown" if problem.field == "labels" else "page_invalid"
                    report.add("error", code, file.doc_id, problem.render(), problem.hint or "")
    return pages


def _check_filters(
    settings: Settings,
    served: Iterable[Any],
    labels_of: dict[str, tuple[str, ...]],
    channel_of: dict[str, str],
    report: VerifyReport,
) -> None:
    channels: Counter[str] = Counter()
    labels: Counter[str] = Counter()
    for admission in served:
        channels[channel_of.get(admission.doc_id, "")] += 1
        labels.update(labels_of.get(admission.doc_id, ()))
    if settings.answers.evidence_channel:
        channels[settings.answers.evidence_channel] += 1
        labels.update(settings.answers.evidence_labels)
    for channel in settings.channels:
        if not channels[channel.name]:
            report.add(
                "error",
                "channel_empty",
                f"channels.{channel.name}",
                "no document or page is in this channel: routing to it finds nothing",
                "assign a source to it or remove the channel",
            )
    for label in settings.answers.labels:
        if not labels[label]:
            report.add(
                "warning",
                "label_unused",
                f"answers.labels.{label}",
                "no document carries this label: a caller limited to it sees nothing",
            )


# Why a page's reference must name a document, not another page, per front-matter field.
_NOT_A_PAGE = {
    "contradicted_by": (
        "contradicted_by must name a document: pages are curated, they are not routed to "
        "curation (the contradiction would be ignored and both pages served)"
    ),
    "documents": (
        "documents must name a document: a page's references and pins are checked against "
        "documents only (a pinned page that changes is never routed to curation)"
    ),
}


def _check_references(pages: list[WikiPage], known: set[str], report: VerifyReport) -> None:
    page_ids = {p.doc_id for p in pages}
    for page in pages:
        targets = [("documents", r.doc_id) for r in page.refers_to] + [
            ("contradicted_by", d) for d in page.contradicted_by
        ]
        for field_name, target in targets:
            if target in page_ids:
                report.add(
                    "error",
                    "reference_not_document",
                    page.doc_id,
                    f"{field_name} names wiki page {target}: {_NOT_A_PAGE[field_name]}",
                    f"list the document's id (`<source>:<path>`) under {field_name}, or "
                    f"reconcile the two pages and remove {target} from {field_name}",
                )
            elif target not in known:
                report.add(
                    "error",
                    "reference_unresolved",
                    page.doc_id,
                    f"refers to {target}, which no declared source holds",
                    "fix the doc id (`<source>:<path>`) or commit the document",
                )


def _check_index(settings: Settings, records: Iterable[IndexRecord], report: VerifyReport) -> None:
    vocabulary = set(settings.answers.labels)
    outside: dict[str, set[str]] = defaultdict(set)
    stale: dict[str, Counter[str]] = defaultdict(Counter)  # source -> doc id -> fragments
    built_by: dict[str, set[int]] = defaultdict(set)
    count = 0
    for record in records:
        payload = record.payload
        kind = payload.get("record_kind")
        if kind not in VERIFIED_KINDS:
            continue
        count += 1
        for label in payload.get("labels") or []:
            if label not in vocabulary:
                outside[str(label)].add(str(payload.get("doc_id")))
        # Evidence has its own pipeline version (evidence/manifest.yaml), checked by publish.
        version = int(payload.get("pipeline_version") or 0)
        if kind != RECORD_EVIDENCE and version < PIPELINE_VERSION:
            source = str(payload.get("source") or "?")
            stale[source][str(payload.get("doc_id"))] += 1
            built_by[source].add(version)
    report.indexed_records = count
    _report_stale(stale, built_by, report)
    for label, docs in sorted(outside.items()):
        report.add(
            "error",
            "label_unknown",
            f"index: {', '.join(sorted(docs)[:5])}",
            f"indexed with label {label!r}, which is not in the vocabulary "
            f"({', '.join(settings.answers.labels)})",
            "run `tht docs sync` (or add the label to [answers].labels if it is right)",
        )


def _report_stale(
    stale: dict[str, Counter[str]], built_by: dict[str, set[int]], report: VerifyReport
) -> None:
    """One warning per source whose fragments an older pipeline built: they are served as they
    were built (nothing is wrong with them), without what the pipeline now does better."""
    for source, documents in sorted(stale.items()):
        fragments = sum(documents.values())
        report.stale_fragments += fragments
        versions = sorted(built_by[source])
        worst = ", ".join(f"{d} ({n})" for d, n in documents.most_common(5))
        more = f" and {len(documents) - 5} more" if len(documents) > 5 else ""
        report.add(
            "warning",
            "stale_fragments",
            f"sources.{source}",
            f"{fragments} fragment(s) of {len(documents)} document(s) were built by pipeline "
            f"version {', '.join(map(str, versions))}, older than the current "
            f"{PIPELINE_VERSION}: {worst}{more}",
            "run `tht docs sync --full` to rebuild them",
            {
                "fragments": fragments,
                "documents": dict(sorted(documents.items())),
                "built_by": versions,
                "current": PIPELINE_VERSION,
            },
        )
