"""The demo, unchanged but for `[index] backend = "postgres"`: every generation it publishes and
syncs, its searches, answers, SQL session memories and service run on PostgreSQL + pgvector
(a real server, tests/pgvector.py)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from tests.conftest import EXAMPLES
from thoth.cli.demo import DEMO_NAME, DEMO_QUESTIONS, PREPARED_VECTORS, run_demo
from thoth.index.postgres import PostgresBackend
from thoth.runtime import open_answer_service, open_runtime
from thoth.workspace import Workspace

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

URL_ENV = "THOTH_DEMO_INDEX_URL"


def test_the_demo_runs_on_postgres(
    pgvector_url: str,
    pgvector_schema: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    examples = tmp_path / "examples"
    shutil.copytree(EXAMPLES / DEMO_NAME, examples / DEMO_NAME)
    shutil.copy(EXAMPLES / PREPARED_VECTORS, examples / PREPARED_VECTORS)
    config = examples / DEMO_NAME / "thoth.toml"
    config.write_text(
        config.read_text("utf-8")
        + f'\n[index]\nbackend = "postgres"\nurl_env = "{URL_ENV}"\nschema = "{pgvector_schema}"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("THOTH_EXAMPLES", str(examples))
    monkeypatch.setenv(URL_ENV, pgvector_url)  # the URL from the environment, as in production

    out = io.StringIO()
    target = run_demo(Console(file=out, width=120), tmp_path / "demo")
    text = out.getvalue()
    assert "gate passed" in text and "activated: generation" in text
    assert "caveat:" in text  # a caveat reached a search result

    ws = Workspace.open(target)
    rt = open_runtime(ws)
    try:
        assert isinstance(rt.backend, PostgresBackend)
        active = rt.state.active_generation(ws.settings.workspace)
        assert active is not None and active.config["backend"] == "postgres"
        assert active.id in rt.backend.sealed()
        assert not (target / ".thoth" / "index").exists()  # nothing went to Qdrant Edge
        outcome = rt.search().search("fascia pediatrica", "sql_generation")
        assert outcome.available and outcome.results
    finally:
        rt.close()
    service = open_answer_service(ws)
    try:
        answer = service.ask(DEMO_QUESTIONS[0][1], **DEMO_QUESTIONS[0][2])
    finally:
        service.close()
    assert answer.status == "found" and answer.sources
