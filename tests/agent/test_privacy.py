"""Issue 22, points 1-3 on the agent's analytics tools, through the real worker and the local
fake model server: a column the catalog reviewed as an identity is pseudonymised on
catalog_run and on run_sql whatever its name, an alias launders nothing (the protection
follows the lineage), and what the model received is scanned for the values."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.analytics.conftest import AnalyticsWorkspace, make_analytics_workspace
from tests.analytics.store import STORE_FILE
from tests.fake_llm import FakeLLMServer, ToolCallScript
from thoth.agent import Worker, submit_job
from thoth.config import LLMSettings
from thoth.llm.openai_chat import OpenAIChat
from thoth.runtime import open_runtime

PATIENTS = [("PZ-0001", 3), ("PZ-0002", 5), ("PZ-0003", 1)]  # codes no pattern recognises
QUERY = """\
id: degenze-per-paziente
description: Giorni di degenza di ciascun paziente
examples:
  - Degenza per paziente
measure: list
sql: |
  SELECT codice_paziente, giorni FROM analytics.v_pazienti ORDER BY codice_paziente
result:
  shape: table
  columns:
    codice_paziente: {label: Paziente, kind: identity}
    giorni: {label: Giorni, kind: quantity}
"""
PRIVACY = "\n[privacy]\npseudonymise = true\n"


@pytest.fixture
def worker(tmp_path: Path, llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Worker]:
    aw: AnalyticsWorkspace = make_analytics_workspace(tmp_path / "ws", extra=PRIVACY)
    with sqlite3.connect(aw.root / STORE_FILE) as conn:
        conn.execute("CREATE TABLE paziente (codice_paziente TEXT, giorni INTEGER)")
        conn.executemany("INSERT INTO paziente VALUES (?, ?)", PATIENTS)
        conn.execute("CREATE VIEW v_pazienti AS SELECT codice_paziente, giorni FROM paziente")
    conn.close()
    aw.write("analytics/queries/degenze-per-paziente.yaml", QUERY)
    aw.write("wiki/nota.md", "---\ntitle: Nota\nlabels: [public]\n---\n# Nota\n\nNulla.\n")
    aw.serve_wiki()
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    settings = LLMSettings(base_url=llm.url + "/v1", model="fake-model", timeout_seconds=20)
    with open_runtime(aw.ws, aw.embedder) as rt:
        runner = Worker(rt, id="w1", client=OpenAIChat(settings, "test-key"))
        try:
            yield runner
        finally:
            runner.close()


def tool_results(worker: Worker, llm: FakeLLMServer, *calls: ToolCallScript) -> list[Any]:
    llm.reply_tool_calls(*calls)
    llm.reply("Fatto.")
    job = submit_job(worker.settings, worker.queue, "Degenze dei pazienti")
    assert worker.run(once=True) == 1
    steps = [s.data for s in worker.queue.steps(job.id) if s.kind == "tool"]
    return [json.loads(s["result"]) for s in steps]


def received(llm: FakeLLMServer) -> str:
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in llm.requests)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT codice_paziente AS importo, giorni FROM analytics.v_pazienti",
        "SELECT codice_paziente AS data FROM analytics.v_pazienti",
        "SELECT p.codice_paziente || '' AS n FROM analytics.v_pazienti p",
        "WITH x AS (SELECT codice_paziente AS c FROM analytics.v_pazienti) SELECT c AS categoria FROM x",
        "SELECT giorni AS totale FROM analytics.v_pazienti UNION ALL SELECT codice_paziente FROM analytics.v_pazienti",
        "SELECT * FROM analytics.v_pazienti",
        "SELECT (SELECT max(codice_paziente) FROM analytics.v_pazienti) AS importo",
    ],
)
def test_run_sql_protects_an_output_by_its_lineage(
    worker: Worker, llm: FakeLLMServer, sql: str
) -> None:
    [out] = tool_results(worker, llm, ToolCallScript("run_sql", {"sql": sql}))
    assert out["rows"], out
    for code, _ in PATIENTS:
        assert code not in json.dumps(out) and code not in received(llm)
    assert any("codice_paziente" in v["why"] for v in out["column_kinds"].values())


def test_an_untraced_output_is_the_strictest_kind_and_says_so(
    worker: Worker, llm: FakeLLMServer
) -> None:
    sql = "SELECT x.* FROM (SELECT codice_paziente AS importo FROM analytics.v_pazienti) x"
    [out] = tool_results(worker, llm, ToolCallScript("run_sql", {"sql": sql}))
    assert out["rows"] == [["[MASKED]"]] * 3
    assert "untraced" in out["column_kinds"]["importo"]["why"]


def test_catalog_run_pseudonymises_a_reviewed_identity_named_like_a_code(
    worker: Worker, llm: FakeLLMServer
) -> None:
    call = ToolCallScript("catalog_run", {"query_id": "degenze-per-paziente"})
    [out] = tool_results(worker, llm, call)
    assert [row[1] for row in out["rows"]] == [3, 5, 1]
    assert all(row[0].startswith("[IDENTITA:") for row in out["rows"])
    for code, _ in PATIENTS:
        assert code not in received(llm)


def test_harmless_outputs_still_pass(worker: Worker, llm: FakeLLMServer) -> None:
    sql = "SELECT giorni AS g, count(DISTINCT codice_paziente) AS n FROM analytics.v_pazienti GROUP BY giorni ORDER BY giorni"
    [out] = tool_results(worker, llm, ToolCallScript("run_sql", {"sql": sql}))
    assert out["rows"] == [[1, 1], [3, 1], [5, 1]]
