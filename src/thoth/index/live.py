"""Live collections: one mutable collection per workspace and use (e.g. `memory`), on the
configured index backend. A generation is written once and sealed; a live collection is
written after creation, a few points at a time, and read between writes.

Both adapters keep the same layout as a generation (a default dense vector, cosine, and the
sparse `bm25` vector with IDF) plus the caller's metadata (which embedder and BM25 settings
built it), so the caller can refuse to mix vectors of two embedders:

- `EdgeLiveCollection`: a Qdrant Edge shard directory, WAL-less, with a lock file beside it.
  Writers lock exclusively, readers shared: opening and closing a shard rewrites some of its
  files, so a reader opening it during a write would tear the writer's flush. A new shard is
  built in a hidden directory and renamed into place: complete or absent. The metadata is a
  JSON file inside the shard (`thoth_<name>.json`).
- `ServerLiveCollection` (in thoth.index.server_live): the qdrant-client collection
  `<prefix>__<name>` on a Qdrant server (or qdrant-client's local mode), with the metadata
  in the collection's own `metadata` (written by the same call that creates the
  collection). The server serialises writes; there is no lock to take. Several hosts
  serving one workspace share it.

Every fault is `IndexUnavailable` (the cause kept), never an empty answer.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any, Final, Protocol

import qdrant_edge as qe

from thoth.index.base import IndexStore, IndexUnavailable
from thoth.index.edge import EdgeStore
from thoth.storage import file_lock, fsync_dir, write_durably

META_KEY: Final = "thoth"  # the key of the caller's metadata in a server collection's metadata
PAGE: Final = 1024  # points per scroll page


class LiveStore(IndexStore, Protocol):
    """An open live collection: the IndexStore operations plus the three a sealed generation
    never needs."""

    def payloads(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """The payloads of those of `ids` that exist (absent ids are left out)."""
        ...

    def all_payloads(self) -> Iterator[dict[str, Any]]:
        """Every point's payload, without vectors."""
        ...

    def delete(self, ids: Sequence[str]) -> None: ...


class LiveCollection(Protocol):
    name: str
    where: str  # for messages: the shard path or the server collection

    def exists(self) -> bool:
        """Whether the collection was ever created (a half-created one is not there)."""
        ...

    def locked(self, *, exclusive: bool) -> AbstractContextManager[None]:
        """What every read (shared) and write (exclusive) holds."""
        ...

    def create(self, dim: int, payload_indexes: Sequence[str], meta: Mapping[str, Any]) -> None:
        """Create it empty, with its metadata (caller holds the exclusive lock)."""
        ...

    def meta(self) -> dict[str, Any]:
        """The metadata written at creation."""
        ...

    def open(self) -> LiveStore:
        """Open it for reading or writing under the lock; the caller closes the store."""
        ...

    def drop(self) -> bool:
        """Delete it (caller holds the exclusive lock); False when there was nothing."""
        ...

    def close(self) -> None: ...


# ---------------------------------------------------------------------- Qdrant Edge


class EdgeLiveStore(EdgeStore):
    def payloads(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        try:
            records = self._shard.retrieve(list(ids), with_payload=True, with_vector=False)
        except Exception as exc:  # the engine's errors have no common type: wrap, keep the cause
            raise IndexUnavailable(f"{self.path}: retrieve failed: {exc}") from exc
        return [dict(r.payload or {}) for r in records]

    def all_payloads(self) -> Iterator[dict[str, Any]]:
        offset: Any = None
        while True:
            try:
                records, offset = self._shard.scroll(
                    qe.ScrollRequest(
                        offset=offset, limit=PAGE, with_payload=True, with_vector=False
                    )
                )
            except Exception as exc:  # see payloads()
                raise IndexUnavailable(f"{self.path}: scroll failed: {exc}") from exc
            for rec in records:
                yield dict(rec.payload or {})
            if offset is None:
                return

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._run(qe.UpdateOperation.delete_points(list(ids)))


class EdgeLiveCollection:
    """`<path>/` the shard, `<path>.lock` the lock, `.<name of path>.creating` a creation in
    progress."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name
        self.where = str(path)
        self.lock_path = path.with_name(path.name + ".lock")
        self.meta_path = path / f"thoth_{name}.json"
        self._creating = path.with_name(f".{path.name}.creating")

    def exists(self) -> bool:
        return self.path.is_dir()

    @contextmanager
    def locked(self, *, exclusive: bool) -> Iterator[None]:
        with ExitStack() as stack:
            try:
                if exclusive:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                stack.enter_context(file_lock(self.lock_path, exclusive=exclusive))
            except OSError as exc:
                raise IndexUnavailable(
                    f"cannot lock {self.lock_path} ({exc}); check the directory and its permissions"
                ) from exc
            yield

    def create(self, dim: int, payload_indexes: Sequence[str], meta: Mapping[str, Any]) -> None:
        try:
            if self._creating.exists():
                shutil.rmtree(self._creating)  # an interrupted creation; we hold the lock
            store = EdgeStore.create(self._creating, dim)
            try:
                store.create_payload_indexes(payload_indexes)
                store.flush()
            finally:
                store.close()
            write_durably(
                self._creating / self.meta_path.name, json.dumps(dict(meta), indent=2) + "\n"
            )
            os.replace(self._creating, self.path)
            fsync_dir(self.path.parent)
        except OSError as exc:
            raise IndexUnavailable(
                f"cannot create the shard ({exc}); check disk space and permissions"
            ) from exc

    def meta(self) -> dict[str, Any]:
        try:
            meta = json.loads(self.meta_path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise IndexUnavailable(f"unreadable {self.meta_path} ({exc})") from exc
        if not isinstance(meta, dict):
            raise IndexUnavailable(f"unreadable {self.meta_path} (not a JSON object)")
        return meta

    def open(self) -> EdgeLiveStore:
        store = EdgeLiveStore.open(self.path)
        assert isinstance(store, EdgeLiveStore)  # EdgeStore.open builds `cls`
        return store

    def drop(self) -> bool:
        existed = self.exists()
        try:
            for path in (self.path, self._creating):
                if path.exists():
                    shutil.rmtree(path)
        except OSError as exc:
            raise IndexUnavailable(f"cannot delete {self.path} ({exc})") from exc
        return existed

    def close(self) -> None:
        """Nothing held between calls: each open is closed by its caller."""
