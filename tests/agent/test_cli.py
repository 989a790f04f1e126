"""`tht agent` end to end: submit refused without a model, submit/list/show/cancel, the real
worker against the local fake model server, and a worker process SIGKILLed mid-job whose job
another worker recovers and finishes (SQLite and PostgreSQL state)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.agent.conftest import KEY_ENV, make_workspace
from tests.fake_llm import FakeLLMServer, ToolCallScript
from thoth.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def tht(*args: str) -> tuple[int, Any]:
    result = runner.invoke(app, list(args))
    try:
        return result.exit_code, json.loads(result.stdout)
    except json.JSONDecodeError:
        return result.exit_code, result.stdout + result.stderr


def test_without_a_model_key_job_creation_is_refused(
    tmp_path: Path, llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    ws = make_workspace(tmp_path / "ws", llm.url)
    code, body = tht("agent", "submit", "Come va?", "-w", str(ws), "--json")
    assert code == 4 and body["code"] == "agent_unavailable"
    assert KEY_ENV in body["error"] and "tht ask" in body["problems"][0]["hint"]
    code, body = tht("agent", "list", "-w", str(ws), "--json")
    assert code == 0 and body == []  # nothing was queued


def test_a_disabled_agent_refuses_jobs(tmp_path: Path, llm: FakeLLMServer, key: str) -> None:
    ws = make_workspace(tmp_path / "ws", llm.url, agent="enabled = false")
    code, body = tht("agent", "submit", "Come va?", "-w", str(ws), "--json")
    assert code == 4 and body["code"] == "agent_unavailable" and "disabled" in body["error"]


def test_an_unknown_label_is_a_bad_request(tmp_path: Path, llm: FakeLLMServer, key: str) -> None:
    ws = make_workspace(tmp_path / "ws", llm.url)
    code, body = tht("agent", "submit", "q", "--labels", "secret", "-w", str(ws), "--json")
    assert code == 2 and body["code"] == "bad_request" and "secret" in body["error"]


def test_submit_list_show_cancel(tmp_path: Path, llm: FakeLLMServer, key: str) -> None:
    ws = make_workspace(tmp_path / "ws", llm.url)
    code, job = tht(
        "agent", "submit", " Sintesi  dei mercati ", "--labels", "public,internal", "-w",
        str(ws), "--json",
    )  # fmt: skip
    assert code == 0 and job["status"] == "queued" and job["question"] == "Sintesi dei mercati"
    assert job["request"] == {"labels": ["public", "internal"], "channel": None}
    code, jobs = tht("agent", "list", "-w", str(ws), "--json")
    assert [j["id"] for j in jobs] == [job["id"]]
    code, shown = tht("agent", "cancel", job["id"], "-w", str(ws), "--json")
    assert code == 0 and shown["status"] == "cancelled"
    code, again = tht("agent", "cancel", job["id"], "-w", str(ws), "--json")
    assert code == 1 and again["code"] == "job_finished"
    code, missing = tht("agent", "show", "job_nope", "-w", str(ws), "--json")
    assert code == 1 and missing["code"] == "job_not_found"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_worker_runs_a_job_to_a_sourced_answer(
    tmp_path: Path, llm: FakeLLMServer, key: str, provider: str
) -> None:
    ws = make_workspace(tmp_path / "ws", llm.url, provider, served=True)
    _, job = tht("agent", "submit", "Giappone?", "-w", str(ws), "--json")
    llm.reply_tool_calls(ToolCallScript("wiki_search", {"query": "Giappone"}))
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply("Cresce del 12% (mercati/giappone.md).")
    code, ran = tht("agent", "worker", "--once", "--id", "w-test", "-w", str(ws), "--json")
    assert code == 0 and ran["jobs"] == 1 and ran["worker"] == "w-test"
    code, shown = tht("agent", "show", job["id"], "-w", str(ws), "--json")
    assert shown["status"] == "completed" and shown["claimed_by"] == "w-test"
    assert [s["path"] for s in shown["result"]["sources"]] == ["mercati/giappone.md"]
    assert [s["kind"] for s in shown["steps"]] == ["model", "tool", "model", "tool", "model"]
    result = runner.invoke(app, ["agent", "show", job["id"], "-w", str(ws), "--transcript"])
    assert "wiki mercati/giappone.md (Mercato Giappone)" in result.stdout
    assert "wiki_read" in result.stdout
    code, ran = tht("agent", "worker", "--once", "-w", str(ws), "--json")
    assert code == 0 and ran["jobs"] == 0  # nothing queued: --once returns


@pytest.fixture(params=["sqlite", "postgresql"])
def state_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.sqlite'}"
    pg: str = request.getfixturevalue("pg_url")
    return pg


def test_a_sigkilled_worker_s_job_is_recovered_and_finished_by_another(
    tmp_path: Path, llm: FakeLLMServer, key: str, state_url: str
) -> None:
    ws = make_workspace(
        tmp_path / "ws",
        llm.url,
        agent="lease_seconds = 1.0\nmax_attempts = 2\npoll_seconds = 0.2",
        served=True,
        extra=f'\n[state]\nurl = "{state_url}"\n',
    )
    _, job = tht("agent", "submit", "Giappone?", "-w", str(ws), "--json")
    # The first worker reads a page, then hangs in its second model call: killed there.
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply("never delivered", delay=60)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    doomed = subprocess.Popen(
        [sys.executable, "-c", "from thoth.cli.main import main; main()", "agent", "worker",
         "--once", "--id", "doomed", "-w", str(ws)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(llm.requests) < 2:
            assert doomed.poll() is None, doomed.stderr.read() if doomed.stderr else ""
            assert time.monotonic() < deadline, "the worker never reached its second turn"
            time.sleep(0.1)
    finally:
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=30)
    _, held = tht("agent", "show", job["id"], "-w", str(ws), "--json")
    assert held["status"] == "running" and held["claimed_by"] == "doomed"
    assert [s["kind"] for s in held["steps"]] == ["model", "tool"]
    time.sleep(1.2)  # the dead worker's lease runs out
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply("Cresce del 12% (mercati/giappone.md).")
    code, ran = tht("agent", "worker", "--once", "--id", "rescuer", "-w", str(ws), "--json")
    assert code == 0 and ran["jobs"] == 1
    _, done = tht("agent", "show", job["id"], "-w", str(ws), "--json")
    assert done["status"] == "completed" and done["claimed_by"] == "rescuer"
    assert done["attempts"] == 2
    attempts = [(s["attempt"], s["kind"]) for s in done["steps"]]
    assert attempts == [(1, "model"), (1, "tool"), (2, "model"), (2, "tool"), (2, "model")]
