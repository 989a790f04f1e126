"""`tht docs sync` (seed 004): Git-driven indexing of declared document and wiki sources.

The served copy of every source is read-only: sync aligns it to the latest revision and
re-indexes only what changed, into a new generation built like an Evidence publish (candidate
nobody reads, sealed, activated atomically). `full=True` rebuilds every document and page; the
report counts the fragments still built by an older pipeline, which must then be 0.

Failure rules (a mass re-index once swallowed its exceptions and took an index from 1,595
fragments to 6 while reporting "all ok"):
- every file is read, admitted and prepared (extracted + chunked) before anything is written;
  an error stops the run, names the file, and leaves the active generation untouched;
- a source that cannot be read stops the run; a source whose globs match nothing while its
  documents are indexed stops it too, instead of deleting them all;
- a thoth.toml changed by the alignment of the workspace stops the run before anything is
  built: the new files are never indexed with the settings read before the alignment;
- every run is recorded in the state store (`sync_runs`), failures included, with revisions,
  counts and every change by name; two overlapping runs are refused by a database constraint.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final, cast

from thoth.config import CONFIG_FILE, Settings, SourceSettings, load_settings
from thoth.documents.chunk import Chunk, ChunkKind, ChunkStats, chunk_stats
from thoth.documents.records import (
    PIPELINE_VERSION,
    RECORD_DOCUMENT,
    RECORD_WIKI,
    KnowledgeFragment,
    bm25_text,
    doc_identifier,
    fragment_point_id,
    search_text,
)
from thoth.documents.sources import SourceFile, SourceSnapshot, read_source
from thoth.embed.base import Embedder
from thoth.entities import load_entities
from thoth.errors import ConfigError, Problem, ThothError
from thoth.evidence.publish import evidence_stamp
from thoth.gitrepo import default_run_by, head_revision
from thoth.index.base import IndexRecord, IndexStore
from thoth.index.bm25 import Bm25Encoder, average_length, language_name
from thoth.index.build import (
    GenerationBuilder,
    Keep,
    Progress,
    RunLock,
    SyncOutcome,
    closing_row,
    embed_passages,
)
from thoth.index.generations import IndexBackend
from thoth.index.reader import open_generation
from thoth.index.records import DOCUMENT_KINDS as DOC_KINDS
from thoth.index.records import GENERATION_INDEXES, FragmentPayload, parse_payload
from thoth.index.records import RECORD_EVIDENCE as EVIDENCE_KIND
from thoth.knowledge.exemptions import EXEMPTIONS_FILE, load_exemptions
from thoth.knowledge.ingest import (
    Admission,
    PreparedDocument,
    admit,
    credential_check,
    prepare_document,
    prepare_page,
)
from thoth.state import Generation, StateStore
from thoth.wiki import WikiPage, parse_page
from thoth.workspace import Workspace, generation_revision

# Source settings that do not change how a file is prepared: labels and channel are compared
# on their own (a change is reported by name), the rest only selects files or bounds them.
# The language is compared on its own too, as resolved (a source without one follows the
# workspace's), so that it stays out of the fingerprints written before sources had one.
_NOT_PREPARATION: Final = frozenset(
    (
        "name",
        "language",
        "repo",
        "include",
        "exclude",
        "not_knowledge",
        "labels",
        "channel",
        "max_document_bytes",
        "max_document_fragments",
    )
)


class SyncError(ThothError):
    """The sync stopped; the message names the source or file and what to do."""


@dataclass
class SyncReport:
    """What one run read, decided and built; every change is listed by name."""

    run_id: int
    workspace: str
    full: bool
    run_by: str
    pipeline_version: int = PIPELINE_VERSION
    revisions: dict[str, str] = field(default_factory=dict)  # source -> commit
    generation: str | None = None
    previous_generation: str | None = None
    outcome: SyncOutcome = "failed"
    counts: dict[str, int] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)  # doc ids
    updated: list[str] = field(default_factory=list)
    deleted: list[dict[str, str]] = field(default_factory=list)  # doc_id, reason
    # doc_id (or evidence id), old, new labels; old_channel and new_channel when it changed too
    labels_changed: list[dict[str, Any]] = field(default_factory=list)
    not_knowledge: list[dict[str, str]] = field(default_factory=list)  # doc_id, reason
    curation: list[dict[str, Any]] = field(default_factory=list)  # doc_id, reason, kept
    uncommitted: dict[str, list[str]] = field(default_factory=dict)  # source -> paths
    warnings: list[str] = field(default_factory=list)
    notes: list[dict[str, str]] = field(default_factory=list)  # doc_id, extraction note
    # Findings of the secret scanner a reviewed entry of secret-exemptions.yaml covers: doc_id,
    # kind, place, digest, reviewed_by, reason (never the text).
    secrets_exempted: list[dict[str, str]] = field(default_factory=list)
    chunk_stats: ChunkStats | None = None  # of the fragments built by this run
    dropped_generations: list[str] = field(default_factory=list)
    # A generation this run created, then abandoned (dropped, marked failed) on an error.
    abandoned_generation: str | None = None
    # After a failure: which generation serves ("nothing was activated: ..." or "generation
    # ... was activated before the error ..."); empty when the run did not fail.
    after_failure: str = ""
    duration_s: float = 0.0
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def changes(self) -> dict[str, Any]:
        """The lists by name, as the run registry stores them."""
        return {
            "created": self.created,
            "updated": self.updated,
            "deleted": self.deleted,
            "labels_changed": self.labels_changed,
            "not_knowledge": self.not_knowledge,
            "curation": self.curation,
            "uncommitted": self.uncommitted,
            "warnings": self.warnings,
            "notes": self.notes,
            "secrets_exempted": self.secrets_exempted,
        }


@dataclass
class _Held:
    """One document or page as the active generation holds it (read from its payloads)."""

    kind: str
    source: str
    sha256: str
    labels: tuple[str, ...]
    channel: str
    title: str
    source_config: str
    fragments: int = 0
    stale: int = 0  # fragments built by an older pipeline version
    avg_len: float | None = None
    language: str = ""  # BM25 language its sparse vectors were encoded in (Qdrant's name)


@dataclass
class _Plan:
    carry: set[str] = field(default_factory=set)  # doc ids whose points are copied as they are
    build: list[tuple[Admission, SourceFile]] = field(default_factory=list)
    unchanged: int = 0
    # Carried doc ids whose payloads get new labels and channel (same ids and vectors): a
    # document kept for curation while its source's labels or channel changed.
    restamp: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    # Evidence units of the active generation stamped with other labels or channel than
    # [answers] now declares: restamped while carried (evidence id -> old labels, old channel).
    evidence: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)

    @property
    def restamps(self) -> bool:
        return bool(self.restamp or self.evidence)


@dataclass
class _Seen:
    """Documents and pages read back from a new generation, with its stale fragments."""

    docs: dict[str, set[str]] = field(default_factory=lambda: {k: set() for k in DOC_KINDS})
    stale: int = 0  # fragments built by an older pipeline version

    def add(self, rec: IndexRecord) -> None:
        kind = rec.payload.get("record_kind")
        if kind not in DOC_KINDS:
            return
        self.docs[str(kind)].add(str(rec.payload.get("doc_id")))
        if int(rec.payload.get("pipeline_version") or 0) < PIPELINE_VERSION:
            self.stale += 1


@dataclass(frozen=True)
class SyncPlan:
    """What a sync would do, read before any work (`tht docs sync --dry-run`)."""

    full: bool
    files: dict[str, int]  # source -> files its globs match
    to_build: list[str]  # doc ids that would be extracted, chunked and embedded
    build_bytes: int
    unchanged: int
    to_delete: list[str]
    not_knowledge: int
    stale_fragments: int  # carried fragments built by an older pipeline (--full rebuilds them)
    estimate_s: float | None
    estimate_basis: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def preparation_fingerprint(source: SourceSettings, entities: str = "") -> str:
    """A short hash of the source settings that change how its files are prepared, and of the
    entity list (`entities`: its digest) that decides each document's entity. Without a list
    (or qa_columns) the hash is the one written before the field existed: nothing is rebuilt
    for it."""
    data: dict[str, Any] = source.model_dump(mode="json", exclude=set(_NOT_PREPARATION))
    for later in ("entities", "qa_columns"):  # unset: the hash from before the field existed
        if not data[later]:
            del data[later]
    # Unset on a source that is not qa: the hash from before the field existed. A qa source's
    # hash changes once: its rows lost their other columns (issue 46) and are prepared again.
    if not data["qa_keep_columns"] and source.strategy != "qa":
        del data["qa_keep_columns"]
    # The same for qa_id_column: a qa source's rows now carry their id or number (issue 46).
    if data["qa_id_column"] is None and source.strategy != "qa":
        del data["qa_id_column"]
    if entities and source.kind == "documents":
        data["entity_list"] = entities
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode("utf-8")).hexdigest()[:16]


class DocsSync:
    """One `tht docs sync` of a workspace: `DocsSync(...).run(full=...)`."""

    def __init__(
        self,
        ws: Workspace,
        state: StateStore,
        backend: IndexBackend,
        embedder: Embedder,
        progress: Progress | None = None,
    ) -> None:
        self.ws = ws
        self.settings: Settings = ws.settings
        self.name = ws.settings.workspace
        self.state = state
        self.backend = backend
        self.embedder = embedder
        self.progress = progress or (lambda _phase, _done, _total: None)
        self.run_id: int | None = None  # set once the run row exists, failures included
        self.report: SyncReport | None = None  # the run's report, failures included
        self.recorded = False  # whether the run row was closed with the run's outcome
        # The entity list is read once, checked whole: a bad list stops the run before any read.
        self.entities = load_entities(ws.root, ws.settings.entities)
        self.exemptions = load_exemptions(ws.root)  # reviewed, committed; checked whole
        self._fingerprints = {
            s.name: preparation_fingerprint(s, self.entities.digest) for s in ws.settings.sources
        }
        # Each source's BM25 language, resolved (Qdrant's name): fragments are encoded in it.
        self._languages = {
            s.name: language_name(ws.settings.source_language(s)) for s in ws.settings.sources
        }
        self._builder = GenerationBuilder(state, backend, self.name, embedder, self.progress)
        self._active_store: IndexStore | None = None  # the active generation, once read

    def run(self, full: bool = False, run_by: str | None = None) -> SyncReport:
        """Sync every declared source; raises (after recording the run as failed) on error."""
        started = time.perf_counter()
        who = run_by or default_run_by(self.ws.root)
        lock = RunLock(
            self.state,
            self.name,
            kind="docs",
            run_by=who,
            full=full,
            pipeline_version=PIPELINE_VERSION,
        )
        try:
            # The run row is the lock: nothing is read or built before it exists.
            with lock:
                self.run_id = lock.run_id
                report = SyncReport(
                    run_id=self.run_id,
                    workspace=self.name,
                    full=full,
                    run_by=who,
                    pipeline_version=PIPELINE_VERSION,
                )
                self.report = report
                lock.closing = lambda failure: closing_row(
                    report, failure, started, report.revisions
                )
                self._sync(report)
        finally:
            self.recorded = lock.recorded
        return report

    def plan(self, full: bool = False) -> SyncPlan:
        """What `run(full)` would do now, read without aligning, building or recording
        anything (`tht docs sync --dry-run`): files per source at each repository's current
        HEAD (a run fast-forwards first), what would be built, carried and removed, and an
        estimate from this workspace's last run that built documents."""
        active = self.state.active_generation(self.name)
        snapshots = self._read(align_first=False)
        pages, admissions = self._admit(snapshots)
        scratch = SyncReport(run_id=0, workspace=self.name, full=full, run_by="dry-run")
        try:
            held = self._held(active) if active else {}
            plan = self._plan(scratch, snapshots, pages, admissions, held)
        finally:
            self._close_active()
        build = sorted(adm.doc_id for adm, _ in plan.build)
        per_doc, basis = self._seconds_per_document()
        return SyncPlan(
            full=full,
            files={s.source.name: len(s.files) for s in snapshots},
            to_build=build,
            build_bytes=sum(len(f.data) for _, f in plan.build),
            unchanged=plan.unchanged,
            to_delete=sorted(d["doc_id"] for d in scratch.deleted),
            not_knowledge=len(scratch.not_knowledge),
            stale_fragments=sum(held[d].stale for d in plan.carry),
            estimate_s=None if per_doc is None else round(per_doc * len(build), 1),
            estimate_basis=basis,
        )

    def _seconds_per_document(self) -> tuple[float | None, str]:
        """Seconds per built document of the last finished run that built any, and what the
        figure rests on."""
        for run in self.state.list_sync_runs(self.name, limit=50):
            built = int(run.counts.get("created", 0)) + int(run.counts.get("updated", 0))
            seconds = run.counts.get("duration_s")
            if run.kind == "docs" and run.status == "succeeded" and built and seconds:
                return (
                    float(seconds) / built,
                    f"run {run.id} built {built} document(s) in {float(seconds):.0f} s",
                )
        return None, "no earlier run built a document here: no estimate"

    # ------------------------------------------------------------------ steps

    def _sync(self, report: SyncReport) -> None:
        try:
            self._sync_steps(report)
        finally:
            self._close_active()

    def _close_active(self) -> None:
        store, self._active_store = self._active_store, None
        if store is not None:
            store.close()

    def _read(self, align_first: bool = True) -> list[SourceSnapshot]:
        """Every declared source at its commit (aligned first, unless a dry run)."""
        return [
            read_source(self.ws.root, s, align_first=align_first) for s in self.settings.sources
        ]

    def _admit(self, snapshots: Sequence[SourceSnapshot]) -> tuple[list[WikiPage], list[Admission]]:
        """The wiki pages parsed, and what is admitted for indexing."""
        pages = [
            parse_page(f, self.settings)
            for s in snapshots
            if s.source.kind == "wiki"
            for f in s.files
        ]
        return pages, admit(snapshots, pages)

    def _reading(self, active: Generation) -> IndexStore:
        """The active generation, opened once per run: each open is a verified private copy
        of the shard (thoth.index.reader.open_generation)."""
        if self._active_store is None:
            self._active_store = open_generation(self.backend, active)
        return self._active_store

    def _sync_steps(self, report: SyncReport) -> None:
        self._builder.discard_crashed()
        active = self.state.active_generation(self.name)
        report.previous_generation = active.id if active else None

        snapshots = self._read()
        report.revisions = {s.source.name: s.revision for s in snapshots}
        report.uncommitted = {
            s.source.name: list(s.uncommitted) for s in snapshots if s.uncommitted
        }
        self._check_settings_unchanged(snapshots)
        pages, admissions = self._admit(snapshots)

        held = self._held(active) if active else {}
        self._check_empty_sources(snapshots, held, report)
        self._check_languages_bridged(report)
        plan = self._plan(report, snapshots, pages, admissions, held)
        if active is not None:
            self._plan_evidence(report, plan, active)
        prepared = self._prepare(plan, report)
        self._record_changes(report, prepared, held)

        stale_kept = sum(held[d].stale for d in plan.carry)
        carried = sum(held[d].fragments for d in plan.carry)
        report.counts = {
            "documents_indexed": 0,
            "pages_indexed": 0,
            "unchanged": plan.unchanged,
            "created": len(report.created),
            "updated": len(report.updated),
            "deleted": len(report.deleted),
            "not_knowledge": len(report.not_knowledge),
            "curation": len(report.curation),
            "fragments_built": sum(len(d.fragments) for d in prepared),
            "fragments_carried": carried,
            "fragments_total": 0,
            "stale_fragments": 0,
            "records_other_kinds": 0,
        }
        nothing_to_do = (
            not report.full
            and not prepared
            and not report.deleted
            and not plan.restamps
            # A generation built before the label set was recorded gets one (nothing is
            # embedded again): readers fail closed on labels missing from it.
            and (active is None or "labels" in active.counts)
        )
        if nothing_to_do:
            # Same content as the active generation: no new generation, so routine syncs never
            # push rollback generations out of retention.
            report.outcome = "unchanged"
            report.generation = report.previous_generation
            report.counts.update(
                self._kinds_count(held, plan.carry),
                fragments_total=carried,
                stale_fragments=stale_kept,
                records_other_kinds=self._other_records(active),
            )
            report.message = (
                f"nothing changed: generation {report.generation} stays active"
                if report.generation
                else "nothing to index: no generation was built"
            )
        else:
            self._build(report, active, plan, prepared, held)
        if report.counts["stale_fragments"]:
            report.warnings.append(
                f"{report.counts['stale_fragments']} fragment(s) were built by a pipeline older "
                f"than version {PIPELINE_VERSION} -> run `tht docs sync --full` to rebuild them"
            )

    def _check_settings_unchanged(self, snapshots: Sequence[SourceSnapshot]) -> None:
        """The settings this run started with must still be thoth.toml's once the sources are
        aligned: when the workspace itself is a source repository, the fast-forward may bring
        a new thoth.toml (other labels, globs, sources) that this run did not read. Indexing the
        new files with the old settings would serve them under the wrong labels."""
        path = self.ws.root / CONFIG_FILE
        workspace = self.ws.root.resolve()
        revision = next(
            (s.revision for s in snapshots if s.repo_root.resolve() == workspace),
            None,
        ) or head_revision(self.ws.root)
        at = f"revision {revision[:12]}" if revision else "its current state"
        try:
            current = load_settings(self.ws.root)
        except ConfigError as exc:
            raise SyncError(
                f"{path} changed with the alignment of the workspace to {at} and is no longer "
                f"valid ({exc}); nothing was built -> fix thoth.toml upstream, then run "
                "`tht docs sync` again"
            ) from exc
        if current != self.settings:
            raise SyncError(
                f"{path} changed with the alignment of the workspace to {at}: this run "
                "started with the settings read before it, so nothing was built -> run "
                "`tht docs sync` again so the new settings apply"
            )

    def _held(self, active: Generation) -> dict[str, _Held]:
        """Documents and pages of the active generation; checks that the embedder fits it."""
        expected = active.config.get("embedder")
        store = self._reading(active)
        if store.dim != self.embedder.dim or (expected and expected != self.embedder.identity):
            raise SyncError(
                f"the active generation {active.id} was embedded with "
                f"{expected or 'an unrecorded model'} (dimension {store.dim}), this sync uses "
                f"{self.embedder.identity} (dimension {self.embedder.dim}): records of every "
                "kind share one collection, so `--full` is not enough -> restore the "
                "[embedding] settings of the active generation; a different model needs a "
                "rebuild of every kind (Evidence, documents, pages) into a new collection"
            )
        # Fragments written before sources had a language were encoded in the generation's.
        older = (active.config.get("docs") or {}).get("bm25") or active.config.get("bm25") or {}
        default_language = language_name(str(older.get("language") or self.settings.language))
        held: dict[str, _Held] = {}
        for rec in store.scroll({"record_kind": list(DOC_KINDS)}):
            p = parse_payload(rec.payload, rec.id)
            if not isinstance(p, FragmentPayload):  # the filter keeps other kinds out
                raise SyncError(f"point {rec.id}: a {p.record_kind} record among documents")
            entry = held.get(p.doc_id)
            if entry is None:
                entry = held[p.doc_id] = _Held(
                    kind=p.record_kind,
                    source=p.source,
                    sha256=p.content_sha256,
                    labels=_labels(p.labels),
                    channel=p.channel,
                    title=p.title,
                    source_config=p.source_config,
                    avg_len=p.bm25_avg_len,
                    language=p.bm25_language or default_language,
                )
            entry.fragments += 1
            if p.pipeline_version < PIPELINE_VERSION:
                entry.stale += 1
        return held

    def _check_empty_sources(
        self, snapshots: Sequence[SourceSnapshot], held: dict[str, _Held], report: SyncReport
    ) -> None:
        for snap in snapshots:
            if snap.files:
                continue
            name = snap.source.name
            indexed = sorted(d for d, h in held.items() if h.source == name)
            if indexed:
                raise SyncError(
                    f"source {name}: its include globs ({', '.join(snap.source.include)}) match "
                    f"no file at revision {snap.revision[:12]} of {snap.repo_root}, but "
                    f"{len(indexed)} of its documents are indexed ({', '.join(indexed[:5])}"
                    f"{', ...' if len(indexed) > 5 else ''}); refusing to delete them all -> fix "
                    "the globs or the repository; to retire the source on purpose, remove it "
                    "from thoth.toml"
                )
            report.warnings.append(
                f"source {name}: its include globs ({', '.join(snap.source.include)}) match no "
                f"file at revision {snap.revision[:12]} -> check them"
            )

    def _check_languages_bridged(self, report: SyncReport) -> None:
        """A source written in another language than the questions, and no glossary: the
        dense branch alone carries a question's words across, and the sync says so."""
        if self.settings.glossary is not None:
            return
        asked = self.settings.language
        for source in self.settings.sources:
            written = self.settings.source_language(source)
            if written.split("-")[0] != asked.split("-")[0]:
                report.warnings.append(
                    f"source {source.name} is written in {written!r}, questions are asked in "
                    f"{asked!r}, and no glossary says which terms mean the same: a question's "
                    "words meet its text through the dense branch only (BM25, the second stage "
                    "and the offline answer's choice of quotes see none of them) -> write a "
                    'glossary and name it in thoth.toml (glossary = "glossary.yaml", '
                    "docs/documents.md)"
                )

    def _plan(
        self,
        report: SyncReport,
        snapshots: Sequence[SourceSnapshot],
        pages: Sequence[WikiPage],
        admissions: Sequence[Admission],
        held: dict[str, _Held],
    ) -> _Plan:
        """Decide, for every admitted file, whether to carry its points, build it, or drop it."""
        files = {doc_identifier(f.source.name, f.path): f for s in snapshots for f in s.files}
        by_page = {p.doc_id: p for p in pages}
        plan = _Plan()
        seen: set[str] = set()
        for adm in sorted(admissions, key=lambda a: a.doc_id):
            seen.add(adm.doc_id)
            old = held.get(adm.doc_id)
            if adm.outcome == "not_knowledge":
                report.not_knowledge.append({"doc_id": adm.doc_id, "reason": adm.reason})
                if old is not None:
                    report.deleted.append(
                        {"doc_id": adm.doc_id, "reason": f"not knowledge: {adm.reason}"}
                    )
                continue
            file = files.get(adm.doc_id)
            if adm.outcome == "curation":
                # Keep the version the page was written against until the conflict is curated,
                # but under the labels and channel its source declares now: labels decide who
                # may read it, curation does not.
                kept = old.fragments if old is not None else 0
                if old is not None:
                    plan.carry.add(adm.doc_id)
                    if file is not None:
                        self._plan_restamp(report, plan, adm.doc_id, old, file.source)
                report.curation.append(
                    {"doc_id": adm.doc_id, "reason": adm.reason, "kept_fragments": kept}
                )
                continue
            if file is None:
                raise SyncError(
                    f"{adm.doc_id}: admitted for indexing but not among the files read from "
                    f"its source ({', '.join(sorted(files)[:3])}, ...) -> report this as a bug "
                    "of thoth.knowledge.ingest"
                )
            if not report.full and old is not None and self._unchanged(adm, file, old, by_page):
                plan.carry.add(adm.doc_id)
                plan.unchanged += 1
            else:
                plan.build.append((adm, file))
        declared = {s.name for s in self.settings.sources}
        for doc_id in sorted(set(held) - seen):
            source = held[doc_id].source
            reason = (
                f"no longer in source {source} (file deleted, or no longer matched by its globs)"
                if source in declared
                else f"source {source} is no longer declared in thoth.toml"
            )
            report.deleted.append({"doc_id": doc_id, "reason": reason})
        return plan

    def _unchanged(
        self, adm: Admission, file: SourceFile, old: _Held, pages: dict[str, WikiPage]
    ) -> bool:
        """Same content, same preparation settings and BM25 language, same labels and channel
        (and, for a wiki page, same title): the active generation's points are still right and
        need no new embedding. A newer pipeline version alone does not count (that is `--full`,
        and the stale counter)."""
        source = file.source
        same = (
            old.kind == adm.kind
            and old.sha256 == file.sha256
            and old.source_config == self._fingerprints[source.name]
            and old.language == self._languages[source.name]
        )
        if adm.kind == RECORD_WIKI:
            page = pages.get(adm.doc_id)
            if page is None:
                return False
            return (
                same
                and old.labels == _labels(page.labels)
                and old.channel == page.channel
                and old.title == page.title
            )
        # A document's title comes from its front matter or its extraction: it cannot be known
        # without extracting the file, and it is a function of what is compared above (the
        # bytes and the preparation settings; a new extractor is a new pipeline version, i.e.
        # `--full`), so it is not compared.
        return same and old.labels == _labels(source.labels) and old.channel == source.channel

    def _plan_restamp(
        self, report: SyncReport, plan: _Plan, doc_id: str, old: _Held, source: SourceSettings
    ) -> None:
        """A carried document whose source now declares other labels or channel: its payloads
        are restamped (labels and channel only) and the change is listed by name."""
        labels, channel = _labels(source.labels), source.channel
        if old.labels == labels and old.channel == channel:
            return
        plan.restamp[doc_id] = (tuple(source.labels), channel)  # as a build writes them
        report.labels_changed.append(
            _label_change(doc_id, old.labels, labels, old.channel, channel)
        )

    def _plan_evidence(self, report: SyncReport, plan: _Plan, active: Generation) -> None:
        """Evidence units are stamped with `[answers].evidence_labels` and `evidence_channel`
        when published; when thoth.toml changed them since, the sync restamps the carried
        records (same ids and vectors) so the labels served are the declared ones."""
        labels, channel = self._evidence_stamp()
        store = self._reading(active)
        for rec in store.scroll({"record_kind": EVIDENCE_KIND}):
            p = rec.payload
            unit = str(p.get("evidence_id") or p.get("doc_id") or rec.id)
            old = (_labels(p.get("labels") or []), str(p.get("channel") or ""))
            if old != (labels, channel) and unit not in plan.evidence:
                plan.evidence[unit] = old
        for unit, (old_labels, old_channel) in sorted(plan.evidence.items()):
            report.labels_changed.append(
                _label_change(unit, old_labels, labels, old_channel, channel)
            )

    def _evidence_stamp(self) -> tuple[tuple[str, ...], str]:
        """The stamp a publication writes, labels sorted: what a carried record is compared to."""
        labels, channel = evidence_stamp(self.settings.answers)
        return _labels(labels), channel

    def _prepare(self, plan: _Plan, report: SyncReport) -> list[PreparedDocument]:
        """Extract and chunk every file to build, before any index write: an error here stops
        the run with the active generation untouched."""
        prepared: list[PreparedDocument] = []
        secrets: list[Problem] = []
        total = len(plan.build)
        for n, (adm, file) in enumerate(plan.build, 1):
            # One bar follows the file being extracted (pages, rows), phase "extract <doc id>".
            phase = f"extract {adm.doc_id}"
            if adm.kind == RECORD_WIKI:
                doc = prepare_page(file, self.settings)
                self.progress(phase, 1, 1)
            else:
                doc = prepare_document(
                    file,
                    self.settings,
                    functools.partial(self.progress, phase),
                    self.entities,
                )
            _check_prepared(adm, doc)
            refused, exempted = credential_check(doc, self.exemptions)
            secrets += refused
            report.secrets_exempted += exempted
            prepared.append(doc)
            self.progress("prepare", n, total)
        _refuse_secrets(secrets)
        self._warn_unused_exemptions(report, prepared)
        return prepared

    def _warn_unused_exemptions(
        self, report: SyncReport, prepared: Sequence[PreparedDocument]
    ) -> None:
        """An exemption of a file scanned by this run that matched no finding is stale (the
        file changed): named, so the curator removes it."""
        built = {doc.doc_id for doc in prepared}
        used = {(e["doc_id"], e["kind"], e["digest"]) for e in report.secrets_exempted}
        for entry in self.exemptions.entries:
            if entry.file in built and (entry.file, entry.kind, entry.digest) not in used:
                report.warnings.append(
                    f"{EXEMPTIONS_FILE}: the exemption of {entry.file} ({entry.kind}, digest "
                    f"{entry.digest}) matches no finding any more -> remove it"
                )

    def _record_changes(
        self, report: SyncReport, prepared: Sequence[PreparedDocument], held: dict[str, _Held]
    ) -> None:
        for doc in prepared:
            report.notes += [{"doc_id": doc.doc_id, "note": note} for note in doc.notes]
            old = held.get(doc.doc_id)
            if old is None:
                report.created.append(doc.doc_id)
                continue
            report.updated.append(doc.doc_id)
            if old.labels != _labels(doc.labels):
                report.labels_changed.append(
                    {"doc_id": doc.doc_id, "old": list(old.labels), "new": list(doc.labels)}
                )

    def _build(
        self,
        report: SyncReport,
        active: Generation | None,
        plan: _Plan,
        prepared: Sequence[PreparedDocument],
        held: dict[str, _Held],
    ) -> None:
        fragments = [f for doc in prepared for f in doc.fragments]
        texts = [search_text(f) for f in fragments]  # title, headings, text: never the caveats
        languages = [self._languages[f.source] for f in fragments]
        terms = [bm25_text(f) for f in fragments]
        bm25 = self._encoders(report.full, plan, held, terms, languages)
        primary = self._primary_encoder(bm25, terms)
        vectors = embed_passages(self.embedder, texts, self.progress)
        report.chunk_stats = chunk_stats([_as_chunk(f) for f in fragments])

        revision = generation_revision(self.ws, self.state, active)
        docs_config = {
            "pipeline_version": PIPELINE_VERSION,
            "bm25": primary.config(),
            # Every language the documents and pages are encoded in: readers query BM25 once
            # per language (thoth.index.reader).
            "bm25_languages": {name: enc.config() for name, enc in sorted(bm25.items())},
            "sync_run": report.run_id,
            "revisions": report.revisions,
        }
        # The builder stamps the embedder, its dimension and the backend on top.
        config: dict[str, Any] = {**(active.config if active else {}), "docs": docs_config}
        config.setdefault("bm25", primary.config())  # the query language for readers of any kind
        build = self._builder.begin(
            revision,
            config,
            source=active.id if active else None,
            payload_indexes=GENERATION_INDEXES,
        )
        gen_id = report.generation = build.gen_id
        seen = _Seen()
        try:
            with build:
                build.carry(self._keep(plan))
                build.write(
                    [
                        IndexRecord(
                            id=fragment_point_id(f.doc_id, f.ordinal),
                            dense=[float(x) for x in vec],
                            sparse=bm25[language].document(term_text),
                            payload=self._payload(f, gen_id, bm25[language]),
                        )
                        for f, term_text, vec, language in zip(
                            fragments, terms, vectors, languages, strict=True
                        )
                    ]
                )
                # What the new generation really holds: the report states those numbers.
                verified = build.verify(seen.add)
                doc_points = sum(verified.kinds.get(kind, 0) for kind in DOC_KINDS)
                report.counts.update(
                    documents_indexed=len(seen.docs[RECORD_DOCUMENT]),
                    pages_indexed=len(seen.docs[RECORD_WIKI]),
                    fragments_total=doc_points,
                    stale_fragments=seen.stale,
                    records_other_kinds=verified.total - doc_points,
                )
                build.seal()
                # The label set of the generation: readers fail closed on labels absent from it.
                build.mark_candidate(report.counts)
                build.activate()
        except BaseException:
            if build.abandoned:
                report.generation = None  # never served: the run row must not name it as its own
                report.abandoned_generation = gen_id
            raise
        report.outcome = "activated"
        report.message = f"generation {gen_id} is active"
        report.dropped_generations = build.retain(self.settings.index.retain)

    def _encoders(
        self,
        full: bool,
        plan: _Plan,
        held: dict[str, _Held],
        texts: list[str],
        languages: list[str],
    ) -> dict[str, Bm25Encoder]:
        """One BM25 encoder per language of the fragments built and carried (Qdrant's name ->
        encoder): a source is stemmed in its own language, with that language's average
        length."""
        present = set(languages) | {held[d].language for d in plan.carry}
        return {
            name: Bm25Encoder(
                name,
                self._avg_len(
                    full,
                    plan,
                    held,
                    [t for t, lang in zip(texts, languages, strict=True) if lang == name],
                    name,
                ),
            )
            for name in sorted(present)
        }

    def _primary_encoder(self, bm25: dict[str, Bm25Encoder], texts: list[str]) -> Bm25Encoder:
        """The workspace language's encoder: the one Evidence, schema and older fragments are
        encoded with, recorded as the generation's `bm25`."""
        name = language_name(self.settings.language)
        return bm25.get(name) or Bm25Encoder(name, average_length(texts))

    def _avg_len(
        self, full: bool, plan: _Plan, held: dict[str, _Held], texts: list[str], language: str
    ) -> float:
        """BM25's average length for one language: the one its carried fragments were encoded
        with, so every sparse vector of the language uses the same; recomputed on the first
        sync and on --full."""
        if not full:
            kept = Counter(
                held[d].avg_len
                for d in plan.carry
                if held[d].avg_len is not None and held[d].language == language
            ).most_common(1)
            if kept and kept[0][0] is not None:
                return kept[0][0]
        return average_length(texts)

    def _payload(self, f: KnowledgeFragment, gen_id: str, bm25: Bm25Encoder) -> dict[str, Any]:
        fingerprint = self._fingerprints[f.source]
        return f.record(self.name, gen_id, fingerprint, bm25.avg_len, bm25.language).to_payload()

    def _keep(self, plan: _Plan) -> Keep:
        """What is carried from the active generation: records of other kinds, and the
        documents and pages in `plan.carry`, with the same ids, vectors and payloads (the
        builder restamps their generation), and with the labels and channel declared now where
        `plan` says so."""
        stamp_now = evidence_stamp(self.settings.answers)  # as a publication writes it

        def keep(rec: IndexRecord) -> IndexRecord | None:
            payload = rec.payload
            kind = payload.get("record_kind")
            stamp: tuple[tuple[str, ...], str] | None = None
            if kind in DOC_KINDS:
                doc_id = str(payload.get("doc_id"))
                if doc_id not in plan.carry:
                    return None
                stamp = plan.restamp.get(doc_id)
            else:
                unit = str(payload.get("evidence_id") or payload.get("doc_id") or rec.id)
                if kind == EVIDENCE_KIND and unit in plan.evidence:
                    stamp = stamp_now
            if stamp is not None:
                payload = {**payload, "labels": list(stamp[0]), "channel": stamp[1]}
            return IndexRecord(rec.id, rec.dense, rec.sparse, payload)

        return keep

    def _kinds_count(self, held: dict[str, _Held], carry: set[str]) -> dict[str, int]:
        return {
            "documents_indexed": sum(held[d].kind == RECORD_DOCUMENT for d in carry),
            "pages_indexed": sum(held[d].kind == RECORD_WIKI for d in carry),
        }

    def _other_records(self, active: Generation | None) -> int:
        if active is None:
            return 0
        store = self._reading(active)
        return store.count() - store.count({"record_kind": list(DOC_KINDS)})


