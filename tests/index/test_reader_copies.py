"""Where a reader's private copy of a sealed shard is made: in memory (/dev/shm) when the
shard is small, so that opening, closing and removing it touch no disk; on disk otherwise,
or wherever TMPDIR says."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from thoth.index import shard
from thoth.index.shard import private_copy, readers_roots

needs_memory = pytest.mark.skipif(
    not shard.MEMORY_DIR.is_dir(), reason="no memory file system at /dev/shm"
)


def _sealed(tmp_path: Path) -> Path:
    sealed = tmp_path / "sealed"
    (sealed / "segments").mkdir(parents=True)
    (sealed / "edge_config.json").write_text("{}", encoding="utf-8")
    (sealed / "segments" / "data").write_bytes(b"x" * 4096)
    return sealed


@needs_memory
def test_a_small_shard_is_copied_into_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TMPDIR", raising=False)
    copy = private_copy(_sealed(tmp_path), None, "g1")
    try:
        assert copy.parent == shard.MEMORY_DIR / "thoth-readers"
        assert (copy / "segments" / "data").read_bytes() == b"x" * 4096
    finally:
        shutil.rmtree(copy)


@needs_memory
def test_a_shard_over_the_memory_limit_is_copied_to_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(shard, "MEMORY_COPY_LIMIT", 1024)
    copy = private_copy(_sealed(tmp_path), None, "g1")
    try:
        assert copy.parent == shard.disk_readers_root()
        assert copy.parent != shard.MEMORY_DIR / "thoth-readers"
    finally:
        shutil.rmtree(copy)


def test_tmpdir_is_obeyed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = tmp_path / "tmp"
    chosen.mkdir()
    monkeypatch.setenv("TMPDIR", str(chosen))
    monkeypatch.setattr("tempfile.tempdir", None)  # gettempdir() reads TMPDIR again
    copy = private_copy(_sealed(tmp_path), None, "g1")
    try:
        assert copy.parent == chosen / "thoth-readers"
        assert readers_roots() == [chosen / "thoth-readers"]
    finally:
        shutil.rmtree(copy)


@needs_memory
def test_dead_copies_are_swept_from_memory_and_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TMPDIR", raising=False)
    dead = []
    for root in readers_roots():
        root.mkdir(mode=0o1777, exist_ok=True)
        (root / "999999999-g0-abc").mkdir(exist_ok=True)
        dead.append(root / "999999999-g0-abc")
    assert len(dead) == 2
    copy = private_copy(_sealed(tmp_path), None, "g1")
    try:
        assert not any(d.exists() for d in dead)
    finally:
        shutil.rmtree(copy)
