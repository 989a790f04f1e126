"""`tht mcp`: the service's operations as Model Context Protocol tools, over stdio, for one
local user and the assistant they run.

Tools: `ask`, `evidence_search`, `evidence_unit`, `knowledge_search`, `passage`,
`catalog_query`, `feedback`, `job_submit`, `job_show`, `job_list`, `job_cancel`, the
question→SQL session verbs (`session_*`: one `SessionDoor` verb each, the input schema the
HTTP route's own body model with `session_id`; `on_session`), `gap_list`, and the curators'
`memory_*`. Each tool calls the code of one HTTP route, named in
its `_meta` (`thoth/route`); the routes that are no tool are `HTTP_ONLY`, with why. The prompt
`session_stages` teaches an agent the stages from `thoth.workflow.guide`, the source of the
built-in driver's instructions. Each other
tool's input schema is the JSON Schema of the same request model the HTTP API validates
(`thoth.service.models`, built on `SearchRequest`), so a new request field reaches MCP without
an edit here; arguments are validated by that model, an unknown field refused naming it.

The server runs as a declared calling system (`--caller NAME`, one of `[service].callers`):
its label ceiling bounds every request and its name goes to the answer log, exactly as over
HTTP. There is no key: whoever starts `tht mcp` already reads thoth.toml.

Results: a tool's structured content is the object the HTTP API returns (the answer of `tht ask
--json`, the Evidence outcome, the fragments), with status, sources and caveats; its text
content is the same object as JSON, for clients that read text only. Failures are tool errors
(`isError`) whose structured content is {code, message, problems: [{..., hint}], request_id} —
the stable code and what to do; paths in it are relative to the workspace (`<workspace>/...`) or
redacted, and the full message is on stderr under the request id. A search that could not run
(an index missing or damaged, a state store unreachable) is such an error, never an empty
result; `nothing_found` is a result.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field, create_model

from thoth.config import CallerSettings, Settings
from thoth.errors import ConfigError, Problem, ThothError, file_access_error
from thoth.service.memories import MemoryDoor, MergeBody, RetireBody
from thoth.service.models import (
    AskBody,
    CatalogQueryBody,
    EvidenceSearchBody,
    FeedbackBody,
    JobBody,
    KnowledgeSearchBody,
    PassageBody,
    validate,
)
from thoth.service.operations import Operations
from thoth.service.redact import PathRedactor
from thoth.service.sessions import (
    ChecklistBody,
    ConsultBody,
    DecideBody,
    GapBody,
    MemoryChoiceBody,
    RetractBody,
    SessionDoor,
    SessionNewBody,
    SqlCheckBody,
    SqlRunBody,
    StageChangeBody,
)
from thoth.workflow.guide import agent_guide
from thoth.workspace import Workspace

log = logging.getLogger("thoth.service.mcp")
B = TypeVar("B", bound=BaseModel)

SERVER_NAME: Final = "thoth"
INSTRUCTIONS: Final = (
    "Thoth answers questions from a curated corpus (documents, wiki pages, Evidence Units) "
    "with the sources it used. A status of nothing_found means the corpus holds nothing for "
    "the question under the labels given; an error means the search could not run: say so, "
    "never read it as an absence of knowledge."
)
STAGES_PROMPT: Final = "session_stages"
# The key of a tool's _meta naming the HTTP route whose code the tool calls.
ROUTE_META: Final = "thoth/route"
# The routes of the HTTP API that are deliberately no tool, and why (tests/service/
# test_contract.py: every other route is some tool's).
HTTP_ONLY: Final[Mapping[str, str]] = {
    "GET /metrics": "the operators' Prometheus scrape, not something an assistant asks",
    "GET /v1/health": "a load balancer's liveness probe; an MCP client sees the server answer",
    "GET /v1/ready": "a load balancer's readiness probe; an MCP client sees the server answer",
    "POST /v1/hooks/git": "a forge's signed push webhook; no assistant calls it",
}
# How this server's tools apply the stages; the stages themselves come from
# thoth.workflow.guide, the source of the built-in driver's instructions too.
_STAGES_INTRO: Final = """\
You drive a question→SQL session of Thoth for a person who reviews it: stages F1 to F8, each
deciding something, every decision recorded in an append-only ledger with the Evidence it
rests on. Nothing is decided for you: you consult, decide, check and run with these tools.

