"""The demo's clinical data warehouse (issue 10): the SQLite files tools/build_warehouse.py
writes hold every table and column the Evidence names, with reviewed descriptions, keys that
hold across files, and rows that make the Evidence's formulas and examples meaningful."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, get_args

import pytest
import yaml

from tests.conftest import EXAMPLES, commit_all, git, status
from thoth.cli.demo import WAREHOUSE_SCHEMAS, build_warehouse
from thoth.config import ColumnKind, load_settings
from thoth.evidence.corpus import load_corpus
from thoth.evidence.migrate import import_formulas
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.workspace import Workspace

DEMO = EXAMPLES / "clinical-dwh"
TOOL = DEMO / "tools" / "build_warehouse.py"
REFERENCE = re.compile(r"-> ([a-z_]+)\.([a-z_]+)\.([a-z_]+)")


def load_tool() -> ModuleType:
    name = "clinical_dwh_build_warehouse"
    spec = importlib.util.spec_from_file_location(name, TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return load_tool()


@pytest.fixture(scope="module")
def built(
    tool: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Path], float]:
    target = tmp_path_factory.mktemp("warehouse")
    began = time.perf_counter()
    paths: dict[str, Path] = tool.build(target)
    return paths, time.perf_counter() - began


@pytest.fixture(scope="module")
def db(built: tuple[dict[str, Path], float]) -> Iterator[sqlite3.Connection]:
    """All five files attached read-only under their schema names, as Thoth attaches them."""
    paths, _ = built
    connection = sqlite3.connect(":memory:")
    for schema, path in paths.items():
        connection.execute(f"ATTACH DATABASE '{path.as_uri()}?mode=ro' AS {schema}")
    yield connection
    connection.close()


def q(db: sqlite3.Connection, sql: str) -> list[tuple[Any, ...]]:
    return db.execute(sql).fetchall()


def one(db: sqlite3.Connection, sql: str) -> Any:
    [(value,)] = q(db, sql)
    return value


def schema_columns(db: sqlite3.Connection) -> dict[str, list[str]]:
    """`schema.table` -> its columns, in order."""
    found: dict[str, list[str]] = {}
    for schema in WAREHOUSE_SCHEMAS:
        for (table,) in q(db, f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'"):
            rows = q(db, f"PRAGMA {schema}.table_info({table})")
            found[f"{schema}.{table}"] = [r[1] for r in rows]
    return found


def descriptions() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in sorted((DEMO / "schema").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert data["table"] == path.stem, path
        found[path.stem] = data
    return found


# -- the files -----------------------------------------------------------------------------


def test_one_file_per_schema_fast_and_deterministic(
    tool: ModuleType, built: tuple[dict[str, Path], float], tmp_path: Path
) -> None:
    paths, seconds = built
    assert sorted(paths) == sorted(WAREHOUSE_SCHEMAS)
    assert all(p.name == f"{s}.sqlite" and p.is_file() for s, p in paths.items())
    # A guard against a pathological slowdown, not a target: about 1 s measured, and CI
    # shares two cores with PostgreSQL and the other services.
    assert seconds < 10.0, f"generation took {seconds:.2f} s"
    again: dict[str, Path] = tool.build(tmp_path)
    for schema in WAREHOUSE_SCHEMAS:
        first, second = sqlite3.connect(paths[schema]), sqlite3.connect(again[schema])
        try:
            assert list(first.iterdump()) == list(second.iterdump()), schema
        finally:
            first.close()
            second.close()


def test_keys_hold_inside_and_across_files(db: sqlite3.Connection) -> None:
    for schema in WAREHOUSE_SCHEMAS:
        assert q(db, f"PRAGMA {schema}.foreign_key_check") == [], schema
        declared = q(
            db, f"SELECT count(*) FROM {schema}.sqlite_master WHERE sql LIKE '%REFERENCES%'"
        )
        assert declared[0][0] > 0, f"{schema}: no foreign key declared"
    # SQLite cannot declare a key across attached files: the descriptions name it instead
    # ("-> clinical.patient.patient_id"), and every such reference must hold in the rows.
    checked = 0
    for table, data in descriptions().items():
        for column, spec in data["columns"].items():
            for ref_schema, ref_table, ref_column in REFERENCE.findall(spec["description"]):
                orphans = one(
                    db,
                    f"SELECT count(*) FROM {table} t WHERE t.{column} IS NOT NULL AND NOT EXISTS "
                    f"(SELECT 1 FROM {ref_schema}.{ref_table} r WHERE r.{ref_column} = t.{column})",
                )
                assert orphans == 0, f"{table}.{column} -> {ref_schema}.{ref_table}.{ref_column}"
                checked += 1
    assert checked >= 40


# -- what the Evidence names ------------------------------------------------------------------


@pytest.fixture(scope="module")
def evidence_names(tmp_path_factory: pytest.TempPathFactory) -> tuple[set[str], set[str]]:
    """Every table and column the prepared Evidence of the demo names (applies_to, formula
    columns, mapping tables and columns, normalization columns, enum column)."""
    root = tmp_path_factory.mktemp("evidence") / "ws"
    shutil.copytree(DEMO, root, ignore=shutil.ignore_patterns("documents", "wiki", "warehouse"))
    git(root, "init", "-q", "-b", "main")
    commit_all(root)
    ws = Workspace.open(root)
    import_formulas(ws)
    commit_all(root)
    prepare(ws, RuleBasedRestructurer())
    files, problems = load_corpus(ws.evidence)
    assert not problems and len(files) > 200
    tables: set[str] = set()
    columns: set[str] = set()
    for f in files:
        unit: Any = f.unit
        tables.update(unit.applies_to.tables)
        columns.update(unit.applies_to.columns)
        if unit.kind == "formula":
            columns.update(unit.formula.columns)
        elif unit.kind == "mapping":
            tables.update(unit.mapping.tables)
            columns.update(unit.mapping.columns)
        elif unit.kind == "normalization":
            columns.update(unit.normalization.columns)
        elif unit.kind == "enum":
            columns.add(unit.enum.column)
    return tables, columns


def test_every_table_and_column_the_evidence_names_exists(
    db: sqlite3.Connection, evidence_names: tuple[set[str], set[str]]
) -> None:
    tables, columns = evidence_names
    assert len(tables) >= 20 and len(columns) >= 100
    present = schema_columns(db)
    assert sorted(tables - set(present)) == []
    missing = [
        c
        for c in sorted(columns)
        if c.rsplit(".", 1)[1] not in present.get(c.rsplit(".", 1)[0], [])
    ]
    assert missing == []


def test_every_column_has_a_reviewed_description_and_kind(db: sqlite3.Connection) -> None:
    present = schema_columns(db)
    described = descriptions()
    assert sorted(described) == sorted(present)
    kinds = set(get_args(ColumnKind))
    for table, data in described.items():
        assert set(data) <= {"table", "description", "columns"}, table
        assert len(data["description"]) > 40, table
        assert list(data["columns"]) == present[table], table
        for column, spec in data["columns"].items():
            assert set(spec) <= {"description", "kind", "values", "references"}, (table, column)
            assert spec["description"].strip(), (table, column)
            assert spec["kind"] in kinds, (table, column)
            if "values" in spec:
                assert spec["kind"] in ("category", "code"), (table, column)
                assert all(isinstance(k, str) for k in spec["values"]), (table, column)
    patient = described["clinical.patient"]["columns"]
    assert {patient[c]["kind"] for c in ("patient_id", "fiscal_code_pseudo", "last_name")} == {
        "identity"
    }
    assert described["adt.ed_visit"]["columns"]["chief_complaint"]["kind"] == "free_text"


def test_coded_values_in_the_rows_are_the_described_ones(db: sqlite3.Connection) -> None:
    """Every code stored in a column with a described value list is one of its values (the
    codes of the Evidence's enums: regime, triage, discharge mode, flags...)."""
    checked = 0
    for table, data in descriptions().items():
        for column, spec in data["columns"].items():
            if "values" not in spec:
                continue
            stored = {
                str(v) for (v,) in q(db, f"SELECT DISTINCT {column} FROM {table}") if v is not None
            }
            assert stored, f"{table}.{column}: no value stored"
            assert stored <= set(spec["values"]), (table, column, stored - set(spec["values"]))
            checked += 1
    assert checked >= 35


def test_the_example_declares_the_warehouse_it_builds(tool: ModuleType) -> None:
    database = load_settings(DEMO).database
    assert database is not None and database.dialect == "sqlite"
    assert database.files == {s: f"warehouse/{s}.sqlite" for s in tool.SCHEMAS}
    assert database.privacy.default_kind == "unknown"
    assert database.descriptions == "schema"


def test_the_demo_builds_the_warehouse_into_its_copy_and_git_ignores_it(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    shutil.copytree(DEMO, root, ignore=shutil.ignore_patterns("documents", "wiki", "warehouse"))
    tables, rows = build_warehouse(root)
    assert tables == 24 and 10_000 < rows < 60_000
    git(root, "init", "-q", "-b", "main")
    assert "warehouse/" not in status(root)
    connection = sqlite3.connect(root / "warehouse" / "dwh.sqlite")
    try:
        assert connection.execute("SELECT max(data_date) FROM load_log").fetchone() == (
            "2025-01-14",
        )
    finally:
        connection.close()


# -- rows that make the Evidence meaningful ---------------------------------------------------


def test_admissions_are_coherent(db: sqlite3.Connection) -> None:
    assert one(db, "SELECT count(*) FROM adt.admission WHERE discharge_date < admission_date") == 0
    assert one(db, "SELECT count(*) FROM adt.admission WHERE discharge_ts < admission_ts") == 0
    # Open admissions have no discharge at all; closed ones have all of it.
    assert (
        one(
            db,
            "SELECT count(*) FROM adt.admission WHERE (discharge_date IS NULL) + (discharge_ts IS NULL)"
            " + (discharging_ward_id IS NULL) + (discharge_mode IS NULL) NOT IN (0, 4)",
        )
        == 0
    )
    assert 0 < one(db, "SELECT count(*) FROM adt.admission WHERE discharge_date IS NULL") < 50
    assert (
        one(db, "SELECT count(*) FROM adt.admission WHERE admission_date <> date(admission_ts)")
        == 0
    )
    assert (
        one(
            db,
            "SELECT count(*) FROM adt.admission WHERE care_regime = '2' AND admission_type NOT IN ('1', '4')",
        )
        == 0
    )
    assert (
        one(
            db,
            "SELECT count(*) FROM adt.admission WHERE (care_regime = '2') <> (dh_access_count IS NOT NULL)",
        )
        == 0
    )
    # Deaths: discharge mode 1 and the patient's death date on the discharge day.
    assert (
        one(
            db,
            "SELECT count(*) FROM adt.admission a JOIN clinical.patient p USING (patient_id) "
            "WHERE a.discharge_mode = '1' AND p.death_date IS NOT a.discharge_date",
        )
        == 0
    )
    # Ward stays chain from admission to discharge.
    assert (
        one(
            db,
            "SELECT count(*) FROM adt.admission a JOIN adt.ward_stay s ON s.admission_id = a.admission_id "
            "AND s.stay_seq = 1 WHERE s.start_ts <> a.admission_ts OR s.ward_id <> a.admitting_ward_id",
        )
        == 0
    )
    assert (
        one(
            db,
            "SELECT count(*) FROM adt.admission a JOIN adt.ward_stay s ON s.admission_id = a.admission_id "
            "WHERE s.stay_seq = (SELECT max(stay_seq) FROM adt.ward_stay x WHERE x.admission_id = a.admission_id) "
            "AND (s.end_ts IS NOT a.discharge_ts OR s.ward_id IS NOT coalesce(a.discharging_ward_id, s.ward_id))",
        )
        == 0
    )
    # Ordinary stays average a few days; some pass through intensive care (discipline 049).
    los = one(
        db,
        "SELECT avg(julianday(discharge_date) - julianday(admission_date)) FROM adt.admission "
        "WHERE care_regime = '1'",
    )
    assert 4 < los < 12
    assert (
        one(
            db,
            "SELECT count(DISTINCT s.admission_id) FROM adt.ward_stay s JOIN adt.ward w USING (ward_id) "
            "WHERE w.discipline_code = '049'",
        )
        > 5
    )


def test_readmissions_within_30_days_are_found_and_flagged(db: sqlite3.Connection) -> None:
    readmitted = one(
        db,
        """WITH o AS (
               SELECT a.patient_id, a.admission_date,
                      lag(a.discharge_date) OVER (PARTITION BY a.patient_id ORDER BY a.admission_date) AS prev
               FROM adt.admission a WHERE a.care_regime = '1')
           SELECT count(DISTINCT patient_id) FROM o
           WHERE julianday(admission_date) - julianday(prev) BETWEEN 0 AND 30
             AND prev >= '2023-01-01' AND prev < '2024-01-01'""",
    )
    assert readmitted >= 10
    rate = one(
        db,
        "SELECT 100.0 * avg(f.readmitted_within_30d) FROM dwh.fact_admission f "
        "JOIN dwh.dim_date d ON d.date_key = f.discharge_date_key WHERE d.year_num = 2024 AND f.care_regime = '1'",
    )
    assert 2 < rate < 15
    # The flag is on the index admission: another ordinary admission follows within 30 days.
    assert (
        one(
            db,
            "SELECT count(*) FROM dwh.fact_admission f JOIN adt.admission a USING (admission_id) "
            "WHERE f.readmitted_within_30d AND NOT EXISTS (SELECT 1 FROM adt.admission n "
            "WHERE n.patient_id = a.patient_id AND n.care_regime = '1' AND n.admission_id <> a.admission_id "
            "AND julianday(n.admission_date) - julianday(a.discharge_date) BETWEEN 0 AND 30)",
        )
        == 0
    )
    # Planned chemotherapy is never a readmission: the oncology ward's index stays are not flagged
    # though its patients come back every three weeks.
    assert (
        one(
            db,
            "SELECT count(*) FROM dwh.fact_admission f JOIN adt.admission a USING (admission_id) "
            "JOIN clinical.diagnosis d ON d.episode_id = a.episode_id AND d.diagnosis_rank = 1 "
            "WHERE d.icd9cm_code = 'V5811'",
        )
        > 20
    )


def test_the_dwh_agrees_with_the_operational_schemas(db: sqlite3.Connection) -> None:
    assert one(db, "SELECT count(*) FROM dwh.fact_admission") == one(
        db, "SELECT count(*) FROM adt.admission WHERE discharge_date IS NOT NULL"
    )
    assert (
        one(
            db,
            "SELECT count(*) FROM dwh.fact_admission f JOIN adt.admission a USING (admission_id) "
            "JOIN dwh.dim_date d ON d.date_key = f.discharge_date_key "
            "WHERE d.calendar_date <> a.discharge_date OR f.care_regime <> a.care_regime "
            "OR f.discharge_mode <> a.discharge_mode "
            "OR f.los_days IS NOT (CASE WHEN a.care_regime = '1' THEN "
            "CAST(julianday(a.discharge_date) - julianday(a.admission_date) AS INTEGER) END)",
        )
        == 0
    )
    # The discharging ward's version is the one valid on the discharge date (SCD type 2).
    assert (
        one(
            db,
            "SELECT count(*) FROM dwh.fact_admission f JOIN adt.admission a USING (admission_id) "
            "JOIN dwh.dim_ward w ON w.ward_key = f.discharging_ward_key "
            "WHERE w.ward_id <> a.discharging_ward_id OR a.discharge_date < w.valid_from "
            "OR a.discharge_date > coalesce(w.valid_to, '9999-12-31')",
        )
        == 0
    )
    assert one(db, "SELECT count(*) FROM dwh.dim_ward WHERE is_current = 0") >= 3
    assert one(db, "SELECT count(*) FROM dwh.fact_ed_visit") == one(
        db, "SELECT count(*) FROM adt.ed_visit"
    )
    assert one(db, "SELECT min(wait_minutes) FROM dwh.fact_ed_visit") == 0
    # Hand-typed times: a few visits before the triage in adt, set to zero in the dwh.
    assert one(db, "SELECT count(*) FROM adt.ed_visit WHERE first_visit_ts < triage_ts") > 0
    assert one(db, "SELECT max(data_date) FROM dwh.load_log") == "2025-01-14"
    assert one(db, "SELECT max(admission_date) FROM adt.admission") <= "2025-01-14"
    assert one(db, "SELECT max(arrival_ts) FROM adt.ed_visit") < "2025-01-15"


def test_emergency_visits_are_coherent(db: sqlite3.Connection) -> None:
    assert (
        one(
            db,
            "SELECT count(*) FROM adt.ed_visit WHERE triage_ts < arrival_ts OR outcome_ts < arrival_ts",
        )
        == 0
    )
    assert (
        one(
            db,
            "SELECT count(*) FROM adt.ed_visit WHERE (outcome_code = '7') <> (first_visit_ts IS NULL)",
        )
        == 0
    )
    assert (
        one(
            db,
            "SELECT count(*) FROM adt.ed_visit WHERE (outcome_code = '3') <> (admission_id IS NOT NULL)",
        )
        == 0
    )
    assert (
        one(
            db,
            "SELECT count(*) FROM adt.ed_visit v JOIN adt.admission a USING (admission_id) "
            "WHERE a.episode_id <> v.episode_id OR a.admission_source <> '2' OR a.admission_ts < v.arrival_ts",
        )
        == 0
    )
    # Waiting times grow with the triage code (1 red ... 5 white).
    waits = [
        w
        for (_, w) in q(
            db,
            "SELECT triage_code, avg((julianday(first_visit_ts) - julianday(triage_ts)) * 1440) "
            "FROM adt.ed_visit WHERE first_visit_ts IS NOT NULL GROUP BY triage_code ORDER BY triage_code",
        )
    ]
    assert len(waits) == 5 and waits == sorted(waits) and waits[0] < 10 < waits[3]
    assert (
        0
        < one(
            db,
            "SELECT 100.0 * avg(outcome_code = '7') FROM adt.ed_visit "
            "WHERE arrival_ts >= '2023-01-01' AND arrival_ts < '2024-01-01'",
        )
        < 10
    )
    assert (
        one(
            db,
            "SELECT count(*) FROM adt.ed_visit v JOIN clinical.patient p USING (patient_id) "
            "WHERE v.ed_unit_code = 'PED' AND julianday(v.arrival_ts) - julianday(p.birth_date) > 15 * 365.25",
        )
        == 0
    )


def test_lab_and_pharmacy_rows_are_coherent(db: sqlite3.Connection) -> None:
    assert (
        one(
            db,
            "SELECT count(*) FROM lab.result r JOIN lab.request rq USING (request_id) "
            "WHERE r.validated_ts < rq.request_ts OR r.patient_id <> rq.patient_id",
        )
        == 0
    )
    assert (
        one(db, "SELECT count(*) FROM lab.result WHERE status = 'P' AND validated_ts IS NOT NULL")
        == 0
    )
    # The flag agrees with the result's own range (the formula "flag calcolato rispetto al range").
    assert (
        one(
            db,
            "SELECT count(*) FROM lab.result WHERE abnormal_flag IN ('N', 'L', 'H') AND abnormal_flag <> "
            "CASE WHEN value_num < ref_low THEN 'L' WHEN value_num > ref_high THEN 'H' ELSE 'N' END",
        )
        == 0
    )
    assert one(db, "SELECT count(*) FROM lab.result WHERE abnormal_flag IN ('LL', 'HH')") > 5
    assert (
        one(
            db,
            "SELECT count(DISTINCT r.patient_id) FROM lab.result r JOIN lab.request rq USING (request_id) "
            "JOIN adt.admission a ON a.episode_id = rq.episode_id WHERE r.loinc_code = '59261-8' "
            "AND r.status = 'F' AND r.value_num > 48 AND a.discharge_date LIKE '2023%'",
        )
        > 3
    )
    assert (
        one(
            db,
            "SELECT count(*) FROM lab.request WHERE origin_code = 'PS' AND priority_code NOT IN ('U', 'E')",
        )
        == 0
    )
    assert (
        one(
            db,
            "SELECT count(*) FROM pharmacy.administration ad JOIN pharmacy.prescription p USING (prescription_id) "
            "WHERE ad.planned_ts < p.start_ts OR (ad.administered_ts IS NULL) <> (ad.outcome_code NOT IN ('S', 'P'))",
        )
        == 0
    )
    assert (
        one(
            db,
            "SELECT count(*) FROM pharmacy.prescription p JOIN adt.admission a USING (admission_id) "
            "WHERE p.patient_id <> a.patient_id OR p.start_ts < a.admission_ts "
            "OR p.start_ts > coalesce(a.discharge_ts, '9999-12-31')",
        )
        == 0
    )
    assert (
        one(
            db,
            "SELECT sum(ad.dose_given) FROM pharmacy.administration ad JOIN pharmacy.prescription p "
            "USING (prescription_id) JOIN pharmacy.drug d USING (drug_id) WHERE d.high_cost_flag "
            "AND ad.outcome_code = 'S' AND ad.administered_ts LIKE '2024%'",
        )
        > 0
    )
    assert (
        one(
            db,
            "SELECT count(*) FROM pharmacy.prescription p JOIN adt.admission a USING (admission_id) "
            "WHERE p.status_code = 'ATT' AND a.discharge_date IS NOT NULL",
        )
        == 0
    )
