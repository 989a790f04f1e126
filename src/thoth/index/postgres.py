"""PostgreSQL + pgvector adapter: the same collection layout as the Qdrant adapters, in tables of
one schema that belongs to one workspace.

Layout in the schema `[index].schema`:

    thoth_meta            key -> value: which workspace owns the schema, the layout's format
    thoth_generations     gen_id, status ('building' | 'sealed'), dim, tag (the tables' number)
    g<tag>_points         id uuid, dense vector(dim), payload jsonb, the sparse vector's arrays
    g<tag>_bm25           term, id, weight: the BM25 postings
    g<tag>_df             term, df: each term's document frequency, counted when sealed
    thoth_live            name, tag, dim, meta: the live collections (e.g. memory)
    l<tag>_points/_bm25   a live collection's tables

A generation's tables are created with its 'building' row in one transaction and read by nobody;
sealing builds the HNSW index (cosine) and the postings index, then flips the row to 'sealed' in
one transaction: readable all at once. A sealed generation is opened on a read-only session.

Scores are those of the Qdrant adapters: dense = cosine similarity (1 - pgvector's cosine
distance); BM25 = the dot product of the document's stored weights and the query's weights
times Qdrant's IDF, ln((N - df + 0.5) / (df + 0.5) + 1), N the points holding a non-empty
sparse vector and df those holding the term, counted live (Qdrant Edge counts a deleted point
until the shard is reopened; a sealed generation has none). Points whose BM25 score is 0 are
not returned, as in Qdrant.

The dense branch is exact up to EXACT_BELOW points (as Qdrant Edge, which never HNSW-indexes a
shard), through the HNSW index above. pgvector before 0.8 filters an HNSW scan's candidates
after the scan (no iterative scan), so a
filtered query can come back short: `hnsw.ef_search` is at least Qdrant's default search ef
(100) and at least the limit, and when the index
still returns fewer than `limit` rows while more match the filter, the query runs again exactly
with index scans off. Never a silently short answer.
"""

from __future__ import annotations

import json
import math
import re
import struct
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb

from thoth.index.base import (
    Hit,
    IndexConfigError,
    IndexRecord,
    IndexStore,
    IndexUnavailable,
    SparseVec,
    Where,
    where_conditions,
)
from thoth.index.fusion import FusedBranches

FORMAT: Final = 1  # the layout's version, recorded in thoth_meta
MIN_PGVECTOR: Final = (0, 5, 0)  # HNSW indexes arrived in pgvector 0.5.0
MAX_HNSW_DIM: Final = 2000  # pgvector's HNSW limit for `vector`
EF_SEARCH_MAX: Final = 1000  # pgvector's upper bound of hnsw.ef_search
EXACT_BELOW: Final = 20_000  # points: below, the dense branch is exact (see query_dense)
EF_SEARCH_MIN: Final = 100  # Qdrant's default search ef (its ef_construct); pgvector's is 40
HNSW_M: Final = 16  # Qdrant's defaults: m = 16, ef_construct = 100
HNSW_EF_CONSTRUCTION: Final = 100
PAGE: Final = 256  # points per scroll page
_GEN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class PgvectorMissing(IndexUnavailable):
    """The server has no pgvector extension to load."""

    code = "pgvector_missing"


class PgvectorNotPermitted(IndexUnavailable):
    """pgvector is installed on the server but not created in the database, and this role may
    not create it."""

    code = "pgvector_not_permitted"


class PgvectorTooOld(IndexUnavailable):
    """The database's pgvector is older than the HNSW index needs."""

    code = "pgvector_too_old"


class IndexSchemaForeign(IndexConfigError):
    """The schema holds another workspace's index (or tables that are not Thoth's)."""

    code = "index_schema_foreign"


class IndexDimensionMismatch(IndexConfigError):
    """Vectors of another dimension than the stored ones: nothing was written or read."""

    code = "index_dimension_mismatch"


