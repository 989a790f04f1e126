"""Evidence in the stages (seed §11, §13.3): each stage that consults Evidence runs one
independent search with its own purpose and the inputs the session has at that moment; the
receipt goes to the ledger; `unavailable` blocks the stage, records nothing and falls back to
nothing. Real published workspaces, a real local embeddings server, real ledgers."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.conftest import GLOSSARY, commit_all, status
from tests.fake_embeddings import FakeEmbeddingServer, Reply
from tests.publishing import activate_head, prepared_workspace, publish, published
from thoth.runtime import Runtime, open_runtime, state_dir
from thoth.search.outcome import EMBEDDER_FAILED, REVISION_MISMATCH
from thoth.session import CONSULTING_STAGES, STAGE_DECISIONS, Session, SessionStore
from thoth.workflow.consult import (
    NotAnEvidenceStage,
    SessionWorkflow,
    StageBlocked,
    StageNotReady,
)
from thoth.workspace import Workspace

Make = Callable[..., Workspace]
QUESTION = "ricovero con pernottamento dei pazienti pediatrici"
REWRITTEN = "Numero di ricoveri con pernottamento di pazienti con età inferiore a 18 anni"
PLAN = "cte ricoveri: adt.admission con pernottamento; cte pediatrici: join clinical.patient"


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


@pytest.fixture
def rt(make_workspace: Make, fake: FakeEmbeddingServer) -> Iterator[Runtime]:
    runtime = published(make_workspace, fake.url)
    try:
        yield runtime
    finally:
        runtime.close()


def new_session(rt: Runtime, question: str = QUESTION) -> Session:
    return SessionStore(state_dir(rt.ws) / "sessions").create(question)


def decide(session: Session, stage: str, type: str, subject: str, detail: str = "") -> None:
    session.append(stage, type, subject=subject, detail=detail, rationale="reviewer")


def through_schema_linking(session: Session) -> None:
    decide(session, "clarification", "concept_clarified", "ricovero", "con pernottamento")
    decide(session, "rewriting", "question_rewritten", REWRITTEN)
    decide(session, "schema_linking", "table_promoted", "adt.admission")
    decide(session, "schema_linking", "table_promoted", "clinical.patient")
    decide(session, "schema_linking", "table_promoted", "clinical.episode")
    decide(session, "schema_linking", "table_excluded", "clinical.episode")
    decide(session, "schema_linking", "column_promoted", "clinical.patient.birth_date")


def test_stage_map_follows_the_seed() -> None:
    assert dict(CONSULTING_STAGES) == {
        "clarification": "disambiguation",
        "rewriting": "rewriting",
        "schema_linking": "schema_linking",
        "cte": "sql_generation",
        "final_sql": "sql_generation",
    }
    assert "formula_proposed" in STAGE_DECISIONS["schema_linking"]
    assert STAGE_DECISIONS["memory_promotion"] == ()  # markers come from `tht memory`


def test_clarification_searches_the_question_and_keeps_the_receipt(
    rt: Runtime, fake: FakeEmbeddingServer
) -> None:
    session = new_session(rt)
    before = len(fake.requests)
    found = SessionWorkflow(rt, session).consult("clarification")

    assert found.purpose == "disambiguation"
    assert found.query_text == f"Domanda: {QUESTION}"
    assert fake.requests[before:][0].inputs == [found.query_text]
    assert len(fake.requests) == before + 1  # one search, one query embedding
    ids = [r.evidence_id for r in found.results]
    assert "evidence:ricovero" in ids
    [receipt] = session.entries()
    assert receipt.seq == found.receipt.seq and receipt.type == "evidence_receipt"
    assert receipt.stage == "clarification" and receipt.receipt is not None
    assert receipt.receipt.purpose == "disambiguation"
    assert list(receipt.receipt.evidence_ids) == ids
    assert receipt.receipt.generation == found.generation
    assert status(rt.ws.root) == ""  # the session lives outside the workspace repo


def test_each_stage_searches_with_the_inputs_it_has(rt: Runtime) -> None:
    session = new_session(rt)
    flow = SessionWorkflow(rt, session)
    through_schema_linking(session)
    decide(session, "synthesis", "synthesis_approved", "schema linking verified")
    decide(session, "cte", "cte_plan_approved", "two CTEs", PLAN)

    texts = {stage: flow.consult(stage).query_text for stage in CONSULTING_STAGES}
    assert texts["clarification"] == f"Domanda: {QUESTION}"
    assert texts["rewriting"] == f"Domanda: {QUESTION}\nConcetti: ricovero"
    assert texts["schema_linking"] == f"Domanda: {REWRITTEN}\nConcetti: ricovero"
    schema = (
        "\nConcetti: ricovero\nTabelle: adt.admission, clinical.patient"
        "\nColonne: clinical.patient.birth_date"
    )
    assert texts["cte"] == f"Domanda: {REWRITTEN}{schema}"  # excluded table left out
    assert texts["final_sql"] == f"Domanda: {REWRITTEN}\nPiano CTE: {PLAN}{schema}"

    receipts = [e for e in session.entries() if e.type == "evidence_receipt"]
    assert [(e.stage, e.receipt.purpose if e.receipt else None) for e in receipts] == list(
        CONSULTING_STAGES.items()
    )


def test_each_consult_is_a_new_search(rt: Runtime, fake: FakeEmbeddingServer) -> None:
    session = new_session(rt)
    flow = SessionWorkflow(rt, session)
    before = len(fake.requests)
    flow.consult("clarification")
    flow.consult("clarification")
    assert len(fake.requests) == before + 2  # no cache shared between consults
    assert [e.seq for e in session.entries()] == [1, 2]


@pytest.mark.parametrize(
    ("stage", "missing"),
    [
        ("schema_linking", "question_rewritten"),
        ("cte", "question_rewritten"),
        ("final_sql", "question_rewritten"),
    ],
)
def test_a_stage_without_its_inputs_is_not_ready(
    rt: Runtime, fake: FakeEmbeddingServer, stage: str, missing: str
) -> None:
    session = new_session(rt)
    before = len(fake.requests)
    with pytest.raises(StageNotReady) as err:
        SessionWorkflow(rt, session).consult(stage)
    text = str(err.value)
    assert session.id in text and stage in text and missing in text
    assert "tht session decide" in text  # what to do
    assert session.entries() == [] and len(fake.requests) == before


def test_cte_needs_an_approved_schema_and_final_sql_an_approved_plan(rt: Runtime) -> None:
    session = new_session(rt)
    flow = SessionWorkflow(rt, session)
    decide(session, "rewriting", "question_rewritten", REWRITTEN)
    with pytest.raises(StageNotReady, match="table_promoted"):
        flow.consult("cte")
    decide(session, "schema_linking", "table_promoted", "adt.admission")
    flow.consult("cte")
    with pytest.raises(StageNotReady, match="cte_plan_approved"):
        flow.consult("final_sql")


def test_two_standing_rewrites_are_refused_not_picked(rt: Runtime) -> None:
    session = new_session(rt)
    decide(session, "rewriting", "question_rewritten", REWRITTEN)
    decide(session, "rewriting", "question_rewritten", "altra riscrittura")
    with pytest.raises(StageNotReady) as err:
        SessionWorkflow(rt, session).consult("schema_linking")
    assert "seq 1" in str(err.value) and "seq 2" in str(err.value)
    assert "retract" in str(err.value)
    session.retract(1, rationale="superseded")
    found = SessionWorkflow(rt, session).consult("schema_linking")
    assert found.query_text == "Domanda: altra riscrittura"


def test_stale_decisions_are_not_inputs(rt: Runtime) -> None:
    session = new_session(rt)
    through_schema_linking(session)
    session.rollback("clarification", rationale="the concept was wrong")
    with pytest.raises(StageNotReady, match="question_rewritten"):
        SessionWorkflow(rt, session).consult("schema_linking")
    found = SessionWorkflow(rt, session).consult("rewriting")
    assert found.query_text == f"Domanda: {QUESTION}\nConcetti: ricovero"


@pytest.mark.parametrize("stage", ["memory", "synthesis", "memory_promotion"])
def test_memory_and_synthesis_never_call_evidence(
    rt: Runtime, fake: FakeEmbeddingServer, stage: str
) -> None:
    session = new_session(rt)
    through_schema_linking(session)
    before_requests, before_entries = len(fake.requests), session.entries()
    with pytest.raises(NotAnEvidenceStage) as err:
        SessionWorkflow(rt, session).consult(stage)
    assert stage in str(err.value) and session.id in str(err.value)
    assert len(fake.requests) == before_requests
    assert session.entries() == before_entries


def test_unknown_stage_is_named(rt: Runtime) -> None:
    session = new_session(rt)
    with pytest.raises(Exception, match="unknown stage 'F1'"):
        SessionWorkflow(rt, session).consult("F1")


def test_unavailable_blocks_records_nothing_and_retries_after_publish(rt: Runtime) -> None:
    session = new_session(rt)
    flow = SessionWorkflow(rt, session)
    first = flow.consult("clarification")

    # A new revision is activated: the active generation no longer matches it.
    commit_all(rt.ws.root, "a reviewed change")
    activate_head(rt)
    before = session.ledger.path.read_bytes()
    with pytest.raises(StageBlocked) as err:
        flow.consult("clarification")
    blocked = err.value
    assert blocked.code == REVISION_MISMATCH and blocked.retryable
    assert blocked.session_id == session.id and blocked.stage == "clarification"
    assert blocked.purpose == "disambiguation"
    text = str(blocked)
    assert session.id in text and "clarification" in text and REVISION_MISMATCH in text
    assert "retry" in text and "nothing was recorded" in text
    assert session.ledger.path.read_bytes() == before  # no receipt, no empty receipt

    assert publish(rt).outcome == "activated"
    again = flow.consult("clarification")
    assert again.generation != first.generation
    assert again.receipt.receipt is not None
    assert again.receipt.receipt.revision == rt.state.active_revision(rt.ws.settings.workspace)


def test_a_failing_embedder_blocks_after_one_attempt(
    rt: Runtime, fake: FakeEmbeddingServer
) -> None:
    session = new_session(rt)
    decide(session, "clarification", "concept_clarified", "ricovero")
    fake.script(Reply(status=503))
    before = len(fake.requests)
    with pytest.raises(StageBlocked) as err:
        SessionWorkflow(rt, session).consult("rewriting")
    assert err.value.code == EMBEDDER_FAILED
    # One search, no second one with another purpose or against an older generation.
    assert len(fake.requests) == before + 1
    assert [e.type for e in session.entries()] == ["concept_clarified"]


def test_an_available_empty_result_is_a_receipt_and_the_stage_goes_on(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> None:
    only_glossary = """questions:
  - id: ricovero
    question: ricovero con pernottamento
    purpose: disambiguation
    profile: lexical
    expected: [evidence:ricovero]
  - id: degenza
    question: degenza in reparto
    purpose: disambiguation
    profile: semantic
    expected: [evidence:ricovero]
  - id: day-hospital
    question: ricovero diurno day hospital
    purpose: rewriting
    profile: mixed
    expected: [evidence:day-hospital]
"""
    ws = prepared_workspace(
        lambda _sources: make_workspace({"g.md": GLOSSARY}), fake.url, evaluation=only_glossary
    )
    runtime = open_runtime(ws)
    try:
        activate_head(runtime)
        assert publish(runtime).outcome == "activated"
        session = new_session(runtime)
        decide(session, "rewriting", "question_rewritten", REWRITTEN)
        # A glossary serves disambiguation and rewriting, never schema linking.
        found = SessionWorkflow(runtime, session).consult("schema_linking")
        assert found.results == ()
        assert found.receipt.receipt is not None and found.receipt.receipt.evidence_ids == ()
        decide(session, "schema_linking", "table_promoted", "adt.admission")
        assert [e.type for e in session.effective()] == ["question_rewritten", "table_promoted"]
    finally:
        runtime.close()
