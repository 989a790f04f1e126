"""`tht analytics refresh` at 1 million rows on the local PostgreSQL (issue 50's goal).

A source schema with 1,000,000 admissions (tax code and a note among the columns, which the
views do not read or which are scrubbed), 10 wards and the load log; a first refresh makes the
served copy (data date D1); the source then gains 1,000 admissions and the date D2, and the
measured refresh runs while a reader thread executes catalog queries through the
AnalyticsStore, as answers do, in a loop. Reported: the time of each step, the reader's
executions before and after the swap, failures, and whether each figure came with the data
date of the copy it was computed on (the count of a ward-year differs between the copies).

    PYTHONPATH=src .venv/bin/python benchmarks/analytics_refresh.py [--rows N] [--json]

Needs the server at 127.0.0.1:5432 (trust auth, user postgres, database test) with the right
to create roles; every name it creates starts with refresh_bench_ and is dropped at the end.
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from bench_common import emit, header_line, latency_stats, loadavg, machine_facts
from thoth.analytics.catalog import load_catalog_files
from thoth.analytics.grants import grant_sql
from thoth.analytics.refresh import refresh
from thoth.analytics.store import AnalyticsError, AnalyticsStore
from thoth.workspace import Workspace

HOST, PORT, ADMIN = "127.0.0.1", 5432, "postgres"
D1, D2 = "2026-12-05", "2026-12-06"
SRC, STORE, ROLE = "refresh_bench_src", "refresh_bench_an", "refresh_bench_ro"

SOURCE = """
CREATE TABLE {s}.reparto (code text PRIMARY KEY, nome text NOT NULL, password_hash text);
INSERT INTO {s}.reparto
  SELECT 'R' || i, 'Reparto ' || i, md5(i::text) FROM generate_series(1, 10) i;
CREATE TABLE {s}.ricovero (id int PRIMARY KEY, reparto_code text, regime text, anno int,
                           giorni int, codice_fiscale text, note text);
INSERT INTO {s}.ricovero
  SELECT i, 'R' || (1 + i % 10), CASE WHEN i % 4 = 0 THEN 'day hospital' ELSE 'ordinario' END,
         2015 + i % 10, 1 + i % 30, upper(substr(md5(i::text), 1, 16)), 'nota ' || i
  FROM generate_series(1, {rows}) i;
CREATE TABLE {s}.caricamento (data_dato date NOT NULL);
INSERT INTO {s}.caricamento VALUES ({d1});
"""

VIEWS = """\
CREATE VIEW v_ricoveri AS
    SELECT r.id, p.nome AS reparto, r.regime, r.anno, r.giorni, r.note
    FROM ricovero r JOIN reparto p ON p.code = r.reparto_code;
CREATE VIEW v_reparti AS SELECT nome AS reparto FROM reparto;
CREATE VIEW v_data_dato AS SELECT data_date AS data_dato FROM v_data_date;
"""

ONE_WARD = f"""\
id: ricoveri-reparto
description: Numero di ricoveri di un singolo reparto in un anno
examples: [Quanti ricoveri ha avuto il Reparto 3 nel 2024?]
parameters:
  reparto: {{type: enum, description: Reparto, values_from: {STORE}.v_reparti.reparto}}
  anno: {{type: year, description: Anno di dimissione}}
  regime: {{type: enum, description: Regime, values: [ordinario, day hospital], default: ordinario}}
measure: count
sql: |
  SELECT count(*) AS ricoveri FROM {STORE}.v_ricoveri
  WHERE reparto = :reparto AND anno = :anno AND regime = :regime
result:
  shape: value
  columns:
    ricoveri: {{label: Ricoveri, unit: ricoveri, kind: quantity}}
"""

STAY = f"""\
id: degenza-media
description: Degenza media in giorni dei ricoveri di un anno
examples: [Qual è la degenza media dei ricoveri nel 2024?]
parameters:
  anno: {{type: year, description: Anno di dimissione}}
  soglia: {{type: integer, description: Giorni minimi, default: 0, min: 0, max: 365}}