def redact(url: str) -> str:
    """The URL fit for messages: the password replaced by ***."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)
    shown = {k: ("***" if k == "password" else v) for k, v in parts.items() if v is not None}
    return make_conninfo(**{k: str(v) for k, v in shown.items()})


def libpq_url(url: str) -> str:
    """A SQLAlchemy-style URL (`postgresql+psycopg://`, as `[state].url` takes) for libpq."""
    return re.sub(r"^postgres(ql)?\+\w+://", "postgresql://", url)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def _vector_text(values: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def _unit(values: Sequence[float]) -> list[float]:
    """The vector as a cosine collection of Qdrant stores it: scaled to length 1 in float32,
    kept as it is when its length is 0 or already 1 within 1e-6 (Qdrant's rule: a copy of
    stored vectors stays bit for bit). Scores do not change; scroll returns what Qdrant's
    does."""
    import numpy as np  # only where vectors are written: reading an index does not load it

    v = np.asarray(values, dtype=np.float32)
    norm = np.float32(np.sqrt(np.sum(v * v)))
    if norm < np.finfo(np.float32).eps or abs(float(norm) - 1.0) <= 1e-6:
        kept: list[float] = v.tolist()
        return kept
    unit: list[float] = (v / norm).tolist()
    return unit


def _cause(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


# ---------------------------------------------------------------------- connections


class Database:
    """One connection to the index's schema, checked at open: pgvector present (created if
    the role may), recent enough, the schema owned by `workspace`. Operations hold a lock: a
    connection runs one transaction at a time, and service threads share stores."""

    def __init__(self, url: str, schema: str, workspace: str, *, read_only: bool = False) -> None:
        if not _IDENT.match(schema):
            raise IndexConfigError(
                f"[index].schema {schema!r}: lower-case letters, digits and _ only, at most 63 "
                "characters, not starting with a digit -> fix it in thoth.toml"
            )
        self.schema = schema
        self.workspace = workspace
        self.where = f"PostgreSQL {redact(url)} schema {schema!r}"
        self._url = url
        self._read_only = read_only
        self._lock = threading.RLock()
        self._closed = False
        self.conn = self._connect()

    def _connect(self) -> psycopg.Connection[Any]:
        """A new checked connection (at open, and after the previous one broke)."""
        try:
            self.conn = psycopg.connect(libpq_url(self._url), autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise IndexUnavailable(
                f"{self.where}: cannot connect ({_cause(exc)}) -> check [index].url (or the "
                "variable [index].url_env names) and that the server is up"
            ) from exc
        try:
            ext_schema = self._check_pgvector()
            self.conn.execute(
                "SELECT set_config('search_path', %s, false)",
                [
                    sql.SQL(", ")
                    .join([sql.Identifier(self.schema), sql.Identifier(ext_schema)])
                    .as_string(self.conn)
                ],
            )
            self._claim_schema()
            if self._read_only:
                self.conn.execute("SET default_transaction_read_only = on")
        except BaseException:
            self.conn.close()
            raise
        return self.conn

    def _check_pgvector(self) -> str:
        """The schema pgvector lives in, after creating it if this role may; a coded refusal
        saying what to do otherwise."""
        try:
            row = self.conn.execute(
                "SELECT e.extversion, n.nspname FROM pg_extension e "
                "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
            ).fetchone()
            if row is None:
                available = self.conn.execute(
                    "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
                ).fetchone()
                if available is None:
                    raise PgvectorMissing(
                        f"{self.where}: the server has no pgvector extension -> install "
                        "pgvector >= 0.5.0 on the PostgreSQL server (e.g. the package "
                        "postgresql-16-pgvector), then run CREATE EXTENSION vector in this "
                        "database as its owner or a superuser"
                    )
                try:
                    self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except psycopg.errors.InsufficientPrivilege as exc:
                    raise PgvectorNotPermitted(
                        f"{self.where}: pgvector is installed on the server but not created in "
                        f"this database, and this role may not create it ({_cause(exc)}) -> "
                        "ask the database owner or a superuser to run CREATE EXTENSION vector "
                        "in this database"
                    ) from exc
                row = self.conn.execute(
                    "SELECT e.extversion, n.nspname FROM pg_extension e "
                    "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
                ).fetchone()
                assert row is not None  # just created
        except psycopg.Error as exc:
            raise IndexUnavailable(
                f"{self.where}: cannot check the pgvector extension ({_cause(exc)})"
            ) from exc
        version, ext_schema = str(row[0]), str(row[1])
        if _version(version) < MIN_PGVECTOR:
            raise PgvectorTooOld(
                f"{self.where}: pgvector {version} has no HNSW index (needs >= "
                f"{'.'.join(map(str, MIN_PGVECTOR))}) -> upgrade pgvector on the server, then "
                "run ALTER EXTENSION vector UPDATE in this database"
            )
        return ext_schema

    def _claim_schema(self) -> None:
        """Create the schema and its registry tables for `workspace`, or check that it owns
        them; serialised between hosts by an advisory lock on the schema's name."""
        s = sql.Identifier(self.schema)
        try:
            with self.conn.transaction():
                self.conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtext('thoth_index:' || %s))", [self.schema]
                )
                tables = {
                    str(r[0])
                    for r in self.conn.execute(
                        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                        [self.schema],
                    )
                }
                if "thoth_meta" in tables:
                    meta: dict[str, str] = dict(
                        self.conn.execute(
                            sql.SQL("SELECT key, value FROM {}.thoth_meta").format(s)
                        ).fetchall()
                    )
                    owner = meta.get("workspace")
                    if owner != self.workspace:
                        raise IndexSchemaForeign(
                            f"{self.where}: the schema holds the index of workspace {owner!r}, "
                            f"not {self.workspace!r}; nothing was changed -> give this "
                            "workspace its own [index].schema"
                        )
                    if meta.get("format") != str(FORMAT):
                        raise IndexConfigError(
                            f"{self.where}: index layout format {meta.get('format')!r}, this "
                            f"release reads {FORMAT} -> upgrade Thoth or rebuild the index in "
                            "a new schema"
                        )
                    return
                if tables:
                    raise IndexSchemaForeign(
                        f"{self.where}: the schema holds tables that are not a Thoth index "
                        f"({', '.join(sorted(tables)[:5])}); nothing was changed -> name an "
                        "empty or new schema in [index].schema"
                    )
                self.conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(s))
                self.conn.execute(
                    sql.SQL(
                        "CREATE TABLE {}.thoth_meta (key text PRIMARY KEY, value text NOT NULL)"
                    ).format(s)
                )
                self.conn.execute(
                    sql.SQL(
                        "INSERT INTO {}.thoth_meta VALUES ('workspace', %s), ('format', %s)"
                    ).format(s),
                    [self.workspace, str(FORMAT)],
                )
                self.conn.execute(
                    sql.SQL(
                        "CREATE TABLE {}.thoth_generations (gen_id text PRIMARY KEY, "
                        "tag bigserial UNIQUE, status text NOT NULL CHECK (status IN "
                        "('building', 'sealed')), dim int NOT NULL, "
                        "created_at timestamptz NOT NULL DEFAULT now(), sealed_at timestamptz)"
                    ).format(s)
                )
                self.conn.execute(
                    sql.SQL(
                        "CREATE TABLE {}.thoth_live (name text PRIMARY KEY, tag bigserial UNIQUE, "
                        "dim int NOT NULL, meta jsonb NOT NULL, created_at timestamptz NOT NULL "
                        "DEFAULT now())"
                    ).format(s)
                )
        except psycopg.errors.InsufficientPrivilege as exc:
            raise IndexUnavailable(
                f"{self.where}: this role may not create the schema or its tables "
                f"({_cause(exc)}) -> grant it CREATE on the database (or create the schema "
                "and grant it ownership)"
            ) from exc
        except psycopg.Error as exc:
            raise IndexUnavailable(f"{self.where}: cannot open the schema ({_cause(exc)})") from exc

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self._lock:
            self._alive()
            yield

    def _alive(self) -> None:
        """A connection that broke (server restarted, failover, connection killed) failed the
        call that found it broken, as IndexUnavailable; the next call reconnects."""
        if self.conn.closed and not self._closed:
            self._connect()

    @contextmanager
    def tx(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        """One transaction under the lock; a database fault is IndexUnavailable naming `what`."""
        with self._lock:
            self._alive()
            try:
                with self.conn.transaction():
                    yield self.conn
            except psycopg.Error as exc:
                raise IndexUnavailable(f"{self.where}: {what} failed ({_cause(exc)})") from exc

    def table(self, name: str) -> sql.Identifier:
        return sql.Identifier(self.schema, name)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.conn.close()


# ---------------------------------------------------------------------- filters


def _contains(key: str, value: str | int) -> sql.Composable:
    """Qdrant's match of one value: the field equals it, or is a list holding it."""
    return sql.SQL("(payload @> {} OR payload @> {})").format(
        sql.Literal(Jsonb({key: value})), sql.Literal(Jsonb({key: [value]}))
    )


def _condition(key: str, value: str | int | list[str]) -> sql.Composable:
    values: list[str | int] = list(value) if isinstance(value, list) else [value]
    if not values:
        return sql.SQL("FALSE")  # Qdrant's MatchAny([]) matches nothing
    return sql.SQL("({})").format(sql.SQL(" OR ").join(_contains(key, v) for v in values))


def where_sql(where: Where | None) -> sql.Composable:
    """`where` in SQL on the `payload` column, with Qdrant's semantics: a list is any-of, a
    Match's none_of and an Exclude are must-not (a record without the field passes them), a
    record without the field fails every must."""
    if not where:
        return sql.SQL("TRUE")
    must, must_not = where_conditions(where)
    parts = [_condition(k, v) for k, v in must]
    parts += [sql.SQL("NOT {}").format(_condition(k, v)) for k, v in must_not]
    return sql.SQL(" AND ").join(parts)


# ---------------------------------------------------------------------- the store


def _float32(values: Sequence[float]) -> list[float]:
    """Each value rounded to the float32 PostgreSQL stored (its text form is the shortest
    decimal that reads back to it)."""
    return list(struct.unpack(f"{len(values)}f", struct.pack(f"{len(values)}f", *values)))


def _sorted_sparse(indices: Sequence[int], values: Sequence[float]) -> SparseVec:
    """A stored sparse vector as Qdrant returns one: sorted by index, float32 values."""
    pairs = sorted(zip(indices, _float32(values), strict=True))
    return SparseVec([int(i) for i, _ in pairs], [float(v) for _, v in pairs])


def _hit(row: Sequence[Any]) -> Hit:
    return Hit(id=str(row[0]), score=float(row[1]), payload=dict(row[2] or {}))


def _ordered(hits: list[Hit]) -> list[Hit]:
    return sorted(hits, key=lambda h: (-h.score, h.id))


class PostgresStore(FusedBranches):
    """One collection: the tables `<prefix>_points` and `<prefix>_bm25` of `db`'s schema.
    `writable=False`: a sealed generation (its session is read-only, N is counted once)."""

    def __init__(
        self, db: Database, prefix: str, dim: int, *, writable: bool, owns_db: bool = True
    ) -> None:
        self.db = db
        self.dim = dim
        self.points = db.table(f"{prefix}_points")
        self.bm25 = db.table(f"{prefix}_bm25")
        self.df = db.table(f"{prefix}_df")  # a sealed generation's document frequencies
        self.prefix = prefix
        self.where = f"{db.where} table {prefix}_points"
        self._writable = writable
        self._owns_db = owns_db
        self._sparse_n: int | None = None  # cached for a sealed generation only
        self._points_n: int | None = None  # idem

    # ------------------------------------------------------------ tables

    @staticmethod
    def create_tables(conn: psycopg.Connection[Any], db: Database, prefix: str, dim: int) -> None:
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} (id uuid PRIMARY KEY, dense vector({}) NOT NULL, "
                "payload jsonb NOT NULL, sparse_indices int4[], sparse_values float4[])"
            ).format(db.table(f"{prefix}_points"), sql.Literal(dim))
        )
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} (term int4 NOT NULL, id uuid NOT NULL, weight float4 NOT NULL)"
            ).format(db.table(f"{prefix}_bm25"))
        )

    def create_search_indexes(self) -> None:
        """The HNSW index (cosine) and the postings' indexes; idempotent. Built after a
        generation's bulk load (faster than growing them row by row)."""
        with self.db.tx("creating the search indexes") as conn:
            self.search_indexes(conn, self.db, self.prefix)

    @staticmethod
    def search_indexes(conn: psycopg.Connection[Any], db: Database, prefix: str) -> None:
        conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
        conn.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (dense vector_cosine_ops) "
                "WITH (m = {}, ef_construction = {})"
            ).format(
                sql.Identifier(f"{prefix}_hnsw"),
                db.table(f"{prefix}_points"),
                sql.Literal(HNSW_M),
                sql.Literal(HNSW_EF_CONSTRUCTION),
            )
        )
        conn.execute(
            sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (term, id) INCLUDE (weight)").format(
                sql.Identifier(f"{prefix}_bm25_term"), db.table(f"{prefix}_bm25")
            )
        )
        conn.execute(
            sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (id)").format(
                sql.Identifier(f"{prefix}_bm25_id"), db.table(f"{prefix}_bm25")
            )
        )

    def finish(self) -> None:
        """Before sealing: each term's document frequency in `<prefix>_df` (a sealed
        generation never changes: a query reads df there instead of counting postings), then
        VACUUM ANALYZE, so the planner knows the tables and postings are read from the index
        alone."""
        with self.db.tx("counting the BM25 document frequencies") as conn:
            conn.execute(
                sql.SQL(
                    "CREATE TABLE {} AS SELECT term, count(*)::int4 AS df FROM {} GROUP BY term"
                ).format(self.df, self.bm25)
            )
            conn.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (term)").format(self.df))
        with self.db.locked():  # VACUUM runs outside a transaction
            for table in (self.points, self.bm25, self.df):
                try:
                    self.db.conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(table))
                except psycopg.Error as exc:
                    raise IndexUnavailable(
                        f"{self.where}: VACUUM ANALYZE failed ({_cause(exc)})"
                    ) from exc

    # ------------------------------------------------------------ IndexStore

    def create_payload_indexes(self, fields: Sequence[str]) -> None:
        """One GIN index on the payload serves every field's containment test."""
        if not fields:
            return
        self._require_writable("create payload indexes")
        with self.db.tx("creating the payload index") as conn:
            self.payload_index(conn, self.db, self.prefix)

    @staticmethod
    def payload_index(conn: psycopg.Connection[Any], db: Database, prefix: str) -> None:
        conn.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON {} USING gin (payload jsonb_path_ops)"
            ).format(sql.Identifier(f"{prefix}_payload"), db.table(f"{prefix}_points"))
        )

    def _require_writable(self, what: str) -> None:
        if not self._writable:
            raise IndexUnavailable(f"{self.where}: a sealed generation is read-only; cannot {what}")

    def _check_dim(self, vector: Sequence[float], what: str) -> None:
        if len(vector) != self.dim:
            raise IndexDimensionMismatch(
                f"{self.where}: {what} has dimension {len(vector)}, the stored vectors "
                f"{self.dim}; nothing was changed -> use the embedder the index was built "
                "with, or rebuild the index with the new one"
            )

    def upsert(self, records: Sequence[IndexRecord]) -> None:
        if not records:
            return
        self._require_writable("write")
        for r in records:  # all checked before anything is written
            self._check_dim(r.dense, f"record {r.id}")
        last = {r.id: r for r in records}  # a repeated id: the last one wins, as in Qdrant
        ids = list(last)
        with self.db.tx(f"writing {len(ids)} records") as conn:
            # Replaced points: found by primary key, so that a generation being built (whose
            # postings get their indexes when sealed) is never scanned for new ids.
            present = [
                str(row[0])
                for row in conn.execute(
                    sql.SQL("SELECT id FROM {} WHERE id = ANY(%s::uuid[])").format(self.points),
                    [ids],
                )
            ]
            if present:
                for table in (self.bm25, self.points):
                    conn.execute(
                        sql.SQL("DELETE FROM {} WHERE id = ANY(%s::uuid[])").format(table),
                        [present],
                    )
            with conn.cursor().copy(
                sql.SQL(
                    "COPY {} (id, dense, payload, sparse_indices, sparse_values) FROM STDIN"
                ).format(self.points)
            ) as copy:
                for r in last.values():
                    copy.write_row(
                        (
                            r.id,
                            _vector_text(_unit(r.dense)),
                            json.dumps(r.payload),
                            None if r.sparse is None else list(r.sparse.indices),
                            None if r.sparse is None else [float(v) for v in r.sparse.values],
                        )
                    )
            with conn.cursor().copy(
                sql.SQL("COPY {} (term, id, weight) FROM STDIN").format(self.bm25)
            ) as copy:
                for r in last.values():
                    if r.sparse is None:
                        continue
                    for term, weight in zip(r.sparse.indices, r.sparse.values, strict=True):
                        copy.write_row((term, r.id, float(weight)))

    def query_dense(self, dense: Sequence[float], where: Where, limit: int) -> list[Hit]:
        self._check_dim(dense, "the query vector")
        if limit <= 0:
            return []
        cond = where_sql(where)
        q = _vector_text(dense)
        nearest = sql.SQL(
            "SELECT id, 1 - (dense <=> %(q)s::vector) AS score, payload FROM {} WHERE {} "
            "ORDER BY dense <=> %(q)s::vector LIMIT %(limit)s"
        ).format(self.points, cond)
        params = {"q": q, "limit": limit}
        with self.db.tx("a dense query") as conn:
            # Up to EXACT_BELOW points, exact: the same ranks as Qdrant Edge (which never
            # HNSW-indexes a shard) for the workspaces most run, at a few milliseconds.
            exact = limit > EF_SEARCH_MAX or self._size(conn) < EXACT_BELOW
            if exact:
                conn.execute("SET LOCAL enable_indexscan = off")
            else:
                conn.execute(
                    sql.SQL("SET LOCAL hnsw.ef_search = {}").format(
                        sql.Literal(max(EF_SEARCH_MIN, limit))
                    )
                )
            rows = conn.execute(nearest, params).fetchall()
            if len(rows) < limit and not exact:
                # The HNSW scan filters after the fact: were matching rows left out?
                matching = conn.execute(
                    sql.SQL(
                        "SELECT count(*) FROM (SELECT 1 FROM {} WHERE {} LIMIT %s) AS m"
                    ).format(self.points, cond),
                    [limit],
                ).fetchone()
                if matching is not None and int(matching[0]) > len(rows):
                    conn.execute("SET LOCAL enable_indexscan = off")
                    rows = conn.execute(nearest, params).fetchall()
        return _ordered([_hit(r) for r in rows])

    def _size(self, conn: psycopg.Connection[Any]) -> int:
        """The points held: counted once for a sealed generation, at each query else."""
        if self._points_n is not None:
            return self._points_n
        row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(self.points)).fetchone()
        n = int(row[0]) if row else 0
        if not self._writable:
            self._points_n = n
        return n

    def _n_sparse(self, conn: psycopg.Connection[Any]) -> int:
        if self._sparse_n is not None:
            return self._sparse_n
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {} WHERE cardinality(sparse_indices) > 0").format(
                self.points
            )
        ).fetchone()
        n = int(row[0]) if row else 0
        if not self._writable:
            self._sparse_n = n  # a sealed generation never changes
        return n

    def query_sparse(self, sparse: SparseVec, where: Where, limit: int) -> list[Hit]:
        if not sparse.indices or limit <= 0:
            return []
        cond = where_sql(where)
        with self.db.tx("a BM25 query") as conn:
            n = self._n_sparse(conn)
            counted = (
                sql.SQL("SELECT term, df FROM {} WHERE term = ANY(%s::int4[])").format(self.df)
                if not self._writable
                else sql.SQL(
                    "SELECT term, count(*) FROM {} WHERE term = ANY(%s::int4[]) GROUP BY term"
                ).format(self.bm25)
            )
            df = dict(conn.execute(counted, [list(sparse.indices)]).fetchall())
            terms, weights = [], []
            for term, value in zip(sparse.indices, sparse.values, strict=True):
                d = int(df.get(term, 0))
                if d == 0:
                    continue  # no posting holds it: it adds nothing
                terms.append(int(term))
                weights.append(float(value) * math.log((n - d + 0.5) / (d + 0.5) + 1.0))
            if not terms:
                return []
            rows = conn.execute(
                sql.SQL(
                    # Scores from the postings alone, best first; then each candidate's point,
                    # by primary key and in that order, until `limit` pass the filter: the
                    # filter reads a payload only while the answer is still short.
                    "WITH q AS (SELECT * FROM unnest(%(terms)s::int4[], %(weights)s::float8[]) "
                    "AS q(term, w)), s AS (SELECT b.id, sum(q.w * b.weight) AS score FROM {bm25} b "
                    "JOIN q ON q.term = b.term GROUP BY b.id) "
                    "SELECT c.id, c.score, p.payload FROM (SELECT id, score FROM s "
                    "WHERE score <> 0 ORDER BY score DESC, id) AS c CROSS JOIN LATERAL "
                    "(SELECT payload FROM {points} WHERE id = c.id AND {cond}) AS p "
                    "ORDER BY c.score DESC, c.id LIMIT %(limit)s"
                ).format(bm25=self.bm25, points=self.points, cond=cond),
                {"terms": terms, "weights": weights, "limit": limit},
            ).fetchall()
        return [_hit(r) for r in rows]

    def count(self, where: Where | None = None) -> int:
        with self.db.tx("counting") as conn:
            row = conn.execute(
                sql.SQL("SELECT count(*) FROM {} WHERE {}").format(self.points, where_sql(where))
            ).fetchone()
        return int(row[0]) if row else 0

    def _records(self, rows: Sequence[Sequence[Any]]) -> list[IndexRecord]:
        return [
            IndexRecord(
                id=str(row[0]),
                # pgvector and float4[] print a float4 in its shortest form: read back as
                # float32, it is the stored value exactly (what Qdrant returns, what a copy
                # compares).
                dense=_float32(json.loads(row[1])),
                sparse=None if row[3] is None else _sorted_sparse(row[3], row[4]),
                payload=dict(row[2] or {}),
            )
            for row in rows
        ]

    def scroll(self, where: Where | None = None) -> Iterator[IndexRecord]:
        cond = where_sql(where)
        after: str | None = None
        while True:
            with self.db.tx("scrolling") as conn:
                rows = conn.execute(
                    sql.SQL(
                        "SELECT id, dense::text, payload, sparse_indices, sparse_values FROM {} "
                        "WHERE {} AND (%(after)s::uuid IS NULL OR id > %(after)s::uuid) "
                        "ORDER BY id LIMIT %(page)s"
                    ).format(self.points, cond),
                    {"after": after, "page": PAGE},
                ).fetchall()
            yield from self._records(rows)
            if len(rows) < PAGE:
                return
            after = str(rows[-1][0])

    def flush(self) -> None:
        """Every write is committed by the statement that made it."""

    def close(self) -> None:
        if self._owns_db:
            self.db.close()


