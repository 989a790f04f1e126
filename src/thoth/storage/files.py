"""Durable file writes: an fsynced append, the fsync of a directory, and a batch of file writes
and deletions applied all together or not at all."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path


def append_durably(path: Path, data: bytes) -> None:
    """Append `data` to `path` and fsync it. The caller holds the file's lock, so if the write
    fails only this call's partial bytes are cut off again: a half-written JSONL line would make
    the whole file unreadable."""
    new_file = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except BaseException:
            os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)
    if new_file:
        fsync_dir(path.parent)


def write_durably(path: Path, text: str) -> None:
    """Write `text` to `path` (UTF-8) and fsync it before returning; callers that need the
    file to appear atomically write it beside its final place and rename it."""
    with path.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def fsync_dir(path: Path) -> None:
    """Make a file creation or rename in `path` durable, not only the file's bytes."""
    fsync_path(path)


def fsync_path(path: Path) -> None:
    """fsync the file or directory at `path` (a file written by another handle, a directory)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def apply_changes(
    base: Path, writes: Mapping[str, str], deletes: Sequence[str] = (), last: str | None = None
) -> None:
    """Stage every new file next to its target, then swap them in with os.replace. If any step
    fails, every file already swapped is restored from memory and the error propagates.
    `last`, when given, is written after everything else (the manifest: it commits the batch)."""
    if not writes and not deletes:
        return
    order = sorted(writes, key=lambda rel: (rel == last, rel))
    staging = Path(tempfile.mkdtemp(prefix=".thoth-staging-", dir=base))
    backups: dict[str, bytes | None] = {}
    done: list[str] = []
    try:
        staged: dict[str, Path] = {}
        for n, rel in enumerate(order):
            tmp = staging / f"{n}.tmp"
            tmp.write_text(writes[rel], encoding="utf-8")
            staged[rel] = tmp
        for rel in [*order, *deletes]:
            target = base / rel
            backups[rel] = target.read_bytes() if target.exists() else None
        for rel in deletes:
            (base / rel).unlink()
            done.append(rel)
        for rel in order:
            target = base / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged[rel], target)
            done.append(rel)
    except BaseException:
        for rel in reversed(done):
            target = base / rel
            original = backups[rel]
            if original is None:
                target.unlink(missing_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(original)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
