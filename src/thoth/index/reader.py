"""The one place that decides what a request may read, and opens it.

`GenerationReader` resolves the generation a search may read — the active one, checked against
the workspace's activated revision and, for Evidence, against a gated Evidence publication; or
an explicit candidate under evaluation — and owns what every reader needs next: the index
handles (one per sealed generation, reopened after a fault), the BM25 encoder the generation was
built with, and the embedder check. Anything that stops a read is an `Unreadable` with a stable
code; `guard()` turns the index's own faults into one. Search services catch that one exception
and report `unavailable`: no fault ever becomes an empty result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from thoth.embed.base import Embedder, EmbedderError, Vectors
from thoth.errors import ThothError
from thoth.index.base import Exclude, IndexCorrupt, IndexStore, IndexUnavailable, SparseVec
from thoth.index.bm25 import Bm25Encoder
from thoth.index.generations import IndexBackend
from thoth.index.records import DamagedRecord
from thoth.index.shard import SHARD_FILES

# Stable codes of `unavailable`. Callers branch on these; the message is for people.
INDEX_UNAVAILABLE = "index_unavailable"
GENERATION_NOT_ACTIVE = "generation_not_active"
REVISION_NOT_ACTIVATED = "revision_not_activated"
REVISION_MISMATCH = "revision_mismatch"
REVISION_UNREADABLE = "revision_unreadable"
EVIDENCE_NOT_PUBLISHED = "evidence_not_published"
LABELS_UNKNOWN = "labels_unknown"
INDEX_CORRUPT = "index_corrupt"
EMBEDDER_FAILED = "embedder_failed"
EMBEDDER_MISMATCH = "embedder_mismatch"
STATE_UNAVAILABLE = "state_unavailable"
SCHEMA_NOT_SYNCED = "schema_not_synced"  # the active generation holds no schema records

# The key of a generation's config that an Evidence publication writes, and docs sync carries
# forward: without it the generation holds no gated Evidence.
EVIDENCE_CONFIG = "evidence"


class Unreadable(ThothError):
    """Nothing may be read: `code` says why (one of the codes above)."""

    def __init__(self, code: str, message: str, generation: str | None = None) -> None:
        super().__init__(message, code=code)
        self.generation = generation  # the generation concerned, when one was resolved


class GenerationLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def workspace(self) -> str: ...
    @property
    def revision(self) -> str: ...
    @property
    def config(self) -> dict[str, Any]: ...
    @property
    def counts(self) -> dict[str, Any]: ...


class StateView(Protocol):
    """The questions a reader asks the state store."""

    def active_revision(self, workspace: str) -> str | None: ...

    def active_generation(self, workspace: str) -> Any: ...

    def get_generation(self, gen_id: str) -> Any: ...


def check_sealed_counts(gen: GenerationLike, store: IndexStore) -> None:
    """The generation must hold exactly the points its builder sealed, per record kind
    (`counts["points"]`). A damaged shard can open "fine" and answer with nothing, so a
    mismatch is INDEX_CORRUPT, never an empty result. Generations sealed before the builder
    recorded the counts cannot be checked and are read as they are."""
    sealed = (gen.counts or {}).get("points")
    if not isinstance(sealed, dict):
        return
    found = {str(kind): store.count({"record_kind": str(kind)}) for kind in sealed}
    total = store.count()
    expected_total = sum(int(n) for n in sealed.values())
    if found != {str(k): int(n) for k, n in sealed.items()} or total != expected_total:
        raise Unreadable(
            INDEX_CORRUPT,
            f"generation {gen.id} holds {total} points {found}, its builder sealed "
            f"{expected_total} {dict(sealed)}: the index data is damaged -> {_REPAIR}",
            gen.id,
        )


_REPAIR = (
    "roll back to a retained generation (`tht index check` lists them, `tht evidence activate "
    "--generation ...`) or rebuild (`tht docs sync --full`, `tht workspace preprocess evidence`)"
)


def open_generation(backend: IndexBackend, gen: GenerationLike) -> IndexStore:
    """The one way to open a sealed generation, for readers and builders alike: without
    writing into it, its files checked against the fingerprint its builder sealed, its points
    per kind against the sealed counts. A mismatch is Unreadable(INDEX_CORRUPT); a missing or
    unreadable index is IndexUnavailable."""
    try:
        store = backend.open(gen.id, gen.counts or {})
    except IndexCorrupt as exc:
        raise Unreadable(INDEX_CORRUPT, str(exc), gen.id) from exc
    try:
        check_sealed_counts(gen, store)
    except BaseException:
        store.close()
        raise
    return store


def evidence_published(gen: GenerationLike) -> bool:
    """Whether `gen` holds Evidence published (validated, evaluated) for its revision. A
    generation built before the marker existed is recognised by the Evidence settings only a
    publication wrote (`max_chunk_chars`), which docs sync carried forward too."""
    config = gen.config or {}
    return EVIDENCE_CONFIG in config or "max_chunk_chars" in config


@dataclass(frozen=True)
class QueryVectors:
    sparse: SparseVec
    dense: list[float] | None  # None: the embedder failed (see `embedder_error`)
    raw: Vectors | None  # the embedder's reply, for callers that reuse it (routing)
    embedder_error: str | None = None


@dataclass(frozen=True)
class Bm25Branch:
    """BM25 in one language: the question encoded by `encoder`, searched under the request's
    condition plus `where`, which keeps the fragments encoded in that language."""

    language: str  # Qdrant's name ("english")
    encoder: Bm25Encoder
    where: Mapping[str, Any]


@dataclass(frozen=True)
class Readable:
    """A generation a request may read now, with its open index handle."""

    generation: Any
    store: IndexStore
    encoder: Bm25Encoder  # the generation's own language: Evidence, schema, older fragments
    # One per BM25 language of the generation, the generation's own first. A generation in
    # one language has one branch with no extra condition (the whole sparse index).
    branches: tuple[Bm25Branch, ...] = ()

    @property
    def id(self) -> str:
        return str(self.generation.id)

    @property
    def revision(self) -> str:
        return str(self.generation.revision)

    def labels(self) -> list[str]:
        """Every label present in the generation, as its builder recorded them. A generation
        built before the label set was recorded is LABELS_UNKNOWN: a label removed from the
        vocabulary since then could not be excluded, so nothing is served from it."""
        labels = (self.generation.counts or {}).get("labels")
        if not isinstance(labels, list):
            raise Unreadable(
                LABELS_UNKNOWN,
                f"generation {self.id} does not record the labels it holds (built by an older "
                "Thoth): a label no longer declared could not be excluded -> run `tht docs sync` "
                "(it records the label set without embedding anything again)",
                self.id,
            )
        return [str(label) for label in labels]


class GenerationReader:
    def __init__(
        self,
        workspace: str,
        state: StateView,
        backend: IndexBackend,
        embedder: Embedder,
        default_language: str = "italian",
    ) -> None:
        self.workspace = workspace
        self._state = state
        self._backend = backend
        self._embedder = embedder
        self._default_language = default_language
        self._stores: dict[str, IndexStore] = {}
        self._encoders: dict[tuple[str, float], Bm25Encoder] = {}

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    # -- what may be read ----------------------------------------------------------------

    def evidence(self, explicit: str | None = None) -> Readable:
        """The generation Evidence search reads. `explicit` (a candidate under evaluation) is
        read as it is and is never visible otherwise; without it, the active generation, which
        must be of the activated revision and hold a gated Evidence publication."""
        if explicit is not None:
            gen = self._ask("generation", lambda: self._state.get_generation(explicit))
            if gen is None or gen.workspace != self.workspace:
                raise Unreadable(
                    GENERATION_NOT_ACTIVE,
                    f"generation {explicit} does not exist in workspace {self.workspace}",
                )
            return self._open(gen)
        revision = self._ask("revision", lambda: self._state.active_revision(self.workspace))
        if revision is None:
            raise Unreadable(
                REVISION_NOT_ACTIVATED,
                f"workspace {self.workspace} has no activated revision -> run "
                "`tht workspace activate`",
            )
        gen = self._active(
            "no active Evidence generation -> run `tht workspace preprocess evidence`"
        )
        if gen.revision != revision:
            raise Unreadable(
                REVISION_MISMATCH,
                f"the active generation {gen.id} was built from revision {gen.revision[:12]} "
                f"but revision {revision[:12]} is activated; search stays unavailable until "
                "a generation for it is published (or the previous revision is reactivated)",
            )
        if not evidence_published(gen):
            raise Unreadable(
                EVIDENCE_NOT_PUBLISHED,
                f"the active generation {gen.id} holds documents but no Evidence published for "
                f"revision {revision[:12]} -> run `tht workspace preprocess evidence`",
            )
        return self._open(gen)

    def active(self) -> Readable:
        """The active generation, whatever it holds (the answer engine filters by kind)."""
        return self._open(
            self._active(
                "no active index generation -> run `tht docs sync` or "
                "`tht workspace preprocess evidence`"
            )
        )

    # -- reading it ------------------------------------------------------------------------

    def vectors(self, readable: Readable, text: str, *, degrade: bool) -> QueryVectors:
        """Both query vectors of `text`. An embedder failure is EMBEDDER_FAILED, or with
        `degrade` a dense vector of None and the error, for callers that may go on with BM25
        alone and say so. A vector of the wrong shape is always EMBEDDER_MISMATCH."""
        sparse = readable.encoder.query(text)
        try:
            raw = self._embedder.embed_query(text)
        except EmbedderError as exc:
            if not degrade:
                raise Unreadable(EMBEDDER_FAILED, f"{self._embedder.identity}: {exc}") from exc
            return QueryVectors(sparse=sparse, dense=None, raw=None, embedder_error=str(exc))
        dim = (readable.generation.config or {}).get("dim", self._embedder.dim)
        if raw.shape != (1, dim):
            raise Unreadable(
                EMBEDDER_MISMATCH,
                f"{self._embedder.identity} returned shape {raw.shape}, generation "
                f"{readable.id} expects dimension {dim}",
            )
        return QueryVectors(sparse=sparse, dense=[float(x) for x in raw[0]], raw=raw)

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Index faults inside become INDEX_UNAVAILABLE; the handles are dropped so the next
        read reopens (and reports again if the index is still broken)."""
        try:
            yield
        except (IndexUnavailable, DamagedRecord) as exc:
            self.drop_handles()
            code = INDEX_CORRUPT if isinstance(exc, IndexCorrupt) else INDEX_UNAVAILABLE
            raise Unreadable(code, str(exc)) from exc

    def drop_handles(self, keep: Sequence[str] = ()) -> None:
        for gen_id in list(self._stores):
            if gen_id not in keep:
                self._stores.pop(gen_id).close()

    def close(self) -> None:
        self.drop_handles()

    # -- steps -------------------------------------------------------------------------------

    def _ask(self, what: str, question: Any) -> Any:
        try:
            return question()
        except ThothError as exc:
            raise Unreadable(STATE_UNAVAILABLE, f"state store ({what}): {exc}") from exc

    def _active(self, missing: str) -> Any:
        gen = self._ask("active generation", lambda: self._state.active_generation(self.workspace))
        if gen is None:
            raise Unreadable(GENERATION_NOT_ACTIVE, f"workspace {self.workspace} has {missing}")
        return gen

    def _open(self, gen: Any) -> Readable:
        expected = (gen.config or {}).get("embedder")
        if expected and expected != self._embedder.identity:
            raise Unreadable(
                EMBEDDER_MISMATCH,
                f"generation {gen.id} was embedded with {expected}, this process uses "
                f"{self._embedder.identity} -> configure the same [embedding] or rebuild",
            )
        if gen.id not in self._stores:
            # Sealed generations are immutable: a handle, checked once when opened, stays
            # valid while its generation is read. Another generation is read now: the old
            # handles are released (a rollback reopens them).
            self.drop_handles()
            try:
                with self.guard():
                    self._stores[gen.id] = open_generation(self._backend, gen)
            except Unreadable as exc:
                exc.generation = gen.id
                raise
        encoder = self._encoder(gen)
        return Readable(
            generation=gen,
            store=self._stores[gen.id],
            encoder=encoder,
            branches=self._branches(gen, encoder),
        )

    def _encoder(self, gen: Any) -> Bm25Encoder:
        bm25 = (gen.config or {}).get("bm25") or {}
        return self._cached(
            str(bm25.get("language", self._default_language)), float(bm25.get("avg_len", 1.0))
        )

    def _cached(self, language: str, avg_len: float) -> Bm25Encoder:
        key = (language, avg_len)
        if key not in self._encoders:
            self._encoders[key] = Bm25Encoder(*key)
        return self._encoders[key]

    def _branches(self, gen: Any, own: Bm25Encoder) -> tuple[Bm25Branch, ...]:
        """The BM25 languages docs sync recorded (`config["docs"]["bm25_languages"]`). Design:
        one sparse field and a payload filter per language, not a sparse vector per language —
        no shard schema change, and older generations read as they are. The generation's own
        language keeps every record not encoded in another (Evidence, schema, fragments written
        before sources had a language); each other language keeps its own fragments."""
        recorded = ((gen.config or {}).get("docs") or {}).get("bm25_languages") or {}
        others = sorted(set(recorded) - {own.language})
        if not others:
            return (Bm25Branch(own.language, own, {}),)
        return (
            Bm25Branch(own.language, own, {"bm25_language": Exclude(tuple(others))}),
            *(
                Bm25Branch(
                    name,
                    self._cached(name, float((recorded[name] or {}).get("avg_len", 1.0))),
                    {"bm25_language": name},
                )
                for name in others
            ),
        )


