"""The page's sessions view in Debian's Chromium over a real `tht serve` on the demo workspace:
a whole session F1-F8 driven on the page — a new session, each stage consulted (the units
found, linked from the receipt), decided, one decision retracted; the caller's sessions; the
decisions as a timeline (withdrawn ones said to be withdrawn), the Evidence receipts and the
units they cite, the SQL checked and run with its receipts, F8's checklist confirmed in one
click, the Markdown summary as text; the next session chooses F2's two proposals at once.
Another client over the HTTP API only makes the page's write stale: the conflict is shown."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from playwright.sync_api import Page, expect
from rich.console import Console

from tests.service.browser import chromium, expect_unreachable, screenshot
from tests.service.conftest import Server
from thoth.cli.demo import DEMO_FINAL_SQL, DEMO_REWRITTEN, DEMO_SQL_QUESTION, run_demo
from thoth.service.registry import add_caller

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

AGENT = "reviewer"
MARKUP = "<img src=x onerror=\"document.title='pwned'\">il reparto che dimette"


def demo_server(root: Path, log: Path) -> Server:
    _, key = add_caller(root, AGENT, ["public", "internal"])
    return Server(root, {AGENT: key}, log)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # The demo's last step (an MCP stdio client) runs the installed package, not this code.
    with mock.patch("thoth.cli.demo.demo_mcp", lambda *_: "found"):
        root = run_demo(Console(file=io.StringIO(), width=120),
                        tmp_path_factory.mktemp("demo") / "demo")  # fmt: skip
    server = demo_server(root, tmp_path_factory.mktemp("log") / "serve.log")
    try:
        yield server
    finally:
        server.stop()


class Api:
    """Another client of the same session over HTTP, starting from the position it reads."""

    def __init__(self, server: Server, session_id: str) -> None:
        self.server = server
        self.id = session_id
        shown = server.get(f"/v1/sessions/{session_id}", caller=AGENT)
        assert shown.status_code == 200, shown.text
        self.base = int(shown.json()["position"])

    def post(self, verb: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.server.post(
            f"/v1/sessions/{self.id}/{verb}", {"base": self.base, **body}, AGENT
        )
        assert response.status_code == 200, response.text
        return dict(response.json())

    def consult(self, stage: str) -> None:
        self.base = self.post("consult", {"stage": stage})["receipt_seq"]


def decide_on_the_page(page: Page, stage: str, type: str, subject: str, detail: str = "") -> None:
    page.fill("#decide-stage", stage)
    page.fill("#decide-type", type)
    page.fill("#decide-subject", subject)
    page.fill("#decide-detail", detail)
    page.click("#decide-button")
    expect(page.locator("#session-message")).to_contain_text("Recorded #")
    expect(page.locator("#session-message")).to_contain_text(f"{type}: {subject}")


def consult_on_the_page(page: Page, stage: str) -> None:
    page.fill("#decide-stage", stage)
    page.click("#consult-button")
    expect(page.locator("#session-message")).to_contain_text(f"Consulted {stage}:")


def clarified_on_the_page(server: Server, page: Page) -> str:
    """F1 on the page: a new session, the stage consulted (its units linked from the
    receipt), three concepts decided, one of them retracted. Returns the session's id."""
    open_with_key(page, server)
    page.fill("#session-question", DEMO_SQL_QUESTION)
    page.click("#session-button")
    expect(page.locator("#session-title")).to_have_text(DEMO_SQL_QUESTION)
    page.fill("#decide-stage", "diagnosis")  # no such stage: refused with its code, shown
    page.click("#consult-button")
    expect(page.locator("#session-message")).to_contain_text("Refused (")
    expect(page.locator("#session-message")).to_contain_text("diagnosis")
    expect(page.locator("#session-where")).to_contain_text("ledger position 0")
    consult_on_the_page(page, "clarification")
    unit = page.locator("#session-consulted li.unit", has_text="evidence:ricovero-ordinario")
    expect(unit).to_have_count(1)
    link = page.locator("#session-receipts a[data-unit='evidence:ricovero-ordinario']")
    expect(link).to_have_attribute("href", "#unit-view")
    clarified = "concept_clarified"
    decide_on_the_page(page, "clarification", clarified, "ricovero ordinario", "regime 1")
    decide_on_the_page(page, "clarification", clarified, "dimesso", "uscito vivo")
    page.fill("#decide-rationale", "not what was asked")
    wrong = page.locator("#session-timeline li.decision", has_text="concept_clarified: dimesso")
    wrong.get_by_role("button", name="Retract").click()
    expect(page.locator("#session-message")).to_contain_text("withdrawn by #")
    expect(wrong).to_contain_text("withdrawn (retracted")
    decide_on_the_page(page, "clarification", clarified, "reparto di dimissione", MARKUP)
    session_id = page.locator("#session-where").inner_text().split(" ")[0]
    assert session_id.startswith("s-")
    return session_id


