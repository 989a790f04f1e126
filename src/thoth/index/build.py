"""The one generation builder (seed §8, §13.2): every producer of index records — Evidence
publication, docs sync, the next record kinds — builds its generations here, the same way.

A build runs under the workspace's run lock (`RunLock`: a `sync_runs` row, whose partial unique
index refuses a second running build of the workspace on any host), and goes through the same
steps whatever the records:

    builder = GenerationBuilder(state, backend, workspace, embedder, progress)
    build = builder.begin(revision, config, source=active_id, payload_indexes=FIELDS)
    with build:                     # any error (Ctrl-C included) abandons the build
        build.carry(keep)           # records of the source generation the caller keeps
        build.write(records)        # the new records, in batches, "index" progress
        build.verify()              # per-kind counts written == readable, total == scrolled
        build.seal()                # readable from now on, never written again
        build.mark_candidate(counts)
        if build.gate(check):       # optional: a check of the sealed candidate
            build.activate()        # compare-and-swap on the source generation
    build.retain(n)                 # after activation only; never drops the new generation

`begin` first discards what crashed builds left behind: the caller holds the run lock, so no
other build of the workspace can still be writing.

This module is the index layer: it imports only thoth.errors, thoth.index, thoth.state and
thoth.embed.base — never a producer of records.
"""

from __future__ import annotations

import os
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol

from thoth.embed.base import Embedder, EmbedderError
from thoth.errors import ThothError
from thoth.index.base import IndexRecord, IndexStore
from thoth.index.generations import IndexBackend
from thoth.index.reader import open_generation
from thoth.state import StateStore, SyncStatus
from thoth.state.store import RunKind

UPSERT_BATCH = 256
EMBED_BATCH = 32
RUN_MESSAGE_MAX = 4000  # characters of a run row's message

Progress = Callable[[str, int, int], None]  # (phase, done, total)
# A carried record as the new generation gets it, or None to leave it behind.
Keep = Callable[[IndexRecord], IndexRecord | None]


class BuildError(ThothError):
    """A build found its data inconsistent or was used out of order; nothing was activated."""


def embed_passages(
    embedder: Embedder, texts: Sequence[str], progress: Progress | None = None
) -> list[Any]:
    """Embed `texts` in batches of EMBED_BATCH, reporting the "embed" phase; one vector per
    text, in order. A reply with a missing or extra vector stops the build instead of shifting
    every later vector onto the wrong record."""
    out: list[Any] = []
    for start in range(0, len(texts), EMBED_BATCH):
        batch = list(texts[start : start + EMBED_BATCH])
        vectors = embedder.embed_passages(batch)
        if len(vectors) != len(batch):
            raise EmbedderError(
                f"{embedder.identity}: {len(vectors)} vectors returned for {len(batch)} texts "
                f"(texts {start + 1}-{start + len(batch)} of {len(texts)}); nothing was "
                "indexed -> check the embedding server: it must return one vector per text"
            )
        out.extend(vectors)
        if progress is not None:
            progress("embed", min(start + EMBED_BATCH, len(texts)), len(texts))
    return out


def record_labels(payloads: Iterable[Mapping[str, Any]]) -> set[str]:
    """Every label value carried by the records: the vocabulary a generation was built with,
    stored as `counts["labels"]` so readers can fail closed on labels no longer declared."""
    return {str(label) for payload in payloads for label in payload.get("labels") or []}


def retain_generations(
    state: StateStore, backend: IndexBackend, workspace: str, retain: int
) -> list[str]:
    """Keep the active generation and the `retain` most recent others for rollback; drop the
    index data of the rest. Returns the generation ids dropped."""
    keep = 0
    dropped = []
    for gen in state.list_generations(workspace):  # newest first
        if gen.status == "active":
            continue
        if gen.status == "retired" and keep < retain:
            keep += 1
            continue
        if gen.id in backend.sealed():
            backend.drop(gen.id)
            dropped.append(gen.id)
    return dropped


def _kind(record: IndexRecord) -> str:
    return str(record.payload.get("record_kind", ""))


# ---------------------------------------------------------------------- the run lock


@dataclass
class RunRow:
    """What a run row is closed with. `succeeded=False` closes a run that ended without an
    error but without its result (a failed gate) as 'failed'."""

    revisions: dict[str, Any] = field(default_factory=dict)
    generation: str | None = None
    counts: dict[str, Any] = field(default_factory=dict)
    changes: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    succeeded: bool = True


