"""The answer engine end to end through the commands a user runs: Evidence published, documents
and wiki synced into the same generation, `tht ask`, `tht eval run`, `tht eval add-from-answer`,
`tht verify` — real Git, Qdrant Edge, SQLite, and embeddings over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

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
from thoth.cli.main import app
from thoth.documents.records import RECORD_EVIDENCE
from thoth.evidence.corpus import load_corpus
from thoth.evidence.document import render_unit
from thoth.runtime import open_runtime
from thoth.workspace import Workspace

pytestmark = pytest.mark.e2e

ANSWERS = (
    CLINICA_ANSWERS
    + """
[[sources]]
name = "audit"
include = ["documents/audit/**"]
channel = "clinica"
# No labels on purpose: an unlabelled confidential document must never be served.
"""
    + CLINICA_WIKI
)

CAVEAT = "Il campo admission_type vale 'U' anche per i trasferimenti."


@pytest.fixture
def embeddings() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


@pytest.fixture
def ws(make_workspace: Callable[..., Workspace], embeddings: FakeEmbeddingServer) -> Workspace:
    ws = prepared_workspace(make_workspace, embeddings.url)
    files, _ = load_corpus(ws.evidence)
    unit = next(f for f in files if f.unit.id == "evidence:ricovero")
    (ws.evidence / unit.rel).write_text(
        render_unit(unit.unit.model_copy(update={"caveats": [CAVEAT]})), "utf-8"
    )
    corpus = {
        "documents/manuali/ricovero.md": MANUAL,
        "documents/audit/audit.md": AUDIT,
        "wiki/ricoveri-urgenti.md": PAGE,
    }
    return synced_workspace(ws, embeddings.url, ANSWERS, corpus)


def run(ws: Workspace, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [*args, "-w", str(ws.root)])
    return result.exit_code, result.stdout


def test_evidence_points_carry_caveats_apart_from_the_embedded_text(ws: Workspace) -> None:
    rt = open_runtime(ws)
    try:
        gen = rt.state.active_generation(ws.settings.workspace)
        assert gen is not None
        store = rt.backend.open(gen.id)
        evidence = [
            r.payload
            for r in store.scroll({"record_kind": RECORD_EVIDENCE})
            if r.payload["evidence_id"] == "evidence:ricovero"
        ]
        store.close()
    finally:
        rt.close()
    assert evidence and all(p["caveats"] == [CAVEAT] for p in evidence)
    assert all(CAVEAT not in p["text"] for p in evidence)
    assert all(p["channel"] == "clinica" and p["labels"] == ["internal"] for p in evidence)


def test_ask_serves_the_caveat_and_never_the_unlabelled_document(ws: Workspace) -> None:
    code, out = run(
        ws,
        "ask",
        "Di quanto sono cresciuti i ricoveri urgenti nel 2024?",
        "--label", "public", "--label", "internal", "--label", "confidential",
        "--json",
    )  # fmt: skip
    assert code == 0, out
    answer = json.loads(out)
    assert answer["status"] in ("found", "truncated")
    ids = [s["doc_id"] for s in answer["sources"]]
    assert "wiki:wiki/ricoveri-urgenti.md" in ids
    assert "la crescita reale è intorno al 2%" in answer["text"]
    # The audit's source declares no label: invisible even to a caller cleared for everything.
    assert not any(i.startswith("audit:") for i in ids) and "17,9%" not in answer["text"]


def test_verify_reports_the_unlabelled_document(ws: Workspace) -> None:
    code, out = run(ws, "verify", "--json")
    report = json.loads(out)
    unlabelled = [f["where"] for f in report["findings"] if f["code"] == "unlabelled"]
    assert unlabelled == ["audit:documents/audit/audit.md"]
    assert report["indexed_records"] and code == (0 if report["ok"] else 1)


def test_a_logged_answer_becomes_a_ready_evaluation_case(ws: Workspace) -> None:
    code, out = run(ws, "ask", "Entro quando si registra il ricovero ordinario?", "--json")
    assert code == 0, out
    answer_id = json.loads(out)["id"]
    code, out = run(ws, "eval", "add-from-answer", answer_id, "--json")
    assert code == 0, out
    cases = yaml.safe_load((ws.root / "answers/evaluation.yaml").read_text("utf-8"))
    assert cases[0]["id"] == f"from-{answer_id}"
    assert cases[0]["origin"] == f"answer:{answer_id}"
    # The entry runs as it is: the answer's own sources are its first expectation.
    code, out = run(ws, "eval", "run", "--json")
    report = json.loads(out)
    assert code == 0 and report["passed"] and report["summary"]["cases"] == 1
    again, _ = run(ws, "eval", "add-from-answer", answer_id)
    assert again == 4  # the same answer twice is refused


def test_eval_run_points_at_the_failing_level(ws: Workspace) -> None:
    (ws.root / "answers").mkdir(exist_ok=True)
    (ws.root / "answers/evaluation.yaml").write_text(
        yaml.safe_dump(
            [
                {
                    "id": "growth",
                    "question": "Di quanto sono cresciuti i ricoveri urgenti nel 2024?",
                    "expect": {
                        "documents": ["wiki:wiki/ricoveri-urgenti.md"],
                        "caveats": ["la crescita reale è intorno al 2%"],
                        "unreliable": ["41%"],
                    },
                },
                {
                    "id": "missing",
                    "question": "Di quanto sono cresciuti i ricoveri urgenti nel 2024?",
                    "expect": {"documents": ["manuali:documents/manuali/inesistente.md"]},
                },
                {
                    "id": "refused",
                    "question": "Di quanto sono cresciuti i ricoveri urgenti nel 2024?",
                    "labels": ["segreto"],
                    "expect": {},
                },
            ],
            allow_unicode=True,
        ),
        "utf-8",
    )
    code, out = run(ws, "eval", "run", "--json")
    report = json.loads(out)
    assert code == 1
    verdicts = {c["id"]: c["verdict"] for c in report["cases"]}
    assert verdicts == {"growth": "pass", "missing": "retrieval", "refused": "failed"}
    [refused] = [c for c in report["cases"] if c["id"] == "refused"]
    assert "unknown label(s) segreto" in refused["error"]
    assert Path(ws.root / "answers/evaluation.yaml").is_file()
