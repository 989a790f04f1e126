"""The HTTP API (`tht serve`): FastAPI routes over `Operations`, versioned under /v1.

Every /v1 route but health authenticates its caller (`Authorization: Bearer <key>`), admits
the request under the process's concurrency limit, reads the body under the size limit
(Content-Length first, then counted while streaming, so a chunked body is bounded too), parses
it refusing duplicate keys, validates it with the strict body model, and runs the operation in
a worker thread. Every error is `application/problem+json` with a stable code; the status of a
`ThothError` is decided in one place (`status_for`); anything unexpected is 500 `internal`,
logged with the request id, never a traceback in the response.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from enum import Enum
from pathlib import Path
from typing import Any, Final, TypeVar

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

import thoth
from thoth.agent.errors import AgentUnavailable
from thoth.analytics.store import AnalyticsError
from thoth.answer.answerers import AnswerModelError
from thoth.answer.passage import RevisionNotServed, SourceNotAllowed, SourceNotFound
from thoth.config import CallerSettings, ServiceSettings
from thoth.database import DatabaseUnavailable
from thoth.embed.base import EmbedderError
from thoth.errors import ConfigError, PreconditionError, Problem, RequestError, ThothError
from thoth.index.base import IndexUnavailable
from thoth.index.reader import Unreadable
from thoth.memory.curation import CurationIncomplete
from thoth.memory.index import MemoryEmbeddingFailed
from thoth.memory.promotion import PromotionIncomplete
from thoth.memory.registry import MemoryRefused
from thoth.schedule.hooks import HookBadPayload, HookBadSignature, HookNotConfigured, HookUnsigned
from thoth.schedule.scheduler import SchedulerThread
from thoth.search.service import UnitNotFound
from thoth.service.callers import authenticate
from thoth.service.errors import (
    BodyNotUtf8,
    BodyTooLarge,
    Busy,
    LabelAboveCeiling,
    RequestTimeout,
    Unauthorized,
    UnsupportedMediaType,
)
from thoth.service.mcp_server import http_managers
from thoth.service.memories import MemoryDoor, MergeBody, NotACurator, RetireBody
from thoth.service.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from thoth.service.models import (
    BODY_MODELS,
    AskBody,
    EvidenceSearchBody,
    FeedbackBody,
    JobBody,
    JobList,
    JobView,
    KnowledgeSearchBody,
    validate,
)
from thoth.service.operations import Operations
from thoth.service.redact import PathRedactor
from thoth.service.sessions import (
    SESSION_BODY_MODELS,
    ChecklistBody,
    ConsultBody,
    DecideBody,
    GapBody,
    MemoryChoiceBody,
    NotProposed,
    RetractBody,
    SessionClosed,
    SessionDoor,
    SessionNewBody,
    SqlCheckBody,
    SqlRefused,
    SqlRunBody,
    StageChangeBody,
    StageNotReached,
)
from thoth.service.web import add_web_routes
from thoth.session import DecisionNotAllowed, EntryRefused, SessionNotFound
from thoth.session.ledger import LedgerConflict
from thoth.state import AnswerNotFound, JobFinished, JobNotFound, StateError
from thoth.workflow.consult import NotAnEvidenceStage, StageBlocked, StageNotReady
from thoth.workflow.sql import DecisionRefused, SchemaUnreadable
from thoth.workspace import Workspace

log = logging.getLogger("thoth.service")

PROBLEM_JSON: Final = "application/problem+json"
RETRY_AFTER_SECONDS: Final = 1
REQUEST_ID: Final = "X-Request-Id"
B = TypeVar("B", bound=BaseModel)
R = TypeVar("R", bound=Response)

# The one mapping of errors to HTTP statuses: the first class an error is an instance of wins.
STATUSES: Final[tuple[tuple[type[ThothError], int], ...]] = (
    (Unauthorized, 401),
    # POST /v1/hooks/git (thoth.schedule.hooks)
    (HookUnsigned, 401),
    (HookBadSignature, 403),
    (HookNotConfigured, 404),
    (HookBadPayload, 422),
    (LabelAboveCeiling, 403),
    (NotACurator, 403),
    (BodyTooLarge, 413),
    (RequestTimeout, 408),
    (BodyNotUtf8, 400),
    (UnsupportedMediaType, 415),
    (RequestError, 422),
    (Busy, 503),
    (JobNotFound, 404),
    (AnswerNotFound, 404),
    (SourceNotFound, 404),
    (UnitNotFound, 404),
    (SourceNotAllowed, 403),
    (RevisionNotServed, 409),
    (JobFinished, 409),
    (AgentUnavailable, 503),
    # A component the request needed could not be used (GET /v1/ready names which).
    (StateError, 503),
    (IndexUnavailable, 503),
    (Unreadable, 503),  # the Evidence could not be read: its code says why
    (EmbedderError, 503),
    (AnalyticsError, 503),
    (AnswerModelError, 502),
    # Question→SQL sessions (thoth.service.sessions)
    (SessionNotFound, 404),
    (LedgerConflict, 409),
    (SessionClosed, 409),
    (StageNotReached, 409),
    (StageNotReady, 409),
    (StageBlocked, 503),
    (DatabaseUnavailable, 503),
    (SchemaUnreadable, 503),
    (PromotionIncomplete, 503),
    (CurationIncomplete, 503),
    (MemoryEmbeddingFailed, 503),
    (NotProposed, 422),
    (SqlRefused, 422),
    (DecisionRefused, 422),
    (DecisionNotAllowed, 422),
    (EntryRefused, 422),
    (MemoryRefused, 422),
    (NotAnEvidenceStage, 422),
    (PreconditionError, 409),
)


def status_for(exc: ThothError) -> int:
    for cls, status in STATUSES:
        if isinstance(exc, cls):
            return status
    return 500


class InternalError(ThothError):
    """An exception no layer turned into a ThothError: logged with the request id."""

    code = "internal"


class ProblemBody(BaseModel):
    """Every error response (application/problem+json)."""

    code: str
    message: str
    status: int
    problems: list[dict[str, str | None]]
    request_id: str
    position: int | None = Field(
        default=None,
        description="`ledger_conflict` only: the ledger's current position (send it as base).",
    )


def problem_response(
    exc: ThothError, request_id: str, redactor: PathRedactor | None = None
) -> JSONResponse:
    """The error's problem body; with a `redactor`, its server paths rewritten."""
    status = status_for(exc)
    headers = {REQUEST_ID: request_id}
    if isinstance(exc, Busy):
        headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(exc, RequestTimeout):
        headers["Connection"] = "close"  # what is left of a trickled body is never read
    message, problems = (
        redactor.problem(exc)
        if redactor is not None
        else (exc.message_text(), [p.as_dict() for p in exc.problems])
    )
    body = {
        "code": exc.code,
        "message": message,
        "status": status,
        "problems": problems,
        "request_id": request_id,
    }
    if isinstance(exc, LedgerConflict):
        body["position"] = exc.position
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_JSON)


