"""Issue 22, point 5: the agent survives hostile input. Through a real `tht agent worker`
process on an analytics workspace with a wiki: a page name too long for the file system, a
symbolic link loop in the wiki folder, and SQL of 600 nested parentheses each come back to the
model as a coded refusal; the job ends, the worker exits normally, and the other pages are
still listed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agent.conftest import PAGES
from tests.analytics.conftest import WIKI_SOURCE, make_analytics_workspace
from tests.fake_llm import FakeLLMServer, ToolCallScript

ROOT = Path(__file__).resolve().parents[2]
DEEP_SQL = "SELECT " + "(" * 600 + "1" + ")" * 600 + " AS n FROM analytics.v_ricoveri"


def tht_process(ws: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OPENAI_API_KEY": "test-key"}
    return subprocess.run(
        [sys.executable, "-c", "from thoth.cli.main import main; main()", *args, "-w", str(ws)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_hostile_tool_inputs_are_coded_refusals_and_the_worker_lives(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    aw = make_analytics_workspace(
        tmp_path / "ws",
        extra=(
            f'\n[llm]\nprovider = "openai"\nbase_url = "{llm.url}/v1"\nmodel = "fake-model"\n'
            'timeout_seconds = 20\n\n[agent]\nwiki = "wiki"\n'
        ),
    )
    for rel, text in PAGES.items():
        aw.write(f"wiki/{rel}", text)
    # Committed, as a hostile commit would bring them: a sync refuses links in a source, so
    # they are left out of its globs, yet the served snapshot of the folder holds them.
    (aw.root / "wiki" / "mercati" / "anello.md").symlink_to("anello.md")  # a link to itself
    (aw.root / "wiki" / "giro").symlink_to(".")  # a directory loop
    links = '\nexclude = ["wiki/giro", "wiki/mercati/anello.md"]'
    aw.write(
        "thoth.toml",
        (aw.root / "thoth.toml").read_text("utf-8")
        + WIKI_SOURCE.replace('labels = ["public"]', f'labels = ["public"]{links}'),
    )
    aw.serve_wiki()
    llm.reply_tool_calls(
        ToolCallScript("wiki_read", {"path": "x" * 5000 + ".md"}),
        ToolCallScript("wiki_read", {"path": "mercati/anello.md"}),
        ToolCallScript("wiki_list", {}),
        ToolCallScript("wiki_search", {"query": "Giappone"}),
        ToolCallScript("run_sql", {"sql": DEEP_SQL}),
        ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}),
    )
    llm.reply("Il vino cresce del 12% in Giappone (mercati/giappone.md).")
    submitted = tht_process(aw.root, "agent", "submit", "Giappone?", "--json")
    assert submitted.returncode == 0, submitted.stderr
    job = json.loads(submitted.stdout)["id"]

    ran = tht_process(aw.root, "agent", "worker", "--once", "--id", "w-hostile", "--json")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["jobs"] == 1
    assert "Traceback" not in ran.stderr

    shown = tht_process(aw.root, "agent", "show", job, "--json")
    done = json.loads(shown.stdout)
    # The unreadable paths were made good by a later read; the refused SQL never ran: partial.
    assert done["status"] == "partial", (done["error_code"], done["error"])
    assert done["error_code"] == "sql_refused"
    assert [(g["code"], g["recovered"]) for g in done["result"]["gaps"]] == [
        ("path_unreadable", True),
        ("path_unreadable", True),
        ("sql_refused", False),
    ]
    tools: list[dict[str, Any]] = [s["data"] for s in done["steps"] if s["kind"] == "tool"]
    codes = [t.get("error_code") for t in tools]
    assert codes == ["path_unreadable", "path_unreadable", None, None, "sql_refused", None]
    listed = json.loads(tools[2]["result"])["pages"]
    assert "mercati/giappone.md" in [p["path"] for p in listed]
    assert "sql_too_deep" in tools[4]["result"] or "nests 600" in tools[4]["result"]


def test_a_tool_out_of_memory_is_a_coded_failure_and_a_broken_run_fails_only_its_job(
    tmp_path: Path, llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process: a tool that raises MemoryError reaches the model as `tool_failed`; a run
    that breaks on something nobody foresaw ends its job `failed` (`worker_error`) and the
    worker takes the next job."""
    from thoth.agent import Worker, submit_job
    from thoth.agent.loop import AgentRun
    from thoth.agent.wiki import WikiShelf
    from thoth.config import LLMSettings
    from thoth.llm.openai_chat import OpenAIChat
    from thoth.runtime import open_runtime

    aw = make_analytics_workspace(tmp_path / "ws", extra='\n[agent]\nwiki = "wiki"\n')
    for rel, text in PAGES.items():
        aw.write(f"wiki/{rel}", text)
    aw.serve_wiki()

    def no_memory(*_: object, **__: object) -> object:
        raise MemoryError

    monkeypatch.setattr(WikiShelf, "search", no_memory)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    settings = LLMSettings(base_url=llm.url + "/v1", model="fake-model", timeout_seconds=20)
    with open_runtime(aw.ws, aw.embedder) as rt:
        worker = Worker(rt, id="w1", client=OpenAIChat(settings, "test-key"))
        try:
            llm.reply_tool_calls(
                ToolCallScript("wiki_search", {"query": "Giappone"}),
                ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}),
            )
            llm.reply("Cresce del 12% (mercati/giappone.md).")
            first = submit_job(worker.settings, worker.queue, "Giappone?")
            assert worker.run(once=True) == 1
            steps = [s.data for s in worker.queue.steps(first.id) if s.kind == "tool"]
            assert steps[0]["error_code"] == "tool_failed"
            assert "MemoryError" in steps[0]["result"]
            # the search broke: the answer from the page it read is partial, with the gap
            ended = worker.queue.get(first.id)
            assert ended.status == "partial" and ended.error_code == "tool_failed"
            assert ended.result is not None and ended.result["sources"]

            def broken(self: AgentRun) -> None:
                raise RuntimeError("an invariant nobody checked")

            monkeypatch.setattr(AgentRun, "run", broken)
            second = submit_job(worker.settings, worker.queue, "Francia?")
            third = submit_job(worker.settings, worker.queue, "Margini?")
            assert worker.run(once=True) == 1 and worker.run(once=True) == 1
            for job in (second, third):
                ended = worker.queue.get(job.id)
                assert ended.status == "failed" and ended.error_code == "worker_error"
                assert "RuntimeError" in (ended.error or "")
        finally:
            worker.close()
