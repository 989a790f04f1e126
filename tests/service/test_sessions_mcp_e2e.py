"""Issue 47, point 2 and its goal: a scripted MCP client (the SDK's own, over streamable HTTP
at `tht serve`'s /mcp) drives a whole question→SQL session F1–F8 on the demo workspace with no
model involved — consults each stage, decides, checks and runs the SQL, confirms the F8
checklist — and the next session it starts is offered the promoted memory at F2 and chooses
it. Then the bad input: each refused with the code the HTTP route gives, the ledger unchanged."""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar
from unittest import mock

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from rich.console import Console

from tests.service.conftest import Server
from tests.service.test_mcp import structured, text_of
from thoth.cli.demo import DEMO_FINAL_SQL, DEMO_REWRITTEN, DEMO_SQL_QUESTION, run_demo
from thoth.runtime import sessions_dir
from thoth.service.mcp_server import STAGES_PROMPT, stages_prompt
from thoth.service.registry import add_caller
from thoth.workspace import Workspace

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

AGENT = "agent"
OTHER = "other"
T = TypeVar("T")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    out = io.StringIO()
    # The demo's own MCP step spawns the installed `tht` (the SDK's clean environment), not
    # the code under test: it is not what is tested here.
    with mock.patch("thoth.cli.demo.demo_mcp", lambda *_: "found"):
        root = run_demo(Console(file=out, width=120), tmp_path_factory.mktemp("demo") / "demo")
    _, key = add_caller(root, AGENT, ["public", "internal"])
    _, other = add_caller(root, OTHER, ["public", "internal"])
    server = Server(root, {AGENT: key, OTHER: other}, tmp_path_factory.mktemp("log") / "s.log")
    try:
        yield server
    finally:
        server.stop()


