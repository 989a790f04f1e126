"""Issue 49, point 4: a multi-host deployment proven on one machine (docs/deployment.md).

One workspace whose state store and agent queue live in a PostgreSQL database of its own, the
index shared by every process, and one analytics store (a SQLite file in the shared directory,
the reviewed catalog of tests/analytics/conftest.py, refreshed from the SQLite source of
tests/analytics/refresh_source.py); two `tht serve` hosts and two `tht agent worker` processes.
Client loops ask both hosts over real HTTP, text questions and one numeric question the catalog
covers, and agent jobs are submitted to both (the first two held by the model until each
worker has claimed one), while a `tht docs sync` and then an Evidence publication (`tht
workspace activate`, `tht workspace preprocess evidence`) each activate a new generation;
during the publication one host is SIGKILLed and restarted; then `tht analytics refresh` swaps
in a new copy of the store while both hosts answer. Then:

- no failed answer but the killed host's: requests cut by the kill or sent while it was down,
  seen as connection errors on that host only, within that window;
- every numeric answer, on both hosts, was computed: its figure is the query's result read
  straight from the store file, with that copy's data date; the old copy's before the refresh,
  the new copy's from the moment the refresh returned, each served by both hosts;
- every text answer was served from a generation that was active while it was being answered (the
  answer's `diagnostics.generation` against the state store's activation times);
- every job ran once: completed, one attempt, claimed by one of the two workers, its steps one
  unbroken sequence, two model calls (read, answer); the workers' own counts add up to the
  jobs, and each worker ran some;
- the restarted host answers from the newest generation with no manual step.

Twice: with the index on Qdrant Edge in the workspace directory every process reads (the file
system every host mounts) and the state in a database of its own on the machine's PostgreSQL;
and with state, queue and index on one PostgreSQL with pgvector (`[index] backend =
"postgres"`, tests/pgvector.py's server).
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import make_url

from tests.analytics.conftest import CATALOG
from tests.analytics.refresh_source import NEW_DATE, REFRESH, VIEWS, build_source
from tests.analytics.store import STORE_FILE, build_store
from tests.conftest import WorkspaceFactory, commit_all
from tests.deployment.cluster import (
    AGENT_ANSWER,
    AGENT_PAGE,
    AgentModel,
    AgentWorker,
    Host,
    create_database,
    database_url,
    drop_database,
    poll,
    tht,
    tht_result,
    tht_started,
)
from tests.fake_embeddings import FakeEmbeddingServer
from tests.pgvector import PgvectorServer
from tests.publishing import (
    CLINICA_ANSWERS,
    CLINICA_WIKI,
    MANUAL,
    PAGE,
    prepared_workspace,
    synced_workspace,
)
from tests.service.conftest import free_port
from thoth.index.postgres import libpq_url
from thoth.runtime import open_state
from thoth.service.registry import add_caller
from thoth.state import Generation, JobQueue
from thoth.workspace import Workspace

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

KEY_ENV = "THOTH_TEST_AGENT_KEY"
QUESTIONS = (
    "Entro quando si registra il ricovero ordinario?",
    "Di quanto sono cresciuti i ricoveri urgenti nel 2024?",
    "Chi firma la scheda di accettazione del ricovero?",
    # A numeric question: the catalog's ricoveri-reparto example, computed from the store.
    "Quanti ricoveri ha avuto la Pediatria nel 2024?",
)
NUMERIC = QUESTIONS[-1]
NUMERIC_QUERY = "ricoveri-reparto"
# The same figure read straight from the store file, and the store's data date.
NUMERIC_SQL = (
    "SELECT count(*) FROM v_ricoveri WHERE reparto = 'Pediatria' AND anno = 2024 "
    "AND regime = 'ordinario'"
)
DATA_DATE_SQL = "SELECT data_dato FROM v_data_dato"
# A served answer; "failed" is a failure.
SERVED = ("found", "nothing_found", "truncated", "computed")
JOBS_BEFORE_KILL = 4
JOBS_AFTER_RESTART = 2
CLIENTS = 3  # concurrent client loops
BACK_OFF_S = 0.2  # after a connection error
# `activated_at` is written inside the activating transaction, before its commit: a request
# that started in between read the previous generation, rightly. A host serving a stale
# generation is late by far more (the next request reads the state store again).
COMMIT_SLACK_S = 0.5
POLL_S = 180.0  # the most a readiness poll waits (a machine shared with other jobs is slow)


@dataclass(frozen=True)
class Stores:
    """Where the deployment keeps its state and queue, and what `[index]` adds."""

    state_url: str
    index: str


def config(stores: Stores, llm_url: str) -> str:
    """What thoth.toml adds to the published corpus (after `[index] retain`): the index
    backend, the shared state store, the agent's model and quick polls."""
    return (
        stores.index
        + f'\n[state]\nurl = "{stores.state_url}"\n'
        + f'\n[llm]\nprovider = "openai"\nbase_url = "{llm_url}/v1"\nmodel = "fake-model"\n'
        f'api_key_env = "{KEY_ENV}"\ntimeout_seconds = 240\n'
        + '\n[agent]\nwiki = "wiki"\npoll_seconds = 0.2\nlease_seconds = 30\n'
        + "\n[service]\nmax_concurrent = 8\n"
        + ANALYTICS
        + CLINICA_ANSWERS
        + CLINICA_WIKI
    )