class Admission:
    """At most `limit` requests held at once in this process (running or waiting for the
    engine). Used from the event loop only: no await between the check and the count."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def enter(self) -> None:
        if self.held >= self.limit:
            raise Busy(
                f"this process already holds {self.held} requests ([service].max_concurrent = "
                f"{self.limit}) -> retry after {RETRY_AFTER_SECONDS} s, or run more processes"
            )
        self.held += 1

    def leave(self) -> None:
        self.held -= 1


class _State:
    """What the lifespan opens once per process."""

    def __init__(self, ws: Workspace, operations: Operations) -> None:
        self.ws = ws
        self.service: ServiceSettings = ws.settings.service
        self.operations = operations
        self.admission = Admission(self.service.max_concurrent)
        self.redactor = PathRedactor(ws.root)
        self.mcp = http_managers(ws, operations, self.service.max_body_bytes)

    def caller_of(self, request: Request) -> CallerSettings:
        """The caller a request's key names (Unauthorized otherwise): /v1 and /mcp alike."""
        return authenticate(
            self.service.callers,
            request.headers.getlist("authorization"),
            list(request.query_params.keys()),
        )


class McpEndpoint:
    """`/mcp`: the MCP streamable HTTP transport, with the API's keys, label ceilings and
    limits. The key (`Authorization: Bearer`) names the caller before a message is read; the
    request goes to that caller's MCP server (its tools apply its ceiling); a request beyond
    `[service].max_concurrent` is 503, a body over `max_body_bytes` 413, as for /v1."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        state: _State = self.app.state.thoth
        request_id = f"req-{secrets.token_hex(6)}"
        request = Request(scope, receive)
        try:
            caller = state.caller_of(request)
            state.admission.enter()
        except ThothError as exc:
            await problem_response(exc, request_id, state.redactor)(scope, receive, send)
            return
        try:
            await state.mcp[caller.name].handle_request(scope, receive, send)
        finally:
            state.admission.leave()


def create_app(workspace_root: Path) -> FastAPI:
    """The application for the workspace at `workspace_root`. Nothing is opened until the
    server starts it (lifespan): `tht service openapi` builds it without a workspace."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        ws = Workspace.open(workspace_root)
        operations = await run_in_threadpool(Operations, ws)
        app.state.thoth = state = _State(ws, operations)
        log.info("thoth service for workspace %s at %s", ws.settings.workspace, ws.root)
        await run_in_threadpool(operations.watch_schedule)  # late or failed routines, logged
        runner = SchedulerThread(ws) if ws.settings.schedule.run_in_service else None
        if runner is not None:
            runner.start()
        try:
            async with AsyncExitStack() as stack:
                for manager in state.mcp.values():
                    await stack.enter_async_context(manager.run())
                yield
        finally:
            if runner is not None:
                await run_in_threadpool(runner.stop)
            await run_in_threadpool(operations.close)

    app = FastAPI(
        title="Thoth",
        version=thoth.__version__,
        summary="Grounded answers, Evidence and knowledge search for calling systems.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    _handlers(app)
    _routes(app)
    _session_routes(app)
    _gap_routes(app)
    _memory_routes(app)
    _hook_routes(app)
    # MCP over HTTP (outside the API document: its own protocol, docs/mcp.md)
    app.router.routes.append(
        Route("/mcp", endpoint=McpEndpoint(app), methods=["GET", "POST", "DELETE"])
    )
    add_web_routes(app)  # GET /: the page (thoth.service.web), outside the API document
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


WORKSPACE_ENV: Final = "THOTH_SERVICE_WORKSPACE"


def app_from_env() -> FastAPI:
    """The factory uvicorn's worker processes import (`tht serve --workers N`): the workspace
    root comes from THOTH_SERVICE_WORKSPACE, which `tht serve` sets."""
    root = os.environ.get(WORKSPACE_ENV)
    if not root:
        raise ConfigError(f"{WORKSPACE_ENV} is not set -> start the service with `tht serve`")
    return create_app(Path(root))


# -- routes ------------------------------------------------------------------------------

_ERRORS: Final[dict[int | str, dict[str, Any]]] = {
    status: {
        "description": description,
        "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/ProblemBody"}}},
    }
    for status, description in (
        (401, "No key, a malformed Authorization header, or an unknown key (`unauthorized`)."),
        (403, "A label above the caller's ceiling (`label_above_ceiling`)."),
        (413, "The body is larger than [service].max_body_bytes (`body_too_large`)."),
        (415, "The body is not application/json (`unsupported_media_type`)."),
        (
            404,
            "No such route, or no such job or session of this caller (`not_found`, "
            "`job_not_found`, `session_not_found`).",
        ),
        (
            409,
            "The job already ended (`job_finished`); a session write based on a stale ledger "
            "position (`ledger_conflict`, with `position`), a closed session "
            "(`session_closed`), a stage not reached or not ready.",
        ),
        (422, "A malformed request; each problem names its field (`bad_request`)."),
        (500, "An unexpected failure (`internal`), logged with the request id."),
        (
            503,
            "The process is full (`busy`, with Retry-After), a component cannot be used, or "
            "no model is configured for deep analysis (`agent_unavailable`).",
        ),
    )
}


