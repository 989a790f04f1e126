"""`tht analytics refresh` on a SQLite store (issue 50, point 1): the new file built beside the
served one from the source, only what the views read, scrubbed, dated, checked with every
catalog query, swapped with os.replace; an open reader keeps the old copy until the swap and
the new one after; rollback; and each bad input a coded failure with the served bytes
unchanged."""

from __future__ import annotations

import fcntl
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.analytics.conftest import CATALOG, AnalyticsWorkspace, make_analytics_workspace
from tests.analytics.refresh_source import (
    NEW_DATE,
    REFRESH,
    SOURCE_FILE,
    VIEWS,
    build_source,
    set_source_date,
)
from tests.analytics.store import DATA_DATE, STORE_FILE
from thoth.analytics.catalog import load_catalog_files
from thoth.analytics.refresh import RefreshError, RefreshReport, refresh, rollback
from thoth.analytics.store import AnalyticsStore
from thoth.cli.main import app
from thoth.workspace import Workspace

runner = CliRunner()


@pytest.fixture
def aw(tmp_path: Path) -> Iterator[AnalyticsWorkspace]:
    aw = make_analytics_workspace(tmp_path / "ws", extra=REFRESH)
    aw.write("analytics/views.sql", VIEWS)
    build_source(aw.root)
    yield aw


def served_bytes(aw: AnalyticsWorkspace) -> bytes:
    return (aw.root / STORE_FILE).read_bytes()


def run(aw: AnalyticsWorkspace, *, force: bool = False) -> RefreshReport:
    ws = aw.ws
    return refresh(ws, load_catalog_files(ws.root, "analytics/queries"), force=force)


def count_2024(store: AnalyticsStore) -> tuple[object, str]:
    ws_catalog = load_catalog_files(store._root, "analytics/queries")
    query = ws_catalog.queries["degenza-media"]
    done = store.execute(query, {"anno": 2024, "soglia": 0}, None)
    return done.rows[0][0], done.data_date


def staging_left(aw: AnalyticsWorkspace) -> list[str]:
    return [p.name for p in (aw.root / "store").iterdir() if ".staging-" in p.name]


def test_refresh_builds_checks_and_swaps_while_an_open_reader_keeps_the_old_copy(
    aw: AnalyticsWorkspace,
) -> None:
    before = served_bytes(aw)
    store = AnalyticsStore(aw.ws.settings.analytics, aw.root)  # type: ignore[arg-type]
    try:
        # Old copy: 2024 stays 7, 1, 3, 4, 2 -> 3.4 days.
        assert count_2024(store) == (3.4, DATA_DATE)
        report = run(aw)
        # New copy: 5, 7, 3, 1 -> 4.0 days, and the new data date, on the same store object.
        assert count_2024(store) == (4.0, NEW_DATE)
    finally:
        store.close()
    assert report.data_date == NEW_DATE and report.previous_data_date == DATA_DATE
    assert [s.name for s in report.steps] == [
        "lock", "source", "plan", "data_date", "copy", "views", "grant", "check", "swap", "prune",
    ]  # fmt: skip
    assert sorted(report.checked) == sorted(p.split("/")[-1][:-5] for p in CATALOG)
    # Only what the views read: no tax code, no users table; scrubbed columns replaced.
    conn = sqlite3.connect(aw.root / STORE_FILE)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert tables == {"ricovero", "reparto", "thoth_data_date"}
        columns = [r[1] for r in conn.execute("PRAGMA table_info(ricovero)")]
        assert columns == ["id", "reparto_code", "regime", "anno", "giorni", "note"]
        assert [r[1] for r in conn.execute("PRAGMA table_info(reparto)")] == ["code", "nome"]
        assert {r[0] for r in conn.execute("SELECT note FROM ricovero")} == {"[rimosso]"}
        whole = (aw.root / STORE_FILE).read_bytes()
        assert b"hunter2" not in whole and b"RSSMRA80A01H501U" not in whole
    finally:
        conn.close()
    # The old copy is kept for rollback, byte for byte; nothing staged is left behind.
    kept = aw.root / "store" / report.previous[0]
    assert kept.read_bytes() == before
    assert staging_left(aw) == []
    back = rollback(aw.ws)
    assert back.data_date == DATA_DATE and served_bytes(aw) == before


