"""Sealed Edge shards are read from a verified private copy, never where they lie.

Opening a shard makes the Qdrant Edge engine write into it: it rewrites `edge_config.json`,
removes journals, and replaces a segment that lost its `version.info` with an empty one — a
read that destroys data, after which the shard answers "nothing" as if all were well. So the
builder records, at seal time, every file of the shard with its size and SHA-256
(`fingerprint`); a reader copies the sealed directory to a directory of its own, hashing as it
copies, and opens the copy only when every file matches (`private_copy`). A sealed generation
is therefore never written after its seal, a read-only index directory can be served, and a
damaged shard is `IndexCorrupt` before the engine sees it.

Copies live in `thoth-readers/<pid>-<generation>-*` under the memory file system (/dev/shm) when
the shard's files add up to at most `MEMORY_COPY_LIMIT` (apparent sizes) and a quarter of its
free space, else under the system temporary directory; a TMPDIR set in the environment is obeyed
for every copy. Memory, because on a disk the copy is most of what a one-shot read costs: the
engine fills the preallocated files it opens (~180 MiB for the demo's generation), flushes them
when the store closes, and the removal follows (open and close of the demo's generation: 2.3 s
on /tmp, 1.1 s in /dev/shm, on a loaded 2-core machine; docs/benchmarks/README.md). The price:
that memory is held while the generation is read. Copies are removed when the store is closed;
those of processes that died are swept by the next open, wherever they lie.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from thoth.index.base import IndexCorrupt, IndexUnavailable

# The key of a generation's counts that holds its shard fingerprint.
SHARD_FILES = "files"

_CHUNK = 1 << 20
_READERS_DIR = "thoth-readers"
MEMORY_DIR = Path("/dev/shm")
# A shard larger than this (its files' apparent sizes: the copy is sparse, but the engine fills
# the preallocated files once it opens them, ~180 MiB for the demo's 3 MiB of data) is copied
# to disk: every reading process holds its own copy for as long as it reads the generation.
MEMORY_COPY_LIMIT = 256 << 20


def fingerprint(root: Path) -> dict[str, list[Any]]:
    """Every file under `root` (relative POSIX path) -> [size, digest] (see `_Digest`)."""
    files: dict[str, list[Any]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            digest = _Digest()
            with path.open("rb") as fh:
                for chunk in _chunks(fh.fileno()):
                    digest.update(chunk)
            files[path.relative_to(root).as_posix()] = [digest.size, digest.hexdigest()]
    return files


class _Digest:
    """SHA-256 over a file's chunks, each tagged with its length; an all-zero chunk is hashed
    as its length alone. The engine preallocates most of a shard as zeros (a 1,000-point shard
    is ~100 MiB on disk, mostly zero pages): they are checked for being zero, which is
    several times cheaper than hashing them, and the private copy leaves them sparse."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.size = 0

    def update(self, chunk: bytes | int) -> bool:
        """Hash `chunk` (an int: that many zeros, a hole never read); True if all zeros."""
        length = chunk if isinstance(chunk, int) else len(chunk)
        zero = isinstance(chunk, int) or chunk.count(0) == length
        self._sha.update((b"Z" if zero else b"D") + length.to_bytes(8, "big"))
        if not zero:
            assert isinstance(chunk, bytes)
            self._sha.update(chunk)
        self.size += length
        return zero

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def _chunks(fd: int) -> Iterator[bytes | int]:
    """The file's 1 MiB chunks, in order: the bytes, or the length of a chunk that lies in a
    hole of a sparse file (SEEK_DATA), which is zeros and is not read. Sealed shards are
    sparse: ~2 MiB of data in ~220 MiB of file for the demo's index."""
    size = os.fstat(fd).st_size
    pos = 0
    while pos < size:
        length = min(_CHUNK, size - pos)
        try:
            data_at = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as exc:
            # ENXIO: no data after pos; anything else: holes not supported, read it all.
            data_at = size if exc.errno == errno.ENXIO else pos
        if data_at >= pos + length:
            yield length
        else:
            chunk = os.pread(fd, length, pos)
            if len(chunk) != length:
                raise OSError(errno.EIO, f"short read at offset {pos}")
            yield chunk
        pos += length


def disk_readers_root() -> Path:
    return Path(tempfile.gettempdir()) / _READERS_DIR


