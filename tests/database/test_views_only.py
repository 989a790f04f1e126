"""A views-only database (the analytics store): SQLite refuses any read that does not go
through one of the store's views; named parameters are bound by the database, found by a
tokenizer that leaves literals, comments and casts alone."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.analytics.store import STORE_FILE, build_store
from thoth.config import DatabaseSettings
from thoth.database import StatementRefused, open_database
from thoth.database.params import parameter_names, to_pyformat


def _settings(views_only: bool = True) -> DatabaseSettings:
    return DatabaseSettings(
        dialect="sqlite",
        files={"analytics": STORE_FILE},
        statement_timeout_seconds=2,
        views_only=views_only,
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    build_store(tmp_path)
    return tmp_path


ALLOWED = {
    "SELECT reparto, count(*) FROM analytics.v_ricoveri GROUP BY reparto": 3,
    "SELECT count(*) FROM analytics.v_ricoveri": 1,
    "SELECT * FROM analytics.v_reparti": 3,
    "SELECT data_dato FROM analytics.v_data_dato": 1,
    "WITH x AS (SELECT reparto FROM analytics.v_ricoveri) SELECT count(*) FROM x": 1,
    "SELECT name FROM analytics.sqlite_master WHERE type = 'view'": 3,
}

REFUSED = [
    "SELECT * FROM analytics.ricovero",
    "SELECT codice_fiscale FROM analytics.ricovero",
    "SELECT count(*) FROM analytics.ricovero",
    "SELECT nome FROM analytics.reparto",
    # a CTE is reported like a view: it must not open the base table
    "WITH x AS (SELECT codice_fiscale FROM analytics.ricovero) SELECT * FROM x",
    # ... not even under a view's name: it reads no column the view does not read
    "WITH v_ricoveri AS (SELECT codice_fiscale FROM analytics.ricovero) SELECT * FROM v_ricoveri",
    "SELECT (SELECT max(codice_fiscale) FROM analytics.ricovero) FROM analytics.v_reparti",
    "SELECT r.codice_fiscale FROM analytics.v_ricoveri v JOIN analytics.ricovero r ON r.id = v.id",
]


@pytest.mark.parametrize("sql", sorted(ALLOWED))
def test_views_are_read(root: Path, sql: str) -> None:
    with open_database(_settings(), root) as db:
        assert len(db.run(sql, limit=100).rows) == ALLOWED[sql]
        assert db.explain(sql)


@pytest.mark.parametrize("sql", REFUSED)
def test_base_tables_are_refused_by_sqlite(root: Path, sql: str) -> None:
    before = hashlib.sha256((root / STORE_FILE).read_bytes()).hexdigest()
    with open_database(_settings(), root) as db:
        with pytest.raises(StatementRefused) as info:
            db.run(sql, limit=100)
        assert info.value.code == "read_only"
        assert "outside a view" in str(info.value)
        with pytest.raises(StatementRefused):
            db.explain(sql)
    assert hashlib.sha256((root / STORE_FILE).read_bytes()).hexdigest() == before
    # The same statement reads the table when the database is not views-only: the refusal
    # above is the views-only mode's, not a broken statement.
    with open_database(_settings(views_only=False), root) as db:
        db.run(sql, limit=100)


def test_writes_stay_refused_in_views_only_mode(root: Path) -> None:
    with open_database(_settings(), root) as db:
        for sql in ("DELETE FROM analytics.ricovero", "DROP VIEW analytics.v_reparti"):
            with pytest.raises(StatementRefused) as info:
                db.run(sql, limit=1)
            assert info.value.code == "read_only"


def test_named_parameters_are_bound_by_sqlite(root: Path) -> None:
    sql = (
        "SELECT count(*) AS n FROM analytics.v_ricoveri "
        "WHERE anno = :anno AND regime = :regime AND reparto <> ':anno'"
    )
    with open_database(_settings(), root) as db:
        result = db.run(sql, limit=10, params={"anno": 2024, "regime": "ordinario"})
        assert result.rows == ((4,),)
        assert db.explain(sql, {"anno": 2024, "regime": "x"})


def test_parameter_tokenizer_skips_literals_comments_and_casts() -> None:
    sql = (
        "SELECT ':no', \"a:b\", x::int, $$ :no $$, $t$ :no $t$, E'\\' :no' -- :no\n"
        "/* :no /* :no */ */ FROM v WHERE a = :uno AND b LIKE 'x%' AND c = :due AND d = :uno"
    )
    assert parameter_names(sql, "postgresql") == ["uno", "due"]
    converted = to_pyformat(sql)
    assert "%(uno)s" in converted and "%(due)s" in converted
    assert "LIKE 'x%%'" in converted and "':no'" in converted and "x::int" in converted
    assert parameter_names("SELECT [a:b], `c:d`, ':e' FROM t WHERE x = :f", "sqlite") == ["f"]
