"""The database in a session's stages, on a real SQLite warehouse and a published workspace:
schema linking proposes tables and columns (blocked with a stable code, nothing recorded,
when the database cannot be reached), decisions are checked against the snapshot and the
database's EXPLAIN, and the approved final SQL runs read-only with a receipt in the ledger."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.fake_embeddings import FakeEmbeddingServer
from tests.fake_llm import FakeLLMServer, ToolCallScript
from tests.schema.warehouse import warehouse_runtime
from thoth.config import LLMSettings
from thoth.database import DatabaseUnavailable
from thoth.errors import PreconditionError
from thoth.llm import tool_client
from thoth.runtime import Runtime, state_dir
from thoth.schema import SchemaSync
from thoth.session import Session, SessionStore
from thoth.workflow.consult import SessionWorkflow, StageBlocked
from thoth.workflow.driver import TOOL_NAME, accept_proposal, drive
from thoth.workflow.sql import (
    DecisionRefused,
    RunFailed,
    SchemaUnreadable,
    decide_checked,
    run_final_sql,
)
from thoth.workflow.stores import MemoryStores
from thoth.workspace import Workspace

Make = Callable[..., Workspace]
QUESTION = "Quanti ricoveri in day hospital per sesso del paziente?"
FINAL = (
    "SELECT p.sex, count(*) AS ricoveri FROM adt.admission a "
    "JOIN clinical.patient p ON p.patient_id = a.patient_id "
    "WHERE a.care_regime = '2' GROUP BY p.sex ORDER BY p.sex"
)


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


@pytest.fixture
def rt(make_workspace: Make, fake: FakeEmbeddingServer) -> Iterator[Runtime]:
    runtime = warehouse_runtime(make_workspace, fake.url)
    with runtime.database() as db:
        SchemaSync(runtime.ws, runtime.state, runtime.backend, runtime.embedder, db).run()
    try:
        yield runtime
    finally:
        runtime.close()


def new_session(rt: Runtime) -> Session:
    session = SessionStore(state_dir(rt.ws) / "sessions").create(QUESTION)
    session.append("clarification", "concept_clarified", subject="day hospital", detail="2")
    session.append("rewriting", "question_rewritten", subject=QUESTION)
    return session


def lines(session: Session) -> list[str]:
    return session.ledger.path.read_text(encoding="utf-8").splitlines()


def test_schema_linking_proposes_tables_columns_and_joins(rt: Runtime) -> None:
    session = new_session(rt)
    found = SessionWorkflow(rt, session).consult("schema_linking")
    assert found.schema is not None
    proposed = {c.qualified for c in found.schema.proposed()}
    assert {"adt.admission.care_regime", "clinical.patient.sex"} <= proposed
    tables = [t.qualified for t in found.schema.tables]
    assert {"adt.admission", "clinical.patient"} <= set(tables)
    # The reviewed reference joins the two files; its columns are proposed with it.
    assert {"adt.admission.patient_id", "clinical.patient.patient_id"} <= set(
        found.schema.join_columns
    )
    column = next(c for c in found.schema.proposed() if c.qualified == "adt.admission.care_regime")
    assert column.type and column.description and column.samples
    assert found.as_dict()["schema"]["columns"]
    assert found.receipt.type == "evidence_receipt"


def test_unreachable_database_blocks_schema_linking_and_records_nothing(rt: Runtime) -> None:
    session = new_session(rt)
    before = lines(session)
    (rt.ws.root / "warehouse" / "adt.sqlite").rename(rt.ws.root / "warehouse" / "moved.sqlite")
    with pytest.raises(StageBlocked) as caught:
        SessionWorkflow(rt, session).consult("schema_linking")
    assert caught.value.code == "database_unavailable"
    assert "database.files.adt" in str(caught.value)
    assert lines(session) == before


def test_promoted_names_must_exist_and_the_hint_names_the_closest(rt: Runtime) -> None:
    session = new_session(rt)
    before = lines(session)
    with pytest.raises(DecisionRefused) as caught:
        decide_checked(rt, session, "schema_linking", "table_promoted", subject="adt.admissions")
    assert "closest: adt.admission" in str(caught.value)
    with pytest.raises(DecisionRefused) as caught:
        decide_checked(
            rt, session, "schema_linking", "column_promoted", subject="clinical.patient.gender"
        )
    assert "clinical.patient has no column gender" in str(caught.value)
    assert lines(session) == before
    entry = decide_checked(
        rt, session, "schema_linking", "column_promoted", subject="CLINICAL.patient.sex"
    )
    assert entry.seq == len(before) + 1


@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("DELETE FROM adt.admission", "not_select"),
        ("SELECT 1; SELECT 2", "statements"),
        ("SELECT gender FROM clinical.patient", "statement_invalid"),
    ],
)
def test_final_sql_must_be_one_read_only_statement_the_database_explains(
    rt: Runtime, sql: str, code: str
) -> None:
    session = new_session(rt)
    before = lines(session)
    with pytest.raises(DecisionRefused) as caught:
        decide_checked(
            rt, session, "final_sql", "final_sql_approved", subject="day hospital", detail=sql
        )
    codes = [p.code for p in caught.value.problems]
    assert codes and codes[0] == code, caught.value
    assert lines(session) == before


def test_a_cte_plan_written_as_sql_is_checked_prose_is_not(rt: Runtime) -> None:
    session = new_session(rt)
    decide_checked(
        rt, session, "cte", "cte_plan_approved", subject="plan", detail="ricoveri: adt.admission"
    )
    with pytest.raises(DecisionRefused, match="no such column"):
        decide_checked(
            rt,
            session,
            "cte",
            "cte_plan_approved",
            subject="plan",
            detail="WITH r AS (SELECT nope FROM adt.admission) SELECT * FROM r",
        )


def test_run_records_a_receipt_without_rows(rt: Runtime) -> None:
    session = new_session(rt)
    approved = decide_checked(
        rt, session, "final_sql", "final_sql_approved", subject="per sesso", detail=FINAL
    )
    done = run_final_sql(rt, session)
    assert done.result is not None and done.result.columns == ("sex", "ricoveri")
    assert [r[0] for r in done.result.rows] == ["F", "M"]
    receipt = done.receipt
    assert receipt.status == "succeeded" and receipt.final_sql_seq == approved.seq
    assert receipt.row_count == 2 and receipt.columns == ("sex", "ricoveri")
    assert receipt.data_date == "2024-11-30"
    last = json.loads(lines(session)[-1])
    assert last["type"] == "sql_run" and last["stage"] == "final_sql"
    # Never the rows: counts and names only.
    assert str(done.result.rows[0][1]) not in json.dumps(last["run"]).replace(
        str(receipt.row_count), ""
    ).replace(str(approved.seq), "")
    assert "rows" not in last["run"]


def test_a_refused_run_is_recorded_as_failed_with_the_reason(rt: Runtime) -> None:
    session = new_session(rt)
    decide_checked(rt, session, "final_sql", "final_sql_approved", subject="s", detail=FINAL)
    # The column goes away after approval: the run fails, and says why.
    with sqlite3.connect(rt.ws.root / "warehouse" / "clinical.sqlite") as conn:
        conn.execute("ALTER TABLE patient RENAME COLUMN sex TO gender")
    conn.close()
    with pytest.raises(RunFailed) as caught:
        run_final_sql(rt, session)
    receipt = caught.value.run.receipt
    assert receipt.status == "failed" and "sex" in receipt.reason
    assert json.loads(lines(session)[-1])["run"]["status"] == "failed"


def test_run_without_reachable_database_records_nothing(rt: Runtime) -> None:
    session = new_session(rt)
    decide_checked(rt, session, "final_sql", "final_sql_approved", subject="s", detail=FINAL)
    before = lines(session)
    (rt.ws.root / "warehouse" / "clinical.sqlite").unlink()
    with pytest.raises(DatabaseUnavailable) as caught:
        run_final_sql(rt, session)
    assert caught.value.code == "database_unavailable"
    assert lines(session) == before


def test_run_needs_exactly_one_standing_final_sql(rt: Runtime) -> None:
    session = new_session(rt)
    with pytest.raises(PreconditionError, match="no final_sql_approved decision stands"):
        run_final_sql(rt, session)


def test_names_cannot_be_checked_without_a_schema_index(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> None:
    runtime = warehouse_runtime(make_workspace, fake.url)  # no schema sync
    try:
        session = new_session(runtime)
        with pytest.raises(SchemaUnreadable) as caught:
            decide_checked(
                runtime, session, "schema_linking", "table_promoted", subject="adt.admission"
            )
        assert caught.value.code == "schema_not_synced"
    finally:
        runtime.close()


def _call(type: str, subject: str, detail: str = "") -> ToolCallScript:
    return ToolCallScript(
        TOOL_NAME, {"type": type, "subject": subject, "detail": detail, "rationale": "schema"}
    )


def test_the_driver_sees_the_proposed_schema_and_accepts_are_checked(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THOTH_TEST_LLM_KEY", "k")
    session = new_session(rt)
    with FakeLLMServer() as llm:
        llm.reply_tool_calls(
            _call("table_promoted", "adt.admission"),
            _call("table_promoted", "clinical.patients"),
        )
        client = tool_client(
            LLMSettings(
                base_url=f"{llm.url}/v1",
                model="test-model",
                api_key_env="THOTH_TEST_LLM_KEY",
                timeout_seconds=5,
            )
        )
        result = drive(SessionWorkflow(rt, session), "schema_linking", client)
        sent: Any = json.loads(llm.requests[-1].body["messages"][-1]["content"])
    database = sent["database"]
    assert database["dialect"] == "sqlite"
    assert "adt.admission.care_regime" in {c["qualified"] for c in database["columns"]}
    assert [p.no for p in result.proposals] == [1, 2]
    with MemoryStores(rt.ws) as stores:
        accepted = accept_proposal(session, 1, stores=stores, runtime=rt)
        assert accepted.subject == "adt.admission"
        with pytest.raises(DecisionRefused, match=r"closest: clinical\.patient"):
            accept_proposal(session, 2, stores=stores, runtime=rt)
