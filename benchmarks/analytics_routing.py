"""Numeric routing on the demo's analytics catalog: right query or right fallback, parameters,
values, and the latency of a numeric answer.

Builds a demo workspace the way `tht demo` does (copy of examples/clinical-dwh in a fresh Git
repository, its synthetic warehouse and analytics store built by the workspace's own tools,
the revision activated, documents and wiki pages indexed with `tht docs sync`), then asks every
question of benchmarks/data/analytics_questions.yaml through the product's ask path
(`open_answer_service(ws).ask`), offline (no model: similarity routing and deterministic
parameter extraction), as an analyst of the DWH team would (labels public + internal).

Reported, per kind of question and overall:
- routing: covered -> `computed` by the expected query; missing a required parameter ->
  `needs_parameter` for the expected query naming the parameter; uncovered numeric and text
  questions -> the text path (neither computed nor needs_parameter);
- parameters: covered questions whose bound parameters equal the expected ones (all declared
  parameters: defaults included, absent optional ones null);
- values: covered questions whose first result row holds the expected values (computed
  independently by reference SQL on the store's base tables);
- facts: text questions whose answer quotes the fact written in the document (apart);
- latency: p50/p95 of the numeric answers (`computed`) and of every ask, over `--rounds`.

With `--model URL` (an OpenAI-compatible server, docs/models.md) the same questions are
answered with `[answers] answerer = "llm"`: the model's function call routes, the model words
the answer. A failed answer (a call Thoth cannot use, a reply cut at max_tokens) counts as
neither a number nor the text path.

Usage:
    .venv/bin/python benchmarks/analytics_routing.py [--rounds 3] [--json] [--keep DIR]
        [--model http://127.0.0.1:8000/v1 --model-name gemma-3-270m --max-tokens 512]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench_common import add_model_options, header_line, latency_stats, machine_facts, use_model
from thoth.cli.demo import build_analytics, build_warehouse, demo_source, git
from thoth.errors import ThothError
from thoth.knowledge.sync import DocsSync
from thoth.runtime import open_answer_service, open_runtime
from thoth.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "benchmarks" / "data" / "analytics_questions.yaml"
LABELS = ["public", "internal"]  # the DWH team's analysts: not the confidential audit
KINDS = ("covered", "needs_parameter", "uncovered", "text")
TEXT_PATH = "text"


# -- what an answer says ----------------------------------------------------------------------


@dataclass
class Observed:
    route: str  # computed | needs_parameter | text | not_searched
    status: str
    query: str | None = None
    parameters: dict[str, Any] | None = None
    missing: list[str] = field(default_factory=list)
    invalid: dict[str, str] = field(default_factory=dict)
    first_row: dict[str, Any] | None = None
    text: str = ""


def _rows(figures: Any) -> list[dict[str, Any]]:
    """The result rows of a computed answer, as column -> value."""
    if isinstance(figures, dict) and "rows" in figures:
        columns = figures.get("columns") or []
        names = [c["name"] if isinstance(c, dict) else str(c) for c in columns]
        return [
            r if isinstance(r, dict) else dict(zip(names, r, strict=False)) for r in figures["rows"]
        ]
    if isinstance(figures, list):
        return [r for r in figures if isinstance(r, dict)]
    return []


def observe(answer: dict[str, Any]) -> Observed:
    """Read an `Answer.as_dict()`: the route it took and what it bound and computed."""
    status = str(answer.get("status"))
    provenance = answer.get("provenance") or {}
    if status == "computed":
        rows = _rows(answer.get("figures") or answer.get("result") or provenance.get("rows"))
        return Observed(
            route="computed",
            status=status,
            query=provenance.get("query_id"),
            parameters=dict(provenance.get("parameters") or {}),
            first_row=rows[0] if rows else None,
            text=str(answer.get("text", "")),
        )
    if status == "needs_parameter":
        need = answer.get("needs_parameter") or provenance or {}
        missing = need.get("missing") or need.get("parameters") or need.get("parameter") or []
        return Observed(
            route="needs_parameter",
            status=status,
            query=need.get("query_id"),
            missing=[missing] if isinstance(missing, str) else list(missing),
            invalid=dict(need.get("invalid") or {}),
            text=str(answer.get("text", "")),
        )
    if status == "failed":
        # A visible failure (with a model: a function call Thoth could not use): no number,
        # and not the text path either.
        return Observed(route="failed", status=str(answer.get("error_code")))
    if status == "not_searched":
        # Classified numeric and answered without searching the text (the regular-expression
        # fork before the analytics engine): neither a computed figure nor the text path.
        return Observed(route="not_searched", status=status, text=str(answer.get("text", "")))
    return Observed(route=TEXT_PATH, status=status, text=str(answer.get("text", "")))


# -- scoring ------------------------------------------------------------------------------------


def same_value(expected: Any, got: Any) -> bool:
    if isinstance(expected, int | float) and isinstance(got, int | float):
        return math.isclose(float(expected), float(got), rel_tol=1e-9, abs_tol=1e-9)
    return bool(expected == got)


def score(case: dict[str, Any], seen: Observed) -> dict[str, bool | None]:
    """routing / parameters / values / facts for one question; None where not applicable."""
    expect = case["expect"]
    kind = case["kind"]
    out: dict[str, bool | None] = {
        "routing": False,
        "parameters": None,
        "values": None,
        "facts": None,
    }
    if kind == "covered":
        out["routing"] = seen.route == "computed" and seen.query == expect["query"]
        bound = seen.parameters or {}
        out["parameters"] = out["routing"] and all(
            same_value(v, bound.get(k)) for k, v in expect["parameters"].items()
        )
        row = seen.first_row or {}
        out["values"] = out["routing"] and all(
            k in row and same_value(v, row[k]) for k, v in expect["first_row"].items()
        )
    elif kind == "needs_parameter":
        out["routing"] = (
            seen.route == "needs_parameter"
            and seen.query == expect["query"]
            and expect["missing"] in seen.missing
        )
    else:
        out["routing"] = seen.route == TEXT_PATH
        if kind == "text":
            flat = " ".join(seen.text.lower().split())
            out["facts"] = all(" ".join(f.lower().split()) in flat for f in expect["facts"])
    return out


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    def rate(rows: list[dict[str, Any]], metric: str) -> dict[str, Any]:
        judged = [r["score"][metric] for r in rows if r["score"][metric] is not None]
        hits = sum(1 for v in judged if v)
        return {
            "hits": hits,
            "of": len(judged),
            "rate": round(hits / len(judged), 3) if judged else None,
        }

    table: dict[str, Any] = {}
    for kind in (*KINDS, "all"):
        rows = results if kind == "all" else [r for r in results if r["kind"] == kind]
        table[kind] = {m: rate(rows, m) for m in ("routing", "parameters", "values", "facts")}
    return table


# -- the demo workspace -------------------------------------------------------------------------


def build_workspace(target: Path) -> tuple[Workspace, dict[str, Any]]:
    """The demo's workspace, as `tht demo` builds it, up to `tht docs sync`."""
    shutil.copytree(demo_source(), target)
    timings: dict[str, Any] = {}
    started = time.perf_counter()
    build_warehouse(target)
    views, rows = build_analytics(target)
    timings["stores_seconds"] = round(time.perf_counter() - started, 2)
    git(target, "init", "-q", "-b", "main")
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "Benchmark workspace: the demo's sources")
    ws = Workspace.open(target)
    rt = open_runtime(ws)
    try:
        revision = git(target, "rev-parse", "HEAD").strip()
        rt.state.activate_revision(ws.settings.workspace, revision, activated_by="benchmark")
        started = time.perf_counter()
        report = DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="benchmark")
        timings["docs_sync_seconds"] = round(time.perf_counter() - started, 2)
    finally:
        rt.close()
    return ws, {
        "analytics_views": views,
        "analytics_rows": rows,
        "fragments": report.counts.get("fragments_total"),
        **timings,
    }


