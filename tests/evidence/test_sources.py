"""Bad sources: each gives a clear error naming the file, and nothing is written."""

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import GLOSSARY, status, write_source
from thoth.errors import ProblemsError
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.workspace import Workspace

Make = Callable[..., Workspace]


def refused(ws: Workspace) -> ProblemsError:
    with pytest.raises(ProblemsError) as info:
        prepare(ws, RuleBasedRestructurer())
    assert status(ws.root) == "", "a refused batch must leave the worktree unchanged"
    return info.value


@pytest.mark.parametrize(
    "content,code,fragment",
    [
        ("Ricovero\xe0".encode("latin-1"), "encoding", "not valid UTF-8 at byte 8"),
        (b"\x89PNG\x00\x00binary", "binary", "binary content"),
        ("Accesso al DWH: password = s3greta!\n", "credential", "password assignment"),
        ("Usa postgresql://etl:Segreta99@dwh.local/prod\n", "credential", "connection string"),
        ("api_key: sk-abcdefghijklmnopqrstuvwx\n", "credential", "looks like a credential"),
    ],
)
def test_bad_source_is_named_and_nothing_written(
    make_workspace: Make, content: bytes | str, code: str, fragment: str
) -> None:
    ws = make_workspace({"a-ok.md": GLOSSARY, "b-bad.md": content})
    error = refused(ws)
    bad = [p for p in error.problems if p.where == "source/b-bad.md"]
    assert bad and bad[0].code == code and fragment in bad[0].message


def test_oversized_source(make_workspace: Make) -> None:
    ws = make_workspace({"big.md": "x" * 600_000})
    error = refused(ws)
    assert error.problems[0].where == "source/big.md"
    assert "too large: 600000 bytes" in error.problems[0].message


def test_symlink_escaping_the_workspace(make_workspace: Make, tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("# fuori\n\nTesto fuori dal workspace.\n")
    ws = make_workspace({"ok.md": GLOSSARY})
    (ws.evidence / "source" / "link.md").symlink_to(outside)
    from tests.conftest import commit_all

    commit_all(ws.root)
    error = refused(ws)
    assert [p.where for p in error.problems] == ["source/link.md"]
    assert "outside the workspace" in error.problems[0].message


def test_symlink_inside_the_workspace_is_read(make_workspace: Make) -> None:
    ws = make_workspace({"ok.md": GLOSSARY})
    (ws.evidence / "source" / "alias.md").symlink_to(ws.evidence / "source" / "ok.md")
    from tests.conftest import commit_all

    commit_all(ws.root)
    report = prepare(ws, RuleBasedRestructurer())
    assert {s.source for s in report.sources} == {"source/ok.md", "source/alias.md"}


def test_other_file_types_are_not_sources(make_workspace: Make) -> None:
    ws = make_workspace({"ok.md": GLOSSARY})
    write_source(ws.root, "figura.png", b"\x89PNG\x00")
    write_source(ws.root, "note.docx", b"PK\x00")
    from tests.conftest import commit_all

    commit_all(ws.root)
    report = prepare(ws, RuleBasedRestructurer())
    assert [s.source for s in report.sources] == ["source/ok.md"]


def test_all_problems_are_listed_not_just_the_first(make_workspace: Make) -> None:
    ws = make_workspace({"a.md": b"\xff\xfe", "b.md": b"\x00", "c.md": GLOSSARY})
    error = refused(ws)
    assert {p.where for p in error.problems} == {"source/a.md", "source/b.md"}