- Start with session_create (the question as asked); session_show gives the standing
  decisions, the receipts and `position`.
- Every write names `base`: the ledger position it was based on (`position` of
  session_show, or the `seq` of your last write; a consultation's `receipt_seq`). A ledger
  that has grown since refuses it with `ledger_conflict` and the current position: read the
  session again, then decide again if it still holds.
- A stage that consults Evidence must be consulted (session_consult) before its decisions:
  the receipt is what the reviewer audits. An unavailable search is an error with its code,
  never an absence of knowledge; nothing_found is a result: say so, never invent.
  evidence_unit opens a unit a result or a receipt names, whole (body, every excerpt).
- A stage whose inputs are not settled refuses its decisions (`stage_not_reached`).
- F2 (memory): session_proposals, then session_choose_memories for those that fit.
- F7 (final_sql): session_sql_check the statement (nothing recorded), decide
  final_sql_approved with the statement as detail, then session_sql_run.
- F8 (memory_promotion): session_checklist, then session_confirm_checklist (promote or
  decline each candidate); the session closes when none is left.
- Withdraw with session_retract, redo with session_reopen or session_rollback.
- At any stage, when no Evidence defines a concept the question needs, or a consultation
  found nothing, record it with session_gap (the receipt_seq of that consultation): the
  curators see it in their queue (gap_list lists yours). Never fill the gap with a guess."""


def stages_prompt() -> str:
    """The `session_stages` prompt: this server's tools, then each stage from the guide."""
    return agent_guide(_STAGES_INTRO)


# What to do about an unavailable search whose message names no remedy.
UNAVAILABLE_HINT: Final = (
    "the search could not run, which says nothing about the corpus: fix the cause (`tht "
    "index check`, `tht docs sync`), then ask again"
)


class EvidenceUnitBody(BaseModel):
    """One published Evidence Unit (GET /v1/evidence/units/{unit_id})."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    unit_id: str = Field(
        description="The unit's evidence_id, as evidence_search or a receipt's evidence_ids "
        "name it (evidence:...)."
    )


class JobIdBody(BaseModel):
    """One of the caller's deep-analysis jobs, by id (GET /v1/jobs/{job_id} and its cancel)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    job_id: str = Field(
        description="The job id (job_ + 24 hex digits), as job_submit or job_list gave it."
    )


class SearchUnavailable(ThothError):
    """A search (or an answer's search) could not run: the outcome's stable code, its message
    split into what failed and what to do, and the outcome itself."""

    def __init__(self, code: str, message: str, outcome: Mapping[str, Any]) -> None:
        what, _, hint = (message or code).partition(" -> ")
        super().__init__(
            what,
            code=code,
            problems=[Problem("", what, hint=hint or UNAVAILABLE_HINT, code=code)],
        )
        self.outcome = dict(outcome)


_STRICT: Final = ConfigDict(extra="forbid", frozen=True, strict=True)
_SESSION_ID: Final = "The session id (s-YYYYMMDD-HHMMSS-xxxxxx), as session_create gave it."
_IDEMPOTENCY: Final = (
    "Optional, as the HTTP Idempotency-Key header: a retry with the same key returns the "
    "first result, never a second write."
)


class NoArguments(BaseModel):
    """A tool that takes nothing."""

    model_config = _STRICT


def on_session(body: type[BaseModel] | None, *, write: bool) -> type[BaseModel]:
    """A session tool's arguments: the HTTP route's body model itself (its fields, validators
    and descriptions: thoth.service.sessions) with the route's path parameter `session_id`
    and, for a write, its `Idempotency-Key` header as `idempotency_key`."""
    extra: dict[str, Any] = {"session_id": (str, Field(description=_SESSION_ID))}
    if write:
        extra["idempotency_key"] = (str | None, Field(default=None, description=_IDEMPOTENCY))
    base = body if body is not None else NoArguments
    name = f"{base.__name__}Tool" if body is not None else "SessionIdTool"
    model: type[BaseModel] = create_model(name, __base__=base, **extra)
    return model


