"""benchmarks/sql_check_bird.py on a few inline SQLite-flavoured queries: parse failures,
SQLite-only functions, subqueries and false refusals are counted apart."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import sql_check_bird as bird

QUERIES = [
    "SELECT `Free Meal Count` / `Enrollment` FROM frpm WHERE `County` = 'it''s `x`'",
    "SELECT name FROM t WHERE strftime('%Y', d) = '2020'",
    "SELECT name FROM t LIMIT 1, 2",
    "SELECT (SELECT max(x) FROM u) FROM t",
    "SELECT frobnicate(x) FROM t",
]


def test_backticks_become_double_quotes_outside_strings() -> None:
    assert bird.double_quote_identifiers(QUERIES[0]) == (
        'SELECT "Free Meal Count" / "Enrollment" FROM frpm WHERE "County" = \'it\'\'s `x`\''
    )


def test_each_kind_of_refusal_is_counted_apart() -> None:
    tallies = bird.measure(QUERIES)
    written, quoted, expressions = (
        tallies[k] for k in ("as_written", "double_quoted", "expressions")
    )
    assert (written.accepted, written.parse_failures) == (1, 2)
    assert (quoted.accepted, quoted.parse_failures, quoted.sqlite_only) == (2, 1, 1)
    assert quoted.false_refusals == 1 and "frobnicate" in quoted.false_examples[0]
    assert (expressions.subqueries, expressions.sqlite_only, expressions.false_refusals) == (
        1,
        1,
        1,
    )


def test_the_exit_status_flags_false_refusals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "questions.json"
    path.write_text(json.dumps([{"sql": q} for q in QUERIES[:4]]))
    assert bird.main(["--questions", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["double_quoted"]["accepted"] == 2
    path.write_text(json.dumps([{"sql": q} for q in QUERIES]))
    assert bird.main(["--questions", str(path)]) == 1
