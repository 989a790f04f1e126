"""The record schema: what every point of a generation (or of the memory collection) carries.

One collection holds records of several kinds told apart by `record_kind`. Each kind has one
typed payload model here; writers build the model and store `model.to_payload()`, readers get
the model back from `parse_payload` (a damaged payload is an `IndexUnavailable`, never a
half-read dict). Point ids come from `point_id`, and the payload indexes every generation
creates are derived from the models' fields marked `indexed`: a new filter field is one line
in one model.

Adding a kind: a model with a `record_kind` literal, an entry in `RecordPayload`, a point-id
namespace in `_NAMESPACES` (the schema kinds were added so).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from thoth.errors import ThothError

RECORD_EVIDENCE: Final = "evidence"  # a published Evidence Unit fragment
RECORD_DOCUMENT: Final = "document"  # a raw chunk of a declared document source (verbatim)
RECORD_WIKI: Final = "wiki"  # a fragment of a curated wiki page
RECORD_MEMORY: Final = "memory"  # a memory promoted from a session
RECORD_SCHEMA_TABLE: Final = "schema_table"  # a table or view of the session database
RECORD_SCHEMA_COLUMN: Final = "schema_column"  # a column of one

DOCUMENT_KINDS: Final = (RECORD_DOCUMENT, RECORD_WIKI)  # built by `tht docs sync`
ANSWER_KINDS: Final = (RECORD_DOCUMENT, RECORD_WIKI, RECORD_EVIDENCE)  # read by `tht ask`
CURATED_KINDS: Final = (RECORD_WIKI, RECORD_EVIDENCE)  # weighted up by the answer engine
SCHEMA_KINDS: Final = (RECORD_SCHEMA_TABLE, RECORD_SCHEMA_COLUMN)  # built by `tht schema sync`

# Point-id namespaces, one per kind. They predate this module (ids already stored in
# generations and memory shards must stay the same), hence one uuid per kind, not one in all.
_NAMESPACES: Final[dict[str, uuid.UUID]] = {
    RECORD_EVIDENCE: uuid.UUID("6f1c2a8e-54a7-4b8e-9a55-7d2f0c8b1e33"),
    RECORD_DOCUMENT: uuid.UUID("3b0f9a52-2c7e-4d4e-8f0e-5a9d1c7b6e21"),
    RECORD_WIKI: uuid.UUID("3b0f9a52-2c7e-4d4e-8f0e-5a9d1c7b6e21"),  # doc ids never collide
    RECORD_MEMORY: uuid.UUID("3b9d7c52-8e0a-4f61-a2d4-5c7e9f1b0a86"),
    RECORD_SCHEMA_TABLE: uuid.UUID("9d4e2b71-0c3a-4f8e-b6d5-2a7c1e9f4b08"),
    RECORD_SCHEMA_COLUMN: uuid.UUID("5a8f3c26-7e1d-4b9a-8c04-6f2e9d1b3a75"),
}


def point_id(kind: str, key: str, ordinal: int | None = None) -> str:
    """The stable point id of a record: `key` is the evidence id, doc id or memory reference,
    `ordinal` the fragment's number within it (None for one-point records)."""
    try:
        namespace = _NAMESPACES[kind]
    except KeyError:
        raise ValueError(f"no point-id namespace for record kind {kind!r}") from None
    name = key if ordinal is None else f"{key}#{ordinal}"
    return str(uuid.uuid5(namespace, name))


def _indexed() -> Any:
    """Marks a field the index keeps a payload index on (filters run on these)."""
    return {"indexed": True}


