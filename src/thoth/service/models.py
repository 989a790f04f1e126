"""The request bodies of the service, shared by every transport (HTTP, MCP).

`AskBody` and `KnowledgeSearchBody` extend `SearchRequest`, the one list of request fields:
a field added there appears here, in the OpenAPI document and in the MCP tools without an
edit. `EvidenceSearchBody` follows `EvidenceSearchContext` field by field (a test compares
them). All are strict: an unknown field, a number sent as a string or a string where a list
belongs is an error naming the field, never coerced or dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from thoth.answer.request import SearchRequest
from thoth.errors import Problem, RequestError
from thoth.evidence.model import KINDS, PURPOSES

MAX_LIMIT = 50
_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)
B = TypeVar("B", bound=BaseModel)


class AskBody(SearchRequest):
    """POST /v1/ask: a question, optional style instructions, and the request fields."""

    model_config = _STRICT

    question: str = Field(min_length=1, description="The question, in plain words.")
    instructions: str | None = Field(
        default=None, description="Style instructions for the answer (never its content)."
    )
    show_context: bool = Field(
        default=False,
        description="Also return `context`: every fragment the answerer received, whole, with "
        "its doc_id (what `tht docs show` takes), its score per branch and its text.",
    )

    def request(self) -> dict[str, Any]:
        """The SearchRequest fields, as `AnswerService.ask` takes them."""
        return {name: getattr(self, name) for name in SearchRequest.model_fields}


class KnowledgeSearchBody(SearchRequest):
    """POST /v1/knowledge/search: the fragments an answer would be written from."""

    model_config = _STRICT

    query: str = Field(min_length=1, description="What to search for, in plain words.")
    limit: int | None = Field(
        default=None, ge=1, le=MAX_LIMIT, description="At most this many fragments (top_k)."
    )

    def request(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in SearchRequest.model_fields}


class EvidenceSearchBody(BaseModel):
    """POST /v1/evidence/search: the Evidence search contract (seed §10)."""

    model_config = _STRICT

    query: str = Field(min_length=1, description="The question, as the user asked it.")
    purpose: str = Field(description=f"One of {', '.join(PURPOSES)}.")
    limit: int = Field(default=5, ge=1, le=MAX_LIMIT, description="Units to return.")
    concepts: list[str] = Field(default_factory=list, description="Context concepts.")
    tables: list[str] = Field(default_factory=list, description="Context tables.")
    columns: list[str] = Field(default_factory=list, description="Context columns.")
    kinds: list[str] = Field(default_factory=list, description="Only these unit kinds.")
    binding: list[Literal["concepts", "tables", "columns"]] = Field(
        default_factory=list,
        description="Context fields that become filters instead of query text.",
    )

    @field_validator("purpose")
    @classmethod
    def _purpose(cls, value: str) -> str:
        if value not in PURPOSES:
            raise ValueError(f"unknown purpose {value!r}: expected one of {', '.join(PURPOSES)}")
        return value

    @field_validator("kinds")
    @classmethod
    def _kinds(cls, value: list[str]) -> list[str]:
        unknown = [k for k in value if k not in KINDS]
        if unknown:
            raise ValueError(
                f"unknown kind(s) {', '.join(map(repr, unknown))}: expected {', '.join(KINDS)}"
            )
        return value


class JobBody(BaseModel):
    """POST /v1/jobs: a question for the deep-analysis agent, in the caller's search context
    (the SearchRequest fields the agent's knowledge search takes)."""

    model_config = _STRICT

    question: str = Field(min_length=1, description="The multi-step question.")
    # As SearchRequest declares them (a test compares the annotations).
    labels: Sequence[str] | None = None
    channel: str | None = None


class FeedbackBody(BaseModel):
    """POST /v1/feedback: a reader's report on an answer this caller was given."""

    model_config = _STRICT

    answer_id: str = Field(min_length=1, description="The answer's id, as /v1/ask returned it.")
    kind: str = Field(
        description="wrong, incomplete, over_masked (a useful value was covered) or good."
    )
    note: str = Field(default="", description="What is wrong, in plain text (no markup).")


class PassageBody(BaseModel):
    """What a source's link opens (GET /v1/passage; the MCP tool `passage`)."""

    model_config = _STRICT

    doc_id: str = Field(min_length=1, max_length=1000, description="The source's doc_id.")
    revision: str = Field(
        min_length=1, max_length=200, description="The revision the answer read it at."
    )
    fragment: int | None = Field(default=None, ge=0, description="The fragment to highlight.")
    # As SearchRequest declares it (a test compares the annotations).
    labels: Sequence[str] | None = None


class CatalogQueryBody(BaseModel):
    """What a computed answer's provenance link opens (GET /v1/catalog/query; the MCP tool
    `catalog_query`): the link's parameters, `parameters` as the object the answer bound."""

    model_config = _STRICT

    query_id: str = Field(min_length=1, max_length=1000, description="The provenance's query_id.")
    revision: str = Field(
        min_length=1,
        max_length=1000,
        description="The provenance's catalog_revision (the catalog the answer read).",
    )
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="The parameters the answer bound (provenance)."
    )
    data_date: str | None = Field(
        default=None, max_length=1000, description="The data date the answer read."
    )
    # As PassageBody and SearchRequest declare it: the labels the answer was asked with.
    labels: Sequence[str] | None = None


