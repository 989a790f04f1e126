"""`tht workspace preprocess evidence` (seed §7.2, §8, §13.2): from the activated Git revision,
validate everything, build a candidate generation nobody can search, evaluate it, and activate
it atomically only if the gate passes. Every build is recorded in the state store.

Records of other kinds (schema, memory, documents) share the collection: each new generation
carries them forward unchanged from the active one — same ids, payloads and vectors.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from thoth.config import AnswersSettings
from thoth.documents.records import FILTER_FIELDS, caveats_for
from thoth.embed.base import Embedder
from thoth.errors import PreconditionError, Problem, ProblemsError
from thoth.evaluation.evidence import EvaluationReport, evaluate, load_evaluation
from thoth.evidence.corpus import load_corpus, unit_rel_path
from thoth.evidence.fragments import Fragment, fragment_unit
from thoth.evidence.manifest import PIPELINE_VERSION
from thoth.evidence.model import Unit
from thoth.evidence.validate import validate_workspace
from thoth.gitrepo import default_run_by
from thoth.index.base import IndexRecord
from thoth.index.bm25 import Bm25Encoder, average_length
from thoth.index.build import GenerationBuilder, Progress, RunLock, RunRow, embed_passages
from thoth.index.generations import IndexBackend
from thoth.search.service import RECORD_KIND, EvidenceSearch
from thoth.state import BuildOutcome, StateStore
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


def point_id(evidence_id: str, ordinal: int) -> str:
    return str(uuid.uuid5(_POINTS, f"{evidence_id}#{ordinal}"))


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
        lock = RunLock(
            self.state,
            self.name,
            kind="evidence",
            run_by=run_by or default_run_by(self.ws.root),
            pipeline_version=PIPELINE_VERSION,
        )
        with lock:
            report = self._preprocess()
            lock.closing = lambda _failure: RunRow(
                revisions={"evidence": report.revision},
                generation=report.generation,
                counts=self._counts(report),
                message=report.message,
                succeeded=report.outcome == "activated",
            )
        return report

    def _preprocess(self) -> PublishReport:
        started = time.perf_counter()
        revision = self.state.active_revision(self.name)
        if revision is None:
            raise PreconditionError(
                f"workspace {self.name} has no activated revision -> run `tht workspace "
                "activate` on a clean, reviewed commit first"
            )
        report = PublishReport(workspace=self.name, revision=revision)
        builder = GenerationBuilder(
            self.state, self.backend, self.name, self.embedder, self.progress
        )
        report.discarded_partial = builder.discard_crashed()
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
            "bm25": bm25.config(),
            "max_chunk_chars": self.ws.settings.evidence.max_chunk_chars,
        }
        build = builder.begin(
            revision, config, source=report.previous_generation, payload_indexes=PAYLOAD_INDEXES
        )
        gen_id = report.generation = build.gen_id
        report.units, report.fragments = len(units), len(fragments)
        try:
            with build:
                report.build_id = self.state.start_build(self.name, revision, gen_id)
                embed_started = time.perf_counter()
                vectors = embed_passages(
                    self.embedder, [f.text for _, f in fragments], self.progress
                )
                report.embed_seconds = time.perf_counter() - embed_started
                # Records of other kinds are copied unchanged: same ids, payloads and vectors.
                report.carried_forward = sum(build.carry(_other_kinds).values())
                build.write(
                    [
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
                )
                build.verify()
                build.seal()
                build.mark_candidate(
                    {
                        "units": len(units),
                        "fragments": len(fragments),
                        "carried_forward": report.carried_forward,
                    }
                )

                def gate(candidate: str) -> bool:
                    report.evaluation = self._evaluate(candidate, evaluation, units)
                    return report.evaluation.gate_passed

                if build.gate(gate):
                    build.activate()
                    report.outcome = "activated"
                    report.message = f"generation {gen_id} is active"
                else:
                    assert report.evaluation is not None
                    failing = [q.id for q in report.evaluation.questions if not q.hit_at_10]
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
            if report.build_id is not None:
                try:
                    self.state.finish_build(
                        report.build_id,
                        report.outcome,
                        self._counts(report),
                        report.message[:2000],
                    )
                except Exception as cleanup:  # noqa: BLE001 - reported on the original error
                    exc.add_note(
                        f"build {report.build_id} could not be recorded as {report.outcome} "
                        f"({cleanup}): the next publication closes unfinished builds"
                    )
            raise
        report.duration_s = time.perf_counter() - started
        self.state.finish_build(
            report.build_id, report.outcome, self._counts(report), report.message
        )
        if report.outcome == "activated":
            # After activation, outside the abandonment above: a failure here must never drop
            # the generation that now serves.
            report.dropped_generations = build.retain(self.retain)
        return report

    @staticmethod
    def _counts(report: PublishReport) -> dict[str, Any]:
        return {
            "units": report.units,
            "fragments": report.fragments,
            "carried_forward": report.carried_forward,
            "duration_s": round(report.duration_s, 3),
        }

    def _evaluate(self, gen_id: str, evaluation: Any, units: list[Unit]) -> EvaluationReport:
        gen = self.state.get_generation(gen_id)
        search = EvidenceSearch(self.name, self.ws.root, self.state, self.backend, self.embedder)
        try:
            return evaluate(search, evaluation, gen, {u.id: u.kind for u in units})
        finally:
            search.close()


def _other_kinds(record: IndexRecord) -> IndexRecord | None:
    """What a publication carries forward: every record that is not Evidence, unchanged."""
    return None if record.payload.get("record_kind") == RECORD_KIND else record
