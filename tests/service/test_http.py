"""The HTTP API end to end: a real `tht serve` process, real storage, httpx as the caller."""

from __future__ import annotations

import json
import subprocess

from tests.answer.test_answer import QUESTION, Corpus
from tests.service.conftest import THT, Server
from thoth.runtime import open_state
from thoth.state import LoggedAnswer
from thoth.workspace import Workspace

PROBLEM = "application/problem+json"


def answer_log(corpus: Corpus) -> list[LoggedAnswer]:
    ws = Workspace.open(corpus.root)
    with open_state(ws) as state:
        return state.list_answers(ws.settings.workspace, 200, None)


def test_health_needs_no_key_and_ready_names_every_component(server: Server) -> None:
    assert server.get("/v1/health", caller=None).json() == {"ok": True}
    response = server.get("/v1/ready")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["ready"] is True
    assert set(body["components"]) == {"state", "index", "embedder", "analytics"}
    assert body["components"]["analytics"] == {"ok": True, "detail": "not configured"}
    assert all(c["ok"] for c in body["components"].values())


def test_ask_found_is_the_answer_object_of_tht_ask_json(server: Server) -> None:
    response = server.post("/v1/ask", {"question": QUESTION})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["status"] == "found"
    assert {s["title"] for s in answer["sources"]} >= {"Pediatria", "Rapporto PS 2023"}
    cli = subprocess.run(
        [*THT, "ask", QUESTION, "--json", "--workspace", str(server.root)],
        capture_output=True,
        text=True,
        check=False,
    )
    printed = json.loads(cli.stdout)
    assert printed.pop("ok") is True
    assert set(printed) == set(answer)
    for key in ("status", "sources", "text", "dropped", "degraded", "error_code"):
        assert printed[key] == answer[key], key


def test_ask_nothing_found_keeps_an_empty_sources_list(server: Server) -> None:
    response = server.post("/v1/ask", {"question": QUESTION, "year": 1990})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert (answer["status"], answer["sources"]) == ("nothing_found", [])


def test_the_caller_goes_to_the_answer_log(
    server: Server, workspace: tuple[Corpus, dict[str, str]]
) -> None:
    answer = server.post("/v1/ask", {"question": QUESTION}, caller="analyst").json()
    logged = {row.id: row for row in answer_log(workspace[0])}
    assert logged[answer["id"]].caller == "analyst"
    assert logged[answer["id"]].request["labels"] == ["public"]  # default ∩ ceiling


def test_knowledge_search_returns_fragments_with_their_source_and_status(server: Server) -> None:
    response = server.post("/v1/knowledge/search", {"query": QUESTION, "limit": 2})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "found" and body["error_code"] is None
    assert len(body["fragments"]) == 2
    first = body["fragments"][0]
    for key in ("source", "title", "heading_path", "kind", "score", "labels", "doc_id", "text"):
        assert key in first, key
    assert all(f["labels"] == ["public"] for f in body["fragments"])
    nothing = server.post("/v1/knowledge/search", {"query": QUESTION, "year": 1990}).json()
    assert (nothing["status"], nothing["fragments"]) == ("nothing_found", [])


