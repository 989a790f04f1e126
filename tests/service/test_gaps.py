"""Issue 47, point 5: a session says what it was missing. A knowledge gap is recorded as a
ledger entry through the same door over HTTP, MCP and the CLI; the curators see the open ones
(`tht evidence gaps`, GET /v1/gaps, /metrics) and turn one into a source note that `tht
evidence prepare` reads, which takes it off the queue."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fake_embeddings import FakeEmbeddingServer
from tests.service.conftest import THT, Server, prepare_workspace
from tests.service.test_mcp import structured, text_of
from tests.service.test_mcp_http import call
from tests.service.test_sessions_http import ANALYST, ledger_lines, new_session
from thoth.evidence.sources import discover
from thoth.service.registry import add_caller
from thoth.session import SessionStore
from thoth.session.gaps import GapNotFound, GapQueue
from thoth.session.ledger import EntryRefused, EvidenceReceipt
from thoth.workspace import Workspace

CURATOR = "curator"


@pytest.fixture(scope="module")
def workspace(
    tmp_path_factory: pytest.TempPathFactory, embeddings: FakeEmbeddingServer
) -> tuple[Any, dict[str, str]]:
    """The service tests' workspace with one more caller, declared `curator = true`."""
    corpus, keys = prepare_workspace(tmp_path_factory.mktemp("gaps"), embeddings)
    _, keys[CURATOR] = add_caller(corpus.root, CURATOR, ["public", "internal"], curator=True)
    return corpus, keys


def tht(root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [*THT, *args, "--json", "-w", str(root)], capture_output=True, text=True, check=False
    )
    return done.returncode, dict(json.loads(done.stdout))


def open_gaps(server: Server, caller: str = ANALYST) -> list[dict[str, Any]]:
    response = server.get("/v1/gaps", caller=caller)
    assert response.status_code == 200, response.text
    return list(response.json()["gaps"])


def gauge(server: Server, stage: str) -> float:
    page = server.get("/metrics", caller=ANALYST).text
    line = f'thoth_knowledge_gaps_open{{stage="{stage}"}} '
    found = [ln for ln in page.splitlines() if ln.startswith(line)]
    return float(found[0].split()[-1]) if found else 0.0


def test_a_gap_recorded_over_http_and_mcp_reaches_the_curators_queue(server: Server) -> None:
    sid = new_session(server, "Quanti ricoveri in regime di osservazione breve?")
    before = gauge(server, "clarification")
    made = server.post(
        f"/v1/sessions/{sid}/gaps",
        {"base": 0, "stage": "clarification", "subject": "osservazione breve",
         "detail": "nessuna Evidence definisce l'osservazione breve"},
        caller=ANALYST,
    )  # fmt: skip
    assert made.status_code == 200, made.text
    entry = made.json()["entry"]
    assert entry["type"] == "knowledge_gap" and entry["seq"] == 1
    over_mcp = call(server, ANALYST, "session_gap",
                    {"session_id": sid, "base": entry["seq"], "stage": "schema_linking",
                     "subject": "adt.short_stay"})  # fmt: skip
    assert not over_mcp.is_error, text_of(over_mcp)
    second = structured(over_mcp)["entry"]
    assert second["seq"] == entry["seq"] + 1 and second["type"] == "knowledge_gap"

    mine = {g["id"]: g for g in open_gaps(server)}
    first_id = f"{sid}:{entry['seq']}"
    assert {first_id, f"{sid}:{second['seq']}"} <= set(mine)
    assert mine[first_id]["stage"] == "clarification" and mine[first_id]["receipt_seq"] is None
    assert all(g["caller"] == ANALYST for g in mine.values())
    assert gauge(server, "clarification") == before + 1
    # the CLI's queue (every session's) holds them too
    code, listed = tht(server.root, "evidence", "gaps")
    assert code == 0 and first_id in [g["id"] for g in listed["gaps"]]

    # turned into a source note: prepare reads it, the queue and the gauge drop it
    code, taken = tht(server.root, "evidence", "gaps", "--to-source", first_id)
    assert code == 0, taken
    note = server.root / taken["note"]
    assert taken["note"].startswith("evidence/source/gaps/") and note.is_file()
    text = note.read_text("utf-8")
    assert "osservazione breve" in text and sid in text and "nessuna Evidence" in text
    ws = Workspace.open(server.root)
    sources, _ = discover(ws.evidence, 1_000_000)
    assert taken["note"].removeprefix("evidence/") in [s.rel for s in sources]
    assert first_id not in [g["id"] for g in open_gaps(server)]
    assert gauge(server, "clarification") == before
    code, again = tht(server.root, "evidence", "gaps", "--to-source", first_id)
    assert code == 1 and again["code"] == "gap_not_found"


