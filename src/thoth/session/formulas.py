"""Formula proposals (seed §12): a formula found in schema linking, kept in the session.

A `formula_proposed` decision (stage `schema_linking`) carries one Formula proposal:

    subject  the concept, e.g. "fascia pediatrica"
    detail   a JSON object {"columns": ["schema.table.column", ...], "sql": "<one expression>"}

The ledger checks the detail with the same rules a curated `formula` unit must meet
(`thoth.evidence.model.FormulaData`: qualified input columns, exactly one composable
PostgreSQL expression), so a proposal that could never become Evidence is refused when it is
recorded, not when a curator imports it.

A proposal is only a session artifact. Turning the standing proposals of a session into
Evidence sources is a workspace write and lives above sessions
(`thoth.workflow.formulas.import_proposals`). The decisions `concept_formula_approved` /
`concept_formula_rejected` stay what they were: the choice made in one session, never a global
publication.

This module imports nothing from the rest of thoth.session: the ledger imports it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

from thoth.evidence.model import FormulaData

FORMULA_PROPOSED: Final = "formula_proposed"
# A proposal is imported as a Markdown ```sql block (thoth.workflow.formulas), which ``` in
# the SQL would end early: the rule refuses it when the proposal is recorded.
FENCE: Final = "```"


@dataclass(frozen=True)
class FormulaProposal:
    concept: str
    columns: tuple[str, ...]
    sql: str


def formula_detail(columns: list[str] | tuple[str, ...], sql: str) -> str:
    """The detail of a `formula_proposed` decision, in its one canonical spelling."""
    return json.dumps({"columns": list(columns), "sql": sql}, ensure_ascii=False)


def formula_issues(subject: str, detail: str) -> list[tuple[str, str]]:
    """(field, message) for each reason `subject` + `detail` is not a valid Formula proposal;
    empty when it is one."""
    try:
        shape: Any = json.loads(detail)
    except json.JSONDecodeError as exc:
        return [
            (
                "detail",
                f"a formula_proposed detail is not a JSON object ({exc.msg}); expected "
                '{"columns": ["schema.table.column", ...], "sql": "<one expression>"}',
            )
        ]
    if not isinstance(shape, dict):
        return [
            (
                "detail",
                f"a formula_proposed detail is not a JSON object but a {type(shape).__name__}",
            )
        ]
    if "concept" in shape:
        return [("detail.concept", "the concept is the subject: drop it from the detail")]
    try:
        data = FormulaData.model_validate({**shape, "concept": subject})
    except ValidationError as exc:
        issues = []
        for err in exc.errors():
            loc = [str(p) for p in err["loc"]]
            where = "subject" if loc[:1] == ["concept"] else ".".join(["detail", *loc])
            message = str(err["msg"]).removeprefix("Value error, ")
            if err["type"] == "missing":
                message = "field is missing"
            elif err["type"] == "extra_forbidden":
                message = "unknown field"
            issues.append((where, f"formula_proposed: {message}"))
        return issues
    if FENCE in data.sql:
        # The proposal is imported as a Markdown ```sql block, which ``` would end early.
        return [("detail.sql", "formula_proposed: the SQL contains ``` and cannot be imported")]
    return []


def parse_formula(subject: str, detail: str) -> FormulaProposal:
    """The proposal of a recorded `formula_proposed` decision (the ledger already checked it)."""
    shape = json.loads(detail)
    return FormulaProposal(
        concept=subject.strip(), columns=tuple(shape["columns"]), sql=shape["sql"].strip()
    )
