"""Sources you can open (issue 29, point 1) through a real `tht serve`: every source of an answer
carries a link; GET on it returns the passage the answer rests on, highlighted, at the right
PDF page, under the same label rules as the answer. A confidential source asked with public
labels, a forged revision, a path outside the sources, an id of another workspace and a
malformed link are each refused with their code; 200 link requests across callers and labels
leak nothing."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.conftest import WorkspaceFactory
from tests.documents.test_documents import build_pdf, text_lines
from tests.fake_embeddings import FakeEmbeddingServer
from tests.publishing import (
    AUDIT,
    CLINICA_ANSWERS,
    CLINICA_WIKI,
    MANUAL,
    PAGE,
    prepared_workspace,
    synced_workspace,
)
from tests.service.conftest import Server, relabel
from thoth.service.registry import add_caller

pytestmark = pytest.mark.e2e

ANSWERS = (
    CLINICA_ANSWERS
    + """
[[sources]]
name = "riservati"
include = ["documents/riservati/**"]
channel = "clinica"
labels = ["confidential"]

[[sources]]
name = "rapporti"
include = ["documents/rapporti/**"]
channel = "clinica"
labels = ["public"]
"""
    + CLINICA_WIKI
)
CLAIM = "Gli accessi in codice bianco sono scesi del 12% nel 2024."
REPORT = build_pdf(
    [
        text_lines(["Rapporto annuale del pronto soccorso 2024"]),
        text_lines(["Indice dei capitoli e delle tabelle del rapporto."]),
        text_lines(["Codici di triage", CLAIM]),
    ]
)
CALLERS = {
    "reader": ["public"],
    "auditor": ["public", "confidential"],
    "analyst": ["public", "internal"],
}
AUDIT_QUESTION = "Che cosa ha trovato l'audit sulle schede di ricovero?"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("passage")
    with FakeEmbeddingServer(dim=8) as embeddings:
        ws = prepared_workspace(WorkspaceFactory(base), embeddings.url)
        report = ws.root / "documents" / "rapporti" / "rapporto-2024.pdf"
        report.parent.mkdir(parents=True)
        report.write_bytes(REPORT)
        ws = synced_workspace(
            ws,
            embeddings.url,
            ANSWERS,
            {
                "documents/manuali/ricovero.md": MANUAL,
                "documents/riservati/audit.md": AUDIT,
                "wiki/ricoveri-urgenti.md": PAGE,
            },
        )
        keys = {name: add_caller(ws.root, name, labels)[1] for name, labels in CALLERS.items()}
        server = Server(ws.root, keys, base / "serve.log")
        try:
            yield server
        finally:
            server.stop()


def ask(server: Server, question: str, caller: str, labels: list[str] | None = None) -> Any:
    body: dict[str, Any] = {"question": question, "show_context": True}
    if labels is not None:
        body["labels"] = labels
    response = server.post("/v1/ask", body, caller=caller)
    assert response.status_code == 200, response.text
    return response.json()


def open_link(
    server: Server, link: str, caller: str | None, labels: list[str] | None = None
) -> httpx.Response:
    """GET `link` under `labels` instead of those it carries (None: the default labels)."""
    return server.get(relabel(link, labels), caller=caller)


def test_a_source_link_opens_the_highlighted_passage_at_its_page(served: Server) -> None:
    answer = ask(served, "Di quanto sono scesi gli accessi in codice bianco nel 2024?", "reader")
    assert answer["status"] == "found", answer["text"]
    [report] = [s for s in answer["sources"] if s["doc_id"].startswith("rapporti:")]
    query = parse_qs(urlsplit(report["link"]).query)
    assert report["link"].startswith("/v1/passage?")
    assert query["doc_id"] == [report["doc_id"]] and query["revision"] == [report["revision"]]
    response = open_link(served, report["link"], "reader")
    assert response.status_code == 200, response.text
    passage = response.json()
    assert (passage["doc_id"], passage["revision"]) == (report["doc_id"], report["revision"])
    [highlighted] = [f for f in passage["fragments"] if f["highlight"]]
    assert CLAIM in highlighted["text"] and highlighted["page"] == 3 and passage["page"] == 3
    assert highlighted["ordinal"] == int(query["fragment"][0])
    # What the answer read of that source is what the link shows.
    read = [c for c in answer["context"] if c["doc_id"] == report["doc_id"]]
    assert any(CLAIM in c["text"] for c in read)


def test_every_source_of_an_answer_opens_wiki_and_documents_alike(served: Server) -> None:
    answer = ask(served, "Di quanto sono cresciuti i ricoveri urgenti nel 2024?", "reader")
    assert answer["sources"], answer
    for source in answer["sources"]:
        response = open_link(served, source["link"], "reader")
        assert response.status_code == 200, (source, response.text)
        assert response.json()["kind"] in ("document", "wiki")


def test_a_confidential_source_is_refused_to_public_labels_with_a_code(served: Server) -> None:
    answer = ask(served, AUDIT_QUESTION, "auditor", ["public", "confidential"])
    [audit] = [s for s in answer["sources"] if s["doc_id"].startswith("riservati:")]
    assert (
        open_link(served, audit["link"], "auditor", ["public", "confidential"]).status_code == 200
    )
    for caller, labels, status, code in (
        ("auditor", ["public"], 403, "source_not_allowed"),  # asked with public labels
        ("auditor", None, 403, "source_not_allowed"),  # the default labels: public
        ("reader", None, 403, "source_not_allowed"),
        ("reader", ["confidential"], 403, "label_above_ceiling"),
        (None, None, 401, "unauthorized"),
    ):
        response = open_link(served, audit["link"], caller, labels)
        assert response.status_code == status, response.text
        problem = response.json()
        assert problem["code"] == code
        assert "17,9%" not in response.text and "Audit" not in response.text


def test_a_source_link_opens_as_given_under_the_labels_the_question_was_asked_with(
    served: Server,
) -> None:
    """Issue 46, point 7: the link carries the labels of the ask, so the same caller opens it
    as given; they are still checked against the opening caller's ceiling."""
    answer = ask(served, AUDIT_QUESTION, "auditor", ["public", "confidential"])
    [audit] = [s for s in answer["sources"] if s["doc_id"].startswith("riservati:")]
    opened = served.get(audit["link"], caller="auditor")
    assert opened.status_code == 200, opened.text
    assert "17,9%" in opened.text and opened.json()["doc_id"] == audit["doc_id"]
    assert parse_qs(urlsplit(audit["link"]).query)["labels"] == ["confidential", "public"]
    for caller in ("reader", "analyst"):  # ceilings without confidential
        refused = served.get(audit["link"], caller=caller)
        assert refused.status_code == 403, refused.text
        assert refused.json()["code"] == "label_above_ceiling"
        assert "17,9%" not in refused.text
    # Asked without labels: the link carries the default labels it was answered under.
    plain = ask(served, "Di quanto sono cresciuti i ricoveri urgenti nel 2024?", "reader")
    assert plain["sources"]
    for source in plain["sources"]:
        response = served.get(source["link"], caller="reader")
        assert response.status_code == 200, (source, response.text)
        assert parse_qs(urlsplit(source["link"]).query)["labels"] == ["public"]


