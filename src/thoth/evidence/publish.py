"""`tht workspace preprocess evidence` (seed §7.2, §8, §13.2): from the activated Git revision,
validate everything, build a candidate generation nobody can search, evaluate it, and activate
it atomically only if the gate passes. Every build is recorded in the state store.

Records of other kinds (schema, memory, documents) share the collection: each new generation
carries them forward unchanged from the active one — same ids, payloads and vectors.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from thoth.config import AnswersSettings
from thoth.documents.records import FILTER_FIELDS, caveats_for
from thoth.embed.base import Embedder, EmbedderError
from thoth.errors import PreconditionError, Problem, ProblemsError, ThothError
from thoth.evaluation.evidence import EvaluationReport, evaluate, load_evaluation
from thoth.evidence.corpus import load_corpus, unit_rel_path
from thoth.evidence.fragments import Fragment, fragment_unit
from thoth.evidence.manifest import PIPELINE_VERSION
from thoth.evidence.model import Unit
from thoth.evidence.validate import validate_workspace
from thoth.gitrepo import default_run_by
from thoth.index.base import IndexRecord, IndexStore
from thoth.index.bm25 import Bm25Encoder, average_length
from thoth.index.generations import IndexBackend
from thoth.search.service import RECORD_KIND, EvidenceSearch
from thoth.state import BuildOutcome, StateStore, SyncStatus
from thoth.workspace import Workspace

PAYLOAD_INDEXES = tuple(
    dict.fromkeys(
        (
            "workspace_id",
            "workspace_revision",
            "vector_generation",
            "record_kind",
            "evidence_id",
            "evidence_kind",
            "purposes",
            "concepts",
            "tables",
            "columns",
            "language",
            *FILTER_FIELDS,
        )
    )
)
_POINTS = uuid.UUID("6f1c2a8e-54a7-4b8e-9a55-7d2f0c8b1e33")  # namespace for point ids
UPSERT_BATCH = 256
EMBED_BATCH = 32

Progress = Callable[[str, int, int], None]  # (phase, done, total)


def point_id(evidence_id: str, ordinal: int) -> str:
    return str(uuid.uuid5(_POINTS, f"{evidence_id}#{ordinal}"))


def embed_passages(
    embedder: Embedder, texts: Sequence[str], progress: Progress | None = None
) -> list[Any]:
    """Embed `texts` in batches of EMBED_BATCH, reporting the "embed" phase; one vector per
    text, in order. Shared by every builder (Evidence publication, docs sync): a reply with
    a missing or extra vector stops the build instead of shifting every later vector onto
    the wrong fragment."""
    out: list[Any] = []
    for start in range(0, len(texts), EMBED_BATCH):
        batch = list(texts[start : start + EMBED_BATCH])
        vectors = embedder.embed_passages(batch)
        if len(vectors) != len(batch):
            raise EmbedderError(
                f"{embedder.identity}: {len(vectors)} vectors returned for {len(batch)} texts "
                f"(texts {start + 1}-{start + len(batch)} of {len(texts)}); nothing was "
                "indexed -> check the embedding server: it must return one vector per text"
            )
        out.extend(vectors)
        if progress is not None:
            progress("embed", min(start + EMBED_BATCH, len(texts)), len(texts))
    return out


def record_labels(payloads: Iterable[Mapping[str, Any]]) -> set[str]:
    """Every label value carried by the records: the vocabulary a generation was built with,
    stored as `counts["labels"]` so readers can fail closed on labels no longer declared."""
    return {str(label) for payload in payloads for label in payload.get("labels") or []}


@dataclass
class PublishReport:
    workspace: str
    revision: str
    generation: str | None = None
    build_id: int | None = None
    outcome: BuildOutcome = "failed"
    units: int = 0
    fragments: int = 0
    carried_forward: int = 0
    embed_seconds: float = 0.0
    duration_s: float = 0.0
    discarded_partial: list[str] = field(default_factory=list)
    dropped_generations: list[str] = field(default_factory=list)
    previous_generation: str | None = None
    evaluation: EvaluationReport | None = None
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["evaluation"] = self.evaluation.as_dict() if self.evaluation else None
        return data


@contextmanager
def materialize(root: Path, revision: str) -> Iterator[Path]:
    """The workspace exactly as committed at `revision`, in a temporary directory: what is
    published never depends on the worktree."""
    done = subprocess.run(
        ["git", "-C", str(root), "archive", "--format=tar", revision, "."],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise PreconditionError(
            f"{root}: cannot read revision {revision[:12]}: "
            f"{done.stderr.decode(errors='replace').strip()}"
        )
    tmp = Path(tempfile.mkdtemp(prefix="thoth-rev-"))
    try:
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
            tar.extractall(tmp, filter="data")
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def evidence_payload(
    ws_name: str,
    revision: str,
    gen_id: str,
    unit: Unit,
    fragment: Fragment,
    answers: AnswersSettings | None = None,
) -> dict[str, Any]:
    """The payload of seed §9.6 on every point, plus the fragment text (shown as the best
    excerpt) and the unit's path (its full document is resolved from Git, never copied).

    The answer engine reads the same points: `title`, `caveats` (read by the model, never
    embedded — see thoth.documents.records) and the channel and labels declared for Evidence in
    `[answers]`; without labels a unit is never served to `tht ask` (labels fail closed)."""
    answers = answers or AnswersSettings()
    return {
        "workspace_id": ws_name,
        "workspace_revision": revision,
        "vector_generation": gen_id,
        "record_kind": RECORD_KIND,
        "evidence_id": unit.id,
        "evidence_kind": unit.kind,
        "purposes": list(unit.purposes),
        "concepts": list(unit.applies_to.concepts),
        "tables": list(unit.applies_to.tables),
        "columns": list(unit.applies_to.columns),
        "language": unit.language,
        "source_file": unit.provenance.source_file,
        "source_sha256": unit.provenance.source_sha256,
        "fragment_ordinal": fragment.ordinal,
        "fragment_section": fragment.section,
        "unit_path": unit_rel_path(unit),
        "text": fragment.text,
        "title": unit.title,
        "doc_id": unit.id,
        "caveats": list(caveats_for(fragment.text, unit.caveats)),
        "channel": answers.evidence_channel or "",
        "labels": list(answers.evidence_labels),
    }


class Publisher:
    def __init__(
        self,
        ws: Workspace,
        state: StateStore,
        backend: IndexBackend,
        embedder: Embedder,
        retain: int = 2,
        progress: Progress | None = None,
    ) -> None:
        self.ws = ws
        self.name = ws.settings.workspace
        self.state = state
        self.backend = backend
        self.embedder = embedder
        self.retain = retain
        self.progress = progress or (lambda _phase, _done, _total: None)

    def preprocess(self, run_by: str | None = None) -> PublishReport:
        """Build, evaluate and (if the gate passes) activate a generation of the activated
        revision. The whole build holds the workspace's build lock — a `sync_runs` row of kind
        "evidence", the same partial unique index `tht docs sync` takes — so a sync and a
        publication never build from the same active generation nor clean up each other's
        unsealed builds."""
        run_id = self.state.start_sync_run(
            self.name,
            run_by or default_run_by(self.ws.root),
            full=False,
            host=socket.gethostname(),
            pid=os.getpid(),
            pipeline_version=PIPELINE_VERSION,
            kind="evidence",
        )
        status: SyncStatus = "failed"
        message = ""
        report: PublishReport | None = None
        failure: BaseException | None = None
        try:
            report = self._preprocess()
            status = "succeeded" if report.outcome == "activated" else "failed"
            message = report.message
            return report
        except BaseException as exc:
            failure = exc
            # Ctrl-C or a shutdown is not a failure of the build: same as `tht docs sync`.
            status = "failed" if isinstance(exc, Exception) else "interrupted"
            message = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            try:
                self.state.finish_sync_run(
                    run_id,
                    status,
                    {"evidence": report.revision} if report else {},
                    report.generation if report else None,
                    self._counts(report) if report else {},
                    {},
                    message[:4000],
                )
            except Exception as bookkeeping:
                if failure is None:
                    raise
                # Do not hide the error that stopped the build behind the bookkeeping one.
                failure.add_note(
                    f"the run row {run_id} could not be closed ({bookkeeping}): it stays "
                    "'running' until the next build on this host finds its process gone, or "
                    f"`tht docs runs --interrupt {run_id}` closes it"
                )

    def _preprocess(self) -> PublishReport:
        started = time.perf_counter()
        revision = self.state.active_revision(self.name)
        if revision is None:
            raise PreconditionError(
                f"workspace {self.name} has no activated revision -> run `tht workspace "
                "activate` on a clean, reviewed commit first"
            )
        report = PublishReport(workspace=self.name, revision=revision)
        self.state.mark_interrupted(self.name)
        report.discarded_partial = self.backend.discard_unsealed()
        for gen in self.state.list_generations(self.name):
            if gen.status == "building":  # its process died: the data is gone (above)
                self.state.mark_generation(gen.id, "failed")
        previous = self.state.active_generation(self.name)
        report.previous_generation = previous.id if previous else None

        with materialize(self.ws.root, revision) as tree:
            snapshot = Workspace(root=tree, settings=self.ws.settings)
            validation = validate_workspace(snapshot)
            if not validation.publishable:
                problems = (
                    list(validation.problems)
                    + [
                        Problem(d.id, f"review item {i.code}: {i.message}", field=i.field)
                        for d in validation.doubts
                        for i in d.review_items
                    ]
                    + [
                        Problem(o.id, f"orphan (source {o.source} removed)")
                        for o in validation.orphans
                    ]
                    + [
                        Problem(c.id, f"retirement candidate of {c.source}")
                        for c in validation.retirement_candidates
                    ]
                )
                raise ProblemsError(
                    f"revision {revision[:12]} is not publishable ({validation.outcome}): "
                    "nothing was built",
                    problems,
                )
            files, _ = load_corpus(snapshot.evidence)
            units = sorted((f.unit for f in files), key=lambda u: u.id)
            evaluation = load_evaluation(snapshot.evidence / "evaluation.yaml")

        fragments = [
            (u, f)
            for u in units
            for f in fragment_unit(u, self.ws.settings.evidence.max_chunk_chars)
        ]
        bm25 = Bm25Encoder(
            self.ws.settings.language, average_length([f.text for _, f in fragments])
        )
        config = {
            "embedder": self.embedder.identity,
            "dim": self.embedder.dim,
            "bm25": bm25.config(),
            "max_chunk_chars": self.ws.settings.evidence.max_chunk_chars,
            "backend": self.backend.name,
        }
        gen_id = self.state.create_generation(self.name, revision, config)
        report.generation = gen_id
        report.build_id = self.state.start_build(self.name, revision, gen_id)
        report.units, report.fragments = len(units), len(fragments)
        store: IndexStore | None = None
        try:
            embed_started = time.perf_counter()
            vectors = embed_passages(self.embedder, [f.text for _, f in fragments], self.progress)
            report.embed_seconds = time.perf_counter() - embed_started
            store = self.backend.create(gen_id, self.embedder.dim)
            labels: set[str] = set()
            if previous is not None:
                report.carried_forward, labels = self._carry_forward(previous.id, store)
            records = [
                IndexRecord(
                    id=point_id(u.id, f.ordinal),
                    dense=[float(x) for x in vec],
                    sparse=bm25.document(f.text),
                    payload=evidence_payload(
                        self.name, revision, gen_id, u, f, self.ws.settings.answers
                    ),
                )
                for (u, f), vec in zip(fragments, vectors, strict=True)
            ]
            for start in range(0, len(records), UPSERT_BATCH):
                store.upsert(records[start : start + UPSERT_BATCH])
                self.progress("index", min(start + UPSERT_BATCH, len(records)), len(records))
            store.create_payload_indexes(PAYLOAD_INDEXES)
            indexed = store.count({"record_kind": RECORD_KIND})
            if indexed != len(records):
                raise ThothError(
                    f"generation {gen_id}: {indexed} evidence points readable, "
                    f"{len(records)} written"
                )
            self.backend.seal(gen_id, store)
            store = None
            counts = {
                "units": len(units),
                "fragments": len(fragments),
                "carried_forward": report.carried_forward,
                "labels": sorted(labels | record_labels(r.payload for r in records)),
            }
            self.state.mark_generation(gen_id, "candidate", counts)
            report.evaluation = self._evaluate(gen_id, evaluation, units)
            if report.evaluation.gate_passed:
                self.state.activate_generation(
                    self.name, gen_id, expected_previous=report.previous_generation
                )
                report.outcome = "activated"
                report.message = f"generation {gen_id} is active"
            else:
                failing = [q.id for q in report.evaluation.questions if not q.hit_at_10]
                self.state.mark_generation(gen_id, "failed")
                report.outcome = "gate_failed"
                report.message = (
                    f"evaluation gate failed: {len(failing)} question(s) found no "
                    f"expected unit in the top 10 ({', '.join(failing)}); the "
                    "previous generation stays active"
                )
        except BaseException as exc:
            report.outcome = "failed" if isinstance(exc, Exception) else "interrupted"
            report.message = f"{type(exc).__name__}: {exc}"
            report.duration_s = time.perf_counter() - started
            try:
                if store is not None:
                    store.close()
                self.backend.drop(gen_id)
                self.state.mark_generation(gen_id, "failed")
                self.state.finish_build(
                    report.build_id, report.outcome, self._counts(report), report.message[:2000]
                )
            except Exception as cleanup:  # noqa: BLE001 - reported on the original error
                exc.add_note(
                    f"generation {gen_id} and build {report.build_id} could not be cleaned up "
                    f"({cleanup}): the next publication discards unsealed data and closes "
                    "unfinished builds"
                )
            raise
        report.duration_s = time.perf_counter() - started
        self.state.finish_build(
            report.build_id, report.outcome, self._counts(report), report.message
        )
        if report.outcome == "activated":
            # After activation, outside the cleanup above: a failure here must never drop the
            # generation that now serves.
            try:
                report.dropped_generations = self._retain()
            except Exception as exc:
                exc.add_note(
                    f"generation {gen_id} was activated before the error and is serving; the "
                    "older generations are dropped by the next build's retention"
                )
                raise
        return report

    @staticmethod
    def _counts(report: PublishReport) -> dict[str, Any]:
        return {
            "units": report.units,
            "fragments": report.fragments,
            "carried_forward": report.carried_forward,
            "duration_s": round(report.duration_s, 3),
        }

    def _carry_forward(self, previous: str, store: IndexStore) -> tuple[int, set[str]]:
        """Copy every non-evidence record of the active generation, unchanged. Returns how
        many, and the labels they carry."""
        old = self.backend.open(previous)
        try:
            if old.dim != store.dim:
                raise ThothError(
                    f"generation {previous} has dimension {old.dim}, the embedder "
                    f"{self.embedder.identity} gives {store.dim}: records of other "
                    "kinds cannot be carried forward -> rebuild them with the new "
                    "model"
                )
            batch: list[IndexRecord] = []
            copied = 0
            labels: set[str] = set()
            for rec in old.scroll():
                if rec.payload.get("record_kind") == RECORD_KIND:
                    continue
                batch.append(rec)
                labels |= record_labels([rec.payload])
                if len(batch) >= UPSERT_BATCH:
                    store.upsert(batch)
                    copied += len(batch)
                    batch = []
            store.upsert(batch)
            return copied + len(batch), labels
        finally:
            old.close()

    def _evaluate(self, gen_id: str, evaluation: Any, units: list[Unit]) -> EvaluationReport:
        gen = self.state.get_generation(gen_id)
        search = EvidenceSearch(self.name, self.ws.root, self.state, self.backend, self.embedder)
        try:
            return evaluate(search, evaluation, gen, {u.id: u.kind for u in units})
        finally:
            search.close()

    def _retain(self) -> list[str]:
        return retain_generations(self.state, self.backend, self.name, self.retain)


def retain_generations(
    state: StateStore, backend: IndexBackend, workspace: str, retain: int
) -> list[str]:
    """Keep the active generation and the `retain` most recent others for rollback; drop the
    index data of the rest. Returns the generation ids dropped. Shared by every builder."""
    keep = 0
    dropped = []
    for gen in state.list_generations(workspace):  # newest first
        if gen.status == "active":
            continue
        if gen.status == "retired" and keep < retain:
            keep += 1
            continue
        if gen.id in backend.sealed():
            backend.drop(gen.id)
            dropped.append(gen.id)
    return dropped