def over_mcp(server: Server, caller: str, body: Callable[[ClientSession], Awaitable[T]]) -> T:
    async def main() -> T:
        headers = {"Authorization": f"Bearer {server.keys[caller]}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as client,
            streamable_http_client(f"{server.url}/mcp", http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await body(session)

    return anyio.run(main)


class Agent:
    """An agent driving one session through the MCP tools, keeping the position it saw."""

    def __init__(self, mcp: ClientSession, question: str) -> None:
        self.mcp = mcp
        self.question = question
        self.id = ""
        self.base = 0

    async def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.mcp.call_tool(name, arguments)
        assert not result.is_error, text_of(result)
        return structured(result)

    async def start(self) -> Agent:
        made = await self.tool("session_create", {"question": self.question})
        self.id = made["session"]
        return self

    async def on(self, name: str, **arguments: Any) -> dict[str, Any]:
        return await self.tool(name, {"session_id": self.id, **arguments})

    async def consult(self, stage: str) -> None:
        found = await self.on("session_consult", stage=stage, base=self.base)
        assert found["status"] == "available" and found["stage"] == stage
        self.base = found["receipt_seq"]

    async def decide(self, stage: str, type: str, subject: str, detail: str = "") -> None:
        made = await self.on("session_decide", stage=stage, type=type, subject=subject,
                             detail=detail, rationale="agent over MCP", base=self.base)  # fmt: skip
        self.base = made["entry"]["seq"]


def test_an_mcp_client_drives_a_whole_session_then_the_next_one_chooses_its_memory(
    served: Server,
) -> None:
    async def drive(mcp: ClientSession) -> dict[str, Any]:
        prompts = [p.name for p in (await mcp.list_prompts()).prompts]
        taught = await mcp.get_prompt(STAGES_PROMPT)
        content = taught.messages[0].content
        assert isinstance(content, types.TextContent)

        s = await Agent(mcp, DEMO_SQL_QUESTION).start()
        await s.consult("clarification")
        await s.decide("clarification", "concept_clarified", "ricovero ordinario",
                       "regime di ricovero 1 (non day hospital)")  # fmt: skip
        await s.consult("rewriting")
        await s.decide("rewriting", "question_rewritten", DEMO_REWRITTEN)
        await s.consult("schema_linking")
        for type, subject in (
            ("table_promoted", "adt.admission"),
            ("table_promoted", "adt.ward"),
            ("column_promoted", "adt.admission.care_regime"),
            ("column_promoted", "adt.admission.discharge_date"),
            ("column_promoted", "adt.admission.discharging_ward_id"),
            ("column_promoted", "adt.ward.ward_name"),
        ):
            await s.decide("schema_linking", type, subject)
        await s.decide("synthesis", "synthesis_approved", "ricoveri ordinari per reparto")
        await s.consult("cte")
        await s.decide("cte", "cte_plan_approved", "una sola query: ricoveri ordinari 2024")
        await s.consult("final_sql")
        checked = await s.on("session_sql_check", sql=DEMO_FINAL_SQL)
        await s.decide("final_sql", "final_sql_approved", "ricoveri ordinari per reparto",
                       DEMO_FINAL_SQL)  # fmt: skip
        ran = await s.on("session_sql_run", base=s.base, labels=["internal"])
        s.base = ran["seq"]
        shown = await s.on("session_show")
        listed = await s.on("session_checklist")
        [candidate] = listed["candidates"]
        done = await s.on("session_confirm_checklist", base=s.base,
                          items=[{"seq": candidate["seq"], "action": candidate["preselected"]}])  # fmt: skip
        summary = await s.on("session_summary")
        mine = await s.tool("session_list", {})

        t = await Agent(mcp, "Quanti ricoveri ordinari per reparto nel 2023?").start()
        offered = await t.on("session_proposals")
        memory = done["saved"][0]["memory_id"]
        chosen = await t.on("session_choose_memories", base=0, memory_ids=[memory])
        after = await t.on("session_show")
        return {"prompts": prompts, "prompt": content.text, "checked": checked, "ran": ran,
                "shown": shown, "done": done, "summary": summary, "mine": mine,
                "offered": offered, "memory": memory, "chosen": chosen, "after": after,
                "first": s.id}  # fmt: skip

    got = over_mcp(served, AGENT, drive)
    assert got["prompts"] == [STAGES_PROMPT] and got["prompt"] == stages_prompt()
    assert got["checked"]["ok"] is True and got["checked"]["dialect"] == "sqlite"
    ran = got["ran"]
    assert ran["receipt"]["status"] == "succeeded" and ran["columns"] == ["reparto", "ricoveri"]
    assert "Medicina generale" in {row[0] for row in ran["rows"]}
    assert [r["run"]["status"] for r in got["shown"]["runs"]] == ["succeeded"]
    done = got["done"]
    assert done["closed"] is True and done["remaining"] == 0
    assert got["memory"] in got["summary"]["markdown"]
    assert got["first"] in [x["id"] for x in got["mine"]["sessions"]]
    # the same session read over plain HTTP is the object the tools returned
    http = served.get(f"/v1/sessions/{got['first']}", caller=AGENT).json()
    assert http["position"] == done["position"]
    # the next session: offered the memory at F2, chooses it
    assert got["memory"] in [p["memory_id"] for p in got["offered"]["results"]]
    [applied] = got["chosen"]["chosen"]
    assert applied["memory_id"] == got["memory"] and applied["created"] is True
    effective = got["after"]["effective"]
    assert [(e["stage"], e["subject"]) for e in effective] == [("memory", "ricovero ordinario")]


def _ledger(server: Server, session_id: str) -> bytes:
    path = sessions_dir(Workspace.open(server.root)) / session_id / "ledger.jsonl"
    return path.read_bytes() if path.exists() else b""


@pytest.mark.parametrize(
    ("caller", "tool", "route", "arguments", "code"),
    [
        (AGENT, "session_consult", "consult", {"stage": "F9", "base": 1}, "bad_request"),
        (AGENT, "session_decide", "decisions",
         {"stage": "nowhere", "type": "concept_clarified", "subject": "x", "base": 1},
         "bad_request"),
        (AGENT, "session_decide", "decisions",
         {"stage": "clarification", "type": "concept_clarified", "subject": "x", "base": 0},
         "ledger_conflict"),
        (OTHER, "session_decide", "decisions",
         {"stage": "clarification", "type": "concept_clarified", "subject": "x", "base": 1},
         "session_not_found"),
        (OTHER, "session_show", "", {}, "session_not_found"),
        (AGENT, "session_sql_run", "sql/run", {"base": 1, "labels": ["confidential"]},
         "label_above_ceiling"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_with_the_http_code_and_the_ledger_unchanged(
    served: Server, caller: str, tool: str, route: str, arguments: dict[str, Any], code: str
) -> None:
    made = served.post("/v1/sessions", {"question": "Quanti ricoveri?"}, caller=AGENT).json()
    sid = made["session"]
    first = served.post(f"/v1/sessions/{sid}/decisions", {"base": 0, "stage": "clarification",
                        "type": "concept_clarified", "subject": "ricovero", "detail": "d"},
                        caller=AGENT)  # fmt: skip
    assert first.status_code == 200, first.text
    before = _ledger(served, sid)

    async def call(mcp: ClientSession) -> types.CallToolResult:
        return await mcp.call_tool(tool, {"session_id": sid, **arguments})

    refused = over_mcp(served, caller, call)
    assert refused.is_error and structured(refused)["code"] == code, text_of(refused)
    assert _ledger(served, sid) == before
    path = f"/v1/sessions/{sid}/{route}".rstrip("/")
    over_http = (
        served.post(path, arguments, caller=caller) if arguments else served.get(path, caller)
    )
    assert over_http.json()["code"] == code and _ledger(served, sid) == before
