"""Numeric answers on a database nobody on the team wrote: BIRD's debit_card_specializing.

The database is rebuilt from its published schema (../shared/data/bird_dev/schemas.json: tables,
column types, value lists and sample values) with seeded synthetic rows, so BIRD's gold SQL
runs on it and gives the reference answers. The workspace (benchmarks/data/bird_debit_card/:
thoth.toml, a catalog of queries written from docs/analytics.md, its calibration set) gets a
data dictionary written from BIRD's column descriptions as its text source, then is set up as a
user would: the threshold from `tht analytics calibrate` on the workspace's own calibration set,
the revision activated, `tht docs sync`. Every question of questions.yaml (BIRD's own, labelled
before the first run; a few needs_parameter variants; Italian translations) is asked through
the product's ask path as an analyst (labels: internal).

Reported per kind and per language: covered questions computed right (query, parameters, the
first row's value equal to the gold answer, a data date); needs_parameter named right (query and
parameter); uncovered and text questions that took the text path. Wrong numbers apart: any
number served for a question it does not answer (another query, other values, or no query
covers it). Latency: p50/p95 of the numeric answers, warm.

Usage:
    .venv/bin/python benchmarks/analytics_bird.py [--json] [--keep DIR] [--bird DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import yaml

from analytics_routing import Observed, observe, thoth_commit
from bench_common import header_line, latency_stats, machine_facts
from thoth.analytics.calibration import calibrate_catalog
from thoth.cli.analytics import load_labelled
from thoth.cli.demo import git
from thoth.knowledge.sync import DocsSync
from thoth.runtime import open_analytics_store, open_answer_service, open_embedder, open_runtime
from thoth.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "bird_debit_card"
DEFAULT_BIRD = ROOT.parent / "shared" / "data" / "bird_dev"
DB_NAME = "debit_card_specializing"
STORE = "store/debit_card.sqlite"
LABELS = ["internal"]
KINDS = ("covered", "needs_parameter", "uncovered", "text")
DATA_DATE = "2013-12-31"
SEED = 2023

# -- the database, rebuilt ----------------------------------------------------------------------

PRODUCTS = [
    "Natural 95",
    "Nafta",
    "Diesel",
    "Natural 98",
    "LPG",
    "Motorový olej",
    "Myčka",
    "Servisní poplatek",
    "Ostatni zbozi",
    "Vratné obaly",
    "Tisk reportu",
    "Service charge",
    "Provozní poplatek",
    "AdBlue",
    "Dálniční známka",
    "Potraviny",
    "Káva",
    "Noviny",
    "Cigarety",
    "Kapalina do ostřikovačů",
]
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def _month_name(number_sql: str) -> str:
    """SQL naming the month whose number `number_sql` gives (the views' month_name)."""
    whens = " ".join(f"WHEN {i} THEN '{name}'" for i, name in enumerate(MONTHS, start=1))
    return f"CASE CAST({number_sql} AS INTEGER) {whens} END"


VIEWS = {
    "v_customers": "SELECT CustomerID AS customer_id, Segment AS segment, Currency AS currency "
    "FROM customers",
    "v_gasstations": "SELECT GasStationID AS gas_station_id, ChainID AS chain_id, "
    "Country AS country, Segment AS segment FROM gasstations",
    "v_station_segments": "SELECT DISTINCT Segment AS segment FROM gasstations",
    "v_consumption": "SELECT y.CustomerID AS customer_id, c.Segment AS segment, "
    "c.Currency AS currency, CAST(substr(y.Date, 1, 4) AS INTEGER) AS year, "
    "CAST(substr(y.Date, 5, 2) AS INTEGER) AS month, "
    f"{_month_name('substr(y.Date, 5, 2)')} AS month_name, y.Consumption AS consumption "
    "FROM yearmonth y JOIN customers c ON c.CustomerID = y.CustomerID",
    "v_transactions": "SELECT t.TransactionID AS transaction_id, t.Date AS date, "
    "CAST(substr(t.Date, 1, 4) AS INTEGER) AS year, "
    f"{_month_name('substr(t.Date, 6, 2)')} AS month_name, t.Time AS time, "
    "t.CustomerID AS customer_id, c.Currency AS currency, g.Country AS country, "
    "t.ProductID AS product_id, t.Amount AS amount, t.Price AS price "
    "FROM transactions_1k t JOIN gasstations g ON g.GasStationID = t.GasStationID "
    "JOIN customers c ON c.CustomerID = t.CustomerID",
    "v_data_date": f"SELECT '{DATA_DATE}' AS data_date",
}


def build_database(path: Path, schema: dict[str, Any]) -> dict[str, int]:
    """BIRD's tables with BIRD's names and types, filled with seeded rows drawn from the
    schema's value lists and ranges; the views the catalog reads on top. Returns row counts."""
    rng = random.Random(SEED)
    tables = {t["name"]: t for t in schema["tables"]}

    def values(table: str, column: str) -> list[Any]:
        [col] = [c for c in tables[table]["columns"] if c["name"] == column]
        return list(col["sample_values"])

    customers = sorted([*rng.sample(range(3, 53315), 1500), 5, 6, 7, 38508])
    segment_of = {
        c: rng.choices(values("customers", "Segment"), weights=[6, 2.5, 1.5])[0] for c in customers
    }
    currency_of = {c: rng.choices(["CZK", "EUR"], weights=[85, 15])[0] for c in customers}
    stations = sorted(rng.sample(range(44, 5773), 700))
    station_rows = [
        (
            s,
            rng.randint(1, 290),
            rng.choices(["CZE", "SVK"], weights=[70, 30])[0],
            rng.choices(values("gasstations", "Segment"), weights=[25, 20, 15, 30, 10])[0],
        )
        for s in stations
    ]
    months = [f"{y}{m:02d}" for y in (2012, 2013) for m in range(1, 13)]
    scale = {"SME": 1_500.0, "LAM": 8_000.0, "KAM": 40_000.0}
    consumption = [
        (c, month, round(rng.lognormvariate(math.log(scale[segment_of[c]]), 1.0), 2))
        for c in customers
        for month in months
        if rng.random() < 0.6
    ]
    first = date(2012, 1, 1)
    transactions = []
    for tid in range(1, 1001):
        day = (
            date(2012, 8, 23) + timedelta(days=rng.randint(0, 3))
            if tid <= 850
            else first + timedelta(days=rng.randint(0, 729))
        )
        amount = rng.randint(1, 60)
        transactions.append(
            (
                tid,
                day.isoformat(),
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00",
                rng.choice(customers),
                rng.randint(26228, 775970),
                rng.choice(stations),
                rng.randint(1, len(PRODUCTS)),
                amount,
                round(amount * rng.uniform(20, 45), 2),
            )
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    try:
        db.executescript(
            """
            CREATE TABLE customers (CustomerID INTEGER PRIMARY KEY, Segment TEXT, Currency TEXT);
            CREATE TABLE gasstations (GasStationID INTEGER PRIMARY KEY, ChainID INTEGER,
                Country TEXT, Segment TEXT);
            CREATE TABLE products (ProductID INTEGER PRIMARY KEY, Description TEXT);
            CREATE TABLE transactions_1k (TransactionID INTEGER PRIMARY KEY, Date DATE, Time TEXT,
                CustomerID INTEGER, CardID INTEGER, GasStationID INTEGER, ProductID INTEGER,
                Amount INTEGER, Price REAL);
            CREATE TABLE yearmonth (CustomerID INTEGER, Date TEXT, Consumption REAL,
                PRIMARY KEY (CustomerID, Date));
            """
        )
        db.executemany(
            "INSERT INTO customers VALUES (?, ?, ?)",
            [(c, segment_of[c], currency_of[c]) for c in customers],
        )
        db.executemany("INSERT INTO gasstations VALUES (?, ?, ?, ?)", station_rows)
        db.executemany("INSERT INTO products VALUES (?, ?)", list(enumerate(PRODUCTS, start=1)))
        db.executemany(
            "INSERT INTO transactions_1k VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", transactions
        )
        db.executemany("INSERT INTO yearmonth VALUES (?, ?, ?)", consumption)
        for name, sql in VIEWS.items():
            db.execute(f"CREATE VIEW {name} AS {sql}")
        db.commit()
    finally:
        db.close()
    return {
        "customers": len(customers),
        "gasstations": len(station_rows),
        "products": len(PRODUCTS),
        "transactions_1k": len(transactions),
        "yearmonth": len(consumption),
    }


def write_dictionary(path: Path, schema: dict[str, Any]) -> None:
    """The data dictionary: BIRD's own table and column descriptions, one section per table."""
    lines = [
        "# Debit card data: data dictionary",
        "",
        "Gas stations in the Czech Republic (CZE) and Slovakia (SVK), their customers and the "
        "customers' monthly consumption, and a thousand card transactions.",
        "",
    ]
    for table in schema["tables"]:
        lines += [f"## Table {table['name']}", ""]
        for col in table["columns"]:
            what = (col.get("description") or col["name"]).strip()
            extra = " ".join((col.get("value_description") or "").split())
            lines.append(
                f"- `{col['name']}` ({col['type']}): {what}." + (f" {extra}" if extra else "")
            )
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), "utf-8")


