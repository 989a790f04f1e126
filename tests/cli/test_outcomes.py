"""Failures that used to end in a traceback are outcomes: a ThothError with a stable code in
`--json`, a readable line otherwise. Through the CLI, on real workspaces (Git, Qdrant Edge,
SQLite state) with the fake embeddings server."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.conftest import commit_all, skip_unless_ci
from tests.fake_embeddings import FakeEmbeddingServer
from tests.knowledge.test_sync import docs_workspace
from thoth.cli import exitcodes
from thoth.cli.main import app
from thoth.embed import CACHE_FILE

runner = CliRunner()


def tht(*args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return result.exit_code, json.loads(result.stdout)


def readable(*args: str) -> tuple[int, str]:
    """Exit code and stderr of a command run without --json: one line, no traceback."""
    result = runner.invoke(app, list(args))
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.stderr
    return result.exit_code, " ".join(result.stderr.split())


def squeeze(text: str) -> str:
    """`text` without whitespace: Rich wraps long lines, in the middle of a path too."""
    return "".join(text.split())


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


@pytest.fixture
def synced(tmp_path: Path, fake: FakeEmbeddingServer) -> Path:
    """A workspace whose documents and wiki pages are indexed (an active generation)."""
    ws = docs_workspace(tmp_path / "ws", fake.url)
    code, data = tht("docs", "sync", "-w", str(ws.root))
    assert code == exitcodes.OK, data
    return ws.root


# ---------------------------------------------------------------------- embedding cache


def checkpointed_cache(root: Path) -> Path:
    """The embedding cache file with every vector in it (none left in its write-ahead log)."""
    cache = root / ".thoth" / "cache" / CACHE_FILE
    db = sqlite3.connect(cache)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    assert cache.stat().st_size > 4096
    return cache


def test_a_corrupt_embedding_cache_is_an_outcome_on_search_ask_and_sync(synced: Path) -> None:
    cache = checkpointed_cache(synced)
    data = bytearray(cache.read_bytes())
    data[:100] = b"\xff" * 100  # the SQLite header: the file is no database any more
    cache.write_bytes(bytes(data))
    root = str(synced)
    for command in (
        ("ask", "ricovero", "-w", root),
        ("evidence", "search", "ricovero", "--purpose", "rewriting", "-w", root),
        ("docs", "sync", "--full", "-w", root),
    ):
        code, out = tht(*command)
        assert code == exitcodes.FAILED, (command, out)
        assert out["code"] == "embedding_cache_unreadable", (command, out)
        [problem] = out["problems"]
        assert problem["where"] == str(cache)
        assert "delete" in problem["hint"] and "rebuilt" in problem["hint"]
        code, said = readable(*command)
        assert code == exitcodes.FAILED and str(cache) in squeeze(said) and "delete" in said


def test_a_damaged_page_of_the_embedding_cache_is_an_outcome(synced: Path) -> None:
    """Readable header, damaged content: found when the cache is read, by a sync."""
    cache = checkpointed_cache(synced)
    data = bytearray(cache.read_bytes())
    for at in range(4096, len(data), 97):
        data[at] = (data[at] * 7 + 13) % 256
    cache.write_bytes(bytes(data))
    code, out = tht("docs", "sync", "--full", "-w", str(synced))
    assert code == exitcodes.FAILED
    assert out["code"] == "embedding_cache_unreadable" and out["run_id"] is not None
    assert str(cache) in out["error"]


# ---------------------------------------------------------------------- file system


def test_a_file_where_the_index_directory_belongs_is_an_outcome(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    ws = docs_workspace(tmp_path / "ws", fake.url)
    index = ws.root / ".thoth" / "index" / ws.settings.workspace
    index.parent.mkdir(parents=True)
    index.write_text("not a directory", "utf-8")
    code, out = tht("docs", "sync", "-w", str(ws.root))
    assert code == exitcodes.FAILED
    assert out["code"] == "file_access"
    [problem] = out["problems"]
    assert problem["where"] == str(index)
    assert out["run_id"] is not None and out["run_recorded"] is True
    assert "nothing was activated" in out["serving"]
    code, said = readable("docs", "sync", "-w", str(ws.root))
    assert code == exitcodes.FAILED and str(index) in squeeze(said)


def _denied_child(command: list[str]) -> list[str]:
    """`command` run so that file permissions apply: as is for a user, without the
    capabilities that let root ignore them (setpriv) for root."""
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        skip_unless_ci(
            "running as root, where chmod does not deny, and setpriv (util-linux) is not "
            "installed to drop that privilege -> install util-linux to run this test",
            "Debian's util-linux ships setpriv on every CI machine",
        )
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}", *command]


CODES = ("file_access", "index_unavailable", "index_corrupt")


@pytest.mark.slow  # six child processes
def test_an_unreadable_generation_directory_is_an_outcome(synced: Path) -> None:
    [generation] = (synced / ".thoth" / "index" / "ws").iterdir()
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    tht_script = str(Path(sys.executable).with_name("tht"))
    generation.chmod(0)
    try:
        for args in (("ask", "ricovero"), ("docs", "sync"), ("verify",)):
            for as_json in (True, False):
                command = [tht_script, *args, "-w", str(synced)] + (["--json"] if as_json else [])
                done = subprocess.run(
                    _denied_child(command), capture_output=True, text=True, env=env, timeout=120
                )
                assert "Traceback" not in done.stderr, done.stderr[-3000:]
                assert done.returncode == exitcodes.FAILED, (args, done.stdout, done.stderr)
                said = done.stdout if as_json else done.stderr
                # Rich wraps long lines (in a path too): compared without whitespace.
                assert str(generation) in "".join(said.split()), (args, said)
                if as_json and args[0] != "verify":
                    out = json.loads(done.stdout)
                    # An error, or an answer whose search failed: both with a stable code.
                    code = out.get("code") or out.get("error_code")
                    assert out["ok"] is False and code in CODES, out
    finally:
        generation.chmod(0o755)
    # The refused asks are in the answer log, as failures naming the path.
    code, log = tht("answers", "log", "--limit", "2", "-w", str(synced))
    assert code == exitcodes.OK
    assert [a["status"] for a in log["answers"]] == ["failed", "failed"], log
    assert str(generation) in json.dumps(log["answers"][0])


# ---------------------------------------------------------------------- values out of range


@pytest.mark.parametrize("year", ["99999999999", "-5", "0", "12345"])
def test_a_year_out_of_range_is_a_usage_error_before_anything_is_read(
    tmp_path: Path, fake: FakeEmbeddingServer, year: str
) -> None:
    ws = docs_workspace(tmp_path / "ws", fake.url)
    code, out = tht("ask", "ricovero", "--year", year, "-w", str(ws.root))
    assert code == exitcodes.USAGE
    assert out["code"] == "bad_request"
    assert "--year" in out["error"] and "1900" in out["error"] and "2099" in out["error"]
    assert not (ws.root / ".thoth").exists()  # nothing opened, nothing created
    code, said = readable("ask", "ricovero", "--year", year, "-w", str(ws.root))
    assert code == exitcodes.USAGE and "--year" in said


# ---------------------------------------------------------------------- state URL


def test_a_state_url_whose_directory_does_not_exist_is_an_error(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    missing = tmp_path / "nowhere" / "state"
    ws = docs_workspace(
        tmp_path / "ws", fake.url, extra=f'\n[state]\nurl = "sqlite:///{missing}/state.sqlite"\n'
    )
    commit_all(ws.root, "state")
    for command in (("docs", "sync"), ("docs", "runs"), ("ask", "ricovero")):
        code, out = tht(*command, "-w", str(ws.root))
        assert code == exitcodes.PRECONDITION, out
        assert out["code"] == "state_directory_missing"
        [problem] = out["problems"]
        assert str(missing) in problem["message"] and problem["field"] == "state.url"
        assert "create the directory" in problem["hint"] and "[state].url" in problem["hint"]
    assert not missing.exists()  # never created silently
    code, said = readable("docs", "runs", "-w", str(ws.root))
    assert code == exitcodes.PRECONDITION and str(missing) in squeeze(said)
