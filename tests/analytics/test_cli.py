"""The commands around the numeric path: `tht ask --json`, `tht analytics grant-sql`,
`tht analytics metrics-page` (and that docs sync never indexes the page), `tht eval run` with
numeric cases checked against the store, `tht verify` naming catalog entries whose views are
gone, and the removed `numeric_patterns` setting."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.analytics.conftest import (
    CATALOG,
    THRESHOLD,
    UNCOVERED,
    AnalyticsWorkspace,
    config,
    make_analytics_workspace,
)
from tests.analytics.store import DATA_DATE, STORE_FILE
from tests.conftest import commit_all
from thoth.answer.service import Answer
from thoth.cli.main import app
from thoth.errors import ConfigError
from thoth.evaluation.answers import AnswerCase, judge
from thoth.knowledge.sync import DocsSync
from thoth.runtime import open_runtime
from thoth.workspace import Workspace

runner = CliRunner()

WIKI_SOURCE = (
    '[[sources]]\nname = "wiki"\nkind = "wiki"\ninclude = ["wiki/**/*.md"]\n'
    'channel = "salute"\nlabels = ["public"]\n\n'
)
METRICS = (
    '\n[[analytics.metrics]]\nquery = "ricoveri-per-reparto"\n'
    "parameters = { anno = 2024 }\n"
    '\n[[analytics.metrics]]\nquery = "degenza-media"\ntitle = "Degenza media 2024"\n'
    "parameters = { anno = 2024 }\n"
)


def test_ask_json_on_the_numeric_path(tmp_path: Path) -> None:
    aw = make_analytics_workspace(tmp_path / "ws")
    aw.activate()
    result = runner.invoke(
        app,
        ["ask", "Quanti ricoveri ha avuto la Pediatria nel 2024?", "-w", str(aw.root), "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["status"] == "computed"
    assert "sources" not in data
    assert data["provenance"]["query_id"] == "ricoveri-reparto"
    assert data["provenance"]["data_date"] == DATA_DATE
    human = runner.invoke(
        app, ["ask", "Quanti ricoveri ha avuto la Pediatria nel 2024?", "-w", str(aw.root)]
    )
    assert "Provenance: query ricoveri-reparto" in human.output
    assert f"data date {DATA_DATE}" in human.output and "Status: computed" in human.output


def test_grant_sql_prints_a_views_only_role(tmp_path: Path) -> None:
    aw = make_analytics_workspace(tmp_path / "ws")
    sqlite = runner.invoke(app, ["analytics", "grant-sql", "-w", str(aw.root)])
    assert sqlite.exit_code == 1 and "PostgreSQL store" in sqlite.output
    aw.write(
        "thoth.toml",
        config(THRESHOLD, UNCOVERED).replace(
            'dialect = "sqlite"\nfiles = { analytics = "store/analytics.sqlite" }',
            'dialect = "postgresql"\nurl_env = "X_URL"\nschemas = ["analytics"]',
        ),
    )
    result = runner.invoke(app, ["analytics", "grant-sql", "-w", str(aw.root), "--role", "rr"])
    assert result.exit_code == 0
    # Guarded: before the first refresh the schema does not exist yet (a NOTICE, not an error).
    assert "'GRANT USAGE ON SCHEMA %I TO %I', 'analytics', 'rr'" in result.stdout
    assert (
        "relkind IN ('v', 'm')" in result.stdout
        and "ON ALL TABLES" not in result.stdout.split("--   REVOKE")[0]
    )


def test_the_metrics_page_is_written_and_never_indexed(tmp_path: Path) -> None:
    aw = make_analytics_workspace(tmp_path / "ws")
    aw.write(
        "thoth.toml",
        config(THRESHOLD, UNCOVERED, extra=METRICS).replace(
            "[analytics]", WIKI_SOURCE + "[analytics]"
        ),
    )
    aw.write("wiki/ps/attese.md", "---\ntitle: Attese\n---\n# Attese\n\nIl codice verde attende.\n")
    aw.activate()
    result = runner.invoke(app, ["analytics", "metrics-page", "-w", str(aw.root), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["path"] == "wiki/metriche.md"
    assert [f["query_id"] for f in data["figures"]] == ["ricoveri-per-reparto", "degenza-media"]
    page = (aw.root / "wiki/metriche.md").read_text("utf-8")
    assert page.startswith("---\ntitle: Metriche dall'archivio analitico\nknowledge: false\n---")
    assert "| Pediatria | 3 |" in page and "## Degenza media 2024" in page
    assert page.count(f"dati aggiornati al {DATA_DATE}") == 2
    commit_all(aw.root, "metrics page")
    with open_runtime(aw.ws, aw.embedder) as rt:
        report = DocsSync(rt.ws, rt.state, rt.backend, rt.embedder).run()
    skipped = {entry["doc_id"] for entry in report.not_knowledge}
    assert "wiki:wiki/metriche.md" in skipped
    assert "wiki:wiki/metriche.md" not in report.created
    assert "wiki:wiki/ps/attese.md" in report.created  # the wiki itself is indexed


def test_eval_run_checks_numeric_cases_against_the_store(tmp_path: Path) -> None:
    # The CLI routes with the bundled embedder, whose scores are compressed: in domain ~1.0,
    # this text question 0.84.
    aw = make_analytics_workspace(tmp_path / "ws", threshold=0.95, uncovered=None)
    aw.write(
        "answers/evaluation.yaml",
        """\