def _body_spec(model: type[BaseModel]) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}
            },
        }
    }


def _routes(app: FastAPI) -> None:
    @app.get("/v1/health", tags=["service"])
    async def health() -> dict[str, bool]:
        """Liveness: the process answers (no authentication, nothing checked)."""
        return {"ok": True}

    @app.get(
        "/metrics",
        tags=["service"],
        responses={200: {"content": {"text/plain": {}}}, **_ERRORS},
        response_class=Response,
    )
    async def metrics(request: Request) -> Response:
        """The answers served, failures by code, context dropped, degraded searches, masked
        values and readers' reports, per calling system, in the Prometheus text format.
        Any caller's key may read it (give the scraper a caller of its own)."""

        async def work(state: _State, _caller: CallerSettings) -> Response:
            page = await run_in_threadpool(state.operations.metrics)
            return Response(page, media_type=METRICS_CONTENT_TYPE)

        return await _guarded(request, work)

    @app.get("/v1/ready", tags=["service"], responses=_ERRORS)
    async def ready(request: Request) -> JSONResponse:
        """Readiness: which component (state store, index, embedder, analytics store) can be
        used; 503 with the same body when one cannot."""

        async def work(state: _State, _caller: CallerSettings) -> JSONResponse:
            report = await run_in_threadpool(state.operations.readiness)
            return _reply(request, state, report, 200 if report["ready"] else 503)

        return await _guarded(request, work)

    @app.post("/v1/ask", tags=["answers"], responses=_ERRORS, openapi_extra=_body_spec(AskBody))
    async def ask(request: Request) -> JSONResponse:
        """Answer a question: exactly the object `tht ask --json` prints (without `ok`). A
        failed search is a 200 whose status is "failed"."""
        return await _operation(request, AskBody, lambda ops: ops.ask)

    @app.get(
        "/v1/passage",
        tags=["answers"],
        responses=_ERRORS,
        openapi_extra={"parameters": PASSAGE_PARAMETERS},
    )
    async def passage(request: Request) -> JSONResponse:
        """What a source's `link` opens: the fragment the answer rests on, highlighted, with its
        neighbours, page and heading path, at the revision the answer read. Under the labels an
        ask with the same `labels` may see (the caller's ceiling): 403 `source_not_allowed`,
        404 `source_not_found`, 409 `revision_not_served` otherwise."""

        def work(ops: Operations, caller: CallerSettings) -> dict[str, Any]:
            doc_id, revision, fragment, labels = passage_query(request.query_params)
            return ops.passage(doc_id, revision, fragment, labels, caller)

        return await _call(request, work)

    @app.get(
        "/v1/catalog/query",
        tags=["answers"],
        responses=_ERRORS,
        openapi_extra={"parameters": QUERY_PARAMETERS},
    )
    async def catalog_query(request: Request) -> JSONResponse:
        """What a computed answer's `provenance.link` opens: the reviewed catalog query at the
        activated revision (description, SQL, parameters, result columns, labels) with the
        parameters and data date the answer used. The labels rule of the answer applies."""

        def work(ops: Operations, caller: CallerSettings) -> dict[str, Any]:
            query_id, revision, asked, labels = query_query(request.query_params)
            return ops.catalog_query(query_id, revision, asked, labels, caller)

        return await _call(request, work)

    @app.post(
        "/v1/feedback",
        tags=["answers"],
        status_code=201,
        responses=_ERRORS,
        openapi_extra=_body_spec(FeedbackBody),
    )
    async def feedback(request: Request) -> JSONResponse:
        """Report an answer this caller was given as wrong, incomplete, over_masked or good,
        with a plain-text note; 201 with the stored report (an over_masked one names the
        columns masked and the rule that masked each)."""
        return await _operation(request, FeedbackBody, lambda ops: ops.feedback, status=201)

    @app.post(
        "/v1/evidence/search",
        tags=["search"],
        responses=_ERRORS,
        openapi_extra=_body_spec(EvidenceSearchBody),
    )
    async def evidence_search(request: Request) -> JSONResponse:
        """Search published Evidence: `available` (zero or more results) or `unavailable`
        with a stable code, as `tht evidence search --json` prints it."""
        return await _operation(request, EvidenceSearchBody, lambda ops: ops.evidence_search)

    @app.get("/v1/evidence/units/{unit_id}", tags=["search"], responses=_ERRORS)
    async def evidence_unit(request: Request, unit_id: str) -> JSONResponse:
        """One unit the active generation publishes, as a receipt's `evidence_ids` name it:
        title, kind, body, every indexed excerpt, caveats, provenance and citation. The rule
        of the Evidence search: 403 `label_above_ceiling` for a caller without the Evidence
        labels, 404 `unit_not_found` for an id the generation does not publish."""
        return await _call(request, lambda ops, caller: ops.evidence_unit(unit_id, caller))

    @app.post(
        "/v1/knowledge/search",
        tags=["search"],
        responses=_ERRORS,
        openapi_extra=_body_spec(KnowledgeSearchBody),
    )
    async def knowledge_search(request: Request) -> JSONResponse:
        """The fragments an answer would be written from, with the search status (found,
        nothing_found, failed with its code)."""
        return await _operation(request, KnowledgeSearchBody, lambda ops: ops.knowledge_search)

    @app.post(
        "/v1/jobs",
        tags=["jobs"],
        status_code=202,
        responses={202: {"model": JobView}, **_ERRORS},
        openapi_extra=_body_spec(JobBody),
    )
    async def create_job(request: Request) -> JSONResponse:
        """Queue a question for the deep-analysis agent (a worker runs it: `tht agent
        worker`). 202 with the job; refused without a model configured."""
        return await _operation(request, JobBody, lambda ops: ops.create_job, status=202)

    @app.get("/v1/jobs", tags=["jobs"], responses={200: {"model": JobList}, **_ERRORS})
    async def list_jobs(request: Request) -> JSONResponse:
        """This caller's jobs, newest first (at most 50)."""
        return await _call(request, lambda ops, caller: ops.list_jobs(caller))

    @app.get("/v1/jobs/{job_id}", tags=["jobs"], responses={200: {"model": JobView}, **_ERRORS})
    async def get_job(request: Request, job_id: str) -> JSONResponse:
        """One of this caller's jobs, with its steps so far."""
        return await _call(request, lambda ops, caller: ops.get_job(job_id, caller))

    @app.post(
        "/v1/jobs/{job_id}/cancel", tags=["jobs"], responses={200: {"model": JobView}, **_ERRORS}
    )
    async def cancel_job(request: Request, job_id: str) -> JSONResponse:
        """Cancel a queued job at once; a running one stops at its next step."""
        return await _call(request, lambda ops, caller: ops.cancel_job(job_id, caller))


