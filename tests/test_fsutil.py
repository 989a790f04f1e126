from pathlib import Path

import pytest

from thoth.fsutil import apply_changes


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
