"""Sessions: stages, the append-only ledger, its effective view and the session store.

Real files in tmp_path throughout; the concurrency test runs two real Python processes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import status
from thoth.errors import ProblemsError, ThothError
from thoth.evidence.model import PURPOSES
from thoth.search.outcome import Receipt
from thoth.session import (
    CONTROL_TYPES,
    DECISION_TYPES,
    DISPLAY_CODES,
    ENTRY_TYPES,
    MEMORY_MARKER_TYPES,
    STAGE_PURPOSE,
    STAGES,
    Entry,
    EntryRefused,
    EvidenceReceipt,
    Ledger,
    LedgerCorrupted,
    Session,
    SessionNotFound,
    SessionStore,
    Withdrawal,
    effective_decisions,
    effective_entries,
    memory_markers,
    stage_index,
    withdrawals,
)
from thoth.session.proposals import ProposalBook, ProposalDraft, ProposalsCorrupted
from thoth.workspace import Workspace

QUESTION = "Quanti ricoveri pediatrici ci sono stati nel 2023?"


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions")


@pytest.fixture
def session(store: SessionStore) -> Session:
    return store.create(QUESTION)


def decide(
    session: Session, stage: str, type: str = "concept_clarified", subject: str = "x"
) -> Entry:
    return session.append(
        stage, type, subject=subject, detail=f"{subject} detail", rationale="reviewer said so"
    )


def seqs(entries: list[Entry]) -> list[int]:
    return [e.seq for e in entries]


def ledger_bytes(session: Session) -> bytes:
    return session.ledger.path.read_bytes()


# ---------------------------------------------------------------------- stages


def test_stages_are_named_in_workflow_order() -> None:
    assert STAGES == (
        "clarification",
        "memory",
        "rewriting",
        "schema_linking",
        "synthesis",
        "cte",
        "final_sql",
        "memory_promotion",
    )
    assert [stage_index(s) for s in STAGES] == list(range(8))


def test_display_codes_are_presentation_only() -> None:
    assert {s: f"F{i}" for i, s in enumerate(STAGES, start=1)} == DISPLAY_CODES


def test_each_stage_searches_evidence_with_its_purpose_or_not_at_all() -> None:
    assert STAGE_PURPOSE == {
        "clarification": "disambiguation",
        "memory": None,
        "rewriting": "rewriting",
        "schema_linking": "schema_linking",
        "synthesis": None,
        "cte": "sql_generation",
        "final_sql": "sql_generation",
        "memory_promotion": None,
    }
    # The purposes are the Evidence search contract's own, not a private spelling.
    assert {p for p in STAGE_PURPOSE.values() if p} <= set(PURPOSES)


def test_unknown_stage_is_named_with_the_valid_ones() -> None:
    with pytest.raises(ThothError, match=r"unknown stage 'F1'.*clarification, memory"):
        stage_index("F1")


# ---------------------------------------------------------------------- session store


def test_create_writes_session_json_with_question_and_utc_time(store: SessionStore) -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    session = store.create(QUESTION)
    assert re.fullmatch(r"s-\d{8}-\d{6}-[0-9a-f]{6}", session.id)
    meta = json.loads((store.sessions_dir / session.id / "session.json").read_text("utf-8"))
    assert meta == {"id": session.id, "question": QUESTION, "created_at": session.created_at}
    created = datetime.fromisoformat(session.created_at)
    assert created.utcoffset() == timedelta(0)
    assert created >= before
    # The id carries the creation time, so listing by id is listing by age.
    assert session.id.startswith(created.strftime("s-%Y%m%d-%H%M%S-"))
    assert session.entries() == []


def test_open_and_list_return_the_stored_sessions(store: SessionStore) -> None:
    first = store.create("prima domanda")
    second = store.create("seconda domanda")
    opened = store.open(first.id)
    assert (opened.id, opened.question, opened.created_at) == (
        first.id,
        "prima domanda",
        first.created_at,
    )
    assert [s.id for s in store.list()] == sorted([first.id, second.id])


def test_list_of_a_missing_sessions_dir_is_empty(tmp_path: Path) -> None:
    assert SessionStore(tmp_path / "nothing-yet").list() == []


def test_blank_question_is_refused(store: SessionStore) -> None:
    with pytest.raises(ProblemsError, match="question is blank"):
        store.create("   ")
    assert store.list() == []


def test_open_unknown_session_names_id_and_directory(store: SessionStore) -> None:
    store.create(QUESTION)
    with pytest.raises(SessionNotFound) as err:
        store.open("s-20240101-000000-abcdef")
    assert "s-20240101-000000-abcdef" in str(err.value)
    assert str(store.sessions_dir) in str(err.value)


@pytest.mark.parametrize("bad", ["../etc", "s-2024-x", "", "s-20240101-000000-ABCDEF"])
def test_open_refuses_malformed_ids(store: SessionStore, bad: str) -> None:
    with pytest.raises(SessionNotFound, match="not a session id"):
        store.open(bad)


def test_damaged_session_json_is_named(store: SessionStore, session: Session) -> None:
    meta = store.sessions_dir / session.id / "session.json"
    meta.write_text(json.dumps({"id": session.id, "question": 3}), "utf-8")
    with pytest.raises(ThothError) as err:
        store.open(session.id)
    assert str(meta) in str(err.value)
    assert "question" in str(err.value)
    with pytest.raises(ThothError, match=re.escape(str(meta))):
        store.list()


def test_sessions_never_touch_the_workspace_repo(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace({"glossario.md": "# Glossario\n"})
    assert status(ws.root) == ""
    store = SessionStore(ws.root / ".thoth" / "sessions")
    session = store.create(QUESTION)
    decide(session, "clarification", subject="ricovero")
    session.reopen("clarification", rationale="redo")
    assert status(ws.root) == ""


# ---------------------------------------------------------------------- appending


def test_entries_are_numbered_from_one_and_read_back(session: Session) -> None:
    first = decide(session, "clarification", subject="ricovero")
    second = decide(session, "schema_linking", "table_promoted", subject="adt.admission")
    assert (first.seq, second.seq) == (1, 2)
    assert session.entries() == [first, second]
    assert second.stage == "schema_linking"
    assert second.type == "table_promoted"
    assert second.subject == "adt.admission"
    assert second.detail == "adt.admission detail"
    assert second.rationale == "reviewer said so"
    assert second.refs is None and second.receipt is None
    stamp = datetime.fromisoformat(second.timestamp)
    assert stamp.utcoffset() == timedelta(0)
    assert stamp >= datetime.fromisoformat(first.timestamp)


def test_ledger_is_one_json_object_per_line(session: Session) -> None:
    decide(session, "clarification", subject="ricovero è")
    session.retract(1, rationale="wrong concept")
    path = session.directory / "ledger.jsonl"
    assert session.ledger.path == path
    lines = path.read_text("utf-8").splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1, 2]
    first = json.loads(lines[0])
    assert set(first) == {"seq", "timestamp", "stage", "type", "subject", "detail", "rationale"}
    assert first["subject"] == "ricovero è"
    assert json.loads(lines[1])["refs"] == 1


def test_appends_never_rewrite_what_is_there(session: Session) -> None:
    decide(session, "clarification")
    before = ledger_bytes(session)
    session.retract(1, rationale="withdrawn")
    session.reopen("clarification", rationale="again")
    after = ledger_bytes(session)
    assert after.startswith(before) and len(after) > len(before)


def test_every_type_is_known_and_classified() -> None:
    assert set(DECISION_TYPES) == {
        "concept_clarified",
        "table_promoted",
        "table_excluded",
        "column_promoted",
        "concept_formula_approved",
        "concept_formula_rejected",
        "question_rewritten",
        "formula_proposed",
        "synthesis_approved",
        "cte_plan_approved",
        "final_sql_approved",
    }
    assert set(MEMORY_MARKER_TYPES) == {
        "memory_promoted",
        "memory_promotion_declined",
        "memory_rejected",
    }
    assert set(CONTROL_TYPES) == {"retraction", "reopen", "rollback"}
    assert set(ENTRY_TYPES) == {
        *DECISION_TYPES,
        *MEMORY_MARKER_TYPES,
        *CONTROL_TYPES,
        "evidence_receipt",
        "sql_run",
        "session_closed",
        "knowledge_gap",
    }


def refused(session: Session, call: Callable[[], object], *needles: str) -> EntryRefused:
    """The append is refused, the message names the session and each needle, nothing written."""
    path = session.ledger.path
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(EntryRefused) as err:
        call()
    text = str(err.value)
    assert session.id in text
    for needle in needles:
        assert needle in text, f"{needle!r} not in {text!r}"
    assert (path.read_bytes() if path.exists() else None) == before
    return err.value


def test_unknown_type_is_refused(session: Session) -> None:
    refused(
        session,
        lambda: decide(session, "clarification", "table_memory"),
        "[type]",
        "unknown entry type 'table_memory'",
        "concept_clarified",
    )


def test_unknown_stage_is_refused(session: Session) -> None:
    refused(
        session, lambda: decide(session, "F4"), "[stage]", "unknown stage 'F4'", "schema_linking"
    )


def test_decision_needs_a_subject(session: Session) -> None:
    refused(session, lambda: decide(session, "clarification", subject="  "), "[subject]")


def test_control_entries_need_a_rationale(session: Session) -> None:
    decide(session, "clarification")
    refused(session, lambda: session.reopen("clarification", rationale=""), "[rationale]")
    refused(session, lambda: session.rollback("clarification", rationale=" "), "[rationale]")
    refused(session, lambda: session.retract(1, rationale=""), "[rationale]")


@pytest.mark.parametrize(
    ("type", "stage"),
    [
        ("question_rewritten", "rewriting"),
        ("formula_proposed", "schema_linking"),
        ("synthesis_approved", "synthesis"),
        ("cte_plan_approved", "cte"),
        ("final_sql_approved", "final_sql"),
    ],
)
def test_stage_outcomes_belong_to_their_stage(session: Session, type: str, stage: str) -> None:
    refused(
        session,
        lambda: session.append("clarification", type, subject="x", detail=FORMULA_DETAIL),
        "[stage]",
        f"a {type} belongs to stage {stage!r}",
    )
    session.append(stage, type, subject="fascia pediatrica", detail=FORMULA_DETAIL)


FORMULA_DETAIL = json.dumps(
    {
        "columns": ["clinical.patient.birth_date", "adt.admission.admission_date"],
        "sql": "CASE WHEN age(a.admission_date, p.birth_date) < interval '18 years' "
        "THEN 'pediatrica' ELSE 'adulta' END",
    }
)


@pytest.mark.parametrize(
    ("detail", "needle"),
    [
        ("CASE WHEN x THEN 1 END", "not a JSON object"),
        (json.dumps({"columns": ["a.b.c"]}), "[detail.sql]"),
        (json.dumps({"sql": "a.x + 1"}), "[detail.columns]"),
        (json.dumps({"columns": [], "sql": "a.x + 1"}), "[detail.columns]"),
        (json.dumps({"columns": ["not a column!"], "sql": "a.x + 1"}), "schema.table.column"),
        (json.dumps({"columns": ["a.b.c"], "sql": "SELECT 1"}), "complete statement"),
        (json.dumps({"columns": ["a.b.c"], "sql": "a.x + 1; DROP TABLE t"}), "[detail.sql]"),
        (json.dumps({"columns": ["a.b.c"], "sql": "pg_sleep(600)"}), "`pg_sleep` is refused"),
        (json.dumps({"columns": ["a.b.c"], "sql": "a.x -- ; DROP TABLE t"}), "comment"),
        (json.dumps({"columns": ["a.b.c"], "sql": "1", "note": "x"}), "unknown field"),
    ],
)
def test_formula_proposal_carries_columns_and_one_expression(
    session: Session, detail: str, needle: str
) -> None:
    refused(
        session,
        lambda: session.append("schema_linking", "formula_proposed", subject="c", detail=detail),
        "formula_proposed",
        needle,
    )


def test_formula_proposal_written_by_hand_badly_is_corruption(session: Session) -> None:
    session.append("schema_linking", "formula_proposed", subject="c", detail=FORMULA_DETAIL)
    line = json.loads(ledger_bytes(session))
    line["detail"] = json.dumps({"columns": ["a.b.c"], "sql": "SELECT 1"})
    session.ledger.path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(LedgerCorrupted, match="line 1"):
        session.entries()


def test_refs_must_name_an_earlier_entry(session: Session) -> None:
    decide(session, "clarification")
    refused(
        session,
        lambda: session.append(
            "clarification", "retraction", subject="seq:7", rationale="r", refs=7
        ),
        "[refs]",
        "no earlier entry has seq 7",
    )


def test_refs_are_required_where_they_carry_the_meaning(session: Session) -> None:
    refused(
        session,
        lambda: session.append("clarification", "retraction", subject="s", rationale="r"),
        "[refs]",
    )
    refused(
        session,
        lambda: session.append("memory_promotion", "memory_promoted", subject="s"),
        "[refs]",
    )


def test_reopen_and_rollback_take_no_refs(session: Session) -> None:
    decide(session, "clarification")
    refused(
        session,
        lambda: session.append("clarification", "reopen", subject="s", rationale="r", refs=1),
        "[refs]",
    )


def test_retraction_of_a_retraction_is_refused(session: Session) -> None:
    decide(session, "clarification")
    session.retract(1, rationale="withdrawn")
    refused(
        session,
        lambda: session.append(
            "clarification", "retraction", subject="seq:2", rationale="undo", refs=2
        ),
        "[refs]",
        "cannot withdraw a retraction",
    )


@pytest.mark.parametrize("control", ["reopen", "rollback"])
def test_control_entries_cannot_be_retracted(session: Session, control: str) -> None:
    entry = session.append("schema_linking", control, subject="schema_linking", rationale="r")
    refused(
        session,
        lambda: session.append(
            "schema_linking", "retraction", subject="x", rationale="r", refs=entry.seq
        ),
        f"cannot withdraw a {control}",
    )


def test_a_decision_is_retracted_at_most_once(session: Session) -> None:
    decide(session, "clarification")
    session.retract(1, rationale="withdrawn")
    refused(session, lambda: session.retract(1, rationale="again"), "already retracted by seq 2")


def test_retraction_is_recorded_in_the_stage_of_what_it_withdraws(session: Session) -> None:
    decide(session, "schema_linking", "table_promoted")
    refused(
        session,
        lambda: session.append("cte", "retraction", subject="seq:1", rationale="r", refs=1),
        "[stage]",
        "schema_linking",
    )
    assert session.retract(1, rationale="ok").stage == "schema_linking"


def test_retract_unknown_seq_is_refused(session: Session) -> None:
    refused(session, lambda: session.retract(3, rationale="r"), "no entry has seq 3")


def test_memory_markers_point_to_a_clarified_concept(session: Session) -> None:
    decide(session, "schema_linking", "table_promoted", subject="fact_cardioversione")
    refused(
        session,
        lambda: session.append(
            "memory_promotion", "memory_promoted", subject="fact_cardioversione", refs=1
        ),
        "[refs]",
        "concept_clarified",
        "table_promoted",
    )


def test_memory_markers_belong_to_their_stage(session: Session) -> None:
    decide(session, "clarification")
    refused(
        session,
        lambda: session.append("final_sql", "memory_promotion_declined", subject="x", refs=1),
        "[stage]",
        "memory_promotion",
    )


def test_promoted_memory_marker_cannot_be_retracted(session: Session) -> None:
    decide(session, "clarification")
    session.append("memory_promotion", "memory_promoted", subject="x", detail="seq:1", refs=1)
    refused(
        session,
        lambda: session.retract(2, rationale="oops"),
        "cannot withdraw a memory_promoted",
        "registry",
    )


def test_evidence_receipt_records_ids_without_text(session: Session) -> None:
    entry = session.record_receipt(
        Receipt(
            stage="schema_linking",
            purpose="schema_linking",
            generation="g-1",
            revision="abc123",
            evidence_ids=("EV-1", "EV-2"),
        )
    )
    assert entry.type == "evidence_receipt"
    assert entry.stage == "schema_linking"
    assert entry.receipt == EvidenceReceipt(
        purpose="schema_linking", generation="g-1", revision="abc123", evidence_ids=("EV-1", "EV-2")
    )
    assert session.entries() == [entry]
    stored = json.loads(ledger_bytes(session))
    assert stored["receipt"] == {
        "purpose": "schema_linking",
        "generation": "g-1",
        "revision": "abc123",
        "evidence_ids": ["EV-1", "EV-2"],
    }


def test_an_empty_result_is_still_a_receipt(session: Session) -> None:
    entry = session.record_receipt(
        Receipt(
            stage="cte", purpose="sql_generation", generation="g", revision="r", evidence_ids=()
        )
    )
    assert entry.receipt is not None and entry.receipt.evidence_ids == ()


def test_receipt_purpose_must_be_the_stage_purpose(session: Session) -> None:
    refused(
        session,
        lambda: session.record_receipt(
            Receipt(stage="cte", purpose="rewriting", generation="g", revision="r", evidence_ids=())
        ),
        "[receipt.purpose]",
        "'rewriting'",
        "sql_generation",
    )


@pytest.mark.parametrize("stage", ["memory", "synthesis", "memory_promotion"])
def test_stages_without_evidence_take_no_receipt(session: Session, stage: str) -> None:
    refused(
        session,
        lambda: session.record_receipt(
            Receipt(stage=stage, purpose="rewriting", generation="g", revision="r", evidence_ids=())
        ),
        "[stage]",
        "never searches Evidence",
    )


def test_receipt_must_name_its_stage(session: Session) -> None:
    refused(
        session,
        lambda: session.record_receipt(
            Receipt(stage=None, purpose="rewriting", generation="g", revision="r", evidence_ids=())
        ),
        "[stage]",
    )


def test_receipt_only_on_receipt_entries(session: Session) -> None:
    receipt = EvidenceReceipt(purpose="disambiguation", generation="g", revision="r")
    refused(
        session,
        lambda: session.append("clarification", "concept_clarified", subject="x", receipt=receipt),
        "[receipt]",
    )
    refused(
        session,
        lambda: session.append("clarification", "evidence_receipt", subject="x"),
        "[receipt]",
    )


def test_evidence_receipts_cannot_be_retracted(session: Session) -> None:
    session.record_receipt(
        Receipt(
            stage="rewriting", purpose="rewriting", generation="g", revision="r", evidence_ids=()
        )
    )
    refused(
        session, lambda: session.retract(1, rationale="r"), "cannot withdraw a evidence_receipt"
    )


# ---------------------------------------------------------------------- reading: corruption


def corrupt(session: Session, lines: list[str]) -> Path:
    path = session.ledger.path
    path.write_text("".join(line + "\n" for line in lines), "utf-8")
    return path


def good_line(seq: int, **over: object) -> str:
    entry: dict[str, object] = {
        "seq": seq,
        "timestamp": "2024-05-01T09:30:00.000000+00:00",
        "stage": "clarification",
        "type": "concept_clarified",
        "subject": "ricovero",
        "detail": "d",
        "rationale": "r",
    }
    entry.update(over)
    return json.dumps({k: v for k, v in entry.items() if v is not None})


def unreadable(session: Session, line: int, *needles: str) -> LedgerCorrupted:
    with pytest.raises(LedgerCorrupted) as err:
        session.entries()
    text = str(err.value)
    for needle in (session.id, str(session.ledger.path), f"line {line}", *needles):
        assert needle in text, f"{needle!r} not in {text!r}"
    return err.value


def test_bad_json_line_names_session_file_and_line(session: Session) -> None:
    corrupt(session, [good_line(1), '{"seq": 2, "timestamp": ', good_line(3)])
    unreadable(session, 2, "not valid JSON")


def test_missing_field_names_the_field(session: Session) -> None:
    corrupt(session, [good_line(1), good_line(2, subject=None)])
    unreadable(session, 2, "[subject]")


def test_unknown_type_in_file_is_corruption(session: Session) -> None:
    corrupt(session, [good_line(1, type="table_memory")])
    unreadable(session, 1, "[type]", "table_memory")


@pytest.mark.parametrize(
    ("numbers", "bad_line"), [([1, 2, 2], 3), ([1, 3], 2), ([2], 1), ([1, 2, 1], 3)]
)
def test_seq_must_run_one_two_three(session: Session, numbers: list[int], bad_line: int) -> None:
    corrupt(session, [good_line(n) for n in numbers])
    unreadable(session, bad_line, "[seq]")


def test_blank_line_is_corruption(session: Session) -> None:
    corrupt(session, [good_line(1), "", good_line(2)])
    unreadable(session, 2, "empty line")


def test_truncated_last_line_is_corruption(session: Session) -> None:
    path = session.ledger.path
    path.write_text(good_line(1) + "\n" + good_line(2)[:20], "utf-8")
    unreadable(session, 2)


def test_last_line_without_line_end_is_corruption(session: Session) -> None:
    # A complete object but no newline: the write was cut short, and the next append would
    # glue itself onto this line.
    session.ledger.path.write_text(good_line(1) + "\n" + good_line(2), "utf-8")
    unreadable(session, 2, "no line end")


def test_naive_timestamp_is_corruption(session: Session) -> None:
    corrupt(session, [good_line(1, timestamp="2024-05-01T09:30:00")])
    unreadable(session, 1, "[timestamp]")


def test_rule_breaking_line_is_corruption(session: Session) -> None:
    corrupt(
        session,
        [
            good_line(1),
            good_line(2, type="retraction", refs=1),
            good_line(3, type="retraction", refs=2),
        ],
    )
    unreadable(session, 3, "cannot withdraw a retraction")


def test_nothing_is_appended_to_a_corrupted_ledger(session: Session) -> None:
    corrupt(session, [good_line(1), "garbage"])
    before = ledger_bytes(session)
    with pytest.raises(LedgerCorrupted, match="line 2"):
        decide(session, "clarification")
    assert ledger_bytes(session) == before


def test_ledger_can_be_used_without_a_store(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "one" / "ledger.jsonl", session_id="s-20240101-000000-000000")
    assert ledger.entries() == []
    entry = ledger.append(
        stage="clarification", type="concept_clarified", subject="x", detail="", rationale=""
    )
    assert entry.seq == 1
    assert ledger.entries() == [entry]


# ---------------------------------------------------------------------- effective view


def test_retracted_decisions_drop_out(session: Session) -> None:
    decide(session, "clarification", subject="a")
    decide(session, "clarification", subject="b")
    session.retract(1, rationale="wrong")
    assert seqs(session.effective()) == [2]
    assert withdrawals(session.entries())[1] == Withdrawal(seq=1, by=3, reason="retracted")


def test_control_entries_and_markers_are_not_decisions(session: Session) -> None:
    decide(session, "clarification")  # 1
    session.record_receipt(
        Receipt(
            stage="clarification",
            purpose="disambiguation",
            generation="g",
            revision="r",
            evidence_ids=(),
        )
    )  # 2
    session.append("memory_promotion", "memory_promotion_declined", subject="x", refs=1)  # 3
    session.rollback("memory_promotion", rationale="r")  # 4: no stage follows F8
    assert seqs(session.effective()) == [1]
    assert seqs(effective_entries(session.entries())) == [1, 2, 3]


def test_rollback_makes_later_stages_stale(session: Session) -> None:
    decide(session, "clarification", subject="c")  # 1
    decide(session, "rewriting", "concept_clarified", subject="r")  # 2
    decide(session, "schema_linking", "table_promoted", subject="t")  # 3
    decide(session, "cte", "concept_formula_approved", subject="f")  # 4
    session.rollback("rewriting", rationale="wrong tables")  # 5
    # The target stage itself and those before it stand; everything after it is stale.
    assert seqs(session.effective()) == [1, 2]
    gone = withdrawals(session.entries())
    assert gone[3] == Withdrawal(seq=3, by=5, reason="rollback")
    assert gone[4] == Withdrawal(seq=4, by=5, reason="rollback")


def test_decisions_after_a_rollback_stand(session: Session) -> None:
    decide(session, "schema_linking", "table_promoted", subject="old")  # 1
    session.rollback("clarification", rationale="redo")  # 2
    decide(session, "schema_linking", "table_promoted", subject="new")  # 3
    assert [e.subject for e in session.effective()] == ["new"]


def test_reopen_makes_the_stage_and_later_ones_stale(session: Session) -> None:
    decide(session, "clarification", subject="c")  # 1
    decide(session, "schema_linking", "table_promoted", subject="t")  # 2
    decide(session, "cte", "concept_formula_approved", subject="f")  # 3
    session.reopen("schema_linking", rationale="missing a table")  # 4
    decide(session, "schema_linking", "table_promoted", subject="t2")  # 5
    assert seqs(session.effective()) == [1, 5]
    assert withdrawals(session.entries())[2] == Withdrawal(seq=2, by=4, reason="reopen")


def test_reopen_twice(session: Session) -> None:
    decide(session, "clarification", subject="first")  # 1
    session.reopen("clarification", rationale="again")  # 2
    decide(session, "clarification", subject="second")  # 3
    session.reopen("clarification", rationale="and again")  # 4
    decide(session, "clarification", subject="third")  # 5
    assert [e.subject for e in session.effective()] == ["third"]
    gone = withdrawals(session.entries())
    assert gone[1].by == 2 and gone[3].by == 4


def test_rollback_to_a_stage_differs_from_reopening_it(session: Session) -> None:
    decide(session, "schema_linking", "table_promoted", subject="kept")  # 1
    session.rollback("schema_linking", rationale="redo what follows")  # 2
    assert seqs(session.effective()) == [1]
    session.reopen("schema_linking", rationale="redo it too")  # 3
    assert seqs(session.effective()) == []


def test_a_later_rollback_reaches_decisions_made_after_an_earlier_one(session: Session) -> None:
    session.rollback("clarification", rationale="first")  # 1
    decide(session, "cte", "concept_formula_approved", subject="f")  # 2
    session.rollback("schema_linking", rationale="second")  # 3
    assert seqs(session.effective()) == []
    assert withdrawals(session.entries())[2].by == 3


def test_a_rollback_never_revives_a_retracted_decision(session: Session) -> None:
    decide(session, "clarification")  # 1
    session.retract(1, rationale="wrong")  # 2
    session.rollback("clarification", rationale="r")  # 3
    assert session.effective() == []
    assert withdrawals(session.entries())[1].reason == "retracted"


def test_effective_view_is_in_seq_order_whatever_the_input_order(session: Session) -> None:
    for subject in "abc":
        decide(session, "clarification", subject=subject)
    assert seqs(effective_decisions(list(reversed(session.entries())))) == [1, 2, 3]


def test_memory_markers_are_kept_apart_from_decisions(session: Session) -> None:
    decide(session, "clarification", subject="ablazione")  # 1
    decide(session, "clarification", subject="ricovero")  # 2
    promoted = session.append(
        "memory_promotion", "memory_promoted", subject="ablazione", detail="seq:1", refs=1
    )  # 3
    declined = session.append(
        "memory_promotion", "memory_promotion_declined", subject="ricovero", detail="seq:2", refs=2
    )  # 4
    legacy = session.append("memory", "memory_rejected", subject="mem-0004")  # 5
    assert session.memory_markers() == [promoted, declined, legacy]
    assert seqs(session.effective()) == [1, 2]


def test_declined_marker_can_be_retracted_so_the_concept_is_proposed_again(
    session: Session,
) -> None:
    decide(session, "clarification")  # 1
    session.append("memory_promotion", "memory_promotion_declined", subject="x", refs=1)  # 2
    session.retract(2, rationale="changed my mind")  # 3
    assert session.memory_markers() == []


def test_reopening_promotion_makes_declines_stale_but_not_promotions(session: Session) -> None:
    decide(session, "clarification", subject="a")  # 1
    decide(session, "clarification", subject="b")  # 2
    session.append("memory_promotion", "memory_promoted", subject="a", refs=1)  # 3
    session.append("memory_promotion", "memory_promotion_declined", subject="b", refs=2)  # 4
    session.reopen("memory_promotion", rationale="review again")  # 5
    # A promotion wrote to the global registry; no reopen or rollback undoes that write.
    assert seqs(memory_markers(session.entries())) == [3]
    assert 3 not in withdrawals(session.entries())
    assert withdrawals(session.entries())[4].reason == "reopen"


def test_rollback_keeps_promotion_markers_even_when_the_concept_goes_stale(
    session: Session,
) -> None:
    decide(session, "memory", subject="from mem-0001")  # 1
    session.append("memory_promotion", "memory_promoted", subject="x", refs=1)  # 2
    session.rollback("clarification", rationale="start over")  # 3
    assert session.effective() == []
    assert seqs(session.memory_markers()) == [2]


# ---------------------------------------------------------------------- concurrency


def start_together(procs: list[subprocess.Popen[bytes]], go: Path, names: tuple[str, ...]) -> None:
    """Wait until every child has imported and opened its store, then release them at once."""
    deadline = time.monotonic() + 60
    while not all(Path(f"{go}.{n}").exists() for n in names):
        for proc in procs:
            if proc.poll() is not None:
                raise AssertionError(f"worker exited early with {proc.returncode}")
        if time.monotonic() > deadline:
            raise AssertionError("workers did not get ready within 60 s")
        time.sleep(0.01)
    go.touch()


_APPENDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from thoth.session import SessionStore

    sessions_dir, session_id, name, go = sys.argv[1:5]
    session = SessionStore(Path(sessions_dir)).open(session_id)
    Path(go + "." + name).touch()
    while not Path(go).exists():
        time.sleep(0.001)
    for i in range(50):
        session.append(
            "clarification", "concept_clarified", subject=f"{name}-{i}", detail="d", rationale="r"
        )
    """
)


