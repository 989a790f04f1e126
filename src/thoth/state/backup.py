"""The SQLite state file is never silently reset: a file that is empty (truncated), not a
SQLite database, or unreadable stops every command with a coded error that names it and the
way back; and the previous copy is kept, so that way back is one command.

- `check_state_file(path)`: before any connection is made (SQLite would take a 0-byte file for
  a new database and the migrations would re-create it: run history gone, "Sync run 1").
- `keep_previous(path)`: a consistent copy (SQLite's online backup) written next to it as
  `<name>.previous`, atomically (a temporary file renamed over the old copy). Taken before each
  run that rebuilds what a workspace serves (docs sync, Evidence publication).
- `restore_previous(path)`: `tht state restore`: the damaged file moved aside (never deleted),
  the previous copy put in its place.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from thoth.errors import Problem
from thoth.state.core import StateError

PREVIOUS_SUFFIX: Final = ".previous"
RESTORE: Final = "tht state restore -w <workspace>"
# SQLite creates the file empty and writes its header when the first opener sets up the
# database: an empty file younger than this is being created by a concurrent opener.
FRESH_SECONDS: Final = 5.0


class StateDamaged(StateError):
    """The state file cannot be used as it is; nothing was changed."""

    code = "state_damaged"
    exit_code = 4  # refused to start: nothing ran


def previous_copy(path: Path) -> Path:
    return path.with_name(path.name + PREVIOUS_SUFFIX)


def check_state_file(path: Path) -> None:
    """StateDamaged when an existing state file is empty or unreadable. A file that does not
    exist yet is a new store (created by the migrations); an empty file only seconds old is
    one another process is creating right now, and is waited for. A file that is not SQLite
    is told by SQLite itself when it is opened (`not_sqlite`).

    Only `stat` and `access`: this process may hold SQLite connections to the file, and
    closing any other descriptor of it would drop their POSIX locks (SQLite's documented
    hazard), so the file is never opened here."""
    size = _size(path)
    while size == 0 and _age(path) < FRESH_SECONDS:
        time.sleep(0.05)
        size = _size(path)
    if size is None:
        return
    if size == 0:
        raise _damaged(path, "is empty (0 bytes): it was truncated")
    if not os.access(path, os.R_OK | os.W_OK):
        raise _damaged(path, "cannot be read and written by this user")


def not_sqlite(path: Path) -> StateDamaged:
    return _damaged(path, "is not a SQLite database (SQLite: file is not a database)")


def _is_database(path: Path) -> bool:
    """Whether `path` opens as a SQLite database that passes a quick check (a copy nobody
    has open: opening it here is safe)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        return bool(db.execute("PRAGMA quick_check").fetchone() == ("ok",))
    except sqlite3.Error:
        return False
    finally:
        db.close()


def _size(path: Path) -> int | None:
    """The file's size; None when there is no file (or no directory: the engine says so)."""
    try:
        return path.stat().st_size
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _damaged(path, f"cannot be read ({exc.strerror or exc})") from exc


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return FRESH_SECONDS


def _damaged(path: Path, what: str) -> StateDamaged:
    copy = previous_copy(path)
    if copy.is_file():
        fix = (
            f"`{RESTORE}` puts back the copy taken before the last sync ({copy}); the damaged "
            "file is kept aside"
        )
    else:
        fix = (
            "there is no previous copy: move the file aside and run `tht docs sync` to start a "
            "new state (the run history and the activations are then lost)"
        )
    message = f"the state file {path} {what}; nothing was changed"
    return StateDamaged(
        f"{message} -> {fix}",
        problems=[Problem(str(path), what, hint=fix, code="state_damaged")],
    )


def keep_previous(path: Path) -> Path | None:
    """A consistent copy of the SQLite state file as `<name>.previous` (atomic rename); None
    when there is no file yet. The copy is read through SQLite's backup API, so a copy taken
    while another process writes is still a valid database."""
    if not path.is_file():
        return None
    target = previous_copy(path)
    # Its own temporary name: two syncs starting at once each write a whole copy, and the
    # last rename wins (either copy is the state before a run).
    partial = target.with_name(f"{target.name}.{os.getpid()}-{secrets.token_hex(4)}.partial")
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        copy = sqlite3.connect(partial)
        try:
            source.backup(copy)
        finally:
            copy.close()
    except sqlite3.Error as exc:
        partial.unlink(missing_ok=True)
        raise StateError(
            f"cannot keep a previous copy of the state file {path} ({exc}) -> check the free "
            "space and the permissions of its directory"
        ) from exc
    finally:
        source.close()
    os.replace(partial, target)
    return target


def restore_previous(path: Path) -> tuple[Path, Path | None]:
    """Put the previous copy in place of the state file; the current file (if any) is moved
    aside as `<name>.damaged-<UTC time>`. Returns (the copy used, where the old file went)."""
    copy = previous_copy(path)
    if copy.is_file() and not _is_database(copy):
        raise _damaged(copy, "is not a usable SQLite database: the previous copy cannot be used")
    if not copy.is_file():
        raise StateDamaged(
            f"there is no previous copy of the state file ({copy}) -> move {path} aside and "
            "run `tht docs sync` to start a new state"
        )
    aside = None
    if path.exists():
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = path.with_name(f"{path.name}.damaged-{stamp}")
        os.replace(path, aside)
        for suffix in ("-wal", "-shm"):  # a WAL of the damaged file belongs to it
            wal = path.with_name(path.name + suffix)
            if wal.exists():
                os.replace(wal, aside.with_name(aside.name + suffix))
    partial = path.with_name(path.name + ".restoring")
    partial.write_bytes(copy.read_bytes())
    os.replace(partial, path)
    return copy, aside
