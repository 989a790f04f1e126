"""The curator's verbs on memories over HTTP (thoth.service.memories): a real `tht serve`, a
real registry and memory index on disk. Only a caller marked `curator = true` lists, retires
and merges; what it gets is what `tht memory list|retire|merge --json` print; a retired or
merged-away memory is never proposed again at F2; every refusal leaves the registry as it was."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_embeddings import FakeEmbeddingServer
from tests.service.conftest import THT, Server, prepare_workspace
from tests.service.test_sessions_http import ANALYST, decide, new_session
from thoth.runtime import memory_registry_path
from thoth.service.registry import add_caller
from thoth.workspace import Workspace

CURATOR = "curator"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, embeddings: FakeEmbeddingServer
) -> Iterator[Server]:
    corpus, keys = prepare_workspace(tmp_path_factory.mktemp("memories"), embeddings)
    _, keys[CURATOR] = add_caller(corpus.root, CURATOR, ["public", "internal"], curator=True)
    server = Server(corpus.root, keys, tmp_path_factory.mktemp("log") / "serve.log")
    try:
        yield server
    finally:
        server.stop()


def registry_bytes(root: Path) -> bytes:
    path = memory_registry_path(Workspace.open(root))
    return path.read_bytes() if path.exists() else b""


def promoted(server: Server, question: str, subject: str, detail: str) -> str:
    """A memory promoted through a session's F8 checklist over HTTP; its id."""
    session_id = new_session(server, question)
    assert decide(server, session_id, 0, subject, detail=detail).status_code == 200
    done = server.post(
        f"/v1/sessions/{session_id}/checklist",
        {"base": 1, "items": [{"seq": 1, "action": "promote"}]},
        caller=ANALYST,
    )
    assert done.status_code == 200, done.text
    return str(done.json()["saved"][0]["memory_id"])


def proposed(server: Server, question: str) -> list[str]:
    session_id = new_session(server, question)
    found = server.get(f"/v1/sessions/{session_id}/proposals", caller=ANALYST)
    assert found.status_code == 200, found.text
    return [p["memory_id"] for p in found.json()["results"]]


def refused(response: Any, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["code"] == code, response.text


def test_only_a_curator_curates_and_a_refusal_changes_nothing(served: Server) -> None:
    memory = promoted(served, "Quanti ricoveri nel 2023?", "ricovero", "almeno una notte")
    before = registry_bytes(served.root)
    refused(served.get("/v1/memories", caller=ANALYST), 403, "not_a_curator")
    body = {"memory_id": memory, "why": "troppo in fretta"}
    refused(served.post("/v1/memories/retire", body, caller=ANALYST), 403, "not_a_curator")
    merge = {"keep": memory, "drop": ["mem-9999"], "why": "uguali"}
    refused(served.post("/v1/memories/merge", merge, caller=ANALYST), 403, "not_a_curator")
    assert registry_bytes(served.root) == before


def test_the_listing_is_what_the_cli_prints(served: Server) -> None:
    promoted(served, "Quanti accessi in PS?", "accesso in PS", "ogni arrivo al triage")
    listed = served.get("/v1/memories", caller=CURATOR)
    assert listed.status_code == 200, listed.text
    done = subprocess.run(
        [*THT, "memory", "list", "--json", "-w", str(served.root)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert listed.json() == json.loads(done.stdout)
    assert all(m["state"] == "active" for m in listed.json()["memories"])


def test_retired_and_merged_away_memories_are_never_proposed_again(served: Server) -> None:
    question = "Quanti pazienti con codice rosso al triage?"
    red = promoted(served, question, "codice rosso", "emergenza, accesso immediato")
    twin = promoted(served, question, "codice rosso al triage", "emergenza: accesso immediato")
    assert {red, twin} <= set(proposed(served, question))

    merged = served.post(
        "/v1/memories/merge", {"keep": red, "drop": [twin], "why": "la stessa"}, caller=CURATOR
    )
    assert merged.status_code == 200, merged.text
    assert merged.json()["action"] == "merged" and merged.json()["by"] == CURATOR
    offered = proposed(served, question)
    assert twin not in offered and red in offered

    retired = served.post(
        "/v1/memories/retire", {"memory_id": red, "why": "definizione errata"}, caller=CURATOR
    )
    assert retired.status_code == 200, retired.text
    assert retired.json()["action"] == "retired" and retired.json()["memory_id"] == red
    assert red not in proposed(served, question)
    listing = {
        m["memory_id"]: m for m in served.get("/v1/memories", caller=CURATOR).json()["memories"]
    }
    assert listing[red]["state"] == "retired"
    assert listing[twin]["merged_into"] == red


def test_bad_curation_is_refused_with_its_code_and_changes_nothing(served: Server) -> None:
    memory = promoted(
        served, "Quante dimissioni volontarie?", "dimissione volontaria", "contro il parere"
    )
    before = registry_bytes(served.root)
    post = served.post
    refused(post("/v1/memories/retire", {"memory_id": "mem-9999", "why": "x"}, caller=CURATOR),
            422, "not_found")  # fmt: skip
    refused(post("/v1/memories/merge", {"keep": memory, "drop": [memory], "why": "x"},
                 caller=CURATOR), 422, "merge_into_itself")  # fmt: skip
    refused(post("/v1/memories/retire", {"memory_id": memory}, caller=CURATOR), 422, "bad_request")
    assert registry_bytes(served.root) == before
    assert post("/v1/memories/retire", {"memory_id": memory, "why": "x"}, caller=CURATOR).is_success
    again = registry_bytes(served.root)
    refused(post("/v1/memories/retire", {"memory_id": memory, "why": "x"}, caller=CURATOR),
            422, "not_active")  # fmt: skip
    assert registry_bytes(served.root) == again