# -- the workspace, set up as a user would ------------------------------------------------------


def build_workspace(target: Path, bird: Path) -> tuple[Workspace, dict[str, Any]]:
    schemas = json.loads((bird / "schemas.json").read_text("utf-8"))
    [schema] = [s for s in schemas if s["name"] == DB_NAME]
    shutil.copytree(DATA, target)
    (target / "questions.yaml").unlink()  # the benchmark's questions stay outside
    rows = build_database(target / STORE, schema)
    write_dictionary(target / "documents" / "data-dictionary.md", schema)
    (target / ".gitignore").write_text(".thoth/\nstore/\n", "utf-8")
    git(target, "init", "-q", "-b", "main")
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "BIRD debit card workspace")
    ws = Workspace.open(target)
    labelled = load_labelled(target / "analytics" / "calibration.yaml")
    store = open_analytics_store(ws)
    try:
        calibration = calibrate_catalog(
            target, store, open_embedder(ws), ws.settings.language, labelled
        )
    finally:
        store.close()
    toml = target / "thoth.toml"
    text = toml.read_text("utf-8").replace(
        "threshold = 0.9\n",
        f"threshold = {calibration.threshold:.4f}\n"
        + (
            f"uncovered_threshold = {calibration.uncovered_threshold:.4f}\n"
            if calibration.uncovered_threshold is not None
            else ""
        ),
    )
    toml.write_text(text, "utf-8")
    git(target, "commit", "-q", "-am", "threshold from tht analytics calibrate")
    ws = Workspace.open(target)
    rt = open_runtime(ws)
    try:
        revision = git(target, "rev-parse", "HEAD").strip()
        rt.state.activate_revision(ws.settings.workspace, revision, activated_by="benchmark")
        report = DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="benchmark")
    finally:
        rt.close()
    return ws, {
        "rows": rows,
        "fragments": report.counts.get("fragments_total"),
        "calibration": {
            "threshold": round(calibration.threshold, 4),
            "uncovered_threshold": calibration.uncovered_threshold
            and round(calibration.uncovered_threshold, 4),
            "accuracy": round(calibration.accuracy, 3),
            "questions": len(labelled),
        },
    }


