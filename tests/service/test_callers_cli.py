"""`tht service add-caller | callers | remove-caller`: keys shown once, hashes stored, the rest
of thoth.toml kept as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from thoth.cli.main import app
from thoth.config import load_settings
from thoth.service.callers import authenticate, hash_key
from thoth.service.errors import Unauthorized

runner = CliRunner()
CONFIG = """# my workspace, with comments that must survive
workspace = "w"

[answers]
labels = ["public", "internal", "confidential"]  # the vocabulary
default_labels = ["public"]
"""


def tht(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "thoth.toml").write_text(CONFIG, encoding="utf-8")
    return tmp_path


def test_add_caller_prints_the_key_once_and_stores_its_hash(root: Path) -> None:
    code, output = tht(
        "service", "add-caller", "portal", "--labels", "public,internal", "-w", str(root), "--json"
    )
    assert code == 0, output
    added = json.loads(output)
    key = added["key"]
    text = (root / "thoth.toml").read_text(encoding="utf-8")
    assert key not in text and hash_key(key) in text
    assert text.startswith(CONFIG)  # comments, order and spacing kept
    settings = load_settings(root)
    [caller] = settings.service.callers
    assert (caller.name, caller.labels) == ("portal", ["public", "internal"])
    assert authenticate(settings.service.callers, [f"Bearer {key}"]) == caller
    code, output = tht("service", "callers", "-w", str(root), "--json")
    listed = json.loads(output)["callers"]
    assert [c["name"] for c in listed] == ["portal"] and key not in output


def test_refused_callers_leave_thoth_toml_untouched(root: Path) -> None:
    for args in (
        ("Portal", "--labels", "public"),  # not a name
        ("portal", "--labels", "PUBLIC"),  # labels are exact
        ("portal", "--labels", ""),
    ):
        code, output = tht("service", "add-caller", *args, "-w", str(root), "--json")
        assert code == 2, output
        assert json.loads(output)["code"] == "bad_request"
    assert (root / "thoth.toml").read_text(encoding="utf-8") == CONFIG
    assert tht("service", "add-caller", "portal", "--labels", "public", "-w", str(root))[0] == 0
    code, output = tht("service", "add-caller", "portal", "--labels", "public", "-w", str(root))
    assert code == 2 and "already exists" in output


def test_remove_caller_revokes_its_key(root: Path) -> None:
    _, output = tht("service", "add-caller", "a", "--labels", "public", "-w", str(root), "--json")
    key_a = json.loads(output)["key"]
    tht("service", "add-caller", "b", "--labels", "internal", "-w", str(root))
    code, output = tht("service", "remove-caller", "a", "-w", str(root), "--json")
    assert code == 0 and json.loads(output) == {"ok": True, "removed": "a"}
    callers = load_settings(root).service.callers
    assert [c.name for c in callers] == ["b"]
    with pytest.raises(Unauthorized):
        authenticate(callers, [f"Bearer {key_a}"])
    code, output = tht("service", "remove-caller", "a", "-w", str(root))
    assert code == 2 and "no caller named a" in output


def test_settings_refuse_ceilings_outside_the_vocabulary_and_shared_keys(root: Path) -> None:
    digest = "0" * 64
    (root / "thoth.toml").write_text(
        CONFIG
        + f'\n[[service.callers]]\nname = "a"\nkey_sha256 = "{digest}"\nlabels = ["secret"]\n'
        + f'\n[[service.callers]]\nname = "b"\nkey_sha256 = "{digest}"\nlabels = ["public"]\n',
        encoding="utf-8",
    )
    code, output = tht("service", "callers", "-w", str(root), "--json")
    assert code == 4
    message = json.loads(output)["error"]
    assert "service.callers.a.labels: secret" in message
    assert "keys (key_sha256) must be unique" in message


def test_serve_refuses_to_start_without_callers(root: Path) -> None:
    code, output = tht("serve", "-w", str(root))
    assert code == 4 and "declares no caller" in output