- id: pediatria-2024
  question: Quanti ricoveri ha avuto la Pediatria nel 2024?
  expect:
    numeric: {query: ricoveri-reparto, parameters: {reparto: Pediatria, anno: 2024}, value: 3}
- id: pediatria-dal-db
  question: Quanti ricoveri ha avuto la Pediatria nel 2024?
  expect:
    numeric: {query: ricoveri-reparto, parameters: {reparto: Pediatria, anno: 2024}}
- id: valore-sbagliato
  question: Quanti ricoveri ha avuto la Pediatria nel 2024?
  expect:
    numeric: {query: ricoveri-reparto, value: 4}
- id: testo
  question: Qual è il numero di minuti di attesa massima per un codice verde?
  expect:
    text_path: true
""",
    )
    aw.activate()
    result = runner.invoke(app, ["eval", "run", "-w", str(aw.root), "--json"])
    assert result.exit_code == 1, result.output
    cases = {c["id"]: c for c in json.loads(result.stdout)["cases"]}
    assert cases["pediatria-2024"]["verdict"] == "pass"
    assert cases["pediatria-dal-db"]["verdict"] == "pass"  # the store computed the reference
    assert cases["valore-sbagliato"]["numeric_problems"] == ["value 3 instead of 4"]
    assert cases["testo"]["numeric_problems"] == []
    assert cases["testo"]["status"] not in ("computed", "needs_parameter")


def test_a_text_case_answered_by_the_store_is_a_failure() -> None:
    case = AnswerCase.model_validate({"id": "t", "question": "q", "expect": {"text_path": True}})
    answer = Answer("a", "q", "3", "computed", None, "extractive", provenance={"query_id": "x"})
    assert judge(case, answer).numeric_problems == [
        "answered by the analytics store (status computed)"
    ]


def test_verify_names_catalog_entries_whose_views_are_gone(tmp_path: Path) -> None:
    aw = make_analytics_workspace(tmp_path / "ws")
    aw.activate()
    ok = runner.invoke(app, ["verify", "-w", str(aw.root), "--json"])
    assert not [f for f in json.loads(ok.stdout)["findings"] if f["code"].startswith("catalog")]
    with sqlite3.connect(aw.root / STORE_FILE) as conn:
        conn.execute("DROP VIEW v_reparti")
    conn.close()
    result = runner.invoke(app, ["verify", "-w", str(aw.root), "--json"])
    assert result.exit_code == 1
    [finding] = [
        f for f in json.loads(result.stdout)["findings"] if f["code"] == "catalog_view_missing"
    ]
    assert (
        finding["where"]
        == "analytics/queries/ricoveri-reparto.yaml [parameters.reparto.values_from]"
    )
    assert "analytics.v_reparti" in finding["message"]


def test_the_removed_numeric_patterns_setting_is_refused_with_what_to_do(tmp_path: Path) -> None:
    aw = make_analytics_workspace(tmp_path / "ws")
    aw.write(
        "thoth.toml",
        config(THRESHOLD).replace(
            "[[channels]]", '[answers.routing]\nnumeric_patterns = ["quanti"]\n\n[[channels]]'
        ),
    )
    with pytest.raises(ConfigError, match=r"numeric_patterns was removed.*delete numeric_patterns"):
        Workspace.open(aw.root)


def test_the_catalog_fixture_is_the_one_checked(tmp_path: Path) -> None:
    # Guard: the fixture's catalog keeps passing `tht analytics check`.
    aw: AnalyticsWorkspace = make_analytics_workspace(tmp_path / "ws")
    assert len(CATALOG) == 3
    result = runner.invoke(app, ["analytics", "check", "-w", str(aw.root)])
    assert result.exit_code == 0, result.output
