"""The web page in a real browser: Debian's Chromium, driven by Playwright, against a real
`tht serve` over a small published workspace. Every assertion is on what a person sees:
visible text and the classes (colours) the page gives it.

Without Chromium at /usr/bin/chromium the tests skip saying so; under CI (CI set) they fail:
.ci/run installs it. Screenshots go to test-artifacts/web/ (gitignored)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, expect

from tests.conftest import WorkspaceFactory
from tests.fake_embeddings import FakeEmbeddingServer
from tests.service.browser import ask_in_page, chromium, expect_unreachable, screenshot
from tests.service.conftest import Server, finish_partial
from tests.service.web_workspace import (
    CAVEAT,
    CLAIM,
    FOUND_QUESTION,
    MARKUP_QUESTION,
    MARKUP_TEXT,
    PAGE_ID,
    PAGE_TITLE,
    answering_workspace,
    index_dirs,
)
from thoth.answer.wording import ITALIAN
from thoth.cli.demo_service import running_app as in_thread
from thoth.runtime import open_state
from thoth.service.registry import add_caller
from thoth.service.web import add_web_routes
from thoth.state import JobQueue
from thoth.workspace import Workspace

pytestmark = pytest.mark.e2e

CALLER = "web-page"
CEILING = ["public", "confidential"]  # "internal" is above it: the refused label
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Thoth Tests",
    "GIT_AUTHOR_EMAIL": "tests@thoth.invalid",
    "GIT_COMMITTER_NAME": "Thoth Tests",
    "GIT_COMMITTER_EMAIL": "tests@thoth.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
# The colours a person tells the statuses apart by (app.css): nothing found is grey and
# dashed, a failed search red and framed.
NOTHING_FOUND_BG = "rgb(238, 240, 242)"
FAILED_BG = "rgb(253, 232, 232)"
CAVEAT_BG = "rgb(255, 244, 214)"
WORKER_USAGE = {"turns": 2, "tool_calls": 3, "tokens": 1800, "seconds": 12.4}


@dataclass(frozen=True)
class Site:
    server: Server
    key: str
    root: Path

    @property
    def url(self) -> str:
        return self.server.url + "/"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as opened:
        yield opened


def _site(base: Path) -> Iterator[Site]:
    with pytest.MonkeyPatch.context() as mp, FakeEmbeddingServer(dim=8) as embeddings:
        for var, value in GIT_IDENTITY.items():
            mp.setenv(var, value)
        ws = answering_workspace(WorkspaceFactory(base), embeddings.url)
        _, key = add_caller(ws.root, CALLER, CEILING)
        server = Server(ws.root, {CALLER: key}, base / "serve.log")
        try:
            yield Site(server, key, ws.root)
        finally:
            server.stop()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    yield from _site(tmp_path_factory.mktemp("web"))


@pytest.fixture
def damaged_site(tmp_path: Path) -> Iterator[Site]:
    """A site of its own whose index generations are deleted once it serves."""
    for site in _site(tmp_path):
        for generation in index_dirs(Workspace.open(site.root)):
            shutil.rmtree(generation)
        yield site


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    try:
        yield context.new_page()
    finally:
        context.close()


def ask(page: Page, site: Site, question: str, *, labels: str = "", key: str = "") -> None:
    ask_in_page(page, site.url, key or site.key, question, labels=labels)


def status_box(page: Page) -> tuple[str, str]:
    return page.inner_text("#status-word"), page.get_attribute("#answer-status", "class") or ""


def test_found_shows_the_status_the_sources_and_the_caveat_next_to_its_claim(
    page: Page, site: Site
) -> None:
    ask(page, site, FOUND_QUESTION, labels="public")
    expect(page.locator("#status-word")).to_have_text("Found")
    expect(page.locator("#answer-status")).to_have_class(re.compile(r"\bstatus-found\b"))
    # The flagged figure and its warning: the caveat sits inside the claim it qualifies.
    claim = page.locator("#answer-text li.claim", has_text=CLAIM)
    expect(claim).to_have_count(1)
    inline = claim.locator(".caveat-inline")
    expect(inline).to_be_visible()
    expect(inline).to_contain_text(CAVEAT)
    expect(inline).to_have_css("background-color", CAVEAT_BG)
    # The sources' caveats, highlighted under their heading.
    expect(page.locator(".caveats .caveats-heading")).to_have_text(ITALIAN.caveats_heading)
    expect(page.locator(".caveats .caveat")).to_contain_text(CAVEAT)
    # The sources: the title a person reads, the document id to go back to it, and [1]
    # in the text leads to source 1.
    first = page.locator("#sources li#source-1")
    expect(first).to_contain_text(PAGE_TITLE)
    # ... with the Git revision its text was read at.
    expect(first.locator(".source-id")).to_have_text(
        re.compile(re.escape(PAGE_ID) + r" @ [0-9a-f]{12}$")
    )
    expect(claim.locator('a.marker[href="#source-1"]').first).to_have_text("[1]")
    expect(page.locator("#no-sources")).to_be_hidden()
    expect(page.locator("#answer-id")).to_contain_text("ans-")
    screenshot(page, "found-with-caveat")


def test_a_source_opens_its_highlighted_passage_and_a_forged_link_is_refused(
    page: Page, site: Site
) -> None:
    """The button under a source GETs its link with the labels the question was asked with:
    the passage shows the claim highlighted; a link whose revision was altered on its way
    (rewritten here in the answer the page receives) is refused, its code shown as text."""
    ask(page, site, FOUND_QUESTION, labels="public")
    page.locator("#sources li#source-1 .source-open").click()
    highlighted = page.locator("#passage .passage-fragment.highlight")
    expect(highlighted).to_contain_text(CLAIM)
    expect(page.locator("#passage-title")).to_have_text(PAGE_TITLE)
    expect(page.locator("#passage-where")).to_contain_text(PAGE_ID)
    screenshot(page, "passage-highlighted")

    def forge(route: Any) -> None:
        response = route.fetch()
        answer = response.json()
        for source in answer.get("sources", []):
            source["link"] = source["link"].replace("revision=", "revision=0000")
        route.fulfill(response=response, json=answer)

    page.route("**/v1/ask", forge)
    ask(page, site, FOUND_QUESTION, labels="public")
    with page.expect_response(lambda r: "/v1/passage" in r.url) as opened:
        page.locator("#sources li#source-1 .source-open").click()
    assert opened.value.status == 409
    expect(page.locator("#passage-where")).to_contain_text("revision_not_served")
    expect(page.locator("#passage .passage-fragment")).to_have_count(0)
    expect(page.locator("#passage")).to_have_class(re.compile(r"\bpassage-refused\b"))


def test_a_reader_reports_the_answer_from_the_page(page: Page, site: Site) -> None:
    """The buttons under an answer send its id, the kind and the note; a note with markup is
    refused with its code, shown as text, and nothing of it is stored."""
    ask(page, site, FOUND_QUESTION, labels="public")
    answer_id = page.inner_text("#answer-id").removeprefix("Answer id ").strip()
    page.fill("#feedback-note", "<b>the 2024 figure</b> is missing")
    with page.expect_response(lambda r: r.url.endswith("/v1/feedback")):
        page.click("#feedback-form button[value=incomplete]")
    expect(page.locator("#feedback-message")).to_contain_text("feedback_note_markup")
    expect(page.locator("#feedback-message b")).to_have_count(0)  # the markup as text
    page.fill("#feedback-note", "the 2024 figure is missing")
    with page.expect_response(lambda r: r.url.endswith("/v1/feedback")):
        page.click("#feedback-form button[value=incomplete]")
    expect(page.locator("#feedback-message")).to_contain_text("curators' queue")
    screenshot(page, "feedback-recorded")
    ws = Workspace.open(site.root)
    with open_state(ws) as state:
        mine = [f for f in state.list_feedback(ws.settings.workspace) if f.answer_id == answer_id]
    assert [(f.kind, f.caller, f.note) for f in mine] == [
        ("incomplete", CALLER, "the 2024 figure is missing")
    ]


def test_nothing_found_says_so_in_its_own_words_and_colour(page: Page, site: Site) -> None:
    # No document carries "confidential": the search runs and finds nothing.
    ask(page, site, FOUND_QUESTION, labels="confidential")
    word, classes = status_box(page)
    assert word == "Nothing found" and "status-nothing_found" in classes
    expect(page.locator("#status-detail")).to_contain_text("The search ran")
    expect(page.locator("#answer-status")).to_have_css("background-color", NOTHING_FOUND_BG)
    expect(page.locator("#answer-text")).to_have_text(ITALIAN.nothing_found)
    expect(page.locator("#no-sources")).to_have_text(
        "No source: nothing in the sources you may read answers the question."
    )
    expect(page.locator("#sources li")).to_have_count(0)
    screenshot(page, "nothing-found")


def test_failed_search_is_not_nothing_found(page: Page, damaged_site: Site) -> None:
    ask(page, damaged_site, FOUND_QUESTION, labels="public")
    word, classes = status_box(page)
    assert word == "Search failed" and "status-failed" in classes, (word, classes)
    assert "status-nothing_found" not in classes
    expect(page.locator("#status-detail")).to_contain_text("not an empty result")
    expect(page.locator("#status-detail")).to_contain_text("code index_unavailable")
    expect(page.locator("#answer-status")).to_have_css("background-color", FAILED_BG)
    assert FAILED_BG != NOTHING_FOUND_BG
    expect(page.locator("#answer-text")).not_to_have_text(ITALIAN.nothing_found)
    expect(page.locator("#no-sources")).to_have_text(
        "No source: the sources could not be consulted."
    )
    screenshot(page, "search-failed")


def test_a_label_above_the_ceiling_is_refused_by_name(page: Page, site: Site) -> None:
    ask(page, site, FOUND_QUESTION, labels="public, internal")
    word, classes = status_box(page)
    assert word == "Label refused" and "status-label_refused" in classes, (word, classes)
    detail = page.locator("#status-detail")
    expect(detail).to_contain_text("internal")
    expect(detail).to_contain_text(CALLER)
    expect(page.locator("#answer-text")).to_be_empty()
    expect(page.locator("#sources-block")).to_be_hidden()
    screenshot(page, "label-refused")


def test_markup_in_a_document_is_shown_as_text_never_run(page: Page, site: Site) -> None:
    ask(page, site, MARKUP_QUESTION, labels="public")
    expect(page.locator("#status-word")).to_have_text("Found")
    expect(page.locator("#answer-text")).to_contain_text(MARKUP_TEXT)
    expect(page.locator("#answer-text img")).to_have_count(0)
    expect(page.locator("#answer-text b")).to_have_count(0)
    assert page.evaluate("document.body.dataset.pwned") is None


def test_a_wrong_key_is_not_authorised(page: Page, site: Site) -> None:
    ask(page, site, FOUND_QUESTION, key="not-a-key-anyone-holds")
    word, classes = status_box(page)
    assert word == "Not authorised" and "status-unauthorized" in classes, (word, classes)
    expect(page.locator("#answer-text")).to_be_empty()


def test_the_key_stays_in_the_tab_only(browser: Browser, site: Site) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(site.url)
        page.fill("#api-key", site.key)
        page.dispatch_event("#api-key", "change")
        page.reload()
        expect(page.locator("#api-key")).to_have_value(site.key)
        # sessionStorage: another tab (another session) does not see it.
        other = context.new_page()
        other.goto(site.url)
        expect(other.locator("#api-key")).to_have_value("")
    finally:
        context.close()


def test_the_jobs_panel_lists_the_callers_jobs_with_their_progress(page: Page, site: Site) -> None:
    ws = Workspace.open(site.root)
    name = ws.settings.workspace
    context = {"labels": ["public"], "channel": None}
    with open_state(ws) as state:
        queue = JobQueue.on(state)
        running = queue.create(name, CALLER, "Confronta i ricoveri urgenti 2023 e 2024", context)
        assert queue.claim("web-test-worker", 600) is not None
        queue.add_step(running.id, "web-test-worker", "tool", {"tool": "wiki_search"}, WORKER_USAGE)
        waiting = queue.create(name, CALLER, "Quali reparti hanno più trasferimenti?", context)
        queue.create(name, "someone-else", "Una domanda di un altro chiamante", context)
    page.goto(site.url)
    page.fill("#api-key", site.key)
    page.dispatch_event("#api-key", "change")
    rows = page.locator("#jobs tbody tr.job")
    expect(rows).to_have_count(2)  # this caller's jobs only
    shown = page.locator(f'#jobs tr[data-job="{running.id}"]')
    expect(shown.locator(".job-status")).to_have_text("running")
    expect(shown.locator(".job-progress")).to_have_text("2 model turns, 3 tool calls, 12 s")
    queued = page.locator(f'#jobs tr[data-job="{waiting.id}"]')
    expect(queued.locator(".job-progress")).to_have_text("waiting for a worker")
    queued.locator("button.job-cancel").click()
    expect(queued.locator(".job-status")).to_have_text("cancelled")
    expect(queued.locator("button.job-cancel")).to_have_count(0)
    screenshot(page, "jobs")


def test_a_partial_job_is_marked_before_its_answer(page: Page, site: Site) -> None:
    """Issue 28: a job whose answer was written after a failed call shows, before the answer,
    that it is partial and what it could not reach."""
    rests_on = "knowledge_search failed (index_unavailable): the answer rests on 1 wiki page"
    result = {
        "answer": "Attesa media 41 minuti (pronto-soccorso.md).",
        "sources": [{"kind": "wiki_page", "path": "pronto-soccorso.md"}],
        "gaps": [{"tool": "knowledge_search", "code": "index_unavailable"}],
        "rests_on": rests_on,
        "figures": {
            "supported": ["1.250"],
            "derived": [],
            "unsupported": [],
            "dated": [
                {
                    "figure": "1.250",
                    "data_date": "2026-11-30",
                    "kind": "catalog_query",
                    "query_id": "accessi-ps",
                }
            ],
        },
    }
    job_id = finish_partial(site.root, None, CALLER, result)
    page.goto(site.url)
    page.fill("#api-key", site.key)
    page.dispatch_event("#api-key", "change")
    shown = page.locator(f'#jobs tr[data-job="{job_id}"]')
    expect(shown.locator(".job-status")).to_have_text("partial")
    expect(shown.locator(".job-gap")).to_have_text(f"Partial (index_unavailable): {rests_on}")
    shown.locator("summary").click()
    expect(shown.locator("pre")).to_have_text("Attesa media 41 minuti (pronto-soccorso.md).")
    # A figure from the analytics store says the date its data were taken on.
    expect(shown.locator(".job-dated")).to_have_text(
        "1.250: query accessi-ps, data as of 2026-11-30"
    )


def test_a_job_the_server_refuses_says_why(page: Page, site: Site) -> None:
    # The workspace has no [llm]: deep analysis cannot run, and the page says so.
    page.goto(site.url)
    page.fill("#api-key", site.key)
    page.dispatch_event("#api-key", "change")
    page.fill("#job-question", "Confronta i ricoveri urgenti del 2023 e del 2024")
    page.click("#job-button")
    message = page.locator("#jobs-message")
    expect(message).to_contain_text("The job was refused")
    expect(message).to_contain_text("[llm]")
    expect(message).to_have_class(re.compile(r"\berror\b"))


def test_without_job_routes_the_panel_says_deep_analysis_is_not_available(
    page: Page, tmp_path: Path
) -> None:
    """A server that serves the page but has no /v1/jobs (404): the panel says so."""
    app = FastAPI()
    add_web_routes(app)
    with in_thread(app) as url:
        page.goto(url + "/")
        page.fill("#api-key", "any")
        page.dispatch_event("#api-key", "change")
        expect(page.locator("#jobs-message")).to_have_text(
            "Deep analysis is not available on this server."
        )
        expect(page.locator("#job-button")).to_be_disabled()


def _unhandled(page: Page) -> list[str]:
    """What the page leaves unhandled (an uncaught exception or promise rejection)."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def test_a_stopped_server_is_said_where_the_sessions_errors_are(page: Page) -> None:
    """The page was served, then the server stopped: a new session's request fails on the
    network, and the sessions panel says the server is unreachable (no unhandled rejection)."""
    app = FastAPI()
    add_web_routes(app)
    errors = _unhandled(page)
    with in_thread(app) as url:
        page.goto(url + "/")
        expect(page.locator("#sessions-message")).to_be_visible()  # its first load answered
    page.fill("#session-question", "Quanti ricoveri urgenti nel 2024?")
    page.click("#session-button")
    expect_unreachable(page.locator("#sessions-message"), "no session was opened")
    assert errors == []


def test_a_request_that_fails_on_the_network_is_said_where_the_jobs_errors_are(
    page: Page, site: Site
) -> None:
    """The server's address unreachable once the page is loaded (every /v1 request refused
    at the connection): submitting a job says so in the jobs panel."""
    errors = _unhandled(page)
    page.goto(site.url)
    page.fill("#api-key", site.key)
    page.dispatch_event("#api-key", "change")
    expect(page.locator("#job-button")).to_be_enabled()
    page.route("**/v1/**", lambda route: route.abort("connectionrefused"))
    page.fill("#job-question", "Confronta i ricoveri urgenti del 2023 e del 2024")
    page.click("#job-button")
    expect_unreachable(page.locator("#jobs-message"), "the job was not queued")
    assert errors == []
