"""The agent's knowledge and analytics tools through the real worker, on the analytics
workspace of tests/analytics (a published generation, an activated catalog, a read-only
SQLite store): the caller's labels, catalog queries and free read-only SQL with their data
date as sources, a write refused."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.agent.conftest import PAGES
from tests.analytics.conftest import AnalyticsWorkspace, analytics_ws  # noqa: F401
from tests.fake_llm import FakeLLMServer, ToolCallScript
from thoth.agent import Worker, submit_job
from thoth.cli.main import app
from thoth.config import LLMSettings
from thoth.llm.openai_chat import OpenAIChat
from thoth.runtime import open_runtime
from thoth.state import Job, JobQueue


@pytest.fixture
def worker(
    analytics_ws: AnalyticsWorkspace,  # noqa: F811
    llm: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Worker]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    for rel, text in PAGES.items():
        analytics_ws.write(f"wiki/{rel}", text)
    analytics_ws.serve_wiki()
    settings = LLMSettings(base_url=llm.url + "/v1", model="fake-model", timeout_seconds=20)
    with open_runtime(analytics_ws.ws, analytics_ws.embedder) as rt:
        runner = Worker(rt, id="w1", client=OpenAIChat(settings, "test-key"))
        try:
            yield runner
        finally:
            runner.close()


def run(worker: Worker, labels: list[str] | None = None) -> tuple[Job, list[dict[str, Any]]]:
    job = submit_job(worker.settings, worker.queue, "Analisi dei ricoveri", labels=labels)
    assert worker.run(once=True) == 1
    steps = worker.queue.steps(job.id)
    return worker.queue.get(job.id), [s.data for s in steps if s.kind == "tool"]


def result(step: dict[str, Any]) -> Any:
    return json.loads(step["result"])


def test_catalog_sql_and_knowledge_are_cited_with_their_data_date(
    worker: Worker, llm: FakeLLMServer
) -> None:
    llm.reply_tool_calls(
        ToolCallScript("knowledge_search", {"query": "minuti di attesa codice verde"}),
        ToolCallScript("catalog_list", {}),
        ToolCallScript("catalog_run", {"query_id": "ricoveri-per-reparto", "parameters": {"anno": 2024}}),
        ToolCallScript("run_sql", {"sql": "SELECT count(*) AS n FROM analytics.v_ricoveri"}),
        ToolCallScript("run_sql", {"sql": "DELETE FROM analytics.v_ricoveri"}),
        ToolCallScript("catalog_run", {"query_id": "inventata", "parameters": {}}),
    )  # fmt: skip
    llm.reply("Sintesi: attesa massima 120 minuti; ricoveri per reparto come da query.")
    job, tools = run(worker)
    # The refused write and the unknown query are gaps: the answer is partial, saying so.
    assert job.status == "partial" and job.result is not None
    assert [(g["code"], g["recovered"]) for g in job.result["gaps"]] == [
        ("sql_refused", False),
        ("unknown_query", False),
    ]
    # The served wiki is indexed too: the search may bring its fragments beside the document.
    assert job.error is not None and job.error.startswith(
        "run_sql was refused (sql_refused); catalog_run was refused (unknown_query): the "
        "answer rests on 1 document fragment, "
    )
    assert job.error.endswith("1 catalog query, 1 SQL query")
    found, listed, ran, counted, write, unknown = tools
    assert result(found)["status"] == "found"
    assert "120" in result(found)["fragments"][0]["text"]
    assert "ricoveri-per-reparto" in [q["id"] for q in result(listed)["queries"]]
    assert result(ran)["rows"] and result(ran)["data_date"]
    assert result(counted)["columns"] == ["n"] and result(counted)["data_date"]
    assert write["error_code"] == "sql_refused" and unknown["error_code"] == "unknown_query"
    sources = job.result["sources"]
    kinds = [s["kind"] for s in sources]
    assert kinds[0] == "document" and kinds[-2:] == ["catalog_query", "sql"]
    assert set(kinds[1:-2]) <= {"wiki"}, kinds
    catalog = sources[-2]
    assert catalog["query_id"] == "ricoveri-per-reparto" and catalog["data_date"]
    assert catalog["catalog_revision"] and catalog["parameters"]["anno"] == 2024
    assert sources[-1]["sql"] == "SELECT count(*) AS n FROM analytics.v_ricoveri"
    assert sources[0]["doc_id"] == "docs:docs/attese.md"  # as `tht docs sync` names it
    # Each source a reader can open: the passage of the fragment, the reviewed query.
    assert sources[0]["link"].startswith("/v1/passage?doc_id=docs%3Adocs%2Fattese.md&")
    assert catalog["link"].startswith("/v1/catalog/query?query_id=ricoveri-per-reparto&")


def test_the_knowledge_search_runs_under_the_job_s_labels(
    worker: Worker, llm: FakeLLMServer
) -> None:
    llm.reply_tool_calls(ToolCallScript("knowledge_search", {"query": "attesa codice verde"}))
    llm.reply("Nulla.")
    job, [search] = run(worker, labels=["internal"])
    assert result(search)["status"] == "nothing_found" and result(search)["fragments"] == []
    assert job.status == "failed" and job.error_code == "no_sources"


def test_a_failed_search_is_a_coded_refusal_not_an_empty_result(
    worker: Worker,
    llm: FakeLLMServer,
    analytics_ws: AnalyticsWorkspace,  # noqa: F811
) -> None:
    llm.reply_tool_calls(ToolCallScript("knowledge_search", {"query": "attesa"}))
    llm.reply("Nulla.")
    for shard in (analytics_ws.root / ".thoth" / "index").rglob("*"):
        if shard.is_file():
            shard.write_bytes(b"damaged")  # against the files its sync sealed: index_corrupt
    _, [search] = run(worker)
    assert search["error_code"] == "index_corrupt"
    assert "the knowledge search failed (not an empty result)" in result(search)["error"]["message"]


def test_a_job_whose_search_failed_ends_partial_saying_so(
    worker: Worker,
    llm: FakeLLMServer,
    analytics_ws: AnalyticsWorkspace,  # noqa: F811
) -> None:
    """The case the issue was filed on: the knowledge search is unavailable, the model answers
    from one wiki page. The job ends partial, its JSON says what it rests on."""
    llm.reply_tool_calls(ToolCallScript("knowledge_search", {"query": "Giappone"}))
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply("Cresce del 12% nel 2024 (mercati/giappone.md).")
    for shard in (analytics_ws.root / ".thoth" / "index").rglob("*"):
        if shard.is_file():
            shard.write_bytes(b"damaged")
    job, _ = run(worker)
    assert job.status == "partial" and job.error_code == "index_corrupt"
    assert job.error == ("knowledge_search failed (index_corrupt): the answer rests on 1 wiki page")
    assert job.result is not None
    [gap] = job.result["gaps"]
    assert gap["tool"] == "knowledge_search" and not gap["recovered"]
    assert gap["meaning"].startswith("the indexed documents not reached")
    shown = job.as_dict()
    assert shown["status"] == "partial" and shown["result"]["rests_on"] == job.error
    from typer.testing import CliRunner

    from thoth.cli.main import app

    printed = CliRunner().invoke(
        app, ["agent", "show", job.id, "-w", str(analytics_ws.root)], env={"COLUMNS": "200"}
    )
    assert printed.exit_code == 0, printed.output
    text = printed.output
    assert "PARTIAL (index_corrupt): knowledge_search failed" in text
    assert text.index("PARTIAL") < text.index("Cresce del 12%") < text.index("Gaps")
    # run afresh: a new queued job, the old one kept with its transcript
    retried = CliRunner().invoke(
        app, ["agent", "retry", job.id, "-w", str(analytics_ws.root), "--json"]
    )
    assert retried.exit_code == 0, retried.output
    again = json.loads(retried.stdout)
    assert again["status"] == "queued" and again["request"]["retry_of"] == job.id
    assert worker.queue.get(job.id).status == "partial" and worker.queue.steps(job.id)
    refused = CliRunner().invoke(
        app, ["agent", "retry", again["id"], "-w", str(analytics_ws.root), "--json"]
    )
    assert refused.exit_code == 1 and json.loads(refused.stdout)["code"] == "job_not_retryable"


def test_a_worker_recovers_the_jobs_of_dead_workers(worker: Worker) -> None:
    queue: JobQueue = worker.queue
    job = submit_job(worker.settings, queue, "q")
    assert queue.claim("dead", 0.01) is not None
    time.sleep(0.05)
    [recovered] = worker.recover()
    assert recovered.id == job.id and recovered.status == "queued"


def test_a_figure_from_the_analytics_store_carries_its_data_date(
    worker: Worker,
    llm: FakeLLMServer,
    analytics_ws: AnalyticsWorkspace,  # noqa: F811
) -> None:
    """Issue 28, point 3: each figure the answer takes from a catalog query or SQL result is
    listed with that result's data date; a figure from a document is not dated."""
    llm.reply_tool_calls(
        ToolCallScript("knowledge_search", {"query": "minuti di attesa codice verde"}),
        ToolCallScript("run_sql", {"sql": "SELECT 4217 AS n FROM analytics.v_ricoveri LIMIT 1"}),
    )  # fmt: skip
    llm.reply("Attesa massima 120,0 minuti; 4.217 ricoveri nel periodo.")
    job, tools = run(worker)
    assert job.status == "completed" and job.result is not None
    date = result(tools[1])["data_date"]
    assert date
    assert job.result["figures"]["supported"] == ["120,0", "4.217"]
    assert job.result["figures"]["dated"] == [
        {"figure": "4.217", "data_date": date, "kind": "sql", "query_id": None}
    ]
    shown = CliRunner().invoke(app, ["agent", "show", job.id, "-w", str(analytics_ws.root)])
    assert shown.exit_code == 0, shown.output
    assert f"Figures from the analytics store\n  - 4.217: SQL, data as of {date}" in shown.output
