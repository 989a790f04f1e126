"""The agent reads the wiki at the commit the index serves, never the working tree (issue 29,
point 5): an edit nobody synced — left in the working tree, or committed without a sync — is
invisible to it, and a new page too; after `tht docs sync` the job reads the new text."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from typer.testing import CliRunner

from tests.agent.conftest import PAGES, make_workspace, serve_wiki
from tests.conftest import commit_all, git
from tests.fake_llm import FakeLLMServer, ToolCallScript
from thoth.cli.main import app

runner = CliRunner()
PAGE = "mercati/giappone.md"
EDITED = PAGES[PAGE].replace("cresce del 12%", "cresce del 50%")
NEW = "---\ntitle: Cina\nlabels: [public]\n---\n# Cina\n\nIl vino in Cina cresce.\n"


def run_job(ws: Path, llm: FakeLLMServer) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    llm.reply_tool_calls(
        ToolCallScript("wiki_read", {"path": PAGE}),
        ToolCallScript("wiki_list", {}),
        ToolCallScript("wiki_search", {"query": "Cina"}),
        ToolCallScript("wiki_read", {"path": "mercati/cina.md"}),
    )
    llm.reply(f"Il vino in Giappone cresce ({PAGE}).")
    submitted = runner.invoke(app, ["agent", "submit", "Giappone?", "-w", str(ws), "--json"])
    assert submitted.exit_code == 0, submitted.output
    ran = runner.invoke(app, ["agent", "worker", "--once", "-w", str(ws), "--json"])
    assert ran.exit_code == 0, ran.output
    job_id = json.loads(submitted.stdout)["id"]
    shown = runner.invoke(app, ["agent", "show", job_id, "-w", str(ws), "--json"])
    job = json.loads(shown.stdout)
    tools = [json.loads(s["data"]["result"]) for s in job["steps"] if s["kind"] == "tool"]
    return job, tools


def test_an_unsynced_edit_is_invisible_and_the_served_page_is_cited(
    tmp_path: Path, llm: FakeLLMServer, key: str
) -> None:
    ws = make_workspace(tmp_path / "ws", llm.url, served=True)
    served_commit = git(ws, "rev-parse", "HEAD").strip()
    served_sha = hashlib.sha256(PAGES[PAGE].encode("utf-8")).hexdigest()
    (ws / "wiki" / PAGE).write_text(EDITED, encoding="utf-8")  # in the working tree only
    (ws / "wiki" / "mercati" / "cina.md").write_text(NEW, encoding="utf-8")
    job, (read, listed, searched, new) = run_job(ws, llm)
    assert "cresce del 12%" in read["text"] and "50%" not in read["text"]
    assert "mercati/cina.md" not in [p["path"] for p in listed["pages"]]
    assert searched["pages"] == []
    assert new["error"]["code"] == "page_not_found"
    [source] = [s for s in job["result"]["sources"] if s["kind"] == "wiki_page"]
    assert (source["path"], source["sha256"]) == (PAGE, served_sha)
    # Its link opens the page as indexed: the wiki source's doc id, the served commit, under
    # the job's labels.
    query = parse_qs(urlsplit(source["link"]).query)
    assert query == {
        "doc_id": [f"wiki:wiki/{PAGE}"],
        "revision": [served_commit],
        "labels": ["public"],
    }

    commit_all(ws, "edited, not synced")  # reviewed in Git, not yet served
    job, (read, *_) = run_job(ws, llm)
    assert "cresce del 12%" in read["text"]

    serve_wiki(ws)  # `tht docs sync`: the index now serves the edit
    job, (read, listed, _, new) = run_job(ws, llm)
    assert "cresce del 50%" in read["text"]
    assert "mercati/cina.md" in [p["path"] for p in listed["pages"]] and "error" not in new
    assert git(ws, "status", "--porcelain") == ""


def test_without_a_served_generation_a_job_fails_saying_to_sync(
    tmp_path: Path, llm: FakeLLMServer, key: str
) -> None:
    ws = make_workspace(tmp_path / "ws", llm.url)  # pages on disk, nothing synced
    submitted = runner.invoke(app, ["agent", "submit", "Giappone?", "-w", str(ws), "--json"])
    ran = runner.invoke(app, ["agent", "worker", "--once", "-w", str(ws), "--json"])
    assert ran.exit_code == 0, ran.output
    job_id = json.loads(submitted.stdout)["id"]
    job = json.loads(runner.invoke(app, ["agent", "show", job_id, "-w", str(ws), "--json"]).stdout)
    assert (job["status"], job["error_code"]) == ("failed", "wiki_not_served")
    assert "tht docs sync" in job["error"]
    assert llm.requests == []  # nothing reached the model
