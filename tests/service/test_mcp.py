"""`tht mcp` end to end: the MCP SDK's own stdio client spawns the server as a real child process
over a small workspace (Evidence published, documents and a wiki page synced into the same
generation; embeddings over real HTTP from a local fake) and calls its tools as an assistant
would. Nothing in Thoth is mocked: the child opens the workspace as `tht` does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.conftest import WorkspaceFactory
from tests.fake_embeddings import FakeEmbeddingServer
from tests.publishing import (
    AUDIT,
    CLINICA_ANSWERS,
    CLINICA_WIKI,
    MANUAL,
    PAGE,
    prepared_workspace,
    synced_workspace,
)
from thoth.answer.request import request_fields
from thoth.runtime import memory_registry_path, open_state, sessions_dir
from thoth.service.memories import MergeBody, RetireBody
from thoth.service.sessions import ChecklistBody, ConsultBody, DecideBody, SqlRunBody
from thoth.session import SessionStore
from thoth.state import JobQueue
from thoth.workspace import Workspace

pytestmark = pytest.mark.e2e

T = TypeVar("T")

ANSWERS = (
    CLINICA_ANSWERS
    + """
[[sources]]
name = "riservati"
include = ["documents/riservati/**"]
channel = "clinica"
labels = ["confidential"]
"""
    + CLINICA_WIKI
    + """
# The calling systems `tht mcp --caller` may act as (keys unused over stdio).
[[service.callers]]
name = "assistant"
key_sha256 = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
labels = ["public", "internal"]

[[service.callers]]
name = "auditor"
key_sha256 = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
labels = ["public", "internal", "confidential"]