# -- question→SQL sessions (thoth.service.sessions) ---------------------------------------

IDEMPOTENCY_KEY: Final = "Idempotency-Key"
_KEY_PARAMETER: Final = [
    {"name": IDEMPOTENCY_KEY, "in": "header", "required": False, "schema": {"type": "string"},
     "description": "A retried request with the same key returns the first result."},
]  # fmt: skip
SessionVerb = Callable[[SessionDoor, Any, "str | None"], Any]


def _session_routes(app: FastAPI) -> None:
    """Every verb of a session's life: each returns the object the CLI's `--json` prints."""
    tags: list[str | Enum] = ["sessions"]

    def write(path: str, model: type[BaseModel], verb: SessionVerb, doc: str) -> None:
        async def route(request: Request, session_id: str) -> Response:
            return await _session(request, model, lambda d, b, k: verb(d, (session_id, b), k))

        route.__doc__ = doc
        app.post(
            path,
            tags=tags,
            responses=_ERRORS,
            openapi_extra={**_body_spec(model), "parameters": _KEY_PARAMETER},
            name=path,
        )(route)

    @app.post("/v1/sessions", tags=tags, status_code=201, responses=_ERRORS,
              openapi_extra=_body_spec(SessionNewBody))  # fmt: skip
    async def create_session(request: Request) -> Response:
        """Start a session for a question (`tht session new --json`); it is this caller's."""
        return await _session(request, SessionNewBody, lambda d, b, _k: d.create(b), status=201)

    @app.get("/v1/sessions", tags=tags, responses=_ERRORS)
    async def list_sessions(request: Request) -> Response:
        """This caller's sessions, oldest first (`tht session list --json`)."""
        return await _session(request, None, lambda d, _b, _k: d.sessions())

    @app.get("/v1/sessions/{session_id}", tags=tags, responses=_ERRORS)
    async def show_session(request: Request, session_id: str) -> Response:
        """Standing decisions, receipts, runs, withdrawals, proposals, memories and the ledger
        `position` (`tht session show --json`)."""
        return await _session(request, None, lambda d, _b, _k: d.show(session_id))

    write("/v1/sessions/{session_id}/consult", ConsultBody,
          lambda d, a, k: d.consult(a[0], a[1], k),
          "One Evidence search for a stage, its receipt recorded (`tht session consult --json`); "
          "an unavailable search is 503 with the search's code, nothing recorded.")  # fmt: skip
    write("/v1/sessions/{session_id}/decisions", DecideBody,
          lambda d, a, k: d.decide(a[0], a[1], k),
          "Record a decision of a stage (`tht session decide --json`).")  # fmt: skip
    write("/v1/sessions/{session_id}/retract", RetractBody,
          lambda d, a, k: d.retract(a[0], a[1], k),
          "Withdraw one decision (`tht session retract --json`).")  # fmt: skip
    write("/v1/sessions/{session_id}/reopen", StageChangeBody,
          lambda d, a, k: d.reopen(a[0], a[1], k),
          "Redo a stage (`tht session reopen --json`).")  # fmt: skip
    write("/v1/sessions/{session_id}/rollback", StageChangeBody,
          lambda d, a, k: d.rollback(a[0], a[1], k),
          "Return to a stage (`tht session rollback --json`).")  # fmt: skip
    write("/v1/sessions/{session_id}/sql/run", SqlRunBody,
          lambda d, a, k: d.run_sql(a[0], a[1], k),
          "Run the approved final SQL read-only, its receipt in the ledger (`tht session run "
          "--json`), the rows pseudonymised and only under the request's labels.")  # fmt: skip
    write("/v1/sessions/{session_id}/memories", MemoryChoiceBody,
          lambda d, a, k: d.choose_memories(a[0], a[1], k),
          "F2: apply several proposed memories at once (each as `tht memory choose "
          "--json`).")  # fmt: skip
    write("/v1/sessions/{session_id}/checklist", ChecklistBody,
          lambda d, a, k: d.confirm_checklist(a[0], a[1], k),
          "F8: promote or decline the checklist's candidates in one request; the session "
          "closes when nothing is left.")  # fmt: skip

    @app.post("/v1/sessions/{session_id}/sql/check", tags=tags, responses=_ERRORS,
              openapi_extra=_body_spec(SqlCheckBody))  # fmt: skip
    async def check_sql(request: Request, session_id: str) -> Response:
        """Parse and EXPLAIN a statement read-only, recording nothing: 200, or 422 with the
        refusal's code (`not_read_only`, a refused function, the database's own)."""
        return await _session(request, SqlCheckBody, lambda d, b, _k: d.check_sql(session_id, b))

    @app.get("/v1/sessions/{session_id}/proposals", tags=tags, responses=_ERRORS)
    async def memory_proposals(request: Request, session_id: str) -> Response:
        """F2: memories of other sessions to offer (`tht memory search --json`)."""
        return await _session(request, None, lambda d, _b, _k: d.proposals(session_id))

    @app.get("/v1/sessions/{session_id}/checklist", tags=tags, responses=_ERRORS)
    async def checklist(request: Request, session_id: str) -> Response:
        """F8: the candidates (`tht memory promote --preview --json`), each `preselected`."""
        return await _session(request, None, lambda d, _b, _k: d.checklist(session_id))

    @app.get("/v1/sessions/{session_id}/summary", tags=tags,
             responses={200: {"content": {"text/markdown": {}}}, **_ERRORS},
             response_class=Response)  # fmt: skip
    async def summary(request: Request, session_id: str) -> Response:
        """The session's memories as Markdown (`tht memory summary`)."""
        return await _session(request, None, lambda d, _b, _k: d.summary(session_id))