measure: average
sql: |
  SELECT round(avg(giorni), 2) AS giorni FROM {STORE}.v_ricoveri
  WHERE anno = :anno AND giorni > :soglia
result:
  shape: value
  columns:
    giorni: {{label: Degenza media, unit: giorni, kind: quantity}}
"""


def admin() -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(host=HOST, port=PORT, user=ADMIN, dbname="test", autocommit=True)


def cleanup() -> None:
    with admin() as conn:
        conn.execute("SET lock_timeout = '10s'")
        for (name,) in conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'refresh\\_bench\\_%'"
        ).fetchall():
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(str(name))))
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone()
        if exists:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(ROLE)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(ROLE)))


def workspace(root: Path) -> None:
    (root / "analytics" / "queries").mkdir(parents=True)
    (root / "analytics" / "views.sql").write_text(VIEWS)
    (root / "analytics" / "queries" / "ricoveri-reparto.yaml").write_text(ONE_WARD)
    (root / "analytics" / "queries" / "degenza-media.yaml").write_text(STAY)
    (root / "thoth.toml").write_text(
        'workspace = "bench"\nlanguage = "it"\n\n'
        '[analytics]\ndialect = "postgresql"\nurl_env = "BENCH_STORE_URL"\n'
        f'schemas = ["{STORE}"]\n'
        f'data_date_sql = "SELECT data_dato FROM {STORE}.v_data_dato"\n'
        'labels = ["internal"]\nstatement_timeout_seconds = 60\n\n'
        "[analytics.refresh]\n"
        'source_url_env = "BENCH_ADMIN_URL"\nadmin_url_env = "BENCH_ADMIN_URL"\n'
        f'source_schema = "{SRC}"\n'
        f'scrub = ["{SRC}.ricovero.note", "{SRC}.reparto.password_hash"]\n'
        f'source_data_date_sql = "SELECT max(data_dato) FROM {SRC}.caricamento"\n'
    )


def count_on_source(ward_code: str, year: int) -> int:
    with admin() as conn:
        row = conn.execute(
            sql.SQL(
                "SELECT count(*) FROM {}.ricovero WHERE reparto_code = %s AND anno = %s "
                "AND regime = 'ordinario'"
            ).format(sql.Identifier(SRC)),
            (ward_code, year),
        ).fetchone()
    return int(str(row[0])) if row else -1


class Reader(threading.Thread):
    """Catalog queries through the AnalyticsStore in a loop, as the answer path runs them."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        super().__init__(daemon=True)
        ws = Workspace.open(root)
        assert ws.settings.analytics is not None
        self.store = AnalyticsStore(ws.settings.analytics, root, environ=env)
        self.query = load_catalog_files(root, "analytics/queries").queries["ricoveri-reparto"]
        self.stop = threading.Event()
        self.seen: list[tuple[float, float, object, str]] = []  # start, end, figure, date
        self.failures: list[str] = []

    def run(self) -> None:
        values = {"reparto": "Reparto 3", "anno": 2017, "regime": "ordinario"}
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                done = self.store.execute(self.query, values, None)
                self.seen.append((started, time.perf_counter(), done.rows[0][0], done.data_date))
            except AnalyticsError as exc:
                self.failures.append(f"{exc.code}: {exc}")
        self.store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    machine = machine_facts()
    load_before = loadavg()
    password = secrets.token_hex(8)
    env = {
        "BENCH_ADMIN_URL": f"postgresql://{ADMIN}@{HOST}:{PORT}/test",
        "BENCH_STORE_URL": f"postgresql://{ROLE}:{password}@{HOST}:{PORT}/test",
    }
    root = Path(tempfile.mkdtemp(prefix="refresh_bench_"))
    cleanup()
    try:
        workspace(root)
        started = time.perf_counter()
        with admin() as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(SRC)))
            conn.execute(
                sql.SQL(SOURCE).format(
                    s=sql.Identifier(SRC), rows=sql.Literal(args.rows), d1=sql.Literal(D1)
                )
            )
            conn.execute(grant_sql(ROLE, [], "test", password).encode())
        source_s = time.perf_counter() - started
        ws = Workspace.open(root)
        catalog = load_catalog_files(root, "analytics/queries")
        first = refresh(ws, catalog, environ=env)
        before = count_on_source("R3", 2017)
        with admin() as conn:  # the night's new admissions and the new data date
            conn.execute(
                sql.SQL(
                    "INSERT INTO {s}.ricovero SELECT i, 'R3', 'ordinario', 2017, 5, 'X', 'n' "
                    "FROM generate_series(%s::int, %s::int) i"
                ).format(s=sql.Identifier(SRC)),
                (args.rows + 1, args.rows + 1000),
            )
            conn.execute(
                sql.SQL("UPDATE {s}.caricamento SET data_dato = %s").format(s=sql.Identifier(SRC)),
                (D2,),
            )
        after = count_on_source("R3", 2017)
        reader = Reader(root, env)
        reader.start()
        time.sleep(2.0)  # the reader's steady state on the old copy
        t0 = time.perf_counter()
        report = refresh(ws, catalog, environ=env)
        t1 = time.perf_counter()
        swap_at = t0 + sum(
            s.seconds for s in report.steps[: [s.name for s in report.steps].index("swap") + 1]
        )
        time.sleep(2.0)
        reader.stop.set()
        reader.join(timeout=120)
    finally:
        cleanup()
        shutil.rmtree(root, ignore_errors=True)
    expected = {D1: before, D2: after}
    wrong = [s for s in reader.seen if expected.get(s[3]) != s[2]]
    old = [s for s in reader.seen if s[3] == D1]
    new = [s for s in reader.seen if s[3] == D2]
    during = [s for s in reader.seen if s[0] >= t0 and s[1] <= swap_at]
    result: dict[str, Any] = {
        "machine": machine,
        "load_before": load_before,
        "load_after": loadavg(),
        "rows": args.rows,
        "source_build_s": round(source_s, 1),
        "first_refresh_s": round(sum(s.seconds for s in first.steps), 2),
        "refresh_wall_s": round(t1 - t0, 2),
        "steps": [{"step": s.name, "seconds": s.seconds, "detail": s.detail} for s in report.steps],
        "tables": report.tables,
        "checked": report.checked,
        "reader": {
            "executions": len(reader.seen),
            "failed": len(reader.failures),
            "failures": reader.failures[:5],
            "old_date": len(old),
            "new_date": len(new),
            "during_refresh_before_swap": len(during),
            "during_with_old_date": sum(1 for s in during if s[3] == D1),
            "figure_not_of_its_date": len(wrong),
            "old_after_first_new": sum(1 for s in old if new and s[0] > min(n[1] for n in new)),
            "latency_ms": latency_stats([s[1] - s[0] for s in reader.seen]),
            "expected": expected,
        },
    }
    return emit(result, args.json, show)


