"""benchmarks/schema_linking_bird.py, its pure parts (no model, no index): gold tables and
columns of real BIRD gold queries (joins, aliases, a derived table, unqualified and
differently-cased names), the SQLite file and description CSVs built from a schema, the
columns an evidence hint names, and the recall / strict figures."""

from __future__ import annotations

import csv
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bird_schema as bird
import schema_linking_bird as bench


def _column(name: str, type_: str, samples: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "original_name": extra.get("original_name"),
        "type": type_,
        "ai_description": "AUTOMATIC TEXT, never used",
        "description": extra.get("description", f"the {name}"),
        "value_description": extra.get("value_description"),
        "foreign_keys": extra.get("foreign_keys", []),
        "sample_values": samples,
    }


# debit_card_specializing as BIRD describes it (names, types, keys; a few samples).
DEBIT = {
    "name": "debit_card_specializing",
    "tables": [
        {
            "name": "customers",
            "primary_key": ["CustomerID"],
            "columns": [
                _column("CustomerID", "integer", [3, 5, 6]),
                _column(
                    "Segment",
                    "text",
                    ["SME", "LAM", "KAM"],
                    description="client segment",
                    original_name="client segment",
                ),
                _column("Currency", "text", ["EUR", "CZK"], value_description="EUR or CZK"),
            ],
        },
        {
            "name": "gasstations",
            "primary_key": ["GasStationID"],
            "columns": [
                _column("GasStationID", "integer", [44, 45]),
                _column("ChainID", "integer", [13, 6]),
                _column("Country", "text", ["CZE", "SVK"]),
                _column("Segment", "text", ["Value for money", "Premium"]),
            ],
        },
        {
            "name": "products",
            "primary_key": ["ProductID"],
            "columns": [
                _column("ProductID", "integer", [1, 2]),
                _column("Description", "text", ["Rucní zadání", "Nafta"]),
            ],
        },
        {
            "name": "transactions_1k",
            "primary_key": ["TransactionID"],
            "columns": [
                _column("TransactionID", "integer", [1, 2]),
                _column("Date", "date", ["2012-08-24"]),
                _column("Time", "text", ["09:41:00"]),
                _column("CustomerID", "integer", [31543]),
                _column("CardID", "integer", [486621]),
                _column("GasStationID", "integer", [3704]),
                _column("ProductID", "integer", [2]),
                _column("Amount", "integer", [28]),
                _column("Price", "real", [672.64]),
            ],
        },
        {
            "name": "yearmonth",
            "primary_key": ["CustomerID", "Date"],
            "columns": [
                _column("CustomerID", "integer", [5, 6]),
                _column("Date", "text", ["201112", "201201"]),
                _column("Consumption", "real", [528.3, 1598.28]),
            ],
        },
    ],
}

# Two card_games tables: schemas.json lists the cards <-> rulings link from both ends.
CARDS = {
    "name": "card_games",
    "tables": [
        {
            "name": "cards",
            "primary_key": ["id"],
            "columns": [
                _column("id", "integer", [1, 2, 3]),
                _column(
                    "uuid",
                    "text",
                    ["5f8287b1", "57aaebc1", "8ac972b5"],
                    foreign_keys=[
                        {
                            "reference_table": "rulings",
                            "reference_column": "uuid",
                            "relationship": "one-to-many",
                        }
                    ],
                ),
                _column("name", "text", ["Ancestor's Chosen"]),
                _column("convertedManaCost", "real", [7.0, 5.0]),
            ],
        },
        {
            "name": "rulings",
            "primary_key": ["id"],
            "columns": [
                _column("id", "integer", [1, 2]),
                _column(
                    "uuid",
                    "text",
                    ["6d268c95", "56f4935b"],
                    foreign_keys=[
                        {
                            "reference_table": "cards",
                            "reference_column": "uuid",
                            "relationship": "many-to-one",
                        }
                    ],
                ),
                _column("text", "text", ["You draw the card."]),
            ],
        },
    ],
}


