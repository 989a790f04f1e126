"""The verbs of a question→SQL session, for every door: the HTTP routes, the CLI where it
prints the same object, and (later) the MCP tools and the page.

One pydantic body per verb (strict, like every service body) and one method per verb on
`SessionDoor`, each returning exactly the object the CLI's `--json` prints for that verb (a
plain dict: the CLI and the routes serialise the same value). Errors are `ThothError`s with
stable codes; the transports map them to statuses.

Who may see a session: the calling system that created it (`SessionInfo.caller`); another
caller's session, like a session made by a local user, does not exist for it (the local user,
no caller, sees every one). Sessions hold
what Evidence said, so every verb needs `[answers].evidence_labels` within the caller's
ceiling (as the MCP session tools); the rows of a run also need `[database].labels` among the
request's labels, resolved against the ceiling as for `/v1/ask`.

Two writers at once. Every write names the ledger position it was based on (`base`: the
number of entries the writer saw, `position` in `show`). A single-entry write hands it to the
ledger, which compares it under its exclusive file lock (`thoth.session.ledger`): a ledger
that has grown since is `ledger_conflict` with the current position, nothing written. Every
write also holds the session's request lock (`requests.jsonl.lock`, a file lock: across
processes), under which a write that appends several entries (memories chosen at F2, the F8
checklist) checks its base before the first, and under which an `Idempotency-Key` is looked
up and its first result kept in `<session>/requests.jsonl`: a retry with the same key returns
that result, never a second write; the same key with another request is refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any, Final, Literal, Protocol, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from thoth.config import CallerSettings, ColumnKind
from thoth.errors import Problem, ProblemsError, RequestError, ThothError
from thoth.memory.checklist import reworded
from thoth.memory.projection import summarize
from thoth.memory.promotion import NEAR_DUPLICATE_MIN_COSINE, Preview, decline, preview, save_one
from thoth.memory.recall import choose as choose_memory
from thoth.memory.recall import search_memories
from thoth.privacy.lineage import output_kinds
from thoth.runtime import Runtime, sessions_dir
from thoth.service.callers import ceiling_labels, require_evidence_within_ceiling
from thoth.service.errors import LabelAboveCeiling
from thoth.session import (
    STAGE_DECISIONS,
    STAGES,
    Entry,
    Session,
    SessionNotFound,
    SessionStore,
    decide,
    effective_entries,
    stage_index,
)
from thoth.session.gaps import GapQueue
from thoth.session.ledger import CLOSED_TYPE, GAP_TYPE, LedgerConflict
from thoth.session.stages import unknown_stage_message
from thoth.storage import JsonlLog, LineIssue, LineRejected, utc_now
from thoth.workflow.consult import SessionWorkflow
from thoth.workflow.overview import entry_dict, session_overview
from thoth.workflow.sql import (
    NAME_CHECKED,
    SQL_CHECKED,
    RunFailed,
    check_decision,
    read_catalog,
    run_final_sql,
    sql_problems,
)
from thoth.workflow.stores import MemoryStores
from thoth.workspace import Workspace

T = TypeVar("T")


class RuntimeCall(Protocol):
    """Runs work that needs the engine (Evidence search, the schema index, the database, the
    embedder): the CLI opens a runtime for it, the service hands it to its engine thread."""

    def __call__(self, work: Callable[[Runtime], T]) -> T: ...


REQUESTS_FILE: Final = "requests.jsonl"
_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)
_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")
MAX_MEMORY_PROPOSALS: Final = 20


# -- the bodies ------------------------------------------------------------------------------


def _stage(value: str) -> str:
    if value not in STAGES:  # named in the problem, as every bad field
        raise ValueError(unknown_stage_message(value))
    return value


class _Write(BaseModel):
    model_config = _STRICT

    base: int = Field(
        ge=0,
        description="The ledger position this write is based on: `position` of the session "
        "as last read (the number of its entries). A ledger that has grown since refuses "
        "the write with 409 `ledger_conflict` and the current position.",
    )


class SessionNewBody(BaseModel):
    """POST /v1/sessions: start a session for a question."""

    model_config = _STRICT

    question: str = Field(min_length=1, description="The question, as the user asked it.")


class ConsultBody(_Write):
    """POST /v1/sessions/{id}/consult: one Evidence search for a stage; its receipt is
    recorded."""

    stage: str = Field(description="A stage that consults Evidence, e.g. clarification.")

    _check_stage = field_validator("stage")(_stage)


class DecideBody(_Write):
    """POST /v1/sessions/{id}/decisions: record a decision of a stage."""

    stage: str = Field(description="The stage, e.g. clarification.")
    type: str = Field(description="A decision type the stage takes, e.g. concept_clarified.")
    subject: str = Field(min_length=1, description="What is decided.")
    detail: str = Field(default="", description="The content (a final SQL: the statement).")
    rationale: str = Field(default="", description="Why, citing the evidence ids.")

    _check_stage = field_validator("stage")(_stage)


class RetractBody(_Write):
    """POST /v1/sessions/{id}/retract: withdraw one decision for good."""

    seq: int = Field(ge=1, description="The entry to withdraw.")
    rationale: str = Field(min_length=1, description="Why, for the audit trail.")


class StageChangeBody(_Write):
    """POST /v1/sessions/{id}/reopen and /rollback: redo a stage, or return to it."""

    stage: str = Field(description="The stage to reopen or return to.")
    rationale: str = Field(min_length=1, description="Why, for the audit trail.")

    _check_stage = field_validator("stage")(_stage)


class SqlCheckBody(BaseModel):
    """POST /v1/sessions/{id}/sql/check: is this one read-only statement the database's
    EXPLAIN accepts? Nothing is recorded."""

    model_config = _STRICT

    sql: str = Field(min_length=1, description="The statement.")


class SqlRunBody(_Write):
    """POST /v1/sessions/{id}/sql/run: run the one standing approved final SQL."""

    limit: int | None = Field(default=None, ge=1, description="Fewer rows than row_limit.")
    labels: list[str] | None = Field(
        default=None, description="The labels the rows are read under (within the ceiling)."
    )


class MemoryChoiceBody(_Write):
    """POST /v1/sessions/{id}/memories: apply several of the memories F2 proposes."""

    memory_ids: list[str] = Field(
        min_length=1, description="Memories from GET .../proposals (mem-XXXX), each once."
    )


class ChecklistItem(BaseModel):
    model_config = _STRICT

    seq: int = Field(ge=1, description="A candidate of GET .../checklist.")
    action: Literal["promote", "decline"]
    rationale: str = Field(default="", description="Why (optional).")
    wording: str | None = Field(
        default=None,
        min_length=1,
        description="Promote with this wording instead (an edit): recorded as a new "
        "clarification of the candidate's stage, the original retracted, the ledger never "
        "rewritten (as `tht memory promote --edit SEQ=WORDING`). Only with action promote.",
    )

    @model_validator(mode="after")
    def _edit_promotes(self) -> ChecklistItem:
        if self.wording is not None and (self.action != "promote" or not self.wording.strip()):
            raise ValueError("wording: a new wording (not blank) goes with action promote only")
        return self


class ChecklistBody(_Write):
    """POST /v1/sessions/{id}/checklist: F8 in one request, the candidates as preselected
    or edited."""

    items: list[ChecklistItem] = Field(min_length=1, description="One per candidate decided.")


class GapBody(_Write):
    """POST /v1/sessions/{id}/gaps: record what the session was missing, for the curators'
    queue (`tht evidence gaps`): a concept no Evidence defines, a consultation that found
    nothing. Not a decision: it settles nothing, and a closed session takes it too."""

    stage: str = Field(description="The stage that missed it, e.g. clarification.")
    subject: str = Field(
        min_length=1, description="The concept no Evidence defines, or what was searched."
    )
    detail: str = Field(default="", description="What was missing, for the curator.")
    receipt_seq: int | None = Field(
        default=None, ge=1, description="The evidence receipt of a consultation that found nothing."
    )

    _check_stage = field_validator("stage")(_stage)


SESSION_BODY_MODELS: Final[tuple[type[BaseModel], ...]] = (
    SessionNewBody,
    ConsultBody,
    DecideBody,
    RetractBody,
    StageChangeBody,
    SqlCheckBody,
    SqlRunBody,
    MemoryChoiceBody,
    ChecklistBody,
    GapBody,
)


# -- the errors ------------------------------------------------------------------------------


class SessionClosed(ThothError):
    """The session's F8 checklist was confirmed: it takes no decision until a stage is
    reopened or rolled back."""

    code = "session_closed"


class StageNotReached(ThothError):
    """A decision on a stage whose inputs the session has not settled yet."""

    code = "stage_not_reached"


class NotProposed(ProblemsError):
    """A memory or checklist item that was not offered to this session."""


class SqlRefused(ProblemsError):
    """The statement is not one read-only statement the database's EXPLAIN accepts."""


