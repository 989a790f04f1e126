"""The demo's analytics store (issue 11): tools/build_analytics.py writes warehouse/analytics.sqlite
deterministically from the warehouse; its catalog queries read only views and run with their
sample parameters; the benchmark's expected values are what the reference SQL gives on the
store, and what the expected catalog query gives with the expected parameters."""

from __future__ import annotations

import importlib.util
import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.conftest import EXAMPLES
from thoth.cli.demo import ANALYTICS_STORE, build_analytics, build_warehouse
from thoth.errors import PreconditionError

DEMO = EXAMPLES / "clinical-dwh"
CATALOG = DEMO / "analytics" / "queries"
QUESTIONS = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "analytics_questions.yaml"
PARAMETER = re.compile(r"(?<!:):([a-z_][a-z0-9_]*)")
# A required parameter without a default needs a sample that selects rows.
SAMPLES: dict[str, dict[str, Any]] = {
    "elenco-ricoveri-oltre-soglia": {"reparto": "Ortopedia e traumatologia"},
}


def load_tool(name: str) -> ModuleType:
    path = DEMO / "tools" / f"{name}.py"
    module_name = f"clinical_dwh_{name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target: Path = tmp_path_factory.mktemp("warehouse")
    load_tool("build_warehouse").build(target)
    return target


@pytest.fixture(scope="module")
def store(warehouse: Path) -> Path:
    path: Path = load_tool("build_analytics").build(warehouse, warehouse / "analytics.sqlite")
    return path


def views_only(
    action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None
) -> int:
    """What Thoth's views-only store allows: reading a table only through a view (the 5th
    argument names the view doing the read), reading views, functions; nothing else."""
    if action == sqlite3.SQLITE_SELECT or action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_OK
    through_view = source is not None or (arg1 or "").startswith("v_")
    if action == sqlite3.SQLITE_READ and db == "analytics" and through_view:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


