"""Generations: immutable, sealed builds of the collection. A build writes a new generation
nobody reads yet; sealing makes it readable; the state store's atomic pointer makes it active.
A crash at any point leaves at most an unsealed generation, which no reader can open and the
next build removes.

Edge layout under the index directory (one per workspace):
    <gen-id>.building/   being written (never opened by readers)
    <gen-id>/            sealed: flushed, closed, renamed in one step, never written again
Server layout: collection `<prefix>__<gen-id>__building`, sealed by an alias `<prefix>__<gen-id>`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from qdrant_client import QdrantClient, models

from thoth.index.base import IndexStore, IndexUnavailable
from thoth.index.edge import EdgeStore
from thoth.index.server import ServerStore
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


class ServerBackend:
    name = "server"

    def __init__(self, client: QdrantClient, prefix: str) -> None:
        self._client = client
        self.prefix = prefix

    def _name(self, gen_id: str) -> str:
        return f"{self.prefix}__{gen_id}"

    def create(self, gen_id: str, dim: int) -> IndexStore:
        return ServerStore.create(self._client, self._name(gen_id) + "__building", dim)

    def seal(self, gen_id: str, store: IndexStore) -> dict[str, Any]:
        store.flush()
        self._client.update_collection_aliases(
            change_aliases_operations=[
                models.CreateAliasOperation(
                    create_alias=models.CreateAlias(
                        collection_name=self._name(gen_id) + "__building",
                        alias_name=self._name(gen_id),
                    )
                )
            ]
        )
        return {}  # a server collection has no files Thoth can check; counts still are

    def open(self, gen_id: str, sealed: Mapping[str, Any] | None = None) -> IndexStore:
        aliases = {a.alias_name for a in self._client.get_aliases().aliases}
        if self._name(gen_id) not in aliases:
            raise IndexUnavailable(
                f"Qdrant: generation {gen_id} has no sealed collection "
                f"(alias {self._name(gen_id)!r} missing)"
            )
        return ServerStore.open(self._client, self._name(gen_id))

    def drop(self, gen_id: str) -> None:
        aliases = {a.alias_name for a in self._client.get_aliases().aliases}
        if self._name(gen_id) in aliases:
            self._client.update_collection_aliases(
                change_aliases_operations=[
                    models.DeleteAliasOperation(
                        delete_alias=models.DeleteAlias(alias_name=self._name(gen_id))
                    )
                ]
            )
        if self._client.collection_exists(self._name(gen_id) + "__building"):
            self._client.delete_collection(self._name(gen_id) + "__building")

    def sealed(self) -> list[str]:
        head = f"{self.prefix}__"
        return sorted(
            a.alias_name.removeprefix(head)
            for a in self._client.get_aliases().aliases
            if a.alias_name.startswith(head)
        )

    def discard_unsealed(self) -> list[str]:
        sealed = set(self.sealed())
        head = f"{self.prefix}__"
        removed = []
        for c in self._client.get_collections().collections:
            if c.name.startswith(head) and c.name.endswith("__building"):
                gen_id = c.name.removeprefix(head).removesuffix("__building")
                if gen_id not in sealed:
                    self._client.delete_collection(c.name)
                    removed.append(gen_id)
        return removed

    def close(self) -> None:
        self._client.close()