# How a sync run ended, as its report says (docs and schema alike).
SyncOutcome = Literal["activated", "unchanged", "failed"]


class RunReport(Protocol):
    """What a docs or schema sync report holds that its run row is closed with."""

    generation: str | None
    previous_generation: str | None
    abandoned_generation: str | None
    outcome: SyncOutcome
    counts: dict[str, int]
    after_failure: str
    duration_s: float
    message: str

    def changes(self) -> dict[str, Any]: ...


def closing_row(
    report: RunReport,
    failure: BaseException | None,
    started: float,
    revisions: dict[str, Any],
) -> RunRow:
    """The run row of a sync that ends, from its report; after a failure, the report first
    says which generation serves (`after_failure`), in its message too."""
    if failure is not None:
        report.after_failure = after_failure(report)
        report.outcome = "failed"
        report.message = f"{type(failure).__name__}: {failure} ({report.after_failure})"
    report.duration_s = round(time.perf_counter() - started, 3)
    return RunRow(
        revisions=revisions,
        generation=report.generation,
        counts={**report.counts, "duration_s": report.duration_s},
        changes=report.changes(),
        message=report.message,
    )


def after_failure(report: RunReport) -> str:
    """What serves after the run failed, from what the run recorded as it went."""
    if report.outcome == "activated":
        return f"generation {report.generation} was activated before the error and is serving"
    where = (
        f"nothing was activated: the active generation {report.previous_generation} is unchanged"
        if report.previous_generation
        else "nothing was activated: no generation serves yet"
    )
    if report.abandoned_generation:
        where += f"; the build of generation {report.abandoned_generation} was abandoned"
    return where


def _plain_row(failure: BaseException | None) -> RunRow:
    return RunRow() if failure is None else RunRow(message=f"{type(failure).__name__}: {failure}")


