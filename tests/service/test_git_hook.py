"""Realign on publish (issue 50, point 3): a forge's push webhook to a real `tht serve`.

A curated wiki lives in a forge (a bare Git repository); the workspace serves a clone of it
that follows `main`. A push signed with the wrong secret, or not signed, is refused and changes
nothing; the rightly signed push queues one docs sync (delivered twice, still one), which
`tht schedule run-due` runs: its sync run, with the run lock and run record of `tht docs sync`,
names the pushed commit."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tests.conftest import git
from tests.fake_embeddings import FakeEmbeddingServer
from tests.schedule.forge import PAGE, Forge, following_workspace
from tests.service.conftest import Server
from thoth.cli import exitcodes
from thoth.cli.main import app
from thoth.runtime import open_state
from thoth.schedule.scheduler import Scheduler
from thoth.service.registry import add_caller
from thoth.state.schedule import ScheduleQueue
from thoth.workspace import Workspace

SECRET = "s3cret-of-the-forge"
TOKEN = "gitlab-token-of-the-forge"
SECRET_ENV = "THOTH_TEST_GITHUB_HOOK_SECRET"
TOKEN_ENV = "THOTH_TEST_GITLAB_HOOK_TOKEN"

HOOK = f"""
[schedule.hook]
github_secret_env = "{SECRET_ENV}"
gitlab_token_env = "{TOKEN_ENV}"
"""


runner = CliRunner()


@pytest.fixture(scope="module")
def embeddings() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


def start(
    tmp_path: Path, make_workspace: Callable[..., Workspace], url: str, extra: str = ""
) -> tuple[Server, Forge, Workspace]:
    ws, forge = following_workspace(tmp_path, make_workspace, url, HOOK + extra)
    result = runner.invoke(app, ["docs", "sync", "-w", str(ws.root), "--json"])
    assert result.exit_code == exitcodes.OK, result.output
    _, key = add_caller(ws.root, "ops", ["public"])
    server = Server(
        ws.root,
        {"ops": key},
        tmp_path / "serve.log",
        env={SECRET_ENV: SECRET, TOKEN_ENV: TOKEN},
    )
    return server, forge, Workspace.open(ws.root)


@pytest.fixture
def served(
    tmp_path: Path,
    make_workspace: Callable[..., Workspace],
    embeddings: FakeEmbeddingServer,
) -> Iterator[tuple[Server, Forge, Workspace]]:
    server, forge, ws = start(tmp_path, make_workspace, embeddings.url)
    try:
        yield server, forge, ws
    finally:
        server.stop()


def signed(body: bytes, secret: str = SECRET) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": f"sha256={digest}"}


def hook(
    server: Server, body: bytes, headers: dict[str, str], event: str = "push"
) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/hooks/git",
        content=body,
        headers={
            "Content-Type": "application/json",
            "X-Gitlab-Event" if "X-Gitlab-Token" in headers else "X-GitHub-Event": event,
            **headers,
        },
        timeout=30,
    )


def scheduled_runs(ws: Workspace) -> list[str]:
    with open_state(ws) as state:
        return [r.id for r in ScheduleQueue.on(state).list(ws.settings.workspace)]


def sync_runs(ws: Workspace) -> int:
    with open_state(ws) as state:
        return len(state.list_sync_runs(ws.settings.workspace))


def test_a_refused_push_changes_nothing_and_a_signed_one_syncs_the_commit_it_names(
    served: tuple[Server, Forge, Workspace],
) -> None:
    server, forge, ws = served
    commit = forge.write("wiki/nuova.md", PAGE.replace("Ricoveri urgenti", "Nuova pagina"))
    body = json.dumps(forge.push_payload(commit)).encode()

    unsigned = hook(server, body, {})
    assert unsigned.status_code == 401 and unsigned.json()["code"] == "hook_unsigned"
    wrong = hook(server, body, signed(body, "not-the-secret"))
    assert wrong.status_code == 403 and wrong.json()["code"] == "hook_bad_signature"
    # the right signature of another body: the body was changed on the way
    tampered = hook(server, body.replace(b"main", b"mainx"), signed(body))
    assert tampered.status_code == 403
    gitlab = hook(server, body, {"X-Gitlab-Token": "guess"}, event="Push Hook")
    assert gitlab.status_code == 403 and gitlab.json()["code"] == "hook_bad_signature"
    assert scheduled_runs(ws) == [] and sync_runs(ws) == 1
    assert git(forge.served, "rev-parse", "HEAD").strip() != commit

    accepted = hook(server, body, signed(body))
    assert accepted.status_code == 202, accepted.text
    queued = accepted.json()["queued"]
    assert queued == [f"{ws.settings.workspace}/hook:wiki@{commit}"]
    again = hook(server, body, signed(body))  # the forge delivers it again
    assert again.status_code == 200 and again.json()["already_queued"] == queued
    other = forge.write("wiki/bozza.md", PAGE, branch="draft")
    draft = json.dumps(forge.push_payload(other, branch="draft")).encode()
    ignored = hook(server, draft, signed(draft))
    assert ignored.status_code == 200 and ignored.json()["queued"] == []
    assert "no served source follows branch draft" in ignored.json()["ignored"]
    assert scheduled_runs(ws) == queued and sync_runs(ws) == 1
    with open_state(ws) as state:  # still waiting two hours later: no worker runs it
        later = datetime.now(UTC) + timedelta(hours=2)
        (waiting,) = Scheduler(ws, state, clock=lambda: later).status()
    assert waiting.name == "hook:wiki" and waiting.late
    assert waiting.due_run is not None and waiting.due_run.status == "queued"

    result = runner.invoke(app, ["schedule", "run-due", "-w", str(ws.root), "--json"])
    assert result.exit_code == exitcodes.OK, result.output
    (run,) = json.loads(result.stdout)["runs"]
    assert run["status"] == "succeeded" and run["request"]["commit"] == commit
    with open_state(ws) as state:
        sync = state.get_sync_run(run["result"]["sync_run"])
    assert sync is not None and sync.status == "succeeded"
    assert sync.revisions["wiki"] == commit and commit in sync.run_by
    assert "github push of main" in sync.run_by
    assert git(forge.served, "rev-parse", "HEAD").strip() == commit

    listed = runner.invoke(app, ["schedule", "list", "-w", str(ws.root), "--json"])
    (routine,) = json.loads(listed.stdout)["routines"]
    assert routine["name"] == "hook:wiki" and routine["last_finished"]["status"] == "succeeded"
    metrics = server.get("/metrics", caller="ops").text
    assert 'thoth_schedule_runs_total{routine="hook:wiki",status="succeeded"} 1.0' in metrics


def test_a_gitlab_push_with_its_token_is_queued_and_a_bad_payload_is_422(
    served: tuple[Server, Forge, Workspace],
) -> None:
    server, forge, ws = served
    commit = forge.write("wiki/altra.md", PAGE)
    payload = {
        "ref": "refs/heads/main",
        "after": commit,
        "project": {"git_http_url": str(forge.bare) + ".git/"},
    }
    body = json.dumps(payload).encode()
    done = hook(server, body, {"X-Gitlab-Token": TOKEN}, event="Push Hook")
    assert done.status_code == 202, done.text
    assert done.json()["queued"] == [f"{ws.settings.workspace}/hook:wiki@{commit}"]
    bad = hook(server, b'{"ref": 1}', signed(b'{"ref": 1}'))
    assert bad.status_code == 422 and bad.json()["code"] == "hook_bad_payload"
    assert len(scheduled_runs(ws)) == 1


def test_with_run_in_service_the_serving_process_runs_the_push_s_sync_itself(
    tmp_path: Path, make_workspace: Callable[..., Workspace], embeddings: FakeEmbeddingServer
) -> None:
    extra = "\n[schedule]\nrun_in_service = true\npoll_seconds = 0.2\n"
    server, forge, ws = start(tmp_path, make_workspace, embeddings.url, extra)
    try:
        commit = forge.write("wiki/nuova.md", PAGE.replace("urgenti", "programmati"))
        body = json.dumps(forge.push_payload(commit)).encode()
        assert hook(server, body, signed(body)).status_code == 202
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open_state(ws) as state:
                runs = state.list_sync_runs(ws.settings.workspace)
            if len(runs) == 2 and runs[0].status != "running":
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"no sync of the push: {(tmp_path / 'serve.log').read_text()}")
    finally:
        server.stop()
    assert runs[0].status == "succeeded" and runs[0].revisions["wiki"] == commit
    assert commit in runs[0].run_by
    assert "schedule worker" in (tmp_path / "serve.log").read_text("utf-8")
