"""The Python entry points take a workspace root as a str or a path, as `tht -w` does."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from thoth.errors import ConfigError
from thoth.evidence.layout import init_workspace
from thoth.runtime import open_answer_service, open_runtime, open_state
from thoth.workspace import Workspace

Make = Callable[..., Workspace]


def test_init_and_open_take_a_str(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ws"
    created = init_workspace(str(root), name="w")
    assert root / "thoth.toml" in created
    monkeypatch.chdir(tmp_path)
    for given in (str(root), root, "ws", "./ws/"):
        ws = Workspace.open(given)
        assert ws.root == root.resolve() and ws.settings.workspace == "w"


def test_open_runtime_and_open_state_take_a_str_or_a_path(make_workspace: Make) -> None:
    ws = make_workspace()
    for given in (str(ws.root), ws.root):
        with open_runtime(given) as rt:
            assert rt.ws.root == ws.root
            assert rt.state.active_generation(ws.settings.workspace) is None
        with open_state(given) as state:
            assert state.active_revision(ws.settings.workspace) is None


def test_open_answer_service_takes_a_str(make_workspace: Make) -> None:
    ws = make_workspace()
    service = open_answer_service(os.fspath(ws.root))
    try:
        answer = service.ask("Qual è il tempo massimo di attesa?")
    finally:
        service.close()
    # A workspace never synced: the search cannot run, said as such, not as an empty corpus.
    assert answer.status == "failed" and answer.error_code


def test_a_str_that_is_not_a_workspace_is_refused_as_a_path_would_be(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as as_str:
        Workspace.open(str(tmp_path))
    with pytest.raises(ConfigError) as as_path:
        Workspace.open(tmp_path)
    assert as_str.value.problems == as_path.value.problems
    assert "no thoth.toml found" in as_str.value.problems[0].message


def test_the_console_script_says_its_version_from_any_directory(tmp_path: Path) -> None:
    """Issue 25, point 2: `tht --version` needs no workspace and no particular directory."""
    import subprocess
    import sys
    from importlib.metadata import version

    tht = Path(sys.executable).with_name("tht")
    done = subprocess.run(
        [str(tht), "--version"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"tht (thoth) {version('thoth')}"
