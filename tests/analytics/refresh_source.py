"""The management database a refresh copies from (issue 50): admissions with the patient's tax
code and a free-text note, wards with a contact's password hash, the load log; the views file
the store is built with; the `[analytics.refresh]` settings. The served store of
tests/analytics/store.py is the copy before the refresh (data date 2025-06-30)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SOURCE_FILE = "source/gestionale.sqlite"
NEW_DATE = "2025-07-31"

# (id, ward, regime, year, days, tax code, note)
ADMISSIONS = [
    (1, "CAR", "ordinario", 2024, 5, "RSSMRA80A01H501U", "allergia penicillina"),
    (2, "CAR", "ordinario", 2024, 7, "VRDLGU75B02F205X", "pwd: hunter2"),
    (3, "PED", "ordinario", 2024, 3, "BNCGNN01C03L219Y", None),
    (4, "PED", "ordinario", 2025, 2, "RSSMRA80A01H501U", None),
    (5, "ORT", "day hospital", 2024, 1, "VRDLGU75B02F205X", None),
]
WARDS = [
    ("CAR", "Cardiologia", "$2b$12$abc"),
    ("PED", "Pediatria", "$2b$12$def"),
    ("ORT", "Ortopedia", "$2b$12$ghi"),
]

SCHEMA = """
CREATE TABLE ricovero (id INTEGER PRIMARY KEY, reparto_code TEXT, regime TEXT, anno INTEGER,
                       giorni INTEGER, codice_fiscale TEXT, note TEXT);
CREATE TABLE reparto (code TEXT PRIMARY KEY, nome TEXT NOT NULL, password_hash TEXT);
CREATE TABLE caricamento (data_dato TEXT NOT NULL);
CREATE TABLE utente (login TEXT, password TEXT);
"""

VIEWS = """\
CREATE VIEW v_ricoveri AS
    SELECT r.id, p.nome AS reparto, r.regime, r.anno, r.giorni, r.note
    FROM ricovero r JOIN reparto p ON p.code = r.reparto_code;
CREATE VIEW v_reparti AS SELECT nome AS reparto FROM reparto;
CREATE VIEW v_data_dato AS SELECT data_date AS data_dato FROM v_data_date;
"""

REFRESH = (
    "\n[analytics.refresh]\n"
    f'source_file = "{SOURCE_FILE}"\n'
    'views = "analytics/views.sql"\n'
    'scrub = ["main.ricovero.note"]\n'
    'scrub_mark = "[rimosso]"\n'
    'source_data_date_sql = "SELECT max(data_dato) FROM caricamento"\n'
    "keep = 2\n"
)


def build_source(root: Path, *, data_date: str = NEW_DATE) -> Path:
    path = root / SOURCE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    with conn:
        conn.executescript(SCHEMA)
        conn.executemany("INSERT INTO ricovero VALUES (?, ?, ?, ?, ?, ?, ?)", ADMISSIONS)
        conn.executemany("INSERT INTO reparto VALUES (?, ?, ?)", WARDS)
        conn.execute("INSERT INTO caricamento VALUES (?)", (data_date,))
        conn.execute("INSERT INTO utente VALUES ('admin', 'segreto')")
    conn.close()
    return path


def set_source_date(root: Path, data_date: str) -> None:
    conn = sqlite3.connect(root / SOURCE_FILE)
    with conn:
        conn.execute("UPDATE caricamento SET data_dato = ?", (data_date,))
    conn.close()
