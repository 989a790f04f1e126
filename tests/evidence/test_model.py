"""The eight kinds, each with its own required fields and validation (seed §4)."""

from typing import Any

import pytest

from thoth.evidence.document import parse_unit, render_unit
from thoth.evidence.model import KINDS, Unit

SHA = "sha256:" + "a" * 64
VALID: dict[str, dict[str, Any]] = {
    "formula": {
        "concept": "fascia pediatrica",
        "columns": ["clinical.patient.birth_date"],
        "sql": "CASE WHEN age < 18 THEN 'pediatrica' ELSE 'adulta' END",
    },
    "enum": {"column": "clinical.episode.discharge_status", "values": {"D": "dimesso"}},
    "mapping": {"concept": "ricovero", "tables": ["adt.admission"], "columns": []},
    "normalization": {"rules": ["M -> maschio"], "columns": ["clinical.patient.sex"]},
    "glossary": {"term": "ricovero", "definition": "permanenza in reparto", "synonyms": []},
    "domain": {"rule": "Un episodio appartiene a un solo ricovero."},
    "example": {
        "question": "Quanti ricoveri?",
        "interpretation": "conta i ricoveri",
        "sql": "SELECT count(*) FROM adt.admission",
    },
    "reference": {
        "url": "https://example.org/linee-guida",
        "label": "Linee guida",
        "description": "criteri",
    },
}
# One invalid value per kind and the field it must be reported on.
INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "formula": ({**VALID["formula"], "columns": []}, "formula.columns"),
    "enum": ({**VALID["enum"], "column": "not a column"}, "enum.column"),
    "mapping": ({**VALID["mapping"], "tables": []}, "mapping.tables"),
    "normalization": ({**VALID["normalization"], "rules": []}, "normalization.rules"),
    "glossary": ({**VALID["glossary"], "definition": "  "}, "glossary.definition"),
    "domain": ({"rule": ""}, "domain.rule"),
    "example": ({**VALID["example"], "sql": "SELEC 1"}, "example.sql"),
    "reference": ({**VALID["reference"], "url": "ftp//x"}, "reference.url"),
}


def unit_text(kind: str, data: dict[str, Any], **envelope: Any) -> str:
    import yaml

    front = {
        "schema_version": 1,
        "id": "evidence:test-unit",
        "title": "Test",
        "kind": kind,
        "purposes": ["sql_generation"],
        "applies_to": {"concepts": [], "tables": [], "columns": []},
        "language": "it",
        "provenance": {
            "source_file": "source/a.md",
            "source_sha256": SHA,
            "supporting_excerpts": ["estratto"],
        },
        "caveats": [],
        "review_items": [],
        kind: data,
        **envelope,
    }
    return "---\n" + yaml.safe_dump(front, allow_unicode=True) + "---\n\n# Test\n"


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_accepts_its_valid_fields(kind: str) -> None:
    unit = parse_unit(unit_text(kind, VALID[kind]), "x.md")
    assert not isinstance(unit, list), unit
    assert unit.kind == kind
    # Round trip: rendering and parsing again gives the same unit.
    again = parse_unit(render_unit(unit), "x.md")
    assert again == unit


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_rejects_its_invalid_fields(kind: str) -> None:
    data, field = INVALID[kind]
    problems = parse_unit(unit_text(kind, data), "curated/x.md")
    assert isinstance(problems, list)
    assert field in [p.field for p in problems], [p.render() for p in problems]
    assert all(p.where == "curated/x.md" for p in problems)


def test_kind_block_must_match_kind() -> None:
    text = unit_text("enum", VALID["enum"]).replace("kind: enum", "kind: glossary")
    problems = parse_unit(text, "x.md")
    assert isinstance(problems, list)
    assert {"glossary", "enum"} <= {p.field for p in problems}


def test_unknown_kind_is_named() -> None:
    problems = parse_unit(unit_text("recipe", {"x": 1}), "x.md")
    assert isinstance(problems, list)
    assert problems[0].field == "kind" and "recipe" in problems[0].message


@pytest.mark.parametrize(
    "sql,reason",
    [
        ("SELECT 1", "complete statement"),
        ("a, b", "2 expressions"),
        ("pg_sleep(600)", "`pg_sleep`"),
        ("a.x -- ; DROP TABLE clinical.patient", "comment"),
        ("query_to_xml('DROP TABLE t', true, true, '')", "`query_to_xml`"),
    ],
)
def test_a_formula_unit_holds_one_accepted_expression(sql: str, reason: str) -> None:
    problems = parse_unit(unit_text("formula", {**VALID["formula"], "sql": sql}), "x.md")
    assert isinstance(problems, list)
    assert [p.field for p in problems] == ["formula.sql"] and reason in problems[0].message


@pytest.mark.parametrize(
    "sql,reason",
    [
        ("DROP TABLE clinical.patient", "`DROP TABLE` statement is not a read-only query"),
        ("ALTER ROLE bob SUPERUSER", "`ALTER ROLE`"),
        ("COPY t TO PROGRAM 'rm -rf /'", "`COPY`"),
        ("SELECT 1; DROP TABLE t", "2 statements"),
        ("SELECT pg_read_file('/etc/passwd')", "`pg_read_file`"),
    ],
)
def test_an_example_unit_holds_one_read_only_query(sql: str, reason: str) -> None:
    problems = parse_unit(unit_text("example", {**VALID["example"], "sql": sql}), "x.md")
    assert isinstance(problems, list)
    assert [p.field for p in problems] == ["example.sql"] and reason in problems[0].message


def test_excerpt_limits() -> None:
    six = unit_text("domain", VALID["domain"]).replace(
        "supporting_excerpts:\n  - estratto",
        "supporting_excerpts: [a, b, c, d, e, f]",
    )
    problems = parse_unit(six, "x.md")
    assert isinstance(problems, list)
    assert problems[0].field == "provenance.supporting_excerpts"
    long = unit_text("domain", VALID["domain"]).replace("- estratto", "- " + "x" * 1001)
    problems = parse_unit(long, "x.md")
    assert isinstance(problems, list)
    assert problems[0].field == "provenance.supporting_excerpts.0"


def test_id_has_no_kind_and_follows_the_pattern() -> None:
    text = unit_text("domain", VALID["domain"]).replace("evidence:test-unit", "domain:Test Unit")
    problems = parse_unit(text, "x.md")
    assert isinstance(problems, list) and problems[0].field == "id"


def test_malformed_front_matter() -> None:
    for text, fragment in [
        ("# no front matter\n", "no YAML front matter"),
        ("---\nid: [unclosed\n---\n", "not valid YAML"),
        ("---\nid: x\n", "not closed"),
        ("---\n- a list\n---\n", "mapping"),
    ]:
        problems = parse_unit(text, "curated/domain/x.md")
        assert isinstance(problems, list)
        assert fragment in problems[0].message
        assert problems[0].where == "curated/domain/x.md"


def _unit(kind: str) -> Unit:
    unit = parse_unit(unit_text(kind, VALID[kind]), "x.md")
    assert not isinstance(unit, list)
    return unit


def test_rendering_keeps_the_documented_key_order() -> None:
    text = render_unit(_unit("formula"))
    keys = [line.split(":")[0] for line in text.splitlines() if line and line[0].isalpha()]
    assert keys[:11] == [
        "schema_version",
        "id",
        "title",
        "kind",
        "purposes",
        "applies_to",
        "language",
        "provenance",
        "caveats",
        "review_items",
        "formula",
    ]