def test_previous_copies_beyond_keep_are_dropped(aw: AnalyticsWorkspace) -> None:
    for day in ("2025-08-01", "2025-08-02", "2025-08-03"):
        set_source_date(aw.root, day)
        report = run(aw)
    assert len(report.previous) == 2 and len(report.dropped) == 1
    assert report.previous_data_date == "2025-08-02"


def assert_refused(aw: AnalyticsWorkspace, code: str, step: str, before: bytes) -> RefreshError:
    with pytest.raises(RefreshError) as caught:
        run(aw)
    assert (caught.value.code, caught.value.step) == (code, step), str(caught.value)
    assert "served copy is untouched" in str(caught.value)
    assert served_bytes(aw) == before
    assert staging_left(aw) == []
    assert not list((aw.root / "store").glob("*.prev-*"))
    return caught.value


def test_an_unreachable_source_is_refused(aw: AnalyticsWorkspace) -> None:
    before = served_bytes(aw)
    (aw.root / SOURCE_FILE).unlink()
    assert_refused(aw, "refresh_source_unreachable", "source", before)
    (aw.root / SOURCE_FILE).write_bytes(b"not a database, a truncated copy" * 10)
    assert_refused(aw, "refresh_source_unreachable", "source", before)


def test_a_scrub_rule_naming_a_missing_column_is_refused(aw: AnalyticsWorkspace) -> None:
    before = served_bytes(aw)
    toml = aw.root / "thoth.toml"
    toml.write_text(toml.read_text().replace("main.ricovero.note", "main.ricovero.nota"))
    error = assert_refused(aw, "refresh_scrub_unknown_column", "plan", before)
    assert "main.ricovero.nota" in str(error)


def test_a_scrub_rule_naming_a_column_no_view_reads_is_kept_and_reported(
    aw: AnalyticsWorkspace,
) -> None:
    # codice_fiscale exists at the source but no view reads it: the rule scrubs nothing now (a
    # typo for another column would look like protection), yet it protects a view that reads
    # the column later -> kept, and reported apart from the rules that scrub the copy.
    toml = aw.root / "thoth.toml"
    rule = "main.ricovero.codice_fiscale"
    toml.write_text(
        toml.read_text().replace('"main.ricovero.note"]', f'"main.ricovero.note", "{rule}"]')
    )
    report = run(aw)
    assert report.scrub_unread == [rule]
    assert report.scrubbed == ["main.ricovero.note"]
    done = CliRunner().invoke(app, ["analytics", "refresh", "-w", str(aw.root)])
    assert done.exit_code == 0, done.output
    said = " ".join(done.output.split())
    assert rule in said and "no view reads" in said


def test_a_catalog_query_failing_on_the_new_copy_is_refused(aw: AnalyticsWorkspace) -> None:
    before = served_bytes(aw)
    # The views file no longer gives v_ricoveri the days: degenza-media cannot run on it.
    aw.write("analytics/views.sql", VIEWS.replace("r.anno, r.giorni, r.note", "r.anno, r.note"))
    error = assert_refused(aw, "refresh_check_failed", "check", before)
    assert any("degenza-media" in p.where for p in error.problems)


def test_a_view_reading_a_table_the_source_lacks_is_refused(aw: AnalyticsWorkspace) -> None:
    before = served_bytes(aw)
    aw.write("analytics/views.sql", VIEWS + "CREATE VIEW v_x AS SELECT a FROM nowhere;\n")
    assert_refused(aw, "refresh_views_invalid", "plan", before)