def test_bad_gaps_are_refused_with_their_codes_and_the_ledger_unchanged(server: Server) -> None:
    sid = new_session(server)
    made = server.post(f"/v1/sessions/{sid}/decisions", {"base": 0, "stage": "clarification",
                       "type": "concept_clarified", "subject": "ricovero", "detail": "d"},
                       caller=ANALYST)  # fmt: skip
    assert made.status_code == 200, made.text
    before = ledger_lines(server.root, sid)
    path = f"/v1/sessions/{sid}/gaps"
    cases: list[tuple[dict[str, Any], str | None, str]] = [
        ({"base": 1, "stage": "F9", "subject": "x"}, ANALYST, "bad_request"),
        ({"base": 0, "stage": "clarification", "subject": "x"}, ANALYST, "ledger_conflict"),
        ({"base": 1, "stage": "clarification", "subject": "x", "receipt_seq": 1}, ANALYST,
         "entry_refused"),  # seq 1 is a decision, not a receipt
        ({"base": 1, "stage": "clarification", "subject": "x"}, "portal", "label_above_ceiling"),
    ]  # fmt: skip
    for body, caller, code in cases:
        refused = server.post(path, body, caller=caller)
        assert refused.json()["code"] == code, (body, refused.text)
        assert ledger_lines(server.root, sid) == before
    recorded = server.post(path, {"base": 1, "stage": "clarification", "subject": "y"}, ANALYST)
    assert recorded.status_code == 200, recorded.text
    # another caller's session: its gaps are not listed to this one, nor written by it
    assert sid in {g["session"] for g in open_gaps(server)}
    assert sid not in {g["session"] for g in open_gaps(server, "night")}
    after = ledger_lines(server.root, sid)
    other = server.post(path, {"base": 2, "stage": "clarification", "subject": "z"}, "night")
    assert other.json()["code"] == "session_not_found" and ledger_lines(server.root, sid) == after


def test_a_curator_sees_every_sessions_gaps_and_other_callers_only_their_own(
    server: Server,
) -> None:
    sid = new_session(server, "Quanti accessi in pronto soccorso?")  # the analyst's session
    made = server.post(
        f"/v1/sessions/{sid}/gaps",
        {"base": 0, "stage": "clarification", "subject": "accesso",
         "detail": "nessuna Evidence definisce l'accesso"},
        caller=ANALYST,
    )  # fmt: skip
    assert made.status_code == 200, made.text
    gap_id = f"{sid}:{made.json()['entry']['seq']}"
    queue = {g["id"]: g for g in open_gaps(server, CURATOR)}
    assert gap_id in queue and queue[gap_id]["caller"] == ANALYST
    assert queue[gap_id]["subject"] == "accesso" and queue[gap_id]["session"] == sid
    assert gap_id in {g["id"] for g in open_gaps(server, ANALYST)}
    assert gap_id not in {g["id"] for g in open_gaps(server, "night")}  # not a curator
    # the same queue over MCP (gap_list), the door GET /v1/gaps reads
    for caller in (CURATOR, ANALYST, "night"):
        listed = call(server, caller, "gap_list", {})
        assert not listed.is_error, text_of(listed)
        assert structured(listed)["gaps"] == open_gaps(server, caller), caller
    # the curator reads the queue; another caller's session stays closed to it for writing
    other = server.post(
        f"/v1/sessions/{sid}/gaps", {"base": 1, "stage": "clarification", "subject": "z"}, CURATOR
    )
    assert other.json()["code"] == "session_not_found"


def test_a_withdrawn_gap_leaves_the_queue_and_a_gap_is_taken_once(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    session = store.create("Quanti ricoveri?")
    decided = session.append("clarification", "concept_clarified", subject="ricovero")
    with pytest.raises(EntryRefused):
        session.append("clarification", "knowledge_gap", subject="x", refs=decided.seq)
    receipt = session.append(
        "clarification",
        "evidence_receipt",
        subject="disambiguation search",
        receipt=EvidenceReceipt(
            purpose="disambiguation", generation="g1", revision="r1", evidence_ids=()
        ),
    )
    kept = session.append(
        "clarification", "knowledge_gap", subject="degenza breve", refs=receipt.seq
    )
    gone = session.append("rewriting", "knowledge_gap", subject="riscritta")
    session.retract(gone.seq, rationale="trovata")
    queue = GapQueue(tmp_path / "sessions", tmp_path / "evidence")
    assert [g.id for g in queue.open_gaps()] == [f"{session.id}:{kept.seq}"]
    gap, note = queue.take(f"{session.id}:{kept.seq}")
    assert gap.receipt_seq == receipt.seq and note.parent == tmp_path / "evidence/source/gaps"
    text = note.read_text("utf-8")
    assert "degenza breve" in text and f"receipt seq {receipt.seq} found nothing" in text
    assert queue.open_gaps() == []
    for bad in (gap.id, f"{session.id}:{gone.seq}", "nonsense"):
        with pytest.raises(GapNotFound):
            queue.take(bad)


def test_an_mcp_write_retried_with_its_idempotency_key_is_written_once(server: Server) -> None:
    sid = new_session(server)
    arguments = {"session_id": sid, "base": 0, "stage": "memory", "subject": "ricovero",
                 "idempotency_key": "gap-once-1"}  # fmt: skip
    first = call(server, ANALYST, "session_gap", arguments)
    assert not first.is_error, text_of(first)
    before = ledger_lines(server.root, sid)
    again = call(server, ANALYST, "session_gap", arguments)  # base 0 is stale by now
    assert not again.is_error and structured(again) == structured(first)
    assert ledger_lines(server.root, sid) == before and before.count(b"\n") == 1
    reused = call(server, ANALYST, "session_gap", {**arguments, "subject": "altro"})
    assert reused.is_error and structured(reused)["code"] == "idempotency_key_reused"
