"""Issue 46, point 5: a `qa` row is its own source. The answer's sources name the FAQ row a
passage comes from — its id when the source declares its id column (`qa_id_column`), else its
number in the table (the header is row 1) — one source per row, not one per file; a declared
id column the table lacks stops the sync, naming it, and nothing is indexed.

End to end with the bundled embedder: an Italian workspace, a FAQ CSV synced by `DocsSync`,
`AnswerService` with default settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git
from thoth.errors import ProblemsError
from thoth.evidence.layout import init_workspace
from thoth.knowledge.sync import DocsSync, SyncReport
from thoth.runtime import open_answer_service, open_runtime
from thoth.workspace import Workspace

SOURCE = """
[[channels]]
name = "faq"
examples = ["Come posso pagare la bolletta?"]

[[sources]]
name = "faq"
include = ["faq/*"]
channel = "faq"
labels = ["public"]
strategy = "qa"
"""

FAQ = """\
Codice;Domanda;Risposta;Tema
FAQ-101;Come posso pagare la bolletta dell'acqua?;Con il bollettino postale oppure con la domiciliazione bancaria sul conto corrente.;Pagamenti
FAQ-102;Posso dividere in rate una fattura del servizio idrico?;Sì: una fattura oltre 300 euro si divide in tre rate mensili, su richiesta.;Pagamenti
FAQ-103;Come segnalo un guasto al contatore?;Chiamando il numero verde del pronto intervento, attivo giorno e notte.;Guasti
"""


def build(root: Path, extra: str = "") -> SyncReport:
    init_workspace(root, "faqrows", language="it")
    toml = root / "thoth.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + SOURCE + extra, encoding="utf-8")
    (root / "faq").mkdir()
    (root / "faq" / "faq.csv").write_text(FAQ, encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    identity = ["-c", "user.name=Thoth Tests", "-c", "user.email=tests@thoth.invalid"]
    git(root, *identity, "commit", "-q", "-m", "faq")
    ws = Workspace.open(root)
    with open_runtime(ws) as rt:
        return DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="test")


def sources(root: Path, question: str) -> list[dict[str, str]]:
    svc = open_answer_service(Workspace.open(root))
    try:
        answer = svc.ask(question, labels=["public"])
    finally:
        svc.close()
    assert answer.sources is not None, answer.status
    return [s.as_dict() for s in answer.sources]


def test_the_source_of_a_faq_row_is_that_row_named_by_its_id(tmp_path: Path) -> None:
    report = build(tmp_path / "ws", 'qa_id_column = "Codice"\n')
    assert report.outcome == "activated", report.message
    found = sources(tmp_path / "ws", "Come posso pagare la bolletta dell'acqua?")
    first = found[0]
    assert first["doc_id"] == "faq:faq/faq.csv"
    assert first["row"] == "FAQ-101", found
    assert "FAQ-101" in first["title"], first
    # Two rows of the same file quoted: two sources, each naming its own row.
    rows = [s["row"] for s in found if s["doc_id"] == "faq:faq/faq.csv"]
    assert len(rows) >= 2 and len(set(rows)) == len(rows), found
    links = [s["link"] for s in found]
    assert len(set(links)) == len(links), links


def test_without_an_id_column_the_source_names_the_row_s_number(tmp_path: Path) -> None:
    report = build(tmp_path / "ws")
    assert report.outcome == "activated", report.message
    found = sources(tmp_path / "ws", "Come posso pagare la bolletta dell'acqua?")
    assert found[0]["row"] == "2", found  # the header is row 1
    assert "row 2" in found[0]["title"], found
    assert "FAQ-101" not in found[0]["title"]


def test_a_declared_id_column_the_table_lacks_stops_the_sync(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with pytest.raises(ProblemsError, match=r"qa_id_column.*'Numero'") as raised:
        build(root, 'qa_id_column = "Numero"\n')
    assert "faq.csv" in str(raised.value.problems), raised.value.problems
    ws = Workspace.open(root)
    with open_runtime(ws) as rt:
        assert rt.state.active_generation(ws.settings.workspace) is None
