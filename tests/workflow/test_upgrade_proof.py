"""Issue 48: a publication that changes the Evidence pipeline version proves that the records it
does not rebuild (schema, documents, memory) came through unchanged — counts, a sample of ids,
and dense searches before and after — and refuses to activate when any differs, naming it.

Real Qdrant Edge generations and memory shard, the fake embeddings server over HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.fake_embeddings import FakeEmbeddingServer
from tests.publishing import activate_head, prepared_workspace
from thoth.evidence.manifest import PIPELINE_VERSION
from thoth.index.base import IndexRecord
from thoth.index.edge import EdgeStore
from thoth.index.generations import EdgeBackend
from thoth.memory import MemoryDraft, Registry
from thoth.memory.index import MemoryIndex, point_id
from thoth.runtime import Runtime, open_runtime
from thoth.workflow.publish import Publisher, PublishReport
from thoth.workspace import Workspace

Make = Callable[..., Workspace]
SCHEMA_IDS = [f"00000000-0000-0000-0000-0000000000{n:02d}" for n in range(7)]


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


@pytest.fixture
def rt(make_workspace: Make, fake: FakeEmbeddingServer) -> Iterator[Runtime]:
    """A workspace whose active generation holds schema records only and was built before
    pipeline versions were recorded (so the next publication is an upgrade)."""
    ws = prepared_workspace(make_workspace, fake.url)
    runtime = open_runtime(ws)
    name = ws.settings.workspace
    revision = activate_head(runtime)
    rng = np.random.default_rng(7)
    base = runtime.state.create_generation(name, revision, {"dim": 8})
    store = runtime.backend.create(base, 8)
    store.upsert(
        [
            IndexRecord(
                rid,
                [float(x) for x in rng.standard_normal(8)],
                None,
                {"record_kind": kind, "name": f"{kind}-{n}"},
            )
            for n, (rid, kind) in enumerate(
                zip(SCHEMA_IDS, ["schema_table"] * 3 + ["schema_column"] * 4, strict=True)
            )
        ]
    )
    runtime.backend.seal(base, store)
    runtime.state.mark_generation(base, "candidate")
    runtime.state.activate_generation(name, base)
    yield runtime
    runtime.close()


@pytest.fixture
def memory(rt: Runtime, tmp_path: Path) -> MemoryIndex:
    registry = Registry(tmp_path / "memory" / "registry.jsonl")
    index = MemoryIndex(tmp_path / "memory-index", language="it")
    for n in range(3):
        record, _ = registry.add(
            MemoryDraft(
                session_id="s-20240501-093000-a1b2c3",
                decision_seq=n + 1,
                type="concept_clarified",
                subject=f"concetto {n}",
                detail=f"definizione {n}",
                rationale="",
                question_context="domanda",
            )
        )
        index.upsert(record, rt.embedder)
    return index


def publish(
    rt: Runtime, memory: MemoryIndex, plant: Callable[[], None] | None = None, phase: str = ""
) -> PublishReport:
    planted: list[bool] = []

    def progress(name: str, _done: int, _total: int) -> None:
        if plant is not None and name == phase and not planted:
            planted.append(True)
            plant()

    report = Publisher(
        rt.ws, rt.state, rt.backend, rt.embedder, progress=progress, memory_index=memory
    ).preprocess()
    assert plant is None or planted, f"the {phase} phase never ran"
    return report


def test_an_upgrade_proves_schema_and_memory_unchanged_and_reports_it(
    rt: Runtime, memory: MemoryIndex
) -> None:
    report = publish(rt, memory)

    assert report.outcome == "activated", report.message
    proof = report.upgrade_proof
    assert proof is not None and proof.passed
    assert (proof.from_version, proof.to_version) == (None, PIPELINE_VERSION)
    kinds = {k.kind: k for k in proof.kinds}
    assert {k: (v.count_before, v.count_after) for k, v in kinds.items()} == {
        "schema_table": (3, 3),
        "schema_column": (4, 4),
        "memory": (3, 3),
    }
    assert kinds["memory"].sample_ids == ["mem-0001", "mem-0002", "mem-0003"]
    assert all(k.searches > 0 for k in proof.kinds)
    assert report.as_dict()["upgrade_proof"]["passed"] is True
    # The same pipeline version again: no upgrade, no proof.
    again = publish(rt, memory)
    assert again.outcome == "activated" and again.upgrade_proof is None
    assert again.as_dict()["upgrade_proof"] is None


def test_a_memory_vector_changed_during_the_upgrade_refuses_activation(
    rt: Runtime, memory: MemoryIndex
) -> None:
    before = rt.state.active_generation(rt.ws.settings.workspace)

    def plant() -> None:
        _, points = memory.points()
        victim = next(p for p in points if p.payload["memory_id"] == "mem-0002")
        changed = [x + 0.5 for x in victim.dense]
        with memory.collection.locked(exclusive=True):
            store = memory.collection.open()
            store.upsert(
                [IndexRecord(point_id("mem-0002"), changed, victim.sparse, victim.payload)]
            )
            store.flush()
            store.close()

    report = publish(rt, memory, plant, phase="index")

    assert report.outcome == "gate_failed"
    assert report.upgrade_proof is not None and not report.upgrade_proof.passed
    assert "memory mem-0002: payload or vector changed" in report.message
    assert report.evaluation is None  # refused before the evaluation
    assert rt.state.active_generation(rt.ws.settings.workspace) == before


def test_a_schema_record_changed_between_builds_refuses_activation(
    rt: Runtime, memory: MemoryIndex
) -> None:
    before = rt.state.active_generation(rt.ws.settings.workspace)
    assert before is not None

    def plant() -> None:
        # Straight into the sealed shard's files (opening a generation reads a private copy).
        assert isinstance(rt.backend, EdgeBackend)
        store = EdgeStore.open(rt.backend.root / before.id)
        try:
            old = next(r for r in store.scroll() if r.id == SCHEMA_IDS[4])
            store.upsert([IndexRecord(old.id, old.dense, None, {**old.payload, "name": "x"})])
            store.flush()
        finally:
            store.close()

    report = publish(rt, memory, plant, phase="embed")

    assert report.outcome == "gate_failed", report.message
    assert f"schema_column {SCHEMA_IDS[4]}: payload or vector changed" in report.message
    assert rt.state.active_generation(rt.ws.settings.workspace) == before
