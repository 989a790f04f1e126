"""`tht init` then `tht channels calibrate`, as the README's "From documents to a grounded
answer" runs them: the labelled set exists from the start, says how it is written, and its
commented examples calibrate once uncommented together with the commented channel of
thoth.toml."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import commit_all, git
from thoth.cli import exitcodes
from thoth.cli.main import app
from thoth.config import CALIBRATION_SET

runner = CliRunner()


def fresh_workspace(tmp_path: Path, language: str = "it") -> Path:
    root = tmp_path / "kb"
    result = runner.invoke(app, ["init", str(root), "--language", language, "--json"])
    assert result.exit_code == exitcodes.OK, result.output
    assert str(root / CALIBRATION_SET) in json.loads(result.stdout)["created"]
    git(root, "init", "-q", "-b", "main")
    commit_all(root, "workspace")
    return root


def uncomment(path: Path, first: str, last: str) -> None:
    """Drop the leading '# ' of the lines from the one starting with `first` to the one
    starting with `last`, as a user enabling a commented example would."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(f"# {first}"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(f"# {last}"))
    for i in range(start, end + 1):
        lines[i] = lines[i].removeprefix("# ")
    path.write_text("".join(lines), encoding="utf-8")


def test_a_fresh_workspace_has_the_set_and_says_it_is_empty(tmp_path: Path) -> None:
    root = fresh_workspace(tmp_path)
    text = (root / CALIBRATION_SET).read_text(encoding="utf-8")
    assert "channel: null" in text and "min_similarity" in text
    result = runner.invoke(app, ["channels", "calibrate", "-w", str(root), "--json"])
    assert result.exit_code == exitcodes.FAILED
    message = json.loads(result.stdout)["problems"][0]["message"]
    assert "cannot read" not in message
    assert "no labelled questions yet" in message and CALIBRATION_SET in message


@pytest.mark.parametrize(
    ("language", "last", "not_there"),
    [("it", "Come si rinnova", "How do I"), ("en", "How do I renew", "Come si")],
)
def test_the_commented_examples_calibrate_once_uncommented(
    tmp_path: Path, language: str, last: str, not_there: str
) -> None:
    """In the workspace's language: an English workspace gets English examples."""
    root = fresh_workspace(tmp_path, language)
    assert not_there not in (root / CALIBRATION_SET).read_text("utf-8")
    assert not_there not in (root / "thoth.toml").read_text("utf-8")
    uncomment(root / "thoth.toml", "[[channels]]", "keywords")
    uncomment(root / CALIBRATION_SET, "- {question", f'- {{question: "{last}')
    result = runner.invoke(app, ["channels", "calibrate", "-w", str(root), "--json"])
    assert result.exit_code == exitcodes.OK, result.output
    data = json.loads(result.stdout)
    assert data["in_domain"]["n"] == 3 and data["out_of_domain"]["n"] == 3
    assert 0.0 < data["threshold"] < 1.0
    assert data["relevance"] is None  # no index yet: the floor is calibrated after a sync
    assert re.search(r"answers/channels\.yaml$", data["set"])
