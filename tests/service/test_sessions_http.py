"""Question→SQL sessions over HTTP (thoth.service.sessions): a real `tht serve`, real ledgers on
disk, httpx as the callers. What the CLI prints for a verb is what the route returns; every
bad request is refused with its code and leaves the ledger as it was; two writers at once
lose nothing and apply nothing twice."""

from __future__ import annotations

import json
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.service.conftest import THT, Server
from thoth.runtime import sessions_dir
from thoth.session import SessionStore, effective_decisions
from thoth.workspace import Workspace

PROBLEM = "application/problem+json"
ANALYST = "analyst"  # public + internal: holds the Evidence labels


def ledger_lines(root: Path, session_id: str) -> bytes:
    path = sessions_dir(Workspace.open(root)) / session_id / "ledger.jsonl"
    return path.read_bytes() if path.exists() else b""


def new_session(server: Server, question: str = "Quanti ricoveri nel 2023?") -> str:
    response = server.post("/v1/sessions", {"question": question}, caller=ANALYST)
    assert response.status_code == 201, response.text
    return str(response.json()["session"])


def show(server: Server, session_id: str, caller: str = ANALYST) -> dict[str, Any]:
    response = server.get(f"/v1/sessions/{session_id}", caller=caller)
    assert response.status_code == 200, response.text
    return dict(response.json())


def decide(
    server: Server, session_id: str, base: int, subject: str, **fields: Any
) -> httpx.Response:
    body = {
        "base": base,
        "stage": "clarification",
        "type": "concept_clarified",
        "subject": subject,
        "detail": "almeno un pernottamento",
        "rationale": "evidence:ricovero",
        **fields,
    }
    return server.post(f"/v1/sessions/{session_id}/decisions", body, caller=ANALYST)


def tht_json(root: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [*THT, *args, "--json", "-w", str(root)], capture_output=True, text=True, check=False
    )
    return dict(json.loads(done.stdout))


