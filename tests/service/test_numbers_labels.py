"""Issue 23, point 2 over the wire: a number carries the labels of its store and query, and a
caller without them gets no number over HTTP (`tht serve`) nor MCP (`tht mcp`), exactly as
for a document it may not see. A real subprocess of each, over the analytics test workspace
(its SQLite store, its catalog, its one document synced with the bundled embedder)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.analytics.conftest import make_analytics_workspace
from tests.conftest import commit_all, git
from tests.service.conftest import Server
from tests.service.test_mcp import call, structured
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
