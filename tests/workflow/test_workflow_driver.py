"""The LLM driver: a model proposes decisions through tool calls; a reviewer accepts or rejects
each one. Real `openai` / `anthropic` SDK clients talk over TCP to the scripted local model
server (tests/fake_llm.py); Evidence comes from a real published workspace and the local
embeddings server. Nothing of ours is mocked."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.conftest import commit_all, status
from tests.fake_embeddings import FakeEmbeddingServer
from tests.fake_llm import ANTHROPIC_PATH, OPENAI_PATH, FakeLLMServer, ToolCallScript
from tests.publishing import activate_head, published
from thoth.config import LLMSettings
from thoth.errors import ProblemsError, ThothError
from thoth.llm import ToolClient, tool_client
from thoth.memory.promotion import save_one
from thoth.memory.recall import choose
from thoth.memory.registry import MemoryRecord
from thoth.runtime import Runtime, state_dir
from thoth.session import Session, SessionStore
from thoth.session.formulas import formula_detail
from thoth.session.proposals import PROPOSALS_FILE, ProposalBook, ProposalRefused
from thoth.workflow.consult import SessionWorkflow, StageBlocked
from thoth.workflow.driver import (
    DRIVABLE_STAGES,
    TOOL_NAME,
    DriverError,
    DriverRefused,
    accept_proposal,
    drive,
)
from thoth.workflow.stores import MemoryStores
from thoth.workspace import Workspace

Make = Callable[..., Workspace]
KEY_ENV = "THOTH_TEST_KEY"
QUESTION = "ricovero con pernottamento dei pazienti pediatrici"
REWRITTEN = "Numero di ricoveri con pernottamento di pazienti con meno di 18 anni"


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "local-test-key-not-a-secret")


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def rt(make_workspace: Make, fake: FakeEmbeddingServer) -> Iterator[Runtime]:
    runtime = published(make_workspace, fake.url)
    try:
        yield runtime
    finally:
        runtime.close()


@pytest.fixture
def session(rt: Runtime) -> Session:
    return SessionStore(state_dir(rt.ws) / "sessions").create(QUESTION)


def client(llm: FakeLLMServer, provider: str = "openai") -> ToolClient:
    return tool_client(
        LLMSettings(
            provider="anthropic" if provider == "anthropic" else "openai",
            base_url=llm.url if provider == "anthropic" else f"{llm.url}/v1",
            model="test-model",
            api_key_env=KEY_ENV,
            timeout_seconds=5,
        )
    )


def call(type: str, subject: str, detail: str = "", rationale: str = "evidence:ricovero") -> Any:
    return ToolCallScript(
        TOOL_NAME, {"type": type, "subject": subject, "detail": detail, "rationale": rationale}
    )


def types(session: Session) -> list[str]:
    return [e.type for e in session.entries()]


def no_proposals(session: Session) -> bool:
    return not (session.directory / PROPOSALS_FILE).exists()


def test_drivable_stages() -> None:
    assert DRIVABLE_STAGES == (
        "clarification",
        "memory",
        "rewriting",
        "schema_linking",
        "synthesis",
        "cte",
        "final_sql",
        "memory_promotion",
    )


def test_openai_proposals_wait_for_a_reviewer(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    llm.reply_tool_calls(
        call("concept_clarified", "ricovero", "permanenza con almeno un pernottamento"),
        call("concept_clarified", "pediatrico", "età inferiore a 18 anni"),
        text="Two concepts need clarifying.",
    )
    result = drive(SessionWorkflow(rt, session), "clarification", client(llm))

    assert [p.no for p in result.proposals] == [1, 2]
    assert result.model == "openai:test-model" and result.note == "Two concepts need clarifying."
    assert result.consultation is not None
    # Only the receipt of the consult is in the ledger: nothing applied on the model's word.
    assert types(session) == ["evidence_receipt"]
    assert [p.subject for p in result.proposals] == ["ricovero", "pediatrico"]
    assert all(p.receipt_seq == result.consultation.receipt.seq for p in result.proposals)

    [request] = llm.requests
    assert request.path == OPENAI_PATH
    [tool] = request.body["tools"]
    assert tool["type"] == "function" and tool["function"]["name"] == TOOL_NAME
    schema = tool["function"]["parameters"]
    assert schema["properties"]["type"]["enum"] == ["concept_clarified"]
    assert schema["required"] == ["type", "subject", "detail", "rationale"]
    system, user = request.body["messages"]
    assert system["role"] == "system" and "clarification" in system["content"]
    given = json.loads(user["content"])
    assert given["question"] == QUESTION and given["stage"] == "clarification"
    assert given["decisions"] == []
    assert given["evidence"]["purpose"] == "disambiguation"
    ids = [r["evidence_id"] for r in given["evidence"]["results"]]
    assert ids == [r.evidence_id for r in result.consultation.results]
    assert "evidence:ricovero" in ids

    book = ProposalBook(session)
    accepted = book.accept(1)
    assert accepted.type == "concept_clarified" and accepted.subject == "ricovero"
    assert accepted.detail == "permanenza con almeno un pernottamento"
    assert "proposal 1" in accepted.rationale and "openai:test-model" in accepted.rationale
    book.reject(2, rationale="not in the question")
    views = {v.proposal.no: v for v in book.views()}
    assert views[1].status == "accepted" and views[1].seq == accepted.seq
    assert views[2].status == "rejected" and views[2].review_rationale == "not in the question"
    assert [e.type for e in session.effective()] == ["concept_clarified"]
    with pytest.raises(ProposalRefused, match="already accepted"):
        book.accept(1)
    with pytest.raises(ProposalRefused, match="rejected"):
        book.accept(2)
    with pytest.raises(ProposalRefused, match="no proposal 3"):
        book.accept(3)
    assert status(rt.ws.root) == ""


def test_anthropic_proposals_and_the_decisions_so_far(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    session.append(
        "clarification", "concept_clarified", subject="ricovero", detail="con pernottamento"
    )
    llm.reply_tool_calls(call("question_rewritten", REWRITTEN, rationale="evidence:ricovero"))
    result = drive(SessionWorkflow(rt, session), "rewriting", client(llm, "anthropic"))
    assert [(p.type, p.subject) for p in result.proposals] == [("question_rewritten", REWRITTEN)]
    assert result.model == "anthropic:test-model"

    [request] = llm.requests
    assert request.path == ANTHROPIC_PATH
    [tool] = request.body["tools"]
    assert tool["name"] == TOOL_NAME
    assert tool["input_schema"]["properties"]["type"]["enum"] == ["question_rewritten"]
    assert "rewriting" in request.body["system"]
    given = json.loads(request.body["messages"][0]["content"])
    assert [(d["seq"], d["type"], d["subject"]) for d in given["decisions"]] == [
        (1, "concept_clarified", "ricovero")
    ]
    assert given["evidence"]["purpose"] == "rewriting"
    ProposalBook(session).accept(1)
    assert [e.subject for e in session.effective()] == ["ricovero", REWRITTEN]


def test_malformed_tool_call_is_attributed_and_nothing_is_saved(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    llm.reply_tool_calls(
        call("concept_clarified", "ricovero"),
        ToolCallScript(TOOL_NAME, '{"type": "concept_clarified", "subject": ', id="call_bad"),
    )
    with pytest.raises(DriverRefused) as err:
        drive(SessionWorkflow(rt, session), "clarification", client(llm))
    text = str(err.value)
    assert session.id in text and "clarification" in text and "openai:test-model" in text
    assert "nothing was saved" in text
    [problem] = err.value.problems
    assert "call_bad" in problem.where and "not valid JSON" in problem.message
    assert no_proposals(session) and types(session) == ["evidence_receipt"]


def test_anthropic_call_missing_a_field_is_refused(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    llm.reply_tool_calls(
        ToolCallScript(TOOL_NAME, {"type": "concept_clarified", "subject": "ricovero"}),
    )
    with pytest.raises(DriverRefused) as err:
        drive(SessionWorkflow(rt, session), "clarification", client(llm, "anthropic"))
    fields = {p.field for p in err.value.problems}
    assert fields == {"detail", "rationale"}
    assert no_proposals(session)


def test_a_type_not_allowed_in_the_stage_is_refused(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    llm.reply_tool_calls(
        call("concept_clarified", "ricovero"),
        call("table_promoted", "adt.admission"),
        ToolCallScript("drop_table", {"name": "adt.admission"}),
    )
    with pytest.raises(DriverRefused) as err:
        drive(SessionWorkflow(rt, session), "clarification", client(llm))
    messages = [p.render() for p in err.value.problems]
    assert len(messages) == 2
    assert "table_promoted is not allowed in stage clarification" in messages[0]
    assert "concept_clarified" in messages[0]  # what is allowed
    assert "unknown tool 'drop_table'" in messages[1]
    assert no_proposals(session)  # the valid call was not saved either: all or nothing
    assert "concept_clarified" not in types(session)


def test_formula_proposals_are_checked_when_proposed(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    session.append("rewriting", "question_rewritten", subject=REWRITTEN)
    good = formula_detail(
        ["clinical.patient.birth_date"], "date_part('year', age(p.birth_date)) < 18"
    )
    bad = formula_detail(["clinical.patient.birth_date"], "SELECT * FROM clinical.patient")
    llm.reply_tool_calls(call("formula_proposed", "pediatrico", bad))
    with pytest.raises(DriverRefused, match="complete statement"):
        drive(SessionWorkflow(rt, session), "schema_linking", client(llm))
    assert no_proposals(session)
    llm.reply_tool_calls(
        call("formula_proposed", "pediatrico", good), call("table_promoted", "clinical.patient")
    )
    result = drive(SessionWorkflow(rt, session), "schema_linking", client(llm))
    assert [p.type for p in result.proposals] == ["formula_proposed", "table_promoted"]
    ProposalBook(session).accept(1)
    [formula] = [e for e in session.effective() if e.type == "formula_proposed"]
    assert formula.detail == good


def test_synthesis_is_driven_without_evidence(
    rt: Runtime, session: Session, llm: FakeLLMServer, fake: FakeEmbeddingServer
) -> None:
    session.append("schema_linking", "table_promoted", subject="adt.admission")
    before = len(fake.requests)
    llm.reply_tool_calls(call("synthesis_approved", "one table", "adt.admission only"))
    result = drive(SessionWorkflow(rt, session), "synthesis", client(llm))
    assert len(fake.requests) == before  # memory and synthesis never call Evidence
    assert result.consultation is None and [p.type for p in result.proposals] == [
        "synthesis_approved"
    ]
    given = json.loads(llm.requests[0].body["messages"][1]["content"])
    assert given["evidence"] is None
    assert types(session) == ["table_promoted"]  # no receipt either


@pytest.mark.parametrize("stage", ["memory", "memory_promotion"])
def test_memory_stages_with_nothing_to_offer_do_not_ask_the_model(
    rt: Runtime,
    session: Session,
    llm: FakeLLMServer,
    fake: FakeEmbeddingServer,
    stage: str,
) -> None:
    before = len(fake.requests)
    result = drive(SessionWorkflow(rt, session), stage, client(llm))
    assert result.proposals == [] and result.offered == () and "not asked" in result.note
    assert llm.requests == [] and len(fake.requests) == before and types(session) == []
    assert no_proposals(session)


def test_an_unknown_stage_is_not_driven(rt: Runtime, session: Session, llm: FakeLLMServer) -> None:
    with pytest.raises(ThothError, match="unknown stage 'F2'"):
        drive(SessionWorkflow(rt, session), "F2", client(llm))
    assert llm.requests == []


# ---------------------------------------------------------------------- memory stages

RICOVERO = "permanenza in reparto con almeno un pernottamento"


def stores(rt: Runtime) -> MemoryStores:
    return MemoryStores.for_runtime(rt)


def promoted_elsewhere(rt: Runtime) -> MemoryRecord:
    """A memory promoted from another session, through the real promotion code."""
    origin = SessionStore(state_dir(rt.ws) / "sessions").create("ricoveri per reparto")
    entry = origin.append("clarification", "concept_clarified", subject="ricovero", detail=RICOVERO)
    st = stores(rt)
    return save_one(
        origin, entry.seq, registry=st.registry, index=st.index, embedder=st.embedder
    ).record


def test_f2_proposal_is_accepted_through_choose(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    mem = promoted_elsewhere(rt)
    before = [e.seq for e in session.entries()]
    llm.reply_tool_calls(
        call("concept_clarified", "ricovero", "my own words", rationale=f"{mem.id} fits")
    )
    result = drive(SessionWorkflow(rt, session), "memory", client(llm))

    assert result.consultation is None and result.offered == (mem.id,)
    [proposal] = result.proposals
    # What the reviewer sees is what accepting records: the memory's own text.
    assert (proposal.stage, proposal.subject, proposal.detail) == ("memory", "ricovero", RICOVERO)
    assert [e.seq for e in session.entries()] == before  # nothing applied, no receipt
    [request] = llm.requests
    given = json.loads(request.body["messages"][1]["content"])
    assert given["evidence"] is None
    assert [m["memory_id"] for m in given["memories"]] == [mem.id]
    assert "memories" in request.body["messages"][0]["content"]

    with pytest.raises(ProposalRefused, match="memory registry"):
        ProposalBook(session).accept(1)  # never a plain decide
    entry = accept_proposal(session, 1, stores=stores(rt))
    assert (entry.stage, entry.type, entry.subject, entry.detail) == (
        "memory",
        "concept_clarified",
        "ricovero",
        RICOVERO,
    )
    assert entry.rationale.startswith(f"adopted from memory {mem.id}")
    again = choose(session, mem.id, registry=stores(rt).registry)
    assert not again.created and again.entry.seq == entry.seq  # the choice choose made
    [view] = ProposalBook(session).views()
    assert view.status == "accepted" and view.seq == entry.seq


def test_f2_call_citing_an_unproposed_memory_is_refused(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    mem = promoted_elsewhere(rt)
    llm.reply_tool_calls(
        call("concept_clarified", "ricovero", rationale=f"{mem.id} fits"),
        call("concept_clarified", "ricovero", rationale="mem-0042 fits better"),
        call("concept_clarified", "ricovero", rationale="fits"),
    )
    with pytest.raises(DriverRefused) as err:
        drive(SessionWorkflow(rt, session), "memory", client(llm))
    assert session.id in str(err.value) and "nothing was saved" in str(err.value)
    first, second = err.value.problems
    assert "tool call 2" in first.where and "mem-0042 was not proposed" in first.message
    assert first.hint is not None and mem.id in first.hint
    assert "tool call 3" in second.where and "cites no memory id" in second.message
    assert no_proposals(session) and types(session) == []


def clarified(session: Session) -> int:
    return session.append(
        "clarification", "concept_clarified", subject="ricovero", detail=RICOVERO
    ).seq


def test_f8_promotion_accepted_writes_registry_index_and_marker(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    seq = clarified(session)
    llm.reply_tool_calls(call("memory_promoted", "anything", f"seq:{seq}", rationale="reusable"))
    result = drive(SessionWorkflow(rt, session), "memory_promotion", client(llm))
    assert result.offered == (f"seq:{seq}",) and result.consultation is None
    [proposal] = result.proposals
    assert (proposal.subject, proposal.detail) == ("ricovero", f"seq:{seq}")
    [tool] = llm.requests[0].body["tools"]
    assert tool["function"]["parameters"]["properties"]["type"]["enum"] == [
        "memory_promoted",
        "memory_promotion_declined",
    ]
    given = json.loads(llm.requests[0].body["messages"][1]["content"])
    assert [c["seq"] for c in given["candidates"]] == [seq]
    st = stores(rt)
    assert st.registry.find(session.id, seq) is None  # proposing writes nothing

    marker = accept_proposal(session, 1, note="ok", stores=st)
    record = st.registry.find(session.id, seq)
    assert record is not None and record.subject == "ricovero"
    assert record.id in st.index.ids()
    assert (marker.type, marker.subject, marker.detail, marker.refs) == (
        "memory_promoted",
        record.id,
        f"seq:{seq}",
        seq,
    )
    assert marker.rationale.endswith(ProposalBook(session).views()[0].proposal.mark)
    assert types(session) == ["concept_clarified", "memory_promoted"]


def test_f8_decline_accepted_writes_a_declined_marker(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    seq = clarified(session)
    llm.reply_tool_calls(call("memory_promotion_declined", "ricovero", f"seq:{seq}", "local"))
    drive(SessionWorkflow(rt, session), "memory_promotion", client(llm))
    marker = accept_proposal(session, 1, stores=stores(rt))
    assert (marker.type, marker.detail, marker.refs) == (
        "memory_promotion_declined",
        f"seq:{seq}",
        seq,
    )
    assert stores(rt).registry.all() == []
    assert types(session) == ["concept_clarified", "memory_promotion_declined"]


def test_f8_seq_not_in_the_preview_is_refused(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    seq = clarified(session)
    table = session.append("schema_linking", "table_promoted", subject="adt.admission").seq
    llm.reply_tool_calls(
        call("memory_promoted", "ricovero", f"seq:{seq}"),
        call("memory_promoted", "adt.admission", f"seq:{table}"),
        call("memory_promotion_declined", "ricovero", str(seq)),
        call("memory_promotion_declined", "ricovero", f"seq:{seq}"),
        call("concept_clarified", "ricovero", f"seq:{seq}"),
    )
    with pytest.raises(DriverRefused) as err:
        drive(SessionWorkflow(rt, session), "memory_promotion", client(llm))
    messages = [(p.where.split(" (")[0], p.message) for p in err.value.problems]
    assert messages == [
        ("tool call 2", f"'seq:{table}' is not a candidate of the promotion preview"),
        ("tool call 3", f"detail must be seq:N naming a candidate, not '{seq}'"),
        ("tool call 4", f"seq:{seq} is already proposed by an earlier call of this reply"),
        ("tool call 5", "concept_clarified is not allowed in stage memory_promotion"),
    ]
    assert no_proposals(session)
    assert types(session) == ["concept_clarified", "table_promoted"]


def test_unavailable_evidence_blocks_before_the_model_is_asked(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    commit_all(rt.ws.root, "new revision")
    activate_head(rt)
    with pytest.raises(StageBlocked, match="revision_mismatch"):
        drive(SessionWorkflow(rt, session), "clarification", client(llm))
    assert llm.requests == [] and types(session) == [] and no_proposals(session)


def test_model_failure_is_attributed_and_not_retried(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    llm.reply(status=500)
    with pytest.raises(DriverError) as err:
        drive(SessionWorkflow(rt, session), "clarification", client(llm))
    text = str(err.value)
    assert session.id in text and "clarification" in text and "HTTP 500" in text
    assert len(llm.requests) == 1 and no_proposals(session)


def test_a_reply_without_calls_proposes_nothing_and_says_so(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    llm.reply("The Evidence does not settle anything here.")
    result = drive(SessionWorkflow(rt, session), "clarification", client(llm))
    assert result.proposals == [] and result.note.startswith("The Evidence")
    assert no_proposals(session)


def test_numbering_continues_across_drives_and_damage_is_named(
    rt: Runtime, session: Session, llm: FakeLLMServer
) -> None:
    llm.reply_tool_calls(call("concept_clarified", "a"))
    llm.reply_tool_calls(call("concept_clarified", "b"))
    flow = SessionWorkflow(rt, session)
    drive(flow, "clarification", client(llm))
    second = drive(flow, "clarification", client(llm))
    assert [p.no for p in second.proposals] == [2]
    path = session.directory / PROPOSALS_FILE
    path.write_text(path.read_text("utf-8") + "{oops\n", encoding="utf-8")
    with pytest.raises(ProblemsError) as err:
        ProposalBook(session).views()
    assert session.id in str(err.value) and "line 3" in str(err.value)