# One analytics store for every host: a SQLite file in the shared workspace directory, the
# reviewed catalog of tests/analytics/conftest.py, refreshed from the SQLite source of
# tests/analytics/refresh_source.py.
ANALYTICS = (
    '\n[analytics]\ndialect = "sqlite"\n'
    f'files = {{ analytics = "{STORE_FILE}" }}\n'
    'data_date_sql = "SELECT data_dato FROM analytics.v_data_dato"\n'
    'labels = ["public"]\nthreshold = 0.5\n' + REFRESH
)


@dataclass
class Asked:
    host: int
    question: str
    started: float  # time.time() when sent
    ended: float  # when the reply (or the error) came
    outcome: str  # "served", "failed_answer", "http_<status>", "connection_error"
    answer: dict[str, Any] = field(default_factory=dict)
    error: str = ""


@dataclass
class Deployment:
    root: Path
    hosts: list[Host]
    keys: dict[str, str]
    env: dict[str, str]
    model: AgentModel
    asked: list[Asked] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys['portal']}"}

    def ask(self, host: int, question: str) -> Asked:
        started = time.time()
        try:
            response = httpx.post(
                f"{self.hosts[host].url}/v1/ask",
                json={"question": question},
                headers=self.headers(),
                timeout=60,
            )
        except httpx.TransportError as exc:
            time.sleep(BACK_OFF_S)  # as a balancer would, before trying that host again
            return Asked(host, question, started, time.time(), "connection_error", error=repr(exc))
        ended = time.time()
        if response.status_code != 200:
            return Asked(
                host, question, started, ended, f"http_{response.status_code}", error=response.text
            )
        answer = response.json()
        outcome = "served" if answer["status"] in SERVED else "failed_answer"
        return Asked(host, question, started, ended, outcome, answer=answer)

    def submit(self, host: int, question: str) -> str:
        response = httpx.post(
            f"{self.hosts[host].url}/v1/jobs",
            json={"question": question},
            headers=self.headers(),
            timeout=30,
        )
        assert response.status_code == 202, response.text
        return str(response.json()["id"])

    def computed_since(self, moment: float, host: int, data_date: str) -> bool:
        with self.lock:
            return any(
                a.host == host
                and a.started >= moment
                and a.answer.get("status") == "computed"
                and a.answer["provenance"]["data_date"] == data_date
                for a in self.asked
            )

    def served_since(self, moment: float, host: int, generation: str) -> bool:
        with self.lock:
            return any(
                a.host == host
                and a.started >= moment
                and a.outcome == "served"
                and a.answer["diagnostics"].get("generation") == generation
                for a in self.asked
            )


