"""Publishing Evidence: candidate -> evaluate -> atomic activation, rollback, retention, and
records of other kinds left untouched (seed §7.2, §8, §13.2)."""

import os
import socket
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest

import thoth.index.build as build_module
from tests.conftest import commit_all, write_source
from tests.fake_embeddings import FakeEmbeddingServer
from tests.publishing import (
    EVALUATION,
    FAILING_QUESTION,
    activate_head,
    prepared_workspace,
    publish,
    published,
    write_config,
)
from thoth.embed.base import EmbedderError, Vectors
from thoth.errors import PreconditionError, ProblemsError
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.index.base import IndexRecord
from thoth.knowledge.sync import DocsSync
from thoth.runtime import open_runtime
from thoth.state import StateError, SyncRunConflict
from thoth.workflow.publish import Publisher
from thoth.workspace import Workspace

Make = Callable[..., Workspace]


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


def test_preprocess_builds_evaluates_and_activates(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> None:
    rt = published(make_workspace, fake.url)
    name = rt.ws.settings.workspace
    active = rt.state.active_generation(name)
    assert active is not None and active.revision == rt.state.active_revision(name)
    assert active.counts["units"] == 4
    [build] = rt.state.list_builds(name)
    assert build.outcome == "activated" and build.generation == active.id
    assert build.revision == active.revision and build.duration_s is not None
    assert build.counts["fragments"] >= 4
    outcome = rt.search().search("ricovero con pernottamento", "disambiguation")
    # Fake embeddings are random: the two glossary units can tie under RRF, order unspecified.
    assert outcome.available and "evidence:ricovero" in [r.evidence_id for r in outcome.results]
    rt.close()


def test_no_activated_revision_refuses_to_build(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> None:
    rt = open_runtime(prepared_workspace(make_workspace, fake.url))
    with pytest.raises(PreconditionError, match="no activated revision"):
        publish(rt)
    assert rt.state.list_generations(rt.ws.settings.workspace) == []
    rt.close()


def test_review_items_block_publication(make_workspace: Make, fake: FakeEmbeddingServer) -> None:
    ws = prepared_workspace(make_workspace, fake.url)
    write_source(ws.root, "d.md", "# D\n\nDa verificare con la direzione sanitaria.\n")
    commit_all(ws.root)
    prepare(ws, RuleBasedRestructurer())
    commit_all(ws.root)
    rt = open_runtime(ws)
    activate_head(rt)
    with pytest.raises(ProblemsError, match="not publishable") as info:
        publish(rt)
    assert any("ambiguous_source_statement" in p.message for p in info.value.problems)
    assert rt.state.active_generation(ws.settings.workspace) is None
    assert rt.backend.sealed() == []
    rt.close()


def test_gate_failure_keeps_the_previous_generation(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> None:
    rt = published(make_workspace, fake.url)
    name = rt.ws.settings.workspace
    first = rt.state.active_generation(name)
    assert first is not None
    (rt.ws.evidence / "evaluation.yaml").write_text(EVALUATION + FAILING_QUESTION)
    commit_all(rt.ws.root)
    activate_head(rt)
    report = publish(rt)
    assert report.outcome == "gate_failed" and "impossible" in report.message
    assert report.evaluation is not None and not report.evaluation.gate_passed
    active = rt.state.active_generation(name)
    assert active is not None and active.id == first.id
    assert rt.state.get_generation(report.generation or "").status == "failed"  # type: ignore[union-attr]
    assert rt.state.list_builds(name)[0].outcome == "gate_failed"
    # The activated revision has no generation: fail closed, never the older revision.
    outcome = rt.search().search("ricovero", "disambiguation")
    assert not outcome.available and outcome.code == "revision_mismatch"
    # The operator restores the previous revision explicitly: search is back.
    rt.state.activate_revision(name, first.revision, activated_by="tests")
    assert rt.search().search("ricovero", "disambiguation").available
    rt.close()


def test_candidate_is_searchable_only_explicitly(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> None:
    rt = published(make_workspace, fake.url)
    name = rt.ws.settings.workspace
    first = rt.state.active_generation(name)
    assert first is not None
    (rt.ws.evidence / "evaluation.yaml").write_text(EVALUATION + FAILING_QUESTION)
    commit_all(rt.ws.root)
    activate_head(rt)
    candidate = publish(rt).generation
    rt.state.activate_revision(name, first.revision, activated_by="tests")
    runtime_view = rt.search().search("ricovero", "disambiguation")
    assert runtime_view.generation == first.id
    rt.close()
    del candidate


def test_rollback_to_a_previous_generation(make_workspace: Make, fake: FakeEmbeddingServer) -> None:
    rt = published(make_workspace, fake.url)
    name = rt.ws.settings.workspace
    first = rt.state.active_generation(name)
    write_source(
        rt.ws.root,
        "x.md",
        "# X\n\n## Regola dei trasferimenti\n\nUn trasferimento interno non chiude il ricovero.\n",
    )
    commit_all(rt.ws.root)
    prepare(rt.ws, RuleBasedRestructurer())
    commit_all(rt.ws.root)
    activate_head(rt)
    second = publish(rt)
    assert second.outcome == "activated" and second.previous_generation == first.id  # type: ignore[union-attr]
    assert first is not None
    previous = rt.state.activate_generation(name, first.id)
    assert previous == second.generation
    rt.state.activate_revision(name, first.revision, activated_by="tests")
    outcome = rt.search().search("trasferimento interno", "disambiguation")
    assert outcome.available and outcome.generation == first.id
    assert "evidence:regola-dei-trasferimenti" not in [r.evidence_id for r in outcome.results]
    rt.close()


def test_retention_drops_the_oldest_generations(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> None:
    rt = published(make_workspace, fake.url, retain=1)
    name = rt.ws.settings.workspace
    ids = [rt.state.active_generation(name).id]  # type: ignore[union-attr]
    for n in range(2):
        (rt.ws.root / "note.txt").write_text(f"revision {n}")
        commit_all(rt.ws.root)
        activate_head(rt)
        report = publish(rt)
        ids.append(report.generation or "")
    assert rt.backend.sealed() == sorted(ids[1:])
    assert report.dropped_generations == [ids[0]]
    rt.close()


def test_other_record_kinds_are_untouched(make_workspace: Make, fake: FakeEmbeddingServer) -> None:
    ws = prepared_workspace(make_workspace, fake.url)
    rt = open_runtime(ws)
    name = ws.settings.workspace
    revision = activate_head(rt)
    # A generation holding schema and memory records only, as other modules publish them.
    rng = np.random.default_rng(7)
    base = rt.state.create_generation(name, revision, {"dim": 8})
    store = rt.backend.create(base, 8)
    foreign = [
        IndexRecord(
            f"00000000-0000-0000-0000-0000000000{n:02d}",
            [float(x) for x in rng.standard_normal(8)],
            None,
            {"record_kind": kind, "name": f"{kind}-{n}"},
        )
        for n, kind in enumerate(["schema_table"] * 3 + ["schema_column"] * 4 + ["memory"] * 3)
    ]
    store.upsert(foreign)
    rt.backend.seal(base, store)
    rt.state.mark_generation(base, "candidate")
    rt.state.activate_generation(name, base)

    def snapshot(gen_id: str) -> tuple[int, list[str], list[list[str]]]:
        s = rt.backend.open(gen_id)
        try:
            where = {"record_kind": ["schema_table", "schema_column", "memory"]}
            ids = sorted(r.id for r in s.scroll(where))
            probes = np.random.default_rng(11).standard_normal((3, 8))
            searches = [
                [h.id for h in s.query_dense([float(x) for x in p], where, limit=5)] for p in probes
            ]
            return s.count(where), ids, searches
        finally:
            s.close()

    before = snapshot(base)
    report = publish(rt)
    assert report.outcome == "activated" and report.carried_forward == len(foreign)
    assert snapshot(report.generation or "") == before
    assert snapshot(base) == before  # the old generation itself is never written
    rt.close()


def test_a_publication_and_a_docs_sync_share_one_build_lock(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> None:
    rt = published(make_workspace, fake.url)
    try:
        runs = rt.state.list_sync_runs(rt.ws.settings.workspace)
        assert [(r.kind, r.status) for r in runs] == [("evidence", "succeeded")]
        before = rt.state.active_generation(rt.ws.settings.workspace)
        # A docs sync holds the lock (a live process: this one): the publication is refused
        # before it touches anything, unsealed builds included.
        held = rt.state.start_sync_run(
            rt.ws.settings.workspace, "someone", False, socket.gethostname(), os.getpid()
        )
        with pytest.raises(SyncRunConflict, match=r"a docs sync .* is already running"):
            publish(rt)
        assert rt.state.active_generation(rt.ws.settings.workspace) == before
        rt.state.finish_sync_run(held, "succeeded", {}, None, {}, {}, "")
        # And the other way round.
        rt.state.start_sync_run(
            rt.ws.settings.workspace, "me", False, socket.gethostname(), os.getpid(),
            kind="evidence",
        )  # fmt: skip
        with pytest.raises(SyncRunConflict, match=r"an Evidence publication .* already running"):
            DocsSync(rt.ws, rt.state, rt.backend, rt.embedder).run(run_by="tests")
    finally:
        rt.close()


# ---------------------------------------------------------------------- labels, bookkeeping


def test_the_generation_records_its_labels(make_workspace: Make, fake: FakeEmbeddingServer) -> None:
    ws = prepared_workspace(make_workspace, fake.url)
    write_config(ws.root, fake.url, extra='\n[answers]\nevidence_labels = ["internal", "public"]\n')
    commit_all(ws.root, "Evidence labels")
    rt = open_runtime(Workspace.open(ws.root))
    try:
        activate_head(rt)
        report = publish(rt)
        gen = rt.state.get_generation(report.generation or "")
        assert gen is not None and gen.counts["labels"] == ["internal", "public"]
    finally:
        rt.close()


def test_a_failed_bookkeeping_does_not_hide_the_error_that_stopped_the_build(
    make_workspace: Make, fake: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = open_runtime(prepared_workspace(make_workspace, fake.url))  # no activated revision
    try:

        def database_gone(*_args: Any, **_kwargs: Any) -> None:
            raise StateError("state store: the database is unreachable -> check it")

        monkeypatch.setattr(rt.state, "finish_sync_run", database_gone)
        with pytest.raises(PreconditionError, match="no activated revision") as info:
            publish(rt)
        notes = " ".join(getattr(info.value, "__notes__", []))
        assert "could not be closed" in notes and "database is unreachable" in notes
    finally:
        rt.close()


def test_an_interrupted_publication_is_recorded_as_such(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> None:
    rt = published(make_workspace, fake.url)
    try:
        name = rt.ws.settings.workspace
        before = rt.state.active_generation(name)

        def stop(phase: str, _done: int, _total: int) -> None:
            if phase == "embed":
                raise KeyboardInterrupt

        publisher = Publisher(rt.ws, rt.state, rt.backend, rt.embedder, progress=stop)
        with pytest.raises(KeyboardInterrupt):
            publisher.preprocess(run_by="tests")
        run = rt.state.list_sync_runs(name, limit=1)[0]
        assert run.kind == "evidence" and run.status == "interrupted"
        assert run.message.startswith("KeyboardInterrupt")
        assert rt.state.list_builds(name)[0].outcome == "interrupted"
        assert rt.state.active_generation(name) == before
        assert publish(rt).outcome == "activated"  # the lock was released
    finally:
        rt.close()


def test_a_publication_checks_the_vector_count(
    make_workspace: Make, fake: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = open_runtime(prepared_workspace(make_workspace, fake.url))
    try:
        activate_head(rt)
        real = rt.embedder.embed_passages

        def one_short(texts: Sequence[str]) -> Vectors:
            return real(texts)[:-1]

        monkeypatch.setattr(rt.embedder, "embed_passages", one_short)
        with pytest.raises(EmbedderError, match="vectors returned for"):
            publish(rt)
        assert rt.state.active_generation(rt.ws.settings.workspace) is None
        assert rt.state.list_sync_runs(rt.ws.settings.workspace)[0].status == "failed"
    finally:
        rt.close()


def test_a_retention_failure_never_drops_the_generation_just_activated(
    make_workspace: Make, fake: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = published(make_workspace, fake.url)
    try:
        name = rt.ws.settings.workspace
        (rt.ws.root / "note.txt").write_text("another revision")
        commit_all(rt.ws.root)
        activate_head(rt)

        def retention_fails(*_args: Any, **_kwargs: Any) -> list[str]:
            raise StateError("retention: cannot list the generations -> retry")

        monkeypatch.setattr(build_module, "retain_generations", retention_fails)
        with pytest.raises(StateError, match="retention") as info:
            publish(rt)
        notes = " ".join(getattr(info.value, "__notes__", []))
        active = rt.state.active_generation(name)
        assert active is not None and f"generation {active.id} was activated" in notes
        assert active.id in rt.backend.sealed()  # its data is still there
        assert rt.state.list_builds(name)[0].outcome == "activated"
        assert rt.search().search("ricovero con pernottamento", "disambiguation").available
    finally:
        rt.close()