def test_forged_and_malformed_links_are_refused_with_their_code(served: Server) -> None:
    answer = ask(served, "Come si registra il ricovero ordinario?", "reader")
    source = answer["sources"][0]
    good = parse_qs(urlsplit(source["link"]).query)
    doc, rev = source["doc_id"], source["revision"]
    cases = [
        (f"/v1/passage?doc_id={doc}&revision={'0' * 40}", 409, "revision_not_served"),
        (f"/v1/passage?doc_id={doc}&revision=HEAD", 409, "revision_not_served"),
        (f"/v1/passage?doc_id=manuali:../../thoth.toml&revision={rev}", 404, "source_not_found"),
        (f"/v1/passage?doc_id=manuali:/etc/passwd&revision={rev}", 404, "source_not_found"),
        (f"/v1/passage?doc_id=other-ws:{doc}&revision={rev}", 404, "source_not_found"),
        (f"/v1/passage?doc_id={doc}&revision={rev}&fragment=999", 422, "fragment_not_found"),
        (f"/v1/passage?doc_id={doc}&revision={rev}&fragment=abc", 422, "bad_request"),
        (f"/v1/passage?doc_id={doc}&revision={rev}&api_key=x", 401, "unauthorized"),
        (f"/v1/passage?doc_id={doc}&revision={rev}&extra=1", 422, "bad_request"),
        (f"/v1/passage?revision={rev}", 422, "bad_request"),
        (f"/v1/passage?doc_id={doc}&doc_id={doc}&revision={rev}", 422, "bad_request"),
    ]
    for path, status, code in cases:
        response = served.get(path, caller="reader")
        assert response.status_code == status, (path, response.text)
        assert response.json()["code"] == code, (path, response.text)
    assert good["doc_id"] == [doc]


def carried_by(doc_id: str) -> set[str]:
    """The labels a source carries, from the configuration above (not from the service)."""
    prefix = doc_id.split(":", 1)[0]
    return {"riservati": {"confidential"}, "evidence": {"internal"}}.get(prefix, {"public"})


