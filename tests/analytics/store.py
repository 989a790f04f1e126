"""A small analytics store for the tests: one SQLite file attached as `analytics`, base tables
(admissions with the patient's tax code, wards, the load log) and the views the catalog may
read. The demo's own store is built elsewhere; this one is only big enough to be checked by
hand."""

from __future__ import annotations

import sqlite3
from pathlib import Path

STORE_FILE = "store/analytics.sqlite"
DATA_DATE = "2025-06-30"

# (id, ward, regime, year, days, tax code)
ADMISSIONS = [
    (1, "CAR", "ordinario", 2023, 5, "RSSMRA80A01H501U"),
    (2, "CAR", "ordinario", 2024, 7, "VRDLGU75B02F205X"),
    (3, "CAR", "day hospital", 2024, 1, "BNCGNN01C03L219Y"),
    (4, "PED", "ordinario", 2024, 3, "RSSMRA80A01H501U"),
    (5, "PED", "ordinario", 2024, 4, "VRDLGU75B02F205X"),
    (6, "PED", "ordinario", 2024, 2, "BNCGNN01C03L219Y"),
    (7, "ORT", "day hospital", 2023, 1, "RSSMRA80A01H501U"),
]
WARDS = [("CAR", "Cardiologia"), ("PED", "Pediatria"), ("ORT", "Ortopedia")]

SCHEMA = """
CREATE TABLE ricovero (id INTEGER PRIMARY KEY, reparto_code TEXT, regime TEXT, anno INTEGER,
                       giorni INTEGER, codice_fiscale TEXT);
CREATE TABLE reparto (code TEXT PRIMARY KEY, nome TEXT NOT NULL);
CREATE TABLE caricamento (data_dato TEXT NOT NULL);
CREATE VIEW v_ricoveri AS
    SELECT r.id, p.nome AS reparto, r.regime, r.anno, r.giorni
    FROM ricovero r JOIN reparto p ON p.code = r.reparto_code;
CREATE VIEW v_reparti AS SELECT nome AS reparto FROM reparto;
CREATE VIEW v_data_dato AS SELECT max(data_dato) AS data_dato FROM caricamento;
"""


def build_store(root: Path, *, data_date: str | None = DATA_DATE) -> Path:
    path = root / STORE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    with conn:
        conn.executescript(SCHEMA)
        conn.executemany("INSERT INTO ricovero VALUES (?, ?, ?, ?, ?, ?)", ADMISSIONS)
        conn.executemany("INSERT INTO reparto VALUES (?, ?)", WARDS)
        if data_date is not None:
            conn.execute("INSERT INTO caricamento VALUES (?)", (data_date,))
    conn.close()
    return path


def count(ward: str | None, regime: str, year: int) -> int:
    """The expected answer, computed here from the rows above."""
    names = dict(WARDS)
    return sum(
        1
        for _, code, reg, yr, _, _ in ADMISSIONS
        if reg == regime and yr == year and (ward is None or names[code] == ward)
    )