def _gap_routes(app: FastAPI) -> None:
    """Knowledge gaps (issue 47, point 5): a session records what it was missing; the
    curators read the queue (thoth.session.gaps)."""

    @app.post("/v1/sessions/{session_id}/gaps", tags=["sessions"], responses=_ERRORS,
              openapi_extra=_body_spec(GapBody))  # fmt: skip
    async def record_gap(request: Request, session_id: str) -> Response:
        """Record a knowledge gap: a concept no Evidence defines, a consultation that found
        nothing (`receipt_seq`); a ledger entry, not a decision (`tht session gap --json`)."""
        return await _session(request, GapBody, lambda d, b, k: d.record_gap(session_id, b, k))

    @app.get("/v1/gaps", tags=["sessions"], responses=_ERRORS)
    async def list_gaps(request: Request) -> Response:
        """The open knowledge gaps of this caller's sessions; a caller declared `curator =
        true` sees every session's (the curators' queue, as `tht evidence gaps --json`)."""
        return await _session(request, None, lambda d, _b, _k: d.gaps())


_HOOK_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    202: {"description": "A push of a served source's branch: a docs sync is queued."},
    **{
        status: {
            "description": description,
            "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/ProblemBody"}}},
        }
        for status, description in (
            (401, "Neither X-Hub-Signature-256 nor X-Gitlab-Token (`hook_unsigned`)."),
            (403, "The signature or token does not match the secret (`hook_bad_signature`)."),
            (404, "No secret for that forge in [schedule.hook] (`hook_not_configured`)."),
            (413, "The body is larger than [service].max_body_bytes (`body_too_large`)."),
            (422, "A signed body that is not a push payload (`hook_bad_payload`)."),
            (500, "An unexpected failure (`internal`), logged with the request id."),
            (503, "The process is full (`busy`), or the state store cannot be used."),
        )
    },
}


