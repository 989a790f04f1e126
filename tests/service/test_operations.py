"""`Operations` without HTTP: what any transport (HTTP, MCP) relies on."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.analytics.conftest import make_analytics_workspace
from tests.answer.test_answer import QUESTION, Corpus
from tests.fake_embeddings import FakeEmbeddingServer
from thoth.service.models import AskBody
from thoth.service.operations import Operations
from thoth.workspace import Workspace


def test_calls_from_many_threads_run_on_the_one_engine_thread(tmp_path: Path) -> None:
    analytics_ws = make_analytics_workspace(tmp_path / "ws")
    analytics_ws.activate()
    # A transport calls from whatever thread it has (uvicorn's thread pool, an MCP session):
    # the analytics store's SQLite connection, opened on the first call, must keep working.
    ops = Operations(analytics_ws.ws)
    try:
        reports: list[dict[str, Any]] = []
        for _ in range(3):
            thread = threading.Thread(target=lambda: reports.append(ops.readiness()))
            thread.start()
            thread.join()
    finally:
        ops.close()
    details = [r["components"]["analytics"] for r in reports]
    assert all(d["ok"] for d in details), details
    assert all(d["detail"].startswith("data date ") for d in details)


def test_a_rate_above_its_threshold_is_a_warning_in_the_service_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same check as `tht verify`, after an answer, at most every ALERT_CHECK_SECONDS."""
    with FakeEmbeddingServer(dim=8) as embeddings:
        root = tmp_path / "ws"
        root.mkdir()
        corpus = Corpus(root, embeddings)
        corpus.publish()
        config = root / "thoth.toml"
        alerts = "\n[answers.alerts]\nmin_answers = 2\nnothing_found_rate = 0.4\n"
        config.write_text(config.read_text("utf-8") + alerts, "utf-8")
        ops = Operations(Workspace.open(root))
        try:
            with caplog.at_level(logging.WARNING, logger="thoth.service"):
                ops.ask(AskBody(question=QUESTION), None)
                assert not [r for r in caplog.records if "nothing_found_rate" in r.message]
                ops._next_rate_check = 0.0  # as if ALERT_CHECK_SECONDS had passed
                ops.ask(AskBody(question=QUESTION, year=1990), None)  # nothing_found
                ops.ask(AskBody(question=QUESTION, year=1990), None)  # within the interval
        finally:
            ops.close()
    [warned] = [r.message for r in caplog.records if "nothing_found_rate" in r.message]
    assert "caller (local): nothing_found_rate 50.0% over 2 answers" in warned, warned