class RowsNotAllowed(LabelAboveCeiling):
    """The run's rows carry labels the request does not hold."""

    code = "rows_not_allowed"


class IdempotencyKeyReused(RequestError):
    code = "idempotency_key_reused"


# -- the door --------------------------------------------------------------------------------


class SessionDoor:
    """The session verbs of one workspace for one caller (`caller` None: the local, trusted
    transport, which sees every session, as it sees every job)."""

    def __init__(self, ws: Workspace, caller: CallerSettings | None, runtime: RuntimeCall) -> None:
        self.ws = ws
        self.caller = caller
        self._runtime = runtime
        self.store = SessionStore(sessions_dir(ws))

    # -- reading -------------------------------------------------------------------------

    def create(self, body: SessionNewBody) -> dict[str, Any]:
        """`tht session new --json`."""
        self._evidence()
        session = self.store.create(body.question, caller=self._name())
        return {"ok": True, "session": session.id, **session.info.model_dump(exclude_none=True)}

    def sessions(self) -> dict[str, Any]:
        """`tht session list --json`: the sessions this caller sees, oldest first."""
        self._evidence()
        mine = [s for s in self.store.list() if self._sees(s)]
        return {
            "ok": True,
            "sessions": [
                {**s.info.model_dump(exclude_none=True), "decisions": len(s.effective())}
                for s in mine
            ],
        }

    def show(self, session_id: str) -> dict[str, Any]:
        """`tht session show --json`, with `position` (what a write names as `base`)."""
        session = self.open(session_id)
        return session_overview(self.ws, session).as_dict()

    def summary(self, session_id: str) -> str:
        """`tht memory summary`: the session's memories as Markdown."""
        session = self.open(session_id)
        return summarize(session, MemoryStores(self.ws).registry).markdown()

    def check_sql(self, session_id: str, body: SqlCheckBody) -> dict[str, Any]:
        """Parse and EXPLAIN a statement read-only; nothing is recorded. SqlRefused with the
        first reason's code when it would not be accepted as a final SQL."""
        session = self.open(session_id)
        where = f"session {session.id}, sql check"

        def work(rt: Runtime) -> dict[str, Any]:
            with rt.database() as db:
                problems = sql_problems(db, body.sql, where)
                dialect = db.dialect
            if problems:
                raise SqlRefused(
                    f"{where}: the statement would be refused; nothing was recorded",
                    problems,
                    code=problems[0].code,
                )
            return {"ok": True, "session": session.id, "sql": body.sql, "dialect": dialect}

        return self._runtime(work)

    def proposals(self, session_id: str, limit: int = 5) -> dict[str, Any]:
        """`tht memory search "<question>" --session <id> --json`: F2's proposals."""
        session = self.open(session_id)
        return self._runtime(lambda rt: self._recall(rt, session, limit).as_dict())

    def checklist(self, session_id: str) -> dict[str, Any]:
        """`tht memory promote --preview --json`, each candidate with its preselected action:
        promote, or decline when a near-duplicate memory already says it."""
        session = self.open(session_id)
        found = self._runtime(lambda rt: self._preview(rt, session))
        return _checklist(found)

    # -- writing -------------------------------------------------------------------------

    def consult(self, session_id: str, body: ConsultBody, key: str | None) -> dict[str, Any]:
        """`tht session consult --json` (a blocked stage raises StageBlocked, its code the
        search's)."""
        session = self.open(session_id)

        def work() -> dict[str, Any]:
            return self._runtime(
                lambda rt: SessionWorkflow(rt, session).consult(body.stage, base=body.base)
            ).as_dict()

        return self._write(session, "consult", body, key, work)

    def decide(self, session_id: str, body: DecideBody, key: str | None) -> dict[str, Any]:
        """`tht session decide --json`. Refused on a closed session and on a stage whose inputs
        are not settled (the rule consult follows)."""
        session = self.open(session_id)

        def work() -> dict[str, Any]:
            entries = session.entries()
            self._open_for_decisions(session, entries)
            self._reached(session, entries, body.stage, body.type)
            checked = self.ws.settings.database is not None and (
                body.type in NAME_CHECKED or body.type in SQL_CHECKED
            )
            if checked:
                self._runtime(
                    lambda rt: check_decision(
                        rt, session, body.stage, body.type, body.subject, body.detail
                    )
                )
            entry = decide(
                session,
                body.stage,
                body.type,
                subject=body.subject,
                detail=body.detail,
                rationale=body.rationale,
                base=body.base,
            )
            return _written(session, entry)

        return self._write(session, "decide", body, key, work)

    def retract(self, session_id: str, body: RetractBody, key: str | None) -> dict[str, Any]:
        """`tht session retract --json`."""
        session = self.open(session_id)

        def work() -> dict[str, Any]:
            self._open_for_decisions(session, session.entries())
            entry = session.retract(body.seq, rationale=body.rationale, base=body.base)
            return _written(session, entry)

        return self._write(session, "retract", body, key, work)

    def reopen(self, session_id: str, body: StageChangeBody, key: str | None) -> dict[str, Any]:
        """`tht session reopen --json` (a closed session too: that is how it opens again)."""
        session = self.open(session_id)

        def work() -> dict[str, Any]:
            entry = session.reopen(body.stage, rationale=body.rationale, base=body.base)
            return _written(session, entry)

        return self._write(session, "reopen", body, key, work)

    def rollback(self, session_id: str, body: StageChangeBody, key: str | None) -> dict[str, Any]:
        """`tht session rollback --json`."""
        session = self.open(session_id)

        def work() -> dict[str, Any]:
            entry = session.rollback(body.stage, rationale=body.rationale, base=body.base)
            return _written(session, entry)

        return self._write(session, "rollback", body, key, work)

    def run_sql(self, session_id: str, body: SqlRunBody, key: str | None) -> dict[str, Any]:
        """`tht session run --json`, the rows pseudonymised by their lineage (as the agent's
        run_sql) and shown only when `[database].labels` are all among the request's labels
        (checked before anything runs). A retry with the same key returns the receipt
        without rows: rows are never kept."""
        session = self.open(session_id)
        labels = ceiling_labels(self.ws.settings, self.caller, body.labels) or []
        self._rows_allowed(labels)

        def work() -> dict[str, Any]:
            def run(rt: Runtime) -> dict[str, Any]:
                try:
                    done = run_final_sql(rt, session, body.limit, base=body.base)
                except RunFailed as failed:  # recorded: a result, as the CLI prints it
                    return {**failed.run.as_dict(), "code": failed.code, "error": str(failed)}
                out = done.as_dict()
                if done.result is not None:
                    catalog = read_catalog(rt, f"session {session.id}")
                    reviewed = {
                        c.column: cast(ColumnKind, c.privacy_kind) for c in catalog.columns.values()
                    }
                    dialect = rt.ws.settings.database.dialect if rt.ws.settings.database else ""
                    kinds = output_kinds(done.result.columns, done.sql, dialect, reviewed)
                    out["rows"] = rt.pseudonymizer.protect_rows(
                        done.result.columns, done.result.rows, {k.name: k.kind for k in kinds}
                    )
                return out

            return self._runtime(run)

        return self._write(session, "run", body, key, work, keep=_without_rows)

    def choose_memories(
        self, session_id: str, body: MemoryChoiceBody, key: str | None
    ) -> dict[str, Any]:
        """F2, several at once: each id must be among the memories proposed to this session
        now (an id of another workspace never is); all are checked before the first is
        applied. `{"ok", "session", "chosen": [what `tht memory choose --json` prints]}`."""
        session = self.open(session_id)
        if len(set(body.memory_ids)) != len(body.memory_ids):
            raise RequestError(
                "a memory is chosen twice",
                problems=[Problem("body", "each memory once", field="memory_ids")],
            )

        def work() -> dict[str, Any]:
            self._at(session, body.base)
            self._open_for_decisions(session, session.entries())

            def apply(rt: Runtime) -> dict[str, Any]:
                recall = self._recall(rt, session, MAX_MEMORY_PROPOSALS)
                offered = {p.memory_id for p in recall.proposals}
                missing = [m for m in body.memory_ids if m not in offered]
                if missing:
                    raise NotProposed(
                        f"session {session.id}: memory {', '.join(missing)} is not proposed to "
                        "this session; nothing was applied",
                        [
                            Problem(
                                f"session {session.id}",
                                f"{m} is not among the memories proposed now",
                                field="memory_ids",
                                hint="choose from GET /v1/sessions/{id}/proposals",
                                code="memory_not_proposed",
                            )
                            for m in missing
                        ],
                        code="memory_not_proposed",
                    )
                with MemoryStores.for_runtime(rt) as stores:
                    chosen = [
                        choose_memory(session, m, registry=stores.registry).as_dict()
                        for m in body.memory_ids
                    ]
                return {"ok": True, "session": session.id, "chosen": chosen}

            return self._runtime(apply)

        return self._write(session, "memories", body, key, work)

    def confirm_checklist(
        self, session_id: str, body: ChecklistBody, key: str | None
    ) -> dict[str, Any]:
        """F8 in one request: every item must be a candidate of the checklist now (checked
        before the first is applied); each is saved (`tht memory save-one`) or declined.
        When nothing is left to decide the session is closed (a `session_closed` entry)."""
        session = self.open(session_id)
        seqs = [i.seq for i in body.items]
        if len(set(seqs)) != len(seqs):
            raise RequestError(
                "a candidate is decided twice",
                problems=[Problem("body", "each seq once", field="items")],
            )

        def work() -> dict[str, Any]:
            self._at(session, body.base)

            def apply(rt: Runtime) -> dict[str, Any]:
                with MemoryStores.for_runtime(rt) as stores:
                    now = preview(session, stores.registry, index=None, embedder=None)
                    offered = {c.seq for c in now.candidates}
                    strays = [s for s in seqs if s not in offered]
                    if strays:
                        raise NotProposed(
                            f"session {session.id}: seq {', '.join(map(str, strays))} is not "
                            "on the checklist; nothing was decided",
                            [
                                Problem(
                                    f"session {session.id}",
                                    f"seq {s} is not a candidate of the checklist now",
                                    field="items",
                                    hint="decide the candidates of GET /v1/sessions/{id}/checklist",
                                    code="checklist_item_not_proposed",
                                )
                                for s in strays
                            ],
                            code="checklist_item_not_proposed",
                        )
                    saved, declined = [], []
                    for item in body.items:
                        if item.action == "promote":
                            target = item.seq
                            if item.wording is not None:
                                target = reworded(session, item.seq, item.wording)
                            saved.append(
                                save_one(
                                    session,
                                    target,
                                    registry=stores.registry,
                                    index=stores.index,
                                    embedder=stores.embedder,
                                    rationale=item.rationale,
                                ).as_dict()
                            )
                        else:
                            declined.append(
                                decline(
                                    session,
                                    item.seq,
                                    registry=stores.registry,
                                    rationale=item.rationale,
                                ).as_dict()
                            )
                    after = preview(session, stores.registry, index=None, embedder=None)
                closed = after.finalize_ready and not _closed(session.entries())
                if closed:
                    session.append(
                        "memory_promotion",
                        CLOSED_TYPE,
                        subject="F8 checklist confirmed",
                        rationale="every promotion candidate was promoted or declined",
                    )
                return {
                    "ok": True,
                    "session": session.id,
                    "saved": saved,
                    "declined": declined,
                    "remaining": len(after.candidates) + after.remaining,
                    "closed": _closed(session.entries()),
                    "position": session.ledger.position(),
                }

            return self._runtime(apply)

        return self._write(session, "checklist", body, key, work)

    # -- knowledge gaps (the curators' queue: thoth.session.gaps) ---------------------------

    def record_gap(self, session_id: str, body: GapBody, key: str | None) -> dict[str, Any]:
        """A `knowledge_gap` entry in the ledger (`tht session gap --json`)."""
        session = self.open(session_id)

        def work() -> dict[str, Any]:
            entry = session.append(
                body.stage,
                GAP_TYPE,
                subject=body.subject,
                detail=body.detail,
                refs=body.receipt_seq,
                base=body.base,
            )
            return _written(session, entry)

        return self._write(session, "gap", body, key, work)

    def gaps(self) -> dict[str, Any]:
        """The open gaps of the sessions this caller sees; a caller declared `curator = true`
        (the curators' queue) and the local user (`tht evidence gaps --json`) see every
        session's. Reading the queue opens no session: writing stays the owner's."""
        self._evidence()
        queue = GapQueue(sessions_dir(self.ws), self.ws.evidence)
        every = self.caller is None or self.caller.curator
        seen = [g for g in queue.open_gaps() if every or g.caller == self._name()]
        return {"ok": True, "gaps": [g.as_dict() for g in seen]}

    # -- steps -----------------------------------------------------------------------------

    def open(self, session_id: str) -> Session:
        """The caller's session (SessionNotFound for another caller's: it does not exist for
        this one)."""
        self._evidence()
        session = self.store.open(session_id)
        if not self._sees(session):
            raise SessionNotFound(
                f"session {session_id} not found -> GET /v1/sessions lists this caller's"
            )
        return session

    def _sees(self, session: Session) -> bool:
        """A caller sees the sessions it created; the local user (no caller) every one."""
        return self.caller is None or session.info.caller == self.caller.name

    def _name(self) -> str | None:
        return self.caller.name if self.caller is not None else None

    def _evidence(self) -> None:
        require_evidence_within_ceiling(self.ws.settings, self.caller)

    def _rows_allowed(self, labels: list[str]) -> None:
        if self.caller is None:
            return
        database = self.ws.settings.database
        carried = database.labels if database is not None else []
        missing = [label for label in carried if label not in labels]
        if not carried or missing:
            why = (
                "[database].labels is empty: rows are served to no caller"
                if not carried
                else f"the rows carry {', '.join(carried)}; the request holds {', '.join(labels)}"
            )
            raise RowsNotAllowed(
                f"caller {self.caller.name}: {why}; nothing was run",
                problems=[
                    Problem(
                        "",
                        why,
                        field="labels",
                        hint="run with labels that include the database's, within the ceiling",
                        code="rows_not_allowed",
                    )
                ],
            )

    def _recall(self, rt: Runtime, session: Session, limit: int) -> Any:
        with MemoryStores.for_runtime(rt) as stores:
            return search_memories(
                session.question,
                session,
                registry=stores.registry,
                index=stores.index,
                embedder=stores.embedder,
                limit=limit,
            )

    def _preview(self, rt: Runtime, session: Session) -> Preview:
        with MemoryStores.for_runtime(rt) as stores:
            return preview(
                session,
                stores.registry,
                index=stores.index,
                embedder=stores.embedder,
            )

    def _at(self, session: Session, base: int) -> None:
        """A write of several entries: its base checked before the first (the request lock
        keeps other service writers out until the last)."""
        position = session.ledger.position()
        if base != position:
            raise session.ledger.conflict(base, position)

    def _open_for_decisions(self, session: Session, entries: list[Entry]) -> None:
        if _closed(entries):
            raise SessionClosed(
                f"session {session.id} is closed (its F8 checklist was confirmed); nothing was "
                "written -> reopen or roll back a stage to decide again"
            )

    def _reached(self, session: Session, entries: list[Entry], stage: str, type: str) -> None:
        why = not_reached(entries, stage)
        if why is not None and type in STAGE_DECISIONS.get(stage, ()):
            raise StageNotReached(
                f"session {session.id}: stage {stage} is not reached: {why}; nothing was "
                "written -> decide the earlier stages first"
            )

    def _write(
        self,
        session: Session,
        verb: str,
        body: BaseModel,
        key: str | None,
        work: Callable[[], dict[str, Any]],
        keep: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """`work` under the session's request lock; with a key, the first result of that
        key, or `work`'s result kept for it."""
        book = JsonlLog(
            session.directory / REQUESTS_FILE,
            damaged=lambda line, problems: ProblemsError(
                f"session {session.id}: {REQUESTS_FILE} is damaged at line {line}", problems
            ),
            repair_hint="restore the file from a backup; the ledger is untouched",
        )
        fingerprint = _fingerprint(verb, body)
        if key is not None and not _KEY.match(key):
            raise RequestError(
                "the Idempotency-Key must be 1 to 200 visible ASCII characters",
                problems=[Problem("header", "malformed Idempotency-Key", field="Idempotency-Key")],
            )
        with book.writing() as writer:
            if key is not None:
                for record in writer.read(_request_record):
                    if record["key"] != key:
                        continue
                    if record["fingerprint"] != fingerprint:
                        raise IdempotencyKeyReused(
                            f"session {session.id}: Idempotency-Key {key!r} was used for "
                            "another request; nothing was written -> use a new key",
                            problems=[
                                Problem(
                                    "header",
                                    "the key was used for another request",
                                    field="Idempotency-Key",
                                    code="idempotency_key_reused",
                                )
                            ],
                        )
                    first: dict[str, Any] = record["result"]
                    return first
            result = work()
            if key is not None:
                kept = keep(result) if keep is not None else result
                writer.append(
                    [
                        json.dumps(
                            {
                                "key": key,
                                "fingerprint": fingerprint,
                                "verb": verb,
                                "at": utc_now(),
                                "result": kept,
                            },
                            ensure_ascii=False,
                            default=str,
                        )
                    ]
                )
            return result


# -- helpers ---------------------------------------------------------------------------------


def not_reached(entries: list[Entry], stage: str) -> str | None:
    """Why `stage` is not reached yet, or None: the inputs consult needs (a standing rewrite
    for schema_linking; a promoted table for synthesis and cte; an approved CTE plan for
    final_sql). clarification, memory, rewriting and memory_promotion are always open."""
    standing = [e.type for e in effective_entries(entries)]
    needs: list[tuple[str, str]] = []
    index = stage_index(stage)
    if index >= stage_index("schema_linking") and stage != "memory_promotion":
        needs.append(("question_rewritten", "rewriting"))
    if index >= stage_index("synthesis") and stage != "memory_promotion":
        needs.append(("table_promoted", "schema_linking"))
    if index >= stage_index("final_sql") and stage != "memory_promotion":
        needs.append(("cte_plan_approved", "cte"))
    for type, where in needs:
        if type not in standing:
            return f"no {type} stands in {where}"
    return None


def _closed(entries: list[Entry]) -> bool:
    return any(e.type == CLOSED_TYPE for e in effective_entries(entries))


def _written(session: Session, entry: Entry) -> dict[str, Any]:
    """What `tht session decide|retract|reopen|rollback --json` print."""
    return {"ok": True, "session": session.id, "entry": entry_dict(entry)}


def _checklist(found: Preview) -> dict[str, Any]:
    out = found.as_dict()
    for candidate, shown in zip(out["candidates"], found.candidates, strict=True):
        twin = any(n.similarity >= NEAR_DUPLICATE_MIN_COSINE for n in shown.near_duplicates)
        candidate["preselected"] = "decline" if twin else "promote"
    return out


def _without_rows(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k not in ("rows", "columns")}


def _fingerprint(verb: str, body: BaseModel) -> str:
    text = json.dumps([verb, body.model_dump(mode="json")], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _request_record(_number: int, text: str) -> dict[str, Any]:
    record = json.loads(text)
    if not {"key", "fingerprint", "result"} <= set(record):
        raise LineRejected(LineIssue("a request record needs key, fingerprint and result"))
    return dict(record)


__all__ = [
    "SESSION_BODY_MODELS",
    "ChecklistBody",
    "ConsultBody",
    "DecideBody",
    "GapBody",
    "IdempotencyKeyReused",
    "LedgerConflict",
    "MemoryChoiceBody",
    "NotProposed",
    "RetractBody",
    "RowsNotAllowed",
    "SessionClosed",
    "SessionDoor",
    "SessionNewBody",
    "SqlCheckBody",
    "SqlRefused",
    "SqlRunBody",
    "StageChangeBody",
    "StageNotReached",
]