def _hook_routes(app: FastAPI) -> None:
    """Realign on publish (issue 50, point 3): a forge's push webhook, authenticated by its
    signature rather than an API key (a forge sends no Authorization header)."""

    @app.post("/v1/hooks/git", tags=["service"], responses=_HOOK_RESPONSES)
    async def git_hook(request: Request) -> JSONResponse:
        """A GitHub (X-Hub-Signature-256) or GitLab (X-Gitlab-Token) push webhook: when its
        signature matches the secret of [schedule.hook] and it names the repository and
        branch a source's served clone follows, a docs sync is queued (202, the run's key;
        `tht schedule worker` runs it, its sync run names the commit). A push no source
        follows, or another event, is 200 and queues nothing; a refused one changes nothing."""
        request_id = f"req-{secrets.token_hex(6)}"
        state: _State = request.app.state.thoth
        try:
            async with asyncio.timeout(state.service.body_timeout_seconds):
                body = await read_body(request, state.service.max_body_bytes)
            headers = {k.lower(): v for k, v in request.headers.items()}
            state.admission.enter()
            try:
                outcome = await run_in_threadpool(state.operations.git_hook, headers, body)
            finally:
                state.admission.leave()
        except TimeoutError:
            exc = RequestTimeout(
                f"the body did not arrive within {state.service.body_timeout_seconds:g} s"
            )
            return problem_response(exc, request_id, state.redactor)
        except ThothError as exc:
            log.warning(
                "request %s %s refused [%s]: %s", request_id, request.url.path, exc.code, exc
            )
            return problem_response(exc, request_id, state.redactor)
        except Exception:  # the last resort, as in _guarded: logged, 500 with the request id
            log.exception("request %s %s: unexpected failure", request_id, request.url.path)
            return problem_response(_internal(request_id), request_id)
        response = JSONResponse(outcome.as_dict(), status_code=202 if outcome.queued else 200)
        response.headers[REQUEST_ID] = request_id
        return response


async def _session(
    request: Request,
    model: type[BaseModel] | None,
    verb: Callable[[SessionDoor, Any, str | None], Any],
    status: int = 200,
) -> Response:
    """A session verb for the request's caller, off the event loop (the verbs that need the
    engine hand that part to its thread)."""

    async def work(state: _State, caller: CallerSettings) -> Response:
        keys = request.headers.getlist(IDEMPOTENCY_KEY)
        if len(keys) > 1:
            raise RequestError(f"more than one {IDEMPOTENCY_KEY} header")
        body = validate(model, request.state.body) if model is not None else None
        door = SessionDoor(state.ws, caller, state.operations.with_runtime)
        result = await run_in_threadpool(verb, door, body, keys[0] if keys else None)
        if isinstance(result, str):
            return Response(result, media_type="text/markdown; charset=utf-8")
        return _reply(request, state, result, status)

    return await _guarded(request, work, with_body=model is not None)


def _memory_routes(app: FastAPI) -> None:
    """The curator's verbs on memories (thoth.service.memories): `tht memory list|retire|merge`."""
    tags: list[str | Enum] = ["memories"]

    @app.get("/v1/memories", tags=tags, responses=_ERRORS)
    async def list_memories(request: Request) -> Response:
        """Every memory: state, history, provenance, the sessions that used it, and
        near-duplicate pairs to merge (`tht memory list --json`). Curators only."""
        return await _memories(request, None, lambda d, _b: d.listing())

    @app.post("/v1/memories/retire", tags=tags, responses=_ERRORS,
              openapi_extra=_body_spec(RetireBody))  # fmt: skip
    async def retire_memory(request: Request) -> Response:
        """Retire a memory: never proposed again at F2 (`tht memory retire --json`). Curators
        only; the registry records the caller as who retired it."""
        return await _memories(request, RetireBody, lambda d, b: d.retire(b))

    @app.post("/v1/memories/merge", tags=tags, responses=_ERRORS,
              openapi_extra=_body_spec(MergeBody))  # fmt: skip
    async def merge_memories(request: Request) -> Response:
        """Merge memories that say the same thing into `keep`, which keeps all their
        provenance (`tht memory merge --json`). Curators only."""
        return await _memories(request, MergeBody, lambda d, b: d.merge(b))


async def _memories(
    request: Request, model: type[BaseModel] | None, verb: Callable[[MemoryDoor, Any], Any]
) -> Response:
    async def work(state: _State, caller: CallerSettings) -> Response:
        body = validate(model, request.state.body) if model is not None else None
        door = MemoryDoor(state.ws, caller, state.operations.with_runtime)
        return _reply(request, state, await run_in_threadpool(verb, door, body))

    return await _guarded(request, work, with_body=model is not None)


PASSAGE_PARAMETERS: Final = [
    {"name": "doc_id", "in": "query", "required": True, "schema": {"type": "string"},
     "description": "The source's doc_id, as the answer's source gave it."},
    {"name": "revision", "in": "query", "required": True, "schema": {"type": "string"},
     "description": "The revision the answer read it at."},
    {"name": "fragment", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 0}, "description": "The fragment to highlight."},
    {"name": "labels", "in": "query", "required": False,
     "schema": {"type": "array", "items": {"type": "string"}},
     "description": "The labels of the ask (repeat it); default: the default labels."},
]  # fmt: skip
_PASSAGE_KEYS: Final = {"doc_id", "revision", "fragment", "labels"}