def clients(deployment: Deployment, stop: threading.Event) -> list[threading.Thread]:
    """Client loops, each alternating between the hosts (a round-robin balancer); every
    question goes to both hosts in turn."""

    def loop(offset: int) -> None:
        for n in itertools.count(offset):
            if stop.is_set():
                return
            asked = deployment.ask(n % 2, QUESTIONS[n // 2 % len(QUESTIONS)])
            with deployment.lock:
                deployment.asked.append(asked)

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    return threads


def active_intervals(generations: list[Generation]) -> dict[str, tuple[float, float]]:
    """When each generation was active: from its activation to the next one's (no rollback
    happens in this test, so activations are in order)."""
    activated = sorted(
        (g for g in generations if g.activated_at is not None),
        key=lambda g: _seconds(g.activated_at),
    )
    ends = [_seconds(g.activated_at) for g in activated[1:]] + [float("inf")]
    return {g.id: (_seconds(g.activated_at), end) for g, end in zip(activated, ends, strict=True)}


def _seconds(moment: datetime | None) -> float:
    assert moment is not None
    return moment.timestamp()


@contextmanager
def edge_stores(pg_user: str) -> Iterator[Stores]:
    """State and queue in a database of their own on the machine's PostgreSQL; the index on
    Qdrant Edge in the workspace's directory, which every process reads (a shared mount)."""
    name = create_database(pg_user, "multihost")
    try:
        yield Stores(database_url(pg_user, name), "")
    finally:
        drop_database(pg_user, name)


@contextmanager
def postgres_stores(server: PgvectorServer) -> Iterator[Stores]:
    """State, queue and index on one PostgreSQL with pgvector, each in a schema of its own."""
    state, index = server.new_schema("multihost_state"), server.new_schema("multihost_index")
    with psycopg.connect(libpq_url(server.url), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(state)))
    url = make_url(server.url).set(drivername="postgresql+psycopg")
    state_url = url.update_query_dict({"options": f"-csearch_path={state}"})
    try:
        yield Stores(
            state_url.render_as_string(hide_password=False),
            f'backend = "postgres"\nurl = "{server.url}"\nschema = "{index}"\n',
        )
    finally:
        server.drop_schema(state)
        server.drop_schema(index)


@contextmanager
def deployed(tmp_path: Path, stores: Stores) -> Iterator[Deployment]:
    """The published corpus on `stores`, two hosts (not started) and the agent's model."""
    with FakeEmbeddingServer(dim=8) as embeddings, AgentModel() as model:
        ws = prepared_workspace(WorkspaceFactory(tmp_path), embeddings.url)
        build_store(ws.root)
        build_source(ws.root)
        files = {
            "analytics/views.sql": VIEWS,
            "documents/manuali/ricovero.md": MANUAL,
            f"wiki/{AGENT_PAGE}": PAGE,
            **CATALOG,
        }
        ws = synced_workspace(ws, embeddings.url, config(stores, model.url), files)
        keys = {"portal": add_caller(ws.root, "portal", ["public"])[1]}
        commit_all(ws.root, "the portal's key")  # activation refuses an uncommitted thoth.toml
        env = {KEY_ENV: "test-key"}
        hosts = [Host(ws.root, free_port(), tmp_path / f"host{i}.log", env) for i in range(2)]
        deployment = Deployment(ws.root, hosts, keys, env, model)
        try:
            yield deployment
        finally:
            for host in hosts:
                host.stop()


def test_two_hosts_and_two_workers_with_the_index_on_qdrant_edge(
    tmp_path: Path, pg_user: str
) -> None:
    with edge_stores(pg_user) as stores, deployed(tmp_path, stores) as deployment:
        exercise(deployment, tmp_path)


def test_two_hosts_and_two_workers_on_one_postgresql_with_pgvector(
    tmp_path: Path, pgvector_server: PgvectorServer
) -> None:
    with postgres_stores(pgvector_server) as stores, deployed(tmp_path, stores) as deployment:
        exercise(deployment, tmp_path)
        # The index was PostgreSQL's: no process wrote a Qdrant Edge generation.
        assert not (deployment.root / ".thoth" / "index").exists()


def exercise(d: Deployment, tmp_path: Path) -> None:
    """Asks and jobs over both hosts through a docs sync, a publication and a kill; then the
    checks of the module's docstring."""
    ws = Workspace.open(d.root)
    with contextlib.ExitStack() as cleanup:
        workers = []
        for i in (1, 2):
            workers.append(AgentWorker(d.root, f"w{i}", tmp_path / f"w{i}.log", d.env))
            cleanup.callback(workers[-1].kill)  # a failed test leaves no worker behind
        for host in d.hosts:  # started side by side, as a deployment starts them
            host.spawn()
        for host in d.hosts:
            host.wait_ready()
        stop = threading.Event()
        threads = clients(d, stop)
        try:
            moments, last = run_through(d, ws)
        finally:
            stop.set()
            for thread in threads:
                thread.join(90)
        ran = {w.name: w.stop()["jobs"] for w in workers}
    check(d, ws, moments, last, ran)


@dataclass(frozen=True)
class Moments:
    """What the run did when, for the checks."""

    first: str  # the generation active at the start
    synced: str  # the one the docs sync activated
    killed_at: float
    back_at: float  # host 0 answers /v1/health again
    restart_s: float
    jobs: dict[str, str]  # job id -> its question
    before: tuple[int, str]  # the numeric figure and data date of the store before the refresh
    after: tuple[int, str]  # and after it
    refresh_began: float
    refreshed_at: float  # `tht analytics refresh` returned


def run_through(d: Deployment, ws: Workspace) -> tuple[Moments, str]:
    """The scenario: jobs to both workers, a docs sync, a kill during a publication, more jobs;
    returns when both hosts serve the publication and every job has finished."""
    jobs: dict[str, str] = {}

    def submit(n: int) -> str:
        question = f"Domanda {n}: come si registra un ricovero urgente?"
        job = d.submit(n % 2, question)
        jobs[job] = question
        return job

    with open_state(ws) as state:
        first = state.active_generation(ws.settings.workspace)
        queue = JobQueue.on(state)
        assert first is not None
        begun = time.time()
        poll(lambda: d.served_since(begun, 0, first.id), POLL_S, "host 0 answers")
        poll(lambda: d.served_since(begun, 1, first.id), POLL_S, "host 1 answers")

        # Two jobs held by the model until each worker has claimed one: both take part.
        d.model.gate.clear()
        held = [submit(0), submit(1)]
        poll(
            lambda: {queue.get(j).claimed_by for j in held} == {"w1", "w2"},
            POLL_S,
            "each worker claims one job",
        )
        d.model.gate.set()
        for n in range(2, JOBS_BEFORE_KILL):
            submit(n)

        # A docs sync activates a second generation while both hosts answer.
        manual = d.root / "documents/manuali/ricovero.md"
        manual.write_text(MANUAL + "\nLa scheda è firmata anche dal caposala.\n", "utf-8")
        commit_all(d.root, "the manual, amended")
        synced = tht(d.root, d.env, "docs", "sync", "-w", str(d.root))
        assert synced["outcome"] == "activated", synced
        poll(
            lambda: d.served_since(time.time() - 1, 0, synced["generation"]),
            POLL_S,
            "host 0 serves the synced generation",
        )

        # An Evidence publication for the new revision runs while host 0 dies with requests
        # in flight and comes back on its own port.
        tht(d.root, d.env, "workspace", "activate", str(d.root))
        publishing = tht_started(d.root, d.env, "workspace", "preprocess", "evidence", str(d.root))
        killed_at = time.time()
        d.hosts[0].kill()
        restart_s = d.hosts[0].start()
        back_at = time.time()
        published = tht_result(publishing)
        assert published["outcome"] == "activated", published
        last = str(published["generation"])
        for n in range(JOBS_BEFORE_KILL, JOBS_BEFORE_KILL + JOBS_AFTER_RESTART):
            submit(n)
        after = time.time()
        poll(lambda: d.served_since(after, 0, last), POLL_S, "host 0 serves the publication")
        poll(lambda: d.served_since(after, 1, last), POLL_S, "host 1 serves the publication")

        # The analytics store is refreshed from its source while both hosts answer.
        old_copy = from_store(d.root)
        refresh_began = time.time()
        refreshed = tht(d.root, d.env, "analytics", "refresh", "-w", str(d.root))
        refreshed_at = time.time()
        assert refreshed["data_date"] == NEW_DATE, refreshed
        new_copy = from_store(d.root)
        assert new_copy[1] == NEW_DATE and new_copy != old_copy, (old_copy, new_copy)
        for host in (0, 1):
            poll(
                lambda h=host: d.computed_since(refreshed_at, h, NEW_DATE),
                POLL_S,
                f"host {host} computes from the refreshed store",
            )
        poll(
            lambda: all(queue.get(j).status not in ("queued", "running") for j in jobs),
            POLL_S,
            "every job finished",
        )
    moments = Moments(
        first.id,
        str(synced["generation"]),
        killed_at,
        back_at,
        restart_s,
        jobs,
        old_copy,
        new_copy,
        refresh_began,
        refreshed_at,
    )
    return moments, last


def check(d: Deployment, ws: Workspace, m: Moments, last: str, ran: dict[str, int]) -> None:
    """The assertions of the module's docstring."""
    # Answers: every failure is a connection error on the killed host, inside its window.
    failures = [a for a in d.asked if a.outcome != "served"]
    assert failures, "the clients never met the killed host: the kill window was not exercised"
    for failure in failures:
        assert failure.outcome == "connection_error", failure
        assert (
            failure.host == 0 and failure.ended >= m.killed_at and failure.started <= m.back_at
        ), (
            failure,
            m.killed_at,
            m.back_at,
        )
    assert len([a for a in d.asked if a.outcome == "served"]) >= 20

    # Every text answer came from a generation active while it was answered (a numeric one
    # from the store, checked below).
    with open_state(ws) as state:
        generations = state.list_generations(ws.settings.workspace)
        logged = {row.id for row in state.list_answers(ws.settings.workspace, 10_000, None)}
        queue = JobQueue.on(state)
        finished = [queue.get(j) for j in m.jobs]
        steps = {j: queue.steps(j) for j in m.jobs}
    intervals = active_intervals(generations)
    assert {m.first, m.synced, last} <= set(intervals)
    served = [a for a in d.asked if a.outcome == "served" and a.question != NUMERIC]
    for asked in served:
        generation = asked.answer["diagnostics"]["generation"]
        since, until = intervals[generation]
        assert since <= asked.ended and asked.started <= until + COMMIT_SLACK_S, (asked, intervals)
        assert asked.answer["id"] in logged  # the shared answer log has it
    assert {a.answer["diagnostics"]["generation"] for a in served} >= {m.first, m.synced, last}

    # Every numeric answer was computed from the one store, on both hosts, through the run:
    # its figure is the one its copy of the store holds, with that copy's data date; the
    # refreshed copy's from the moment the refresh returned.
    numeric = [a for a in d.asked if a.outcome == "served" and a.question == NUMERIC]
    assert {a.host for a in numeric} == {0, 1}, numeric
    assert any(a.started > m.back_at for a in numeric if a.host == 0), "none after the restart"
    for asked in numeric:
        answer = asked.answer
        assert answer["status"] == "computed", answer
        assert answer["provenance"]["query_id"] == NUMERIC_QUERY, answer
        computed = (answer["figures"]["rows"], answer["provenance"]["data_date"])
        copies = [([[figure]], data_date) for figure, data_date in (m.before, m.after)]
        assert computed in copies, (computed, copies)
        if asked.started >= m.refreshed_at:
            assert computed == copies[1], asked
        if asked.ended <= m.refresh_began:
            assert computed == copies[0], asked
        assert answer["id"] in logged
    for copy in (m.before, m.after):
        hosts = {a.host for a in numeric if a.answer["provenance"]["data_date"] == copy[1]}
        assert hosts == {0, 1}, (copy, hosts)

    # Jobs: each ran once, by one worker, none lost.
    for job in finished:
        assert (job.status, job.attempts) == ("completed", 1), job
        assert job.claimed_by in ("w1", "w2"), job
        assert job.result is not None and job.result["answer"] == AGENT_ANSWER
        seqs = [(s.attempt, s.seq) for s in steps[job.id]]
        assert seqs == [(1, n) for n in range(1, len(seqs) + 1)], seqs
        assert [s.kind for s in steps[job.id]] == ["model", "tool", "model"]
    for job_id, question in m.jobs.items():
        assert d.model.calls_about(question) == 2, job_id
    assert sum(ran.values()) == len(m.jobs) and all(ran.values()), ran
    print(summary(d, failures, ran, intervals), f"restart {m.restart_s:.1f}s")


def from_store(root: Path) -> tuple[int, str]:
    """The numeric question's figure and the data date, read straight from the store file."""
    conn = sqlite3.connect(root / STORE_FILE)
    try:
        figure = conn.execute(NUMERIC_SQL).fetchone()[0]
        data_date = conn.execute(DATA_DATE_SQL).fetchone()[0]
    finally:
        conn.close()
    return int(figure), str(data_date)


def summary(
    d: Deployment, failures: list[Asked], ran: dict[str, int], intervals: dict[str, Any]
) -> str:
    """One line for the log (`pytest -s`): what the run did."""
    per_host = [sum(1 for a in d.asked if a.host == h and a.outcome == "served") for h in (0, 1)]
    computed = sum(1 for a in d.asked if a.answer.get("status") == "computed")
    per_generation = {
        g: sum(1 for a in d.asked if a.answer.get("diagnostics", {}).get("generation") == g)
        for g in intervals
    }
    return (
        f"multihost: served {per_host} per host ({computed} computed), "
        f"{len(failures)} connection error(s) on the "
        f"killed host, answers per generation {per_generation}, jobs per worker {ran}"
    )
