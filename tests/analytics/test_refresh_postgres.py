"""`tht analytics refresh` on a PostgreSQL store (issue 50, point 1), against the local server:
a staging schema built in one transaction, renamed in at COMMIT after every catalog query ran
on it as the store's read-only role; a reader keeps the old copy until then; rollback; a
pg_dump backup as the source; and each bad input a coded failure with the served schema
untouched (same schema, same relations, same data date, nothing staged left)."""

from __future__ import annotations

import secrets
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from tests.analytics.conftest import CATALOG
from tests.analytics.refresh_source import VIEWS
from tests.conftest import PG_HOST, PG_PORT
from thoth.analytics.catalog import load_catalog_files
from thoth.analytics.grants import grant_sql
from thoth.analytics.refresh import RefreshError, RefreshReport, refresh, rollback
from thoth.analytics.store import AnalyticsError, AnalyticsStore
from thoth.workspace import Workspace

OLD, NEW = "2025-06-30", "2025-07-31"
SOURCE = """
CREATE TABLE {s}.ricovero (id int PRIMARY KEY, reparto_code text, regime text, anno int,
                           giorni int, codice_fiscale text, note text);
CREATE TABLE {s}.reparto (code text PRIMARY KEY, nome text NOT NULL, password_hash text);
CREATE TABLE {s}.caricamento (data_dato date NOT NULL);
INSERT INTO {s}.ricovero VALUES
  (1, 'CAR', 'ordinario', 2024, 5, 'RSSMRA80A01H501U', 'pwd: hunter2'),
  (2, 'CAR', 'ordinario', 2024, 7, 'VRDLGU75B02F205X', NULL),
  (3, 'PED', 'ordinario', 2024, 3, 'BNCGNN01C03L219Y', NULL);
INSERT INTO {s}.reparto VALUES ('CAR', 'Cardiologia', 'x'), ('PED', 'Pediatria', 'y');
INSERT INTO {s}.caricamento VALUES ('2025-06-30');
"""


@dataclass
class PgStore:
    root: Path
    source: str
    store: str
    role: str
    admin_user: str
    env: dict[str, str]

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(
            host=PG_HOST, port=PG_PORT, user=self.admin_user, dbname="test", autocommit=True
        )

    def run(self, **kw: bool) -> RefreshReport:
        ws = Workspace.open(self.root)
        return refresh(
            ws, load_catalog_files(self.root, "analytics/queries"), environ=self.env, **kw
        )

    def set_date(self, day: str) -> None:
        with self.admin() as conn:
            conn.execute(
                sql.SQL("UPDATE {}.caricamento SET data_dato = %s").format(
                    sql.Identifier(self.source)
                ),
                (day,),
            )

    def served(self) -> tuple[object, ...]:
        """What readers see: the schema's oid, its relations, its data date; and every schema
        of this store (nothing staged left behind)."""
        with self.admin() as conn:
            oid = conn.execute(
                "SELECT oid FROM pg_namespace WHERE nspname = %s", (self.store,)
            ).fetchone()
            rels = conn.execute(
                "SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s ORDER BY 1",
                (self.store,),
            ).fetchall()
            day = conn.execute(
                sql.SQL("SELECT data_date FROM {}.v_data_date").format(sql.Identifier(self.store))
            ).fetchone()
            schemas = conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s ORDER BY 1",
                (self.store + "%",),
            ).fetchall()
        return oid, rels, day, schemas

    def store_obj(self) -> AnalyticsStore:
        settings = Workspace.open(self.root).settings.analytics
        assert settings is not None
        return AnalyticsStore(settings, self.root, environ=self.env)