@pytest.fixture(scope="module")
def dbs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bird.BirdDatabase]:
    path = tmp_path_factory.mktemp("bird") / "schemas.json"
    path.write_text(json.dumps([DEBIT, CARDS]), encoding="utf-8")
    return {d.name: d for d in bird.load_schemas(path)}


def _cols(*names: str) -> frozenset[str]:
    return frozenset(names)


# -- gold -------------------------------------------------------------------------------------

# Real BIRD dev gold queries (question ids 1473, 1475, 1491, 1499, 1515, 1517).
GOLD_CASES = [
    (
        "SELECT AVG(T2.Consumption) / 12 FROM customers AS T1 INNER JOIN yearmonth AS T2 "
        "ON T1.CustomerID = T2.CustomerID WHERE SUBSTR(T2.Date, 1, 4) = '2013' "
        "AND T1.Segment = 'SME'",
        {"main.customers", "main.yearmonth"},
        {
            'main.yearmonth."Consumption"',
            'main.yearmonth."CustomerID"',
            'main.yearmonth."Date"',
            'main.customers."CustomerID"',
            'main.customers."Segment"',
        },
    ),
    (  # a derived table aliased t1, like one of its own inner aliases (T1)
        "SELECT COUNT(*) FROM ( SELECT T2.CustomerID FROM customers AS T1 INNER JOIN yearmonth "
        "AS T2 ON T1.CustomerID = T2.CustomerID WHERE T1.Segment = 'KAM' AND "
        "SUBSTRING(T2.Date, 1, 4) = '2012' GROUP BY T2.CustomerID HAVING SUM(T2.Consumption) "
        "< 30000 ) AS t1",
        {"main.customers", "main.yearmonth"},
        {
            'main.yearmonth."Consumption"',
            'main.yearmonth."CustomerID"',
            'main.yearmonth."Date"',
            'main.customers."CustomerID"',
            'main.customers."Segment"',
        },
    ),
    (  # unqualified names, a scalar subquery
        "SELECT Country , ( SELECT COUNT(GasStationID) FROM gasstations WHERE Segment = "
        "'Value for money' ) FROM gasstations WHERE Segment = 'Value for money' GROUP BY "
        "Country ORDER BY COUNT(GasStationID) DESC LIMIT 1",
        {"main.gasstations"},
        {
            'main.gasstations."Country"',
            'main.gasstations."GasStationID"',
            'main.gasstations."Segment"',
        },
    ),
    (  # an output alias in ORDER BY is not a column
        "SELECT SUM(T2.Consumption) / 12 AS MonthlyConsumption FROM customers AS T1 INNER JOIN "
        "yearmonth AS T2 ON T1.CustomerID = T2.CustomerID WHERE T1.Currency = 'EUR' GROUP BY "
        "T1.CustomerID ORDER BY MonthlyConsumption DESC LIMIT 1",
        {"main.customers", "main.yearmonth"},
        {
            'main.yearmonth."Consumption"',
            'main.yearmonth."CustomerID"',
            'main.customers."CustomerID"',
            'main.customers."Currency"',
        },
    ),
    (  # T1.date / T1.time for Date / Time: SQLite matches names case-insensitively
        "SELECT T2.Segment FROM transactions_1k AS T1 INNER JOIN customers AS T2 ON "
        "T1.CustomerID = T2.CustomerID WHERE T1.date = '2012-08-23' AND T1.time = '21:20:00'",
        {"main.transactions_1k", "main.customers"},
        {
            'main.customers."Segment"',
            'main.customers."CustomerID"',
            'main.transactions_1k."CustomerID"',
            'main.transactions_1k."Date"',
            'main.transactions_1k."Time"',
        },
    ),
    (  # an unqualified column of a join: only transactions_1k has Date
        "SELECT T2.Segment FROM transactions_1k AS T1 INNER JOIN customers AS T2 ON "
        "T1.CustomerID = T2.CustomerID ORDER BY Date ASC LIMIT 1",
        {"main.transactions_1k", "main.customers"},
        {
            'main.customers."Segment"',
            'main.customers."CustomerID"',
            'main.transactions_1k."CustomerID"',
            'main.transactions_1k."Date"',
        },
    ),
]


