"""Advisory file locks between processes."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def file_lock(path: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold an advisory `flock` on `path` (created if missing) for the block. The lock lives on
    a file of its own so the data file can be replaced or appended freely while it is held.
    A second `flock` on the same path from the same process waits for ever: take each lock
    once per process."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
