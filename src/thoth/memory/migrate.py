"""`tht memory migrate`: move the memory index of a workspace from its local Qdrant Edge shard
to the configured server collection (after `[index] backend = "server"`), so every host
serving the workspace shares the memories.

The registry stays canonical. The shard's points whose memory id and content hash match the
registry are copied as they are (same point ids, vectors and payloads: nothing re-embedded);
then the target is reconciled with the registry like `tht memory reconcile` does: a memory the
shard lacked (or held with other content) is embedded and indexed, a point the registry does
not know is removed. The local shard is only read, never changed or deleted: the report names
it, and removing it is the operator's call.

The copy needs the shard to have been built with the configured embedder and BM25 settings
(otherwise its vectors could not be compared with new ones); when it was not, nothing is
copied and the way out is `tht memory reconcile --rebuild`, which embeds every memory again.
Running it twice copies the same points again: nothing changes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from thoth.embed.base import Embedder
from thoth.errors import PreconditionError
from thoth.memory.index import RECORD_KIND, MemoryIndex
from thoth.memory.reconcile import Repair, reconcile_index
from thoth.memory.registry import Registry


@dataclass(frozen=True)
class MigrationReport:
    source: str  # the local shard, left in place
    target: str  # the server collection
    in_source: int  # memory points found in the shard
    copied: int  # copied with their vectors
    skipped: tuple[str, ...]  # shard points not copied: not (or no longer) in the registry
    repairs: tuple[Repair, ...]  # what the reconcile of the target did after the copy
    in_target: int  # memory points in the target at the end
    registry: int  # memories in the registry

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "source": self.source,
            "target": self.target,
            "in_source": self.in_source,
            "copied": self.copied,
            "skipped": list(self.skipped),
            "repairs": [asdict(r) for r in self.repairs],
            "in_target": self.in_target,
            "registry": self.registry,
            "source_left_in_place": True,
        }


def migrate(
    *, registry: Registry, source: MemoryIndex, target: MemoryIndex, embedder: Embedder
) -> MigrationReport:
    if source.where == target.where:
        raise PreconditionError(
            f"the memory index is already {target.where}: nothing to migrate -> set [index] "
            'backend = "server" (with url or path) in thoth.toml first'
        )
    if not source.exists():
        raise PreconditionError(
            f"no local memory shard at {source.where}: nothing to migrate -> run `tht memory "
            "reconcile` to index the registry's memories in the configured backend"
        )
    records = registry.active()
    meta, points = source.points()
    if meta.get("embedder") != embedder.identity:
        raise PreconditionError(
            f"the local memory shard {source.where} was built with embedder "
            f"{meta.get('embedder')!r}, not the configured {embedder.identity!r}: its vectors "
            "cannot be copied; nothing was written -> run `tht memory reconcile --rebuild` to "
            "embed the registry's memories into the configured backend"
        )
    canonical = {r.id: r.content_sha256 for r in records}
    keep = [
        p
        for p in points
        if p.payload.get("record_kind") == RECORD_KIND
        and canonical.get(str(p.payload.get("memory_id"))) == p.payload.get("content_sha256")
    ]
    kept = {p.id for p in keep}
    skipped = tuple(sorted(str(p.payload.get("memory_id")) for p in points if p.id not in kept))
    copied = target.copy_points(keep, meta)
    repairs = reconcile_index(records, target, embedder)
    return MigrationReport(
        source=source.where,
        target=target.where,
        in_source=len(points),
        copied=copied,
        skipped=skipped,
        repairs=tuple(repairs),
        in_target=len(target.ids()),
        registry=len(records),
    )
