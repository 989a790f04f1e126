"""The index layer: one IndexStore protocol, Qdrant Edge and Qdrant server adapters,
immutable generations."""

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

__all__ = [
    "BM25",
    "EdgeBackend",
    "Hit",
    "IndexBackend",
    "IndexConfigError",
    "IndexRecord",
    "IndexStore",
    "IndexUnavailable",
    "Match",
    "ServerBackend",
    "SparseVec",
    "Where",
]