class PostgresLiveStore(PostgresStore):
    def payloads(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        if not ids:
            return []
        with self.db.tx("reading payloads") as conn:
            rows = conn.execute(
                sql.SQL("SELECT payload FROM {} WHERE id = ANY(%s::uuid[]) ORDER BY id").format(
                    self.points
                ),
                [list(ids)],
            ).fetchall()
        return [dict(r[0] or {}) for r in rows]

    def all_payloads(self) -> Iterator[dict[str, Any]]:
        for rec in self.scroll():
            yield rec.payload

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self.db.tx(f"deleting {len(ids)} records") as conn:
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE id = ANY(%s::uuid[])").format(self.bm25), [list(ids)]
            )
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE id = ANY(%s::uuid[])").format(self.points),
                [list(ids)],
            )


# ---------------------------------------------------------------------- generations


def _check_gen_id(gen_id: str) -> str:
    if not _GEN_ID.match(gen_id):
        raise IndexConfigError(f"generation id {gen_id!r}: letters, digits, _ and - only")
    return gen_id


class PostgresBackend:
    """The generations of one workspace in one schema (see the module's docstring)."""

    name = "postgres"

    def __init__(self, url: str, schema: str, workspace: str) -> None:
        self.url = url
        self.schema = schema
        self.workspace = workspace
        self.db = Database(url, schema, workspace)
        self.registry = self.db.table("thoth_generations")

    def _row(self, gen_id: str) -> tuple[int, str, int] | None:
        with self.db.tx(f"reading generation {gen_id}") as conn:
            row = conn.execute(
                sql.SQL("SELECT tag, status, dim FROM {} WHERE gen_id = %s").format(self.registry),
                [gen_id],
            ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]), int(row[2]))

    def create(self, gen_id: str, dim: int) -> IndexStore:
        _check_gen_id(gen_id)
        if not 1 <= dim <= MAX_HNSW_DIM:
            raise IndexDimensionMismatch(
                f"{self.db.where}: dimension {dim}: pgvector's HNSW index takes 1 to "
                f"{MAX_HNSW_DIM} dimensions -> use an embedder with fewer dimensions (or the "
                "Qdrant backends)"
            )
        with self.db.tx(f"creating generation {gen_id}") as conn:
            exists = conn.execute(
                sql.SQL("SELECT 1 FROM {} WHERE gen_id = %s").format(self.registry), [gen_id]
            ).fetchone()
            if exists:
                raise IndexConfigError(
                    f"{self.db.where}: generation {gen_id} already exists; refusing to overwrite it"
                )
            row = conn.execute(
                sql.SQL(
                    "INSERT INTO {} (gen_id, status, dim) VALUES (%s, 'building', %s) RETURNING tag"
                ).format(self.registry),
                [gen_id, dim],
            ).fetchone()
            assert row is not None
            PostgresStore.create_tables(conn, self.db, f"g{row[0]}", dim)
        return PostgresStore(
            Database(self.url, self.schema, self.workspace), f"g{row[0]}", dim, writable=True
        )

    def seal(self, gen_id: str, store: IndexStore) -> dict[str, Any]:
        if not isinstance(store, PostgresStore):
            raise TypeError(f"not a PostgreSQL store: {store!r}")
        store.create_search_indexes()
        store.finish()
        store.close()
        with self.db.tx(f"sealing generation {gen_id}") as conn:
            done = conn.execute(
                sql.SQL(
                    "UPDATE {} SET status = 'sealed', sealed_at = now() "
                    "WHERE gen_id = %s AND status = 'building'"
                ).format(self.registry),
                [gen_id],
            )
            if done.rowcount != 1:
                raise IndexUnavailable(
                    f"{self.db.where}: generation {gen_id} is not being built here (dropped "
                    "meanwhile?); nothing was sealed"
                )
        return {}  # the reader checks the sealed counts per kind

    def open(self, gen_id: str, sealed: Mapping[str, Any] | None = None) -> IndexStore:
        row = self._row(gen_id)
        if row is None or row[1] != "sealed":
            raise IndexUnavailable(
                f"{self.db.where}: generation {gen_id} has no sealed tables "
                f"({'still being built' if row else 'dropped or never built'})"
            )
        tag, _, dim = row
        return PostgresStore(
            Database(self.url, self.schema, self.workspace, read_only=True),
            f"g{tag}",
            dim,
            writable=False,
        )

    def _drop_rows(self, conn: psycopg.Connection[Any], gen_ids: Sequence[str]) -> None:
        for gen_id in gen_ids:
            row = conn.execute(
                sql.SQL("DELETE FROM {} WHERE gen_id = %s RETURNING tag").format(self.registry),
                [gen_id],
            ).fetchone()
            if row is not None:
                for suffix in ("points", "bm25", "df"):
                    conn.execute(
                        sql.SQL("DROP TABLE IF EXISTS {}").format(
                            self.db.table(f"g{row[0]}_{suffix}")
                        )
                    )

    def drop(self, gen_id: str) -> None:
        with self.db.tx(f"dropping generation {gen_id}") as conn:
            self._drop_rows(conn, [gen_id])

    def sealed(self) -> list[str]:
        with self.db.tx("listing the sealed generations") as conn:
            rows = conn.execute(
                sql.SQL("SELECT gen_id FROM {} WHERE status = 'sealed' ORDER BY gen_id").format(
                    self.registry
                )
            ).fetchall()
        return [str(r[0]) for r in rows]

    def discard_unsealed(self) -> list[str]:
        with self.db.tx("discarding unsealed generations") as conn:
            ids = [
                str(r[0])
                for r in conn.execute(
                    sql.SQL(
                        "SELECT gen_id FROM {} WHERE status = 'building' ORDER BY gen_id FOR UPDATE"
                    ).format(self.registry)
                ).fetchall()
            ]
            self._drop_rows(conn, ids)
        return ids

    def close(self) -> None:
        self.db.close()


