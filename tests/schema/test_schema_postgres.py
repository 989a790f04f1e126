"""The schema index and a session's SQL on the real PostgreSQL server, through a read-only
role made with docs/database.md's recipe: comments become descriptions, the hidden schema
stays hidden, the final SQL is checked by pglast and EXPLAIN, then run with a receipt."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.conftest import commit_all
from tests.database.conftest import URL_ENV, Warehouse
from tests.database.conftest import warehouse as warehouse
from tests.fake_embeddings import FakeEmbeddingServer
from tests.publishing import prepared_workspace
from thoth.runtime import Runtime, open_runtime, state_dir
from thoth.schema import SchemaSync
from thoth.schema.catalog import SchemaCatalog
from thoth.session import SessionStore
from thoth.workflow.sql import DecisionRefused, decide_checked, run_final_sql
from thoth.workspace import Workspace

Make = Callable[..., Workspace]


@pytest.fixture
def rt(
    make_workspace: Make, warehouse: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Runtime]:
    monkeypatch.setenv(URL_ENV, warehouse.url(warehouse.reader))
    with FakeEmbeddingServer(dim=8) as fake:
        ws = prepared_workspace(make_workspace, fake.url)
        with (ws.root / "thoth.toml").open("a", encoding="utf-8") as handle:
            handle.write(
                f'\n[database]\ndialect = "postgresql"\nurl_env = "{URL_ENV}"\n'
                f'schemas = ["{warehouse.schema}"]\nstatement_timeout_seconds = 5\n'
            )
        commit_all(ws.root, "the warehouse")
        runtime = open_runtime(Workspace.open(ws.root))
        try:
            yield runtime
        finally:
            runtime.close()


def test_schema_sync_and_a_run_on_postgresql(rt: Runtime, warehouse: Warehouse) -> None:
    with rt.database() as db:
        report = SchemaSync(rt.ws, rt.state, rt.backend, rt.embedder, db).run()
    s = warehouse.schema
    assert report.outcome == "activated"
    assert report.tables_created == [f"{s}.patient", f"{s}.patient_ward", f"{s}.stay", f"{s}.ward"]
    reader = rt.reader()
    try:
        catalog = SchemaCatalog.read(reader)
    finally:
        reader.close()
    patient = catalog.table(f"{s}.patient")
    assert patient is not None and patient.description == "Pazienti ricoverati"
    tax = catalog.column(f"{s}.patient.tax_code")
    assert tax is not None and tax.description == "Codice fiscale" and tax.samples == ()
    birth = catalog.column(f"{s}.patient.birth_date")
    assert birth is not None and birth.privacy_kind == "date" and birth.samples
    assert not [t for t in catalog.tables if warehouse.hidden in t]

    session = SessionStore(state_dir(rt.ws) / "sessions").create("pazienti per reparto")
    with pytest.raises(DecisionRefused, match="does not exist"):
        decide_checked(
            rt, session, "final_sql", "final_sql_approved", subject="x",
            detail=f"SELECT nope FROM {s}.patient",
        )  # fmt: skip
    decide_checked(
        rt, session, "final_sql", "final_sql_approved", subject="per reparto",
        detail=f"SELECT ward_code, count(*) AS n FROM {s}.patient GROUP BY ward_code "
        "ORDER BY ward_code",
    )  # fmt: skip
    done = run_final_sql(rt, session)
    assert done.result is not None and done.result.rows == (("CAR", 2), ("PED", 1))
    assert done.receipt.dialect == "postgresql" and done.receipt.row_count == 2
    assert warehouse.counts()[:2] == (3, 2)  # nothing written