def test_two_hundred_link_requests_across_callers_and_labels_leak_nothing(
    served: Server,
) -> None:
    """Every source link of a few answers, opened by every caller with every label set (some
    above its ceiling): a passage is returned only when the labels its source carries are all
    among the labels the request resolves to; everything else is refused with a code."""
    links: dict[str, str] = {}  # link -> doc_id
    for question, caller, labels in (
        (AUDIT_QUESTION, "auditor", ["public", "confidential"]),
        ("Di quanto sono scesi gli accessi in codice bianco nel 2024?", "reader", None),
        ("Di quanto sono cresciuti i ricoveri urgenti nel 2024?", "reader", None),
        ("Cosa si intende per ricovero?", "analyst", ["public", "internal"]),
    ):
        for source in ask(served, question, caller, labels)["sources"]:
            links[source["link"]] = source["doc_id"]
    kinds = {carried for doc in links.values() for carried in carried_by(doc)}
    assert {"public", "confidential"} <= kinds, links
    label_sets: list[list[str] | None] = [
        None,
        ["public"],
        ["internal"],
        ["confidential"],
        ["public", "internal"],
        ["public", "confidential"],
    ]
    combinations = itertools.cycle(itertools.product(links, CALLERS, label_sets))
    outcomes: dict[str, int] = {}
    leaks = 0
    for link, caller, labels in itertools.islice(combinations, 200):
        response = open_link(served, link, caller, labels)
        effective = set(labels or ["public"])
        code = "passage" if response.status_code == 200 else response.json()["code"]
        outcomes[code] = outcomes.get(code, 0) + 1
        if not effective <= set(CALLERS[caller]):
            assert (response.status_code, code) == (403, "label_above_ceiling"), response.text
        elif carried_by(links[link]) <= effective:
            assert response.status_code == 200, response.text
        else:
            assert (response.status_code, code) == (403, "source_not_allowed"), response.text
        leaks += response.status_code == 200 and not carried_by(links[link]) <= effective
    assert sum(outcomes.values()) == 200 and leaks == 0
    assert {"passage", "source_not_allowed", "label_above_ceiling"} <= set(outcomes), outcomes


def test_in_chromium_the_source_opens_its_highlighted_passage_at_its_pdf_page(
    served: Server,
) -> None:
    """The page, as a reader uses it: ask, press "Open the passage" under the report; the
    claim is highlighted and the page number of the PDF is shown."""
    from playwright.sync_api import expect

    from tests.service.browser import ask_in_page, chromium, screenshot

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        ask_in_page(
            page,
            served.url + "/",
            served.keys["reader"],
            "Di quanto sono scesi gli accessi in codice bianco nel 2024?",
            labels="public",
        )
        report = page.locator("#sources li", has_text="rapporti:")
        with page.expect_response(lambda r: "/v1/passage" in r.url) as opened:
            report.locator(".source-open").click()
        assert opened.value.status == 200
        expect(page.locator("#passage .passage-fragment.highlight")).to_contain_text(CLAIM)
        expect(page.locator("#passage .passage-fragment.highlight")).to_contain_text("page 3")
        expect(page.locator("#passage-where")).to_contain_text("page 3")
        screenshot(page, "passage-pdf-page")


def test_an_old_answer_s_link_opens_the_revision_it_was_served_from(served: Server) -> None:
    """Runs last: it moves the workspace on. After the manual changes and is synced again, the
    link of an answer given before opens the text that answer read (the file at that commit,
    prepared again); a commit no sync served is refused, even though Git has it."""
    import subprocess
    import sys

    from tests.conftest import commit_all, git

    question = "Come si registra il ricovero ordinario?"
    before = ask(served, question, "reader")
    [old] = [s for s in before["sources"] if s["doc_id"].startswith("manuali:")]
    manual = served.root / "documents" / "manuali" / "ricovero.md"
    manual.write_text(MANUAL.replace("entro 24 ore", "entro 12 ore"), "utf-8")
    commit_all(served.root, "the manual changes")
    synced = subprocess.run(
        [sys.executable, "-m", "thoth.cli.main", "docs", "sync", "-w", str(served.root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert synced.returncode == 0, synced.stdout + synced.stderr
    response = open_link(served, old["link"], "reader")
    assert response.status_code == 200, response.text
    passage = response.json()
    [shown] = [f for f in passage["fragments"] if f["highlight"]]
    assert passage["revision"] == old["revision"] and "entro 24 ore" in shown["text"]
    after = ask(served, question, "reader")
    [new] = [s for s in after["sources"] if s["doc_id"].startswith("manuali:")]
    assert new["revision"] != old["revision"]
    assert "entro 12 ore" in json_text(open_link(served, new["link"], "reader"))
    manual.write_text(MANUAL.replace("entro 24 ore", "entro 6 ore"), "utf-8")
    commit_all(served.root, "never synced")
    unsynced = git(served.root, "rev-parse", "HEAD").strip()
    response = open_link(served, new["link"].replace(new["revision"], unsynced), "reader")
    assert response.status_code == 409 and response.json()["code"] == "revision_not_served"
    assert "entro 6 ore" not in response.text


def json_text(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return " ".join(f["text"] for f in response.json()["fragments"])
