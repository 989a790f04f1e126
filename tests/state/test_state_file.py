"""Issue 22, point 7: the state file is never silently reset. A truncated, foreign or
future-version state file stops every command with a coded error naming the file and the way
back; the copy kept before the last sync is put back by one command, `tht state restore`."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from tests.cli.test_outcomes import fake, synced, tht  # noqa: F401  (fixtures)
from tests.conftest import commit_all
from thoth.cli import exitcodes

STATE = Path(".thoth") / "state.sqlite"


def runs(root: Path) -> list[int]:
    code, data = tht("docs", "runs", "-w", str(root))
    assert code == exitcodes.OK, data
    return sorted(r["id"] for r in data["runs"])


def test_a_sync_keeps_the_previous_copy(synced: Path) -> None:  # noqa: F811
    previous = synced / ".thoth" / "state.sqlite.previous"
    assert previous.is_file()
    db = sqlite3.connect(previous)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        db.close()


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (b"", "is empty (0 bytes)"),
        (b"PK\x03\x04 not a database at all" * 10, "is not a SQLite database"),
    ],
    ids=["truncated", "foreign"],
)
@pytest.mark.parametrize(
    "command",
    [
        ("docs", "sync"),
        ("docs", "runs"),
        ("ask", "Quando si paga?"),
        ("verify",),
        ("index", "check"),
    ],
)
def test_a_damaged_state_file_stops_every_command_and_changes_nothing(
    synced: Path,  # noqa: F811
    damage: bytes,
    said: str,
    command: tuple[str, ...],
) -> None:
    state = synced / STATE
    for suffix in ("-wal", "-shm"):
        state.with_name(state.name + suffix).unlink(missing_ok=True)
    state.write_bytes(damage)
    an_hour_ago = time.time() - 3600  # not a file a concurrent opener is creating right now
    os.utime(state, (an_hour_ago, an_hour_ago))
    code, failed = tht(*command, "-w", str(synced))
    assert code == exitcodes.PRECONDITION and failed["code"] == "state_damaged", failed
    assert said in failed["error"] and str(state) in failed["error"]
    assert "tht state restore" in failed["error"]
    assert state.read_bytes() == damage  # nothing re-initialised it


def test_restore_brings_the_run_history_back(synced: Path) -> None:  # noqa: F811
    (synced / "docs" / "extra.md").write_text("# Extra\n\nUn altro documento.\n", "utf-8")
    commit_all(synced, "one more document")
    code, data = tht("docs", "sync", "-w", str(synced))
    assert code == exitcodes.OK, data
    before = runs(synced)
    assert len(before) == 2
    state = synced / STATE
    state.write_bytes(b"")
    code, restored = tht("state", "restore", "-w", str(synced))
    assert code == exitcodes.OK and restored["ok"], restored
    aside = Path(restored["moved_aside"])
    assert aside.read_bytes() == b"" and aside.parent == state.parent
    # The copy taken before the second sync: the first run is back, the command works again.
    assert runs(synced) == before[:1]
    code, again = tht("docs", "sync", "-w", str(synced))
    assert code == exitcodes.OK, again


def test_restore_without_a_previous_copy_says_what_to_do(synced: Path) -> None:  # noqa: F811
    (synced / ".thoth" / "state.sqlite.previous").unlink()
    (synced / STATE).write_bytes(b"")
    code, failed = tht("state", "restore", "-w", str(synced))
    assert code == exitcodes.PRECONDITION and failed["code"] == "state_damaged"
    assert "no previous copy" in failed["error"]


def test_a_state_file_of_a_future_version_is_refused_with_a_code(synced: Path) -> None:  # noqa: F811
    db = sqlite3.connect(synced / STATE)
    with db:
        db.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    db.close()
    code, failed = tht("docs", "runs", "-w", str(synced))
    assert code != exitcodes.OK and failed["code"] == "state_newer", failed
    assert "a newer Thoth" in failed["error"]
