"""The IndexStore interface: one collection (dense default vector + sparse `bm25` with IDF),
records of several kinds told apart by payload, hybrid search: each branch queried alone and
fused client-side (`thoth.index.fusion`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from thoth.errors import ThothError

BM25 = "bm25"  # the sparse vector's name, in every adapter
RRF_K = 60  # Qdrant's default; changed only with a measured gain (seed §9.5)


@dataclass(frozen=True)
class Match:
    """A condition on a list-valued field: it must hold at least one of `any_of` and none of
    `none_of`. Confidentiality labels use both: a record is served only if its labels are all
    in the caller's set — a record without labels matches nothing (fail closed)."""

    any_of: tuple[str, ...]
    none_of: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.any_of:
            raise ValueError("Match needs at least one value in any_of: an empty set is no filter")


@dataclass(frozen=True)
class Exclude:
    """A condition that only excludes: the field must hold none of `none_of` (a record
    without the field matches). The BM25 branch of the workspace language uses it to leave out
    the fragments encoded in another language while keeping every record that has none."""

    none_of: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.none_of:
            raise ValueError("Exclude needs at least one value: an empty set is no filter")


# field -> value (must equal), list of values (must match any), Match or Exclude; all
# conditions ANDed.
Where = Mapping[str, str | int | Sequence[str] | Match | Exclude]
# One engine-neutral condition: (field, value) where a str or int must be equal and a list
# must hold at least one of its values.
Condition = tuple[str, str | int | list[str]]


def where_conditions(where: Where) -> tuple[list[Condition], list[Condition]]:
    """What `where` asks, for every adapter: the conditions that must hold and those that must
    not (a Match's `none_of`), in `where`'s order; each adapter spells them in its engine."""
    must: list[Condition] = []
    must_not: list[Condition] = []
    for key, value in where.items():
        if isinstance(value, str | int):
            must.append((key, value))
        elif isinstance(value, Match):
            must.append((key, list(value.any_of)))
            if value.none_of:
                must_not.append((key, list(value.none_of)))
        elif isinstance(value, Exclude):
            must_not.append((key, list(value.none_of)))
        else:
            must.append((key, list(value)))
    return must, must_not


@dataclass(frozen=True)
class SparseVec:
    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class IndexRecord:
    id: str  # a UUID string
    dense: list[float]
    sparse: SparseVec | None
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    payload: dict[str, Any]


FusionMethod = Literal["rrf", "dbsf"]
FUSION_METHODS: tuple[FusionMethod, ...] = ("rrf", "dbsf")


@dataclass(frozen=True)
class Fusion:
    """How branch lists are fused.

    - `rrf`: reciprocal rank fusion, sum over branches of weight / (k + rank).
    - `dbsf`: distribution-based score fusion (as Qdrant's): each branch's scores mapped to
      [0, 1] by mean ± 3 standard deviations of that list, then the weighted sum.

    `weights` holds one weight per branch in the order the branches are given (dense first,
    then the sparse branches); empty means 1.0 each.
    """

    method: FusionMethod = "rrf"
    k: int = RRF_K
    weights: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.method not in FUSION_METHODS:
            raise ValueError(
                f"unknown fusion method {self.method!r}; "
                f"expected one of {', '.join(FUSION_METHODS)}"
            )
        if self.k < 1:
            raise ValueError(f"fusion k must be >= 1, got {self.k}")
        if any(not math.isfinite(w) or w < 0 for w in self.weights):
            raise ValueError(f"fusion weights must be finite and >= 0, got {list(self.weights)}")

    def weights_for(self, branches: int) -> tuple[float, ...]:
        if not self.weights:
            return (1.0,) * branches
        if len(self.weights) != branches:
            raise ValueError(
                f"{len(self.weights)} fusion weights for {branches} branches: give one weight "
                "per branch (dense first, then each sparse branch) or none"
            )
        return self.weights


def record_from_point(point_id: object, vector: Any, payload: Any) -> IndexRecord:
    """An IndexRecord from what either client returns: a bare list when the collection has only
    the default vector, else a mapping of vector name -> dense list or sparse vector."""
    vectors: Any = vector or {}
    if isinstance(vectors, list):
        vectors = {"": vectors}
    sparse = vectors.get(BM25)
    return IndexRecord(
        id=str(point_id),
        dense=[float(x) for x in vectors.get("", [])],
        sparse=SparseVec(list(sparse.indices), [float(v) for v in sparse.values])
        if sparse is not None
        else None,
        payload=dict(payload or {}),
    )


def hits_from_points(points: Iterable[Any]) -> list[Hit]:
    """Hits from the scored points either client returns (id, score, payload)."""
    return [Hit(id=str(p.id), score=float(p.score), payload=dict(p.payload or {})) for p in points]


def deterministic_top(hits: list[Hit], limit: int) -> list[Hit]:
    """RRF gives equal scores to mirror-image ranks (1st + 2nd vs 2nd + 1st), and the engine
    breaks those ties differently from run to run. Callers get every fused candidate sorted by
    (score desc, id) and then the top `limit`: the same query always ranks the same way."""
    return sorted(hits, key=lambda h: (-h.score, h.id))[:limit]


class IndexUnavailable(ThothError):
    """The index cannot answer: missing, corrupt, locked or failing. Never an empty result."""


class IndexCorrupt(IndexUnavailable):
    """A sealed generation's files are not the files its builder sealed (missing, added,
    truncated or altered): nothing of it is read."""


class IndexConfigError(ThothError):
    """The collection exists with an incompatible configuration; nothing was changed."""


class IndexStore(Protocol):
    dim: int

    def create_payload_indexes(self, fields: Sequence[str]) -> None: ...

    def upsert(self, records: Sequence[IndexRecord]) -> None: ...

    def query_hybrid(
        self,
        dense: Sequence[float],
        sparse: SparseVec,
        where: Where,
        limit: int,
        prefetch_limit: int,
        fusion: Fusion | None = None,
    ) -> list[Hit]:
        """The dense and bm25 branches (`prefetch_limit` each) under the same filter, fused by
        `thoth.index.fusion.fuse` (`fusion`, default `Fusion()`): the top `limit`."""
        ...

    def query_dense(self, dense: Sequence[float], where: Where, limit: int) -> list[Hit]: ...

    def query_sparse(self, sparse: SparseVec, where: Where, limit: int) -> list[Hit]: ...

    def count(self, where: Where | None = None) -> int: ...

    def scroll(self, where: Where | None = None) -> Iterator[IndexRecord]:
        """Every matching record with its vectors, in id order."""
        ...

    def flush(self) -> None: ...

    def close(self) -> None: ...
