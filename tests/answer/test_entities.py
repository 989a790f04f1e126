"""Issue 24, point 1 (entities): each document knows whose it is, and a question that names an
entity is answered from that entity's documents only — the scope, like labels, applied inside
the index before similarity. A named entity with no documents is `nothing_found` with a reason
that says so, never another entity's text marked `found`; two named entities retrieve for each.

End to end with the bundled embedder: an English workspace, Markdown filings of two companies
synced by `DocsSync`, `AnswerService` with default settings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import git
from thoth.answer.service import AnswerService
from thoth.cli.main import app
from thoth.entities import EntityList, load_entities
from thoth.errors import ProblemsError
from thoth.evidence.layout import init_workspace
from thoth.knowledge.sync import DocsSync, SyncReport
from thoth.runtime import open_answer_service, open_runtime
from thoth.workspace import Workspace

ENTITIES = """\
- id: contoso
  name: Contoso Ltd
  aliases: [Contoso]
  tickers: [CTSO]
- id: fabrikam
  name: Fabrikam, Inc.
  tickers: [FBRK]
- id: northwind
  name: Northwind Traders
  aliases: [Northwind]
  tickers: [NWT]
"""

# A top-level key of thoth.toml: before any [section]
TOP = 'entities = "entities.yaml"\n'

CONFIG = """
[[channels]]
name = "filings"
examples = ["What was the company's revenue in the quarter?"]

[[sources]]
name = "filings"
include = ["docs/*"]
channel = "filings"
labels = ["public"]
entities = { "fab-report.txt" = "fabrikam" }
"""

FILINGS = {
    # the entity from the title and the opening
    "contoso-q2-2023.md": """# Contoso Ltd quarterly report, Q2 2023

## Revenue

Total net revenue for the second quarter of 2023 was $4,210 million, up 6% from the second
quarter of 2022, driven by higher sales of industrial pumps in Europe.

## Legal proceedings

The company is a defendant in a patent lawsuit brought by Northwind Traders in Delaware; it
believes the claims are without merit and intends to defend itself vigorously.
""",
    # the entity from thoth.toml (the text never names its company)
    "fab-report.txt": """Quarterly report, second quarter of 2023

Revenue

Net sales for the quarter ended June 30, 2023 were $1,875 million, compared with $1,990
million a year earlier, because of lower demand for solar inverters.
""",
    # the entity from the front matter
    "fab-buyback.md": """---
entity: fabrikam
---
# Share repurchases, second quarter of 2023

During the second quarter of 2023 the company repurchased 2.1 million shares for $310 million
under the program its board authorised in 2021.
""",
    # no entity anywhere: said in the sync report
    "market-note.md": """# Pump market note, 2023