@pytest.mark.parametrize(("sql", "tables", "columns"), GOLD_CASES)
def test_gold_resolves_aliases_and_unqualified_names(
    dbs: dict[str, bird.BirdDatabase], sql: str, tables: set[str], columns: set[str]
) -> None:
    gold = bird.gold_of(sql, dbs["debit_card_specializing"])
    assert gold.tables == tables
    assert gold.columns == columns


def test_gold_of_a_correlated_subquery_names_the_outer_table(
    dbs: dict[str, bird.BirdDatabase],
) -> None:
    # Not from BIRD (its five dev databases have none): the inner query reads T1 of the outer.
    sql = (
        "SELECT T1.CustomerID FROM customers AS T1 WHERE EXISTS (SELECT 1 FROM yearmonth AS T2 "
        "WHERE T2.CustomerID = T1.CustomerID AND T2.Consumption > 1000)"
    )
    gold = bird.gold_of(sql, dbs["debit_card_specializing"])
    assert gold.columns == {
        'main.customers."CustomerID"',
        'main.yearmonth."CustomerID"',
        'main.yearmonth."Consumption"',
    }


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT Colour FROM customers", "colour"),
        ("SELECT Segment FROM clients", "clients"),
        ("SELEC Segment FROM customers", "sqlglot"),
        # Segment is in customers and gasstations: the qualifier refuses to guess.
        (
            "SELECT Segment FROM customers AS T1 INNER JOIN gasstations AS T2 "
            "ON T1.CustomerID = T2.ChainID",
            "sqlglot",
        ),
    ],
)
def test_gold_that_does_not_resolve_is_an_error_naming_it(
    dbs: dict[str, bird.BirdDatabase], sql: str, reason: str
) -> None:
    with pytest.raises(bird.GoldUnresolved, match=f"(?i){reason}"):
        bird.gold_of(sql, dbs["debit_card_specializing"])


# -- the SQLite file and descriptions ---------------------------------------------------------


def test_sqlite_file_has_the_keys_and_the_samples_as_rows(
    dbs: dict[str, bird.BirdDatabase], tmp_path: Path
) -> None:
    path = tmp_path / "cards.sqlite"
    assert bird.build_sqlite(dbs["card_games"], path) == {"cards": 3, "rulings": 2}
    conn = sqlite3.connect(path)
    try:
        # the one-to-many entry of cards.uuid is the many-to-one of rulings.uuid: declared once
        assert conn.execute("PRAGMA foreign_key_list(cards)").fetchall() == []
        [fk] = conn.execute("PRAGMA foreign_key_list(rulings)").fetchall()
        assert (fk[2], fk[3], fk[4]) == ("cards", "uuid", "uuid")
        info = conn.execute("PRAGMA table_info(cards)").fetchall()
        assert [(c[1], c[2], c[5]) for c in info] == [
            ("id", "INTEGER", 1),
            ("uuid", "TEXT", 0),
            ("name", "TEXT", 0),
            ("convertedManaCost", "REAL", 0),
        ]
        rows = conn.execute('SELECT id, uuid, name, "convertedManaCost" FROM cards').fetchall()
        assert rows == [
            (1, "5f8287b1", "Ancestor's Chosen", 7.0),
            (2, "57aaebc1", None, 5.0),
            (3, "8ac972b5", None, None),
        ]
    finally:
        conn.close()
    with pytest.raises(FileExistsError, match=r"cards\.sqlite"):
        bird.build_sqlite(dbs["card_games"], path)


def test_composite_primary_key(dbs: dict[str, bird.BirdDatabase], tmp_path: Path) -> None:
    path = tmp_path / "debit.sqlite"
    bird.build_sqlite(dbs["debit_card_specializing"], path)
    conn = sqlite3.connect(path)
    try:
        info = conn.execute("PRAGMA table_info(yearmonth)").fetchall()
        assert [(c[1], c[5]) for c in info] == [("CustomerID", 1), ("Date", 2), ("Consumption", 0)]
    finally:
        conn.close()


