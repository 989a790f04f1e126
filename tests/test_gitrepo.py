"""`thoth.gitrepo.batch_blobs`: the one reader of `git cat-file --batch` output (document
sources and the analytics catalog both read many files from one Git process)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from thoth.gitrepo import ObjectNotBlob, batch_blobs


def _repo(tmp_path: Path) -> Path:
    env = ["-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_bytes(b"first\n")
    (tmp_path / "b.bin").write_bytes(b"\x00two\nlines\n")  # a newline inside the content
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    subprocess.run(["git", "-C", str(tmp_path), *env, "commit", "-qm", "c"], check=True)
    return tmp_path


def _batch(repo: Path, names: list[str]) -> bytes:
    stdin = "".join(f"{n}\n" for n in names).encode()
    return subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch"],
        input=stdin,
        capture_output=True,
        check=True,
    ).stdout


def test_blobs_come_back_in_request_order_with_their_exact_bytes(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    out = _batch(repo, ["HEAD:b.bin", "HEAD:a.txt"])
    assert batch_blobs(out, 2) == [b"\x00two\nlines\n", b"first\n"]


def test_a_missing_object_is_named_by_its_position(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    out = _batch(repo, ["HEAD:a.txt", "HEAD:gone.txt"])
    with pytest.raises(ObjectNotBlob) as caught:
        batch_blobs(out, 2)
    assert caught.value.position == 1
    assert "missing" in caught.value.header
