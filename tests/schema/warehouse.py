"""A small clinical warehouse in SQLite, one file per schema, naming what the test Evidence
names (adt.admission, clinical.patient, clinical.episode), and a published workspace that
declares it as its [database]."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from tests.conftest import commit_all
from tests.publishing import activate_head, prepared_workspace, publish
from thoth.runtime import Runtime, open_runtime
from thoth.workspace import Workspace

DATABASE = """
[database]
dialect = "sqlite"
files = { adt = "warehouse/adt.sqlite", clinical = "warehouse/clinical.sqlite" }
statement_timeout_seconds = 2
row_limit = 50
data_date_sql = "SELECT max(data_date) FROM adt.load_log"
sample_values = 5

[database.privacy]
columns = { "clinical.patient.tax_code" = "identity" }
"""

ADT = """
CREATE TABLE admission (
    admission_id INTEGER PRIMARY KEY,
    patient_id INTEGER NOT NULL,
    admission_date DATE NOT NULL,
    discharge_date DATE,
    care_regime TEXT NOT NULL
);
CREATE TABLE load_log (load_id INTEGER PRIMARY KEY, data_date DATE NOT NULL);
INSERT INTO load_log VALUES (1, '2024-10-31'), (2, '2024-11-30');
"""
CLINICAL = """
CREATE TABLE patient (
    patient_id INTEGER PRIMARY KEY,
    tax_code TEXT NOT NULL,
    birth_date DATE NOT NULL,
    sex TEXT NOT NULL
);
CREATE TABLE episode (
    episode_id INTEGER PRIMARY KEY,
    patient_id INTEGER NOT NULL REFERENCES patient(patient_id),
    discharge_status TEXT NOT NULL
);
"""
DESCRIPTIONS = {
    "adt.admission.yaml": """table: adt.admission
description: Ricoveri ospedalieri, uno per episodio di degenza
columns:
  admission_id: {description: Identificativo del ricovero, kind: code}
  patient_id: {description: Paziente ricoverato, kind: identity, references: clinical.patient.patient_id}
  admission_date: {description: Data di ammissione in reparto, kind: date}
  discharge_date: {description: Data di dimissione, kind: date}
  care_regime: {description: Regime di ricovero, kind: category, values: {"1": ordinario, "2": day hospital}}
""",
    "clinical.patient.yaml": """table: clinical.patient
description: Anagrafica dei pazienti
columns:
  patient_id: {description: Identificativo del paziente, kind: identity}
  birth_date: {description: Data di nascita, kind: date}
  sex: {description: Sesso, kind: category, values: {M: maschio, F: femmina}}
""",
}


def build_warehouse(root: Path, patients: int = 40) -> None:
    base = root / "warehouse"
    base.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(base / "adt.sqlite") as adt:
        adt.executescript(ADT)
        adt.executemany(
            "INSERT INTO admission VALUES (?, ?, ?, ?, ?)",
            [
                (
                    n,
                    n % patients + 1,
                    f"2024-0{n % 9 + 1}-1{n % 9}",
                    f"2024-0{n % 9 + 1}-2{n % 9}",
                    "1" if n % 3 else "2",
                )
                for n in range(1, 121)
            ],
        )
    adt.close()
    with sqlite3.connect(base / "clinical.sqlite") as clinical:
        clinical.executescript(CLINICAL)
        clinical.executemany(
            "INSERT INTO patient VALUES (?, ?, ?, ?)",
            [
                (n, f"RSSMRA{n:02d}A01H501U", f"19{40 + n}-01-0{n % 9 + 1}", "MF"[n % 2])
                for n in range(1, patients + 1)
            ],
        )
        clinical.executemany(
            "INSERT INTO episode VALUES (?, ?, ?)",
            [(n, n % patients + 1, "DTX"[n % 3]) for n in range(1, 61)],
        )
    clinical.close()
    schema = root / "schema"
    schema.mkdir(exist_ok=True)
    for name, text in DESCRIPTIONS.items():
        (schema / name).write_text(text, encoding="utf-8")


def warehouse_runtime(make_workspace: Callable[..., Workspace], embeddings_url: str) -> Runtime:
    """A published workspace (the test Evidence) with the warehouse as its [database]."""
    ws = prepared_workspace(make_workspace, embeddings_url)
    with (ws.root / "thoth.toml").open("a", encoding="utf-8") as handle:
        handle.write(DATABASE)
    build_warehouse(ws.root)
    commit_all(ws.root, "the warehouse and its descriptions")
    rt = open_runtime(Workspace.open(ws.root))
    activate_head(rt)
    report = publish(rt)
    assert report.outcome == "activated", report.message
    return rt