def config(store: str, source: str, extra: str = "") -> str:
    return (
        'workspace = "an"\nlanguage = "it"\n\n'
        '[analytics]\ndialect = "postgresql"\nurl_env = "REFRESH_STORE_URL"\n'
        f'schemas = ["{store}"]\n'
        f'data_date_sql = "SELECT data_dato FROM {store}.v_data_dato"\n'
        'labels = ["public"]\n\n'
        "[analytics.refresh]\n"
        'source_url_env = "REFRESH_SOURCE_URL"\nadmin_url_env = "REFRESH_ADMIN_URL"\n'
        f'source_schema = "{source}"\n'
        f'scrub = ["{source}.ricovero.note"]\n'
        'scrub_mark = "[rimosso]"\n'
        f'source_data_date_sql = "SELECT max(data_dato) FROM {source}.caricamento"\n'
        f"{extra}"
    )


@pytest.fixture
def pg(pg_user: str, tmp_path: Path) -> Iterator[PgStore]:
    token = secrets.token_hex(4)
    source, store, role = f"refresh_src_{token}", f"refresh_an_{token}", f"refresh_ro_{token}"
    password = f"pw-{secrets.token_hex(8)}"
    admin_url = f"postgresql://{pg_user}@{PG_HOST}:{PG_PORT}/test"
    env = {
        "REFRESH_ADMIN_URL": admin_url,
        "REFRESH_SOURCE_URL": admin_url,
        "REFRESH_STORE_URL": f"postgresql://{role}:{password}@{PG_HOST}:{PG_PORT}/test",
    }
    root = tmp_path / "ws"
    root.mkdir()
    (root / "thoth.toml").write_text(config(store, source))
    (root / "analytics").mkdir()
    (root / "analytics" / "views.sql").write_text(VIEWS)
    for rel, text in CATALOG.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("analytics.v_", f"{store}.v_"))
    pgs = PgStore(root, source, store, role, pg_user, env)
    with pgs.admin() as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(source)))
        conn.execute(sql.SQL(SOURCE).format(s=sql.Identifier(source)))
        conn.execute(grant_sql(role, [], "test", password).encode())
    try:
        pgs.run()  # the first copy: served from now on, data date OLD
        pgs.set_date(NEW)
        yield pgs
    finally:
        with pgs.admin() as conn:
            conn.execute("SET lock_timeout = '10s'")
            for (name,) in conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s OR nspname = %s",
                (store + "%", source),
            ).fetchall():
                conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(str(name))))
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def stay(store: AnalyticsStore, schema: str) -> tuple[object, str]:
    catalog = load_catalog_files(store._root, "analytics/queries")
    done = store.execute(catalog.queries["degenza-media"], {"anno": 2024, "soglia": 0}, None)
    return done.rows[0][0], done.data_date


