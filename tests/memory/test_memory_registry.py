"""The global memory registry: registry.jsonl, REUSABLE_TYPES, idempotent promotion.

Real files in tmp_path; the concurrency test runs two real Python processes.
"""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from thoth.memory import (
    REUSABLE_TYPES,
    MemoryDraft,
    MemoryRecord,
    MemoryRefused,
    Registry,
    RegistryCorrupted,
    content_sha256,
    memory_text,
)
from thoth.memory.core import text_of
from thoth.memory.promotion import draft_text

SRC = Path(__file__).resolve().parents[2] / "src"
SESSION = "s-20240501-093000-a1b2c3"


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry(tmp_path / "memory" / "registry.jsonl")


def draft(seq: int = 1, session_id: str = SESSION, **over: object) -> MemoryDraft:
    base = MemoryDraft(
        session_id=session_id,
        decision_seq=seq,
        type="concept_clarified",
        subject="ablazione",
        detail="procedura con `ablazione_transcatetere = TRUE`, contata con COUNT(DISTINCT cod_paz)",
        rationale="chiarito dal reviewer",
        question_context="Quante ablazioni per anno?",
        concepts=("ablazione",),
    )
    return replace(base, **over)  # type: ignore[arg-type]


def lines(registry: Registry) -> list[dict[str, object]]:
    return [json.loads(line) for line in registry.path.read_text("utf-8").splitlines()]


# ---------------------------------------------------------------------- REUSABLE_TYPES


def test_only_clarified_concepts_are_reusable() -> None:
    assert frozenset({"concept_clarified"}) == REUSABLE_TYPES


def test_reusable_types_is_defined_once_in_the_ledger() -> None:
    """Every boundary imports the one definition; a second copy could drift. It lives in the
    ledger, which checks promotion markers against it (session never imports memory)."""
    defined_in = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign):
                targets = [node.target]
            if any(isinstance(t, ast.Name) and t.id == "REUSABLE_TYPES" for t in targets):
                defined_in.append(path.relative_to(SRC).as_posix())
    assert defined_in == ["thoth/session/ledger.py"]


@pytest.mark.parametrize(
    "bad", ["table_promoted", "table_excluded", "column_promoted", "memory_promoted"]
)
def test_other_types_are_refused_by_name(registry: Registry, bad: str) -> None:
    with pytest.raises(MemoryRefused) as err:
        registry.add(draft(type=bad))
    assert bad in str(err.value)
    assert "concept_clarified" in str(err.value)
    assert not registry.path.exists()


def test_a_record_of_another_type_cannot_even_be_built() -> None:
    # pydantic's ValidationError is a ValueError: the model itself refuses, no file involved.
    with pytest.raises(ValueError, match="table_promoted"):
        MemoryRecord(
            id="mem-0001",
            created_at="2024-05-01T09:30:00.000000+00:00",
            session_id=SESSION,
            decision_seq=1,
            type="table_promoted",
            subject="fact_cardioversione",
            detail="",
            rationale="",
            question_context="",
            tables=(),
            concepts=(),
            content_sha256="0" * 64,
        )


# ---------------------------------------------------------------------- adding


def test_add_assigns_ids_and_stores_every_field(registry: Registry) -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    first, created = registry.add(draft(1))
    second, created2 = registry.add(draft(2, subject="ricovero", concepts=()))
    assert (created, created2) == (True, True)
    assert (first.id, second.id) == ("mem-0001", "mem-0002")
    assert first.session_id == SESSION and first.decision_seq == 1
    assert first.type == "concept_clarified"
    assert first.subject == "ablazione"
    assert first.rationale == "chiarito dal reviewer"
    assert first.question_context == "Quante ablazioni per anno?"
    assert first.concepts == ("ablazione",)
    assert first.tables == ()
    assert datetime.fromisoformat(first.created_at) >= before
    assert registry.all() == [first, second]
    stored = lines(registry)
    assert [r["id"] for r in stored] == ["mem-0001", "mem-0002"]
    assert stored[0]["tables"] == [] and stored[0]["concepts"] == ["ablazione"]