# -- scoring ------------------------------------------------------------------------------------


def gold_answers(cases: Sequence[dict[str, Any]], bird: Path, database: Path) -> dict[str, Any]:
    """Case id -> the first value of the first row of its reference SQL (BIRD's gold SQL, or
    the case's reference_sql), run on the rebuilt database."""
    gold = {
        q["question_id"]: q["sql"]
        for q in json.loads((bird / "questions.json").read_text("utf-8"))
        if q["db_id"] == DB_NAME
    }
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        out = {}
        for case in cases:
            if case["kind"] != "covered":
                continue
            row = db.execute(case.get("reference_sql") or gold[case["bird"]]).fetchone()
            out[case["id"]] = None if row is None else row[0]
        return out
    finally:
        db.close()


def same(expected: Any, got: Any) -> bool:
    if expected is None or got is None:
        return False
    try:
        a, b = float(expected), float(got)
    except (TypeError, ValueError):
        return str(expected).strip().casefold() == str(got).strip().casefold()
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=0.006)


def score(case: dict[str, Any], seen: Observed, gold: Any, data_date: Any) -> dict[str, Any]:
    kind, expect = case["kind"], case.get("expect") or {}
    computed = seen.route == "computed"
    out: dict[str, Any] = {"right": False, "wrong_number": False}
    if kind == "covered":
        params = seen.parameters or {}
        right_query = computed and seen.query == expect["query"]
        right_params = right_query and all(
            same(v, params.get(k)) if v is not None else params.get(k) is None
            for k, v in expect["parameters"].items()
        )
        value = (seen.first_row or {}).get(expect["column"])
        right_value = right_params and same(gold, value) and bool(data_date)
        out.update(right=right_value, query=right_query, parameters=right_params)
        out["wrong_number"] = computed and not right_value
    elif kind == "needs_parameter":
        wanted = expect.get("missing") or expect.get("invalid")
        named = seen.missing + list((seen.invalid or {}).keys())
        out["right"] = (
            seen.route == "needs_parameter" and seen.query == expect["query"] and wanted in named
        )
        out["wrong_number"] = computed
    else:
        out["right"] = seen.route == "text"
        out["wrong_number"] = computed
    return out


