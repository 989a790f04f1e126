"""Generations: immutable, sealed builds of the collection. A build writes a new generation
nobody reads yet; sealing makes it readable; the state store's atomic pointer makes it active.
A crash at any point leaves at most an unsealed generation, which no reader can open and the
next build removes.

Edge layout under the index directory (one per workspace):
    <gen-id>.building/   being written (never opened by readers)
    <gen-id>/            sealed: flushed, closed, renamed in one step, never written again
Server layout (thoth.index.server.ServerBackend): collection `<prefix>__<gen-id>__building`,
sealed by an alias `<prefix>__<gen-id>`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from thoth.index.base import IndexStore, IndexUnavailable
from thoth.index.edge import EdgeStore
from thoth.index.shard import SHARD_FILES, fingerprint, private_copy
from thoth.storage import fsync_dir

_BUILDING = ".building"


class IndexBackend(Protocol):
    name: str

    def create(self, gen_id: str, dim: int) -> IndexStore:
        """A new, empty, unsealed generation store."""
        ...

    def seal(self, gen_id: str, store: IndexStore) -> dict[str, Any]:
        """Flush, close and make the generation readable in one step. Returns what `open`
        checks the sealed data against later (empty when the backend cannot check)."""
        ...

    def open(self, gen_id: str, sealed: Mapping[str, Any] | None = None) -> IndexStore:
        """A sealed generation, opened without writing into it; `sealed` is what `seal`
        returned (None: not recorded). IndexCorrupt when the data is not what was sealed,
        IndexUnavailable when missing or unreadable."""
        ...

    def drop(self, gen_id: str) -> None: ...

    def sealed(self) -> list[str]: ...

    def discard_unsealed(self) -> list[str]:
        """Remove what crashed builds left behind; returns the generation ids removed."""
        ...

    def close(self) -> None: ...


class EdgeBackend:
    name = "edge"

    def __init__(self, root: Path) -> None:
        self.root = root

    def create(self, gen_id: str, dim: int) -> IndexStore:
        self.root.mkdir(parents=True, exist_ok=True)
        return EdgeStore.create(self.root / f"{gen_id}{_BUILDING}", dim)

    def seal(self, gen_id: str, store: IndexStore) -> dict[str, Any]:
        store.flush()
        store.close()
        building = self.root / f"{gen_id}{_BUILDING}"
        os.replace(building, self.root / gen_id)  # one rename: readable all at once
        fsync_dir(self.root)
        return {SHARD_FILES: fingerprint(self.root / gen_id)}

    def open(self, gen_id: str, sealed: Mapping[str, Any] | None = None) -> IndexStore:
        path = self.root / gen_id
        try:
            present = path.is_dir()
        except OSError as exc:
            raise IndexUnavailable(
                f"{path}: generation {gen_id} cannot be inspected: {exc} -> check the "
                "permissions of the index directory"
            ) from exc
        if not present:
            raise IndexUnavailable(
                f"{path}: generation {gen_id} has no index directory (deleted or never sealed)"
            )
        copy = private_copy(path, (sealed or {}).get(SHARD_FILES), gen_id)
        try:
            return EdgeStore.open(copy, private=True)
        except BaseException:
            shutil.rmtree(copy, ignore_errors=True)  # our own copy, never opened
            raise

    def drop(self, gen_id: str) -> None:
        for path in (self.root / gen_id, self.root / f"{gen_id}{_BUILDING}"):
            if path.exists():
                shutil.rmtree(path)

    def sealed(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.name for p in self.root.iterdir() if p.is_dir() and not p.name.endswith(_BUILDING)
        )

    def discard_unsealed(self) -> list[str]:
        if not self.root.is_dir():
            return []
        removed = []
        for path in sorted(self.root.glob(f"*{_BUILDING}")):
            shutil.rmtree(path)
            removed.append(path.name.removesuffix(_BUILDING))
        return removed

    def close(self) -> None:
        """Nothing shared to release: each store owns its shard handle."""