def test_evidence_search_is_the_fail_closed_outcome(server: Server) -> None:
    # This workspace never activated a revision: unavailable, with the reader's stable code.
    response = server.post(
        "/v1/evidence/search", {"query": "ricovero", "purpose": "disambiguation"}, "analyst"
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["code"] == "revision_not_activated"
    assert body["results"] == []


def test_show_context_lists_what_the_answerer_read_with_ids_docs_show_takes(server: Server) -> None:
    """Issue 25, point 4: `show_context` (HTTP), `--show-context` (CLI): every fragment the
    answerer received, whole, with the doc id `tht docs show` accepts and its branch scores."""
    plain = server.post("/v1/ask", {"question": QUESTION}).json()
    assert "context" not in plain
    answer = server.post("/v1/ask", {"question": QUESTION, "show_context": True}).json()
    context = answer["context"]
    assert context and [c["marker"] for c in context] == sorted(c["marker"] for c in context)
    first = context[0]
    assert set(first) >= {"doc_id", "id", "page", "score", "dense_rank", "bm25_rank", "text"}
    assert {c["doc_id"] for c in context} <= {s["doc_id"] for s in answer["sources"]}
    shown = subprocess.run(
        [*THT, "docs", "show", first["doc_id"], "--json", "--workspace", str(server.root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    texts = [f["read_text"] for f in json.loads(shown.stdout)["fragments"]]
    assert first["text"] in texts  # whole, not cut
    cli = subprocess.run(
        [*THT, "ask", QUESTION, "--show-context", "--workspace", str(server.root)],
        capture_output=True,
        text=True,
        check=False,
        env={**__import__("os").environ, "COLUMNS": "60"},
    )
    assert cli.returncode == 0, cli.stderr
    assert f"[{first['marker']}] {first['doc_id']}" in cli.stdout
    assert "Context:" in cli.stdout and "tht docs show" in cli.stdout


def test_feedback_is_stored_for_an_answer_the_caller_was_given_and_refused_otherwise(
    server: Server, workspace: tuple[Corpus, dict[str, str]]
) -> None:
    answer = server.post("/v1/ask", {"question": QUESTION}).json()
    body = {"answer_id": answer["id"], "kind": "incomplete", "note": "the 2022 figure is missing"}
    response = server.post("/v1/feedback", body)
    assert response.status_code == 201, response.text
    saved = response.json()["feedback"]
    assert (saved["answer_id"], saved["caller"], saved["kind"]) == (
        answer["id"],
        "portal",
        "incomplete",
    )
    for sent, caller, status, code in (
        (body, "analyst", 404, "answer_not_found"),  # another caller's answer
        ({**body, "answer_id": "ans-000000000000"}, "portal", 404, "answer_not_found"),
        ({**body, "kind": "meh"}, "portal", 422, "feedback_kind_unknown"),
        ({**body, "note": "<script>alert(1)</script>"}, "portal", 422, "feedback_note_markup"),
        ({**body, "note": "x" * 3000}, "portal", 422, "feedback_note_too_long"),
        ({**body, "note": "x" * 1_000_000}, "portal", 413, "body_too_large"),
        ({**body, "extra": 1}, "portal", 422, "bad_request"),
    ):
        refused = server.post("/v1/feedback", sent, caller=caller)
        assert refused.status_code == status, refused.text
        assert refused.headers["content-type"].startswith(PROBLEM)
        problem = refused.json()
        assert code in {problem["code"], *(p["code"] for p in problem["problems"])}, problem
    ws = Workspace.open(workspace[0].root)
    with open_state(ws) as state:
        mine = [
            f for f in state.list_feedback(ws.settings.workspace) if f.answer_id == answer["id"]
        ]
    assert [(f.kind, f.caller, f.note) for f in mine] == [
        ("incomplete", "portal", "the 2022 figure is missing")
    ]


def test_metrics_are_the_answer_log_in_the_prometheus_format(
    server: Server, workspace: tuple[Corpus, dict[str, str]]
) -> None:
    """Parsed by prometheus_client's own parser; the counts are the answer log's."""
    from prometheus_client.parser import text_string_to_metric_families

    answer = server.post("/v1/ask", {"question": QUESTION}, caller="analyst").json()
    server.post("/v1/feedback", {"answer_id": answer["id"], "kind": "wrong"}, caller="analyst")
    assert server.get("/metrics", caller=None).status_code == 401
    response = server.get("/metrics", caller="portal")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }
    logged = answer_log(workspace[0])
    for caller in ("portal", "analyst"):
        for status in {a.status for a in logged if a.caller == caller}:
            key = ("thoth_answers_total", (("caller", caller), ("status", status)))
            assert samples[key] == sum(a.caller == caller and a.status == status for a in logged)
    assert samples[("thoth_feedback_total", (("caller", "analyst"), ("kind", "wrong")))] == 1
    assert ("thoth_answers_degraded_total", (("caller", "analyst"),)) in samples
