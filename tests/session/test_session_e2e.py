"""A session end to end through `tht`, on a small published workspace: by a person's CLI steps
and by the LLM driver (scripted tool calls from the local model server, accepted by a
reviewer). Clarification finds Evidence and leaves a receipt, a concept is clarified, each
stage consults Evidence with what is settled, F8 promotes the concept and a second session on
a related question gets it proposed in F2. Unavailable Evidence blocks a stage, records
nothing, and the retry after publishing succeeds. Memory and synthesis never call Evidence.

Everything is real: Git workspaces, ledgers, Qdrant Edge shards, the `openai` SDK talking to
the local model server, the embedder talking to the local embeddings server."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.conftest import commit_all, git, status
from tests.fake_embeddings import FakeEmbeddingServer
from tests.fake_llm import FakeLLMServer, ToolCallScript
from tests.publishing import published
from thoth.cli import exitcodes
from thoth.cli.main import app
from thoth.session.formulas import formula_detail
from thoth.workflow.driver import TOOL_NAME
from thoth.workspace import Workspace

pytestmark = pytest.mark.e2e

Make = Callable[..., Workspace]
runner = CliRunner()
KEY_ENV = "THOTH_TEST_KEY"
QUESTION = "Quanti ricoveri con pernottamento di pazienti pediatrici nel 2023?"
RELATED = "pazienti ricoverati con pernottamento in reparto"
REWRITTEN = (
    "Numero di ricoveri con almeno un pernottamento nel 2023 di pazienti con età inferiore "
    "a 18 anni alla data di ricovero"
)
PLAN = "ricoveri: adt.admission del 2023 con pernottamento\npediatrici: join clinical.patient"
FINAL_SQL = "WITH ricoveri AS (SELECT 1) SELECT count(*) FROM ricoveri"
FORMULA = formula_detail(
    ["clinical.patient.birth_date", "adt.admission.admission_date"],
    "date_part('year', age(a.admission_date, p.birth_date)) < 18",
)


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "local-test-key-not-a-secret")


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def root(make_workspace: Make, fake: FakeEmbeddingServer, llm: FakeLLMServer) -> str:
    """A published workspace whose [llm] is the local model server (committed: clean tree)."""
    rt = published(make_workspace, fake.url)
    rt.close()
    with (rt.ws.root / "thoth.toml").open("a", encoding="utf-8") as f:
        f.write(
            f'\n[llm]\nprovider = "openai"\nbase_url = "{llm.url}/v1"\nmodel = "test-model"\n'
            f'api_key_env = "{KEY_ENV}"\ntimeout_seconds = 5\n'
        )
    commit_all(rt.ws.root, "use the local model server")
    return str(rt.ws.root)


def tht(*args: str) -> tuple[int, Any]:
    result = runner.invoke(app, [*args, "--json"])
    try:
        return result.exit_code, json.loads(result.stdout)
    except ValueError:
        raise AssertionError(f"tht {' '.join(args)}: not JSON: {result.output!r}") from None


def ok(*args: str) -> Any:
    code, data = tht(*args)
    assert code == exitcodes.OK, (args, data)
    return data


def decide(root: str, sid: str, stage: str, type: str, subject: str, detail: str = "") -> int:
    data = ok(
        "session", "decide", sid, "--stage", stage, "--type", type, "--subject", subject,
        "--detail", detail, "--rationale", "reviewer, on the Evidence shown", "-w", root,
    )  # fmt: skip
    return int(data["entry"]["seq"])


def consult(root: str, sid: str, stage: str) -> Any:
    return ok("session", "consult", sid, "--stage", stage, "-w", root)


def proposal_call(type: str, subject: str, detail: str = "") -> ToolCallScript:
    return ToolCallScript(
        TOOL_NAME,
        {"type": type, "subject": subject, "detail": detail, "rationale": "see the Evidence"},
    )


def promote_then_recall(root: str, sid: str, concept_seq: int) -> None:
    """F8 promotes the clarified concept; F2 of a second, related session proposes it."""
    preview = ok("memory", "promote", "--session", sid, "--preview", "-w", root)
    assert [c["seq"] for c in preview["candidates"]] == [concept_seq]
    saved = ok("memory", "save-one", "--session", sid, "--seq", str(concept_seq), "-w", root)
    memory_id = saved["memory_id"]

    shown = ok("session", "show", sid, "-w", root)
    assert [m["seq"] for m in shown["memories"]["approved"]] == [concept_seq]
    assert shown["memories"]["approved"][0]["memory_id"] == memory_id

    second = ok("session", "new", RELATED, "-w", root)["session"]
    found = ok("memory", "search", RELATED, "--session", second, "-w", root)
    assert [r["memory_id"] for r in found["results"]] == [memory_id]
    assert found["results"][0]["subject"] == "ricovero"
    # Proposed, not applied: nothing in the second session until the reviewer chooses it.
    assert ok("session", "show", second, "-w", root)["effective"] == []
    ok("memory", "choose", "--session", second, "--memory", memory_id, "-w", root)
    [adopted] = ok("session", "show", second, "-w", root)["effective"]
    assert adopted["stage"] == "memory" and adopted["subject"] == "ricovero"
    # The adopted concept is an input of the second session's rewriting search.
    assert "Concetti: ricovero" in consult(root, second, "rewriting")["query_text"]


def test_a_session_by_cli_steps(root: str, fake: FakeEmbeddingServer) -> None:
    head = git(Path(root), "rev-parse", "HEAD")
    sid = ok("session", "new", QUESTION, "-w", root)["session"]

    found = consult(root, sid, "clarification")
    assert found["purpose"] == "disambiguation" and found["receipt_seq"] == 1
    assert "evidence:ricovero" in [r["evidence_id"] for r in found["results"]]
    concept = decide(root, sid, "clarification", "concept_clarified", "ricovero",
                     "permanenza in reparto con almeno un pernottamento")  # fmt: skip

    assert consult(root, sid, "rewriting")["query_text"].endswith("Concetti: ricovero")
    decide(root, sid, "rewriting", "question_rewritten", REWRITTEN)

    linked = consult(root, sid, "schema_linking")
    assert linked["query_text"].startswith(f"Domanda: {REWRITTEN}")
    assert "evidence:fascia-pediatrica" in [r["evidence_id"] for r in linked["results"]]
    decide(root, sid, "schema_linking", "table_promoted", "adt.admission")
    decide(root, sid, "schema_linking", "table_promoted", "clinical.patient")
    decide(root, sid, "schema_linking", "column_promoted", "clinical.patient.birth_date")
    decide(root, sid, "schema_linking", "concept_formula_approved", "fascia pediatrica",
           "evidence:fascia-pediatrica")  # fmt: skip

    before = len(fake.requests)
    code, data = tht("session", "consult", sid, "--stage", "synthesis", "-w", root)
    assert code == exitcodes.FAILED and "never consults Evidence" in data["error"]
    assert len(fake.requests) == before
    decide(root, sid, "synthesis", "synthesis_approved", "two tables, one formula")

    cte = consult(root, sid, "cte")
    assert "Tabelle: adt.admission, clinical.patient" in cte["query_text"]
    decide(root, sid, "cte", "cte_plan_approved", "two CTEs", PLAN)
    final = consult(root, sid, "final_sql")
    assert f"Piano CTE: {PLAN}" in final["query_text"]
    decide(root, sid, "final_sql", "final_sql_approved", "count of pediatric stays", FINAL_SQL)

    # A decision its stage does not take is refused, naming where it belongs.
    code, data = tht(
        "session", "decide", sid, "--stage", "clarification", "--type", "table_promoted",
        "--subject", "adt.ward", "-w", root,
    )  # fmt: skip
    assert code == exitcodes.FAILED and "schema_linking" in json.dumps(data)

    shown = ok("session", "show", sid, "-w", root)
    assert [e["type"] for e in shown["effective"]] == [
        "concept_clarified", "question_rewritten", "table_promoted", "table_promoted",
        "column_promoted", "concept_formula_approved", "synthesis_approved",
        "cte_plan_approved", "final_sql_approved",
    ]  # fmt: skip
    assert [(r["stage"], r["receipt"]["purpose"]) for r in shown["receipts"]] == [
        ("clarification", "disambiguation"),
        ("rewriting", "rewriting"),
        ("schema_linking", "schema_linking"),
        ("cte", "sql_generation"),
        ("final_sql", "sql_generation"),
    ]
    listed = ok("session", "list", "-w", root)["sessions"]
    assert [(s["id"], s["decisions"]) for s in listed] == [(sid, 9)]

    promote_then_recall(root, sid, concept)
    # Sessions and memories never touch the workspace repository.
    assert status(Path(root)) == "" and git(Path(root), "rev-parse", "HEAD") == head


def test_retract_reopen_rollback_by_cli(root: str) -> None:
    sid = ok("session", "new", QUESTION, "-w", root)["session"]
    first = decide(root, sid, "clarification", "concept_clarified", "ricovero")
    decide(root, sid, "rewriting", "question_rewritten", REWRITTEN)
    ok("session", "retract", sid, "--seq", str(first), "--rationale", "wrong concept", "-w", root)
    assert [e["type"] for e in ok("session", "show", sid, "-w", root)["effective"]] == [
        "question_rewritten"
    ]
    ok("session", "rollback", sid, "--stage", "clarification", "--rationale", "redo", "-w", root)
    shown = ok("session", "show", sid, "-w", root)
    assert shown["effective"] == []
    assert {w["reason"] for w in shown["withdrawn"]} == {"retracted", "rollback"}
    code, data = tht("session", "consult", sid, "--stage", "schema_linking", "-w", root)
    assert code == exitcodes.PRECONDITION and "question_rewritten" in data["error"]
    decide(root, sid, "rewriting", "question_rewritten", REWRITTEN)
    ok("session", "reopen", sid, "--stage", "rewriting", "--rationale", "again", "-w", root)
    assert ok("session", "show", sid, "-w", root)["effective"] == []
    code, data = tht("session", "show", "s-20240101-000000-abcdef", "-w", root)
    assert code == exitcodes.FAILED and "not found" in data["error"]


def test_a_session_by_the_llm_driver(root: str, llm: FakeLLMServer) -> None:
    sid = ok("session", "new", QUESTION, "-w", root)["session"]

    def drive(stage: str, *calls: ToolCallScript) -> list[int]:
        llm.reply_tool_calls(*calls)
        data = ok("session", "drive", sid, "--stage", stage, "-w", root)
        return [int(p["no"]) for p in data["proposals"]]

    def accept(*numbers: int) -> list[int]:
        return [ok("session", "accept", sid, str(n), "-w", root)["entry"]["seq"] for n in numbers]

    proposed = drive(
        "clarification",
        proposal_call("concept_clarified", "ricovero", "almeno un pernottamento"),
        proposal_call("concept_clarified", "anno", "anno solare"),
    )
    # The model saw the clarification Evidence; its proposals wait in proposals.jsonl.
    given = json.loads(llm.requests[-1].body["messages"][1]["content"])
    assert "evidence:ricovero" in [r["evidence_id"] for r in given["evidence"]["results"]]
    pending = ok("session", "show", sid, "-w", root)
    assert pending["effective"] == [] and [p["status"] for p in pending["proposals"]] == [
        "pending",
        "pending",
    ]
    [concept] = accept(proposed[0])
    ok("session", "reject", sid, str(proposed[1]), "--rationale", "not needed", "-w", root)

    accept(*drive("rewriting", proposal_call("question_rewritten", REWRITTEN)))
    linked = drive(
        "schema_linking",
        proposal_call("table_promoted", "adt.admission"),
        proposal_call("table_promoted", "clinical.patient"),
        proposal_call("formula_proposed", "paziente pediatrico", FORMULA),
    )
    accept(*linked)
    accept(*drive("synthesis", proposal_call("synthesis_approved", "two tables")))
    accept(*drive("cte", proposal_call("cte_plan_approved", "two CTEs", PLAN)))
    given = json.loads(llm.requests[-1].body["messages"][1]["content"])
    assert given["evidence"]["purpose"] == "sql_generation"
    accept(*drive("final_sql", proposal_call("final_sql_approved", "count", FINAL_SQL)))

    shown = ok("session", "show", sid, "-w", root)
    assert [e["type"] for e in shown["effective"]] == [
        "concept_clarified", "question_rewritten", "table_promoted", "table_promoted",
        "formula_proposed", "synthesis_approved", "cte_plan_approved", "final_sql_approved",
    ]  # fmt: skip
    assert all("accepted by the reviewer" in e["rationale"] for e in shown["effective"])
    assert [p["status"] for p in shown["proposals"]].count("rejected") == 1

    # A refused reply saves nothing and exits 1 with the problems.
    llm.reply_tool_calls(proposal_call("table_promoted", "adt.ward"))
    code, data = tht("session", "drive", sid, "--stage", "final_sql", "-w", root)
    assert code == exitcodes.FAILED and "not allowed in stage final_sql" in json.dumps(data)
    assert len(ok("session", "show", sid, "-w", root)["proposals"]) == len(shown["proposals"])

    # The Formula proposal goes to Git review as a source; the session stays untouched.
    imported = ok("evidence", "import-proposals", root, "--session", sid)
    assert imported["written"] == [f"source/proposals/{sid}-{linked_seq(shown)}.sql.md"]

    promote_then_recall(root, sid, concept)


def linked_seq(shown: Any) -> int:
    return int(next(e["seq"] for e in shown["effective"] if e["type"] == "formula_proposed"))


def test_unavailable_blocks_the_stage_and_the_retry_succeeds(
    root: str, fake: FakeEmbeddingServer
) -> None:
    sid = ok("session", "new", QUESTION, "-w", root)["session"]
    consult(root, sid, "clarification")
    commit_all(Path(root), "a reviewed change")
    ok("workspace", "activate", root)  # the active generation no longer matches
    before = ok("session", "show", sid, "-w", root)["entries"]

    code, data = tht("session", "consult", sid, "--stage", "clarification", "-w", root)
    assert code == exitcodes.FAILED
    assert data["status"] == "unavailable" and data["code"] == "revision_mismatch"
    assert data["retryable"] is True and data["recorded"] is False
    assert data["session"] == sid and data["stage"] == "clarification"
    code, data = tht("session", "drive", sid, "--stage", "clarification", "-w", root)
    assert code == exitcodes.FAILED and data["code"] == "revision_mismatch"
    assert ok("session", "show", sid, "-w", root)["entries"] == before  # nothing recorded

    assert ok("workspace", "preprocess", "evidence", root)["outcome"] == "activated"
    again = consult(root, sid, "clarification")
    assert again["receipt_seq"] == len(before) + 1


@pytest.mark.parametrize("stage", ["memory", "synthesis"])
def test_memory_and_synthesis_never_call_evidence(
    root: str, fake: FakeEmbeddingServer, llm: FakeLLMServer, stage: str
) -> None:
    sid = ok("session", "new", QUESTION, "-w", root)["session"]
    decide(root, sid, "schema_linking", "table_promoted", "adt.admission")
    before = len(fake.requests)
    code, data = tht("session", "consult", sid, "--stage", stage, "-w", root)
    assert code == exitcodes.FAILED and "never consults Evidence" in data["error"]
    if stage == "synthesis":
        llm.reply_tool_calls(proposal_call("synthesis_approved", "one table"))
        ok("session", "drive", sid, "--stage", stage, "-w", root)
    else:  # no memory was ever promoted: nothing to offer, the model is not asked
        data = ok("session", "drive", sid, "--stage", stage, "-w", root)
        assert data["proposals"] == [] and data["offered"] == [] and llm.requests == []
    assert len(fake.requests) == before
    receipts = ok("session", "show", sid, "-w", root)["receipts"]
    assert receipts == []


def test_human_output(root: str, llm: FakeLLMServer) -> None:
    def run(*args: str) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == exitcodes.OK, result.output
        return result.output

    assert "Session s-" in run("session", "new", "[bold] ricovero?", "-w", root)
    sid = ok("session", "list", "-w", root)["sessions"][0]["id"]
    assert "Receipt recorded: seq 1" in run(
        "session", "consult", sid, "--stage", "clarification", "-w", root
    )
    llm.reply_tool_calls(proposal_call("concept_clarified", "[ricovero]", "a [b] c"))
    assert "#1 concept_clarified [ricovero]" in run(
        "session", "drive", sid, "--stage", "clarification", "-w", root
    )
    run("session", "accept", sid, "1", "-w", root)
    shown = run("session", "show", sid, "-w", root)
    assert "[bold] ricovero?" in shown and "[ricovero]" in shown and "## Memories" in shown
    assert "[bold] ricovero?" in run("session", "list", "-w", root)
