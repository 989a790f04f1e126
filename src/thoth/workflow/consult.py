"""Evidence in the stages of a session (seed §11, §13.3).

Five stages consult Evidence, each with its own purpose, and each runs ONE independent
search with the inputs the session has settled at that moment (its effective decisions):

    clarification   disambiguation   the question
    rewriting       rewriting        the question + clarified concepts
    schema_linking  schema_linking   the rewritten question + clarified concepts
    cte             sql_generation   the rewritten question + concepts + approved schema
    final_sql       sql_generation   the same + the approved CTE plan

`memory` (F2) searches memories, `synthesis` (F5) only summarises the approved schema linking
and `memory_promotion` (F8) writes the registry: none of them searches Evidence, and asking
them to is an error, not an empty search.

Outcomes: `available` (even with no result) records the search's receipt in the ledger and
returns the results, so the stage can go on. `unavailable` raises `StageBlocked` with the
stable code: the stage waits, nothing is recorded, and there is no second search with another
purpose or against an older revision — a fault must never pass for an absence of knowledge.

Evidence proposes; it never decides: the workflow records receipts only. Decisions are the
reviewer's (`tht session decide`, `thoth.session.decisions.decide`, or `accept` of an LLM
driver's proposal).

This is the workflow layer: it joins a session (thoth.session) to Evidence search through the
runtime; the session package itself never searches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any, Final

from thoth.database import DatabaseUnavailable
from thoth.errors import PreconditionError, ThothError
from thoth.index.reader import Unreadable
from thoth.runtime import Runtime
from thoth.schema import EvidenceHint, SchemaLinker, SchemaProposal
from thoth.search.outcome import EvidenceResult, EvidenceSearchContext
from thoth.session.ledger import Entry
from thoth.session.session import Session
from thoth.session.stages import CONSULTING_STAGES, stage_index

# How the approved CTE plan joins the final_sql query text (after the rewritten question):
# the query format of seed §9.6 has no field of its own for it.
CTE_PLAN_LABEL: Final = "Piano CTE"

_WHY_NO_EVIDENCE: Final[Mapping[str, str]] = MappingProxyType(
    {
        "memory": "it searches reviewer-promoted memories (`tht memory search`)",
        "synthesis": "it only verifies and summarises the schema linking already approved",
        "memory_promotion": "it promotes clarified concepts to the memory registry",
    }
)


class NotAnEvidenceStage(ThothError):
    """A stage that never consults Evidence was asked to."""


class StageNotReady(PreconditionError):
    """The stage's inputs are not settled yet (or are ambiguous): nothing was searched."""


class StageBlocked(ThothError):
    """Evidence search was unavailable: the stage waits and may be retried. Nothing was
    recorded in the session."""

    retryable = True

    def __init__(
        self,
        session_id: str,
        stage: str,
        purpose: str,
        code: str,
        message: str,
        what: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.stage = stage
        self.purpose = purpose
        self.code = code
        self.message = message
        super().__init__(
            f"session {session_id}, stage {stage}: {what or f'Evidence search ({purpose})'} "
            f"is unavailable [{code}]: {message} -> the stage is blocked and nothing was "
            f"recorded; fix the cause, then retry `tht session consult {session_id} --stage "
            f"{stage}` (no older revision or other purpose is tried in its place)"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": False,
            "status": "unavailable",
            "session": self.session_id,
            "stage": self.stage,
            "purpose": self.purpose,
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "recorded": False,
        }


@dataclass(frozen=True)
class StageInputs:
    stage: str
    purpose: str
    query: str
    context: EvidenceSearchContext


@dataclass(frozen=True)
class Consultation:
    """An available search of one stage, and the receipt it left in the ledger."""

    session_id: str
    stage: str
    purpose: str
    query_text: str
    generation: str
    revision: str
    results: tuple[EvidenceResult, ...]
    receipt: Entry
    # schema_linking with a [database]: the tables and columns proposed for the question.
    schema: SchemaProposal | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema.as_dict() if self.schema is not None else None,
            "ok": True,
            "status": "available",
            "session": self.session_id,
            "stage": self.stage,
            "purpose": self.purpose,
            "query_text": self.query_text,
            "generation": self.generation,
            "revision": self.revision,
            "receipt_seq": self.receipt.seq,
            "results": [asdict(r) for r in self.results],
        }