[[service.callers]]
name = "reader"
key_sha256 = "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
labels = ["public"]
"""
)

FILES = {
    "documents/manuali/ricovero.md": MANUAL,
    "documents/riservati/audit.md": AUDIT,
    "wiki/ricoveri-urgenti.md": PAGE,
}

TOOLS = {
    "ask",
    "evidence_search",
    "evidence_unit",
    "knowledge_search",
    "session_create",
    "session_list",
    "session_show",
    "session_consult",
    "session_decide",
    "session_retract",
    "session_reopen",
    "session_rollback",
    "session_sql_check",
    "session_sql_run",
    "session_proposals",
    "session_choose_memories",
    "session_checklist",
    "session_confirm_checklist",
    "session_gap",
    "gap_list",
    "session_summary",
    "memory_list",
    "memory_retire",
    "memory_merge",
    "job_submit",
    "job_show",
    "job_list",
    "job_cancel",
    "catalog_query",
    "feedback",
    "passage",
}
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def embeddings() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


def build_workspace(base: Path, embeddings_url: str) -> Workspace:
    ws = prepared_workspace(WorkspaceFactory(base), embeddings_url)
    return synced_workspace(ws, embeddings_url, ANSWERS, FILES)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, embeddings: FakeEmbeddingServer) -> Workspace:
    """One published workspace for the tests that only read it."""
    return build_workspace(tmp_path_factory.mktemp("mcp"), embeddings.url)


def serve(
    ws: Workspace,
    body: Callable[[ClientSession], Awaitable[T]],
    *args: str,
    errlog: Path | None = None,
) -> T:
    """Spawn `tht mcp -w WS ARGS` (the console script, the worktree's sources first on the
    path), connect the SDK's client over its stdio, run `body` with the session."""
    params = StdioServerParameters(
        command=str(Path(sys.executable).with_name("tht")),
        args=["mcp", "-w", str(ws.root), *args],
        env={"PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )
    log = errlog or ws.root.parent / f"{ws.root.name}-mcp.log"

    async def main() -> T:
        with log.open("a", encoding="utf-8") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await body(session)

    return anyio.run(main)


def call(ws: Workspace, tool: str, arguments: dict[str, Any], *args: str) -> types.CallToolResult:
    async def body(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool(tool, arguments)

    return serve(ws, body, *args)


def structured(result: types.CallToolResult) -> dict[str, Any]:
    data = result.structured_content
    assert isinstance(data, dict), result
    return data


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


# ---------------------------------------------------------------------- the tools


def test_lists_the_tools_with_schemas_from_the_request_model(ws: Workspace) -> None:
    async def body(session: ClientSession) -> list[types.Tool]:
        # A tool that does not exist is a protocol error (invalid params), naming the tools.
        with pytest.raises(MCPError) as unknown:
            await session.call_tool("sql", {"query": "select 1"})
        assert unknown.value.error.code == types.INVALID_PARAMS
        assert "ask" in unknown.value.error.message
        return (await session.list_tools()).tools

    tools = {t.name: t for t in serve(ws, body, "--caller", "assistant")}
    assert set(tools) == TOOLS
    for name in ("ask", "knowledge_search"):
        schema = tools[name].input_schema
        # Every field of SearchRequest, so a new filter reaches MCP without a line here.
        assert set(request_fields()) <= set(schema["properties"]), (name, schema)
        assert schema["additionalProperties"] is False
    assert tools["ask"].input_schema["required"] == ["question"]
    assert "instructions" in tools["ask"].input_schema["properties"]
    assert tools["knowledge_search"].input_schema["required"] == ["query"]
    evidence = tools["evidence_search"].input_schema
    assert {"query", "purpose", "limit", "concepts", "tables", "columns", "kinds"} <= set(
        evidence["properties"]
    )
    assert evidence["additionalProperties"] is False
    consult = tools["session_consult"].input_schema
    assert set(consult["required"]) == {"session_id", "stage", "base"}
    # each session tool's schema is its HTTP route's body model, plus the path's session id
    for name, model in (
        ("session_consult", ConsultBody),
        ("session_decide", DecideBody),
        ("session_sql_run", SqlRunBody),
        ("session_confirm_checklist", ChecklistBody),
    ):
        schema, route = tools[name].input_schema, model.model_json_schema()
        for field, spec in route["properties"].items():
            assert schema["properties"][field] == spec, (name, field)
        assert set(schema["properties"]) - set(route["properties"]) == {
            "session_id",
            "idempotency_key",
        }
        assert schema["additionalProperties"] is False
    # the curator's tools take the HTTP routes' bodies as they are
    for name, curation in (("memory_retire", RetireBody), ("memory_merge", MergeBody)):
        schema = tools[name].input_schema
        assert schema["properties"] == curation.model_json_schema()["properties"], name
    assert all(t.description for t in tools.values())


def test_ask_found_carries_status_sources_and_caveats(ws: Workspace) -> None:
    result = call(
        ws,
        "ask",
        {"question": "Di quanto sono cresciuti i ricoveri urgenti nel 2024?"},
        "--caller",
        "assistant",
    )
    assert not result.is_error, text_of(result)
    answer = structured(result)
    assert answer["status"] in ("found", "truncated"), answer
    ids = [s["doc_id"] for s in answer["sources"]]
    assert "wiki:wiki/ricoveri-urgenti.md" in ids
    assert "la crescita reale è intorno al 2%" in answer["text"]  # the page's caveat
    # The confidential document is beyond a public ceiling and the default labels.
    assert not any(i.startswith("riservati:") for i in ids)
    # Clients that read text only get the same object.
    assert json.loads(text_of(result)) == answer
    # The caller the server runs as is the one the answer log names.
    with open_state(ws) as state:
        logged = {a.id: a for a in state.list_answers(ws.settings.workspace, 50, None)}
    assert logged[answer["id"]].caller == "assistant"
    assert logged[answer["id"]].request["labels"] == ["public"]  # default ∩ ceiling


def test_ask_can_show_the_context_the_answerer_read(ws: Workspace) -> None:
    result = call(
        ws,
        "ask",
        {"question": "Di quanto sono cresciuti i ricoveri urgenti nel 2024?", "show_context": True},
        "--caller",
        "assistant",
    )
    assert not result.is_error, text_of(result)
    answer = structured(result)
    assert answer["context"] and all(c["text"] for c in answer["context"])
    assert {c["doc_id"] for c in answer["context"]} <= {s["doc_id"] for s in answer["sources"]}


def test_ask_nothing_found_is_a_result_not_an_error(ws: Workspace) -> None:
    # The confidential source under the public labels: nothing may be served.
    result = call(
        ws, "ask", {"question": "Che cosa ha trovato l'audit?", "source": "riservati"},
        "--caller", "assistant",
    )  # fmt: skip
    assert not result.is_error, text_of(result)
    answer = structured(result)
    assert answer["status"] == "nothing_found" and answer["sources"] == []


def test_labels_within_the_ceiling_widen_what_is_served(ws: Workspace) -> None:
    result = call(
        ws,
        "knowledge_search",
        {"query": "audit schede di ricovero", "labels": ["public", "confidential"]},
        "--caller", "auditor",
    )  # fmt: skip
    assert not result.is_error, text_of(result)
    found = structured(result)
    assert found["status"] == "found"
    docs = {f["doc_id"] for f in found["fragments"]}
    assert "riservati:documents/riservati/audit.md" in docs
    fragment = found["fragments"][0]
    assert {"doc_id", "title", "source", "kind", "score", "labels", "heading_path"} <= set(fragment)


def test_evidence_search_available(ws: Workspace) -> None:
    result = call(
        ws,
        "evidence_search",
        {"query": "ricovero con pernottamento", "purpose": "disambiguation", "limit": 3},
        "--caller",
        "assistant",
    )
    assert not result.is_error, text_of(result)
    outcome = structured(result)
    assert outcome["status"] == "available"
    assert "evidence:ricovero" in [r["evidence_id"] for r in outcome["results"]]
    assert len(outcome["results"]) <= 3


def test_a_unit_evidence_search_found_opens_through_evidence_unit(ws: Workspace) -> None:
    """The MCP twin of GET /v1/evidence/units/{id}: the unit a search result names, whole
    (body, every excerpt); an id the generation does not publish is unit_not_found with what
    to do; a caller without the Evidence labels is refused as the search refuses it."""

    async def body(client: ClientSession) -> tuple[dict[str, Any], list[types.CallToolResult]]:
        found = structured(
            await client.call_tool(
                "evidence_search",
                {"query": "ricovero con pernottamento", "purpose": "disambiguation"},
            )
        )
        first = found["results"][0]
        return first, [
            await client.call_tool("evidence_unit", {"unit_id": first["evidence_id"]}),
            await client.call_tool("evidence_unit", {"unit_id": "evidence:no-such-unit"}),
            await client.call_tool("evidence_unit", {"unit": first["evidence_id"]}),
        ]

    first, (opened, unknown, malformed) = serve(ws, body, "--caller", "assistant")
    assert not opened.is_error, text_of(opened)
    unit = structured(opened)
    assert unit["evidence_id"] == first["evidence_id"] and unit["title"] == first["title"]
    assert unit["kind"] == first["kind"] and unit["caveats"] == first["caveats"]
    assert unit["provenance"] == first["provenance"]
    assert unit["body"].strip() and set(first["excerpts"]) <= set(unit["excerpts"])
    assert json.loads(text_of(opened)) == unit
    assert unknown.is_error
    error = structured(unknown)
    assert error["code"] == "unit_not_found" and "evidence:no-such-unit" in error["message"]
    assert error["problems"][0]["code"] == "unit_not_found"
    assert "evidence_search" in (error["problems"][0]["hint"] or ""), error
    assert malformed.is_error and structured(malformed)["code"] == "bad_request"
    refused = call(ws, "evidence_unit", {"unit_id": first["evidence_id"]}, "--caller", "reader")
    assert refused.is_error
    error = structured(refused)
    assert error["code"] == "label_above_ceiling" and "reader" in error["message"], error
    assert first["title"] not in text_of(refused)


def test_gap_list_shows_the_gaps_of_this_caller_s_sessions(ws: Workspace) -> None:
    """The MCP twin of GET /v1/gaps: a gap recorded with session_gap is listed to its caller,
    not to another caller that is not a curator; a caller without the Evidence labels is
    refused with its code."""

    async def body(client: ClientSession) -> tuple[str, types.CallToolResult]:
        made = structured(
            await client.call_tool("session_create", {"question": "Quanti ricoveri brevi?"})
        )
        recorded = structured(
            await client.call_tool(
                "session_gap",
                {
                    "session_id": made["session"],
                    "base": 0,
                    "stage": "clarification",
                    "subject": "ricovero breve",
                },
            )
        )
        gap_id = f"{made['session']}:{recorded['entry']['seq']}"
        return gap_id, await client.call_tool("gap_list", {})

    gap_id, listed = serve(ws, body, "--caller", "assistant")
    assert not listed.is_error, text_of(listed)
    gaps = {g["id"]: g for g in structured(listed)["gaps"]}
    assert gap_id in gaps and gaps[gap_id]["subject"] == "ricovero breve"
    assert gaps[gap_id]["caller"] == "assistant" and gaps[gap_id]["stage"] == "clarification"
    other = call(ws, "gap_list", {}, "--caller", "auditor")  # not declared curator = true
    assert not other.is_error, text_of(other)
    assert gap_id not in {g["id"] for g in structured(other)["gaps"]}
    refused = call(ws, "gap_list", {}, "--caller", "reader")
    assert refused.is_error and structured(refused)["code"] == "label_above_ceiling"
    assert structured(refused)["problems"][0]["hint"]
    malformed = call(ws, "gap_list", {"session_id": "x"}, "--caller", "assistant")
    assert malformed.is_error and structured(malformed)["code"] == "bad_request"


def test_job_list_and_job_cancel_act_on_this_caller_s_jobs(ws: Workspace) -> None:
    """The MCP twins of GET /v1/jobs and POST /v1/jobs/{id}/cancel: the caller's jobs listed
    (not another caller's), a queued one cancelled; cancelling it again is job_finished,
    another caller's job or a malformed id is job_not_found, each with what to do."""
    context = {"labels": ["public"], "channel": None}
    with open_state(ws) as state:
        queue = JobQueue.on(state)
        mine = queue.create(ws.settings.workspace, "assistant", "Attese in PS?", context).id
        theirs = queue.create(ws.settings.workspace, "auditor", "Audit 2024?", context).id

    async def body(client: ClientSession) -> list[types.CallToolResult]:
        return [
            await client.call_tool("job_list", {}),
            await client.call_tool("job_cancel", {"job_id": mine}),
            await client.call_tool("job_cancel", {"job_id": mine}),
            await client.call_tool("job_cancel", {"job_id": theirs}),
            await client.call_tool("job_cancel", {"job_id": "job_0123"}),
            await client.call_tool("job_list", {}),
        ]

    listed, cancelled, again, other, malformed, after = serve(ws, body, "--caller", "assistant")
    assert not listed.is_error, text_of(listed)
    jobs = {j["id"]: j for j in structured(listed)["jobs"]}
    assert mine in jobs and theirs not in jobs
    assert jobs[mine]["status"] == "queued" and jobs[mine]["caller"] == "assistant"
    assert not cancelled.is_error, text_of(cancelled)
    assert structured(cancelled)["id"] == mine and structured(cancelled)["status"] == "cancelled"
    assert {j["id"]: j["status"] for j in structured(after)["jobs"]}[mine] == "cancelled"
    assert again.is_error
    error = structured(again)
    assert error["code"] == "job_finished" and mine in error["message"], error
    assert error["problems"][0]["code"] == "job_finished"
    assert "submit a new job" in (error["problems"][0]["hint"] or ""), error
    for refused in (other, malformed):
        assert refused.is_error
        error = structured(refused)
        assert error["code"] == "job_not_found", error
        assert "job_list" in (error["problems"][0]["hint"] or ""), error
    with open_state(ws) as state:
        queue = JobQueue.on(state)
        assert queue.get(mine).status == "cancelled"
        assert queue.get(theirs).status == "queued"  # not this caller's: untouched


def test_catalog_query_without_an_analytics_store_is_source_not_found(ws: Workspace) -> None:
    """The MCP twin of GET /v1/catalog/query (opened for real in test_numbers_labels.py):
    this workspace serves no catalog, so no query id exists, said with what to do."""
    result = call(
        ws,
        "catalog_query",
        {"query_id": "ricoveri-reparto", "revision": "0" * 40, "parameters": {"anno": 2024}},
        "--caller",
        "assistant",
    )
    assert result.is_error
    error = structured(result)
    assert error["code"] == "source_not_found" and "[analytics]" in error["message"], error
    assert error["problems"][0]["code"] == "source_not_found"
    assert error["problems"][0]["hint"], error


def test_session_consult_and_show(ws: Workspace) -> None:
    async def body(client: ClientSession) -> list[types.CallToolResult]:
        made = await client.call_tool(
            "session_create", {"question": "Quanti ricoveri con pernottamento nel 2024?"}
        )
        session = SessionStore(sessions_dir(ws)).open(structured(made)["session"])
        return [
            await client.call_tool(
                "session_consult", {"session_id": session.id, "stage": "clarification", "base": 0}
            ),
            await client.call_tool("session_show", {"session_id": session.id}),
            await client.call_tool("session_show", {"session_id": "s-20260101-000000-abcdef"}),
        ]

    consulted, shown, missing = serve(ws, body, "--caller", "assistant")
    assert not consulted.is_error, text_of(consulted)
    found = structured(consulted)
    assert found["status"] == "available" and found["stage"] == "clarification"
    assert found["receipt_seq"] >= 1
    assert not shown.is_error, text_of(shown)
    receipts = structured(shown)["receipts"]
    assert [r["seq"] for r in receipts] == [found["receipt_seq"]]
    assert missing.is_error and structured(missing)["code"] == "session_not_found"


def test_a_source_s_link_opens_through_the_passage_tool_under_the_caller_s_ceiling(
    ws: Workspace,
) -> None:
    """The MCP twin of GET /v1/passage: the link's fields, the labels asked with; a
    confidential source under public labels is refused with its code, nothing of it shown."""
    from urllib.parse import parse_qs, urlsplit

    async def body(client: ClientSession) -> list[types.CallToolResult]:
        answer = structured(
            await client.call_tool(
                "ask",
                {"question": "audit schede di ricovero", "labels": ["public", "confidential"]},
            )
        )
        [audit] = [s for s in answer["sources"] if s["doc_id"].startswith("riservati:")]
        query = {k: v[0] for k, v in parse_qs(urlsplit(audit["link"]).query).items()}
        args = {**query, "fragment": int(query["fragment"])}
        return [
            await client.call_tool("passage", {**args, "labels": ["public", "confidential"]}),
            await client.call_tool("passage", {**args, "labels": ["public"]}),
        ]

    opened, refused = serve(ws, body, "--caller", "auditor")
    assert not opened.is_error, text_of(opened)
    passage = structured(opened)
    assert passage["doc_id"].startswith("riservati:") and any(
        f["highlight"] for f in passage["fragments"]
    )
    assert refused.is_error and structured(refused)["code"] == "source_not_allowed"
    assert "17,9%" not in text_of(refused)


def test_feedback_on_an_answer_of_the_session_goes_to_the_curators_queue(ws: Workspace) -> None:
    """Ask, then report the answer, as the same caller; another caller's answer and a note
    with markup are refused with their code, and nothing of them is stored."""
    question = "Di quanto sono cresciuti i ricoveri urgenti nel 2024?"

    async def body(client: ClientSession) -> list[types.CallToolResult]:
        answer = structured(await client.call_tool("ask", {"question": question}))
        report = {"answer_id": answer["id"], "kind": "wrong", "note": "the rise is 2%"}
        return [
            await client.call_tool("feedback", report),
            await client.call_tool("feedback", {**report, "note": "<b>2%</b>"}),
        ]

    given, markup = serve(ws, body, "--caller", "assistant")
    assert not given.is_error, text_of(given)
    saved = structured(given)["feedback"]
    assert (saved["caller"], saved["kind"], saved["note"]) == (
        "assistant",
        "wrong",
        "the rise is 2%",
    )
    assert markup.is_error and structured(markup)["code"] == "bad_request"
    assert [p["code"] for p in structured(markup)["problems"]] == ["feedback_note_markup"]
    other = call(
        ws, "feedback", {"answer_id": saved["answer_id"], "kind": "good"}, "--caller", "auditor"
    )
    assert other.is_error and structured(other)["code"] == "answer_not_found"
    with open_state(ws) as state:
        stored = [
            f
            for f in state.list_feedback(ws.settings.workspace)
            if f.answer_id == saved["answer_id"]
        ]
    assert [(f.kind, f.caller) for f in stored] == [("wrong", "assistant")]


# ---------------------------------------------------------------------- refusals and failures


MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("ask", {"question": "ricovero", "lables": ["public"]}, "lables"),
    ("ask", {"question": "ricovero", "year": "2024"}, "year"),  # never coerced
    ("ask", {"question": "ricovero", "year": 99999}, "year"),
    ("ask", {"question": "ricovero", "labels": "public"}, "labels"),  # never split
    ("knowledge_search", {"query": "ricovero", "limit": 0}, "limit"),
    ("evidence_search", {"query": "ricovero", "purpose": "gossip"}, "purpose"),
    ("session_show", {"session_id": "s-20260101-000000-abcdef", "stage": "x"}, "stage"),
    ("job_cancel", {"job": "job_0123"}, "job"),
    ("catalog_query", {"query_id": "q", "revision": "r", "parameters": [1]}, "parameters"),
]


def test_a_malformed_call_is_refused_naming_the_field(ws: Workspace) -> None:
    async def body(session: ClientSession) -> list[types.CallToolResult]:
        return [await session.call_tool(tool, arguments) for tool, arguments, _ in MALFORMED]

    for (tool, arguments, field), result in zip(
        MALFORMED, serve(ws, body, "--caller", "assistant"), strict=True
    ):
        assert result.is_error, (tool, arguments)
        error = structured(result)
        assert error["code"] == "bad_request", (tool, arguments, error)
        assert field in error["message"], (tool, arguments, error)
        assert any(p["field"] == field for p in error["problems"]), (tool, arguments, error)


def test_a_label_above_the_ceiling_is_refused(ws: Workspace) -> None:
    result = call(
        ws,
        "ask",
        {"question": "Che cosa ha trovato l'audit?", "labels": ["public", "confidential"]},
        "--caller",
        "assistant",
    )
    assert result.is_error
    error = structured(result)
    assert error["code"] == "label_above_ceiling"
    assert "confidential" in error["message"] and "assistant" in error["message"]
    assert error["problems"][0]["hint"]


def test_evidence_is_refused_to_a_caller_without_its_labels(ws: Workspace) -> None:
    # Evidence carries [answers].evidence_labels (internal): above the reader's ceiling, and
    # so are the sessions that hold what Evidence said.
    session = SessionStore(sessions_dir(ws)).create("Quanti ricoveri?")

    async def body(client: ClientSession) -> list[types.CallToolResult]:
        return [
            await client.call_tool(
                "evidence_search", {"query": "ricovero", "purpose": "disambiguation"}
            ),
            await client.call_tool(
                "session_consult", {"session_id": session.id, "stage": "clarification", "base": 0}
            ),
            await client.call_tool("session_show", {"session_id": session.id}),
        ]

    for result in serve(ws, body, "--caller", "reader"):
        assert result.is_error
        error = structured(result)
        assert error["code"] == "label_above_ceiling" and "reader" in error["message"], error
    assert session.entries() == []  # nothing was consulted, nothing recorded


def test_an_undeclared_caller_is_refused_before_serving(ws: Workspace) -> None:
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("tht")),
            "mcp",
            "-w",
            str(ws.root),
            "--caller",
            "nobody",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert done.returncode == 4, done.stderr
    assert done.stdout == ""  # stdout is the protocol's
    assert "nobody" in done.stderr and "assistant" in done.stderr


def test_an_unavailable_index_is_an_error_with_its_code(
    tmp_path: Path, embeddings: FakeEmbeddingServer
) -> None:
    broken = build_workspace(tmp_path, embeddings.url)
    generations = broken.root / ".thoth" / "index" / broken.settings.workspace
    for generation in generations.iterdir():
        shutil.rmtree(generation)  # the active generation is gone from disk

    async def body(session: ClientSession) -> list[types.CallToolResult]:
        return [
            await session.call_tool("ask", {"question": "ricovero"}),
            await session.call_tool("knowledge_search", {"query": "ricovero"}),
            await session.call_tool(
                "evidence_search", {"query": "ricovero", "purpose": "disambiguation"}
            ),
        ]

    errlog = tmp_path / "mcp.log"
    results = serve(broken, body, "--caller", "assistant", errlog=errlog)
    for result in results:
        assert result.is_error, result
        error = structured(result)
        assert error["code"] in ("index_unavailable", "index_corrupt"), error
        assert error["problems"] and error["problems"][0]["code"] == error["code"]
        assert error["problems"][0]["hint"], error  # what to do, not only what failed
        assert error["code"] in text_of(result)
        # Where the server keeps its files is not the assistant's business: relative paths,
        # and the full message in the server's log (stderr) under the error's request id.
        for root in {str(broken.root), str(broken.root.resolve())}:
            assert root not in text_of(result) and root not in json.dumps(error), error
        logged = [line for line in errlog.read_text().splitlines() if error["request_id"] in line]
        assert any(str(broken.root) in line for line in logged), (error, errlog.read_text())
    assert any("<workspace>/.thoth/index" in text_of(r) for r in results), results


def test_the_memory_tools_are_for_curators_only(ws: Workspace) -> None:
    """A caller not declared `curator = true` lists, retires and merges nothing over MCP: the
    tool error is `not_a_curator` with what to do, and the registry is untouched."""
    registry = memory_registry_path(ws)
    before = registry.read_bytes() if registry.exists() else b""

    async def body(session: ClientSession) -> list[types.CallToolResult]:
        return [
            await session.call_tool("memory_list", {}),
            await session.call_tool("memory_retire", {"memory_id": "mem-0001", "why": "x"}),
            await session.call_tool(
                "memory_merge", {"keep": "mem-0001", "drop": ["mem-0002"], "why": "x"}
            ),
        ]

    for result in serve(ws, body, "--caller", "assistant"):
        assert result.is_error, text_of(result)
        error = structured(result)
        assert error["code"] == "not_a_curator", error
        assert "curator = true" in (error["problems"][0]["hint"] or "")
    assert (registry.read_bytes() if registry.exists() else b"") == before