Demand for industrial pumps in Europe grew by 4% in 2023, according to trade associations.
""",
}


def configure(root: Path, name: str, config: str = CONFIG) -> None:
    init_workspace(root, name, language="en")
    toml = root / "thoth.toml"
    toml.write_text(TOP + toml.read_text(encoding="utf-8") + config, encoding="utf-8")


def build(root: Path) -> SyncReport:
    configure(root, "entities")
    (root / "entities.yaml").write_text(ENTITIES, encoding="utf-8")
    (root / "docs").mkdir()
    for name, text in FILINGS.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    identity = ["-c", "user.name=Thoth Tests", "-c", "user.email=tests@thoth.invalid"]
    git(root, *identity, "commit", "-q", "-m", "filings")
    ws = Workspace.open(root)
    with open_runtime(ws) as rt:
        return DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="test")


@pytest.fixture(scope="module")
def filings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, SyncReport]]:
    root = tmp_path_factory.mktemp("entities") / "ws"
    report = build(root)
    assert report.outcome == "activated", report.message
    yield root, report


@pytest.fixture(scope="module")
def service(filings: tuple[Path, SyncReport]) -> Iterator[AnswerService]:
    svc = open_answer_service(Workspace.open(filings[0]))
    yield svc
    svc.close()


# -- the list and its matching -----------------------------------------------------------------


def test_names_match_as_words_in_any_case_and_tickers_as_written(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(ENTITIES, encoding="utf-8")
    entities = load_entities(tmp_path, "e.yaml")
    assert entities.named_in("What was Contoso's revenue?") == ["contoso"]
    assert entities.named_in("Qual è il fatturato di contoso?") == ["contoso"]
    # the legal form is optional; a ticker is matched as written, never inside a word
    assert entities.named_in("Fabrikam net sales") == ["fabrikam"]
    assert entities.named_in("FBRK and NWT") == ["fabrikam", "northwind"]
    assert entities.named_in("fbrk") == [] and entities.named_in("Contosoville") == []


def test_a_bad_list_is_refused_whole_naming_each_problem(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(
        "- {id: a, name: Acme}\n- {id: b, name: Acme Corp}\n- {id: Bad Id, name: X}\n",
        encoding="utf-8",
    )
    with pytest.raises(ProblemsError) as caught:
        load_entities(tmp_path, "e.yaml")
    codes = sorted(p.code for p in caught.value.problems)
    assert codes == ["entities_ambiguous", "entities_invalid"]
    assert any("'acme' names both a and b" in p.message for p in caught.value.problems)
    with pytest.raises(ProblemsError, match="does not exist"):
        load_entities(tmp_path, "missing.yaml")


def test_a_document_takes_the_entity_its_opening_names_most() -> None:
    entities = EntityList([])
    assert entities.of_document("Report", "a.pdf", "Contoso") is None  # no list: none
    listed = load_from_text(ENTITIES)
    assert listed.of_document("Quarterly report", "2023 Q2 CTSO.pdf", "") == "contoso"
    opening = "Contoso Ltd. Form 10-Q ... a lawsuit by Northwind Traders ... Contoso"
    assert listed.of_document("Form 10-Q", "q.pdf", opening) == "contoso"
    # two named equally: none, rather than a guess
    assert listed.of_document("Contoso and Northwind", "x.pdf", "") is None


def load_from_text(text: str) -> EntityList:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "e.yaml").write_text(text, encoding="utf-8")
        return load_entities(Path(tmp), "e.yaml")


# -- sync: each document carries its entity ------------------------------------------------------


def test_sync_gives_each_document_its_entity_and_names_the_one_without(
    filings: tuple[Path, SyncReport],
) -> None:
    root, report = filings
    notes = {n["doc_id"]: n["note"] for n in report.notes}
    assert "no entity found" in notes["filings:docs/market-note.md"]
    assert "sources.filings.entities" in notes["filings:docs/market-note.md"]
    assert len([n for n in notes.values() if "no entity" in n]) == 1
    result = CliRunner().invoke(
        app, ["docs", "show", "filings:docs/fab-report.txt", "-w", str(root), "--json"]
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["entity"] == "fabrikam"


def test_an_unknown_entity_in_configuration_stops_the_sync(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    configure(root, "bad", CONFIG.replace('= "fabrikam" }', '= "tailspin" }'))
    (root / "entities.yaml").write_text(ENTITIES, encoding="utf-8")
    (root / "docs").mkdir()
    (root / "docs" / "fab-report.txt").write_text(FILINGS["fab-report.txt"], encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "filings")
    ws = Workspace.open(root)
    with open_runtime(ws) as rt, pytest.raises(ProblemsError) as caught:
        DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="test")
        assert rt.state.active_generation("bad") is None
    [problem] = caught.value.problems
    assert problem.code == "entity_unknown" and "tailspin" in problem.message
    assert problem.where == "sources.filings.entities"


# -- asking: the entity is the scope ------------------------------------------------------------


def test_a_question_naming_an_entity_reads_only_its_documents(service: AnswerService) -> None:
    answer = service.ask("What were Fabrikam's net sales in the second quarter of 2023?")
    assert answer.status == "found", answer.diagnostics
    assert answer.sources
    assert {s.doc_id for s in answer.sources} <= {
        "filings:docs/fab-report.txt",
        "filings:docs/fab-buyback.md",
    }
    assert "1,875" in answer.text
    entities = answer.diagnostics["entities"]
    assert entities == {
        "named": ["fabrikam"],
        "scope": ["fabrikam"],
        "without_documents": [],
        "reason": None,
    }
    assert answer.diagnostics["filters"]["entity"] == ["fabrikam"]


def test_an_entity_without_documents_is_nothing_found_never_another_entitys_text(
    service: AnswerService,
) -> None:
    """Contoso's filing mentions Northwind Traders (a lawsuit): without the scope its text
    answered a question about Northwind's revenue as `found`."""
    answer = service.ask("What was Northwind's revenue in the second quarter of 2023?")
    assert answer.status == "nothing_found"
    assert answer.sources == []
    entities = answer.diagnostics["entities"]
    assert entities["named"] == ["northwind"] and entities["scope"] == []
    assert "Northwind Traders (northwind)" in entities["reason"]
    assert "no document of it is indexed" in entities["reason"]


