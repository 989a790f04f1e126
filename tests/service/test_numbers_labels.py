"""Issue 23, point 2 over the wire: a number carries the labels of its store and query, and a
caller without them gets no number over HTTP (`tht serve`) nor MCP (`tht mcp`), exactly as
for a document it may not see. A real subprocess of each, over the analytics test workspace
(its SQLite store, its catalog, its one document synced with the bundled embedder)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import mcp_types as types
import pytest
from mcp import ClientSession

from tests.analytics.conftest import make_analytics_workspace
from tests.conftest import commit_all, git
from tests.service.conftest import Server, relabel
from tests.service.test_mcp import call, serve, structured, text_of
from thoth.knowledge.sync import DocsSync
from thoth.runtime import open_runtime
from thoth.service.registry import add_caller
from thoth.workspace import Workspace

pytestmark = pytest.mark.e2e

QUESTION = "Quanti ricoveri ha avuto la Pediatria nel 2024?"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Workspace]]:
    aw = make_analytics_workspace(tmp_path_factory.mktemp("numbers") / "ws")
    toml = aw.root / "thoth.toml"
    text = toml.read_text("utf-8").replace(
        'labels = ["public"]\nthreshold', 'labels = ["internal"]\nthreshold'
    )
    toml.write_text(text, "utf-8")
    keys = {
        name: add_caller(aw.root, name, labels)[1]
        for name, labels in (("portal", ["public"]), ("analyst", ["public", "internal"]))
    }
    commit_all(aw.root, "numbers labelled internal")
    ws = Workspace.open(aw.root)
    with open_runtime(ws) as rt:  # the bundled embedder, as the subprocesses open it
        revision = git(aw.root, "rev-parse", "HEAD").strip()
        rt.state.activate_revision(ws.settings.workspace, revision, activated_by="test")
        DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="test")
    server = Server(aw.root, keys, aw.root.parent / "serve.log")
    try:
        yield server, ws
    finally:
        server.stop()


def _no_number(answer: dict[str, Any]) -> None:
    assert answer["status"] != "computed"
    assert "figures" not in answer and "provenance" not in answer
    # No query of the store is named anywhere, the diagnostics included.
    said = json.dumps(answer)
    assert not any(q in said for q in ("ricoveri-reparto", "ricoveri-per-reparto", "degenza"))


def test_http_serves_the_number_only_to_a_caller_with_its_labels(
    served: tuple[Server, Workspace],
) -> None:
    server, _ = served
    public = server.post("/v1/ask", {"question": QUESTION}, caller="portal")
    assert public.status_code == 200
    _no_number(public.json())
    analyst = server.post(
        "/v1/ask", {"question": QUESTION, "labels": ["public", "internal"]}, caller="analyst"
    )
    assert analyst.status_code == 200
    body = analyst.json()
    assert body["status"] == "computed", body["text"]
    assert body["provenance"]["labels"] == ["internal"]
    # Asking for a label above the ceiling is refused as for text.
    above = server.post("/v1/ask", {"question": QUESTION, "labels": ["internal"]}, caller="portal")
    assert above.status_code == 403


def test_mcp_serves_the_number_only_to_a_caller_with_its_labels(
    served: tuple[Server, Workspace],
) -> None:
    _, ws = served
    public = structured(call(ws, "ask", {"question": QUESTION}, "--caller", "portal"))
    _no_number(public)
    analyst = structured(
        call(
            ws,
            "ask",
            {"question": QUESTION, "labels": ["public", "internal"]},
            "--caller",
            "analyst",
        )
    )
    assert analyst["status"] == "computed", analyst["text"]
    assert analyst["provenance"]["labels"] == ["internal"]


def test_a_computed_answer_s_link_opens_its_reviewed_query_under_the_same_labels(
    served: tuple[Server, Workspace],
) -> None:
    """provenance.link: the catalog query at the activated revision, with the parameters and
    data date the answer used and the labels of the ask, so it opens as given; refused to
    labels that may not see its figures, to a caller whose ceiling is below the link's
    labels, and for a revision other than the activated one."""
    from urllib.parse import parse_qs, urlsplit

    server, _ = served
    labels = ["public", "internal"]
    body = server.post("/v1/ask", {"question": QUESTION, "labels": labels}, caller="analyst").json()
    provenance = body["provenance"]
    link = provenance["link"]
    assert link.startswith("/v1/catalog/query?")
    opened = server.get(link, caller="analyst")  # as given
    assert opened.status_code == 200, opened.text
    assert parse_qs(urlsplit(link).query)["labels"] == ["internal", "public"]
    view = opened.json()
    assert view["query_id"] == provenance["query_id"]
    assert view["revision"] == provenance["catalog_revision"] and view["sql"]
    assert view["asked"] == {
        "parameters": provenance["parameters"],
        "data_date": provenance["data_date"],
    }
    assert view["labels"] == ["internal"]
    for path, caller, status, code in (
        (relabel(link, ["public"]), "analyst", 403, "source_not_allowed"),
        (relabel(link, None), "portal", 403, "source_not_allowed"),
        (link, "portal", 403, "label_above_ceiling"),  # as given, above its ceiling
        (relabel(link, ["internal"]), "portal", 403, "label_above_ceiling"),
        (link.replace("revision=", "revision=0"), "analyst", 409, "revision_not_served"),
        (link.replace("query_id=", "query_id=x"), "analyst", 404, "source_not_found"),
        (link + "&parameters=[1]", "analyst", 422, "bad_request"),
    ):
        response = server.get(path, caller=caller)
        assert response.status_code == status, (path, response.text)
        assert response.json()["code"] == code
        assert provenance["sql"] not in response.text
    assert parse_qs(urlsplit(link).query)["query_id"] == [provenance["query_id"]]


def test_a_computed_answer_s_query_opens_over_mcp_as_its_link_does(
    served: tuple[Server, Workspace],
) -> None:
    """The MCP twin of GET /v1/catalog/query, catalog_query: the link's fields as arguments,
    the same view as the link opens over HTTP; the same refusals with their codes and what to
    do — an unknown query id, labels that may not see its figures, a revision not served, a
    caller whose ceiling is below the labels asked — and nothing of the query in them."""
    server, ws = served
    labels = ["public", "internal"]
    answer = structured(
        call(ws, "ask", {"question": QUESTION, "labels": labels}, "--caller", "analyst")
    )
    provenance = answer["provenance"]
    args = {
        "query_id": provenance["query_id"],
        "revision": provenance["catalog_revision"],
        "parameters": provenance["parameters"],
        "data_date": provenance["data_date"],
        "labels": labels,
    }

    async def body(client: ClientSession) -> list[types.CallToolResult]:
        return [
            await client.call_tool("catalog_query", args),
            await client.call_tool("catalog_query", {**args, "query_id": "x-no-such-query"}),
            await client.call_tool("catalog_query", {**args, "labels": ["public"]}),
            await client.call_tool("catalog_query", {**args, "revision": "0" * 40}),
        ]

    opened, unknown, hidden, moved = serve(ws, body, "--caller", "analyst")
    assert not opened.is_error, text_of(opened)
    view = structured(opened)
    assert view == server.get(provenance["link"], caller="analyst").json()
    assert view["query_id"] == provenance["query_id"] and view["sql"] == provenance["sql"]
    assert view["asked"] == {
        "parameters": provenance["parameters"],
        "data_date": provenance["data_date"],
    }
    above = call(ws, "catalog_query", args, "--caller", "portal")
    for result, code in (
        (unknown, "source_not_found"),
        (hidden, "source_not_allowed"),
        (moved, "revision_not_served"),
        (above, "label_above_ceiling"),
    ):
        assert result.is_error, (code, text_of(result))
        error = structured(result)
        assert error["code"] == code and error["problems"][0]["code"] == code, error
        assert error["problems"][0]["hint"], error
        assert provenance["sql"] not in text_of(result)
