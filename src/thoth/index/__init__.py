"""The index layer: one IndexStore protocol, Qdrant Edge and Qdrant server adapters,
immutable generations, the record schema (`records`), the one generation builder (`build`),
the one reader (`reader`) and the live memory collection (`live`)."""

from thoth.index.base import (
    BM25,
    Hit,
    IndexConfigError,
    IndexRecord,
    IndexStore,
    IndexUnavailable,
    Match,
    SparseVec,
    Where,
)
from thoth.index.generations import EdgeBackend, IndexBackend, ServerBackend
from thoth.index.reader import GenerationReader, Readable, Unreadable
from thoth.index.records import (
    DamagedRecord,
    EvidencePayload,
    FragmentPayload,
    MemoryPayload,
    RecordPayload,
    parse_payload,
    point_id,
)

__all__ = [
    "BM25",
    "DamagedRecord",
    "EdgeBackend",
    "EvidencePayload",
    "FragmentPayload",
    "GenerationReader",
    "Hit",
    "IndexBackend",
    "IndexConfigError",
    "IndexRecord",
    "IndexStore",
    "IndexUnavailable",
    "Match",
    "MemoryPayload",
    "Readable",
    "RecordPayload",
    "ServerBackend",
    "SparseVec",
    "Unreadable",
    "Where",
    "parse_payload",
    "point_id",
]