def test_a_session_s_life_returns_what_the_cli_prints(server: Server) -> None:
    session_id = new_session(server)
    listed = server.get("/v1/sessions", caller=ANALYST).json()
    assert session_id in [s["id"] for s in listed["sessions"]]
    assert show(server, session_id)["position"] == 0

    made = decide(server, session_id, 0, "ricovero")
    assert made.status_code == 200, made.text
    entry = made.json()
    assert entry["ok"] is True and entry["session"] == session_id
    assert entry["entry"]["seq"] == 1 and entry["entry"]["type"] == "concept_clarified"

    retracted = server.post(
        f"/v1/sessions/{session_id}/retract",
        {"base": 1, "seq": 1, "rationale": "not what was asked"},
        caller=ANALYST,
    )
    assert retracted.status_code == 200, retracted.text
    assert retracted.json()["entry"]["type"] == "retraction"
    reopened = server.post(
        f"/v1/sessions/{session_id}/reopen",
        {"base": 2, "stage": "clarification", "rationale": "redo"},
        caller=ANALYST,
    )
    assert reopened.status_code == 200 and reopened.json()["entry"]["seq"] == 3
    rolled = server.post(
        f"/v1/sessions/{session_id}/rollback",
        {"base": 3, "stage": "clarification", "rationale": "back"},
        caller=ANALYST,
    )
    assert rolled.status_code == 200 and rolled.json()["entry"]["type"] == "rollback"

    # show is `tht session show --json` (the CLI's local user reads the same session)
    over_http = show(server, session_id)
    printed = tht_json(server.root, "session", "show", session_id)
    assert over_http == printed
    assert over_http["position"] == 4 and over_http["withdrawn"][0]["reason"] == "retracted"

    summary = server.get(f"/v1/sessions/{session_id}/summary", caller=ANALYST)
    assert summary.status_code == 200 and summary.headers["content-type"].startswith(
        "text/markdown"
    )
    assert (
        summary.text
        == subprocess.run(
            [*THT, "memory", "summary", "--session", session_id, "-w", str(server.root)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )


def test_a_stale_base_is_a_conflict_with_the_position_and_writes_nothing(server: Server) -> None:
    session_id = new_session(server)
    assert decide(server, session_id, 0, "ricovero").status_code == 200
    before = ledger_lines(server.root, session_id)
    stale = decide(server, session_id, 0, "degenza")
    assert stale.status_code == 409, stale.text
    assert stale.headers["content-type"] == PROBLEM
    assert stale.json()["code"] == "ledger_conflict" and stale.json()["position"] == 1
    ahead = decide(server, session_id, 5, "degenza")
    assert ahead.status_code == 409 and ahead.json()["position"] == 1
    assert ledger_lines(server.root, session_id) == before


def test_a_retried_request_with_the_same_key_returns_the_first_result(server: Server) -> None:
    session_id = new_session(server)
    body = {
        "base": 0,
        "stage": "clarification",
        "type": "concept_clarified",
        "subject": "ricovero",
        "detail": "d",
        "rationale": "r",
    }
    path = f"/v1/sessions/{session_id}/decisions"
    headers = {**server.headers(ANALYST), "Idempotency-Key": "k-1"}
    first = httpx.post(f"{server.url}{path}", json=body, headers=headers, timeout=30)
    again = httpx.post(f"{server.url}{path}", json=body, headers=headers, timeout=30)
    assert first.status_code == again.status_code == 200, again.text
    assert first.json() == again.json()
    assert show(server, session_id)["position"] == 1
    before = ledger_lines(server.root, session_id)
    other = httpx.post(
        f"{server.url}{path}", json={**body, "subject": "degenza"}, headers=headers, timeout=30
    )
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    assert ledger_lines(server.root, session_id) == before


def test_bad_input_is_refused_with_its_code_and_the_ledger_unchanged(server: Server) -> None:
    session_id = new_session(server)
    assert decide(server, session_id, 0, "ricovero").status_code == 200
    before = ledger_lines(server.root, session_id)
    path = f"/v1/sessions/{session_id}"

    def refused(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
        assert response.status_code == status, response.text
        assert response.headers["content-type"] == PROBLEM
        body = dict(response.json())
        assert body["code"] == code, body
        assert ledger_lines(server.root, session_id) == before
        return body

    # an unknown stage: named in the problem
    body = refused(decide(server, session_id, 1, "x", stage="F1"), 422, "bad_request")
    [problem] = body["problems"]
    assert problem["field"] == "stage" and "unknown stage" in problem["message"]
    consult = server.post(f"{path}/consult", {"base": 1, "stage": "nowhere"}, caller=ANALYST)
    refused(consult, 422, "bad_request")
    # a stage the session has not reached: schema linking needs a standing rewrite
    not_reached = decide(
        server, session_id, 1, "adt.admission", stage="schema_linking", type="table_promoted"
    )
    refused(not_reached, 409, "stage_not_reached")
    # a type its stage does not take
    refused(
        decide(server, session_id, 1, "x", type="final_sql_approved"), 422, "decision_not_allowed"
    )
    # a stale ledger position
    refused(decide(server, session_id, 0, "degenza"), 409, "ledger_conflict")
    # a memory id of another workspace: never among this session's proposals
    chosen = server.post(
        f"{path}/memories", {"base": 1, "memory_ids": ["mem-0001"]}, caller=ANALYST
    )
    refused(chosen, 422, "memory_not_proposed")
    # a checklist item never proposed (seq 99 does not exist; nothing else is a candidate)
    items = {"base": 1, "items": [{"seq": 99, "action": "promote"}]}
    refused(server.post(f"{path}/checklist", items, caller=ANALYST), 422,
            "checklist_item_not_proposed")  # fmt: skip
    # another caller's session id (night holds the Evidence label too)
    refused(server.get(path, caller="night"), 404, "session_not_found")
    refused(decide_as(server, "night", session_id), 404, "session_not_found")
    assert session_id not in [
        s["id"] for s in server.get("/v1/sessions", "night").json()["sessions"]
    ]
    # labels above the caller's ceiling
    run = server.post(f"{path}/sql/run", {"base": 1, "labels": ["confidential"]}, caller=ANALYST)
    refused(run, 403, "label_above_ceiling")
    # a caller without the Evidence labels sees no session at all
    refused(server.get(path, caller="portal"), 403, "label_above_ceiling")
    # a body that is not UTF-8 JSON
    raw = json.dumps({"base": 1, "stage": "clarification", "type": "concept_clarified",
                      "subject": "x"}).encode("utf-16")  # fmt: skip
    response = httpx.post(
        f"{server.url}{path}/decisions",
        content=raw,
        headers={**server.headers(ANALYST), "Content-Type": "application/json"},
        timeout=30,
    )
    refused(response, 400, "body_not_utf8")
    # an unknown session id
    refused(server.get("/v1/sessions/s-20990101-000000-abcdef", ANALYST), 404, "session_not_found")


def decide_as(server: Server, caller: str, session_id: str) -> httpx.Response:
    body = {"base": 1, "stage": "clarification", "type": "concept_clarified", "subject": "x"}
    return server.post(f"/v1/sessions/{session_id}/decisions", body, caller=caller)


def test_the_f8_checklist_promotes_in_one_request_and_closes_the_session(server: Server) -> None:
    session_id = new_session(server, "Quanti accessi in PS?")
    assert decide(server, session_id, 0, "accesso in PS").status_code == 200
    assert decide(server, session_id, 1, "codice bianco", detail="non urgente").status_code == 200
    listed = server.get(f"/v1/sessions/{session_id}/checklist", caller=ANALYST).json()
    assert [c["seq"] for c in listed["candidates"]] == [1, 2]
    assert [c["preselected"] for c in listed["candidates"]] == ["promote", "promote"]
    items = [{"seq": 1, "action": "promote"}, {"seq": 2, "action": "decline"}]
    done = server.post(
        f"/v1/sessions/{session_id}/checklist", {"base": 2, "items": items}, caller=ANALYST
    )
    assert done.status_code == 200, done.text
    result = done.json()
    assert [s["seq"] for s in result["saved"]] == [1] and result["saved"][0]["created"]
    assert [d["seq"] for d in result["declined"]] == [2]
    assert result["closed"] is True and result["remaining"] == 0
    position = result["position"]
    before = ledger_lines(server.root, session_id)
    closed = decide(server, session_id, position, "altro")
    assert closed.status_code == 409 and closed.json()["code"] == "session_closed"
    assert ledger_lines(server.root, session_id) == before
    # reopening a stage opens it again
    reopened = server.post(
        f"/v1/sessions/{session_id}/reopen",
        {"base": position, "stage": "clarification", "rationale": "one more"},
        caller=ANALYST,
    )
    assert reopened.status_code == 200, reopened.text
    assert decide(server, session_id, position + 1, "altro").status_code == 200


def test_four_clients_fifty_decisions_each_lose_nothing_and_apply_nothing_twice(
    server: Server,
) -> None:
    session_id = new_session(server, "Concorrenza")
    clients, each = 4, 50
    refusals: list[tuple[int, str]] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client(number: int) -> None:
        with httpx.Client(base_url=server.url, headers=server.headers(ANALYST), timeout=60) as c:
            base = 0
            for i in range(each):
                subject = f"c{number}-d{i}"
                while True:
                    body = {
                        "base": base,
                        "stage": "clarification",
                        "type": "concept_clarified",
                        "subject": subject,
                    }
                    # A refused attempt changed nothing: the next one is a new request.
                    key = {"Idempotency-Key": f"{subject}-{uuid.uuid4().hex}"}
                    path = f"/v1/sessions/{session_id}/decisions"
                    response = c.post(path, json=body, headers=key)
                    if response.status_code == 200:
                        # the client's retry of a request whose answer it lost
                        retried = c.post(path, json=body, headers=key)
                        if retried.json() != response.json():
                            with lock:
                                errors.append(f"retry of {subject}: {retried.text}")
                        base = response.json()["entry"]["seq"]
                        break
                    code = response.json().get("code")
                    with lock:
                        refusals.append((response.status_code, code))
                    if response.status_code == 409 and code == "ledger_conflict":
                        base = response.json()["position"]
                        continue
                    with lock:
                        errors.append(response.text)
                    return

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert refusals, "four clients at once must have met conflicts"
    # four sequential clients stay within max_concurrent: every refusal is a conflict
    assert {(status, code) for status, code in refusals} == {(409, "ledger_conflict")}
    ws = Workspace.open(server.root)
    entries = SessionStore(sessions_dir(ws)).open(session_id).entries()
    subjects = [e.subject for e in entries]
    expected = {f"c{n}-d{i}" for n in range(clients) for i in range(each)}
    assert len(subjects) == clients * each, "lost or duplicated"
    assert set(subjects) == expected
    # the effective view served is a sequential replay of the ledger
    replayed = [e.model_dump(mode="json", exclude_none=True) for e in effective_decisions(entries)]
    assert show(server, session_id)["effective"] == replayed


def test_the_f8_checklist_promotes_an_edited_wording_in_the_same_request(server: Server) -> None:
    """Issue 47: the checklist is confirmed *or edited* in one request. The edit is a new
    clarification (the original retracted, nothing rewritten), and that is what is promoted."""
    session_id = new_session(server, "Quante dimissioni protette?")
    assert decide(server, session_id, 0, "dimissione protetta", detail="vecchia").status_code == 200
    before = ledger_lines(server.root, session_id)
    bad = [{"seq": 1, "action": "decline", "wording": "nuova"}]
    refused = server.post(
        f"/v1/sessions/{session_id}/checklist", {"base": 1, "items": bad}, caller=ANALYST
    )
    assert refused.status_code == 422, refused.text
    assert ledger_lines(server.root, session_id) == before
    wording = "dimissione con attivazione dei servizi territoriali"
    items = [{"seq": 1, "action": "promote", "wording": wording}]
    done = server.post(
        f"/v1/sessions/{session_id}/checklist", {"base": 1, "items": items}, caller=ANALYST
    )
    assert done.status_code == 200, done.text
    [saved] = done.json()["saved"]
    assert saved["seq"] != 1 and saved["created"]
    shown = show(server, session_id)
    standing = {d["seq"]: d for d in shown["effective"]}
    assert standing[saved["seq"]]["detail"] == wording and 1 not in standing
    assert done.json()["closed"] is True
