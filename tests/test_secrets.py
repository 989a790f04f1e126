"""The one secret scanner (thoth.secrets) on its corpus: every positive found on exactly its
lines, no negative flagged, and the findings never carry the secret itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from thoth.secrets import Finding, find_secrets

CORPUS_FILE = Path(__file__).parent / "data" / "secrets_corpus.yaml"
CORPUS: dict[str, list[dict[str, Any]]] = yaml.safe_load(CORPUS_FILE.read_text("utf-8"))
POSITIVES = CORPUS["positives"]
NEGATIVES = CORPUS["negatives"]

# The formats the first release's credential check missed (issue 14): named, so losing one
# fails a test that says which.
MISSED_BEFORE = {
    "missed_italian_phrase",
    "missed_pgpassword",
    "missed_db_password",
    "missed_redis_empty_user",
    "missed_basic_auth_header",
    "missed_markdown_table_cell",
    "missed_parola_chiave",
}


def test_the_corpus_is_large_enough_and_names_the_missed_formats() -> None:
    assert len(POSITIVES) >= 40 and len(NEGATIVES) >= 40
    names = [case["name"] for case in POSITIVES + NEGATIVES]
    assert len(names) == len(set(names)), "case names must be unique"
    assert {case["name"] for case in POSITIVES} >= MISSED_BEFORE


@pytest.mark.parametrize("case", POSITIVES, ids=[c["name"] for c in POSITIVES])
def test_every_positive_is_found_on_its_lines(case: dict[str, Any]) -> None:
    found = find_secrets(case["text"])
    assert sorted({f.line for f in found}) == case["lines"], found


@pytest.mark.parametrize("case", NEGATIVES, ids=[c["name"] for c in NEGATIVES])
def test_no_negative_is_flagged(case: dict[str, Any]) -> None:
    assert find_secrets(case["text"]) == []


@pytest.mark.parametrize("name", sorted(MISSED_BEFORE))
def test_each_format_missed_before_is_caught(name: str) -> None:
    [case] = [c for c in POSITIVES if c["name"] == name]
    assert find_secrets(case["text"]), f"{name} is not caught"


def test_a_finding_names_line_and_kind_never_the_value() -> None:
    text = "# Accesso\n\nNiente qui.\nLa password del database è Segreta2024!\n"
    [finding] = find_secrets(text)
    assert finding == Finding(line=4, kind=finding.kind)
    assert "Segreta2024" not in finding.kind
    assert "password" in finding.kind


def test_one_finding_per_line_in_line_order() -> None:
    text = "token: 7c1e9a4f2b6d8e0f\npassword = 'Zx9!kLm2' # postgresql://a:Bb12345@h/db\n"
    assert [f.line for f in find_secrets(text)] == [1, 2]


def test_line_numbers_count_newlines_only() -> None:
    # A form feed or a Unicode line separator is not a new line for an editor.
    text = "pagina 1\x0cpagina 2\u2028ancora\npassword = 'Zx9!kLm2'\n"
    assert [f.line for f in find_secrets(text)] == [2]


def test_windows_line_endings() -> None:
    assert [f.line for f in find_secrets("titolo\r\nPGPASSWORD=Dwh#Prod_77\r\n")] == [2]
