"""`Operations` without HTTP: what any transport (HTTP, MCP) relies on."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from tests.analytics.conftest import make_analytics_workspace
from thoth.service.operations import Operations


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