def test_descriptions_are_birds_csv_with_its_own_text(
    dbs: dict[str, bird.BirdDatabase], tmp_path: Path
) -> None:
    written = bird.write_descriptions(dbs["debit_card_specializing"], tmp_path / "schema")
    assert [p.name for p in written] == [
        "main.customers.csv",
        "main.gasstations.csv",
        "main.products.csv",
        "main.transactions_1k.csv",
        "main.yearmonth.csv",
    ]
    with written[0].open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows == [
        list(bird.CSV_HEADER),
        ["CustomerID", "", "the CustomerID", "integer", ""],
        ["Segment", "client segment", "client segment", "text", ""],
        ["Currency", "", "the Currency", "text", "EUR or CZK"],
    ]
    assert "AUTOMATIC" not in "".join(p.read_text(encoding="utf-8") for p in written)


def test_config_declares_the_sqlite_file_and_public_data(dbs: dict[str, bird.BirdDatabase]) -> None:
    import tomllib

    from thoth.config import Settings

    text = bench.config_text(dbs["card_games"], "data/card_games.sqlite")
    settings = Settings.model_validate(tomllib.loads(text))
    assert settings.database is not None
    assert settings.database.files == {"main": "data/card_games.sqlite"}
    assert settings.database.privacy.default_kind == "category"
    assert "public data" in text


# -- hints --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hint", "columns"),
    [
        # table.column and plain names, any case; Date is pinned to the table the hint names
        (
            "Year 2012 refers to yearmonth.date; consumption over 1000",
            [("yearmonth", "Consumption"), ("yearmonth", "Date")],
        ),
        # Segment is in customers and gasstations: Currency (customers only) picks customers
        (
            "SME refers to Segment = 'SME'; paid in EUR refers to Currency = 'EUR'",
            [("customers", "Currency"), ("customers", "Segment")],
        ),
        # COUNT( is a function, not a column; a backticked name is a column
        (
            "total refers to SUM(`Amount`); COUNT(Price)",
            [("transactions_1k", "Amount"), ("transactions_1k", "Price")],
        ),
    ],
)
def test_hint_columns(
    dbs: dict[str, bird.BirdDatabase], hint: str, columns: list[tuple[str, str]]
) -> None:
    assert bird.hint_columns(hint, dbs["debit_card_specializing"]) == columns


def test_hint_naming_a_shared_column_alone_keeps_every_table(
    dbs: dict[str, bird.BirdDatabase],
) -> None:
    assert bird.hint_columns("segment", dbs["debit_card_specializing"]) == [
        ("customers", "Segment"),
        ("gasstations", "Segment"),
    ]
    assert bird.hint_columns("count the rows", dbs["debit_card_specializing"]) == []


def test_hints_source_has_each_hint_once_on_one_line(dbs: dict[str, bird.BirdDatabase]) -> None:
    text = bird.hints_source(dbs["card_games"], ["a  refers\nto b;", "", "a refers to b;", "c"])
    assert text.splitlines()[2:] == ["## Hint 1", "", "a refers to b;", "", "## Hint 2", "", "c"]
    assert text.endswith("c\n")


def test_hint_title_is_the_first_clause() -> None:
    assert bird.hint_title("K-12 means grades 1-12; Eligible = `x`") == "K-12 means grades 1-12"
    long = "word " * 40
    title = bird.hint_title(long, limit=30)
    assert len(title) <= 34 and title.endswith(" ...")


# -- metrics ------------------------------------------------------------------------------------


def test_recall_and_strict() -> None:
    gold = ["a", "b", "c", "d"]
    ranked = ["x", "a", "y", "b", "c"]
    assert bird.recall_at(gold, ranked, 1) == 0.0
    assert bird.recall_at(gold, ranked, 2) == 0.25
    assert bird.recall_at(gold, ranked, 5) == 0.75
    assert bird.recall_at(gold, ranked, 50) == 0.75
    assert bird.strict(gold, ranked) is False
    assert bird.strict(gold[:3], ranked) is True


