"""Qdrant Edge and PostgreSQL + pgvector side by side on the same synthetic generation: build
time, hybrid query latency (p50/p95) under the product's mandatory filter and under a selective
one, and how far the two agree (dense top 10 overlap, BM25 top 10 scores).

Records, per size: dense = unit vectors of dim 384 drawn around 64 seeded centres (numpy);
BM25 = `Bm25Encoder("it", ...)` of word salads over a 400-word vocabulary with Zipf weights;
payload = the filter fields of an Evidence point (workspace, revision, generation, record_kind,
purposes) plus a `doc_id` shared by 20 records. Queries: 200 vectors drawn like the records, the
BM25 of 3 words each; `query_hybrid` with prefetch 50, limit 10, fused as the product does.

The PostgreSQL server: --url, else a throw-away one from the `pgserver` wheel (PostgreSQL 16,
pgvector 0.6.2) in a temporary directory. Nothing is embedded: this measures the index alone.

Usage:
    .venv/bin/python benchmarks/index_backends.py [--sizes 10000] [--queries 200] [--url URL]
        [--json]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from rich.console import Console
from rich.table import Table

from bench_common import emit, header_line, latency_stats, machine_facts, throwaway_pgvector
from thoth.index.base import Hit, IndexRecord, IndexStore, Where
from thoth.index.bm25 import Bm25Encoder
from thoth.index.generations import EdgeBackend, IndexBackend
from thoth.index.postgres import PostgresBackend, libpq_url

DIM = 384
BATCH = 1000  # as the builder's UPSERT_BATCH
FILTER: Where = {
    "workspace_id": "bench",
    "workspace_revision": "0" * 40,
    "vector_generation": "g",
    "record_kind": "evidence",
    "purposes": "sql_generation",
}
PAYLOAD_INDEXES = [*FILTER, "doc_id"]


def records(n: int, seed: int, bm: Bm25Encoder, vocab: list[str]) -> list[IndexRecord]:
    """`n` records; the same 64 centres whatever the seed (queries are drawn like records)."""
    centres = np.random.default_rng(0).normal(size=(64, DIM))
    rng = np.random.default_rng(seed)
    vectors = centres[rng.integers(0, 64, n)] + 0.25 * rng.normal(size=(n, DIM))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    words = rng.choice(len(vocab), size=(n, 40), p=weights / weights.sum())
    lengths = rng.integers(8, 40, n)
    return [
        IndexRecord(
            str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench#{i}")),
            vectors[i].astype(np.float32).tolist(),
            bm.document(" ".join(vocab[w] for w in words[i, : lengths[i]])),
            {**FILTER, "purposes": ["sql_generation", "disambiguation"], "doc_id": f"d{i // 20}"},
        )
        for i in range(n)
    ]


def build(backend: IndexBackend, recs: list[IndexRecord]) -> tuple[IndexStore, float]:
    start = time.perf_counter()
    store = backend.create("g", DIM)
    for i in range(0, len(recs), BATCH):
        store.upsert(recs[i : i + BATCH])
    store.create_payload_indexes(PAYLOAD_INDEXES)
    backend.seal("g", store)
    seconds = time.perf_counter() - start
    return backend.open("g"), seconds


def timed(store: IndexStore, queries: list[tuple[list[float], Any]], where: Where) -> list[Any]:
    out = []
    for dense, sparse in queries:
        start = time.perf_counter()
        hits = store.query_hybrid(dense, sparse, where, 10, 50)
        out.append((time.perf_counter() - start, hits))
    return out


def overlap(a: list[Hit], b: list[Hit]) -> float:
    return len({h.id for h in a} & {h.id for h in b}) / max(1, len(a))


def disk_mib(name: str, edge_root: Path, url: str, schema: str) -> float:
    """What the sealed generation takes on disk: the Edge shard's files, or every relation of
    the PostgreSQL schema with its indexes and TOAST (pg_total_relation_size)."""
    if name == "edge":
        size = sum(p.stat().st_size for p in (edge_root / "g").rglob("*") if p.is_file())
    else:
        with psycopg.connect(libpq_url(url)) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
                [schema],
            ).fetchone()
        size = int(row[0]) if row else 0
    return round(size / 2**20, 1)


def run(size: int, n_queries: int, url: str) -> dict[str, Any]:
    vocab = [f"parola{i}" for i in range(400)]
    bm = Bm25Encoder("it", 24.0)
    recs = records(size, 1, bm, vocab)
    rng = random.Random(2)
    qvecs = records(n_queries, 99, bm, vocab)
    queries = [(r.dense, bm.query(" ".join(rng.sample(vocab[:200], 3)))) for r in qvecs]
    result: dict[str, Any] = {"size": size}
    with tempfile.TemporaryDirectory() as tmp:
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        backends: dict[str, IndexBackend] = {
            "edge": EdgeBackend(Path(tmp) / "edge"),
            "postgres": PostgresBackend(url, schema, "bench"),
        }
        hits: dict[str, dict[str, list[Any]]] = {}
        for name, backend in backends.items():
            store, seconds = build(backend, recs)
            hits[name] = {
                "mandatory": timed(store, queries, FILTER),
                "selective": timed(store, queries, {**FILTER, "doc_id": ["d3", "d77", "d150"]}),
            }
            dense = [store.query_dense(q[0], FILTER, 10) for q in queries]
            sparse = [store.query_sparse(q[1], FILTER, 10) for q in queries]
            hits[name]["dense"], hits[name]["sparse"] = dense, sparse
            result[name] = {
                "build_s": round(seconds, 1),
                "disk_mib": disk_mib(name, Path(tmp) / "edge", url, schema),
                **{
                    f"{kind}_ms": {
                        k.removesuffix("_ms"): (None if v is None else round(v, 2))
                        for k, v in latency_stats([t for t, _ in hits[name][kind]]).items()
                        if k in ("p50_ms", "p95_ms")
                    }
                    for kind in ("mandatory", "selective")
                },
            }
            store.close()
            backend.close()
        result["dense_top10_overlap"] = round(
            statistics.mean(
                overlap(a, b)
                for a, b in zip(hits["edge"]["dense"], hits["postgres"]["dense"], strict=True)
            ),
            4,
        )
        result["bm25_max_score_diff"] = max(
            abs(a.score - b.score)
            for x, y in zip(hits["edge"]["sparse"], hits["postgres"]["sparse"], strict=True)
            for a, b in zip(x, y, strict=True)
        )
        result["selective_answers_equal"] = all(
            [h.id for h in a[1]] == [h.id for h in b[1]]
            for a, b in zip(hits["edge"]["selective"], hits["postgres"]["selective"], strict=True)
        )
    return result


def report(result: dict[str, Any]) -> None:
    console = Console()
    console.print(header_line(result["machine"]))
    table = Table(
        "size", "backend", "build s", "disk MiB", "hybrid p50/p95 ms", "selective p50/p95 ms"
    )
    for r in result["runs"]:
        for name in ("edge", "postgres"):
            m, s = r[name]["mandatory_ms"], r[name]["selective_ms"]
            table.add_row(
                f"{r['size']:,}",
                name,
                str(r[name]["build_s"]),
                str(r[name]["disk_mib"]),
                f"{m['p50']} / {m['p95']}",
                f"{s['p50']} / {s['p95']}",
            )
    console.print(table)
    for r in result["runs"]:
        console.print(
            f"{r['size']:,}: dense top-10 overlap {r['dense_top10_overlap']}, BM25 top-10 max "
            f"score difference {r['bm25_max_score_diff']:.2e}, selective-filter answers "
            f"identical: {r['selective_answers_equal']}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--url", default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with ExitStack() as stack:
        url = args.url or stack.enter_context(
            throwaway_pgvector(Path(tempfile.mkdtemp(prefix="thoth-bench-pg-")))
        )
        runs = [run(int(s), args.queries, url) for s in args.sizes.split(",")]
    return emit({"machine": machine_facts(), "runs": runs}, args.json, report)


if __name__ == "__main__":
    raise SystemExit(main())