def _labels(labels: Sequence[Any]) -> tuple[str, ...]:
    return tuple(sorted({str(label) for label in labels}))


def _label_change(
    doc_id: str,
    old_labels: Sequence[str],
    new_labels: Sequence[str],
    old_channel: str,
    new_channel: str,
) -> dict[str, Any]:
    """One `labels_changed` entry; the channel is named only when it changed too."""
    change: dict[str, Any] = {
        "doc_id": doc_id,
        "old": list(_labels(old_labels)),
        "new": list(_labels(new_labels)),
    }
    if old_channel != new_channel:
        change.update(old_channel=old_channel, new_channel=new_channel)
    return change


def _refuse_secrets(problems: Sequence[Problem]) -> None:
    """A document or page carrying a secret is never indexed: the run stops before any write,
    naming every file and line found (thoth.secrets), never the secret."""
    if not problems:
        return
    files = sorted({p.where for p in problems})
    raise SyncError(
        f"{len(problems)} secret(s) found in {', '.join(files)}: nothing was indexed -> "
        "remove them, commit and sync again",
        code="credential",
        problems=problems,
    )


def _check_prepared(adm: Admission, doc: PreparedDocument) -> None:
    """The fragments must belong to the admitted file, with distinct ordinals: a shared point
    id would silently overwrite another fragment."""
    where = adm.doc_id
    if not doc.fragments:
        raise SyncError(
            f"{where}: preparation produced no fragment (empty or unreadable file?); nothing "
            "was changed -> fix the file, or exclude it from the source's globs"
        )
    ordinals = [f.ordinal for f in doc.fragments]
    if len(set(ordinals)) != len(ordinals):
        raise SyncError(f"{where}: two fragments share an ordinal -> report this as a bug")
    strangers = {f.doc_id for f in doc.fragments} - {adm.doc_id}
    if doc.doc_id != adm.doc_id or strangers:
        raise SyncError(
            f"{where}: prepared fragments carry doc id(s) {sorted(strangers | {doc.doc_id})} "
            "-> report this as a bug of thoth.knowledge.ingest"
        )


def _as_chunk(f: KnowledgeFragment) -> Chunk:
    return Chunk(
        text=f.text,
        page=f.page,
        heading_path=f.heading_path,
        kind=cast(ChunkKind, f.chunk_kind),
        ordinal=f.ordinal,
    )
