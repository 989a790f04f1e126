"""`tht index migrate --to edge|server|postgres`: move a workspace's index to another backend.

1. Refuse before writing anything: the target is the configured backend; the target cannot be
   reached, lacks pgvector, or its schema holds another workspace (the adapters' own coded
   errors); a stored vector whose dimension is not `[embedding].dim`.
2. Copy every sealed generation the state store lists (the active one and those kept for
   rollback) and the live collections (memory), record by record, sealing each generation on
   the target. Whatever an interrupted run left on the target is dropped first: never used.
3. Verify each copy (thoth.index.migrate.verify_copy): counts per kind, id sets, sample searches.
4. Switch, in an order where a crash at any point leaves the workspace whole on one backend:
   first the state store records what the target sealed (Edge's shard fingerprints, under a key
   the PostgreSQL and Qdrant server backends do not read), then thoth.toml's `[index]` is
   replaced in one atomic rename — the switch itself; after it, fingerprints of the old Edge
   shards are removed from the counts (a crash before that leaves a key nobody reads).

The source is left in place; removing it is the operator's call.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import tomlkit
from pydantic import ValidationError
from tomlkit.exceptions import TOMLKitError

from thoth.config import CONFIG_FILE, Settings
from thoth.errors import ConfigError, PreconditionError
from thoth.index.base import IndexUnavailable
from thoth.index.generations import IndexBackend
from thoth.index.live import LiveCollection
from thoth.index.migrate import Verified, copy_generation, copy_live, verify_copy
from thoth.index.postgres import IndexDimensionMismatch, redact
from thoth.index.records import GENERATION_INDEXES
from thoth.index.shard import SHARD_FILES
from thoth.memory.index import COLLECTION as MEMORY_COLLECTION
from thoth.memory.index import PAYLOAD_INDEXES as MEMORY_PAYLOAD_INDEXES
from thoth.runtime import make_backend, make_live_collection, open_state, qdrant_client
from thoth.storage import fsync_dir, write_durably
from thoth.workspace import Workspace

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

Backend = Literal["edge", "server", "postgres"]
# Live collections and the payload fields each indexes.
LIVE: Final = {MEMORY_COLLECTION: MEMORY_PAYLOAD_INDEXES}
COPIED: Final = ("active", "retired", "candidate")  # sealed generations a reader may open
_KEYS: Final = ("backend", "url", "url_env", "schema", "path")


class SameBackend(PreconditionError):
    code = "index_migration_same_backend"


class TargetUnavailable(IndexUnavailable):
    """The target backend cannot be reached or opened: nothing was written."""

    code = "index_migration_target_unavailable"


class MigrationRaced(PreconditionError):
    code = "index_migration_raced"


@dataclass(frozen=True)
class Target:
    backend: Backend
    url: str | None = None
    url_env: str | None = None
    schema: str | None = None
    path: str | None = None


@dataclass
class MigratedGeneration:
    id: str
    status: str
    records: int
    kinds: dict[str, int]
    dense_queries: int
    bm25_queries: int


@dataclass
class IndexMigrationReport:
    source: str
    target: str
    config: str
    generations: list[MigratedGeneration] = field(default_factory=list)
    live: dict[str, dict[str, int]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "source": self.source,
            "target": self.target,
            "config": self.config,
            "generations": [g.__dict__ for g in self.generations],
            "live": self.live,
            "source_left_in_place": True,
        }


def describe(ws: Workspace) -> str:
    cfg = ws.settings.index
    if cfg.backend == "postgres":
        where = f"{redact(cfg.url) if cfg.url else '$' + str(cfg.url_env)}"
        return f"postgres {where} schema {cfg.schema_name or '(default)'}"
    if cfg.backend == "server":
        return f"server {cfg.url or cfg.path}"
    return f"edge {cfg.path or '.thoth/index'}"


def target_config(ws: Workspace, target: Target) -> tuple[str, Settings]:
    """thoth.toml with `[index]` naming the target (the rest of the file, comments included,
    kept), and the settings it gives."""
    path = ws.root / CONFIG_FILE
    try:
        doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    except (TOMLKitError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}) -> fix the syntax") from exc
    index = doc.get("index")
    if index is None:
        index = tomlkit.table()
        doc["index"] = index
    for key in _KEYS:
        if key in index:
            del index[key]
    index["backend"] = target.backend
    for key in ("url", "url_env", "schema", "path"):
        value = getattr(target, key)
        if value is not None:
            index[key] = value
    text = tomlkit.dumps(doc)
    try:
        settings = Settings.model_validate(tomlkit.parse(text).unwrap())
    except ValidationError as exc:
        raise ConfigError(
            f"{path}: [index] for the target would not be valid settings ({exc}) -> check "
            "--url/--url-env/--schema/--path"
        ) from exc
    return text, settings


def _write_config(root: Path, text: str) -> None:
    path = root / CONFIG_FILE
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write_durably(tmp, text)
        os.replace(tmp, path)  # the switch: one rename
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


def migrate_index(ws: Workspace, target: Target) -> IndexMigrationReport:
    if target.backend == ws.settings.index.backend:
        raise SameBackend(
            f"{ws.root / CONFIG_FILE}: the index is already on the {target.backend} backend; "
            "nothing was changed -> name another backend with --to (edge, server, postgres)"
        )
    text, settings = target_config(ws, target)
    target_ws = Workspace(root=ws.root, settings=settings)
    name = ws.settings.workspace
    dim = ws.settings.embedding.dim
    report = IndexMigrationReport(describe(ws), describe(target_ws), str(ws.root / CONFIG_FILE))
    state = open_state(ws)
    source_client = _client(ws)
    source = make_backend(ws, source_client)
    dest: IndexBackend | None = None
    dest_client: QdrantClient | None = None
    try:
        active = state.active_generation(name)
        sealed_on_source = set(source.sealed())
        gens = [
            g
            for g in state.list_generations(name)
            if g.status in COPIED and g.id in sealed_on_source
        ]
        dims = {g.id: _checked_dim(source, g.id, g.counts, dim) for g in gens}
        live_dims = {n: _live_dim(make_live_collection(ws, n, source_client), dim) for n in LIVE}
        try:
            # Opening the target checks it: reachable, pgvector, a schema of this workspace.
            dest_client = _client(target_ws)
            dest = make_backend(target_ws, dest_client)
            dest.discard_unsealed()
        except IndexUnavailable as exc:
            if type(exc) is not IndexUnavailable:
                raise  # already coded: no pgvector, not permitted, too old
            raise TargetUnavailable(f"{describe(target_ws)}: {exc}; nothing was changed") from exc
        resealed: dict[str, dict[str, Any]] = {}
        for gen in gens:
            _, sealed = copy_generation(
                source, dest, gen.id, gen.counts, dims[gen.id], GENERATION_INDEXES
            )
            resealed[gen.id] = sealed
            verified = _verify(source, dest, gen.id, gen.counts, sealed)
            report.generations.append(
                MigratedGeneration(
                    gen.id,
                    gen.status,
                    verified.records,
                    verified.kinds,
                    verified.dense_queries,
                    verified.bm25_queries,
                )
            )
        for live_name, payload_indexes in LIVE.items():
            live_dim = live_dims[live_name]
            if live_dim is None:  # never created: none on the target either
                stale = make_live_collection(target_ws, live_name, dest_client)
                try:
                    with stale.locked(exclusive=True):
                        stale.drop()
                finally:
                    stale.close()
                continue
            report.live[live_name] = _migrate_live(
                make_live_collection(ws, live_name, source_client),
                make_live_collection(target_ws, live_name, dest_client),
                payload_indexes,
                live_dim,
            )
        # Nothing published meanwhile: else the copy would miss it.
        now_active = state.active_generation(name)
        if (now_active and now_active.id) != (active and active.id) or set(
            source.sealed()
        ) != sealed_on_source:
            raise MigrationRaced(
                f"a generation of {name!r} was published or removed during the migration; "
                "nothing was switched -> run `tht index migrate` again"
            )
        for gen in gens:
            if resealed[gen.id]:  # Edge's fingerprints: a key the old backend does not read
                state.replace_generation_counts(gen.id, {**gen.counts, **resealed[gen.id]})
        _write_config(ws.root, text)
        for gen in gens:
            if not resealed[gen.id] and SHARD_FILES in gen.counts:
                counts = {k: v for k, v in gen.counts.items() if k != SHARD_FILES}
                state.replace_generation_counts(gen.id, counts)
    finally:
        if dest is not None:
            dest.close()
        source.close()
        state.close()
    return report


def _checked_dim(source: IndexBackend, gen_id: str, counts: dict[str, Any], dim: int | None) -> int:
    """The generation's dimension, refused when it is not `[embedding].dim`."""
    store = source.open(gen_id, counts)
    try:
        if dim is not None and store.dim != dim:
            raise IndexDimensionMismatch(
                f"generation {gen_id} holds {store.dim}-dimensional vectors, [embedding].dim "
                f"is {dim}; nothing was changed -> fix [embedding].dim or publish again with "
                "the configured embedder before migrating"
            )
        return store.dim
    finally:
        store.close()