def show(r: dict[str, Any]) -> None:
    print(header_line(r["machine"]))
    print(f"load average before {r['load_before']}, after {r['load_after']} (shared machine)")
    print(
        f"source: {r['rows']:,} admissions built in {r['source_build_s']} s; first refresh "
        f"(no served copy) {r['first_refresh_s']} s"
    )
    print("\n| step | seconds | detail |\n|---|---|---|")
    for s in r["steps"]:
        print(f"| {s['step']} | {s['seconds']:.3f} | {s['detail']} |")
    print(f"| **total (wall)** | {r['refresh_wall_s']:.2f} | |")
    rd = r["reader"]
    lat = rd["latency_ms"]
    print(
        f"\nreader (catalog query through the AnalyticsStore, in a loop): {rd['executions']} "
        f"executions, {rd['failed']} failed; {rd['old_date']} with the old data date, "
        f"{rd['new_date']} with the new; during the refresh before the swap "
        f"{rd['during_refresh_before_swap']} ({rd['during_with_old_date']} with the old date); "
        f"figure not of its copy's date: {rd['figure_not_of_its_date']}; old date after the "
        f"first new one: {rd['old_after_first_new']}; expected {rd['expected']}"
    )
    if lat:
        print(f"reader latency ms: {lat}")


if __name__ == "__main__":
    raise SystemExit(main())
