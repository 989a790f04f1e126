"""Level 1 documents: extraction of source files into ordered blocks, and chunking.

`extract(path)` turns one file into a `Document`; `chunk(document, strategy)` turns a document
into `Chunk`s ready for the index. Both raise a `ThothError` naming the file (and page or sheet)
instead of returning an empty result.
"""

from __future__ import annotations

from thoth.documents.chunk import (
    Chunk,
    ChunkingError,
    ChunkLimits,
    ChunkStats,
    QaMarkers,
    Strategy,
    chunk,
    chunk_blocks,
    chunk_qa,
    chunk_spreadsheet,
    chunk_stats,
)
from thoth.documents.extract import (
    SUPPORTED_SUFFIXES,
    Block,
    BlockKind,
    Document,
    DocumentFormat,
    ExtractionError,
    extract,
)

__all__ = [
    "SUPPORTED_SUFFIXES",
    "Block",
    "BlockKind",
    "Chunk",
    "ChunkLimits",
    "ChunkStats",
    "ChunkingError",
    "Document",
    "DocumentFormat",
    "ExtractionError",
    "QaMarkers",
    "Strategy",
    "chunk",
    "chunk_blocks",
    "chunk_qa",
    "chunk_spreadsheet",
    "chunk_stats",
    "extract",
]