def _verify(
    source: IndexBackend,
    dest: IndexBackend,
    gen_id: str,
    counts: dict[str, Any],
    sealed: dict[str, Any],
) -> Verified:
    src = source.open(gen_id, counts)
    try:
        dst = dest.open(gen_id, {**counts, **sealed})
        try:
            return verify_copy(src, dst, f"generation {gen_id}")
        finally:
            dst.close()
    finally:
        src.close()


def _client(ws: Workspace) -> QdrantClient | None:
    """The server backend's client, shared by its generations and live collections
    (qdrant-client's local mode allows one per path)."""
    return qdrant_client(ws) if ws.settings.index.backend == "server" else None


def _live_dim(source: LiveCollection, dim: int | None) -> int | None:
    """The live collection's dimension (None: never created), refused when it is not
    `[embedding].dim`."""
    try:
        if not source.exists():
            return None
        with source.locked(exclusive=False):
            store = source.open()
            live_dim = store.dim
            store.close()
    finally:
        source.close()
    if dim is not None and live_dim != dim:
        raise IndexDimensionMismatch(
            f"{source.where}: {live_dim}-dimensional vectors, [embedding].dim is {dim}; "
            "nothing was changed -> run `tht memory reconcile --rebuild` first"
        )
    return live_dim


def _migrate_live(
    source: LiveCollection,
    target: LiveCollection,
    payload_indexes: tuple[str, ...] | list[str],
    live_dim: int,
) -> dict[str, int]:
    try:
        kinds: Counter[str] = copy_live(source, target, live_dim, payload_indexes)
        with source.locked(exclusive=False), target.locked(exclusive=False):
            src, dst = source.open(), target.open()
            try:
                verify_copy(src, dst, target.where)
            finally:
                src.close()
                dst.close()
        return dict(sorted(kinds.items()))
    finally:
        source.close()
        target.close()
