"""`tht workspace preprocess evidence` (seed §7.2, §8, §13.2): from the activated Git revision,
validate everything, build a candidate generation nobody can search, evaluate it, and activate
it atomically only if the gate passes. Every build is recorded in the state store.

Evidence is one producer of records for the one builder (`thoth.index.build`); the evaluation
gate is what this layer adds: it needs Evidence search, which sits above the Evidence records.
Records of other kinds (documents, wiki pages) share the collection: each new generation
carries them forward unchanged from the active one — same ids, payloads and vectors.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from thoth.embed.base import Embedder
from thoth.errors import PreconditionError
from thoth.evaluation.evidence import EvaluationReport, evaluate, load_evaluation
from thoth.evidence.manifest import PIPELINE_VERSION
from thoth.evidence.model import Unit
from thoth.evidence.publish import (
    evidence_payload,
    evidence_record,
    materialize,
    other_kinds,
    publishable_units,
    unit_fragments,
)
from thoth.gitrepo import default_run_by
from thoth.index.bm25 import Bm25Encoder, average_length
from thoth.index.build import (
    BuildError,
    GenerationBuilder,
    Progress,
    RunLock,
    RunRow,
    embed_passages,
)
from thoth.index.generations import IndexBackend
from thoth.index.reader import EVIDENCE_CONFIG, open_generation
from thoth.index.records import GENERATION_INDEXES
from thoth.memory.index import MemoryIndex
from thoth.search.service import EvidenceSearch
from thoth.state import BuildOutcome, StateStore
from thoth.workflow.upgrade_proof import (
    KindSnapshot,
    UpgradeProof,
    generation_snapshots,
    memory_snapshot,
    prove_generation,
    prove_memory,
)
from thoth.workspace import Workspace


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
    # Set when the publication changes the Evidence pipeline version (thoth.workflow.upgrade_proof).
    upgrade_proof: UpgradeProof | None = None
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["evaluation"] = self.evaluation.as_dict() if self.evaluation else None
        data["upgrade_proof"] = self.upgrade_proof.as_dict() if self.upgrade_proof else None
        return data


class Publisher:
    def __init__(
        self,
        ws: Workspace,
        state: StateStore,
        backend: IndexBackend,
        embedder: Embedder,
        retain: int = 2,
        progress: Progress | None = None,
        *,
        memory_index: MemoryIndex | None = None,
        pipeline_version: int = PIPELINE_VERSION,
    ) -> None:
        """`memory_index`: the workspace's memory index, proven unchanged by an upgrade (None:
        the proof covers the generation's records only, and says so by listing no memory)."""
        self.memory_index = memory_index
        self.pipeline_version = pipeline_version
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
        lock = self._lock(run_by)
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

    def rollback(self, generation: str) -> str | None:
        """Activate an earlier generation of the workspace (atomic, nothing rebuilt); returns
        the one it replaced. Only a generation that was active before (now 'retired') and
        still holds its data qualifies: a candidate never passed its gate (its build was
        stopped before its evaluation finished), and a failed or abandoned one never will."""
        found = self.state.get_generation(generation)
        if found is not None and found.status == "candidate":
            raise PreconditionError(
                f"generation {generation} is a candidate that never passed its evaluation gate "
                "(its build was stopped before the evaluation finished) -> publish again with "
                "`tht workspace preprocess evidence`; the next build, or `tht evidence "
                "generations --cleanup`, marks it abandoned"
            )
        if generation not in self.backend.sealed():
            raise PreconditionError(
                f"generation {generation} has no sealed index data (never built, failed, "
                "abandoned, or dropped by retention) -> see `tht evidence generations`"
            )
        return self.state.activate_generation(self.name, generation)

    def cleanup(self, run_by: str | None = None) -> list[str]:
        """What `tht evidence generations --cleanup` does, under the same build lock as a
        build (so a live build's candidate is never touched): remove unsealed data, mark
        candidates whose build died before its gate 'abandoned' and drop their data. Returns
        the generation ids removed."""
        lock = self._lock(run_by)
        with lock:
            builder = GenerationBuilder(self.state, self.backend, self.name, self.embedder)
            removed = builder.discard_crashed()
            lock.closing = lambda _failure: RunRow(
                message=f"cleanup: removed {', '.join(removed) or 'nothing'}"
            )
        return removed

    def _lock(self, run_by: str | None) -> RunLock:
        return RunLock(
            self.state,
            self.name,
            kind="evidence",
            run_by=run_by or default_run_by(self.ws.root),
            pipeline_version=self.pipeline_version,
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
        builder = GenerationBuilder(
            self.state, self.backend, self.name, self.embedder, self.progress
        )
        report.discarded_partial = builder.discard_crashed()
        previous = self.state.active_generation(self.name)
        report.previous_generation = previous.id if previous else None

        with materialize(self.ws.root, revision) as tree:
            snapshot = Workspace(root=tree, settings=self.ws.settings)
            units = publishable_units(snapshot, revision)
            evaluation = load_evaluation(snapshot.evidence / "evaluation.yaml")

        fragments = unit_fragments(units, self.ws.settings.evidence.max_chunk_chars)
        bm25 = Bm25Encoder(
            self.ws.settings.language, average_length([f.text for _, f in fragments])
        )
        # An upgrade: the previous generation was built by another pipeline version (one built
        # before versions were recorded counts as another).
        before: tuple[list[KindSnapshot], KindSnapshot | None] | None = None
        if (
            previous is not None
            and previous.config.get("pipeline_version") != self.pipeline_version
        ):
            report.upgrade_proof = UpgradeProof(
                previous.config.get("pipeline_version"), self.pipeline_version
            )
            store = open_generation(self.backend, previous)
            try:
                carried = generation_snapshots(store, previous.id)
            finally:
                store.close()
            memory = memory_snapshot(self.memory_index) if self.memory_index else None
            before = (carried, memory)
        config = {
            "pipeline_version": self.pipeline_version,
            "bm25": bm25.config(),
            "max_chunk_chars": self.ws.settings.evidence.max_chunk_chars,
            # The mark of a gated Evidence publication: readers require it (docs sync carries
            # it forward with the Evidence records it copies).
            EVIDENCE_CONFIG: {"revision": revision, "units": len(units)},
        }
        if previous is not None and "docs" in previous.config:
            # The documents are carried: so is what docs sync recorded about them (their BM25
            # languages, which readers query one by one).
            config["docs"] = previous.config["docs"]
        build = builder.begin(
            revision, config, source=report.previous_generation, payload_indexes=GENERATION_INDEXES
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
                report.carried_forward = sum(build.carry(other_kinds).values())
                build.write(
                    [
                        evidence_record(
                            evidence_payload(
                                self.name, revision, gen_id, u, f, self.ws.settings.answers
                            ),
                            [float(x) for x in vec],
                            bm25.document(f.text),
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
                    if before is not None and not self._prove(candidate, before, report):
                        return False
                    report.evaluation = self._evaluate(candidate, evaluation, units)
                    return report.evaluation.gate_passed

                if build.gate(gate):
                    build.activate()
                    report.outcome = "activated"
                    report.message = f"generation {gen_id} is active"
                elif report.upgrade_proof is not None and not report.upgrade_proof.passed:
                    report.outcome = "gate_failed"
                    diffs = report.upgrade_proof.differences
                    report.message = (
                        f"upgrade proof failed: {len(diffs)} difference(s) between the records "
                        f"before and after the pipeline upgrade ({'; '.join(diffs[:5])}); the "
                        "previous generation stays active"
                    )
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

    def _prove(
        self,
        gen_id: str,
        before: tuple[list[KindSnapshot], KindSnapshot | None],
        report: PublishReport,
    ) -> bool:
        """The upgrade proof on the sealed candidate (and the memory index, read again)."""
        proof = report.upgrade_proof
        assert proof is not None
        gen = self.state.get_generation(gen_id)
        if gen is None:
            raise BuildError(
                f"candidate {gen_id} is not in the state store -> report this as a bug"
            )
        store = open_generation(self.backend, gen)
        try:
            prove_generation(before[0], store, gen_id, proof)
        finally:
            store.close()
        if before[1] is not None and self.memory_index is not None:
            prove_memory(before[1], self.memory_index, proof)
        return proof.passed

    def _evaluate(self, gen_id: str, evaluation: Any, units: list[Unit]) -> EvaluationReport:
        gen = self.state.get_generation(gen_id)
        search = EvidenceSearch(self.name, self.ws.root, self.state, self.backend, self.embedder)
        try:
            return evaluate(search, evaluation, gen, {u.id: u.kind for u in units})
        finally:
            search.close()