@dataclass(frozen=True)
class GenerationCheck:
    """What `check_generations` found for one generation with sealed data."""

    generation: str
    status: str
    ok: bool
    code: str | None = None  # INDEX_CORRUPT or INDEX_UNAVAILABLE when not ok
    message: str = ""
    checked_files: bool = False  # whether a shard fingerprint was recorded to check against


def check_generations(
    generations: Sequence[GenerationLike], backend: IndexBackend
) -> list[GenerationCheck]:
    """Re-validate every generation of `generations` that has sealed data, as a reader would
    open it: shard files against the sealed fingerprint, points per kind against the sealed
    counts. Nothing is written; a damaged generation is reported, never repaired."""
    sealed = set(backend.sealed())
    checks: list[GenerationCheck] = []
    for gen in generations:
        if gen.id not in sealed:
            continue
        status = str(getattr(gen, "status", ""))
        fingerprinted = SHARD_FILES in (gen.counts or {})
        try:
            open_generation(backend, gen).close()
        except Unreadable as exc:
            checks.append(GenerationCheck(gen.id, status, False, exc.code, str(exc), fingerprinted))
            continue
        except IndexUnavailable as exc:
            checks.append(
                GenerationCheck(gen.id, status, False, INDEX_UNAVAILABLE, str(exc), fingerprinted)
            )
            continue
        checks.append(GenerationCheck(gen.id, status, True, checked_files=fingerprinted))
    return checks
