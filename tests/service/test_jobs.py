"""The deep-analysis jobs over HTTP: queued in the state store's queue (thoth.state.jobs),
per caller, refused without a model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.answer.test_answer import QUESTION, Corpus
from tests.service.conftest import LLM_KEY_ENV, Server, finish_partial
from tests.service.test_guards import problem
from thoth.runtime import open_state
from thoth.state import JobQueue
from thoth.workspace import Workspace


@pytest.fixture(scope="module")
def with_model(
    workspace: tuple[Corpus, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    corpus, keys = workspace
    log = tmp_path_factory.mktemp("jobs") / "serve.log"
    served = Server(corpus.root, keys, log, env={LLM_KEY_ENV: "test-key"})
    try:
        yield served
    finally:
        served.stop()


def test_without_a_model_a_job_is_refused_and_asks_still_work(server: Server) -> None:
    body = problem(server.post("/v1/jobs", {"question": QUESTION}), 503, "agent_unavailable")
    assert LLM_KEY_ENV in body["message"]
    assert server.post("/v1/ask", {"question": QUESTION}).json()["status"] == "found"


def test_a_job_is_queued_for_its_caller_in_its_context(
    with_model: Server, workspace: tuple[Corpus, dict[str, str]]
) -> None:
    response = with_model.post("/v1/jobs", {"question": QUESTION}, "analyst")
    assert response.status_code == 202, response.text
    job = response.json()
    assert (job["status"], job["caller"], job["question"]) == ("queued", "analyst", QUESTION)
    # default ∩ ceiling, stored resolved
    assert job["request"] == {"labels": ["public"], "channel": None}
    ws = Workspace.open(workspace[0].root)
    with open_state(ws) as state:
        stored = JobQueue.on(state).get(job["id"])
    assert (stored.caller, stored.request) == ("analyst", job["request"])

    got = with_model.get(f"/v1/jobs/{job['id']}", "analyst").json()
    assert got["id"] == job["id"] and got["steps"] == []
    listed = with_model.get("/v1/jobs", "analyst").json()["jobs"]
    assert job["id"] in [j["id"] for j in listed]


def test_another_callers_job_does_not_exist_for_it(with_model: Server) -> None:
    job = with_model.post("/v1/jobs", {"question": QUESTION}, "analyst").json()
    problem(with_model.get(f"/v1/jobs/{job['id']}", "portal"), 404, "job_not_found")
    problem(with_model.post(f"/v1/jobs/{job['id']}/cancel", {}, "portal"), 404, "job_not_found")
    assert job["id"] not in [j["id"] for j in with_model.get("/v1/jobs", "portal").json()["jobs"]]
    problem(with_model.get("/v1/jobs/job_0123", "analyst"), 404, "job_not_found")
    problem(with_model.get("/v1/jobs/job_%2e%2e", "analyst"), 404, "job_not_found")


def test_cancel_a_queued_job_then_again(with_model: Server) -> None:
    job = with_model.post("/v1/jobs", {"question": QUESTION}, "analyst").json()
    cancelled = with_model.post(f"/v1/jobs/{job['id']}/cancel", {}, "analyst")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    problem(with_model.post(f"/v1/jobs/{job['id']}/cancel", {}, "analyst"), 409, "job_finished")


def test_a_job_meets_the_same_ceiling_and_validation(with_model: Server) -> None:
    problem(
        with_model.post("/v1/jobs", {"question": QUESTION, "labels": ["internal"]}),
        403,
        "label_above_ceiling",
    )
    body = problem(
        with_model.post("/v1/jobs", {"question": QUESTION, "channel": "nope"}), 422, "bad_request"
    )
    assert "nope" in body["message"]
    body = problem(
        with_model.post("/v1/jobs", {"question": QUESTION, "year": 2023}), 422, "bad_request"
    )
    assert body["problems"][0]["field"] == "year"
    problem(with_model.get("/v1/jobs", caller=None), 401, "unauthorized")


def test_job_ids_are_never_guessed_from_paths(tmp_path: Path) -> None:
    from thoth.service.operations import JOB_ID

    assert not JOB_ID.match("job_" + "0" * 23 + "g")
    assert not JOB_ID.match("job_%2e%2e")
    assert JOB_ID.match("job_" + "a" * 24)


def test_a_partial_job_is_served_as_its_documented_schema(
    with_model: Server, workspace: tuple[Corpus, dict[str, str]]
) -> None:
    """Issue 28, point 4: status, gaps, figures and what the answer rests on, in the API and
    in its OpenAPI schema (JobView)."""
    import json

    from thoth.service.models import JobView

    job = with_model.post("/v1/jobs", {"question": QUESTION}, "analyst").json()
    rests_on = "knowledge_search failed (index_unavailable): the answer rests on 1 wiki page"
    gap = {
        "tool": "knowledge_search",
        "code": "index_unavailable",
        "meaning": "the indexed documents not reached",
        "recovered": False,
    }
    result = {
        "answer": "12% (mercati/giappone.md)",
        "sources": [{"kind": "wiki_page", "path": "mercati/giappone.md"}],
        "gaps": [gap],
        "rests_on": rests_on,
        "figures": {"supported": ["12%"], "derived": [], "unsupported": []},
    }
    finish_partial(workspace[0].root, job["id"], "analyst", result)
    got = with_model.get(f"/v1/jobs/{job['id']}", "analyst").json()
    view = JobView.model_validate(got)
    assert view.status == "partial" and view.result is not None
    assert view.result.gaps[0].code == "index_unavailable" and view.error == rests_on
    schema = json.loads(
        (Path(__file__).resolve().parents[2] / "docs" / "openapi.json").read_text("utf-8")
    )
    statuses = schema["components"]["schemas"]["JobView"]["properties"]["status"]["enum"]
    assert "partial" in statuses
    route = schema["paths"]["/v1/jobs/{job_id}"]["get"]["responses"]["200"]
    assert route["content"]["application/json"]["schema"]["$ref"].endswith("/JobView")
