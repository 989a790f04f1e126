"""The `tht` command: JSON output for agents and exit codes that mean something."""

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import ENUM, GLOSSARY, commit_all, git
from thoth.cli import exitcodes
from thoth.cli.common import phase_bars
from thoth.cli.main import app
from thoth.workspace import Workspace

Make = Callable[..., Workspace]
runner = CliRunner()


def tht(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout


def test_init_creates_the_layout(tmp_path: Path) -> None:
    code, out = tht("init", str(tmp_path / "w"), "--json")
    assert code == exitcodes.OK and json.loads(out)["ok"]
    for kind in (
        "glossary",
        "domain",
        "enum",
        "example",
        "mapping",
        "normalization",
        "formula",
        "reference",
    ):
        assert (tmp_path / "w/evidence/curated" / kind).is_dir()
    for rel in (
        "thoth.toml",
        "evidence/manifest.yaml",
        "evidence/evaluation.yaml",
        "evidence/README.md",
        "evidence/source",
    ):
        assert (tmp_path / "w" / rel).exists()
    code, _ = tht("init", str(tmp_path / "w"))
    assert code == exitcodes.PRECONDITION


def test_init_names_the_reviewed_lists_a_workspace_of_several_companies_needs(
    tmp_path: Path,
) -> None:
    # A newcomer with filings of several companies, or questions in another language than the
    # documents, finds the entity list and the glossary in the configuration they open first;
    # uncommented, each key is read where it must be (top level, before any [section]).
    from thoth.config import load_settings

    code, _ = tht("init", str(tmp_path / "w"), "--language", "en")
    assert code == exitcodes.OK
    config = tmp_path / "w/thoth.toml"
    text = config.read_text("utf-8")
    head = text.split("\n[", 1)[0]
    assert '# entities = "entities.yaml"' in head and '# glossary = "glossary.yaml"' in head
    assert "docs/documents.md" in head
    config.write_text(
        text.replace('# entities = "entities.yaml"', 'entities = "entities.yaml"').replace(
            '# glossary = "glossary.yaml"', 'glossary = "glossary.yaml"'
        ),
        "utf-8",
    )
    settings = load_settings(tmp_path / "w")
    assert (settings.entities, settings.glossary) == ("entities.yaml", "glossary.yaml")


def test_prepare_validate_json_and_exit_codes(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY, "e.md": ENUM})
    code, out = tht("evidence", "prepare", str(ws.root), "--json")
    report = json.loads(out)
    assert code == exitcodes.OK and report["ok"] and not report["noop"]
    assert report["counts"] == {"new": 2}
    commit_all(ws.root)
    code, out = tht("evidence", "validate", str(ws.root), "--json")
    assert code == exitcodes.OK and json.loads(out)["outcome"] == "valid"

    (ws.evidence / "source/d.md").write_text("# D\n\nDa verificare con la direzione.\n")
    commit_all(ws.root)
    tht("evidence", "prepare", str(ws.root))
    code, out = tht("evidence", "validate", str(ws.root), "--json")
    data = json.loads(out)
    assert code == exitcodes.NOT_PUBLISHABLE and data["outcome"] == "valid_with_doubts"
    assert data["blockers"]["review_items"][0]["items"][0]["code"] == "ambiguous_source_statement"

    (ws.evidence / "curated/glossary/ricovero.md").write_text("not a unit")
    code, out = tht("evidence", "validate", str(ws.root), "--json")
    assert code == exitcodes.FAILED and json.loads(out)["outcome"] == "invalid"


def test_refused_prepare_reports_json_problems(make_workspace: Make) -> None:
    ws = make_workspace({"bad.md": b"\xff\xfe"})
    code, out = tht("evidence", "prepare", str(ws.root), "--json")
    data = json.loads(out)
    assert code == exitcodes.FAILED and not data["ok"]
    assert data["problems"][0]["where"] == "source/bad.md"


def test_dirty_worktree_exit_code(make_workspace: Make) -> None:
    ws = make_workspace({"g.md": GLOSSARY})
    (ws.evidence / "curated/domain/x.md").write_text("draft")
    code, out = tht("evidence", "prepare", str(ws.root), "--json")
    assert code == exitcodes.PRECONDITION and "uncommitted" in json.loads(out)["error"]


