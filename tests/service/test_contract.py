"""The service's contract: the checked-in OpenAPI document, the body models built from the
request models, and the error-to-status mapping."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import mcp_types as types
import pytest
from mcp import ClientSession

from tests.service.conftest import THT
from tests.service.test_mcp import embeddings, serve, ws
from thoth.answer.request import SearchRequest, request_fields
from thoth.errors import ConfigError, RequestError, ThothError
from thoth.search.outcome import EvidenceSearchContext
from thoth.service.errors import BodyTooLarge, Busy, LabelAboveCeiling, Unauthorized
from thoth.service.http import create_app, status_for
from thoth.service.mcp_server import HTTP_ONLY, ROUTE_META
from thoth.service.models import AskBody, EvidenceSearchBody, JobBody, KnowledgeSearchBody
from thoth.state import StateError
from thoth.workspace import Workspace

__all__ = ["embeddings", "ws"]  # the MCP tests' fixtures: one published workspace

OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_the_checked_in_openapi_document_is_the_apps() -> None:
    checked_in = json.loads(OPENAPI.read_text(encoding="utf-8"))
    assert create_app(Path(".")).openapi() == checked_in, (
        "docs/openapi.json drifted from the app -> run "
        "`tht service openapi > docs/openapi.json` and review the diff"
    )


def test_tht_service_openapi_prints_it(tmp_path: Path) -> None:
    # Anywhere, without a workspace: nothing is opened to describe the routes.
    printed = subprocess.run(
        [*THT, "service", "openapi"], capture_output=True, text=True, check=True, cwd=tmp_path
    ).stdout
    assert printed == OPENAPI.read_text(encoding="utf-8")


def test_every_request_field_is_a_field_of_the_bodies() -> None:
    for model in (AskBody, KnowledgeSearchBody):
        assert set(request_fields()) <= set(model.model_fields), model
    assert set(request_fields()) | {"question", "instructions", "show_context"} == set(
        AskBody.model_fields
    )
    for name in ("labels", "channel"):
        assert JobBody.model_fields[name].annotation == SearchRequest.model_fields[name].annotation
    context = {f.name for f in dataclasses.fields(EvidenceSearchContext)}
    assert context <= set(EvidenceSearchBody.model_fields)
    schema = json.loads(OPENAPI.read_text(encoding="utf-8"))["components"]["schemas"]
    for name in ("AskBody", "KnowledgeSearchBody", "EvidenceSearchBody", "JobBody"):
        assert schema[name]["additionalProperties"] is False


def test_statuses_are_mapped_in_one_place() -> None:
    assert status_for(Unauthorized("x")) == 401
    assert status_for(LabelAboveCeiling("x")) == 403
    assert status_for(BodyTooLarge("x")) == 413
    assert status_for(RequestError("x")) == 422
    assert status_for(Busy("x")) == 503
    assert status_for(StateError("x")) == 503
    assert status_for(ConfigError("x")) == 500
    assert status_for(ThothError("x")) == 500


@pytest.mark.e2e
def test_every_route_is_an_mcp_tool_unless_declared_http_only(ws: Workspace) -> None:
    """HTTP/MCP parity, over the real protocol: each tool names the route it shares its
    code with (`_meta`), and every route of the OpenAPI document is some tool's or declared
    HTTP-only with why (thoth.service.mcp_server.HTTP_ONLY): a new route fails here until
    an assistant can reach it too, or is said not to need to."""

    async def body(session: ClientSession) -> list[types.Tool]:
        return (await session.list_tools()).tools

    paths = json.loads(OPENAPI.read_text(encoding="utf-8"))["paths"]
    routes = {f"{method.upper()} {path}" for path, spec in paths.items() for method in spec}
    tools = serve(ws, body, "--caller", "assistant")
    by_tool = {t.name: (t.meta or {}).get(ROUTE_META) for t in tools}
    assert all(isinstance(r, str) for r in by_tool.values()), by_tool
    shared = set(by_tool.values())
    assert len(shared) == len(by_tool), "two tools name one route"
    assert shared <= routes, shared - routes  # a tool's route is a route of the API
    assert set(HTTP_ONLY) <= routes, set(HTTP_ONLY) - routes  # no stale declaration
    assert not shared & set(HTTP_ONLY), shared & set(HTTP_ONLY)
    assert all(HTTP_ONLY.values())  # each says why
    missing = routes - shared - set(HTTP_ONLY)
    assert not missing, (
        f"routes without an MCP tool: {sorted(missing)} -> add the tool "
        "(thoth.service.mcp_server, calling the route's code) or declare it in HTTP_ONLY"
    )
