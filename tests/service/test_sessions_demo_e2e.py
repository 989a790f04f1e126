"""A whole question→SQL session F1–F8 over plain HTTP on the demo workspace, no model
involved: consult each Evidence stage, decide, check and run the SQL, confirm the F8
checklist; the next session is offered the promoted memory at F2 and chooses it. Also the
SQL a session refuses, each with its code and the ledger unchanged."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any
from unittest import mock

import httpx
import pytest
from rich.console import Console

from tests.service.conftest import Server
from thoth.cli.demo import DEMO_FINAL_SQL, DEMO_REWRITTEN, DEMO_SQL_QUESTION, run_demo
from thoth.runtime import sessions_dir
from thoth.service.registry import add_caller
from thoth.workspace import Workspace

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

AGENT = "agent"
OUTSIDER = "outsider"  # public only: the demo's Evidence labels are above its ceiling


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    out = io.StringIO()
    # The demo's last step (an MCP stdio client) spawns `tht` with the SDK's clean environment,
    # which runs the installed package rather than the code under test: not what is tested here.
    with mock.patch("thoth.cli.demo.demo_mcp", lambda *_: "found"):
        root = run_demo(Console(file=out, width=120), tmp_path_factory.mktemp("demo") / "demo")
    _, key = add_caller(root, AGENT, ["public", "internal"])
    _, outsider = add_caller(root, OUTSIDER, ["public"])
    keys = {AGENT: key, OUTSIDER: outsider}
    server = Server(root, keys, tmp_path_factory.mktemp("log") / "serve.log")
    try:
        yield server
    finally:
        server.stop()


class Client:
    """One calling system driving one session, keeping the ledger position it saw."""

    def __init__(self, server: Server, question: str) -> None:
        self.server = server
        made = server.post("/v1/sessions", {"question": question}, caller=AGENT)
        assert made.status_code == 201, made.text
        self.id = made.json()["session"]
        self.path = f"/v1/sessions/{self.id}"
        self.base = 0

    def post(self, verb: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
        based = body if verb == "sql/check" else {"base": self.base, **body}  # check writes nothing
        response = self.server.post(f"{self.path}/{verb}", based, AGENT)
        assert response.status_code == status, response.text
        return dict(response.json())

    def get(self, verb: str = "") -> httpx.Response:
        response = self.server.get(f"{self.path}/{verb}".rstrip("/"), caller=AGENT)
        assert response.status_code == 200, response.text
        return response

    def consult(self, stage: str) -> dict[str, Any]:
        found = self.post("consult", {"stage": stage})
        assert found["status"] == "available" and found["stage"] == stage
        self.base = found["receipt_seq"]
        return found

    def decide(self, stage: str, type: str, subject: str, detail: str = "") -> dict[str, Any]:
        made = self.post(
            "decisions",
            {"stage": stage, "type": type, "subject": subject, "detail": detail,
             "rationale": "reviewer over HTTP"},
        )  # fmt: skip
        self.base = made["entry"]["seq"]
        return made

    def ledger(self) -> bytes:
        path = sessions_dir(Workspace.open(self.server.root)) / self.id / "ledger.jsonl"
        return bytes(path.read_bytes())


def test_a_whole_session_over_http_then_the_next_one_chooses_its_memory(served: Server) -> None:
    s = Client(served, DEMO_SQL_QUESTION)
    s.consult("clarification")
    s.decide("clarification", "concept_clarified", "ricovero ordinario",
             "regime di ricovero 1 (non day hospital)")  # fmt: skip
    s.consult("rewriting")
    s.decide("rewriting", "question_rewritten", DEMO_REWRITTEN)
    linking = s.consult("schema_linking")
    proposed = {t["qualified"] for t in linking["schema"]["tables"]}
    assert "adt.admission" in proposed
    for type, subject in (
        ("table_promoted", "adt.admission"),
        ("table_promoted", "adt.ward"),
        ("column_promoted", "adt.admission.care_regime"),
        ("column_promoted", "adt.admission.discharge_date"),
        ("column_promoted", "adt.admission.discharging_ward_id"),
        ("column_promoted", "adt.ward.ward_name"),
    ):
        s.decide("schema_linking", type, subject)
    s.decide("synthesis", "synthesis_approved", "ricoveri ordinari per reparto di dimissione")
    s.consult("cte")
    s.decide("cte", "cte_plan_approved", "una sola query: ricoveri ordinari 2024 per reparto")
    s.consult("final_sql")

    checked = s.post("sql/check", {"sql": DEMO_FINAL_SQL})
    assert checked["ok"] is True and checked["dialect"] == "sqlite"
    s.decide("final_sql", "final_sql_approved", "ricoveri ordinari dimessi nel 2024 per reparto",
             DEMO_FINAL_SQL)  # fmt: skip

    # rows only under labels holding [database].labels (internal): nothing runs otherwise
    before = s.ledger()
    public = s.post("sql/run", {"labels": ["public"]}, status=403)
    assert public["code"] == "rows_not_allowed" and s.ledger() == before
    ran = s.post("sql/run", {"labels": ["internal"]})
    assert ran["ok"] is True and ran["receipt"]["status"] == "succeeded"
    assert ran["columns"] == ["reparto", "ricoveri"] and ran["rows"]
    assert "Medicina generale" in {row[0] for row in ran["rows"]}
    s.base = ran["seq"]
    shown = s.get().json()
    assert [r["run"]["status"] for r in shown["runs"]] == ["succeeded"]
    assert "rows" not in str(shown["runs"]) and shown["position"] == s.base

    # F8: the clarified concept preselected, confirmed in one request; the session closes
    listed = s.get("checklist").json()
    [candidate] = listed["candidates"]
    assert candidate["subject"] == "ricovero ordinario" and candidate["preselected"] == "promote"
    done = s.post("checklist", {"items": [{"seq": candidate["seq"], "action": "promote"}]})
    assert done["closed"] is True and done["remaining"] == 0
    [saved] = done["saved"]
    memory = saved["memory_id"]
    summary = s.get("summary").text
    assert memory in summary and "ricovero ordinario" in summary

    # the next session is offered that memory at F2 and chooses it
    t = Client(served, "Quanti ricoveri ordinari per reparto nel 2023?")
    offered = [p["memory_id"] for p in t.get("proposals").json()["results"]]
    assert memory in offered
    chosen = t.post("memories", {"memory_ids": [memory]})
    [applied] = chosen["chosen"]
    assert applied["memory_id"] == memory and applied["created"] is True
    effective = t.get().json()["effective"]
    assert [(e["stage"], e["subject"]) for e in effective] == [("memory", "ricovero ordinario")]
    assert memory in effective[0]["rationale"]


def test_sql_a_session_refuses_is_refused_with_its_code(served: Server) -> None:
    s = Client(served, "Quanti pazienti?")
    before = s.ledger() if (sessions_dir(Workspace.open(served.root)) / s.id /
                            "ledger.jsonl").exists() else b""  # fmt: skip

    def refused(sql: str) -> str:
        body = s.post("sql/check", {"sql": sql}, status=422)
        ledger = sessions_dir(Workspace.open(served.root)) / s.id / "ledger.jsonl"
        assert (ledger.read_bytes() if ledger.exists() else b"") == before
        return str(body["code"])

    assert refused("DELETE FROM adt.admission") == "not_select"
    assert refused("SELECT load_extension('/tmp/x')") == "function_refused"
    assert refused("SELECT no_such_column FROM adt.admission") == "statement_invalid"
    assert refused("SELECT 1; SELECT 2") == "statements"


def test_a_unit_a_receipt_cites_is_served_by_its_id(served: Server) -> None:
    """GET /v1/evidence/units/{id}: the unit a receipt names, from the active generation, under
    the Evidence labels rule; an id the generation does not publish is unit_not_found."""
    client = Client(served, DEMO_SQL_QUESTION)
    found = client.consult("clarification")
    first = found["results"][0]
    receipt = client.get().json()["receipts"][0]["receipt"]
    assert first["evidence_id"] in receipt["evidence_ids"]
    response = served.get(f"/v1/evidence/units/{first['evidence_id']}", caller=AGENT)
    assert response.status_code == 200, response.text
    unit = response.json()
    assert unit["evidence_id"] == first["evidence_id"] and unit["title"] == first["title"]
    assert unit["kind"] == first["kind"] and unit["caveats"] == first["caveats"]
    assert unit["provenance"] == first["provenance"] and unit["document"] == first["document"]
    assert unit["generation"] == receipt["generation"] and unit["revision"] == receipt["revision"]
    assert unit["body"].strip() and set(first["excerpts"]) <= set(unit["excerpts"])

    unknown = served.get("/v1/evidence/units/evidence:no-such-unit", caller=AGENT)
    assert unknown.status_code == 404, unknown.text
    assert unknown.json()["code"] == "unit_not_found"
    labels = Workspace.open(served.root).settings.answers.evidence_labels
    assert set(labels) - {"public"}  # the outsider's ceiling lacks one of them
    refused = served.get(f"/v1/evidence/units/{first['evidence_id']}", caller=OUTSIDER)
    assert refused.status_code == 403, refused.text
    assert refused.json()["code"] == "label_above_ceiling"