def test_refresh_swaps_in_one_commit_and_a_reader_moves_with_it(pg: PgStore) -> None:
    reader = pg.store_obj()
    try:
        assert stay(reader, pg.store) == (Decimal("5.00"), OLD)
        with pg.admin() as conn:  # a new admission: the new copy must show it
            conn.execute(
                sql.SQL(
                    "INSERT INTO {}.ricovero VALUES (4, 'PED', 'ordinario', 2024, 9, 'X', NULL)"
                ).format(sql.Identifier(pg.source))
            )
        report = pg.run()
        assert stay(reader, pg.store) == (Decimal("6.00"), NEW)
    finally:
        reader.close()
    assert report.previous_data_date == OLD and report.data_date == NEW
    assert report.tables == {"reparto": 2, "ricovero": 4}
    assert report.columns["ricovero"] == ["id", "reparto_code", "regime", "anno", "giorni", "note"]
    assert len(report.checked) == 3 and len(report.previous) == 1
    with pg.admin() as conn:
        notes = conn.execute(
            sql.SQL("SELECT DISTINCT note FROM {}.ricovero").format(sql.Identifier(pg.store))
        ).fetchall()
        assert notes == [("[rimosso]",)]
        # The store's role sees the new schema's views only, not the previous copies.
        seen = conn.execute(
            "SELECT n.nspname FROM pg_namespace n WHERE n.nspname LIKE %s "
            "AND has_schema_privilege(%s, n.oid, 'USAGE')",
            (pg.store + "%", pg.role),
        ).fetchall()
        assert seen == [(pg.store,)]
    # ... and, connected as that role, none of the new copy's tables.
    with (
        psycopg.connect(pg.env["REFRESH_STORE_URL"], autocommit=True) as role_conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        role_conn.execute(
            sql.SQL("SELECT count(*) FROM {}.ricovero").format(sql.Identifier(pg.store))
        )
    back = rollback(Workspace.open(pg.root), environ=pg.env)
    assert back.data_date == OLD and back.restored == report.previous[0]


def assert_refused(pg: PgStore, code: str, step: str) -> RefreshError:
    before = pg.served()
    with pytest.raises(RefreshError) as caught:
        pg.run()
    assert (caught.value.code, caught.value.step) == (code, step), str(caught.value)
    assert pg.served() == before
    return caught.value


def test_an_unreachable_source_is_refused(pg: PgStore) -> None:
    pg.env["REFRESH_SOURCE_URL"] = f"postgresql://postgres@{PG_HOST}:1/test"
    assert_refused(pg, "refresh_source_unreachable", "source")


def test_a_scrub_rule_naming_a_missing_column_is_refused(pg: PgStore) -> None:
    toml = pg.root / "thoth.toml"
    toml.write_text(toml.read_text().replace("ricovero.note", "ricovero.nota"))
    assert_refused(pg, "refresh_scrub_unknown_column", "plan")


def test_a_scrub_rule_naming_a_column_no_view_reads_is_kept_and_reported(pg: PgStore) -> None:
    # password_hash exists at the source but no view reads it: the rule scrubs nothing now,
    # and protects a view that reads the column later -> kept, and reported apart.
    toml = pg.root / "thoth.toml"
    rule = f"{pg.source}.reparto.password_hash"
    toml.write_text(toml.read_text().replace('.ricovero.note"]', f'.ricovero.note", "{rule}"]'))
    report = pg.run()
    assert report.scrub_unread == [rule]
    assert report.scrubbed == [f"{pg.source}.ricovero.note"]


def test_a_catalog_query_failing_on_the_new_copy_is_refused(pg: PgStore) -> None:
    views = VIEWS.replace("r.anno, r.giorni, r.note", "r.anno, r.note")
    (pg.root / "analytics" / "views.sql").write_text(views)
    error = assert_refused(pg, "refresh_check_failed", "check")
    assert any("degenza-media" in p.where for p in error.problems)


def test_a_second_refresh_while_one_runs_is_refused(pg: PgStore) -> None:
    with pg.admin() as holder:
        holder.execute(
            "SELECT pg_advisory_lock(hashtextextended(%s, 0))",
            (f"thoth-analytics-refresh:{pg.store}",),
        )
        assert_refused(pg, "refresh_running", "lock")
    assert pg.run().data_date == NEW


def test_a_data_date_older_than_the_served_one_is_refused_unless_forced(pg: PgStore) -> None:
    pg.set_date("2025-01-31")
    assert_refused(pg, "refresh_data_date_older", "data_date")
    assert pg.run(force=True).data_date == "2025-01-31"


def backed_up(pg: PgStore, pg_user: str, name: str, form: str) -> Path:
    """The source schema dumped by pg_dump (`form`: -Fc custom, -Fp plain) to backup/`name`,
    which the refresh then reads instead of the source database."""
    backup = pg.root / "backup" / name
    backup.parent.mkdir()
    subprocess.run(
        ["pg_dump", form, "-n", pg.source, "-h", PG_HOST, "-p", str(PG_PORT), "-U", pg_user,
         "-f", str(backup), "test"],
        check=True,
    )  # fmt: skip
    toml = pg.root / "thoth.toml"
    toml.write_text(
        toml.read_text().replace(
            'source_url_env = "REFRESH_SOURCE_URL"', f'source_backup = "backup/{name}"'
        )
    )
    return backup


def test_a_backup_is_restored_and_a_truncated_one_refused(pg: PgStore, pg_user: str) -> None:
    backup = backed_up(pg, pg_user, "gestionale.dump", "-Fc")
    whole = backup.read_bytes()
    backup.write_bytes(whole[: len(whole) // 2])
    assert_refused(pg, "refresh_backup_unreadable", "source")
    backup.write_bytes(whole)
    report = pg.run()
    assert report.data_date == NEW and report.tables["ricovero"] == 3
    with pg.admin() as conn:  # the scratch database is gone
        left = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'thoth_refresh_src_%'"
        ).fetchall()
    assert left == []


def test_catalog_queries_during_a_refresh_come_from_one_copy_with_its_date(pg: PgStore) -> None:
    """A reader executing a catalog query in a loop, as answers do, while the refresh runs:
    none fails, each figure comes with its own copy's date, no old date after a new one."""
    with pg.admin() as conn:
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.ricovero VALUES (4, 'PED', 'ordinario', 2024, 9, 'X', NULL)"
            ).format(sql.Identifier(pg.source))
        )
    expected = {OLD: Decimal("5.00"), NEW: Decimal("6.00")}
    seen: list[tuple[object, str]] = []
    failures: list[str] = []
    stop = threading.Event()
    reader = pg.store_obj()

    def loop() -> None:
        while not stop.is_set() or len(seen) < 3:
            try:
                seen.append(stay(reader, pg.store))
            except AnalyticsError as exc:
                failures.append(str(exc))

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        while not seen:
            time.sleep(0.01)
        pg.run()
        time.sleep(0.2)
    finally:
        stop.set()
        thread.join(timeout=60)
        reader.close()
    assert failures == []
    assert all(expected[day] == figure for figure, day in seen), seen
    days = [day for _, day in seen]
    assert days[0] == OLD and days[-1] == NEW and days == sorted(days)


