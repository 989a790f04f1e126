"""The rule-based restructurer on legacy formulas (`*.sql.md`): what cannot become a formula
unit is kept as a domain rule with a `legacy_formula_incompatible` note that says why."""

import pytest

from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.evidence.restructure.base import Draft
from thoth.evidence.sources import SourceFile

FRONT = "---\nname: eta\nconcept: Età al ricovero\n---\n# Età al ricovero\n\nEtà in anni.\n"


def _drafts(text: str) -> list[Draft]:
    source = SourceFile(rel="source/formulas/eta.sql.md", sha256="sha256:0", text=text)
    return RuleBasedRestructurer().restructure(source, [], "it").drafts


def test_a_parsing_expression_with_its_columns_is_a_formula() -> None:
    text = FRONT.replace("---\n#", "columns:\n  - a.b.c\n---\n#") + "\n```sql\nc + 1\n```\n"
    [draft] = _drafts(text)
    assert draft.kind == "formula" and not draft.review_items


@pytest.mark.parametrize(
    ("body", "rule", "why"),
    [
        ("", "# Età al ricovero\n\nEtà in anni.", "has no ```sql block"),
        ("\n```sql\n1 + 1\n```\n", "1 + 1", "names no input columns"),
        ("\n```sql\nCASE WHEN\n```\n", "CASE WHEN", "SQL is not accepted: not a valid"),
        ("\n```sql\npg_sleep(600)\n```\n", "pg_sleep(600)", "`pg_sleep` is refused"),
        ("\n```sql\nDROP TABLE t\n```\n", "DROP TABLE t", "`DROP TABLE` statement"),
        (
            "\n```sql\nSELECT pg_read_file('/etc/passwd')\n```\n",
            "SELECT pg_read_file('/etc/passwd')",
            "`pg_read_file` is refused",
        ),
    ],
)
def test_what_cannot_be_a_formula_is_kept_as_a_domain_rule_with_the_reason(
    body: str, rule: str, why: str
) -> None:
    [draft] = _drafts(FRONT + body)
    assert draft.kind == "domain" and draft.data == {"rule": rule}
    [note] = draft.review_items
    assert (note.code, note.field) == ("legacy_formula_incompatible", "domain.rule")
    assert why in note.message