def thoth_commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def ask_one(service: Any, question: str) -> dict[str, Any]:
    """The answer as a dict; a model error (a reply cut at max_tokens, a citation outside
    the context) is a failed answer with its code, as the API would report it."""
    try:
        return dict(service.ask(question, labels=LABELS).as_dict())
    except ThothError as exc:
        return {"status": "failed", "error_code": exc.code, "text": str(exc)}


def run(rounds: int, keep: Path | None, args: Any = None) -> dict[str, Any]:
    cases: list[dict[str, Any]] = yaml.safe_load(QUESTIONS.read_text("utf-8"))
    tmp = Path(tempfile.mkdtemp(prefix="thoth-analytics-bench-"))
    target = keep if keep is not None else tmp / "clinical-dwh"
    try:
        ws, workspace = build_workspace(target)
        model = use_model(target, args) if args is not None else None
        if model is not None:
            ws = Workspace.open(target)
        service = open_answer_service(ws)
        results: list[dict[str, Any]] = []
        numeric_s: list[float] = []
        all_s: list[float] = []
        try:
            ask_one(service, "Quanti ricoveri ordinari nel 2024?")  # warm-up, untimed
            for round_no in range(rounds):
                for case in cases:
                    began = time.perf_counter()
                    answer = ask_one(service, case["question"])
                    elapsed = time.perf_counter() - began
                    seen = observe(answer)
                    all_s.append(elapsed)
                    if seen.route == "computed":
                        numeric_s.append(elapsed)
                    if round_no == 0:
                        results.append(
                            {
                                "id": case["id"],
                                "kind": case["kind"],
                                "expect": case["expect"],
                                "observed": asdict(seen),
                                "score": score(case, seen),
                                "ms": round(elapsed * 1000, 1),
                            }
                        )
        finally:
            service.close()
        return {
            "machine": machine_facts(),
            "thoth_commit": thoth_commit(),
            "model": model,
            "workspace": workspace,
            "questions": {k: sum(1 for c in cases if c["kind"] == k) for k in KINDS},
            "rounds": rounds,
            "accuracy": summarise(results),
            "latency_ms": {
                "numeric_answer": _ms(latency_stats(numeric_s)),
                "any_answer": _ms(latency_stats(all_s)),
            },
            "misses": [
                r for r in results if not all(v in (True, None) for v in r["score"].values())
            ],
        }
    finally:
        if keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


