"""A session's SQL check over HTTP on a PostgreSQL warehouse with column-level grants (issue 47,
bad input: "a SQL statement that names a column the role may not read"): the database itself
refuses it at EXPLAIN, the route answers 422 with the database's code, and the ledger is
unchanged; a statement on the granted columns is accepted. A real `tht serve`, the machine's
PostgreSQL, the read-only role of docs/database.md."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg import sql

from tests.database.conftest import URL_ENV, Warehouse, warehouse  # noqa: F401 (fixture)
from tests.fake_embeddings import FakeEmbeddingServer
from tests.service.conftest import Server, prepare_workspace
from tests.service.test_sessions_http import ANALYST, ledger_lines, new_session

pytestmark = pytest.mark.postgres


@pytest.fixture
def served(
    tmp_path: Path,
    embeddings: FakeEmbeddingServer,
    warehouse: Warehouse,  # noqa: F811
) -> Iterator[tuple[Server, Warehouse]]:
    corpus, keys = prepare_workspace(tmp_path, embeddings)
    config = corpus.root / "thoth.toml"
    config.write_text(
        config.read_text(encoding="utf-8")
        + f'\n[database]\ndialect = "postgresql"\nurl_env = "{URL_ENV}"\n'
        f'schemas = ["{warehouse.schema}"]\n',
        encoding="utf-8",
    )
    with warehouse.admin_connection() as conn:
        conn.execute(
            sql.SQL(
                "REVOKE SELECT ON {s}.patient FROM {r}; "
                "GRANT SELECT (id, ward_code) ON {s}.patient TO {r}"
            ).format(s=sql.Identifier(warehouse.schema), r=sql.Identifier(warehouse.reader))
        )
    server = Server(
        corpus.root,
        keys,
        tmp_path / "serve.log",
        env={URL_ENV: warehouse.url(warehouse.reader)},
    )
    try:
        yield server, warehouse
    finally:
        server.stop()


def test_a_column_the_role_may_not_read_is_refused_by_the_database(
    served: tuple[Server, Warehouse],
) -> None:
    server, house = served
    session_id = new_session(server, "Quanti pazienti per reparto?")
    path = f"/v1/sessions/{session_id}/sql/check"
    before = ledger_lines(server.root, session_id)
    for statement in (
        f"SELECT tax_code FROM {house.schema}.patient",
        f"SELECT * FROM {house.schema}.patient",
    ):
        refused = server.post(path, {"sql": statement}, caller=ANALYST)
        assert refused.status_code == 422, refused.text
        assert refused.json()["code"] == "permission_denied", refused.text
    granted = f"SELECT ward_code, count(*) FROM {house.schema}.patient GROUP BY ward_code"
    accepted = server.post(path, {"sql": granted}, caller=ANALYST)
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["dialect"] == "postgresql"
    assert ledger_lines(server.root, session_id) == before
