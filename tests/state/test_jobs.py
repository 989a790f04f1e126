"""The agent's job queue on SQLite and PostgreSQL (no mocks): claims, leases, recovery."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WS
from thoth.state import (
    Job,
    JobFinished,
    JobLeaseLost,
    JobNotFound,
    JobNotRetryable,
    JobQueue,
    StateError,
    StateStore,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.sqlite'}"
    pg: str = request.getfixturevalue("pg_url")
    return pg


@pytest.fixture
def queue(url: str) -> Iterator[JobQueue]:
    with StateStore.open(url) as store:
        yield JobQueue.on(store)


def submit(queue: JobQueue, question: str = "q", caller: str | None = "crm") -> Job:
    return queue.create(WS, caller, question, {"labels": ["public"], "channel": None})


# ---------------------------------------------------------------------- callers' side


def test_a_created_job_is_queued_and_reads_back(queue: JobQueue) -> None:
    job = submit(queue, "which markets grew?")
    assert job.status == "queued" and job.attempts == 0 and not job.cancel_requested
    again = queue.get(job.id)
    assert again == job
    assert again.request == {"labels": ["public"], "channel": None}
    data = again.as_dict()
    assert data["status"] == "queued" and data["question"] == "which markets grew?"
    assert data["created_at"].endswith("+00:00") and data["finished_at"] is None


def test_list_is_newest_first_and_filters_by_caller(queue: JobQueue) -> None:
    first = submit(queue, "one", caller="crm")
    second = submit(queue, "two", caller="bi")
    third = submit(queue, "three", caller="crm")
    assert [j.id for j in queue.list(WS)] == [third.id, second.id, first.id]
    assert [j.id for j in queue.list(WS, caller="crm")] == [third.id, first.id]
    assert [j.id for j in queue.list(WS, limit=1)] == [third.id]
    assert queue.list("other") == []


def test_an_unknown_job_or_another_callers_job_is_not_found(queue: JobQueue) -> None:
    job = submit(queue, caller="crm")
    with pytest.raises(JobNotFound) as info:
        queue.get("job_nope")
    assert info.value.code == "job_not_found"
    with pytest.raises(JobNotFound):
        queue.cancel(job.id, caller="bi")
    assert queue.get(job.id).status == "queued"


def test_cancelling_a_queued_job_ends_it_at_once(queue: JobQueue) -> None:
    job = submit(queue)
    cancelled = queue.cancel(job.id, caller="crm")
    assert cancelled.status == "cancelled" and cancelled.finished_at is not None
    assert queue.claim("w1", 30) is None
    with pytest.raises(JobFinished) as info:
        queue.cancel(job.id)
    assert info.value.code == "job_finished"


def test_cancelling_a_running_job_asks_its_worker_to_stop(queue: JobQueue) -> None:
    job = submit(queue)
    claimed = queue.claim("w1", 30)
    assert claimed is not None and claimed.id == job.id
    with pytest.raises(StateError, match="was not asked to stop"):
        queue.finish(job.id, "w1", "cancelled", error_code="cancelled")
    asked = queue.cancel(job.id)
    assert asked.status == "running" and asked.cancel_requested
    assert queue.heartbeat(job.id, "w1", 30).cancel_requested
    done = queue.finish(job.id, "w1", "cancelled", error_code="cancelled", error="asked")
    assert done.status == "cancelled" and done.claimed_by == "w1"


# ---------------------------------------------------------------------- workers' side


def test_claim_takes_the_oldest_queued_job_under_a_lease(queue: JobQueue) -> None:
    first, second = submit(queue, "one"), submit(queue, "two")
    job = queue.claim("w1", 30)
    assert job is not None and job.id == first.id
    assert job.status == "running" and job.claimed_by == "w1" and job.attempts == 1
    assert job.lease_until is not None and job.started_at is not None
    assert 29 < (job.lease_until - job.started_at).total_seconds() <= 30
    other = queue.claim("w2", 30)
    assert other is not None and other.id == second.id
    assert queue.claim("w3", 30) is None


def test_only_the_lease_holder_may_heartbeat_step_or_finish(queue: JobQueue) -> None:
    submit(queue)
    job = queue.claim("w1", 30)
    assert job is not None
    with pytest.raises(JobLeaseLost) as info:
        queue.heartbeat(job.id, "w2", 30)
    assert info.value.code == "job_lease_lost" and "not by w2" in str(info.value)
    with pytest.raises(JobLeaseLost):
        queue.add_step(job.id, "w2", "tool", {"name": "wiki_list"}, {})
    with pytest.raises(JobLeaseLost):
        queue.finish(job.id, "w2", "completed", result={"answer": "x"})
    assert queue.steps(job.id) == []
    beat = queue.heartbeat(job.id, "w1", 60)
    assert beat.lease_until is not None and job.lease_until is not None
    assert beat.lease_until > job.lease_until
    assert queue.add_step(job.id, "w1", "model", {"text": "hi"}, {"turns": 1}) == 1
    assert queue.add_step(job.id, "w1", "tool", {"name": "wiki_list"}, {"turns": 1}) == 2
    assert queue.get(job.id).usage == {"turns": 1}
    done = queue.finish(job.id, "w1", "completed", result={"answer": "x"}, usage={"turns": 2})
    assert done.status == "completed" and done.result == {"answer": "x"}
    assert done.usage == {"turns": 2} and done.lease_until is None
    with pytest.raises(JobLeaseLost):
        queue.heartbeat(job.id, "w1", 30)  # finished: nobody holds it any more
    assert [(s.seq, s.kind) for s in queue.steps(job.id)] == [(1, "model"), (2, "tool")]


def test_a_partial_result_is_never_stored_as_completed_or_failed(queue: JobQueue) -> None:
    submit(queue)
    job = queue.claim("w1", 30)
    assert job is not None
    with pytest.raises(StateError, match="needs a result"):
        queue.finish(job.id, "w1", "completed")
    with pytest.raises(StateError, match="partial result is stored as partial"):
        queue.finish(job.id, "w1", "failed", result={"answer": "half"}, error_code="budget_turns")
    # partial: a result and the code of its gap, both required
    with pytest.raises(StateError, match="partial needs a result and the code"):
        queue.finish(job.id, "w1", "partial", result={"answer": "half"})
    with pytest.raises(StateError, match="partial needs a result and the code"):
        queue.finish(job.id, "w1", "partial", error_code="index_unavailable")
    failed = queue.finish(job.id, "w1", "failed", error_code="budget_turns", error="10 turns")
    assert failed.status == "failed" and failed.result is None and failed.finished


def test_partial_is_a_terminal_state_the_database_accepts(queue: JobQueue) -> None:
    submit(queue)
    job = queue.claim("w1", 30)
    assert job is not None
    ended = queue.finish(
        job.id,
        "w1",
        "partial",
        result={"answer": "half", "gaps": [{"code": "index_unavailable"}]},
        error_code="index_unavailable",
        error="knowledge_search failed (index_unavailable): the answer rests on 1 wiki page",
    )
    assert ended.status == "partial" and ended.finished and ended.lease_until is None
    assert ended.result == {"answer": "half", "gaps": [{"code": "index_unavailable"}]}
    assert queue.claim("w2", 30) is None  # a partial job is never claimed again


def test_an_expired_lease_is_recovered_then_the_old_worker_is_refused(queue: JobQueue) -> None:
    submit(queue)
    job = queue.claim("w1", 0.2)
    assert job is not None
    assert queue.recover_orphans(max_attempts=3) == []  # lease still valid
    time.sleep(0.3)
    [recovered] = queue.recover_orphans(max_attempts=3)
    assert recovered.status == "queued" and recovered.claimed_by is None
    assert recovered.error is not None and "w1 lost its lease" in recovered.error
    again = queue.claim("w2", 30)
    assert again is not None and again.id == job.id and again.attempts == 2
    with pytest.raises(JobLeaseLost):
        queue.finish(job.id, "w1", "completed", result={"answer": "late"})
    assert queue.finish(job.id, "w2", "completed", result={"answer": "x"}).status == "completed"


def test_a_job_out_of_attempts_fails_with_the_reason(queue: JobQueue) -> None:
    submit(queue)
    job = queue.claim("w1", 0.1)
    assert job is not None
    queue.add_step(job.id, "w1", "model", {"text": "started"}, {})
    time.sleep(0.2)
    [failed] = queue.recover_orphans(max_attempts=1)
    assert failed.status == "failed" and failed.error_code == "attempts_exhausted"
    assert failed.error is not None and "attempt 1 of 1" in failed.error
    assert failed.finished_at is not None
    assert len(queue.steps(job.id)) == 1  # the steps done are kept


def test_a_running_job_asked_to_stop_whose_worker_died_is_cancelled(queue: JobQueue) -> None:
    submit(queue)
    job = queue.claim("w1", 0.1)
    assert job is not None
    queue.cancel(job.id)
    time.sleep(0.2)
    [cancelled] = queue.recover_orphans(max_attempts=3)
    assert cancelled.status == "cancelled" and cancelled.error_code == "cancelled"


# ---------------------------------------------------------------------- concurrency


def test_concurrent_workers_never_claim_one_job_twice(queue: JobQueue) -> None:
    jobs, workers = 30, 6
    for n in range(jobs):
        submit(queue, f"q{n}")
    barrier = threading.Barrier(workers)

    def work(worker: int) -> list[str]:
        barrier.wait()
        taken = []
        while (job := queue.claim(f"w{worker}", 30)) is not None:
            taken.append(job.id)
        return taken

    with ThreadPoolExecutor(workers) as pool:
        claimed = [job_id for taken in pool.map(work, range(workers)) for job_id in taken]
    assert len(claimed) == jobs and len(set(claimed)) == jobs
    assert {j.status for j in queue.list(WS, limit=100)} == {"running"}


def _claim_all(url: str, worker: str, barrier: Any, out: Any) -> None:
    with StateStore.open(url) as store:
        queue = JobQueue.on(store)
        barrier.wait()
        while (job := queue.claim(worker, 30)) is not None:
            out.put((worker, job.id))


def test_concurrent_worker_processes_never_claim_one_job_twice(url: str, queue: JobQueue) -> None:
    jobs, processes = 24, 3
    for n in range(jobs):
        submit(queue, f"q{n}")
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager:
        barrier, out = manager.Barrier(processes), manager.Queue()
        procs = [
            ctx.Process(target=_claim_all, args=(url, f"p{n}", barrier, out))
            for n in range(processes)
        ]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(timeout=120)
        assert [proc.exitcode for proc in procs] == [0] * processes
        claimed = [out.get() for _ in range(out.qsize())]
    ids = [job_id for _, job_id in claimed]
    assert len(ids) == jobs and len(set(ids)) == jobs
    holders = {j.id: j.claimed_by for j in queue.list(WS, limit=100)}
    assert all(holders[job_id] == worker for worker, job_id in claimed)


HANGING_WORKER = """
import sys, time
from thoth.state import JobQueue, StateStore
store = StateStore.open(sys.argv[1])
queue = JobQueue.on(store)
job = queue.claim("doomed", float(sys.argv[2]))
queue.add_step(job.id, "doomed", "model", {"text": "working"}, {"turns": 1})
print(job.id, flush=True)
time.sleep(600)
"""


def test_a_sigkilled_worker_s_job_is_recovered_and_finished_by_another(
    url: str, queue: JobQueue
) -> None:
    job = submit(queue)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-c", HANGING_WORKER, url, "1.0"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == job.id
        assert queue.get(job.id).claimed_by == "doomed"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert queue.claim("rescuer", 30) is None  # still leased to the dead worker
    deadline = time.monotonic() + 10
    while not queue.recover_orphans(max_attempts=3):
        assert time.monotonic() < deadline, "the dead worker's lease never expired"
        time.sleep(0.2)
    rescued = queue.claim("rescuer", 30)
    assert rescued is not None and rescued.id == job.id and rescued.attempts == 2
    done = queue.finish(job.id, "rescuer", "completed", result={"answer": "done"})
    assert done.status == "completed" and done.claimed_by == "rescuer"
    assert [(s.attempt, s.data) for s in queue.steps(job.id)] == [(1, {"text": "working"})]


def test_a_partial_or_failed_job_is_retried_afresh_keeping_the_old_one(queue: JobQueue) -> None:
    submit(queue)
    job = queue.claim("w1", 30)
    assert job is not None
    queue.add_step(job.id, "w1", "model", {"turn": 1}, {"turns": 1})
    queue.finish(job.id, "w1", "partial", result={"answer": "half"}, error_code="index_unavailable")
    again = queue.retry(job.id)
    assert again.id != job.id and again.status == "queued"
    assert again.question == job.question and again.caller == job.caller
    assert again.request == {**job.request, "retry_of": job.id}
    old = queue.get(job.id)
    assert old.status == "partial" and [s.kind for s in queue.steps(job.id)] == ["model"]
    with pytest.raises(JobNotRetryable, match="only a partial or failed job"):
        queue.retry(again.id)  # queued: nothing to retry
    with pytest.raises(JobNotFound):
        queue.retry(job.id, caller="someone-else")