def test_content_hash_covers_exactly_the_embedded_text(registry: Registry) -> None:
    record, _ = registry.add(draft(1))
    text = memory_text(
        type=record.type,
        subject=record.subject,
        detail=record.detail,
        rationale=record.rationale,
        question_context=record.question_context,
        concepts=record.concepts,
    )
    assert record.content_sha256 == content_sha256(text)
    assert record.content_sha256 == hashlib.sha256(text.encode("utf-8")).hexdigest()
    for needle in (record.subject, record.detail, record.rationale, record.question_context):
        assert needle in text
    assert "ablazione" in text and "concept_clarified" in text
    # Provenance is not content: the same concept from another session hashes the same.
    other, _ = registry.add(draft(1, session_id="s-20240601-000000-ffffff"))
    assert other.content_sha256 == record.content_sha256
    changed, _ = registry.add(draft(2, concepts=("ablazione", "procedura")))
    assert changed.content_sha256 != record.content_sha256


def test_a_draft_and_its_record_have_one_text(registry: Registry) -> None:
    made = draft(1)
    record, _ = registry.add(made)
    assert record.text() == text_of(made) == draft_text(made) == text_of(record)
    assert record.content_sha256 == content_sha256(record.text())


def test_add_is_idempotent_on_session_and_seq(registry: Registry) -> None:
    first, created = registry.add(draft(1))
    again, created_again = registry.add(draft(1))
    assert created and not created_again
    assert again == first
    assert len(lines(registry)) == 1


def test_same_decision_with_other_content_is_refused(registry: Registry) -> None:
    registry.add(draft(1))
    before = registry.path.read_bytes()
    with pytest.raises(MemoryRefused) as err:
        registry.add(draft(1, subject="altro"))
    for needle in ("mem-0001", SESSION, "seq 1", str(registry.path)):
        assert needle in str(err.value)
    assert registry.path.read_bytes() == before


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"subject": " "}, "subject"),
        ({"session_id": ""}, "session_id"),
        ({"decision_seq": 0}, "decision_seq"),
    ],
)
def test_drafts_are_checked_field_by_field(
    registry: Registry, over: dict[str, object], field: str
) -> None:
    with pytest.raises(MemoryRefused, match=rf"\[{field}\]"):
        registry.add(draft(**over))  # type: ignore[arg-type]
    assert not registry.path.exists()


def test_get_find_and_all(registry: Registry) -> None:
    assert registry.all() == []
    assert registry.get("mem-0001") is None
    record, _ = registry.add(draft(3))
    assert registry.get("mem-0001") == record
    assert registry.find(SESSION, 3) == record
    assert registry.find(SESSION, 4) is None
    assert registry.get("mem-0002") is None


def test_writes_leave_no_temporary_files(registry: Registry) -> None:
    registry.add(draft(1))
    registry.add(draft(2))
    names = sorted(p.name for p in registry.path.parent.iterdir())
    assert names == ["registry.jsonl", "registry.jsonl.lock"]


def test_ids_keep_counting_past_four_digits(registry: Registry) -> None:
    registry.add(draft(1))
    # Build a registry whose last id is mem-9999 by rewriting the number of a valid line.
    record = lines(registry)[0]
    record["id"] = "mem-9999"
    registry.path.write_text(json.dumps(record) + "\n", "utf-8")
    nxt, _ = registry.add(draft(2))
    assert nxt.id == "mem-10000"


# ---------------------------------------------------------------------- corruption


def broken(registry: Registry, line: int, *needles: str) -> None:
    before = registry.path.read_bytes()
    for call in (registry.all, lambda: registry.add(draft(99))):
        with pytest.raises(RegistryCorrupted) as err:
            call()
        text = str(err.value)
        for needle in (str(registry.path), f"line {line}", *needles):
            assert needle in text, f"{needle!r} not in {text!r}"
    assert registry.path.read_bytes() == before


def test_bad_json_line_names_file_and_line(registry: Registry) -> None:
    registry.add(draft(1))
    with registry.path.open("a", encoding="utf-8") as f:
        f.write("{not json\n")
    broken(registry, 2, "not valid JSON")


def test_record_of_an_unknown_type_in_file_is_corruption(registry: Registry) -> None:
    """An older record type (`table_promoted`…) is skipped by type (test_memory_curation);
    a type Thoth never wrote is damage."""
    registry.add(draft(1))
    record = lines(registry)[0]
    record["type"] = "concept_clarifed"
    registry.path.write_text(json.dumps(record) + "\n", "utf-8")
    broken(registry, 1, "[type]", "concept_clarifed")


