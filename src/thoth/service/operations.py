"""What the service does, free of any transport: plain dicts out, `ThothError`s raised.

`Operations` opens the engine once per process (the answer service, the knowledge and Evidence
searches, one embedder shared by all) and keeps no state a second process would need: every
answer goes to the shared answer log, every search reads the shared state store and index.
Engine calls run one at a time per process, on one thread (`_engine`): the embedder
serialises its calls anyway, the readers' per-generation handles are not meant to be shared
between threads, and a SQLite connection (the analytics store's) refuses any thread but the
one that opened it.
Run more processes for more throughput (docs/service.md).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, TypeVar

from thoth.agent.submit import submit_job
from thoth.analytics.query_view import query_view
from thoth.analytics.store import AnalyticsStore
from thoth.answer.feedback import report
from thoth.answer.passage import Piece, RevisionNotServed, read_passage
from thoth.answer.retrieval import RetrievedFragment
from thoth.answer.scope import allowed_labels
from thoth.answer.service import AnswerService
from thoth.config import CallerSettings, Settings
from thoth.documents.records import KnowledgeFragment
from thoth.errors import Problem, RequestError, ThothError
from thoth.evidence.model import ReferenceUnit
from thoth.index.reader import GenerationReader
from thoth.index.records import EvidencePayload
from thoth.knowledge.history import fragments_at
from thoth.runtime import (
    Runtime,
    knowledge_search,
    open_answer_service,
    open_runtime,
    sessions_dir,
)
from thoth.schedule.hooks import HookOutcome, receive
from thoth.schedule.scheduler import Scheduler, system_clock
from thoth.search.outcome import EvidenceSearchContext
from thoth.search.service import EvidenceSearch, read_unit_at
from thoth.service.callers import ceiling_labels, require_evidence_within_ceiling
from thoth.service.metrics import exposition
from thoth.service.models import (
    AskBody,
    EvidenceSearchBody,
    FeedbackBody,
    JobBody,
    KnowledgeSearchBody,
)
from thoth.session.gaps import GapQueue
from thoth.state import JobNotFound, JobQueue
from thoth.state.stats import current_alerts
from thoth.workspace import Workspace

T = TypeVar("T")
READY_PROBE = "ready"
ALERT_CHECK_SECONDS = 60.0  # the answer rates are read again at most this often
log = logging.getLogger("thoth.service")


class Operations:
    """The service's operations over one workspace, opened once per process (close it).
    `caller` None is a trusted local transport: the request's labels are taken as given."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.settings: Settings = ws.settings
        # Every engine call runs on this one thread, opening included: one call at a time,
        # and always from the thread that opened what it uses (a SQLite connection of the
        # analytics store refuses any other thread; the readers' per-generation handles are
        # not meant to be shared between threads).
        self._engine = ThreadPoolExecutor(max_workers=1, thread_name_prefix="thoth-engine")
        self._next_rate_check = 0.0  # time.monotonic() of the next alert check
        self._next_schedule_check = 0.0  # ... and of the next look at the schedule
        try:
            self._engine.submit(self._open).result()
        except BaseException:
            self._engine.shutdown()
            raise

    def _open(self) -> None:
        ws = self.ws
        # One runtime (state store, index backend, embedder) for the searches and the jobs;
        # the answer service opens its own over the same embedder instance.
        rt: Runtime | None = None
        answers: AnswerService | None = None
        try:
            rt = open_runtime(ws)
            answers = open_answer_service(ws, rt.embedder)
            self._knowledge = knowledge_search(ws, rt)
            self._evidence: EvidenceSearch = rt.search()
            # The agent's queue shares the state store's engine (closed with it). Job calls
            # are state-store calls only: they never wait for the engine thread.
            self._jobs = JobQueue.on(rt.state)
            # Read only: the late and failed routines for /metrics and the log.
            self._schedule = Scheduler(ws, rt.state)
            self._analytics = (
                AnalyticsStore(ws.settings.analytics, ws.root) if ws.settings.analytics else None
            )
        except BaseException:
            if answers is not None:
                answers.close()
            if rt is not None:
                rt.close()
            raise
        self._rt = rt
        self._answers = answers
        self._passages: GenerationReader | None = None

    def close(self) -> None:
        try:
            self._engine.submit(self._close).result()
        finally:
            self._engine.shutdown()

    def _close(self) -> None:
        if self._passages is not None:
            self._passages.close()
        self._knowledge.close()
        self._evidence.close()
        if self._analytics is not None:
            self._analytics.close()
        self._answers.close()
        self._rt.close()

    # -- operations ---------------------------------------------------------------------

    def ask(self, body: AskBody, caller: CallerSettings | None) -> dict[str, Any]:
        """`Answer.as_dict()`: the object `tht ask --json` prints. A failed search is an
        answer with status "failed"; a bad request raises (and is logged as failed)."""
        self._check_length("question", body.question)
        if body.instructions is not None:
            self._check_length("instructions", body.instructions)
        request = body.request()
        request["labels"] = ceiling_labels(self.settings, caller, body.labels)
        answer = self._run(
            lambda: self._answers.ask(
                body.question,
                instructions=body.instructions,
                caller=caller.name if caller else None,
                **request,
            )
        )
        self._watch_rates()
        self._watch_schedule()
        return answer.as_dict(body.show_context)

    def knowledge_search(
        self, body: KnowledgeSearchBody, caller: CallerSettings | None
    ) -> dict[str, Any]:
        """The fragments of documents, wiki pages and Evidence the request's condition lets
        through, best first, with the search status: found, nothing_found or failed (with
        its stable code; never an empty list standing for a fault)."""
        self._check_length("query", body.query)
        request = body.request()
        request["labels"] = ceiling_labels(self.settings, caller, body.labels)
        retrieval = self._run(lambda: self._knowledge.search(body.query, **request))
        fragments = retrieval.fragments[: body.limit] if body.limit else retrieval.fragments
        return {
            "query": body.query,
            "status": retrieval.status,
            "error_code": retrieval.error_code,
            "error": retrieval.error,
            "generation": retrieval.generation,
            "route": retrieval.route.as_dict(),
            "filters": retrieval.filters,
            "degraded": list(retrieval.degraded),
            "fragments": [fragment_dict(f) for f in fragments],
        }

    def evidence_search(
        self, body: EvidenceSearchBody, caller: CallerSettings | None
    ) -> dict[str, Any]:
        """The fail-closed outcome `tht evidence search --json` prints: available (zero or
        more results) or unavailable with a stable code. Evidence carries
        `[answers].evidence_labels`: a caller must hold all of them in its ceiling."""
        self._check_length("query", body.query)
        require_evidence_within_ceiling(self.settings, caller)
        context = EvidenceSearchContext(
            concepts=tuple(body.concepts),
            tables=tuple(body.tables),
            columns=tuple(body.columns),
            kinds=tuple(body.kinds),
            binding=frozenset(body.binding),
            limit=body.limit,
        )
        outcome = self._run(lambda: self._evidence.search(body.query, body.purpose, context))
        return outcome.as_dict()

    def evidence_unit(self, unit_id: str, caller: CallerSettings | None) -> dict[str, Any]:
        """What a receipt's unit link opens: one unit the active generation publishes (the
        search's own reader), under the rule of the Evidence search: the caller holds every
        `[answers].evidence_labels` in its ceiling."""
        require_evidence_within_ceiling(self.settings, caller)
        return self._run(lambda: self._evidence.unit(unit_id)).as_dict()

    def passage(
        self,
        doc_id: str,
        revision: str,
        fragment: int | None,
        labels: list[str] | None,
        caller: CallerSettings | None,
    ) -> dict[str, Any]:
        """What a source's link opens (thoth.answer.passage), under the labels an `ask` with
        the same `labels` would be allowed: never more than the answer could show."""
        allowed = self._allowed(labels, caller)
        root = self.ws.root

        def url(unit: EvidencePayload) -> str | None:
            read = read_unit_at(root, unit.workspace_revision, unit.unit_path)
            return read.reference.url if isinstance(read, ReferenceUnit) else None

        def earlier(doc: str, rev: str) -> list[Piece] | None:
            try:
                found = fragments_at(root, self.settings, self._rt.state, doc, rev)
            except ThothError as exc:
                raise RevisionNotServed(
                    f"source {doc!r} at revision {rev[:12]} cannot be read again: {exc}"
                ) from exc
            return None if found is None else [_old_piece(f) for f in found]

        def work() -> dict[str, Any]:
            if self._passages is None:  # opened once, on the engine thread, when first needed
                self._passages = self._rt.reader()
            return read_passage(
                self._passages,
                self.settings.workspace,
                doc_id,
                revision,
                fragment,
                allowed,
                url,
                earlier,
            ).as_dict()

        return self._run(work)

    def catalog_query(
        self,
        query_id: str,
        revision: str,
        asked: dict[str, Any],
        labels: list[str] | None,
        caller: CallerSettings | None,
    ) -> dict[str, Any]:
        """What a computed answer's link opens (thoth.analytics.query_view), under the labels an
        `ask` with the same `labels` would be allowed; `asked` (the parameters and data date the
        answer used, from the link) is echoed beside the query."""
        allowed = self._allowed(labels, caller)
        active = self._rt.state.active_revision(self.settings.workspace)
        view = query_view(
            self.ws.root, self.settings.analytics, active, query_id, revision, allowed
        )
        return view | {"asked": asked}

    def metrics(self) -> bytes:
        """The Prometheus text page of the answer log (a state-store call) and the open
        knowledge gaps of the sessions."""
        gaps = GapQueue(sessions_dir(self.ws), self.ws.evidence)
        self._watch_schedule()
        return exposition(self._rt.state, self.settings.workspace, gaps, self._schedule)

    def feedback(self, body: FeedbackBody, caller: CallerSettings | None) -> dict[str, Any]:
        """Record a reader's report on an answer the caller was given (another caller's
        answer does not exist for it). A state-store call: it never waits for the engine."""
        saved = report(
            self._rt.state,
            self.settings.workspace,
            body.answer_id,
            body.kind,
            body.note,
            caller=caller.name if caller else None,
        )
        return {"feedback": saved.as_dict()}

    # -- deep-analysis jobs (the agent's queue; a worker runs them: `tht agent worker`) ------

    def create_job(self, body: JobBody, caller: CallerSettings | None) -> dict[str, Any]:
        """Queue a job as `tht agent submit` does (`thoth.agent.submit_job`: refused with
        `agent_unavailable` without a usable model), in the caller's search context with
        the labels resolved against its ceiling and stored: the worker never widens them."""
        self._check_length("question", body.question)
        job = submit_job(
            self.settings,
            self._jobs,
            body.question,
            caller=caller.name if caller else None,
            labels=ceiling_labels(self.settings, caller, body.labels),
            channel=body.channel,
        )
        return job.as_dict()

    def list_jobs(self, caller: CallerSettings | None, limit: int = 50) -> dict[str, Any]:
        """The caller's newest jobs first (every job of the workspace without a caller)."""
        jobs = self._jobs.list(self.settings.workspace, caller.name if caller else None, limit)
        return {"jobs": [job.as_dict() for job in jobs]}

    def get_job(self, job_id: str, caller: CallerSettings | None) -> dict[str, Any]:
        """One of the caller's jobs with its transcript so far; another caller's job, or a
        malformed id (never looked up), does not exist for it."""
        if not JOB_ID.fullmatch(job_id):
            raise job_not_found(job_id[:80], "job ids look like job_<24 hex digits>")
        try:
            job = self._jobs.get(job_id)
        except JobNotFound:
            raise job_not_found(job_id) from None
        if job.workspace != self.settings.workspace or (
            caller is not None and job.caller != caller.name
        ):
            raise job_not_found(job_id)
        return {**job.as_dict(), "steps": [s.as_dict() for s in self._jobs.steps(job_id)]}

    def cancel_job(self, job_id: str, caller: CallerSettings | None) -> dict[str, Any]:
        """Cancel a queued job at once, or ask a running one to stop (a finished one is
        refused: `job_finished`)."""
        self.get_job(job_id, caller)  # the same existence rule as reading it
        return self._jobs.cancel(job_id, caller.name if caller else None).as_dict()

    def readiness(self) -> dict[str, Any]:
        """{"ready": bool, "components": {name: {"ok", "detail"}}} for the state store, the
        index, the embedder and the analytics store (not configured is ok)."""
        components = self._run(self._components)
        return {"ready": all(c["ok"] for c in components.values()), "components": components}

    # -- steps -----------------------------------------------------------------------------

    def _allowed(self, labels: list[str] | None, caller: CallerSettings | None) -> list[str]:
        """What an `ask` with `labels` may see: within the caller's ceiling, the default
        labels when none are given (a link never shows more than its answer could)."""
        return allowed_labels(
            self.settings, {"labels": ceiling_labels(self.settings, caller, labels)}
        )

    def git_hook(self, headers: dict[str, str], body: bytes) -> HookOutcome:
        """A forge's push webhook: verified, then a docs sync queued for each source it names
        (thoth.schedule.hooks). A state-store call: it never waits for the engine."""
        outcome = receive(self.ws, self._rt.state, headers, body, system_clock())
        log.info("git hook (%s %s): %s", outcome.forge, outcome.event, outcome.as_dict())
        return outcome

    def watch_schedule(self) -> None:
        """Warn in the log of each routine of `[schedule]` that is late or whose last run
        failed (the same check as `tht verify` and `tht schedule list`)."""
        try:
            statuses = self._schedule.status()
        except ThothError as exc:
            log.warning("schedule: the routines could not be read [%s]: %s", exc.code, exc)
            return
        for status in statuses:
            for code, message in status.warnings():
                log.warning("schedule [%s]: %s -> `tht schedule list`", code, message)

    def _watch_schedule(self) -> None:
        """`watch_schedule` at most every ALERT_CHECK_SECONDS."""
        now = time.monotonic()
        if now < self._next_schedule_check:
            return
        self._next_schedule_check = now + ALERT_CHECK_SECONDS
        self.watch_schedule()

    def _watch_rates(self) -> None:
        """At most every ALERT_CHECK_SECONDS, warn in the log of each rate of the answers
        above `[answers.alerts]` (the same check as `tht verify`)."""
        now = time.monotonic()
        if now < self._next_rate_check:
            return
        self._next_rate_check = now + ALERT_CHECK_SECONDS
        try:
            found = current_alerts(self._rt.state, self.settings)
        except ThothError as exc:
            log.warning("answers: the alert rates could not be read [%s]: %s", exc.code, exc)
            return
        days = self.settings.answers.alerts.window_days
        for alert in found:
            log.warning(
                "answers of the last %d day(s): %s -> `tht answers stats`, `tht answers log`",
                days,
                alert.message(),
            )

    def _components(self) -> dict[str, dict[str, Any]]:
        name = self.settings.workspace
        components: dict[str, dict[str, Any]] = {}
        try:
            gen = self._rt.state.active_generation(name)
        except ThothError as exc:
            components["state"] = _failed(exc)
            components["index"] = _no("not checked: the state store is unavailable")
        else:
            components["state"] = _ok("reachable")
            components["index"] = (
                _no(f"workspace {name} has no active generation -> run `tht docs sync`")
                if gen is None
                else self._probe_index()
            )
        try:
            self._rt.embedder.embed_query(READY_PROBE)
            components["embedder"] = _ok(self._rt.embedder.identity)
        except ThothError as exc:
            components["embedder"] = _failed(exc)
        if self._analytics is None:
            components["analytics"] = _ok("not configured")
        else:
            try:
                components["analytics"] = _ok(f"data date {self._analytics.data_date()}")
            except ThothError as exc:
                components["analytics"] = _failed(exc)
        return components

    def _probe_index(self) -> dict[str, Any]:
        reader = self._rt.reader()
        try:
            with reader.guard():
                readable = reader.active()
                points = readable.store.count({"workspace_id": self.settings.workspace})
            return _ok(f"generation {readable.id}: {points} points")
        except ThothError as exc:
            return _failed(exc)
        finally:
            reader.close()

    def _check_length(self, name: str, value: str) -> None:
        limit = self.settings.service.max_question_chars
        if len(value) > limit:
            message = f"{name} has {len(value)} characters, more than the limit of {limit}"
            raise RequestError(
                message,
                problems=[
                    Problem(
                        "",
                        message,
                        field=name,
                        hint="shorten it ([service].max_question_chars)",
                        code="too_long",
                    )
                ],
            )

    def with_runtime(self, work: Callable[[Runtime], T]) -> T:
        """`work` with the process's runtime, on the engine thread (the session verbs that
        search, read the schema index, the database or the embedder)."""
        return self._run(lambda: work(self._rt))

    def _run(self, work: Callable[[], T]) -> T:
        """`work` on the engine thread, after the calls submitted before it."""
        return self._engine.submit(work).result()