def _ms(stats: dict[str, float | None]) -> dict[str, Any]:
    return {k: v if k == "n" or v is None else round(v, 1) for k, v in stats.items()}


def report(result: dict[str, Any]) -> None:
    print(header_line(result["machine"]))
    print(f"thoth commit {result['thoth_commit']}; workspace {result['workspace']}")
    model = result.get("model")
    print(
        "answered offline (no model)"
        if model is None
        else f"answered with {model['name']} at {model['url']} (max_tokens {model['max_tokens']})"
    )
    print(f"questions {result['questions']}, rounds {result['rounds']}")
    print(f"{'kind':<17}{'routing':>14}{'parameters':>14}{'values':>14}{'facts':>14}")
    for kind, metrics in result["accuracy"].items():
        cells = []
        for metric in ("routing", "parameters", "values", "facts"):
            m = metrics[metric]
            cells.append("-" if not m["of"] else f"{m['hits']}/{m['of']} {m['rate']:.0%}")
        print(f"{kind:<17}" + "".join(f"{c:>14}" for c in cells))
    print(f"{'latency (ms)':<17}{'n':>6}{'p50':>9}{'p95':>9}{'max':>9}")
    for label, stats in result["latency_ms"].items():
        print(
            f"{label:<17}{stats['n']:>6}{stats['p50_ms']!s:>9}{stats['p95_ms']!s:>9}{stats['max_ms']!s:>9}"
        )
    for miss in result["misses"]:
        seen = miss["observed"]
        failed = ", ".join(k for k, v in miss["score"].items() if v is False)
        print(
            f"  miss {miss['id']} [{miss['kind']}: {failed}] -> {seen['route']}"
            f" {seen['query'] or ''} {seen['parameters'] or seen['missing'] or ''}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="asks per question (latency)")
    parser.add_argument("--json", action="store_true", help="every figure as JSON")
    parser.add_argument("--keep", type=Path, help="build the workspace here and keep it")
    add_model_options(parser)
    args = parser.parse_args()
    result = run(args.rounds, args.keep, args)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    else:
        report(result)


if __name__ == "__main__":
    main()
