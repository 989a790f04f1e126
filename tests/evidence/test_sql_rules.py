"""A ```sql block in a source section, as the rule-based restructurer reads it: one accepted
expression is a formula, one read-only query an example; anything the SQL checker refuses stays
a domain rule whose review item says why (it is never published as runnable SQL)."""

import pytest

from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.evidence.restructure.base import Draft
from thoth.evidence.sources import SourceFile

SECTION = "# Note\n\n## Durata\n\nUsa `adt.admission.admission_date`.\n\n```sql\n{sql}\n```\n"


def _draft(sql: str) -> Draft:
    text = SECTION.format(sql=sql)
    source = SourceFile(rel="source/note.md", sha256="sha256:0", text=text)
    [draft] = RuleBasedRestructurer().restructure(source, [], "it").drafts
    return draft


def test_an_accepted_expression_is_a_formula() -> None:
    assert _draft("(a.discharge_date - a.admission_date)").kind == "formula"


def test_a_read_only_query_is_an_example() -> None:
    assert _draft("SELECT count(*) FROM adt.admission").kind == "example"


@pytest.mark.parametrize(
    ("sql", "code", "why"),
    [
        ("pg_sleep(600)", "sql_refused", "`pg_sleep` is refused"),
        ("a.x -- ; DROP TABLE clinical.patient", "sql_refused", "comment"),
        ("SELECT pg_read_file('/etc/passwd')", "sql_refused", "`pg_read_file` is refused"),
        ("DROP TABLE clinical.patient", "sql_refused", "`DROP TABLE` statement"),
        ("CASE WHEN", "sql_not_parseable", "not a valid PostgreSQL expression"),
    ],
)
def test_refused_sql_is_a_domain_rule_that_says_why(sql: str, code: str, why: str) -> None:
    draft = _draft(sql)
    assert draft.kind == "domain"
    [note] = [n for n in draft.review_items if n.code.startswith("sql_")]
    assert note.code == code and why in note.message