class SessionWorkflow:
    """The Evidence side of one session's stages. It reads the session's effective
    decisions on every call, so it always searches with what stands now."""

    def __init__(self, runtime: Runtime, session: Session) -> None:
        self.runtime = runtime
        self.session = session

    def inputs(self, stage: str) -> StageInputs:
        """What `stage` would search with now (StageNotReady when its inputs are missing)."""
        purpose = self._purpose(stage)
        decisions = self.session.effective()

        def subjects(type: str) -> list[str]:
            return [e.subject for e in decisions if e.type == type]

        concepts = tuple(subjects("concept_clarified"))
        if stage == "clarification":
            return StageInputs(stage, purpose, self.session.question, EvidenceSearchContext())
        if stage == "rewriting":
            return StageInputs(
                stage, purpose, self.session.question, EvidenceSearchContext(concepts=concepts)
            )
        rewritten = self._single(stage, decisions, "question_rewritten", "rewriting").subject
        if stage == "schema_linking":
            return StageInputs(stage, purpose, rewritten, EvidenceSearchContext(concepts=concepts))
        excluded = set(subjects("table_excluded"))
        tables = tuple(t for t in subjects("table_promoted") if t not in excluded)
        if not tables:
            raise self._not_ready(
                stage,
                "needs the approved schema: no table_promoted decision stands in schema_linking",
                "table_promoted",
                "schema_linking",
            )
        schema = EvidenceSearchContext(
            concepts=concepts, tables=tables, columns=tuple(subjects("column_promoted"))
        )
        if stage == "cte":
            return StageInputs(stage, purpose, rewritten, schema)
        plan = self._single(stage, decisions, "cte_plan_approved", "cte")
        return StageInputs(
            stage, purpose, f"{rewritten}\n{CTE_PLAN_LABEL}: {plan.detail or plan.subject}", schema
        )

    def consult(self, stage: str, *, base: int | None = None) -> Consultation:
        """One Evidence search for `stage`; its receipt is recorded when it is available.
        schema_linking with a [database] also proposes tables and columns: the database must
        answer and the schema index be readable, or the stage is blocked before anything is
        recorded."""
        inputs = self.inputs(stage)
        linking = stage == "schema_linking" and self.runtime.ws.settings.database is not None
        if linking:
            self._reach_database(stage, inputs.purpose)
        search = self.runtime.search()
        try:
            outcome = search.search(inputs.query, inputs.purpose, inputs.context, stage=stage)
        finally:
            search.close()
        if not outcome.available:
            raise StageBlocked(
                self.session.id,
                stage,
                inputs.purpose,
                outcome.code or "unknown",
                outcome.message or "",
            )
        if outcome.receipt is None or outcome.generation is None or outcome.revision is None:
            # EvidenceSearch always fills these when available; a search that does not has
            # broken the contract, and a stage without a receipt must not go on.
            raise ThothError(
                f"session {self.session.id}, stage {stage}: the {inputs.purpose} search "
                "answered available without a receipt; nothing was recorded -> report this bug"
            )
        schema = self._propose(inputs, outcome.results) if linking else None
        entry = self.session.record_receipt(outcome.receipt, base=base)
        return Consultation(
            session_id=self.session.id,
            stage=stage,
            purpose=inputs.purpose,
            query_text=outcome.query_text or "",
            generation=outcome.generation,
            revision=outcome.revision,
            results=outcome.results,
            receipt=entry,
            schema=schema,
        )

    def _reach_database(self, stage: str, purpose: str) -> None:
        try:
            with self.runtime.database() as db:
                db.ping()
        except DatabaseUnavailable as exc:
            raise StageBlocked(
                self.session.id, stage, purpose, exc.code, str(exc), what="the database"
            ) from exc

    def _propose(self, inputs: StageInputs, results: tuple[EvidenceResult, ...]) -> SchemaProposal:
        linker = SchemaLinker(self.runtime.reader())
        try:
            return linker.propose(
                inputs.query,
                inputs.context.concepts,
                [EvidenceHint(r.evidence_id, r.rank, r.tables, r.columns) for r in results],
            )
        except Unreadable as exc:
            raise StageBlocked(
                self.session.id,
                inputs.stage,
                inputs.purpose,
                exc.code,
                str(exc),
                what="schema linking",
            ) from exc
        finally:
            linker.close()

    # -------------------------------------------------------------- internals

    def _purpose(self, stage: str) -> str:
        stage_index(stage)  # an unknown name is refused, naming the valid ones
        purpose = CONSULTING_STAGES.get(stage)
        if purpose is None:
            raise NotAnEvidenceStage(
                f"session {self.session.id}: stage {stage} never consults Evidence "
                f"(seed §11): {_WHY_NO_EVIDENCE[stage]} -> consult one of "
                f"{', '.join(CONSULTING_STAGES)}"
            )
        return purpose

    def _single(self, stage: str, decisions: list[Entry], type: str, source: str) -> Entry:
        """The one standing `type` decision. Several are refused rather than picking one:
        which of two rewrites the reviewer meant is not for the workflow to guess."""
        found = [e for e in decisions if e.type == type]
        if not found:
            raise self._not_ready(
                stage, f"needs a standing {type} decision from {source}", type, source
            )
        if len(found) > 1:
            seqs = ", ".join(f"seq {e.seq}" for e in found)
            raise StageNotReady(
                f"session {self.session.id}, stage {stage}: {len(found)} {type} decisions stand "
                f"({seqs}); nothing was searched -> retract the ones that no longer hold "
                f"(`tht session retract {self.session.id} --seq N --rationale ...`)"
            )
        return found[0]

    def _not_ready(self, stage: str, why: str, type: str, source: str) -> StageNotReady:
        return StageNotReady(
            f"session {self.session.id}, stage {stage} {why}; nothing was searched -> "
            f"record it first (`tht session decide {self.session.id} --stage {source} "
            f"--type {type} --subject ...`)"
        )