def http_body(model: type[B], arguments: BaseModel) -> B:
    """The HTTP body within a session tool's validated arguments (already checked by the
    same model: constructed, not validated twice)."""
    return model.model_construct(**{k: getattr(arguments, k) for k in model.model_fields})


@dataclass(frozen=True)
class Tool:
    name: str
    route: str  # the HTTP route whose code it calls ("GET /v1/gaps"), in the tool's _meta
    title: str
    description: str
    model: type[BaseModel]
    run: Callable[[Any], dict[str, Any]]  # the validated body -> the structured result
    writes: bool = False  # it changes a ledger or a queue (not read-only for the client)

    def definition(self) -> types.Tool:
        schema = self.model.model_json_schema()
        schema.pop("title", None)
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=schema,
            annotations=types.ToolAnnotations(read_only_hint=not self.writes),
            meta={ROUTE_META: self.route},
        )


class ThothTools:
    """The tools of one workspace, run as `caller`. Calls run one at a time (one local user;
    the engine serialises its calls anyway)."""

    def __init__(self, ws: Workspace, operations: Operations, caller: CallerSettings) -> None:
        self.ws = ws
        self.operations = operations
        self.caller = caller
        self.redactor = PathRedactor(ws.root)
        self.tools: dict[str, Tool] = {
            t.name: t
            for t in (
                Tool(
                    "ask",
                    "POST /v1/ask",
                    "Ask the corpus",
                    "Answer a question from the corpus, with its sources and a status: found, "
                    "truncated, nothing_found, computed or needs_parameter. Caveats of the "
                    "sources are in the text next to the claims they qualify.",
                    AskBody,
                    self._ask,
                ),
                Tool(
                    "knowledge_search",
                    "POST /v1/knowledge/search",
                    "Search documents, wiki and Evidence",
                    "The fragments an answer would be written from, best first, each with its "
                    "source, title, heading path, kind, score, labels and caveats.",
                    KnowledgeSearchBody,
                    self._knowledge_search,
                ),
                Tool(
                    "evidence_search",
                    "POST /v1/evidence/search",
                    "Search Evidence Units",
                    "Published Evidence Units for a purpose (disambiguation, rewriting, "
                    "schema_linking, sql_generation), each with excerpts, caveats and "
                    "provenance at the revision searched.",
                    EvidenceSearchBody,
                    self._evidence_search,
                ),
                Tool(
                    "evidence_unit",
                    "GET /v1/evidence/units/{unit_id}",
                    "Open an Evidence Unit",
                    "One unit the active generation publishes, by the evidence_id a search "
                    "result or a receipt names: title, kind, body, every indexed excerpt, "
                    "caveats, provenance and citation. Refused with unit_not_found for an id "
                    "not published, as evidence_search for a caller without the Evidence labels.",
                    EvidenceUnitBody,
                    lambda b: self.operations.evidence_unit(b.unit_id, self.caller),
                ),
                Tool(
                    "passage",
                    "GET /v1/passage",
                    "Open a source",
                    "What a source of an answer rests on: give its doc_id, revision and "
                    "fragment (from the source's link) and the labels you asked with; returns the "
                    "fragment highlighted with its neighbours, page and heading path. Refused "
                    "with a code when the labels may not see it or the revision is not served.",
                    PassageBody,
                    self._passage,
                ),
                Tool(
                    "feedback",
                    "POST /v1/feedback",
                    "Report an answer",
                    "Say that an answer you were given (by its id) is wrong, incomplete, "
                    "over_masked (a useful value was covered) or good, with a plain-text "
                    "note: it goes to the curator's queue.",
                    FeedbackBody,
                    self._feedback,
                    writes=True,
                ),
                Tool(
                    "job_submit",
                    "POST /v1/jobs",
                    "Queue a deep analysis",
                    "Queue a multi-step question for the deep-analysis agent (a worker runs "
                    "it); returns the job, queued. Refused without a model configured.",
                    JobBody,
                    self._job_submit,
                ),
                Tool(
                    "job_show",
                    "GET /v1/jobs/{job_id}",
                    "Show a deep analysis",
                    "One of your jobs: its status — completed, partial (an answer with gaps: "
                    "error_code and error say what it could not reach), failed, cancelled, or "
                    "still queued/running — its result with sources, gaps and checked "
                    "figures, and its transcript.",
                    JobIdBody,
                    lambda b: self.operations.get_job(b.job_id, self.caller),
                ),
                Tool(
                    "job_list",
                    "GET /v1/jobs",
                    "List your deep analyses",
                    "Your jobs, newest first (at most 50), each with its id, question, status "
                    "(queued, running, completed, partial, failed, cancelled) and times; "
                    "job_show opens one. Another caller's jobs are not listed.",
                    NoArguments,
                    lambda _b: self.operations.list_jobs(self.caller),
                ),
                Tool(
                    "job_cancel",
                    "POST /v1/jobs/{job_id}/cancel",
                    "Cancel a deep analysis",
                    "Cancel one of your jobs: a queued one at once, a running one at its next "
                    "step (cancel_requested). Refused with job_finished for a job that already "
                    "ended (its outcome is kept), job_not_found for an id that is not yours.",
                    JobIdBody,
                    lambda b: self.operations.cancel_job(b.job_id, self.caller),
                    writes=True,
                ),
                Tool(
                    "catalog_query",
                    "GET /v1/catalog/query",
                    "Open a computed answer's query",
                    "What a computed answer's provenance rests on: give its query_id, "
                    "catalog_revision (as revision), parameters, data_date and the labels you "
                    "asked with; returns the reviewed catalog query at that revision "
                    "(description, SQL, parameters, result columns, labels) with what the answer "
                    "bound in `asked`. Refused with a code: source_not_found (no such query), "
                    "revision_not_served (the catalog moved on), source_not_allowed (labels that "
                    "may not see its figures).",
                    CatalogQueryBody,
                    self._catalog_query,
                ),
                *self._session_tools(),
                *self._memory_tools(),
            )
        }

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
        tool = self.tools.get(name)
        if tool is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown tool {name!r}: the tools are {', '.join(self.tools)}",
            )
        try:
            data = tool.run(validate(tool.model, dict(arguments or {})))
        except ThothError as exc:
            return self._failed(name, exc)
        except OSError as exc:  # a path the operating system refused, named as the CLI does
            return self._failed(name, file_access_error(exc))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=_json(data))],
            structured_content=data,
        )

    def _failed(self, name: str, exc: ThothError) -> types.CallToolResult:
        """The tool error the assistant sees (server paths rewritten); the full message goes
        to the log (stderr) under the request id the error carries."""
        request_id = f"mcp-{secrets.token_hex(6)}"
        log.warning("tool call %s %s failed [%s]: %s", request_id, name, exc.code, exc)
        return error_result(exc, request_id, self.redactor)

    # -- the tools ---------------------------------------------------------------------

    def _ask(self, body: AskBody) -> dict[str, Any]:
        answer = self.operations.ask(body, self.caller)
        if answer["status"] == "failed":
            raise SearchUnavailable(
                answer.get("error_code") or "answer_failed",
                _answer_error(answer),
                answer,
            )
        return answer

    def _passage(self, body: PassageBody) -> dict[str, Any]:
        labels = list(body.labels) if body.labels is not None else None
        return self.operations.passage(
            body.doc_id, body.revision, body.fragment, labels, self.caller
        )

    def _feedback(self, body: FeedbackBody) -> dict[str, Any]:
        return self.operations.feedback(body, self.caller)

    def _job_submit(self, body: JobBody) -> dict[str, Any]:
        return self.operations.create_job(body, self.caller)

    def _catalog_query(self, body: CatalogQueryBody) -> dict[str, Any]:
        labels = list(body.labels) if body.labels is not None else None
        asked = {"parameters": dict(body.parameters), "data_date": body.data_date}
        return self.operations.catalog_query(
            body.query_id, body.revision, asked, labels, self.caller
        )

    def _knowledge_search(self, body: KnowledgeSearchBody) -> dict[str, Any]:
        found = self.operations.knowledge_search(body, self.caller)
        if found["status"] == "failed":
            raise SearchUnavailable(found["error_code"] or "failed", found["error"] or "", found)
        return found

    def _evidence_search(self, body: EvidenceSearchBody) -> dict[str, Any]:
        outcome = self.operations.evidence_search(body, self.caller)
        if outcome["status"] != "available":
            raise SearchUnavailable(outcome["code"], outcome["message"] or "", outcome)
        return outcome

    # -- the session tools: one SessionDoor verb each, as the HTTP routes -------------

    def _door(self) -> SessionDoor:
        return SessionDoor(self.ws, self.caller, self.operations.with_runtime)

    def _session_tools(self) -> tuple[Tool, ...]:
        def door() -> SessionDoor:
            return self._door()

        return (
            Tool(
                "session_create",
                "POST /v1/sessions",
                "Start a question→SQL session",
                "Start a session for a question (POST /v1/sessions); it is this caller's. "
                "Read the prompt session_stages for how to drive it.",
                SessionNewBody,
                lambda b: door().create(b),
                writes=True,
            ),
            Tool(
                "session_list",
                "GET /v1/sessions",
                "List your sessions",
                "This caller's sessions, oldest first (GET /v1/sessions).",
                NoArguments,
                lambda _b: door().sessions(),
            ),
            Tool(
                "session_show",
                "GET /v1/sessions/{session_id}",
                "Show a session",
                "A session's standing decisions, Evidence receipts, runs, proposals and "
                "memories, and `position`: the ledger position every write names as `base`.",
                on_session(None, write=False),
                lambda b: door().show(b.session_id),
            ),
            Tool(
                "session_consult",
                "POST /v1/sessions/{session_id}/consult",
                "Consult Evidence for a session stage",
                "Search Evidence for one stage of a question→SQL session with what the "
                "session has settled, and record the receipt in its ledger (`receipt_seq`).",
                on_session(ConsultBody, write=True),
                lambda b: door().consult(
                    b.session_id, http_body(ConsultBody, b), b.idempotency_key
                ),
                writes=True,
            ),
            Tool(
                "session_decide",
                "POST /v1/sessions/{session_id}/decisions",
                "Record a decision",
                "Record a decision of a stage (POST /v1/sessions/{id}/decisions).",
                on_session(DecideBody, write=True),
                lambda b: door().decide(b.session_id, http_body(DecideBody, b), b.idempotency_key),
                writes=True,
            ),
            Tool(
                "session_retract",
                "POST /v1/sessions/{session_id}/retract",
                "Withdraw a decision",
                "Withdraw one decision for good, with a rationale.",
                on_session(RetractBody, write=True),
                lambda b: door().retract(
                    b.session_id, http_body(RetractBody, b), b.idempotency_key
                ),
                writes=True,
            ),
            Tool(
                "session_reopen",
                "POST /v1/sessions/{session_id}/reopen",
                "Reopen a stage",
                "Redo a stage (its decisions withdrawn); a closed session opens again.",
                on_session(StageChangeBody, write=True),
                lambda b: door().reopen(
                    b.session_id, http_body(StageChangeBody, b), b.idempotency_key
                ),
                writes=True,
            ),
            Tool(
                "session_rollback",
                "POST /v1/sessions/{session_id}/rollback",
                "Roll back to a stage",
                "Return to a stage: its decisions and every later stage's are withdrawn.",
                on_session(StageChangeBody, write=True),
                lambda b: door().rollback(
                    b.session_id, http_body(StageChangeBody, b), b.idempotency_key
                ),
                writes=True,
            ),
            Tool(
                "session_sql_check",
                "POST /v1/sessions/{session_id}/sql/check",
                "Check a SQL statement",
                "Parse and EXPLAIN one statement read-only; nothing is recorded. Refused with "
                "the reason's code (not_select, function_refused, statement_invalid, ...).",
                on_session(SqlCheckBody, write=False),
                lambda b: door().check_sql(b.session_id, http_body(SqlCheckBody, b)),
            ),
            Tool(
                "session_sql_run",
                "POST /v1/sessions/{session_id}/sql/run",
                "Run the approved final SQL",
                "Run the one standing final_sql_approved statement read-only, bounded and "
                "pseudonymised; its receipt goes to the ledger, the rows to this caller only "
                "under labels that hold [database].labels.",
                on_session(SqlRunBody, write=True),
                lambda b: door().run_sql(b.session_id, http_body(SqlRunBody, b), b.idempotency_key),
                writes=True,
            ),
            Tool(
                "session_proposals",
                "GET /v1/sessions/{session_id}/proposals",
                "Memories proposed at F2",
                "The memories of other sessions proposed to this session (F2, memory).",
                on_session(None, write=False),
                lambda b: door().proposals(b.session_id),
            ),
            Tool(
                "session_choose_memories",
                "POST /v1/sessions/{session_id}/memories",
                "Choose memories at F2",
                "Apply several of the proposed memories at once (each once).",
                on_session(MemoryChoiceBody, write=True),
                lambda b: door().choose_memories(
                    b.session_id, http_body(MemoryChoiceBody, b), b.idempotency_key
                ),
                writes=True,
            ),
            Tool(
                "session_checklist",
                "GET /v1/sessions/{session_id}/checklist",
                "F8 checklist",
                "The promotion candidates of F8, each with its preselected action (promote, "
                "or decline when a near-duplicate memory already says it).",
                on_session(None, write=False),
                lambda b: door().checklist(b.session_id),
            ),
            Tool(
                "session_confirm_checklist",
                "POST /v1/sessions/{session_id}/checklist",
                "Confirm the F8 checklist",
                "Promote or decline the checklist's candidates in one call; the session "
                "closes when none is left.",
                on_session(ChecklistBody, write=True),
                lambda b: door().confirm_checklist(
                    b.session_id, http_body(ChecklistBody, b), b.idempotency_key
                ),
                writes=True,
            ),
            Tool(
                "session_gap",
                "POST /v1/sessions/{session_id}/gaps",
                "Record a knowledge gap",
                "Say what the session was missing — a concept no Evidence defines, a "
                "consultation that found nothing (its receipt_seq) — for the curators' queue "
                "(`tht evidence gaps`). A ledger entry, not a decision.",
                on_session(GapBody, write=True),
                lambda b: door().record_gap(b.session_id, http_body(GapBody, b), b.idempotency_key),
                writes=True,
            ),
            Tool(
                "gap_list",
                "GET /v1/gaps",
                "List the knowledge gaps",
                "The open knowledge gaps (session_gap) of this caller's sessions, each with its "
                "session, stage, subject and receipt_seq; a caller declared curator = true sees "
                "every session's (the curators' queue, `tht evidence gaps`).",
                NoArguments,
                lambda _b: door().gaps(),
            ),
            Tool(
                "session_summary",
                "GET /v1/sessions/{session_id}/summary",
                "Summarise a session",
                "The session's memories as Markdown (GET /v1/sessions/{id}/summary), in "
                "`markdown`.",
                on_session(None, write=False),
                lambda b: {
                    "ok": True,
                    "session": b.session_id,
                    "markdown": door().summary(b.session_id),
                },
            ),
        )

    # -- the curator's memory tools: one MemoryDoor verb each, as the HTTP routes -----

    def _memory_tools(self) -> tuple[Tool, ...]:
        def door() -> MemoryDoor:
            return MemoryDoor(self.ws, self.caller, self.operations.with_runtime)

        return (
            Tool(
                "memory_list",
                "GET /v1/memories",
                "List the memories (curators)",
                "Every memory: state (active, retired, merged), history, provenance, the "
                "sessions that used it, near-duplicate pairs to merge (GET /v1/memories). "
                "Only for a caller declared curator = true.",
                NoArguments,
                lambda _b: door().listing(),
            ),
            Tool(
                "memory_retire",
                "POST /v1/memories/retire",
                "Retire a memory (curators)",
                "Never propose a memory again at F2; sessions that chose it keep it and say it "
                "was retired (POST /v1/memories/retire). Only for a caller declared "
                "curator = true.",
                RetireBody,
                lambda b: door().retire(b),
                writes=True,
            ),
            Tool(
                "memory_merge",
                "POST /v1/memories/merge",
                "Merge memories (curators)",
                "Merge memories that say the same thing into `keep`, which keeps all their "
                "provenance; the others are never proposed again (POST /v1/memories/merge). "
                "Only for a caller declared curator = true.",
                MergeBody,
                lambda b: door().merge(b),
                writes=True,
            ),
        )