def test_two_entities_retrieve_for_each(service: AnswerService) -> None:
    answer = service.ask("Compare Contoso's and Fabrikam's revenue in the second quarter of 2023")
    assert answer.status == "found", answer.diagnostics
    docs = {s.doc_id for s in answer.sources or []}
    assert "filings:docs/contoso-q2-2023.md" in docs
    assert docs & {"filings:docs/fab-report.txt", "filings:docs/fab-buyback.md"}
    assert answer.diagnostics["entities"]["scope"] == ["contoso", "fabrikam"]


def test_a_question_naming_no_entity_is_not_scoped(service: AnswerService) -> None:
    answer = service.ask("How much did demand for industrial pumps in Europe grow in 2023?")
    assert answer.diagnostics["entities"] is None
    assert "entity" not in answer.diagnostics["filters"]
    assert answer.status == "found"
    assert "filings:docs/market-note.md" in {s.doc_id for s in answer.sources or []}


# -- issue 24, point 2: a quarter asked against the quarters the documents report on ----------


def test_a_quarter_the_filing_states_as_a_period_end_is_not_an_absent_term(
    service: AnswerService,
) -> None:
    """Fabrikam's report says "the quarter ended June 30, 2023", never "Q2": under the entity
    scope, "Q2 2023" is checked against the quarters it reports on."""
    answer = service.ask("What were Fabrikam's net sales in Q2 2023?")
    assert answer.status == "found", answer.diagnostics["relevance"]
    assert "1,875" in answer.text
    terms = {t["text"]: t for t in answer.diagnostics["relevance"]["terms"]}
    assert terms["Q2"]["retrieved"] is True


def test_a_quarter_no_document_covers_is_nothing_found_naming_it(service: AnswerService) -> None:
    answer = service.ask("What were Fabrikam's net sales in Q4 2021?")
    assert answer.status == "nothing_found"
    relevance = answer.diagnostics["relevance"]
    assert relevance["verdict"] == "absent_term" and "Q4" in relevance["missing"]


def test_a_period_end_the_question_states_is_checked_against_the_periods_reported(
    service: AnswerService,
) -> None:
    """A walk through real filings asked Apple's "three months ended July 1, 2023" of a filing
    covering April 1 only, and got that quarter's figures marked `found`: the date's words were
    all somewhere in the filing."""
    answer = service.ask("What were Fabrikam's net sales for the three months ended June 30, 2023?")
    assert answer.status == "found", answer.diagnostics["relevance"]
    assert "1,875" in answer.text
    terms = {t["text"]: t for t in answer.diagnostics["relevance"]["terms"]}
    assert terms["three months ended June 30, 2023"]["retrieved"] is True

    # June, 30 and 2021 are each in Fabrikam's documents; the quarter is in none
    missed = service.ask("What were Fabrikam's net sales for the three months ended June 30, 2021?")
    assert missed.status == "nothing_found", missed.diagnostics["relevance"]
    relevance = missed.diagnostics["relevance"]
    assert relevance["verdict"] == "absent_term"
    assert "three months ended June 30, 2021" in relevance["missing"]
