"""A session decision over HTTP: latency of `POST /v1/sessions/{id}/decisions` on a warm
`tht serve`, one client and several at once on one session.

Builds the demo workspace as `benchmarks/service_load.py` does (or copies `--workspace DIR`),
declares a caller holding the Evidence labels, starts a real `tht serve`, creates a session,
sends a few unmeasured decisions (warm-up), then:

- sequential: `--decisions` decisions one after another, each based on the position the
  previous one returned (what an agent driving a session does);
- concurrent: `--clients` clients deciding on the same session at once, `--decisions` each,
  every refused write (`ledger_conflict`) retried at the position the refusal names; each
  decision is one measured request, a retry a new one.

Reports p50/p95/p99 per mode, the conflicts met and checks that the ledger holds every
decision exactly once. The target (issue 47): p50 ≤ 50 ms warm, sequential.

Usage:
    .venv/bin/python benchmarks/session_http.py [--workspace DIR] [--decisions 200]
        [--clients 4] [--json]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench_common import emit, header_line, machine_facts
from service_load import Server, prepare
from thoth.runtime import sessions_dir
from thoth.session import SessionStore
from thoth.workspace import Workspace


def _decide(client: httpx.Client, path: str, base: int, subject: str) -> httpx.Response:
    body = {
        "base": base,
        "stage": "clarification",
        "type": "concept_clarified",
        "subject": subject,
        "detail": "misurato",
        "rationale": "benchmark",
    }
    return client.post(path, json=body)


def _stats(seconds: list[float]) -> dict[str, float | None]:
    if not seconds:
        return {"p50_ms": None, "p95_ms": None, "p99_ms": None}
    ms = np.array(seconds) * 1000
    return {f"p{q}_ms": round(float(np.percentile(ms, q)), 1) for q in (50, 95, 99)}


def sequential(client: httpx.Client, path: str, count: int, prefix: str) -> dict[str, Any]:
    base = client.get(path.rsplit("/", 1)[0]).json()["position"]
    times: list[float] = []
    for i in range(count):
        started = time.perf_counter()
        response = _decide(client, path, base, f"{prefix}-{i}")
        times.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise SystemExit(f"decision {i} refused: {response.text}")
        base = response.json()["entry"]["seq"]
    return {"decisions": count, **_stats(times)}


def concurrent(url: str, key: str, path: str, clients: int, each: int) -> dict[str, Any]:
    times: list[float] = []
    conflicts = [0]
    failures: list[str] = []
    lock = threading.Lock()

    def one(number: int) -> None:
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            base = client.get(path.rsplit("/", 1)[0]).json()["position"]
            for i in range(each):
                while True:
                    started = time.perf_counter()
                    response = _decide(client, path, base, f"c{number}-{i}")
                    elapsed = time.perf_counter() - started
                    with lock:
                        times.append(elapsed)
                    if response.status_code == 200:
                        base = response.json()["entry"]["seq"]
                        break
                    body = response.json()
                    if response.status_code == 409 and body.get("code") == "ledger_conflict":
                        base = body["position"]
                        with lock:
                            conflicts[0] += 1
                        continue
                    with lock:
                        failures.append(response.text[:300])
                    return

    threads = [threading.Thread(target=one, args=(n,)) for n in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    return {
        "clients": clients,
        "decisions": clients * each,
        "requests": len(times),
        "conflicts": conflicts[0],
        "failures": failures,
        "decisions_per_s": round(clients * each / wall, 1),
        **_stats(times),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="thoth-session-bench-"))
    try:
        root = tmp / "clinical-dwh"
        corpus, key = prepare(root, args.workspace)
        server = Server(root, 1, tmp / "serve.log")
        try:
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:
                made = client.post("/v1/sessions", json={"question": "Quanti ricoveri nel 2024?"})
                session_id = made.json()["session"]
                path = f"/v1/sessions/{session_id}/decisions"
                sequential(client, path, 10, "warm")  # not reported
                seq = sequential(client, path, args.decisions, "seq")
            con = concurrent(server.url, key, path, args.clients, args.decisions // args.clients)
        finally:
            server.stop()
        entries = SessionStore(sessions_dir(Workspace.open(root))).open(session_id).entries()
        subjects = [e.subject for e in entries]
        return {
            "machine": machine_facts(),
            "corpus": corpus,
            "sequential": seq,
            "concurrent": con,
            "ledger_entries": len(entries),
            "duplicated": len(subjects) - len(set(subjects)),
            "expected_entries": 10 + args.decisions + con["decisions"],
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def report(result: dict[str, Any]) -> None:
    print(header_line(result["machine"]))
    s, c = result["sequential"], result["concurrent"]
    print(
        f"sequential: {s['decisions']} decisions, p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms, "
        f"p99 {s['p99_ms']} ms"
    )
    print(
        f"concurrent: {c['clients']} clients, {c['decisions']} decisions in {c['requests']} "
        f"requests ({c['conflicts']} ledger_conflict retried), {c['decisions_per_s']} "
        f"decisions/s, p50 {c['p50_ms']} ms, p95 {c['p95_ms']} ms, p99 {c['p99_ms']} ms"
    )
    print(
        f"ledger: {result['ledger_entries']} entries (expected {result['expected_entries']}), "
        f"{result['duplicated']} duplicated; failures: {len(c['failures'])}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", type=Path, help="A prepared workspace to copy.")
    parser.add_argument("--decisions", type=int, default=200, help="Decisions per mode.")
    parser.add_argument("--clients", type=int, default=4, help="Concurrent clients.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    return emit(run(args), args.json, report)


if __name__ == "__main__":
    raise SystemExit(main())