def run(bird: Path, keep: Path | None, rounds: int) -> dict[str, Any]:
    cases: list[dict[str, Any]] = yaml.safe_load((DATA / "questions.yaml").read_text("utf-8"))
    tmp = Path(tempfile.mkdtemp(prefix="thoth-bird-bench-"))
    target = keep if keep is not None else tmp / "debit-card"
    try:
        ws, workspace = build_workspace(target, bird)
        gold = gold_answers(cases, bird, target / STORE)
        service = open_answer_service(ws)
        results: list[dict[str, Any]] = []
        numeric_s: list[float] = []
        try:
            service.ask("How many customers are there?", labels=LABELS)  # warm-up, untimed
            for round_no in range(rounds):
                for case in cases:
                    began = time.perf_counter()
                    answer = service.ask(case["question"], labels=LABELS).as_dict()
                    elapsed = time.perf_counter() - began
                    seen = observe(answer)
                    if seen.route == "computed":
                        numeric_s.append(elapsed)
                    if round_no:
                        continue
                    data_date = (answer.get("provenance") or {}).get("data_date")
                    results.append(
                        {
                            "id": case["id"],
                            "bird": case["bird"],
                            "lang": case.get("lang", "en"),
                            "kind": case["kind"],
                            "question": case["question"],
                            "expect": case.get("expect"),
                            "gold": gold.get(case["id"]),
                            "observed": {
                                "route": seen.route,
                                "query": seen.query,
                                "parameters": seen.parameters,
                                "missing": seen.missing,
                                "first_row": seen.first_row,
                            },
                            "reason": (answer.get("diagnostics") or {})
                            .get("analytics", {})
                            .get("reason"),
                            "score": score(case, seen, gold.get(case["id"]), data_date),
                        }
                    )
        finally:
            service.close()
        return {
            "machine": machine_facts(),
            "thoth_commit": thoth_commit(),
            "workspace": workspace,
            "rounds": rounds,
            "accuracy": summarise(results),
            "wrong_numbers": [r for r in results if r["score"]["wrong_number"]],
            "latency_ms": {
                k: (v if k == "n" or v is None else round(v, 1))
                for k, v in latency_stats(numeric_s).items()
            },
            "misses": [r for r in results if not r["score"]["right"]],
        }
    finally:
        if keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for lang in ("en", "it", "all"):
        for kind in (*KINDS, "all"):
            rows = [
                r
                for r in results
                if (lang == "all" or r["lang"] == lang) and (kind == "all" or r["kind"] == kind)
            ]
            if not rows:
                continue
            right = sum(1 for r in rows if r["score"]["right"])
            table[f"{lang}/{kind}"] = {
                "right": right,
                "of": len(rows),
                "rate": round(right / len(rows), 3),
                "wrong_numbers": sum(1 for r in rows if r["score"]["wrong_number"]),
            }
    return table


def report(result: dict[str, Any]) -> None:
    print(header_line(result["machine"]))
    print(f"thoth commit {result['thoth_commit']}; workspace {result['workspace']}")
    print(f"{'language/kind':<22}{'right':>12}{'rate':>8}{'wrong numbers':>15}")
    for key, m in result["accuracy"].items():
        print(f"{key:<22}{m['right']:>6}/{m['of']:<5}{m['rate']:>8.0%}{m['wrong_numbers']:>15}")
    lat = result["latency_ms"]
    print(f"numeric answer latency (ms): n {lat['n']}, p50 {lat['p50_ms']}, p95 {lat['p95_ms']}")
    for r in result["wrong_numbers"]:
        seen = r["observed"]
        print(f"  WRONG NUMBER {r['id']} [{r['kind']}] -> {seen['query']} {seen['parameters']}")
    for r in result["misses"]:
        seen = r["observed"]
        print(
            f"  miss {r['id']} [{r['lang']} {r['kind']}] -> {seen['route']} {seen['query'] or ''}"
            f" {seen['parameters'] or seen['missing'] or ''} ({(r['reason'] or '')[:90]})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bird", type=Path, default=DEFAULT_BIRD, help="BIRD dev directory")
    parser.add_argument("--keep", type=Path, help="build the workspace here and keep it")
    parser.add_argument("--rounds", type=int, default=2, help="asks per question (latency)")
    parser.add_argument("--json", action="store_true", help="every figure as JSON")
    args = parser.parse_args()
    result = run(args.bird, args.keep, args.rounds)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    else:
        report(result)


if __name__ == "__main__":
    main()