# ---------------------------------------------------------------------- live collections


class PostgresLiveCollection:
    """The live collection `name` of the schema: its row in thoth_live (dimension and the
    caller's metadata) and its tables `l<tag>_points` / `l<tag>_bm25`, created in one
    transaction. PostgreSQL serialises writes; there is no lock to take. Several hosts share
    it."""

    def __init__(self, url: str, schema: str, workspace: str, name: str) -> None:
        self.url = url
        self.schema = schema
        self.workspace = workspace
        self.name = name
        self.db = Database(url, schema, workspace)
        self.registry = self.db.table("thoth_live")
        self.where = f"{self.db.where} live collection {name!r}"

    def _row(self) -> tuple[int, int, dict[str, Any]] | None:
        with self.db.tx(f"reading live collection {self.name}") as conn:
            row = conn.execute(
                sql.SQL("SELECT tag, dim, meta FROM {} WHERE name = %s").format(self.registry),
                [self.name],
            ).fetchone()
        return None if row is None else (int(row[0]), int(row[1]), dict(row[2]))

    def exists(self) -> bool:
        return self._row() is not None

    @contextmanager
    def locked(self, *, exclusive: bool) -> Iterator[None]:
        """PostgreSQL serialises writes itself: nothing to lock."""
        yield

    def create(self, dim: int, payload_indexes: Sequence[str], meta: Mapping[str, Any]) -> None:
        if not 1 <= dim <= MAX_HNSW_DIM:
            raise IndexDimensionMismatch(
                f"{self.where}: dimension {dim}: pgvector's HNSW index takes 1 to "
                f"{MAX_HNSW_DIM} dimensions -> use an embedder with fewer dimensions"
            )
        with self.db.tx(f"creating live collection {self.name}") as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext('thoth_live:' || %s || %s))",
                [self.schema, self.name],
            )
            row = conn.execute(
                sql.SQL(
                    "INSERT INTO {} (name, dim, meta) VALUES (%s, %s, %s) "
                    "ON CONFLICT (name) DO NOTHING RETURNING tag"
                ).format(self.registry),
                [self.name, dim, Jsonb(dict(meta))],
            ).fetchone()
            if row is None:
                return  # another host created it meanwhile; meta() checks what it holds
            prefix = f"l{row[0]}"
            # Tables and indexes with the row, in one transaction: complete or absent.
            PostgresStore.create_tables(conn, self.db, prefix, dim)
            PostgresStore.search_indexes(conn, self.db, prefix)
            if payload_indexes:
                PostgresStore.payload_index(conn, self.db, prefix)

    def meta(self) -> dict[str, Any]:
        row = self._row()
        if row is None:
            raise IndexUnavailable(f"{self.where}: not created")
        return row[2]

    def open(self) -> PostgresLiveStore:
        row = self._row()
        if row is None:
            raise IndexUnavailable(f"{self.where}: not created")
        tag, dim, _ = row
        return PostgresLiveStore(self.db, f"l{tag}", dim, writable=True, owns_db=False)

    def drop(self) -> bool:
        with self.db.tx(f"dropping live collection {self.name}") as conn:
            row = conn.execute(
                sql.SQL("DELETE FROM {} WHERE name = %s RETURNING tag").format(self.registry),
                [self.name],
            ).fetchone()
            if row is None:
                return False
            for suffix in ("points", "bm25", "df"):
                conn.execute(
                    sql.SQL("DROP TABLE IF EXISTS {}").format(self.db.table(f"l{row[0]}_{suffix}"))
                )
        return True

    def close(self) -> None:
        self.db.close()
