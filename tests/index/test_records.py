"""The record schema: one typed payload per kind, stable point ids, derived payload indexes."""

from __future__ import annotations

import uuid

import pytest

from thoth.index.records import (
    RECORD_DOCUMENT,
    RECORD_EVIDENCE,
    RECORD_MEMORY,
    RECORD_WIKI,
    DamagedRecord,
    FragmentPayload,
    MemoryPayload,
    parse_payload,
    payload_indexes,
    point_id,
)


def test_point_ids_are_the_ones_already_stored() -> None:
    """Generations and memory shards written before this module keep their ids."""
    evidence = uuid.UUID("6f1c2a8e-54a7-4b8e-9a55-7d2f0c8b1e33")
    documents = uuid.UUID("3b0f9a52-2c7e-4d4e-8f0e-5a9d1c7b6e21")
    memory = uuid.UUID("3b9d7c52-8e0a-4f61-a2d4-5c7e9f1b0a86")
    assert point_id(RECORD_EVIDENCE, "def:x", 2) == str(uuid.uuid5(evidence, "def:x#2"))
    assert point_id(RECORD_DOCUMENT, "src:a.md", 0) == str(uuid.uuid5(documents, "src:a.md#0"))
    assert point_id(RECORD_WIKI, "w:p.md", 1) == str(uuid.uuid5(documents, "w:p.md#1"))
    assert point_id(RECORD_MEMORY, "memory:mem-0001") == str(uuid.uuid5(memory, "memory:mem-0001"))
    with pytest.raises(ValueError, match="solved_question"):
        point_id("solved_question", "q1")
    # The schema kinds have namespaces of their own: a table and a column never share an id.
    assert point_id("schema_table", "public.t") != point_id("schema_column", "public.t")


def _fragment(**changes: object) -> dict[str, object]:
    payload: dict[str, object] = {
        "workspace_id": "ws",
        "vector_generation": "g1",
        "record_kind": "document",
        "doc_id": "docs:a.md",
        "source": "docs",
        "path": "a.md",
        "ordinal": 0,
        "text": "testo",
        "labels": ["public"],
        "pipeline_version": 1,
    }
    payload.update(changes)
    return payload


def test_payloads_parse_into_the_model_of_their_kind() -> None:
    record = parse_payload(_fragment())
    assert isinstance(record, FragmentPayload) and record.labels == ("public",)
    assert isinstance(parse_payload(_fragment(record_kind="wiki")), FragmentPayload)
    memory = MemoryPayload(
        ref="memory:mem-0001",
        memory_id="mem-0001",
        type="definition",
        subject="s",
        detail="d",
        content_sha256="0" * 64,
        session_id="s-1",
        decision_seq=3,
    )
    assert parse_payload(memory.to_payload()) == memory
    assert parse_payload(record.to_payload()) == record, "round trip"


def test_a_damaged_payload_names_the_point_and_the_field() -> None:
    with pytest.raises(DamagedRecord, match=r"point p-1: payload field document\.text"):
        parse_payload(_fragment(text=None), "p-1")
    with pytest.raises(DamagedRecord, match="p-2"):
        parse_payload(_fragment(record_kind="secret"), "p-2")
    with pytest.raises(DamagedRecord, match="surprise"):
        parse_payload(_fragment(surprise=1), "p-3")  # unknown keys are not guessed at


def test_payload_indexes_are_derived_from_the_models() -> None:
    every = payload_indexes()
    assert every[0] == "record_kind"
    # What the builders indexed by hand before: nothing is lost.
    before = (
        "workspace_id", "workspace_revision", "vector_generation", "record_kind", "evidence_id",
        "evidence_kind", "purposes", "concepts", "tables", "columns", "language", "channel",
        "labels", "source", "year", "doc_format", "doc_id",
    )  # fmt: skip
    assert set(before) <= set(every)
    assert "memory_id" in payload_indexes(RECORD_MEMORY)
    assert "memory_id" not in payload_indexes(RECORD_EVIDENCE, RECORD_DOCUMENT)
    assert "text" not in every and "caveats" not in every, "read, never filtered on"
    assert set(payload_indexes(RECORD_EVIDENCE)) >= {"evidence_id", "purposes", "labels"}