@pytest.fixture
def analytics(store: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(":memory:")
    connection.execute("ATTACH DATABASE ? AS analytics", (f"{store.as_uri()}?mode=ro",))
    connection.set_authorizer(views_only)
    connection.row_factory = sqlite3.Row
    try:
        yield connection
    finally:
        connection.close()


@pytest.fixture
def base(store: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(f"{store.as_uri()}?mode=ro", uri=True)
    connection.row_factory = sqlite3.Row
    try:
        yield connection
    finally:
        connection.close()


def catalog() -> list[dict[str, Any]]:
    entries = []
    for path in sorted(CATALOG.glob("*.yaml")):
        entry = yaml.safe_load(path.read_text("utf-8"))
        entry["_path"] = path
        entries.append(entry)
    return entries


def sample_parameters(entry: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, spec in entry["parameters"].items():
        if name in SAMPLES.get(entry["id"], {}):
            values[name] = SAMPLES[entry["id"]][name]
        elif "default" in spec:
            values[name] = spec["default"]
        elif spec["type"] == "year":
            values[name] = 2024
        else:
            values[name] = None  # an optional parameter left out
    return values


def dump(path: Path) -> list[str]:
    connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return list(connection.iterdump())
    finally:
        connection.close()


def test_the_store_builds_deterministically(warehouse: Path, store: Path) -> None:
    again = load_tool("build_analytics").build(warehouse, warehouse / "again.sqlite")
    assert dump(again) == dump(store)
    assert again.read_bytes() == store.read_bytes()


def test_the_store_holds_a_few_thousand_rows_and_the_data_date(base: sqlite3.Connection) -> None:
    counts = {
        name: base.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
        for (name,) in base.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    assert 5_000 < sum(counts.values()) < 30_000
    assert min(counts.values()) > 0, counts
    assert base.execute("SELECT data_date FROM v_data_date").fetchone()[0] == "2025-01-14"


def test_the_readable_surface_is_views_only(
    analytics: sqlite3.Connection, base: sqlite3.Connection
) -> None:
    views = [r[0] for r in base.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]
    tables = [r[0] for r in base.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert views and all(v.startswith("v_") for v in views)
    assert not any(t.startswith("v_") for t in tables)
    for view in views:
        analytics.execute(f"SELECT * FROM analytics.{view} LIMIT 1").fetchall()
    for table in tables:
        with pytest.raises(sqlite3.DatabaseError, match=r"not authorized|prohibited"):
            analytics.execute(f"SELECT * FROM analytics.{table} LIMIT 1").fetchall()


def test_catalog_entries_are_well_formed() -> None:
    entries = catalog()
    assert 10 <= len(entries) <= 15
    kinds = {"year", "integer", "decimal", "date", "enum", "text"}
    for entry in entries:
        where = entry["_path"].name
        assert entry["id"] == entry["_path"].stem, where
        assert re.fullmatch(r"[a-z0-9-]+", entry["id"]), where
        # 3 to 5 examples, each naming a value beside its counterpart in the other language
        # (docs/analytics.md, "Write for the words users use").
        assert 3 <= len(entry["examples"]) <= 10, where
        declared = set(entry["parameters"])
        assert set(PARAMETER.findall(entry["sql"])) == declared, where
        for name, spec in entry["parameters"].items():
            assert spec["type"] in kinds, (where, name)
            if spec["type"] == "enum":
                assert ("values" in spec) != ("values_from" in spec), (where, name)
                if "default" in spec:
                    assert spec["default"] in spec["values"], (where, name)
        assert entry["result"]["shape"] in ("value", "row", "table"), where
        # Every object the SQL names is a view of the analytics schema.
        for schema, name in re.findall(r"\b(?:FROM|JOIN)\s+([a-z_]+)\.([a-z_]+)", entry["sql"]):
            assert schema == "analytics" and name.startswith("v_"), (where, schema, name)


@pytest.mark.parametrize("entry", catalog(), ids=lambda e: e["id"])
def test_every_catalog_query_runs_on_views_with_its_sample_parameters(
    entry: dict[str, Any], analytics: sqlite3.Connection
) -> None:
    cursor = analytics.execute(entry["sql"], sample_parameters(entry))
    columns = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    assert rows, f"{entry['id']}: no row with {sample_parameters(entry)}"
    assert columns == list(entry["result"]["columns"]), entry["id"]
    if entry["result"]["shape"] == "row":
        assert len(rows) == 1
    # Non-trivial figures: some quantity of the first row is not zero.
    assert any(isinstance(v, int | float) and v for v in tuple(rows[0])), entry["id"]


def test_enum_values_from_name_view_columns_with_values(analytics: sqlite3.Connection) -> None:
    for entry in catalog():
        for name, spec in entry["parameters"].items():
            if "values_from" not in spec:
                continue
            schema, view, column = spec["values_from"].split(".")
            assert schema == "analytics" and view.startswith("v_"), (entry["id"], name)
            values = {
                r[0] for r in analytics.execute(f"SELECT DISTINCT {column} FROM analytics.{view}")
            }
            assert len(values) > 3, (entry["id"], name)
            assert set(spec.get("synonyms", {})) <= values, (entry["id"], name)


def benchmark() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = yaml.safe_load(QUESTIONS.read_text("utf-8"))
    return cases


def test_the_benchmark_set_has_every_kind_of_question() -> None:
    cases = benchmark()
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids)) >= 60
    kinds = {c["kind"] for c in cases}
    assert kinds == {"covered", "needs_parameter", "uncovered", "text"}
    known = {e["id"]: e for e in catalog()}
    for case in cases:
        query = case["expect"].get("query")
        if case["kind"] in ("covered", "needs_parameter"):
            assert query in known, case["id"]
        if case["kind"] == "covered":
            assert set(case["expect"]["parameters"]) == set(known[query]["parameters"]), case["id"]
        if case["kind"] == "needs_parameter":
            spec = known[query]["parameters"][case["expect"]["missing"]]
            assert spec.get("required", "default" not in spec) and "default" not in spec


@pytest.mark.parametrize(
    "case", [c for c in benchmark() if c["kind"] == "covered"], ids=lambda c: c["id"]
)
def test_expected_values_are_the_reference_sql_and_the_catalog_query(
    case: dict[str, Any], base: sqlite3.Connection, analytics: sqlite3.Connection
) -> None:
    expect = case["expect"]
    reference = base.execute(case["reference_sql"]).fetchall()
    assert len(reference) == expect["rows"]
    assert dict(reference[0]) == expect["first_row"]
    sql = next(e["sql"] for e in catalog() if e["id"] == expect["query"])
    computed = analytics.execute(sql, expect["parameters"]).fetchall()
    assert len(computed) == expect["rows"]
    first = dict(computed[0])
    assert {k: first[k] for k in expect["first_row"]} == expect["first_row"]


def test_the_demo_builds_the_store_next_to_the_warehouse(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "tools").mkdir(parents=True)
    for tool in ("build_warehouse.py", "build_analytics.py"):
        (workspace / "tools" / tool).write_bytes((DEMO / "tools" / tool).read_bytes())
    with pytest.raises(PreconditionError, match="build the warehouse first"):
        build_analytics(workspace)
    build_warehouse(workspace)
    views, rows = build_analytics(workspace)
    assert (workspace / ANALYTICS_STORE).is_file()
    assert views == 8 and rows > 5_000


def test_the_workspace_ignores_the_store_and_declares_it() -> None:
    ignored = (DEMO / ".gitignore").read_text("utf-8")
    assert "warehouse/*.sqlite" in ignored
    settings = (DEMO / "thoth.toml").read_text("utf-8")
    assert '"warehouse/analytics.sqlite"' in settings
    assert "analytics.v_data_date" in settings