def _old_piece(f: KnowledgeFragment) -> Piece:
    return Piece(
        f.ordinal, f.page, tuple(f.heading_path), f.text, tuple(f.caveats), tuple(f.labels),
        f.title, f.record_kind,
    )  # fmt: skip


def fragment_dict(fragment: RetrievedFragment) -> dict[str, Any]:
    record = fragment.record
    data: dict[str, Any] = {
        "id": fragment.id,
        "rank": fragment.rank,
        "score": round(fragment.score, 6),
        "kind": record.record_kind,
        "doc_id": record.doc_id,
        "title": record.title,
        "channel": record.channel,
        "labels": list(record.labels),
        "text": record.text,
        "caveats": list(record.caveats),
    }
    if isinstance(record, EvidencePayload):
        data.update(
            source="evidence",
            heading_path=[record.fragment_section] if record.fragment_section else [],
            path=record.unit_path,
            revision=record.workspace_revision,
        )
    else:
        data.update(
            source=record.source,
            heading_path=list(record.heading_path),
            path=record.path,
            revision=record.revision,
            chunk_kind=record.chunk_kind,
            doc_format=record.doc_format,
            page=record.page,
            year=record.year,
        )
    return data


def _ok(detail: str) -> dict[str, Any]:
    return {"ok": True, "detail": detail}


def _no(detail: str) -> dict[str, Any]:
    return {"ok": False, "detail": detail}


def _failed(exc: ThothError) -> dict[str, Any]:
    return {"ok": False, "detail": f"[{exc.code}] {exc.message_text()}"}


JOB_ID: Final = re.compile(r"^job_[0-9a-f]{24}$")


def job_not_found(job_id: str, why: str = "") -> JobNotFound:
    """No job `job_id` for this caller (or none at all), with where its jobs are listed: the
    same refusal for GET/cancel over HTTP and job_show/job_cancel over MCP."""
    what = f"job {job_id!r} not found" + (f": {why}" if why else "")
    return JobNotFound(
        what,
        problems=[
            Problem(
                "",
                what,
                hint="your jobs are listed by GET /v1/jobs or the MCP tool job_list; a job "
                "exists for the caller that submitted it only",
                code=JobNotFound.code,
            )
        ],
    )
