"""`tht schema sync` on a real SQLite warehouse, a real published workspace and Qdrant Edge:
records built by the one builder, only changed tables embedded, changes by name in the run
registry, samples only where privacy allows, Evidence still served after a schema sync."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator

import pytest

from tests.fake_embeddings import FakeEmbeddingServer
from tests.schema.warehouse import warehouse_runtime
from thoth.index.reader import open_generation
from thoth.index.records import SCHEMA_KINDS, SchemaColumnPayload, parse_payload
from thoth.runtime import Runtime
from thoth.schema import DescriptionsInvalid, SchemaSync, SchemaSyncReport
from thoth.workspace import Workspace

Make = Callable[..., Workspace]


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


@pytest.fixture
def rt(make_workspace: Make, fake: FakeEmbeddingServer) -> Iterator[Runtime]:
    runtime = warehouse_runtime(make_workspace, fake.url)
    try:
        yield runtime
    finally:
        runtime.close()


def sync(rt: Runtime, full: bool = False) -> SchemaSyncReport:
    with rt.database() as db:
        return SchemaSync(rt.ws, rt.state, rt.backend, rt.embedder, db).run(full=full)


def columns(rt: Runtime) -> dict[str, SchemaColumnPayload]:
    active = rt.state.active_generation(rt.ws.settings.workspace)
    assert active is not None
    store = open_generation(rt.backend, active)
    try:
        found = {}
        for rec in store.scroll({"record_kind": list(SCHEMA_KINDS)}):
            payload = parse_payload(rec.payload, rec.id)
            if isinstance(payload, SchemaColumnPayload):
                found[payload.column] = payload
        return found
    finally:
        store.close()


def test_first_sync_indexes_every_table_and_column_next_to_the_evidence(rt: Runtime) -> None:
    before = rt.state.active_generation(rt.ws.settings.workspace)
    assert before is not None
    report = sync(rt)
    assert report.outcome == "activated"
    assert report.tables_created == [
        "adt.admission",
        "adt.load_log",
        "clinical.episode",
        "clinical.patient",
    ]
    assert "adt.admission.care_regime" in report.columns_created
    assert report.counts["records_other_kinds"] > 0  # the Evidence was carried
    run = rt.state.list_sync_runs(rt.ws.settings.workspace, 1)[0]
    assert (run.kind, run.status, run.generation) == ("schema", "succeeded", report.generation)
    assert run.changes["tables_created"] == report.tables_created
    # Evidence search still serves from the new generation (carried records are restamped).
    search = rt.search()
    try:
        outcome = search.search("codici di esito della dimissione", "schema_linking")
    finally:
        search.close()
    assert outcome.available and outcome.generation == report.generation != before.id
    assert outcome.results


def test_samples_are_read_only_where_privacy_allows(rt: Runtime) -> None:
    sync(rt)
    cols = columns(rt)
    assert cols["adt.admission.care_regime"].samples  # category
    assert cols["adt.admission.care_regime"].values == "1 = ordinario; 2 = day hospital"
    assert cols["clinical.patient.birth_date"].samples  # date
    # identity by the config's list, by the descriptions file; unknown by default: never.
    assert cols["clinical.patient.tax_code"].privacy_kind == "identity"
    assert cols["clinical.patient.tax_code"].samples == ()
    assert cols["adt.admission.patient_id"].samples == ()
    assert cols["clinical.episode.discharge_status"].privacy_kind == "unknown"
    assert cols["clinical.episode.discharge_status"].samples == ()
    assert "RSSMRA" not in " ".join(c.text for c in cols.values())


def test_unchanged_schema_builds_nothing_and_a_changed_table_alone_is_embedded(
    rt: Runtime, fake: FakeEmbeddingServer
) -> None:
    first = sync(rt)
    again = sync(rt)
    assert again.outcome == "unchanged" and again.generation == first.generation
    with sqlite3.connect(rt.ws.root / "warehouse" / "clinical.sqlite") as conn:
        conn.execute("ALTER TABLE episode ADD COLUMN ward_code TEXT")
    conn.close()
    seen = len(fake.requests)
    changed = sync(rt)
    assert changed.outcome == "activated"
    assert changed.tables_changed == ["clinical.episode"]
    assert changed.columns_created == ["clinical.episode.ward_code"]
    assert changed.counts["tables_embedded"] == 1 and changed.counts["tables_carried"] == 3
    assert changed.counts["records_embedded"] == 1 + 4  # the table record and its 4 columns
    # Of which the embedding cache already knew the unchanged column texts: the server saw
    # the new table text and the new column only.
    sent = [t for r in fake.requests[seen:] for t in r.body.get("input", [])]
    assert len(sent) == 2 and any("ward code" in t for t in sent)
    assert "clinical.episode.ward_code" in columns(rt)


def test_a_dropped_table_leaves_with_the_new_snapshot(rt: Runtime) -> None:
    sync(rt)
    with sqlite3.connect(rt.ws.root / "warehouse" / "adt.sqlite") as conn:
        conn.execute("DROP TABLE load_log")
    conn.close()
    report = sync(rt)
    assert report.tables_dropped == ["adt.load_log"]
    assert report.columns_dropped == ["adt.load_log.data_date", "adt.load_log.load_id"]
    assert not [c for c in columns(rt) if c.startswith("adt.load_log")]


def test_invalid_descriptions_stop_the_sync_and_change_nothing(rt: Runtime) -> None:
    first = sync(rt)
    (rt.ws.root / "schema" / "adt.admission.yaml").write_text(
        "table: adt.admission\ncolumns:\n  care_regime: {kind: secret}\n", encoding="utf-8"
    )
    with pytest.raises(DescriptionsInvalid) as caught:
        sync(rt)
    assert "schema/adt.admission.yaml" in str(caught.value)
    assert "columns.care_regime.kind" in str(caught.value)
    active = rt.state.active_generation(rt.ws.settings.workspace)
    assert active is not None and active.id == first.generation
    run = rt.state.list_sync_runs(rt.ws.settings.workspace, 1)[0]
    assert (run.kind, run.status) == ("schema", "failed")


def test_a_failure_after_activation_says_the_new_generation_serves(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The docs and schema syncs close their run rows through one function: a schema sync
    whose retention failed after it activated said "nothing was activated"."""
    import thoth.index.build as build_module
    from thoth.state import StateError

    def retention_fails(*_args: object, **_kwargs: object) -> list[str]:
        raise StateError("retention: cannot list the generations -> retry")

    monkeypatch.setattr(build_module, "retain_generations", retention_fails)
    sync_ = None
    with rt.database() as db, pytest.raises(StateError, match="retention"):
        sync_ = SchemaSync(rt.ws, rt.state, rt.backend, rt.embedder, db)
        sync_.run()
    assert sync_ is not None and sync_.report is not None
    active = rt.state.active_generation(rt.ws.settings.workspace)
    assert active is not None and active.id == sync_.report.generation
    assert f"generation {active.id} was activated before the error" in sync_.report.after_failure
    run = rt.state.list_sync_runs(rt.ws.settings.workspace, 1)[0]
    assert (run.kind, run.status) == ("schema", "failed")
    assert "was activated before the error and is serving" in run.message