def test_a_plain_dump_is_restored_and_one_cut_short_refused(pg: PgStore, pg_user: str) -> None:
    backup = backed_up(pg, pg_user, "gestionale.sql", "-Fp")
    whole = backup.read_bytes()
    # Cut at a statement boundary: every statement left runs, only the end is missing.
    cut = whole[: whole.index(b"\n", len(whole) * 2 // 3) + 1]
    backup.write_bytes(cut)
    error = assert_refused(pg, "refresh_backup_unreadable", "source")
    assert "cut short" in str(error)
    backup.write_bytes(whole)
    report = pg.run()
    assert report.data_date == NEW and report.tables == {"reparto": 2, "ricovero": 3}


def test_a_parameter_compared_only_with_null_is_refused_with_the_cast_to_write(
    pg: PgStore,
) -> None:
    """The docs' optional filter `(:x IS NULL OR col = :x)` (written on SQLite) cannot be typed
    by PostgreSQL: check says to cast it (found writing a catalog for a PostgreSQL store)."""
    optional = ONE_WARD_OPTIONAL.replace("analytics.v_", f"{pg.store}.v_")
    (pg.root / "analytics" / "queries" / "ricoveri-reparto.yaml").write_text(optional)
    error = assert_refused(pg, "refresh_check_failed", "check")
    [problem] = [p for p in error.problems if "ricoveri-reparto" in p.where]
    assert "could not determine data type" in problem.message
    assert problem.hint is not None and "CAST(:reparto AS text) IS NULL" in problem.hint


ONE_WARD_OPTIONAL = """\
id: ricoveri-reparto
description: Numero di ricoveri di un reparto, o di tutti, in un anno
examples:
  - Quanti ricoveri ha avuto la Pediatria nel 2024?
parameters:
  reparto: {type: enum, description: Reparto, values_from: analytics.v_reparti.reparto, required: false}
  anno: {type: year, description: Anno di dimissione}
measure: count
sql: |
  SELECT count(*) AS ricoveri FROM analytics.v_ricoveri
  WHERE anno = :anno AND (:reparto IS NULL OR reparto = :reparto)
result:
  shape: value
  columns:
    ricoveri: {label: Ricoveri, unit: ricoveri, kind: quantity}
"""