def caller_named(settings: Settings, name: str) -> CallerSettings:
    """The calling system `--caller` names, from `[service].callers`."""
    for caller in settings.service.callers:
        if caller.name == name:
            return caller
    declared = ", ".join(c.name for c in settings.service.callers) or "none"
    raise ConfigError(
        f"no caller {name!r} in [service].callers (declared: {declared})",
        problems=[
            Problem(
                "thoth.toml",
                f"caller {name!r} is not declared in [service].callers",
                field="service.callers",
                hint="declare it with `tht service add-caller NAME --labels ...` (its ceiling "
                "bounds what the assistant may see), or pass a declared name",
                code="config",
            )
        ],
    )


def error_result(exc: ThothError, request_id: str, redactor: PathRedactor) -> types.CallToolResult:
    """A tool error the assistant can act on: the stable code, what failed, what to do, and
    the request id the server log names; server paths rewritten by `redactor`."""
    message, problems = redactor.problem(exc)
    data: dict[str, Any] = {
        "code": exc.code,
        "message": message,
        "problems": problems,
        "request_id": request_id,
    }
    if isinstance(exc, SearchUnavailable):
        data["outcome"] = redactor.data(exc.outcome)  # a failure through and through
    lines = [f"[{exc.code}] {message}"]
    lines += [f"- {redactor.text(p.render())}" for p in exc.problems]
    lines.append(f"(request {request_id})")
    return types.CallToolResult(
        content=[types.TextContent(type="text", text="\n".join(lines))],
        structured_content=data,
        is_error=True,
    )