class RunLock:
    """The workspace's build lock, held for a whole run: entering inserts the `sync_runs` row
    (SyncRunConflict when another run of the workspace is running), leaving closes it.

    The row is closed 'succeeded' (or 'failed' when the caller's row says so), 'failed' on an
    error, 'interrupted' on Ctrl-C or a shutdown (a BaseException that is not an Exception).
    `closing(failure)` gives what the row records; set it once the run knows its report. When
    closing the row fails after an error, that failure becomes a note on the error, which is
    the one raised; `recorded` says whether the row was closed."""

    def __init__(
        self,
        state: StateStore,
        workspace: str,
        *,
        kind: RunKind,
        run_by: str,
        full: bool = False,
        pipeline_version: int = 0,
        host: str | None = None,
        pid: int | None = None,
    ) -> None:
        self.state = state
        self.workspace = workspace
        self.kind: RunKind = kind
        self.run_by = run_by
        self.full = full
        self.pipeline_version = pipeline_version
        self.host = host or socket.gethostname()
        self.pid = os.getpid() if pid is None else pid
        self.closing: Callable[[BaseException | None], RunRow] = _plain_row
        self.recorded = False
        self.status: SyncStatus | None = None  # how the row was closed
        self._run_id: int | None = None

    @property
    def run_id(self) -> int:
        if self._run_id is None:
            raise BuildError(
                f"the run lock of {self.workspace!r} was never taken -> use it in a `with` block"
            )
        return self._run_id

    def __enter__(self) -> RunLock:
        if self._run_id is not None:
            raise BuildError(f"run {self._run_id}: a run lock is taken once -> make a new one")
        self._run_id = self.state.start_sync_run(
            self.workspace,
            self.run_by,
            self.full,
            host=self.host,
            pid=self.pid,
            pipeline_version=self.pipeline_version,
            kind=self.kind,
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        run_id = self.run_id
        try:
            row = self.closing(exc)
            status: SyncStatus
            if exc is None:
                status = "succeeded" if row.succeeded else "failed"
            else:
                status = "failed" if isinstance(exc, Exception) else "interrupted"
            self.state.finish_sync_run(
                run_id,
                status,
                row.revisions,
                row.generation,
                row.counts,
                row.changes,
                row.message[:RUN_MESSAGE_MAX],
            )
            self.recorded, self.status = True, status
        except Exception as bookkeeping:
            if exc is None:
                raise
            # Never hide the error that stopped the run behind the bookkeeping one.
            exc.add_note(
                f"the run row {run_id} could not be closed ({bookkeeping}): it stays 'running' "
                "until the next docs sync or Evidence publication on this host finds its "
                f"process gone, or `tht docs runs --interrupt {run_id}` closes it"
            )


# ---------------------------------------------------------------------- the build


@dataclass(frozen=True)
class Verified:
    """What a generation really holds, read back after writing: records per kind, their
    total, and every label they carry."""

    kinds: dict[str, int]
    total: int
    labels: set[str]


class GenerationBuilder:
    """Builds the generations of one workspace; the caller holds its RunLock."""

    def __init__(
        self,
        state: StateStore,
        backend: IndexBackend,
        workspace: str,
        embedder: Embedder,
        progress: Progress | None = None,
    ) -> None:
        self.state = state
        self.backend = backend
        self.workspace = workspace
        self.embedder = embedder
        self.progress: Progress = progress or (lambda _phase, _done, _total: None)
        self._discarded: list[str] | None = None

    def discard_crashed(self) -> list[str]:
        """Remove what builds whose process died left behind: unsealed data, generations still
        'building' (marked 'failed') or 'candidate' (a build killed between sealing and the end
        of its gate: never evaluated, never to be activated; data dropped, marked 'abandoned'),
        unfinished build records ('interrupted'). Safe only under the run lock, which no live
        build of the workspace holds then. Returns the generation ids whose unsealed data or
        unevaluated candidate was removed. `begin` calls it once if the caller did not."""
        self.state.mark_interrupted(self.workspace)
        removed = self.backend.discard_unsealed()
        for gen in self.state.list_generations(self.workspace):
            if gen.status in ("building", "candidate"):
                self.backend.drop(gen.id)
                if gen.status == "candidate":
                    removed.append(gen.id)
                    self.state.mark_generation(gen.id, "abandoned")
                else:
                    self.state.mark_generation(gen.id, "failed")
        self._discarded = removed
        return removed

    def begin(
        self,
        revision: str,
        config: Mapping[str, Any],
        *,
        source: str | None,
        payload_indexes: Sequence[str],
    ) -> GenerationBuild:
        """A new generation of `revision`, 'building', with an empty store nobody reads.
        `source`: the active generation the build starts from (None: none is active): records
        are carried from it, and activation succeeds only while it is still the active one.
        The generation's config is `config` plus the embedder, its dimension and the backend."""
        if self._discarded is None:
            self.discard_crashed()
        full = {
            **config,
            "embedder": self.embedder.identity,
            "dim": self.embedder.dim,
            "backend": self.backend.name,
        }
        gen_id = self.state.create_generation(self.workspace, revision, full)
        try:
            store = self.backend.create(gen_id, self.embedder.dim)
        except BaseException as exc:
            try:
                self.backend.drop(gen_id)
                self.state.mark_generation(gen_id, "failed")
            except Exception as cleanup:  # noqa: BLE001 - reported on the original error
                exc.add_note(f"generation {gen_id} could not be cleaned up: {cleanup}")
            raise
        return GenerationBuild(self, gen_id, source, store, payload_indexes, self._discarded or [])


class GenerationBuild:
    """One candidate generation, from `begin` to activation, a failed gate or abandonment.
    Use it as a context manager: an error inside abandons it (store closed, data dropped,
    generation 'failed'), then propagates."""

    def __init__(
        self,
        builder: GenerationBuilder,
        gen_id: str,
        source: str | None,
        store: IndexStore,
        payload_indexes: Sequence[str],
        discarded: list[str],
    ) -> None:
        self._builder = builder
        self.gen_id = gen_id
        self.source = source
        self.store: IndexStore | None = store  # None once sealed or abandoned
        self.payload_indexes = tuple(payload_indexes)
        self.discarded = list(discarded)  # unsealed generations removed by `begin`
        self.written: Counter[str] = Counter()  # records written per kind, carried included
        self.verified: Verified | None = None
        self.shard: dict[str, Any] = {}  # the backend's seal fingerprint, once sealed
        self.sealed = self.candidate = self.gate_failed = False
        self.activated = self.abandoned = False

    # ------------------------------------------------------------------ context

    def __enter__(self) -> GenerationBuild:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            self.abandon(exc)
            return
        if not (self.activated or self.gate_failed or self.abandoned):
            unfinished = BuildError(
                f"generation {self.gen_id}: the build ended neither activated nor refused by "
                "its gate; it was abandoned -> report this as a bug"
            )
            self.abandon(unfinished)
            raise unfinished

    # ------------------------------------------------------------------ steps

    def carry(self, keep: Keep) -> dict[str, int]:
        """Copy into the new generation what `keep` returns for each record of the source
        generation (same id; the caller may change the payload), restamped with the new
        generation's id where the record carries one. Every carried vector must have the new
        generation's dimension. Returns how many were carried, per kind."""
        store = self._writable("carry records forward")
        if self.source is None:
            return {}
        identity = self._builder.embedder.identity
        source = self._builder.state.get_generation(self.source)
        if source is None:
            raise BuildError(
                f"generation {self.source}, the source of generation {self.gen_id}, is not in "
                "the state store -> report this as a bug"
            )
        # Never spread a loss: a damaged source is refused (INDEX_CORRUPT), not copied.
        old = open_generation(self._builder.backend, source)
        try:
            if old.dim != store.dim:
                raise BuildError(
                    f"generation {self.source} has dimension {old.dim}, the embedder "
                    f"{identity} gives {store.dim}: its records cannot be carried forward into "
                    f"generation {self.gen_id} -> rebuild every kind with the new model"
                )
            carried: Counter[str] = Counter()
            batch: list[IndexRecord] = []
            for rec in old.scroll():
                kept = keep(rec)
                if kept is None:
                    continue
                if "vector_generation" in kept.payload:
                    # Evidence search filters on it: a record carried under its old
                    # generation's id would be invisible in the new one, whoever carried it.
                    kept = IndexRecord(
                        kept.id,
                        kept.dense,
                        kept.sparse,
                        {**kept.payload, "vector_generation": self.gen_id},
                    )
                if len(kept.dense) != store.dim:
                    raise BuildError(
                        f"generation {self.source}: record {kept.id} ({_kind(kept) or 'no kind'})"
                        f" has a vector of dimension {len(kept.dense)}, the embedder {identity} "
                        f"gives {store.dim}: it cannot be carried forward into generation "
                        f"{self.gen_id} -> rebuild it with the new model"
                    )
                batch.append(kept)
                carried[_kind(kept)] += 1
                if len(batch) >= UPSERT_BATCH:
                    self._upsert(store, batch)
                    batch = []
            if batch:
                self._upsert(store, batch)
            return dict(carried)
        finally:
            old.close()

    def write(self, records: Sequence[IndexRecord]) -> None:
        """Write new records in batches of UPSERT_BATCH, reporting the "index" phase."""
        store = self._writable("write records")
        total = len(records)
        for start in range(0, total, UPSERT_BATCH):
            self._upsert(store, records[start : start + UPSERT_BATCH])
            self._builder.progress("index", min(start + UPSERT_BATCH, total), total)

    def verify(self, inspect: Callable[[IndexRecord], None] | None = None) -> Verified:
        """Create the payload indexes, then read the generation back: per kind, the records
        readable must be the records written, and the total counted must be the total
        scrolled. `inspect` sees every record scrolled (for the caller's own counts)."""
        store = self._writable("verify")
        store.create_payload_indexes(self.payload_indexes)
        readable: Counter[str] = Counter()
        labels: set[str] = set()
        scrolled = 0
        for rec in store.scroll():
            scrolled += 1
            readable[_kind(rec)] += 1
            labels |= record_labels([rec.payload])
            if inspect is not None:
                inspect(rec)
        total = store.count()
        if readable != self.written or scrolled != total:
            raise BuildError(
                f"generation {self.gen_id}: records readable per kind "
                f"{_by_kind(readable)}, written {_by_kind(self.written)}; {total} counted, "
                f"{scrolled} scrolled (two records share a point id?) -> nothing was "
                "activated; report this as a bug"
            )
        self.verified = Verified(kinds=dict(readable), total=total, labels=labels)
        return self.verified

    def seal(self) -> None:
        """Flush, close and make the generation readable in one step."""
        if self.verified is None:
            raise self._out_of_order("sealed before it was verified")
        store = self._writable("seal")
        self.shard = self._builder.backend.seal(self.gen_id, store)
        self.store = None
        self.sealed = True

    def mark_candidate(self, counts: Mapping[str, Any]) -> None:
        """The sealed generation becomes a candidate, with the caller's counts and, as
        `counts["labels"]`, the sorted label set read back by `verify`."""
        if not self.sealed or self.verified is None:
            raise self._out_of_order("marked a candidate before it was sealed")
        self._builder.state.mark_generation(
            self.gen_id,
            "candidate",
            {
                **counts,
                "labels": sorted(self.verified.labels),
                # What readers check the shard against when they open it.
                "points": dict(sorted(self.verified.kinds.items())),
                **self.shard,
            },
        )
        self.candidate = True

    def gate(self, check: Callable[[str], bool]) -> bool:
        """Run `check` on the sealed candidate (it may read it by id). False: the generation
        is marked 'failed' (its data stays until retention) and must not be activated."""
        if not self.candidate:
            raise self._out_of_order("gated before it was a candidate")
        if check(self.gen_id):
            return True
        self._builder.state.mark_generation(self.gen_id, "failed")
        self.gate_failed = True
        return False

    def activate(self) -> None:
        """Serve the candidate, only if the source generation is still the active one
        (compare-and-swap): a build that carried records from a generation must not replace a
        newer one, whose records it would silently drop."""
        if self.gate_failed:
            raise BuildError(
                f"generation {self.gen_id} did not pass its gate: it cannot be activated"
            )
        if not self.candidate:
            raise self._out_of_order("activated before it was a candidate")
        self._builder.state.activate_generation(
            self._builder.workspace, self.gen_id, expected_previous=self.source
        )
        self.activated = True

    def retain(self, retain: int) -> list[str]:
        """Retention (see `retain_generations`), after activation only: a concurrent build's
        candidate is then doomed anyway (its compare-and-swap fails), so retention cannot pull
        data from under it. A failure here never drops the generation just activated."""
        if not self.activated:
            raise BuildError(
                f"generation {self.gen_id}: retention applies only after its activation -> "
                "report this as a bug"
            )
        try:
            return retain_generations(
                self._builder.state, self._builder.backend, self._builder.workspace, retain
            )
        except Exception as exc:
            exc.add_note(
                f"generation {self.gen_id} was activated before the error and is serving; the "
                "older generations are dropped by the next build's retention"
            )
            raise

    def abandon(self, exc: BaseException) -> None:
        """Remove a generation that will never be served: close its store, drop its data, mark
        it 'failed'. Best effort: a cleanup failure becomes a note on `exc`, the error that
        stopped the build. Never touches a generation that is active."""
        if self.abandoned or self.activated:
            return
        self.abandoned = True
        try:
            store, self.store = self.store, None
            if store is not None:
                store.close()
            state = self._builder.state
            gen = state.get_generation(self.gen_id)
            if gen is not None and gen.status == "active":
                exc.add_note(f"generation {self.gen_id} is active: it was not abandoned")
                return
            self._builder.backend.drop(self.gen_id)
            if gen is not None and gen.status in ("building", "candidate"):
                state.mark_generation(self.gen_id, "failed")
        except Exception as cleanup:  # noqa: BLE001 - reported on the original error
            exc.add_note(
                f"generation {self.gen_id} could not be cleaned up ({cleanup}): the next build "
                "discards unsealed data and fails the generations left 'building'"
            )

    # ------------------------------------------------------------------ helpers

    def _writable(self, what: str) -> IndexStore:
        if self.store is None:
            state = "abandoned" if self.abandoned else "sealed"
            raise self._out_of_order(f"asked to {what} once {state}")
        return self.store

    def _upsert(self, store: IndexStore, records: Sequence[IndexRecord]) -> None:
        for rec in records:
            if len(rec.dense) != store.dim:
                raise BuildError(
                    f"generation {self.gen_id}: record {rec.id} ({_kind(rec) or 'no kind'}) has "
                    f"a vector of dimension {len(rec.dense)}, the embedder "
                    f"{self._builder.embedder.identity} gives {store.dim} -> report this as a bug"
                )
        store.upsert(records)
        self.written.update(_kind(r) for r in records)

    def _out_of_order(self, what: str) -> BuildError:
        return BuildError(f"generation {self.gen_id}: {what} -> report this as a bug")


def _by_kind(counts: Counter[str]) -> str:
    return "{" + ", ".join(f"{k or 'no kind'}: {n}" for k, n in sorted(counts.items())) + "}"
