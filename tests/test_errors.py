"""One error base: every error of the package is a ThothError with a stable code and a list of
Problems, and the CLI renders any of them in one place with the class's exit code."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import thoth
from tests.conftest import GLOSSARY, commit_all
from tests.fake_embeddings import FakeEmbeddingServer
from tests.fake_embeddings import Reply as EmbeddingReply
from tests.fake_llm import FakeLLMServer
from tests.publishing import prepared_workspace
from thoth.cli import exitcodes
from thoth.cli.main import app
from thoth.config import LLMSettings
from thoth.embed.openai_compat import OpenAICompatEmbedder
from thoth.errors import (
    ConfigError,
    PreconditionError,
    Problem,
    ProblemsError,
    RequestError,
    ThothError,
)
from thoth.evidence.restructure.llm import parse_reply
from thoth.llm.openai_chat import OpenAIChat
from thoth.search.query import render_query
from thoth.workspace import Workspace

Make = Callable[..., Workspace]
runner = CliRunner()
KEY_ENV = "THOTH_TEST_KEY"


# -- the base --------------------------------------------------------------------------------


def _public_exceptions() -> Iterator[type[BaseException]]:
    """Every public exception class defined in a module of the package."""
    for info in pkgutil.walk_packages(thoth.__path__, "thoth."):
        if info.name.startswith("thoth.state.migrations"):
            continue  # Alembic's scripts run inside Alembic only, and define no error
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == info.name
                and not name.startswith("_")
            ):
                yield obj


def test_every_public_error_of_the_package_is_a_thoth_error() -> None:
    found = sorted(set(_public_exceptions()), key=lambda c: f"{c.__module__}.{c.__name__}")
    names = {c.__name__ for c in found}
    # The families the issue names are among them (the scan really sees the package).
    assert {"LLMError", "EmbedderError", "RestructureError", "IndexUnavailable"} <= names
    assert {"StateError", "ConfigError", "SyncError", "SearchRequestError"} <= names
    strays = [f"{c.__module__}.{c.__name__}" for c in found if not issubclass(c, ThothError)]
    assert strays == []


def test_an_error_without_problems_carries_one_made_of_its_message() -> None:
    exc = ThothError("state store at x: locked -> retry")
    assert exc.code == "error" and exc.exit_code == exitcodes.FAILED
    assert exc.problems == [Problem("", "state store at x: locked -> retry", code="error")]
    assert exc.problems[0].render() == "state store at x: locked -> retry"

    placed = ConfigError("thoth.toml: [llm] missing", where="thoth.toml")
    assert placed.code == "config" and placed.exit_code == exitcodes.PRECONDITION
    assert placed.problems == [Problem("thoth.toml", "thoth.toml: [llm] missing", code="config")]

    coded = PreconditionError("dirty worktree", code="dirty_worktree")
    assert coded.code == "dirty_worktree" and type(coded).code == "precondition"
    assert RequestError("the question is empty").exit_code == exitcodes.USAGE


def test_problems_error_keeps_its_problems_and_summary() -> None:
    problems = [Problem("source/a.md", "not UTF-8", hint="re-save it as UTF-8")]
    exc = ProblemsError("prepare refused: 1 problem", problems)
    assert exc.problems == problems and exc.summary == "prepare refused: 1 problem"
    assert exc.code == "refused"
    assert (
        str(exc) == "prepare refused: 1 problem\n  - source/a.md: not UTF-8 -> re-save it as UTF-8"
    )
    empty = ProblemsError("refused")
    assert [p.message for p in empty.problems] == ["refused"]


# -- each family, raised by the real code, caught as ThothError --------------------------------


def test_an_llm_failure_is_a_thoth_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLLMServer() as server:
        server.reply(status=500)
        settings = LLMSettings(base_url=f"{server.url}/v1", model="m", api_key_env=KEY_ENV)
        with pytest.raises(ThothError) as caught:
            OpenAIChat(settings, "key").complete_text("system", "user")
    assert caught.value.code == "llm_failed"
    assert "HTTP 500" in caught.value.problems[0].message


def test_an_embedder_failure_is_a_thoth_error() -> None:
    with FakeEmbeddingServer(dim=8) as server:
        server.script(EmbeddingReply(status=500))
        embedder = OpenAICompatEmbedder(base_url=server.url, model="e5", dim=8)
        with pytest.raises(ThothError) as caught:
            embedder.embed_query("ricovero")
    assert caught.value.code == "embedder_failed"
    assert "500" in caught.value.problems[0].message


def test_a_restructurer_failure_is_a_thoth_error() -> None:
    with pytest.raises(ThothError) as caught:
        parse_reply("not json {", set())
    assert caught.value.code == "restructure_failed"


def test_an_empty_search_question_is_a_request_error() -> None:
    with pytest.raises(RequestError) as caught:
        render_query("   ")
    assert isinstance(caught.value, ValueError)  # callers that catch ValueError still do


# -- the CLI maps every error once -------------------------------------------------------------


def tht(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_cli_config_error_json_and_text(tmp_path: Path) -> None:
    code, out, _ = tht("evidence", "validate", str(tmp_path), "--json")
    data = json.loads(out)
    assert code == exitcodes.PRECONDITION and data["ok"] is False
    assert data["code"] == "config" and "thoth.toml" in data["error"]
    [problem] = data["problems"]
    assert problem["code"] == "config" and "thoth.toml" in problem["message"]

    code, out, err = tht("evidence", "validate", str(tmp_path))
    assert code == exitcodes.PRECONDITION and out == ""
    assert "thoth.toml" in err and "Traceback" not in err


def test_cli_llm_error_lists_the_problem(
    make_workspace: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "key")
    ws = make_workspace({"g.md": GLOSSARY})
    with FakeLLMServer() as server:
        (ws.root / "thoth.toml").write_text(
            f'workspace = "{ws.settings.workspace}"\nlanguage = "it"\n\n'
            '[evidence]\nrestructurer = "llm"\n\n'
            f'[llm]\nbase_url = "{server.url}/v1"\nmodel = "m"\napi_key_env = "{KEY_ENV}"\n',
            encoding="utf-8",
        )
        commit_all(ws.root, "use the LLM")
        server.reply(status=500)
        code, out, _ = tht("evidence", "prepare", str(ws.root), "--json")
        server.reply(status=500)
        text_code, _, err = tht("evidence", "prepare", str(ws.root))
    data = json.loads(out)
    assert code == exitcodes.FAILED and data["ok"] is False and data["code"] == "refused"
    [problem] = data["problems"]
    assert problem["where"] == "source/g.md" and problem["code"] == "restructure_failed"
    assert "HTTP 500" in problem["message"]
    assert text_code == exitcodes.FAILED
    assert "source/g.md" in err and "HTTP 500" in err


def test_cli_embedder_error_lists_the_problem(make_workspace: Make) -> None:
    with FakeEmbeddingServer(dim=8) as server:
        ws = prepared_workspace(make_workspace, server.url)
        root = str(ws.root)
        code, _, _ = tht("workspace", "activate", root, "--json")
        assert code == exitcodes.OK
        for _ in range(10):  # every request of this run fails
            server.script(EmbeddingReply(status=500))
        code, out, _ = tht("workspace", "preprocess", "evidence", root, "--json")
        for _ in range(10):
            server.script(EmbeddingReply(status=500))
        text_code, _, err = tht("workspace", "preprocess", "evidence", root)
    data = json.loads(out)
    assert code == exitcodes.FAILED and data["ok"] is False
    assert data["code"] == "embedder_failed"
    [problem] = data["problems"]
    assert problem["code"] == "embedder_failed" and "500" in problem["message"]
    assert text_code == exitcodes.FAILED
    assert "500" in err and "Traceback" not in err


def test_an_os_error_becomes_a_file_access_error_naming_the_path() -> None:
    import errno

    from thoth.errors import FileAccessError, file_access_error

    denied = file_access_error(PermissionError(errno.EACCES, "Permission denied", "/x/gen"))
    assert isinstance(denied, FileAccessError) and denied.code == "file_access"
    assert denied.exit_code == exitcodes.FAILED
    [problem] = denied.problems
    assert problem.where == "/x/gen" and problem.message == "Permission denied"
    assert problem.hint is not None and "access" in problem.hint
    assert denied.message_text() == "cannot use /x/gen: Permission denied"
    assert problem.hint in str(denied)
    exists = file_access_error(FileExistsError(errno.EEXIST, "File exists", "/x/index"))
    assert exists.problems[0].hint is not None and "directory belongs" in exists.problems[0].hint
    bare = file_access_error(OSError("no path"))
    assert bare.problems[0].where == "" and "no path" in bare.message_text()