class _LinkQuery:
    """A link's query string, read after the key: every fault becomes a Problem naming the
    parameter, and `checked()` refuses them all at once, like every other bad request."""

    def __init__(self, params: Any, keys: set[str]) -> None:
        self.params = params
        self.problems = [
            Problem("", f"unknown parameter {k[:40]!r}", field=k, code="unknown_field")
            for k in sorted(set(params.keys()) - keys)
        ]

    def one(
        self, name: str, limit: int | None = None, least: int = 1, required: bool = True
    ) -> str | None:
        """The parameter given once (None when optional and absent, or at fault)."""
        values = self.params.getlist(name)
        if not values and not required:
            return None
        too_long = limit is not None and len(values[0]) > limit if len(values) == 1 else False
        if len(values) != 1 or len(values[0].strip()) < least or too_long:
            size = f", {least} to {limit} characters" if limit is not None else ""
            self.fault(name, f"{name} must be given once{size}")
            return None
        return str(values[0])

    def fault(self, name: str, message: str) -> None:
        self.problems.append(
            Problem("", message, field=name, hint="open the link as the answer gave it",
                    code="invalid")
        )  # fmt: skip

    def labels(self) -> list[str] | None:
        return self.params.getlist("labels") or None

    def checked(self) -> None:
        if self.problems:
            raise RequestError("the link is malformed", problems=self.problems)


def passage_query(params: Any) -> tuple[str, str, int | None, list[str] | None]:
    """A source link's query string (GET /v1/passage)."""
    link = _LinkQuery(params, _PASSAGE_KEYS)
    # A fragment published without a revision (none recorded) is linked with an empty one.
    doc_id, revision = link.one("doc_id", 1000), link.one("revision", 200, least=0)
    given = link.one("fragment", required=False)
    fragment: int | None = None
    if given is not None:
        if given.isdigit() and len(given) <= 9:
            fragment = int(given)
        else:
            link.fault("fragment", "fragment must be one whole number")
    link.checked()
    assert doc_id is not None and revision is not None
    return doc_id, revision, fragment, link.labels()


QUERY_PARAMETERS: Final = [
    {"name": "query_id", "in": "query", "required": True, "schema": {"type": "string"}},
    {"name": "revision", "in": "query", "required": True, "schema": {"type": "string"}},
    {"name": "parameters", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "The parameters the answer bound, as a JSON object."},
    {"name": "data_date", "in": "query", "required": False, "schema": {"type": "string"}},
    {"name": "labels", "in": "query", "required": False,
     "schema": {"type": "array", "items": {"type": "string"}}},
]  # fmt: skip
_QUERY_KEYS: Final = {"query_id", "revision", "parameters", "data_date", "labels"}


def query_query(params: Any) -> tuple[str, str, dict[str, Any], list[str] | None]:
    """A catalog query link's query string (GET /v1/catalog/query)."""
    link = _LinkQuery(params, _QUERY_KEYS)
    query_id, revision = link.one("query_id"), link.one("revision")
    given = link.one("parameters", least=0, required=False)
    data_date = link.one("data_date", least=0, required=False)
    try:
        bound: Any = json.loads((given or "{}")[:1000])
    except json.JSONDecodeError:
        bound = None
    if not isinstance(bound, dict):
        link.fault("parameters", "parameters must be a JSON object")
    link.checked()
    assert query_id is not None and revision is not None
    asked = {"parameters": bound, "data_date": data_date[:1000] if data_date else data_date}
    return query_id[:1000], revision[:1000], asked, link.labels()


async def _call(
    request: Request,
    work: Callable[[Operations, CallerSettings], dict[str, Any]],
) -> JSONResponse:
    """An operation without a body (a GET, a cancel)."""

    async def run(state: _State, caller: CallerSettings) -> JSONResponse:
        return _reply(request, state, await run_in_threadpool(work, state.operations, caller))

    return await _guarded(request, run)


async def _operation(
    request: Request,
    model: type[B],
    pick: Callable[[Operations], Callable[[B, CallerSettings], dict[str, Any]]],
    status: int = 200,
) -> JSONResponse:
    async def work(state: _State, caller: CallerSettings) -> JSONResponse:
        body = validate(model, request.state.body)
        result = await run_in_threadpool(pick(state.operations), body, caller)
        return _reply(request, state, result, status)

    return await _guarded(request, work, with_body=True)


async def _guarded(
    request: Request,
    work: Callable[[_State, CallerSettings], Awaitable[R]],
    *,
    with_body: bool = False,
) -> R | JSONResponse:
    """Authenticate, read the body within its deadline, admit, run; any error becomes its
    problem response. The body is read before admission: a client that trickles it holds
    no slot, and is cut off with 408 at `[service].body_timeout_seconds`."""
    request_id = f"req-{secrets.token_hex(6)}"
    request.state.request_id = request_id  # for `_reply`'s log line
    state: _State = request.app.state.thoth
    try:
        caller = state.caller_of(request)
        if with_body:
            request.state.body = await read_json_within(
                request, state.service.max_body_bytes, state.service.body_timeout_seconds
            )
        state.admission.enter()
        try:
            response = await work(state, caller)
        finally:
            state.admission.leave()
    except ThothError as exc:
        problem = problem_response(exc, request_id, state.redactor)
        if status_for(exc) >= 500 and not isinstance(exc, Busy):
            log.error("request %s %s failed [%s]: %s", request_id, request.url.path, exc.code, exc)
        elif state.redactor.problem(exc) != (
            exc.message_text(),
            [p.as_dict() for p in exc.problems],
        ):
            # The caller was given the paths rewritten: the log keeps what they were.
            log.warning(
                "request %s %s failed [%s]: %s", request_id, request.url.path, exc.code, exc
            )
        return problem
    except Exception:
        # The last resort, not a swallow: the traceback is logged under the request id, and the
        # caller gets a 500 `internal` naming that id (never the traceback, never a bare 500).
        log.exception("request %s %s: unexpected failure", request_id, request.url.path)
        return problem_response(_internal(request_id), request_id)
    response.headers[REQUEST_ID] = request_id
    return response