def test_two_processes_appending_never_duplicate_or_lose_a_seq(
    store: SessionStore, session: Session, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _APPENDER, str(store.sessions_dir), session.id, name, str(go)]
        )
        for name in ("a", "b")
    ]
    start_together(procs, go, ("a", "b"))
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    entries = session.entries()
    assert seqs(entries) == list(range(1, 101))
    subjects = [e.subject for e in entries]
    assert sorted(subjects) == sorted([f"{n}-{i}" for n in "ab" for i in range(50)])
    # Each process's own appends keep their order.
    for name in "ab":
        mine = [s for s in subjects if s.startswith(f"{name}-")]
        assert mine == [f"{name}-{i}" for i in range(50)]


def test_a_cut_or_misnumbered_proposals_line_is_reported_not_dropped(session: Session) -> None:
    """proposals.jsonl is the same append-only log as the ledger: damage is named, never
    skipped, and nothing is written on top of it."""
    book = ProposalBook(session)
    draft = ProposalDraft("clarification", "concept_clarified", "ricovero", "d", "r", "call_1")
    book.add([draft], model="openai:m", receipt_seq=None)
    intact = book.path.read_bytes()
    book.path.write_bytes(intact + b'{"kind": "review", "no": 1')
    for call in (book.views, lambda: book.reject(1)):
        with pytest.raises(ProposalsCorrupted) as err:
            call()
        assert "line 2" in str(err.value) and "no line end" in err.value.problems[0].message
    book.path.write_bytes(intact + intact.replace(b'"no":1', b'"no":3'))
    with pytest.raises(ProposalsCorrupted, match="line 2") as err:
        book.views()
    assert "proposal 3 where 2 was due" in err.value.problems[0].message