def test_missing_config_is_named(tmp_path: Path) -> None:
    code, out = tht("evidence", "validate", str(tmp_path), "--json")
    assert code == exitcodes.PRECONDITION and "thoth.toml" in json.loads(out)["error"]


def test_resolve_cli(make_workspace: Make) -> None:
    ws = make_workspace({"e.md": ENUM})
    tht("evidence", "prepare", str(ws.root))
    commit_all(ws.root)
    git(ws.root, "rm", "-q", "evidence/source/e.md")
    commit_all(ws.root)
    tht("evidence", "prepare", str(ws.root))
    commit_all(ws.root)
    code, out = tht(
        "evidence",
        "resolve",
        "evidence:esito-della-dimissione",
        "--retire",
        "-w",
        str(ws.root),
        "--json",
    )
    assert code == exitcodes.OK and json.loads(out)["action"] == "retired"
    code, _ = tht(
        "evidence",
        "resolve",
        "evidence:x",
        "--retire",
        "--source",
        "source/a.md",
        "-w",
        str(ws.root),
    )
    assert code == exitcodes.PRECONDITION


def test_session_consult_reports_a_blocked_stage(make_workspace: Make) -> None:
    """No generation is published: the Evidence search is unavailable, so consult says the
    stage is blocked (JSON, or stderr) and exits 1, with no receipt recorded."""
    ws = make_workspace({"g.md": GLOSSARY})
    code, out = tht("session", "new", "Quanti ricoveri nel 2023?", "-w", str(ws.root), "--json")
    assert code == exitcodes.OK
    sid = json.loads(out)["session"]
    args = ("session", "consult", sid, "--stage", "clarification", "-w", str(ws.root))
    code, out = tht(*args, "--json")
    blocked = json.loads(out)
    assert code == exitcodes.FAILED
    assert blocked["ok"] is False and blocked["stage"] == "clarification"
    result = runner.invoke(app, list(args))
    assert result.exit_code == exitcodes.FAILED
    assert "blocked:" in result.stderr
    code, out = tht("session", "show", sid, "-w", str(ws.root), "--json")
    assert json.loads(out)["receipts"] == []


def test_phase_bars_are_none_when_disabled_and_take_ticks_per_phase() -> None:
    """docs sync and preprocess evidence share these bars: one per phase, on stderr."""
    with phase_bars(False) as tick:
        assert tick is None
    with phase_bars(True) as tick:
        assert tick is not None
        tick("embed", 1, 4)
        tick("embed", 4, 8)  # a phase's total may grow between calls
        tick("index", 2, 2)


def test_phase_bars_keep_one_bar_per_phase_and_show_the_file() -> None:
    """`extract <doc id>` ticks share the extract bar; a doc id is shown as text, never read
    as Rich markup (a path may contain `[/]`)."""
    with phase_bars(True) as tick:
        assert tick is not None
        tick("extract manuali:docs/[/]strano.pdf", 1, 5)
        tick("extract manuali:docs/b.md", 1, 1)
        tick("embed", 32, 64)


# -- issue 25, point 6: `tht init` for the user in front of it ----------------------------------


def init_with(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["init", str(tmp_path / "w"), *args], env=env)
    return result.exit_code, result.stdout


BLANK_LOCALE = {"LANG": "", "LC_ALL": "", "LC_MESSAGES": "", "LANGUAGE": ""}


def test_init_takes_the_language_of_the_locale_and_says_so(tmp_path: Path) -> None:
    code, out = init_with(tmp_path, {**BLANK_LOCALE, "LANG": "en_GB.UTF-8"}, "--json")
    assert code == exitcodes.OK
    shown = json.loads(out)
    assert shown["language"] == "en" and shown["language_from"] == "locale LANG=en_GB.UTF-8"
    assert 'language = "en"' in (tmp_path / "w" / "thoth.toml").read_text("utf-8")


def test_init_without_a_locale_says_its_default_and_how_to_choose(tmp_path: Path) -> None:
    code, out = init_with(tmp_path, BLANK_LOCALE)
    assert code == exitcodes.OK
    text = " ".join(out.split())
    assert "language it (the default: your locale names none" in text
    assert "--language en" in text


