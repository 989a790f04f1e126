"""Fusion of ranked branch lists (dense, one or more BM25 branches) into one ranking.

One pure function for every adapter: Qdrant Edge and the Qdrant server query each branch on
its own and fuse here, so both give the same ranks, with the same weights, and ties broken by
id (the engines break RRF ties differently from run to run).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence

from thoth.config import IndexSettings
from thoth.index.base import Fusion, Hit, SparseVec, Where, deterministic_top


def _dbsf(hits: Sequence[Hit]) -> list[float]:
    """Scores mapped to [0, 1] by mean ± 3 sigma of this list (Qdrant's DBSF); a list whose
    scores are all equal (one hit, or ties only) gets 0.5 each: nothing tells them apart."""
    scores = [h.score for h in hits]
    mean = sum(scores) / len(scores)
    sigma = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    if sigma == 0.0:
        return [0.5] * len(scores)
    low, span = mean - 3 * sigma, 6 * sigma
    return [min(1.0, max(0.0, (s - low) / span)) for s in scores]


def fuse(branches: Sequence[Sequence[Hit]], limit: int, fusion: Fusion | None = None) -> list[Hit]:
    """The top `limit` of the fused branches, sorted by (fused score desc, id).

    Each branch is first ordered by (score desc, id), so equal branch scores rank the same way
    every time. `fusion=None` means the `[index]` defaults (dense first, then BM25 branches).
    A hit keeps the payload of the first branch that returned it; its score is the
    fused score. An empty branch contributes nothing.
    """
    # No fusion given: the `[index]` defaults, so callers without settings rank as the rest.
    fusion = fusion or fusion_from(IndexSettings(), max(0, len(branches) - 1))
    weights = fusion.weights_for(len(branches))
    fused: dict[str, float] = {}
    payloads: dict[str, Hit] = {}
    for weight, branch in zip(weights, branches, strict=True):
        ordered = deterministic_top(list(branch), len(branch))
        if not ordered:
            continue
        if fusion.method == "rrf":
            parts = [1.0 / (fusion.k + rank) for rank in range(1, len(ordered) + 1)]
        else:
            parts = _dbsf(ordered)
        for hit, part in zip(ordered, parts, strict=True):
            if hit.id in fused:
                fused[hit.id] += weight * part
            else:
                fused[hit.id] = weight * part
                payloads[hit.id] = hit
    return deterministic_top(
        [Hit(id=i, score=s, payload=payloads[i].payload) for i, s in fused.items()], limit
    )


def fusion_from(settings: IndexSettings, sparse_branches: int = 1) -> Fusion:
    """The configured fusion for a dense branch followed by `sparse_branches` BM25 branches."""
    return Fusion(
        settings.fusion,
        settings.fusion_k,
        (settings.dense_weight, *(settings.bm25_weight,) * sparse_branches),
    )


class FusedBranches(ABC):
    """`query_hybrid` for every adapter: each branch queried alone under the same filter and
    fused by `fuse` — the engines' RRF takes no per-branch weights everywhere and breaks ties
    at random. An adapter inherits it and defines the two branches."""

    @abstractmethod
    def query_dense(self, dense: Sequence[float], where: Where, limit: int) -> list[Hit]: ...

    @abstractmethod
    def query_sparse(self, sparse: SparseVec, where: Where, limit: int) -> list[Hit]: ...

    def query_hybrid(
        self,
        dense: Sequence[float],
        sparse: SparseVec,
        where: Where,
        limit: int,
        prefetch_limit: int,
        fusion: Fusion | None = None,
    ) -> list[Hit]:
        return fuse(
            [
                self.query_dense(dense, where, prefetch_limit),
                self.query_sparse(sparse, where, prefetch_limit) if sparse.indices else [],
            ],
            limit,
            fusion,
        )