def _reply(request: Request, state: _State, result: Any, status: int = 200) -> JSONResponse:
    """`result` as the response, its failures' server paths rewritten; the log keeps the
    original text under the request id."""
    public, hidden = state.redactor.failures(result)
    if hidden:
        log.warning(
            "request %s %s failed: %s",
            request.state.request_id,
            request.url.path,
            " | ".join(hidden),
        )
    return JSONResponse(public, status_code=status)


def _internal(request_id: str) -> InternalError:
    return InternalError(
        f"unexpected failure (request {request_id}) -> the service log has the details "
        "under this request id"
    )


# -- the body ------------------------------------------------------------------------------


async def read_json_within(request: Request, limit: int, seconds: float) -> Any:
    """`read_json` under a deadline for the whole body."""
    try:
        async with asyncio.timeout(seconds):
            return await read_json(request, limit)
    except TimeoutError:
        raise RequestTimeout(
            f"the body did not arrive within {seconds:g} s ([service].body_timeout_seconds) "
            "-> send the whole body at once; the connection is closed"
        ) from None


async def read_json(request: Request, limit: int) -> Any:
    """The body parsed as JSON: at most `limit` bytes (declared or streamed), UTF-8 without a
    byte-order mark (RFC 8259: never a guessed encoding), one object with no key given
    twice, no NaN or Infinity."""
    media, _, parameters = request.headers.get("content-type", "").partition(";")
    media = media.strip().lower()
    if media != "application/json":
        raise UnsupportedMediaType(
            f"the body must be application/json (Content-Type is {media or 'missing'})"
        )
    charset = _charset(parameters)
    if charset not in (None, "utf-8", "utf8"):
        raise _not_utf8(f"Content-Type declares charset={charset}")
    raw = await read_body(request, limit)
    if raw.startswith(_BOMS):
        raise _not_utf8("it starts with a byte-order mark (UTF-8, UTF-16 or UTF-32)")
    if b"\x00" in raw:  # never in JSON text (a NUL is escaped): UTF-16 or UTF-32 without BOM
        raise _not_utf8("it holds NUL bytes: it looks like UTF-16 or UTF-32")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(str(exc)) from None
    try:
        data = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=_no_constant,
        )
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError too
        raise RequestError(
            f"the body is not valid JSON: {exc}",
            problems=[Problem("body", f"not valid JSON: {exc}", code="invalid_json")],
        ) from exc
    if not isinstance(data, dict):
        raise RequestError(f"the body must be a JSON object, not {type(data).__name__}")
    return data


async def read_body(request: Request, limit: int) -> bytes:
    """The body's bytes, at most `limit` (declared by Content-Length or counted while
    streaming, so a chunked body is bounded too)."""
    declared = request.headers.getlist("content-length")
    if len(declared) > 1:
        raise RequestError("more than one Content-Length header")
    if declared and declared[0].isdigit() and int(declared[0]) > limit:
        raise _too_large(int(declared[0]), limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(size, limit, streamed=True)
        chunks.append(chunk)
    return b"".join(chunks)


_BOMS: Final = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")  # UTF-32's start as UTF-16's


def _charset(parameters: str) -> str | None:
    for parameter in parameters.split(";"):
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return None


def _not_utf8(why: str) -> BodyNotUtf8:
    return BodyNotUtf8(
        f"the body must be UTF-8 JSON without a byte-order mark (RFC 8259): {why} -> "
        "encode it as UTF-8",
        problems=[Problem("body", f"not UTF-8: {why}", code="body_not_utf8")],
    )


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(f"key {key!r} is given more than once")
        seen[key] = value
    return seen


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _too_large(size: int, limit: int, streamed: bool = False) -> BodyTooLarge:
    said = f"more than {limit}" if streamed else f"{size}"
    return BodyTooLarge(
        f"the body has {said} bytes; the limit is {limit} ([service].max_body_bytes)",
        problems=[
            Problem(
                "body",
                f"{said} bytes, over the limit of {limit}",
                hint="send a shorter body",
                code="body_too_large",
            )
        ],
    )


# -- errors outside the routes -------------------------------------------------------------


def _handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        request_id = f"req-{secrets.token_hex(6)}"
        body = {
            "code": code,
            "message": str(exc.detail),
            "status": exc.status_code,
            "problems": [Problem("", str(exc.detail), code=code).as_dict()],
            "request_id": request_id,
        }
        return JSONResponse(
            body,
            status_code=exc.status_code,
            headers={REQUEST_ID: request_id, **(exc.headers or {})},
            media_type=PROBLEM_JSON,
        )

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        request_id = f"req-{secrets.token_hex(6)}"
        log.error("request %s %s: unexpected failure", request_id, request.url.path, exc_info=exc)
        return problem_response(_internal(request_id), request_id)


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The schema with the body models and the problem body as components."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title, version=app.version, summary=app.summary, routes=app.routes
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    models: tuple[type[BaseModel], ...] = (
        *BODY_MODELS,
        *SESSION_BODY_MODELS,
        RetireBody,
        MergeBody,
        ProblemBody,
    )
    for model in models:
        spec = model.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(spec.pop("$defs", {}))
        components[model.__name__] = spec
    app.openapi_schema = dict(sorted(schema.items()))
    return app.openapi_schema