def decided_up_to_final_sql(page: Page) -> None:
    """F3-F7 on the page, as the demo's reviewer decides them."""
    consult_on_the_page(page, "rewriting")
    decide_on_the_page(page, "rewriting", "question_rewritten", DEMO_REWRITTEN)
    consult_on_the_page(page, "schema_linking")
    for type, subject in (
        ("table_promoted", "adt.admission"),
        ("table_promoted", "adt.ward"),
        ("column_promoted", "adt.admission.care_regime"),
        ("column_promoted", "adt.admission.discharge_date"),
        ("column_promoted", "adt.admission.discharging_ward_id"),
        ("column_promoted", "adt.ward.ward_name"),
    ):
        decide_on_the_page(page, "schema_linking", type, subject)
    decide_on_the_page(page, "synthesis", "synthesis_approved", "ricoveri ordinari per reparto")
    consult_on_the_page(page, "cte")
    decide_on_the_page(page, "cte", "cte_plan_approved", "una sola query: 2024 per reparto")
    consult_on_the_page(page, "final_sql")
    decide_on_the_page(page, "final_sql", "final_sql_approved", "ricoveri ordinari 2024 per reparto",
                       DEMO_FINAL_SQL)  # fmt: skip


def open_with_key(page: Page, server: Server) -> None:
    page.goto(server.url + "/")
    page.fill("#api-key", server.keys[AGENT])
    page.dispatch_event("#api-key", "change")


def drive_a_whole_session(server: Server, page: Page) -> None:
    session_id = clarified_on_the_page(server, page)
    decided_up_to_final_sql(page)
    s = Api(server, session_id)  # another client on the same session, for the conflict below
    open_with_key(page, server)  # a fresh load: the list, then the session
    row = page.locator(f"#sessions tr[data-session='{s.id}']")
    expect(row).to_contain_text(DEMO_SQL_QUESTION)
    row.get_by_role("button", name="Open").click()
    expect(page.locator("#session-title")).to_have_text(DEMO_SQL_QUESTION)

    # the timeline: the retracted decision is there, and said to be withdrawn
    withdrawn = page.locator("#session-timeline li.withdrawn")
    expect(withdrawn).to_have_count(1)
    expect(withdrawn).to_contain_text("dimesso")
    expect(withdrawn).to_contain_text("withdrawn (retracted")
    kept = page.locator(
        "#session-timeline li.decision:not(.withdrawn)", has_text="ricovero ordinario"
    )
    expect(kept).to_have_count(1)
    # markup from the ledger is shown as text, never run
    expect(page.locator("#session-timeline")).to_contain_text("<img src=x onerror=")
    assert page.locator("#session-view img").count() == 0

    # the Evidence receipts with the units they cite
    receipts = page.locator("#session-receipts li.receipt")
    expect(receipts).to_have_count(5)  # clarification, rewriting, schema_linking, cte, final_sql
    expect(receipts.first).to_contain_text("clarification")
    expect(
        page.locator("#session-receipts [data-unit='evidence:ricovero-ordinario']")
    ).to_have_count(1)

    # the SQL, checked then run with its receipt
    expect(page.locator("#session-sql")).to_have_text(DEMO_FINAL_SQL)
    page.click("#sql-check")
    expect(page.locator("#session-checks")).to_contain_text("accepted")
    page.fill("#session-run-labels", "internal")
    page.click("#sql-run")
    expect(page.locator("#session-runs li.run")).to_contain_text("succeeded")
    expect(page.locator("#session-rows table")).to_contain_text("Medicina generale")

    # another writer moves the ledger: the page's next write is refused, said and reloaded
    stale = page.locator("#session-where").inner_text()
    s.base = server.get(f"/v1/sessions/{s.id}", caller=AGENT).json()["position"]
    s.consult("final_sql")
    page.click("#checklist-confirm")
    expect(page.locator("#session-message")).to_contain_text("the session changed since you read")
    expect(page.locator("#session-where")).to_contain_text(f"ledger position {s.base}")
    assert page.locator("#session-where").inner_text() != stale
    assert server.get(f"/v1/sessions/{s.id}/checklist", caller=AGENT).json()["candidates"]

    # F8: both clarified concepts preselected, confirmed in one click; the session closes
    candidates = page.locator("#session-checklist li.candidate")
    expect(candidates).to_have_count(2)
    for select in page.locator("#session-checklist select").all():
        expect(select).to_have_value("promote")
    with page.expect_response(
        lambda r: r.url.endswith("/checklist") and r.request.method == "POST"
    ):
        page.click("#checklist-confirm")
    expect(page.locator("#session-message")).to_contain_text("2 promoted, 0 declined")
    expect(page.locator("#session-message")).to_contain_text("closed")
    summary = page.locator("#session-summary")
    expect(summary).to_contain_text("### Approved")
    expect(summary).to_contain_text("ricovero ordinario")
    expect(summary).to_contain_text("<img src=x onerror=")
    assert page.evaluate("document.title") != "pwned"
    screenshot(page, "session-closed")

    # a closed session opens again on the page: F7 reopened
    page.fill("#decide-stage", "final_sql")
    page.fill("#decide-rationale", "one more look at the SQL")
    page.click("#reopen-button")
    expect(page.locator("#session-message")).to_contain_text("Reopened final_sql: #")
    expect(page.locator("#session-timeline")).to_contain_text("one more look at the SQL")

    # the next session, started on the page, is offered both memories and chooses the two at once
    page.fill("#session-question", "Quanti ricoveri ordinari per reparto di dimissione nel 2023?")
    page.click("#session-button")
    expect(page.locator("#session-title")).to_contain_text("nel 2023")
    proposals = page.locator("#session-proposals li.proposal")
    expect(proposals).to_have_count(2)
    for box in page.locator("#session-proposals input[type=checkbox]").all():
        box.check()
    with page.expect_response(lambda r: r.url.endswith("/memories")) as chosen:
        page.click("#proposals-choose")
    assert len(chosen.value.json()["chosen"]) == 2
    expect(page.locator("#session-message")).to_contain_text("Chosen: mem-")
    memory = page.locator("#session-timeline li.decision", has_text="memory")
    expect(memory).to_have_count(2)

    # rolled back to F1 on the page: F2's chosen memories stay in the timeline, withdrawn
    page.fill("#decide-stage", "clarification")
    page.fill("#decide-rationale", "start again after F1")
    page.click("#rollback-button")
    expect(page.locator("#session-message")).to_contain_text("Rolled back to clarification: #")
    expect(page.locator("#session-timeline li.withdrawn", has_text="memory")).to_have_count(2)
    screenshot(page, "session-memories-chosen")