def build_server(tools: ThothTools) -> Server[Any]:
    """The MCP server of `tools`; each call runs in a worker thread, one at a time."""
    limiter = anyio.CapacityLimiter(1)
    definitions = [t.definition() for t in tools.tools.values()]

    async def list_tools(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=definitions)

    async def call_tool(
        _ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await anyio.to_thread.run_sync(
            tools.call, params.name, params.arguments, limiter=limiter
        )

    prompt = types.Prompt(
        name=STAGES_PROMPT,
        title="Drive a question→SQL session",
        description="The stages F1–F8 of a session: what each decides, when it must consult "
        "Evidence, what it leaves in the ledger, and the tools that do it.",
    )

    async def list_prompts(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[prompt])

    async def get_prompt(
        _ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != STAGES_PROMPT:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown prompt {params.name!r}: the prompts are {STAGES_PROMPT}",
            )
        return types.GetPromptResult(
            description=prompt.description,
            messages=[
                types.PromptMessage(
                    role="user", content=types.TextContent(type="text", text=stages_prompt())
                )
            ],
        )

    return Server(
        SERVER_NAME,
        version=_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def http_managers(
    ws: Workspace, operations: Operations, max_body_bytes: int
) -> dict[str, StreamableHTTPSessionManager]:
    """One MCP server per declared caller, for the streamable HTTP transport of `tht serve`
    (`/mcp`): the caller is known from its key before a message is read, so each one's tools
    apply its own label ceiling, as over stdio with `--caller`. Stateless and JSON: each POST
    is a whole exchange, nothing is kept between requests but the caller's key."""
    return {
        caller.name: StreamableHTTPSessionManager(
            build_server(ThothTools(ws, operations, caller)),
            json_response=True,
            stateless=True,
            max_request_body_size=max_body_bytes,
        )
        for caller in ws.settings.service.callers
    }


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def run_stdio(ws: Workspace, caller_name: str) -> None:
    """Serve the workspace's tools over stdin/stdout until the client closes them."""
    caller = caller_named(ws.settings, caller_name)
    operations = Operations(ws)
    try:
        anyio.run(serve_stdio, build_server(ThothTools(ws, operations, caller)))
    finally:
        operations.close()


def _answer_error(answer: Mapping[str, Any]) -> str:
    """The failed search's own message (diagnostics.error), else the answer's text."""
    diagnostics = answer.get("diagnostics") or {}
    error = diagnostics.get("error") if isinstance(diagnostics, dict) else None
    return str(error or answer.get("text") or "")


def _json(data: Mapping[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1, default=str)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("thoth")
    except PackageNotFoundError:
        return "0"