BODY_MODELS: tuple[type[BaseModel], ...] = (
    AskBody,
    EvidenceSearchBody,
    KnowledgeSearchBody,
    JobBody,
    FeedbackBody,
    PassageBody,
)


def validate(model: type[B], data: Any) -> B:
    """The body as `model`, or a RequestError with one Problem per field at fault (every
    transport validates here: the HTTP routes and the MCP tools)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        accepted = ", ".join(model.model_fields)
        problems = []
        for err in exc.errors(include_url=False):
            field = ".".join(str(p) for p in err["loc"]) or "body"
            if err["type"] == "extra_forbidden":
                message = f"unknown field {field} (accepted: {accepted})"
                code = "unknown_field"
            else:
                message = f"{field}: {err['msg']}"
                code = str(err["type"])
            problems.append(Problem("body", message, field=field, code=code))
        fields = ", ".join(sorted({str(p.field) for p in problems}))
        raise RequestError(f"invalid request field(s): {fields}", problems=problems) from exc


# -- what the job routes return (documented in the OpenAPI schema; built by Job.as_dict) -------


class JobGap(BaseModel):
    """Something the answer could not rest on: a tool call that failed or was refused, a
    result cut, a budget, or figures no tool result supports (docs/agent.md)."""

    tool: str = Field(description="The tool, or `budget` / `answer`.")
    code: str = Field(description="Its stable code (index_unavailable, result_cut, ...).")
    meaning: str = Field(description="What it means for the answer, in words.")
    recovered: bool = Field(description="A call error of the model's a later call made good.")


class JobDatedFigure(BaseModel):
    """A figure of the answer that an analytics result holds (or is one step from)."""

    figure: str = Field(description="As the answer writes it.")
    data_date: str = Field(description="The date the analytics store's data were taken on.")
    kind: str = Field(description="`catalog_query` or `sql`.")
    query_id: str | None = Field(default=None, description="The catalog query, for one.")


class JobFigures(BaseModel):
    supported: list[str] = Field(description="Figures a tool result holds, as written.")
    derived: list[str] = Field(description="One arithmetic step from figures the answer states.")
    unsupported: list[str] = Field(description="Figures no tool result supports.")
    dated: list[JobDatedFigure] = Field(
        default=[], description="Each figure from the analytics store, with its data date."
    )


class JobResult(BaseModel):
    """A completed or partial job's result."""

    answer: str
    sources: list[dict[str, Any]] = Field(
        description="What the tools returned: wiki_page, document, catalog_query (with its "
        "data_date), sql."
    )
    gaps: list[JobGap] = Field(default=[], description="Empty for a completed job.")
    rests_on: str = Field(default="", description="What the answer rests on, in one sentence.")
    figures: JobFigures | None = None


class JobView(BaseModel):
    """A deep-analysis job: `completed` (a result with no open gap), `partial` (a result with
    gaps: `error_code` is the first gap's, `error` says what the answer rests on), `failed`
    or `cancelled` (`error_code`, `error`, no result), or still `queued` / `running`."""

    id: str
    workspace: str
    caller: str | None
    question: str
    request: dict[str, Any]
    status: Literal["queued", "running", "completed", "partial", "failed", "cancelled"]
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    claimed_by: str | None
    lease_until: str | None
    heartbeat_at: str | None
    attempts: int
    cancel_requested: bool
    result: JobResult | None
    error_code: str | None
    error: str | None
    usage: dict[str, Any]
    steps: list[dict[str, Any]] | None = Field(
        default=None, description="GET /v1/jobs/{id} only: the transcript so far."
    )


class JobList(BaseModel):
    jobs: list[JobView]