def test_a_second_refresh_while_one_runs_is_refused(aw: AnalyticsWorkspace) -> None:
    before = served_bytes(aw)
    # The first refresh's lock, held as it holds it (flock on the lock file beside the store).
    with open(aw.root / "store" / ".analytics.sqlite.refresh-lock", "a+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert_refused(aw, "refresh_running", "lock", before)
    assert run(aw).data_date == NEW_DATE  # released: the next one runs


def test_a_data_date_older_than_the_served_one_is_refused_unless_forced(
    aw: AnalyticsWorkspace,
) -> None:
    before = served_bytes(aw)
    set_source_date(aw.root, "2025-05-31")  # the source's clock jumped back
    error = assert_refused(aw, "refresh_data_date_older", "data_date", before)
    assert "2025-05-31" in str(error) and DATA_DATE in str(error)
    report = run(aw, force=True)
    assert report.data_date == "2025-05-31" and report.forced


def test_the_cli_refreshes_and_says_the_failed_step_in_json(aw: AnalyticsWorkspace) -> None:
    root = str(aw.root)
    done = runner.invoke(app, ["analytics", "refresh", "-w", root, "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["ok"] and data["data_date"] == NEW_DATE and data["tables"]["ricovero"] == 5
    before = served_bytes(aw)
    set_source_date(aw.root, "2025-01-01")
    failed = runner.invoke(app, ["analytics", "refresh", "-w", root, "--json"])
    assert failed.exit_code == 1, failed.output
    data = json.loads(failed.output)
    assert (data["code"], data["step"]) == ("refresh_data_date_older", "data_date")
    assert served_bytes(aw) == before
    back = runner.invoke(app, ["analytics", "rollback", "-w", root, "--json"])
    assert back.exit_code == 0, back.output
    assert json.loads(back.output)["data_date"] == DATA_DATE
    assert Workspace.open(aw.root).settings.analytics is not None


def test_rollback_with_no_previous_copy_is_refused_and_changes_nothing(
    aw: AnalyticsWorkspace,
) -> None:
    before = served_bytes(aw)
    with pytest.raises(RefreshError) as caught:
        rollback(aw.ws)
    assert caught.value.code == "rollback_no_previous" and caught.value.exit_code == 4
    assert served_bytes(aw) == before
    run(aw)
    rollback(aw.ws)
    assert served_bytes(aw) == before  # back to the copy the refresh replaced


def test_numeric_answers_during_a_refresh_come_from_one_copy_with_its_date(
    aw: AnalyticsWorkspace,
) -> None:
    """The issue's goal on SQLite, end to end: questions asked through the answer service in a
    loop while refreshes run; none fails, each figure comes with its own copy's data date, and
    no old date follows a new one."""
    aw.activate()
    aw.publish_text()
    question = "Quanti ricoveri ha avuto la Pediatria nel 2024?"
    expected = {DATA_DATE: 3, NEW_DATE: 1}  # Pediatria's 2024 admissions in each copy
    seen: list[tuple[object, object, str]] = []
    stop = threading.Event()

    def reader() -> None:
        service = aw.service()
        try:
            while not stop.is_set() or len(seen) < 3:
                answer = service.ask(question)
                provenance = answer.provenance or {}
                rows = (answer.figures or {}).get("rows")
                seen.append((answer.status, rows, str(provenance.get("data_date"))))
        finally:
            service.close()

    thread = threading.Thread(target=reader)
    thread.start()
    while not seen:
        time.sleep(0.01)
    try:
        run(aw)
    finally:
        time.sleep(0.2)
        stop.set()
        thread.join(timeout=60)
    assert all(status == "computed" for status, _, _ in seen), seen
    assert all(rows == [[expected[day]]] for _, rows, day in seen), seen
    days = [day for _, _, day in seen]
    assert days[0] == DATA_DATE and days[-1] == NEW_DATE
    assert days == sorted(days)  # never the old date after the new one
