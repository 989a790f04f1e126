"""thoth.storage: the batch of file writes, and the append-only JSONL log every ledger-like
file of Thoth is kept in."""

import ast
import json
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from thoth.errors import Problem, ProblemsError
from thoth.storage import JsonlLog, LineIssue, LineRejected, apply_changes


def test_a_failing_swap_restores_every_file(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("old a")
    (tmp_path / "gone.md").write_text("to delete")
    blocker = tmp_path / "z-blocked"
    blocker.mkdir()
    (blocker / "keep").write_text("x")  # a non-empty directory cannot be replaced by a file
    with pytest.raises(OSError):
        apply_changes(
            tmp_path,
            {"a.md": "new a", "b/new.md": "new b", "z-blocked": "boom"},
            ["gone.md"],
        )
    assert (tmp_path / "a.md").read_text() == "old a"
    assert (tmp_path / "gone.md").read_text() == "to delete"
    assert not (tmp_path / "b" / "new.md").exists()
    assert not list(tmp_path.glob(".thoth-staging-*"))


def test_the_last_file_is_swapped_last(tmp_path: Path) -> None:
    (tmp_path / "blocked").mkdir()
    (tmp_path / "blocked" / "x").write_text("x")
    with pytest.raises(OSError):
        apply_changes(tmp_path, {"manifest.yaml": "m", "blocked": "b"}, last="manifest.yaml")
    assert not (tmp_path / "manifest.yaml").exists()


# ---------------------------------------------------------------------- the JSONL log


def _damaged(line: int, problems: list[Problem]) -> ProblemsError:
    return ProblemsError(f"log damaged at line {line}", problems)


class _Rec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    n: int


def _validate(number: int, text: str) -> _Rec:
    rec = _Rec.model_validate_json(text)
    if rec.n != number:
        raise LineRejected(LineIssue(f"n {rec.n} where {number} was due", field="n"))
    return rec


@pytest.fixture
def log(tmp_path: Path) -> JsonlLog:
    return JsonlLog(tmp_path / "d" / "log.jsonl", damaged=_damaged, repair_hint="fix it by hand")


def test_log_appends_batches_and_reads_them_back(log: JsonlLog) -> None:
    assert log.read(_validate) == []
    assert not log.path.parent.exists()  # reading an absent log creates nothing
    with log.writing() as w:
        assert w.read(_validate) == []
        w.append(['{"n": 1}', '{"n": 2}'])
    with log.writing() as w:
        w.append([json.dumps({"n": len(w.read(_validate)) + 1})])
    assert [r.n for r in log.read(_validate)] == [1, 2, 3]
    assert log.path.read_text("utf-8") == '{"n": 1}\n{"n": 2}\n{"n": 3}\n'
    assert sorted(p.name for p in log.path.parent.iterdir()) == ["log.jsonl", "log.jsonl.lock"]


def test_log_writer_is_only_usable_under_its_lock(log: JsonlLog) -> None:
    with log.writing() as w, pytest.raises(ValueError, match="one line"):
        w.append(['{"n":\n 1}'])
    with pytest.raises(RuntimeError, match="lock was released"):
        w.append(['{"n": 1}'])
    assert not log.path.exists()


def _broken(log: JsonlLog, line: int, *needles: str) -> Problem:
    before = log.path.read_bytes()
    for read in (lambda: log.read(_validate), lambda: _append_one(log)):
        with pytest.raises(ProblemsError) as err:
            read()
        assert f"line {line}" in str(err.value)
        problem = err.value.problems[0]
        assert problem.where == f"{log.path} line {line}"
        assert problem.hint == "fix it by hand"
        for needle in needles:
            assert needle in problem.message or needle == problem.field, (needle, problem)
    assert log.path.read_bytes() == before  # nothing appended on top of damage
    return problem


def _append_one(log: JsonlLog) -> None:
    with log.writing() as w:
        w.append([json.dumps({"n": len(w.read(_validate)) + 1})])


@pytest.mark.parametrize(
    ("content", "line", "needle"),
    [
        (b'{"n": 1}\n\n', 2, "empty line"),
        (b'{"n": 1}\n\xff\n', 2, "not valid UTF-8"),
        (b'{"n": 1}\n{"n": \n', 2, "not valid JSON"),
        (b'{"n": 1}\n[1]\n', 2, "not a JSON object but a list"),
        (b'{"n": 1}\n{"n": 3}\n', 2, "n 3 where 2 was due"),
        (b'{"n": 1}\n{"n": "2"}\n', 2, "n"),  # the pydantic hook: strict int
    ],
)
def test_log_never_skips_a_damaged_line(
    log: JsonlLog, content: bytes, line: int, needle: str
) -> None:
    log.path.parent.mkdir()
    log.path.write_bytes(content)
    _broken(log, line, needle)


def test_log_reports_a_cut_tail_after_checking_the_lines_before_it(log: JsonlLog) -> None:
    log.path.parent.mkdir()
    log.path.write_bytes(b'{"n": 1}\n{"n": 2}')  # a complete object, but no line end
    problem = _broken(log, 2, "no line end")
    assert problem.code == "corrupted"
    # Damage before the tail is the one reported: lines are checked in order first.
    log.path.write_bytes(b'{"n": 1}\n{"n": 5}\n{"n"')
    _broken(log, 2, "n 5 where 2 was due")


def test_storage_imports_nothing_of_thoth_but_errors() -> None:
    src = Path(__file__).resolve().parents[2] / "src" / "thoth" / "storage"
    imported = set()
    for path in src.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
    thoth = {m for m in imported if m.split(".")[0] == "thoth"}
    assert {m for m in thoth if not m.startswith("thoth.storage")} == {"thoth.errors"}