def test_scores_pool_questions_and_gains_are_ratios() -> None:
    gold = bird.Gold(frozenset({"main.t"}), frozenset({"main.t.a", "main.t.b"}))
    good = bench.Ranking(
        ("main.t.a", "main.t.b"), ("main.t",), frozenset({"main.t.a", "main.t.b"}), size=2
    )
    half = bench.Ranking(
        ("main.t.a", "main.u.x"), ("main.u", "main.t"), frozenset({"main.t.a"}), size=2
    )
    # a join column completes the proposal: strict, but not with the ranked columns alone
    joined = bench.Ranking(
        ("main.t.a", "main.u.x", "main.t.b"),
        ("main.t", "main.u"),
        frozenset({"main.t.a", "main.u.x", "main.t.b"}),
        size=2,
    )
    base, prod = bench.Scores(), bench.Scores()
    base.add(gold, half, 0.010)
    base.add(gold, good, 0.030)
    prod.add(gold, good, 0.020)
    prod.add(gold, good, 0.020)
    b, p = base.summary(), prod.summary()
    assert b["n"] == 2 and b["col_recall@5"] == 0.75 and b["strict"] == 0.5
    assert b["table_recall@1"] == 0.5 and b["table_recall@3"] == 1.0
    assert p["strict"] == 1.0 and p["latency"]["p50_ms"] == pytest.approx(20.0)
    ratios = bench.gains({"baseline": b, "product": p})["product"]
    assert ratios["strict"] == 2.0 and ratios["col_recall@5"] == pytest.approx(1 / 0.75)
    j = bench.Scores()
    j.add(gold, joined, 0.001)
    assert j.summary()["strict"] == 1.0 and j.summary()["strict_ranked_only"] == 0.0
    pooled = bench.Scores()
    pooled.extend(base)
    pooled.extend(prod)
    assert pooled.summary()["n"] == 4


# -- the workspace ------------------------------------------------------------------------------


def test_hints_become_publishable_units_through_prepare(
    dbs: dict[str, bird.BirdDatabase], tmp_path: Path
) -> None:
    from thoth.evaluation.evidence import load_evaluation
    from thoth.evidence.corpus import load_corpus
    from thoth.evidence.prepare import prepare
    from thoth.evidence.validate import validate_workspace

    db = dbs["debit_card_specializing"]
    hints = [
        "SME refers to Segment = 'SME'; paid in EUR refers to Currency = 'EUR'",
        "Year 2012 can be presented as Between 201201 And 201212",
        "SME refers to Segment = 'SME'; paid in EUR refers to Currency = 'EUR'",
        "",
        "the \"Premium\" stations refer to gasstations.Segment = 'Premium'",
    ]
    questions = [
        bird.BirdQuestion(n, db.name, f"q{n}?", h, "simple", "SELECT 1")
        for n, h in enumerate(hints)
    ]
    ws = bench.build_workspace(db, questions, tmp_path / "ws")
    assert (ws.root / "data" / f"{db.name}.sqlite").is_file()
    assert (ws.root / "schema" / "main.yearmonth.csv").is_file()
    assert bench.git(ws.root, "status", "--porcelain") == ""
    prepare(ws, bird.BirdHintRestructurer(db))
    files, problems = load_corpus(ws.evidence)
    assert problems == []
    units = {f.unit.provenance.supporting_excerpts[0]: f.unit for f in files}
    assert len(units) == 3  # the repeated hint is one unit; no unit for an empty hint
    sme = units[hints[0]]
    assert sme.kind == "mapping" and "schema_linking" in sme.purposes
    assert sme.applies_to.columns == ['main.customers."Currency"', 'main.customers."Segment"']
    assert sme.applies_to.tables == ["main.customers"]
    premium = units[hints[4]]
    assert premium.applies_to.columns == ['main.gasstations."Segment"']
    year = units[hints[1]]
    assert year.kind == "glossary" and "schema_linking" in year.purposes
    (ws.evidence / "evaluation.yaml").write_text(
        bench.evaluation_text([(u.id, hint) for hint, u in units.items()]), "utf-8"
    )
    evaluation = load_evaluation(ws.evidence / "evaluation.yaml")
    assert {q.profile for q in evaluation.questions} == {"lexical", "semantic", "mixed"}
    assert evaluation.questions[0].question in units
    assert validate_workspace(ws).publishable