def _memory_root() -> Path | None:
    """The memory file system's readers directory, None when TMPDIR chooses the place or
    there is no writable /dev/shm."""
    if os.environ.get("TMPDIR") or not os.access(MEMORY_DIR, os.W_OK | os.X_OK):
        return None
    return MEMORY_DIR / _READERS_DIR


def readers_roots() -> list[Path]:
    """Every directory a private copy may be made in (the sweep looks in each)."""
    memory = _memory_root()
    return [memory, disk_readers_root()] if memory is not None else [disk_readers_root()]


def _copy_root(sealed: Path) -> Path:
    """Memory for a small shard that fits easily, else disk."""
    memory = _memory_root()
    if memory is None:
        return disk_readers_root()
    try:
        size = sum(p.lstat().st_size for p in sealed.rglob("*") if p.is_file())
        free = os.statvfs(MEMORY_DIR)
    except OSError:
        return disk_readers_root()  # the copy reports what cannot be read
    room = free.f_bavail * free.f_frsize // 4  # never crowd the memory file system
    return memory if size <= min(MEMORY_COPY_LIMIT, room) else disk_readers_root()


def private_copy(sealed: Path, expected: Mapping[str, Any] | None, gen_id: str) -> Path:
    """A private copy of the sealed shard `sealed`, checked file by file against `expected`
    (a `fingerprint`; None for generations sealed before fingerprints were recorded: copied
    unchecked, still never written). Raises IndexCorrupt on any difference, IndexUnavailable
    when the copy cannot be made; nothing is left behind either way."""
    root = _copy_root(sealed)
    try:
        for place in readers_roots():
            if place.is_dir():
                _sweep_dead_readers(place)
        root.mkdir(mode=0o1777, exist_ok=True)
        dest = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-{gen_id}-", dir=root))
    except OSError as exc:
        raise IndexUnavailable(
            f"{root}: cannot make a private read copy of generation {gen_id}: {exc} -> free "
            "space or point TMPDIR at a writable directory"
        ) from exc
    try:
        found = _copy_hashing(sealed, dest)
        if expected is not None:
            _compare(sealed, gen_id, found, expected)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)  # our own half-made copy: nobody else reads it
        raise
    return dest


def _copy_hashing(sealed: Path, dest: Path) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    try:
        for path in sorted(sealed.rglob("*")):
            rel = path.relative_to(sealed)
            if path.is_dir():
                (dest / rel).mkdir(parents=True, exist_ok=True)
                continue
            digest = _Digest()
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            with path.open("rb") as src, (dest / rel).open("wb") as out:
                for chunk in _chunks(src.fileno()):
                    if digest.update(chunk):
                        out.seek(chunk if isinstance(chunk, int) else len(chunk), os.SEEK_CUR)
                    else:
                        assert isinstance(chunk, bytes)
                        out.write(chunk)
                out.truncate(digest.size)  # the zeros at the end stay a hole
            found[rel.as_posix()] = [digest.size, digest.hexdigest()]
    except OSError as exc:
        raise IndexUnavailable(
            f"{sealed}: cannot read the sealed generation into a private copy at {dest}: {exc} "
            "-> check the permissions of the index directory and the free space of TMPDIR"
        ) from exc
    return found


def _compare(
    sealed: Path, gen_id: str, found: Mapping[str, Any], expected: Mapping[str, Any]
) -> None:
    missing = sorted(set(expected) - set(found))
    added = sorted(set(found) - set(expected))
    changed = sorted(
        rel for rel in set(found) & set(expected) if list(found[rel]) != list(expected[rel])
    )
    if not (missing or added or changed):
        return
    parts = []
    for label, names in (("missing", missing), ("not sealed", added), ("altered", changed)):
        if names:
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            parts.append(f"{len(names)} {label} ({shown})")
    raise IndexCorrupt(
        f"{sealed}: generation {gen_id} does not hold the files its builder sealed: "
        f"{'; '.join(parts)}. Nothing of it is read -> roll back to a retained generation "
        "(`tht index check` lists them, `tht evidence activate --generation ...`), restore the "
        "directory from a backup, or rebuild (`tht docs sync --full`, `tht workspace preprocess "
        "evidence`)"
    )


def _sweep_dead_readers(root: Path) -> None:
    """Remove private copies whose process is gone (killed before it could close them)."""
    for path in root.iterdir():
        pid_text = path.name.split("-", 1)[0]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        # Best effort on purpose: another process may be sweeping the same leftover.
        shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True