def test_a_whole_session_on_the_page(served: Server) -> None:
    with chromium() as browser:
        page = browser.new_page()
        drive_a_whole_session(served, page)


def test_the_gaps_queue_and_a_receipts_unit_on_the_page(served: Server) -> None:
    """A gap recorded over HTTP is listed in the page's queue (its markup shown as text, the
    CLI command that turns it into a source note beside it); a receipt's unit id, from a
    consultation made over HTTP and not on the page, opens the unit."""
    made = served.post("/v1/sessions", {"question": DEMO_SQL_QUESTION}, AGENT)
    assert made.status_code == 201, made.text
    s = Api(served, made.json()["session"])
    found = s.post("consult", {"stage": "clarification"})
    s.base = found["receipt_seq"]
    unit_id = found["results"][0]["evidence_id"]
    gap = s.post("gaps", {"stage": "clarification", "subject": "reparto", "detail": MARKUP})
    gap_id = f"{s.id}:{gap['entry']['seq']}"
    with chromium() as browser:
        page = browser.new_page()
        open_with_key(page, served)
        row = page.locator(f"#gaps li.gap[data-gap='{gap_id}']")
        expect(row).to_contain_text("clarification")
        expect(row).to_contain_text("reparto")
        expect(row).to_contain_text("<img src=x onerror=")
        expect(row).to_contain_text(f"tht evidence gaps --to-source {gap_id}")
        assert page.locator("#gaps-panel img").count() == 0
        assert page.evaluate("document.title") != "pwned"

        # The sessions table may be drawn again while the click lands (its refresh after the
        # gaps): a click on the row it replaced opens nothing, so the click is given again.
        for attempt in range(3):
            page.locator(f"#sessions tr[data-session='{s.id}']").get_by_role(
                "button", name="Open"
            ).click()
            try:
                expect(page.locator("#session-title")).to_have_text(
                    DEMO_SQL_QUESTION, timeout=10_000
                )
                break
            except AssertionError:
                if attempt == 2:
                    raise
        link = page.locator(f"#session-receipts a[data-unit='{unit_id}']")
        expect(link).to_have_count(1)
        expect(page.locator("#unit-view")).to_be_hidden()
        link.click()
        unit = page.locator("#unit-view")
        expect(unit).to_be_visible()
        shown = served.get(f"/v1/evidence/units/{unit_id}", caller=AGENT).json()
        expect(unit.locator("#unit-title")).to_have_text(shown["title"])
        expect(unit).to_contain_text(unit_id)
        expect(unit).to_contain_text(shown["provenance"]["source_file"])
        screenshot(page, "session-gaps-and-unit")


def test_a_session_write_without_answer_is_said_in_the_session(served: Server) -> None:
    """The session is open on the page, then the server's address becomes unreachable (every
    /v1 request refused at the connection): consulting a stage says so in the session's own
    message, and that the write may need checking, never an unhandled rejection."""
    made = served.post("/v1/sessions", {"question": DEMO_SQL_QUESTION}, AGENT)
    assert made.status_code == 201, made.text
    session = made.json()["session"]
    with chromium() as browser:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        open_with_key(page, served)
        page.locator(f"#sessions tr[data-session='{session}']").get_by_role(
            "button", name="Open"
        ).click()
        expect(page.locator("#session-title")).to_have_text(DEMO_SQL_QUESTION)
        page.route("**/v1/**", lambda route: route.abort("connectionrefused"))
        page.fill("#decide-stage", "clarification")
        page.click("#consult-button")
        expect_unreachable(page.locator("#session-message"), "see what was recorded")
        assert errors == []
