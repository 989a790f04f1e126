"""A content-addressed cache of passage vectors in one SQLite file, shared by processes.

Key = sha256 of (embedder identity, "passage", text): an unchanged text under the same model is
never embedded twice; a different model (identity) never sees another model's vectors.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from thoth.embed.base import Embedder, EmbedderError, Vectors
from thoth.errors import Problem
from thoth.sqlitewal import enable_wal

BUSY_TIMEOUT_SECONDS = 60.0
_LOOKUP_CHUNK = 500  # bound parameters per SELECT, well under SQLite's limit
_SCHEMA = "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INT, data BLOB)"
_DTYPE = np.dtype("<f4")  # fixed byte order: the file may move between machines


class EmbeddingCacheError(EmbedderError):
    """The cache file cannot be opened, read or written. It only saves embedding work, so the
    way out of a damaged file is to delete it; the problem names the file."""

    code = "embedding_cache_unreadable"

    def __init__(self, path: Path, cause: str, hint: str, code: str) -> None:
        self.summary = f"embedding cache {path}: {cause}"
        super().__init__(
            f"{self.summary} -> {hint}",
            code=code,
            problems=[Problem(str(path), cause, hint=hint, code=code)],
        )

    def message_text(self) -> str:
        return self.summary


_REBUILD_HINT = (
    "the cache only saves embedding work: delete {path} (and {path}-wal, {path}-shm if they "
    "exist) and run the command again, it is rebuilt as texts are embedded"
)


def cache_key(identity: str, kind: str, text: str) -> str:
    # JSON framing keeps the three parts unambiguous ("a", "b c" != "a b", "c").
    framed = json.dumps([identity, kind, text], ensure_ascii=True)
    return hashlib.sha256(framed.encode("ascii")).hexdigest()


class CachedEmbedder:
    """Wraps `inner`; passages are cached, queries are not (they are rarely repeated).

    Counters for reports and benchmarks: `hits` = passages read from the file, `misses` =
    passages sent to `inner` (a text repeated within one call is sent once).
    """

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.hits = 0
        self.misses = 0
        try:
            # Autocommit mode: every write below opens its own explicit transaction.
            self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            mode = enable_wal(self._db, BUSY_TIMEOUT_SECONDS)
            self._db.execute(_SCHEMA)
        except sqlite3.Error as exc:
            raise self._fail(
                f"cannot open the cache ({exc})",
                "check the file's permissions; if it is damaged ('file is not a database'), "
                + _REBUILD_HINT.format(path=path),
            ) from exc
        if str(mode).lower() != "wal":
            raise self._fail(
                f"SQLite refused WAL mode (journal_mode is {mode!r}), needed for safe sharing "
                "between processes",
                "put the cache on a local file system",
            )

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_query(self, text: str) -> Vectors:
        return self.inner.embed_query(text)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        items = list(texts)
        identity = self.inner.identity
        keys = [cache_key(identity, "passage", t) for t in items]
        stored = self._load(sorted(set(keys)))
        missing: dict[str, str] = {}  # key -> text, first occurrence order, each key once
        for key, text in zip(keys, items, strict=True):
            if key not in stored and key not in missing:
                missing[key] = text
        fresh: dict[str, Vectors] = {}
        if missing:
            vectors = self.inner.embed_passages(list(missing.values()))
            if vectors.shape != (len(missing), self.inner.dim):
                # Checked before storing: a bad row would otherwise be served forever.
                raise self._fail(
                    f"{self.inner.identity} returned shape {vectors.shape} for "
                    f"{len(missing)} texts of dimension {self.inner.dim}",
                    "this is a bug in that embedder; nothing was cached",
                    code=EmbedderError.code,
                )
            fresh = dict(zip(missing, vectors, strict=True))
            self._store(fresh)
        dim = self.inner.dim
        out = np.empty((len(items), dim), dtype=np.float32)
        for row, key in enumerate(keys):
            if key in fresh:
                out[row] = fresh[key]
            else:
                out[row] = self._decode(key, stored[key], dim)
        self.hits += len(items) - sum(1 for k in keys if k in fresh)
        self.misses += len(missing)
        return out

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> CachedEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- storage ----------------------------------------------------------------------

    def _fail(self, cause: str, hint: str, code: str | None = None) -> EmbeddingCacheError:
        return EmbeddingCacheError(self.path, cause, hint, code or EmbeddingCacheError.code)

    def _load(self, keys: list[str]) -> dict[str, tuple[int, bytes]]:
        found: dict[str, tuple[int, bytes]] = {}
        try:
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, dim, data FROM vectors WHERE key IN ({marks})", chunk
                )
                for key, dim, data in rows:
                    found[key] = (dim, data)
        except sqlite3.Error as exc:
            raise self._fail(f"cannot read ({exc})", _REBUILD_HINT.format(path=self.path)) from exc
        return found

    def _store(self, vectors: dict[str, Vectors]) -> None:
        rows = [
            (key, int(vec.shape[0]), np.ascontiguousarray(vec, dtype=_DTYPE).tobytes())
            for key, vec in vectors.items()
        ]
        try:
            # IMMEDIATE takes the write lock up front, so a concurrent writer waits (busy
            # timeout) instead of failing halfway through the transaction.
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors (key, dim, data) VALUES (?, ?, ?)", rows
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._fail(
                f"cannot write {len(rows)} vectors ({exc})",
                "check disk space and permissions; another process may hold the lock",
                code="embedding_cache_unwritable",
            ) from exc

    def _decode(self, key: str, entry: tuple[int, bytes], dim: int) -> Vectors:
        stored_dim, data = entry
        if stored_dim != dim or len(data) != dim * _DTYPE.itemsize:
            raise self._fail(
                f"entry {key[:12]}… has dimension {stored_dim} ({len(data)} bytes) but "
                f"{self.inner.identity} returns dimension {dim}: the model changed under the "
                "same identity",
                "delete the cache file and rebuild the index",
                code="embedding_cache_stale",
            )
        return np.frombuffer(data, dtype=_DTYPE).astype(np.float32)
