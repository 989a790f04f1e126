"""Compare-and-swap on the ledger: a write names the position it was based on, and a ledger
that has grown since refuses it (LedgerConflict, with the current position), across
processes, not only threads."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from thoth.session import SessionStore
from thoth.session.ledger import LedgerConflict

WRITER = """
import sys
import time
from pathlib import Path
from thoth.session import SessionStore
from thoth.session.ledger import LedgerConflict

store, session_id, name, count = SessionStore(Path(sys.argv[1])), sys.argv[2], sys.argv[3], int(sys.argv[4])
session = store.open(session_id)
gate = Path(sys.argv[1]) / "go"
(Path(sys.argv[1]) / f"ready-{name}").touch()
while not gate.exists():  # every writer starts at once
    time.sleep(0.005)
conflicts = 0
for i in range(count):
    while True:
        base = session.ledger.position()
        try:
            session.append("clarification", "concept_clarified", subject=f"{name}-{i}", base=base)
            break
        except LedgerConflict as exc:
            assert exc.position > base
            conflicts += 1
print(conflicts)
"""


def test_a_stale_base_is_refused_with_the_position_and_nothing_written(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).create("Quanti ricoveri?")
    session.append("clarification", "concept_clarified", subject="ricovero", base=0)
    before = session.ledger.path.read_bytes()
    with pytest.raises(LedgerConflict) as caught:
        session.append("clarification", "concept_clarified", subject="degenza", base=0)
    assert caught.value.position == 1 and caught.value.code == "ledger_conflict"
    with pytest.raises(LedgerConflict):
        session.retract(1, rationale="no", base=2)
    assert session.ledger.path.read_bytes() == before
    session.append("clarification", "concept_clarified", subject="degenza", base=1)
    assert session.ledger.position() == 2


def test_writers_in_several_processes_lose_nothing_and_repeat_nothing(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).create("Quanti ricoveri?")
    writers, each = 4, 25
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), session.id, f"p{n}", str(each)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(writers)
    ]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("ready-*"))) < writers and time.monotonic() < deadline:
        time.sleep(0.01)
    (tmp_path / "go").touch()
    conflicts = 0
    for process in processes:
        out, _ = process.communicate(timeout=300)
        assert process.returncode == 0
        conflicts += int(out.strip())
    entries = session.entries()
    assert [e.seq for e in entries] == list(range(1, writers * each + 1))
    subjects = [e.subject for e in entries]
    assert sorted(subjects) == sorted(f"p{n}-{i}" for n in range(writers) for i in range(each))
    for n in range(writers):  # each writer's own decisions in its order
        mine = [s for s in subjects if s.startswith(f"p{n}-")]
        assert mine == [f"p{n}-{i}" for i in range(each)]
    assert conflicts > 0, "four processes at once must have met stale positions"
