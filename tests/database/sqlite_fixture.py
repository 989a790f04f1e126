"""A small two-schema SQLite database on disk, shared by the SQLite tests of thoth.database."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from thoth.config import DatabaseSettings

MAIN_ROWS = 3
ADMISSIONS = 5


def make_sqlite_workspace(root: Path) -> DatabaseSettings:
    """Two files: `main` (patient, ward, a view) and `adt` (admission -> main's patient ids)."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(root / "data" / "clinic.sqlite") as conn:
        conn.executescript(
            """
            CREATE TABLE ward (code TEXT PRIMARY KEY, label TEXT NOT NULL);
            CREATE TABLE patient (
                id INTEGER PRIMARY KEY,
                tax_code text NOT NULL,
                ward_code TEXT REFERENCES ward(code),
                "Birth Date" date
            );
            CREATE TABLE bed (n INTEGER, ward TEXT REFERENCES ward);
            CREATE VIEW patient_ward AS
                SELECT p.id, w.label FROM patient p JOIN ward w ON w.code = p.ward_code;
            INSERT INTO ward VALUES ('CAR', 'Cardiologia'), ('PED', 'Pediatria');
            INSERT INTO patient VALUES
                (1, 'RSSMRA80A01H501U', 'CAR', '1980-01-01'),
                (2, 'VRDLGU75B02F205X', 'CAR', '1975-02-02'),
                (3, 'BNCGNN01C03L219Y', 'PED', '2001-03-03');
            """
        )
    conn.close()
    with sqlite3.connect(root / "data" / "adt.sqlite") as conn:
        conn.executescript(
            """
            CREATE TABLE admission (
                id INTEGER PRIMARY KEY,
                patient_id INTEGER NOT NULL,
                urgent INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                FOREIGN KEY (patient_id, seq) REFERENCES admission_seq (patient_id, seq)
            );
            CREATE TABLE admission_seq (patient_id INTEGER, seq INTEGER, PRIMARY KEY (patient_id, seq));
            INSERT INTO admission VALUES (1, 1, 1, 1), (2, 1, 0, 2), (3, 2, 1, 1), (4, 3, 0, 1), (5, 3, 1, 2);
            """
        )
    conn.close()
    return sqlite_settings()


def sqlite_settings() -> DatabaseSettings:
    return DatabaseSettings(
        dialect="sqlite",
        files={"main": "data/clinic.sqlite", "adt": "data/adt.sqlite"},
        statement_timeout_seconds=1,
    )


def fingerprint(root: Path) -> dict[str, tuple[str, int]]:
    """Every file under data/ (a -journal or -wal left behind would show): hash and mtime."""
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted((root / "data").iterdir())
    }