class _Payload(BaseModel):
    # Stored payloads are written by these models only: an unknown key is damage or a newer
    # Thoth, and either way the reader must not guess.
    model_config = ConfigDict(extra="forbid", frozen=True)

    def to_payload(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class _Served(_Payload):
    """Fields every record the answer engine may serve carries."""

    workspace_id: str = Field(json_schema_extra=_indexed())
    vector_generation: str = Field(json_schema_extra=_indexed())
    title: str = ""
    text: str  # the embedded text (BM25 and dense): never the caveats
    caveats: tuple[str, ...] = ()  # read by the model next to `text`, never embedded
    channel: str = Field(default="", json_schema_extra=_indexed())
    # Empty: never served (labels fail closed).
    labels: tuple[str, ...] = Field(default=(), json_schema_extra=_indexed())
    doc_id: str = Field(json_schema_extra=_indexed())


class EvidencePayload(_Served):
    """One fragment of a published Evidence Unit (seed §9.6). The unit itself is resolved from
    Git at `workspace_revision`, never copied."""

    record_kind: Literal["evidence"] = "evidence"
    workspace_revision: str = Field(json_schema_extra=_indexed())
    evidence_id: str = Field(json_schema_extra=_indexed())
    evidence_kind: str = Field(json_schema_extra=_indexed())
    purposes: tuple[str, ...] = Field(json_schema_extra=_indexed())
    concepts: tuple[str, ...] = Field(default=(), json_schema_extra=_indexed())
    tables: tuple[str, ...] = Field(default=(), json_schema_extra=_indexed())
    columns: tuple[str, ...] = Field(default=(), json_schema_extra=_indexed())
    language: str = Field(json_schema_extra=_indexed())
    source_file: str
    source_sha256: str
    fragment_ordinal: int
    fragment_section: str | None = None
    unit_path: str


class FragmentPayload(_Served):
    """One chunk of a raw document (level 1) or fragment of a curated wiki page (level 2)."""

    record_kind: Literal["document", "wiki"]
    source: str = Field(json_schema_extra=_indexed())
    path: str
    ordinal: int
    heading_path: tuple[str, ...] = ()
    chunk_kind: str = "text"  # text | table | qa
    doc_format: str = Field(default="md", json_schema_extra=_indexed())
    content_sha256: str = ""
    revision: str = ""  # Git commit of the source repository the file was read at
    refers_to: tuple[str, ...] = ()
    pipeline_version: int
    page: int | None = None
    year: int | None = Field(default=None, json_schema_extra=_indexed())
    # The entity the document belongs to (thoth.entities): a question naming an entity is
    # scoped to its documents. None: no entity list, or none found for the document.
    entity: str | None = Field(default=None, json_schema_extra=_indexed())
    # The quarters the document reports on ("2023-Q2": thoth.periods), read from its whole text
    # at sync: what a question's "Q2 2023" is checked against (a filing never writes "Q2").
    periods: tuple[str, ...] = ()
    # A FAQ table's row (strategy qa on a CSV or workbook): its id (`qa_id_column`) or its
    # number in the table; the answer's source names it (one source per row, issue 46).
    qa_row: str | None = None
    # Written by `tht docs sync`: the fingerprint of the source settings the fragment was
    # prepared with, and the BM25 language (Qdrant's name, "english") and average length its
    # sparse vector was encoded with. No language: the generation's own (`config["bm25"]`),
    # as written before sources had languages.
    source_config: str = ""
    bm25_avg_len: float | None = None
    bm25_language: str | None = Field(default=None, json_schema_extra=_indexed())


class MemoryPayload(_Payload):
    """A memory promoted from a session (the registry stays canonical)."""

    record_kind: Literal["memory"] = "memory"
    ref: str
    memory_id: str = Field(json_schema_extra=_indexed())
    type: str = Field(json_schema_extra=_indexed())
    subject: str
    detail: str
    rationale: str = ""
    tables: tuple[str, ...] = ()
    concepts: tuple[str, ...] = ()
    content_sha256: str = Field(json_schema_extra=_indexed())
    session_id: str = Field(json_schema_extra=_indexed())
    decision_seq: int


class _SchemaRecord(_Payload):
    """Fields of both schema kinds. No labels: schema records are never served by `tht ask`;
    only the session's schema linking reads them. No `vector_generation`: nothing filters
    them by generation, so a carried record never needs restamping."""

    workspace_id: str = Field(json_schema_extra=_indexed())
    table: str = Field(json_schema_extra=_indexed())  # schema.table, quoted as SQL writes it
    schema_name: str = Field(json_schema_extra=_indexed())
    text: str  # the embedded text (BM25 and dense)
    description: str = ""
    # Of the table's snapshot and reviewed description: a table whose hash is unchanged is
    # carried into the next generation, not embedded again.
    content_sha256: str
    bm25_avg_len: float


class SchemaTablePayload(_SchemaRecord):
    """A table or view of the session database."""

    record_kind: Literal["schema_table"] = "schema_table"
    name: str
    table_kind: Literal["table", "view"] = "table"
    columns: tuple[str, ...]  # column names, in the table's order
    primary_key: tuple[str, ...] = ()
    # Each foreign key as {"columns": [...], "ref_table": "schema.table", "ref_columns": [...]}.
    foreign_keys: tuple[dict[str, Any], ...] = ()


class SchemaColumnPayload(_SchemaRecord):
    """A column of a table or view of the session database."""

    record_kind: Literal["schema_column"] = "schema_column"
    column: str = Field(json_schema_extra=_indexed())  # schema.table.column
    name: str
    ordinal: int
    type: str
    nullable: bool = True
    primary_key: bool = False
    references: tuple[str, ...] = ()  # schema.table.column this column is a foreign key to
    # What the column holds, for privacy (config.ColumnKind); samples are never read for an
    # identity, free text or an unclassified column.
    privacy_kind: str
    values: str = ""  # the reviewed description of its values (codes and what they mean)
    samples: tuple[str, ...] = ()


AnswerPayload = EvidencePayload | FragmentPayload


def read_at(payload: AnswerPayload) -> str:
    """The Git revision an answer payload's text was read at: the source repository's commit
    for a document or wiki page, the workspace's for an Evidence Unit ("" when none)."""
    return payload.workspace_revision if isinstance(payload, EvidencePayload) else payload.revision


def position(payload: AnswerPayload) -> int:
    """Its place in its document or Evidence Unit: what a source's link highlights."""
    return payload.fragment_ordinal if isinstance(payload, EvidencePayload) else payload.ordinal


SchemaPayload = SchemaTablePayload | SchemaColumnPayload
RecordPayload = Annotated[
    EvidencePayload | FragmentPayload | MemoryPayload | SchemaTablePayload | SchemaColumnPayload,
    Field(discriminator="record_kind"),
]
_ADAPTER: Final[TypeAdapter[RecordPayload]] = TypeAdapter(RecordPayload)
_MODELS: Final = (
    EvidencePayload,
    FragmentPayload,
    MemoryPayload,
    SchemaTablePayload,
    SchemaColumnPayload,
)


def caveats_for(text: str, caveats: Sequence[str]) -> tuple[str, ...]:
    """The caveats a fragment must carry: all of its page's, minus those its text already holds
    (the fragment that contains the caveat section does not get it twice)."""
    flat = " ".join(text.split())
    return tuple(c for c in caveats if " ".join(c.split()) not in flat)


class DamagedRecord(ThothError):
    """A stored payload does not match its record kind's model."""

    code = "damaged_record"


def parse_payload(payload: Mapping[str, Any], point: str = "?") -> RecordPayload:
    """The typed payload of a stored point; DamagedRecord (naming the point and the field)
    when it does not match any kind."""
    try:
        return _ADAPTER.validate_python(dict(payload))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "record_kind"
        raise DamagedRecord(
            f"point {point}: payload field {where}: {first['msg']} "
            f"(record kind {payload.get('record_kind')!r}; {exc.error_count()} problem(s)) "
            "-> the index is damaged or was written by another Thoth version: rebuild it"
        ) from exc


def payload_indexes(*kinds: str) -> tuple[str, ...]:
    """The payload fields to index for records of `kinds` (all kinds when none given), in a
    stable order, `record_kind` first."""
    fields: dict[str, None] = {"record_kind": None}
    for model in _MODELS:
        kind = model.model_fields["record_kind"]
        allowed = getattr(kind.annotation, "__args__", ())
        if kinds and not set(allowed) & set(kinds):
            continue
        for name, info in model.model_fields.items():
            extra = info.json_schema_extra
            if isinstance(extra, dict) and extra.get("indexed"):
                fields[name] = None
    return tuple(fields)


# Fields the answer engine filters on: every request field is one of them.
FILTER_FIELDS: Final = (
    "record_kind",
    "channel",
    "labels",
    "source",
    "year",
    "doc_format",
    "doc_id",
    "entity",
)


# What every generation indexes: the fields of the kinds a generation holds (memories live in
# their own collection, with their own indexes).
GENERATION_INDEXES: Final = payload_indexes(*ANSWER_KINDS, *SCHEMA_KINDS)