def test_init_with_a_language_option_uses_it(tmp_path: Path) -> None:
    code, out = init_with(
        tmp_path, {**BLANK_LOCALE, "LANG": "it_IT.UTF-8"}, "--language", "en", "--json"
    )
    assert code == exitcodes.OK and json.loads(out)["language_from"] == "option"


def test_init_proposes_the_next_step_for_what_the_folder_holds(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "report.pdf").write_bytes(b"%PDF-1.4")
    code, out = init_with(tmp_path, BLANK_LOCALE, "--language", "en")
    text = " ".join(out.split())
    assert code == exitcodes.OK
    assert "1 document" in text and "[[sources]]" in text and "tht docs sync" in text
    assert "tht evidence prepare" not in text
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "sales.sqlite").write_bytes(b"")
    result = CliRunner().invoke(app, ["init", str(tmp_path / "d"), "--language", "en"])
    assert "tht schema sync" in " ".join(result.stdout.split())


def test_init_makes_the_new_workspace_a_git_repository_and_says_so(tmp_path: Path) -> None:
    code, out = init_with(tmp_path, BLANK_LOCALE, "--json")
    root = tmp_path / "w"
    assert code == exitcodes.OK
    assert (root / ".git").is_dir()
    shown = json.loads(out)["git"]
    assert shown["state"] == "created" and shown["repository"] == str(root.resolve())
    assert git(root, "rev-parse", "--is-inside-work-tree").strip() == "true"
    # Nothing is committed for the user: the repository has no commit yet.
    assert git(root, "rev-list", "--all").strip() == ""
    code, out = init_with(tmp_path / "again", BLANK_LOCALE)
    text = " ".join(out.split())
    assert code == exitcodes.OK and "git init" in text and "commit" in text


def test_init_inside_a_repository_makes_no_nested_one(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    code, out = init_with(tmp_path, BLANK_LOCALE, "--json")
    assert code == exitcodes.OK
    assert not (tmp_path / "w" / ".git").exists()
    shown = json.loads(out)["git"]
    assert shown["state"] == "existing" and shown["repository"] == str(tmp_path.resolve())
    assert git(tmp_path, "rev-list", "--all").strip() == ""


def test_init_without_git_says_the_workspace_is_not_under_git_and_how(tmp_path: Path) -> None:
    no_git = tmp_path / "bin"
    no_git.mkdir()
    env = {**BLANK_LOCALE, "PATH": str(no_git)}
    code, out = init_with(tmp_path, env)
    assert code == exitcodes.OK and (tmp_path / "w" / "thoth.toml").is_file()
    assert not (tmp_path / "w" / ".git").exists()
    text = " ".join(out.split())
    assert "not under Git" in text and "git init" in text
    code, out = init_with(tmp_path / "json", env, "--json")
    shown = json.loads(out)["git"]
    assert code == exitcodes.OK and shown["state"] == "unavailable"
    assert "git init" in shown["hint"]


# -- issue 25, point 5: long work you can follow, off a terminal too -----------------------------


def test_off_a_terminal_progress_is_a_line_every_few_seconds_with_an_estimate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from thoth.cli.common import PlainProgress

    now = [0.0]
    plain = PlainProgress("docs sync", every=5.0, clock=lambda: now[0])
    plain("embed", 0, 100)  # the first line of a phase
    now[0] = 2.0
    plain("embed", 10, 100)  # within 5 s: not said
    now[0] = 10.0
    plain("embed", 50, 100)
    now[0] = 12.0
    plain("embed", 100, 100)  # the last step: always said
    now[0] = 75.0
    plain.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "[docs sync] embed 0/100 (0%), 0s elapsed",
        "[docs sync] embed 50/100 (50%), 10s elapsed, about 10s left",
        "[docs sync] embed 100/100 (100%), 12s elapsed",
        "[docs sync] done in 1m15s",
    ]
    PlainProgress("docs sync", clock=lambda: 3.0).close(failed=True)
    assert capsys.readouterr().err == "[docs sync] stopped after 0s\n"
