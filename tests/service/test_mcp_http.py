"""Issue 25, point 7: MCP over HTTP. `tht serve` speaks the streamable HTTP transport of the
MCP specification at /mcp, with the same keys, label ceilings and limits as the HTTP API;
tested with the official SDK's client against a real `tht serve` process."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import httpx
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.answer.test_answer import QUESTION
from tests.service.conftest import Server, finish_partial
from tests.service.test_mcp import structured, text_of

T = TypeVar("T")


def over_http(server: Server, caller: str, body: Callable[[ClientSession], Awaitable[T]]) -> T:
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


def call(server: Server, caller: str, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
    async def body(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool(tool, arguments)

    return over_http(server, caller, body)


def test_a_caller_lists_and_calls_the_tools_over_http(server: Server) -> None:
    async def listed(session: ClientSession) -> list[str]:
        return [t.name for t in (await session.list_tools()).tools]

    assert "ask" in over_http(server, "portal", listed)
    result = call(server, "portal", "ask", {"question": QUESTION})
    assert not result.is_error, text_of(result)
    answer = structured(result)
    assert answer["status"] == "found" and answer["sources"]
    # the same object the HTTP API serves
    api = server.post("/v1/ask", {"question": QUESTION}).json()
    assert answer["status"] == api["status"] and answer["sources"] == api["sources"]


def test_the_callers_label_ceiling_holds_over_http(server: Server) -> None:
    refused = call(server, "portal", "ask", {"question": QUESTION, "labels": ["internal"]})
    assert refused.is_error and "label_above_ceiling" in text_of(refused)
    allowed = call(server, "analyst", "ask", {"question": QUESTION, "labels": ["internal"]})
    assert not allowed.is_error, text_of(allowed)


def test_no_key_or_a_wrong_key_is_401_before_any_message(server: Server) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"Accept": "application/json, text/event-stream"}
    bare = httpx.post(f"{server.url}/mcp", json=hello, headers=accept, timeout=10)
    assert bare.status_code == 401 and bare.json()["code"] == "unauthorized"
    wrong = httpx.post(
        f"{server.url}/mcp",
        json=hello,
        headers={**accept, "Authorization": "Bearer not-a-key"},
        timeout=10,
    )
    assert wrong.status_code == 401


def test_a_partial_job_reads_the_same_over_mcp_as_over_the_api(server: Server) -> None:
    """Issue 28, point 4: status, gaps and what the answer rests on, in the MCP tool result
    as in GET /v1/jobs/{id}; job_submit without a model is refused with its code."""

    refused = call(server, "portal", "job_submit", {"question": QUESTION})
    assert refused.is_error and "agent_unavailable" in text_of(refused)
    rests_on = "knowledge_search failed (index_unavailable): the answer rests on 1 wiki page"
    result = {"answer": "a", "sources": [], "gaps": [], "rests_on": rests_on}
    job_id = finish_partial(server.root, None, "portal", result)
    shown = call(server, "portal", "job_show", {"job_id": job_id})
    assert not shown.is_error, text_of(shown)
    over_mcp = structured(shown)
    over_api = server.get(f"/v1/jobs/{job_id}").json()
    assert over_mcp["status"] == over_api["status"] == "partial"
    assert over_mcp["error"] == over_api["error"] == rests_on
    assert over_mcp["result"] == over_api["result"]
    # another caller's job does not exist for it
    other = call(server, "analyst", "job_show", {"job_id": job_id})
    assert other.is_error and "job_not_found" in text_of(other)
