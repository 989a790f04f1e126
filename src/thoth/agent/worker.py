"""`tht agent worker`: take jobs from the queue and run them, one at a time.

At start, and every `recover_every` polls, jobs whose worker died (lease expired) are
recovered (`JobQueue.recover_orphans`). A running job's lease is renewed by a heartbeat
thread every `lease_seconds / 3`, also while a model call is in flight; when the heartbeat is
refused (the job was recovered by another worker after a pause longer than the lease), the
run stops at its next step without writing anything more.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import threading
from dataclasses import dataclass, field
from typing import Final

from thoth.agent.errors import UNFORESEEN, ToolRefused
from thoth.agent.loop import AgentRun, Budgets
from thoth.agent.served import served_wiki
from thoth.agent.submit import require_model
from thoth.agent.tools import Toolbox
from thoth.agent.wiki import WikiShelf
from thoth.analytics.branch import AnalyticsService
from thoth.answer.scope import allowed_labels
from thoth.errors import ThothError
from thoth.llm import ConversationClient, conversation_client
from thoth.runtime import Runtime, knowledge_search, make_analytics
from thoth.state import Job, JobLeaseLost, JobQueue, StateError

log = logging.getLogger("thoth.agent")

RECOVER_EVERY: Final = 10  # polls


def worker_id() -> str:
    """A name no other worker has: host, process and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Heartbeat(threading.Thread):
    """Renews the lease of one job until stopped; says whether it was lost or a cancel asked."""

    def __init__(self, queue: JobQueue, job_id: str, worker: str, lease_seconds: float) -> None:
        super().__init__(name=f"heartbeat-{job_id}", daemon=True)
        self._queue, self._job_id, self._worker = queue, job_id, worker
        self._lease_seconds = lease_seconds
        self._stop_event = threading.Event()
        self._lost = False
        self._cancel = False

    @property
    def lost(self) -> bool:
        return self._lost

    @property
    def cancel_requested(self) -> bool:
        return self._cancel

    def run(self) -> None:
        while not self._stop_event.wait(self._lease_seconds / 3):
            try:
                job = self._queue.heartbeat(self._job_id, self._worker, self._lease_seconds)
            except JobLeaseLost:
                self._lost = True
                return
            except StateError as exc:  # the database is busy or away: try at the next beat
                log.warning("heartbeat of %s failed: %s", self._job_id, exc)
                continue
            self._cancel = job.cancel_requested

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


@dataclass
class Worker:
    """Runs the jobs of one workspace with the runtime's state, index, embedder and analytics."""

    rt: Runtime
    id: str = field(default_factory=worker_id)
    client: ConversationClient | None = None

    def __post_init__(self) -> None:
        settings = self.rt.ws.settings
        require_model(settings)
        self.settings = settings
        self.queue = JobQueue.on(self.rt.state)
        self.client = self.client or conversation_client(settings.llm)
        self._knowledge = knowledge_search(self.rt.ws, self.rt)
        self._analytics: AnalyticsService | None = (
            make_analytics(self.rt) if settings.analytics is not None else None
        )

    def recover(self) -> list[Job]:
        recovered = self.queue.recover_orphans(self.settings.agent.max_attempts)
        for job in recovered:
            log.warning("recovered job %s: now %s (%s)", job.id, job.status, job.error)
        return recovered

    def run(self, *, once: bool = False, stop: threading.Event | None = None) -> int:
        """Take and run jobs until `stop` is set (or, `once`, after at most one job; with none
        queued it returns at once). Returns how many jobs it ran."""
        stop = stop or threading.Event()
        agent = self.settings.agent
        self.recover()
        done = polls = 0
        while not stop.is_set():
            job = self.queue.claim(self.id, agent.lease_seconds)
            if job is not None:
                self._run_guarded(job)
                done += 1
            if once:
                break
            if job is None:
                stop.wait(agent.poll_seconds)
            polls += 1
            if polls % RECOVER_EVERY == 0:
                self.recover()
        return done

    def _run_guarded(self, job: Job) -> None:
        """One job, whatever it does: a failure nobody foresaw ends that job `failed`
        (`worker_error`, the traceback in the log) and the worker takes the next one. A job
        that kills the process anyway is capped by `[agent].max_attempts` (recover)."""
        try:
            self.run_job(job)
        except ThothError:
            raise  # the state store itself: the worker cannot go on without it
        except UNFORESEEN as exc:
            log.exception("job %s broke the worker's run", job.id)
            with contextlib.suppress(JobLeaseLost):  # else another worker owns the job now
                self.queue.finish(
                    job.id,
                    self.id,
                    "failed",
                    error_code="worker_error",
                    error=f"the run stopped on an unexpected {type(exc).__name__}: {exc} -> "
                    "the worker's log has the traceback; the steps done are in the transcript",
                )

    def run_job(self, job: Job) -> Job | None:
        """Run one claimed job to its end; None when the lease was lost meanwhile."""
        agent = self.settings.agent
        beat = Heartbeat(self.queue, job.id, self.id, agent.lease_seconds)
        beat.start()
        try:
            try:
                toolbox = self._toolbox(job)
            except ThothError as exc:
                return self.queue.finish(
                    job.id, self.id, "failed", error_code=exc.code, error=str(exc)
                )
            assert self.client is not None
            run = AgentRun(
                queue=self.queue,
                job=job,
                worker_id=self.id,
                client=self.client,
                toolbox=toolbox,
                budgets=Budgets.of(agent),
                pseudonymizer=self.rt.pseudonymizer,
                lease=beat,
            )
            return run.run()
        finally:
            beat.stop()

    def _toolbox(self, job: Job) -> Toolbox:
        allowed = allowed_labels(self.settings, {"labels": job.request.get("labels")})
        # The pages as the active generation indexed them: an unsynced edit is invisible.
        served = served_wiki(self.rt.ws, self.rt.state)
        root = served.root
        if not root.is_dir():
            raise ToolRefused(
                f"the curated wiki {root} is not a directory -> create it or set [agent].wiki "
                "in thoth.toml",
                code="wiki_missing",
            )
        return Toolbox(
            wiki=WikiShelf(
                root, self.settings, allowed, link=lambda page: served.link(page, allowed)
            ),
            knowledge=self._knowledge,
            analytics=self._analytics,
            request=job.request,
            pseudonymizer=self.rt.pseudonymizer,
        )

    def close(self) -> None:
        if self._analytics is not None:
            self._analytics.close()
        self._knowledge.close()