def test_older_record_type_in_file_is_skipped_not_a_memory(registry: Registry) -> None:
    registry.add(draft(1))
    record = lines(registry)[0]
    record["type"] = "table_promoted"
    registry.path.write_text(json.dumps(record) + "\n", "utf-8")
    assert registry.all() == []
    assert [(s.line, s.type) for s in registry.state().skipped] == [(1, "table_promoted")]


def test_missing_field_is_named(registry: Registry) -> None:
    registry.add(draft(1))
    record = lines(registry)[0]
    del record["rationale"]
    registry.path.write_text(json.dumps(record) + "\n", "utf-8")
    broken(registry, 1, "[rationale]")


def test_edited_text_without_new_hash_is_corruption(registry: Registry) -> None:
    registry.add(draft(1))
    record = lines(registry)[0]
    record["detail"] = "edited by hand"
    registry.path.write_text(json.dumps(record) + "\n", "utf-8")
    broken(registry, 1, "[content_sha256]")


def test_table_mappings_in_file_are_corruption(registry: Registry) -> None:
    registry.add(draft(1))
    record = lines(registry)[0]
    record["tables"] = ["fact_cardioversione"]
    registry.path.write_text(json.dumps(record) + "\n", "utf-8")
    broken(registry, 1, "[tables]")


def test_duplicate_id_or_decision_is_corruption(registry: Registry) -> None:
    registry.add(draft(1))
    registry.add(draft(2))
    first, second = lines(registry)
    registry.path.write_text(
        json.dumps(first) + "\n" + json.dumps({**second, "id": "mem-0001"}) + "\n", "utf-8"
    )
    broken(registry, 2, "mem-0001", "line 1")
    registry.path.write_text(
        json.dumps(first) + "\n" + json.dumps({**first, "id": "mem-0002"}) + "\n", "utf-8"
    )
    broken(registry, 2, SESSION, "seq 1")


# ---------------------------------------------------------------------- concurrency

_ADDER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from thoth.memory import MemoryDraft, Registry

    path, name, go = sys.argv[1:4]
    registry = Registry(Path(path))
    Path(go + "." + name).touch()
    while not Path(go).exists():
        time.sleep(0.001)
    created = []
    for i in range(50):
        # Even operations promote this process's own decisions; odd ones promote the same
        # shared decisions the other process promotes, to race on idempotency.
        if i % 2 == 0:
            session, seq = f"s-20240501-000000-00000{'1' if name == 'a' else '2'}", i + 1
        else:
            session, seq = "s-20240501-000000-shared", i
        record, was_created = registry.add(
            MemoryDraft(
                session_id=session,
                decision_seq=seq,
                type="concept_clarified",
                subject=f"concept {session} {seq}",
                detail="d",
                rationale="r",
                question_context="q",
                concepts=(),
            )
        )
        created.append([record.id, session, seq, was_created])
    print(json.dumps(created))
    """
)


def test_two_processes_adding_neither_duplicate_nor_lose_records(
    registry: Registry, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _ADDER, str(registry.path), name, str(go)],
            stdout=subprocess.PIPE,
        )
        for name in ("a", "b")
    ]
    deadline = time.monotonic() + 60
    while not all(Path(f"{go}.{n}").exists() for n in "ab"):
        assert all(p.poll() is None for p in procs), "a worker exited before the start"
        assert time.monotonic() < deadline, "workers did not get ready within 60 s"
        time.sleep(0.01)
    go.touch()
    reports = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        reports.append(json.loads(out))

    records = registry.all()
    # 25 own decisions per process + 25 shared ones promoted by both = 75 distinct decisions.
    assert len(records) == 75
    assert sorted(r.id for r in records) == sorted(f"mem-{n:04d}" for n in range(1, 76))
    assert len({(r.session_id, r.decision_seq) for r in records}) == 75
    # Every shared decision was created by exactly one process; the other got the same record.
    by_decision: dict[tuple[str, int], list[tuple[str, bool]]] = {}
    for report in reports:
        for mem_id, session, seq, was_created in report:
            by_decision.setdefault((session, seq), []).append((mem_id, was_created))
    for key, seen in by_decision.items():
        assert len({mem_id for mem_id, _ in seen}) == 1, key
        assert sum(was_created for _, was_created in seen) == 1, key
        assert registry.find(*key) is not None
