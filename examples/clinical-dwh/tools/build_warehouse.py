"""Build the demo's clinical data warehouse: one SQLite file per schema under a target folder.

The Evidence of this workspace talks about a PostgreSQL warehouse with the operational schemas
`adt`, `clinical`, `lab`, `pharmacy` and the dimensional schema `dwh`. This tool writes a small,
coherent, entirely synthetic copy of it (no real patient, no real code list beyond public
classifications), one SQLite file per schema, so that Thoth can attach them read-only under
their schema names and run the Evidence's queries on real rows:

    warehouse/adt.sqlite  warehouse/clinical.sqlite  warehouse/lab.sqlite
    warehouse/pharmacy.sqlite  warehouse/dwh.sqlite

Deterministic: a fixed seed and fixed dates, so two builds hold the same rows. Standard library
only (sqlite3, random). Foreign keys are declared between tables of the same file; SQLite cannot
declare them across attached files, so those are named in the reviewed descriptions under
schema/ instead (e.g. adt.admission.patient_id -> clinical.patient.patient_id).

    python tools/build_warehouse.py [TARGET]   # default: warehouse/ next to thoth.toml

The data are current to DATA_DATE (dwh.load_log): the admissions still open on that day have no
discharge date, the SDO of December 2024 are not yet sent, and the nightly load of the next
morning is the last row of the load log.
"""

# ruff: noqa: E501  (the reference tables below keep one row per line)
from __future__ import annotations

import math
import random
import sqlite3
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from itertools import pairwise
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parents[1]
SEED = 20250114
START = date(2022, 10, 1)  # first event: 2023 readmissions need the admissions of late 2022
DATA_DATE = date(2025, 1, 14)  # the data are current to this day (last nightly load)
DATA_END = datetime(2025, 1, 14, 23, 59)
CALENDAR = (date(2022, 1, 1), date(2025, 12, 31))  # dwh.dim_date
PATIENTS = 420
SCHEMAS = ("adt", "clinical", "lab", "pharmacy", "dwh")
TS = "%Y-%m-%d %H:%M:%S"

# ============================================================================================
# DDL: real types, primary and foreign keys (inside one file), checks on the coded columns

DDL: dict[str, str] = {
    "adt": """
CREATE TABLE ward (
    ward_id INTEGER PRIMARY KEY,
    ward_code TEXT NOT NULL UNIQUE,
    ward_name TEXT NOT NULL,
    discipline_code TEXT NOT NULL,
    active_from DATE NOT NULL,
    active_to DATE
);
CREATE TABLE admission (
    admission_id INTEGER PRIMARY KEY,
    episode_id INTEGER NOT NULL UNIQUE,
    patient_id INTEGER NOT NULL,
    care_regime TEXT NOT NULL CHECK (care_regime IN ('1', '2')),
    admission_type TEXT NOT NULL CHECK (admission_type IN ('1', '2', '3', '4')),
    admission_source TEXT NOT NULL,
    admission_ts TIMESTAMP NOT NULL,
    admission_date DATE NOT NULL,
    admitting_ward_id INTEGER NOT NULL REFERENCES ward (ward_id),
    discharge_ts TIMESTAMP,
    discharge_date DATE,
    discharging_ward_id INTEGER REFERENCES ward (ward_id),
    discharge_mode TEXT,
    dh_access_count INTEGER CHECK (dh_access_count IS NULL OR dh_access_count >= 1),
    CHECK (discharge_date IS NULL OR discharge_date >= admission_date)
);
CREATE TABLE ed_visit (
    ed_visit_id INTEGER PRIMARY KEY,
    episode_id INTEGER NOT NULL UNIQUE,
    patient_id INTEGER NOT NULL,
    ed_unit_code TEXT NOT NULL CHECK (ed_unit_code IN ('GEN', 'PED', 'OST')),
    arrival_mode TEXT NOT NULL,
    arrival_ts TIMESTAMP NOT NULL,
    chief_complaint TEXT,
    triage_code TEXT NOT NULL CHECK (triage_code IN ('1', '2', '3', '4', '5')),
    triage_ts TIMESTAMP NOT NULL,
    first_visit_ts TIMESTAMP,
    obi_flag BOOLEAN NOT NULL,
    decision_ts TIMESTAMP,
    outcome_code TEXT NOT NULL,
    outcome_ts TIMESTAMP NOT NULL,
    admission_id INTEGER REFERENCES admission (admission_id)
);
CREATE TABLE transfer (
    transfer_id INTEGER PRIMARY KEY,
    admission_id INTEGER NOT NULL REFERENCES admission (admission_id),
    from_ward_id INTEGER NOT NULL REFERENCES ward (ward_id),
    to_ward_id INTEGER NOT NULL REFERENCES ward (ward_id),
    transfer_ts TIMESTAMP NOT NULL
);
CREATE TABLE ward_stay (
    ward_stay_id INTEGER PRIMARY KEY,
    admission_id INTEGER NOT NULL REFERENCES admission (admission_id),
    stay_seq INTEGER NOT NULL,
    ward_id INTEGER NOT NULL REFERENCES ward (ward_id),
    start_ts TIMESTAMP NOT NULL,
    end_ts TIMESTAMP,
    UNIQUE (admission_id, stay_seq)
);
""",
    "clinical": """
CREATE TABLE patient (
    patient_id INTEGER PRIMARY KEY,
    fiscal_code_pseudo TEXT NOT NULL UNIQUE,
    last_name TEXT NOT NULL,
    first_name TEXT NOT NULL,
    sex_code TEXT NOT NULL CHECK (sex_code IN ('1', '2', '9')),
    birth_date DATE NOT NULL,
    residence_istat_code TEXT NOT NULL,
    citizenship_code TEXT NOT NULL,
    death_date DATE
);
CREATE TABLE episode (
    episode_id INTEGER PRIMARY KEY,
    patient_id INTEGER NOT NULL REFERENCES patient (patient_id),
    episode_type TEXT NOT NULL CHECK (episode_type IN ('RIC', 'PS', 'AMB')),
    start_ts TIMESTAMP NOT NULL,
    end_ts TIMESTAMP
);
CREATE TABLE diagnosis (
    diagnosis_id INTEGER PRIMARY KEY,
    episode_id INTEGER NOT NULL REFERENCES episode (episode_id),
    diagnosis_rank INTEGER NOT NULL CHECK (diagnosis_rank BETWEEN 1 AND 6),
    icd9cm_code TEXT NOT NULL,
    UNIQUE (episode_id, diagnosis_rank)
);
CREATE TABLE intervention (
    intervention_id INTEGER PRIMARY KEY,
    episode_id INTEGER NOT NULL REFERENCES episode (episode_id),
    procedure_rank INTEGER NOT NULL CHECK (procedure_rank BETWEEN 1 AND 6),
    icd9cm_proc_code TEXT NOT NULL,
    procedure_date DATE NOT NULL,
    first_operator_code TEXT NOT NULL,
    UNIQUE (episode_id, procedure_rank)
);
CREATE TABLE drg (
    drg_id INTEGER PRIMARY KEY,
    episode_id INTEGER NOT NULL UNIQUE REFERENCES episode (episode_id),
    drg_code TEXT NOT NULL,
    drg_description TEXT NOT NULL,
    mdc_code TEXT NOT NULL,
    drg_type TEXT NOT NULL CHECK (drg_type IN ('M', 'C')),
    los_threshold_days INTEGER NOT NULL,
    grouper_version TEXT NOT NULL,
    grouped_date DATE NOT NULL
);
CREATE TABLE sdo (
    sdo_id INTEGER PRIMARY KEY,
    admission_id INTEGER NOT NULL UNIQUE,
    episode_id INTEGER NOT NULL REFERENCES episode (episode_id),
    sdo_status TEXT NOT NULL CHECK (sdo_status IN ('APERTA', 'CHIUSA', 'INVIATA', 'SCARTATA')),
    closed_date DATE,
    transmission_month TEXT,
    reject_code TEXT
);
""",
    "lab": """
CREATE TABLE test_catalog (
    test_code TEXT PRIMARY KEY,
    test_name TEXT NOT NULL,
    loinc_code TEXT,
    sector TEXT NOT NULL,
    unit_code TEXT,
    critical_low REAL,
    critical_high REAL
);
CREATE TABLE request (
    request_id INTEGER PRIMARY KEY,
    episode_id INTEGER NOT NULL,
    patient_id INTEGER NOT NULL,
    origin_code TEXT NOT NULL CHECK (origin_code IN ('RIC', 'PS', 'AMB')),
    requesting_ward_id INTEGER,
    request_ts TIMESTAMP NOT NULL,
    priority_code TEXT NOT NULL CHECK (priority_code IN ('R', 'U', 'E', 'P'))
);
CREATE TABLE result (
    result_id INTEGER PRIMARY KEY,
    request_id INTEGER NOT NULL REFERENCES request (request_id),
    patient_id INTEGER NOT NULL,
    test_code TEXT NOT NULL REFERENCES test_catalog (test_code),
    loinc_code TEXT,
    value_num REAL,
    value_text TEXT,
    value_comparator TEXT CHECK (value_comparator IN ('<', '>')),
    unit_code TEXT,
    ref_low REAL,
    ref_high REAL,
    abnormal_flag TEXT CHECK (abnormal_flag IN ('N', 'L', 'H', 'LL', 'HH', 'A')),
    status TEXT NOT NULL CHECK (status IN ('P', 'F', 'C', 'X')),
    validated_ts TIMESTAMP
);
""",
    "pharmacy": """
CREATE TABLE drug (
    drug_id INTEGER PRIMARY KEY,
    aic_code TEXT UNIQUE,
    drug_name TEXT NOT NULL,
    active_ingredient TEXT,
    atc_code TEXT,
    unit_price_eur DECIMAL(10, 2),
    high_cost_flag BOOLEAN NOT NULL
);
CREATE TABLE prescription (
    prescription_id INTEGER PRIMARY KEY,
    admission_id INTEGER NOT NULL,
    patient_id INTEGER NOT NULL,
    prescribing_ward_id INTEGER NOT NULL,
    drug_id INTEGER NOT NULL REFERENCES drug (drug_id),
    dose REAL NOT NULL,
    dose_unit TEXT NOT NULL,
    route_code TEXT NOT NULL,
    frequency_code TEXT NOT NULL,
    start_ts TIMESTAMP NOT NULL,
    end_ts TIMESTAMP,
    status_code TEXT NOT NULL CHECK (status_code IN ('ATT', 'SOS', 'TER', 'INT', 'ANN'))
);
CREATE TABLE administration (
    administration_id INTEGER PRIMARY KEY,
    prescription_id INTEGER NOT NULL REFERENCES prescription (prescription_id),
    planned_ts TIMESTAMP NOT NULL,
    administered_ts TIMESTAMP,
    dose_given REAL,
    outcome_code TEXT NOT NULL CHECK (outcome_code IN ('S', 'R', 'D', 'C', 'M', 'P')),
    nurse_note TEXT
);
""",
    "dwh": """
CREATE TABLE dim_date (
    date_key INTEGER PRIMARY KEY,
    calendar_date DATE NOT NULL UNIQUE,
    year_num INTEGER NOT NULL,
    quarter_num INTEGER NOT NULL,
    month_num INTEGER NOT NULL,
    month_name TEXT NOT NULL,
    day_of_month INTEGER NOT NULL,
    day_of_week INTEGER NOT NULL,
    day_name TEXT NOT NULL,
    is_weekend BOOLEAN NOT NULL,
    is_holiday BOOLEAN NOT NULL
);
CREATE TABLE dim_ward (
    ward_key INTEGER PRIMARY KEY,
    ward_id INTEGER NOT NULL,
    ward_code TEXT NOT NULL,
    ward_name TEXT NOT NULL,
    discipline_code TEXT NOT NULL,
    discipline_name TEXT NOT NULL,
    department_name TEXT NOT NULL,
    bed_count INTEGER NOT NULL,
    valid_from DATE NOT NULL,
    valid_to DATE,
    is_current BOOLEAN NOT NULL
);
CREATE TABLE dim_drg (
    drg_key INTEGER PRIMARY KEY,
    drg_code TEXT NOT NULL,
    drg_description TEXT NOT NULL,
    mdc_code TEXT NOT NULL,
    drg_type TEXT NOT NULL CHECK (drg_type IN ('M', 'C')),
    weight_year INTEGER NOT NULL,
    drg_weight REAL NOT NULL,
    los_threshold_days INTEGER NOT NULL,
    tariff_eur DECIMAL(10, 2) NOT NULL,
    UNIQUE (drg_code, weight_year)
);
CREATE TABLE dim_patient (
    patient_key INTEGER PRIMARY KEY,
    birth_year INTEGER NOT NULL,
    sex TEXT NOT NULL CHECK (sex IN ('M', 'F', 'N')),
    deceased_flag BOOLEAN NOT NULL
);
CREATE TABLE fact_admission (
    admission_key INTEGER PRIMARY KEY,
    admission_id INTEGER NOT NULL UNIQUE,
    patient_key INTEGER NOT NULL REFERENCES dim_patient (patient_key),
    admission_date_key INTEGER NOT NULL REFERENCES dim_date (date_key),
    discharge_date_key INTEGER NOT NULL REFERENCES dim_date (date_key),
    admitting_ward_key INTEGER NOT NULL REFERENCES dim_ward (ward_key),
    discharging_ward_key INTEGER NOT NULL REFERENCES dim_ward (ward_key),
    drg_key INTEGER NOT NULL REFERENCES dim_drg (drg_key),
    care_regime TEXT NOT NULL CHECK (care_regime IN ('1', '2')),
    admission_type TEXT NOT NULL,
    discharge_mode TEXT NOT NULL,
    age_at_admission INTEGER NOT NULL,
    los_days INTEGER,
    dh_access_count INTEGER,
    drg_weight REAL NOT NULL,
    readmitted_within_30d BOOLEAN NOT NULL
);
CREATE TABLE fact_ed_visit (
    ed_visit_key INTEGER PRIMARY KEY,
    ed_visit_id INTEGER NOT NULL UNIQUE,
    patient_key INTEGER NOT NULL REFERENCES dim_patient (patient_key),
    arrival_date_key INTEGER NOT NULL REFERENCES dim_date (date_key),
    arrival_ts TIMESTAMP NOT NULL,
    ed_unit_code TEXT NOT NULL,
    triage_code TEXT NOT NULL,
    wait_minutes INTEGER,
    stay_minutes INTEGER NOT NULL,
    obi_flag BOOLEAN NOT NULL,
    outcome_code TEXT NOT NULL,
    boarding_minutes INTEGER,
    admission_key INTEGER REFERENCES fact_admission (admission_key)
);
CREATE TABLE load_log (
    load_id INTEGER PRIMARY KEY,
    loaded_at TIMESTAMP NOT NULL,
    data_date DATE NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('OK', 'KO')),
    rows_loaded INTEGER NOT NULL
);
""",
}

# ============================================================================================
# Reference data: wards, DRG, clinical cases, lab tests, drugs


@dataclass(frozen=True)
class Ward:
    ward_id: int
    code: str
    name: str
    discipline: str
    department: str
    beds: int
    active_to: date | None = None


# fmt: off
WARDS: tuple[Ward, ...] = (
    Ward(1, "02601", "Medicina generale", "026", "Dipartimento medico", 40),
    Ward(2, "00901", "Chirurgia generale", "009", "Dipartimento chirurgico", 30),
    Ward(3, "03601", "Ortopedia e traumatologia", "036", "Dipartimento chirurgico", 28),
    # Merged with the coronary unit on 2024-04-01 (meeting notes of March 2024).
    Ward(4, "00801", "Cardiologia-UTIC", "008", "Dipartimento cardiovascolare", 28),
    Ward(5, "05001", "Unità coronarica", "050", "Dipartimento cardiovascolare", 8, date(2024, 3, 31)),
    Ward(6, "03201", "Neurologia", "032", "Dipartimento di neuroscienze", 18),
    Ward(7, "02101", "Geriatria", "021", "Dipartimento medico", 24),
    Ward(8, "03701", "Ostetricia e ginecologia", "037", "Dipartimento materno-infantile", 30),
    Ward(9, "03901", "Pediatria", "039", "Dipartimento materno-infantile", 16),
    Ward(10, "06201", "Neonatologia", "062", "Dipartimento materno-infantile", 10),
    Ward(11, "04901", "Terapia intensiva", "049", "Dipartimento di emergenza", 10),
    Ward(12, "05101", "Medicina d'urgenza", "051", "Dipartimento di emergenza", 12),
    Ward(13, "06401", "Oncologia", "064", "Dipartimento oncologico", 12),
    Ward(14, "04001", "Psichiatria (SPDC)", "040", "Dipartimento di salute mentale", 15),
)
WARD = {w.code: w for w in WARDS}
MERGE_DATE = date(2024, 4, 1)
DISCIPLINES = {
    "008": "Cardiologia",
    "009": "Chirurgia generale",
    "021": "Geriatria",
    "026": "Medicina generale",
    "032": "Neurologia",
    "036": "Ortopedia e traumatologia",
    "037": "Ostetricia e ginecologia",
    "039": "Pediatria",
    "040": "Psichiatria",
    "049": "Terapia intensiva",
    "050": "Unità coronarica",
    "051": "Astanteria",
    "062": "Neonatologia",
    "064": "Oncologia",
}
# dwh.dim_ward versions (SCD type 2): (ward_id, name, beds, valid_from, valid_to)
WARD_VERSIONS: tuple[tuple[int, str, int, date, date | None], ...] = (
    (1, "Medicina generale", 36, date(2022, 1, 1), date(2023, 12, 31)),
    (1, "Medicina generale", 40, date(2024, 1, 1), None),
    (2, "Chirurgia generale", 30, date(2022, 1, 1), None),
    (3, "Ortopedia e traumatologia", 28, date(2022, 1, 1), None),
    (4, "Cardiologia", 20, date(2022, 1, 1), date(2024, 3, 31)),
    (4, "Cardiologia-UTIC", 28, date(2024, 4, 1), None),
    (5, "Unità coronarica", 8, date(2022, 1, 1), date(2024, 3, 31)),
    (6, "Neurologia", 18, date(2022, 1, 1), None),
    (7, "Geriatria", 24, date(2022, 1, 1), None),
    (8, "Ostetricia e ginecologia", 30, date(2022, 1, 1), None),
    (9, "Pediatria", 16, date(2022, 1, 1), None),
    (10, "Neonatologia", 10, date(2022, 1, 1), None),
    (11, "Terapia intensiva", 10, date(2022, 1, 1), None),
    (12, "Medicina d'urgenza", 12, date(2022, 1, 1), None),
    (13, "Oncologia", 12, date(2022, 1, 1), None),
    (14, "Psichiatria (SPDC)", 15, date(2022, 1, 1), None),
)


@dataclass(frozen=True)
class Drg:
    code: str
    description: str
    mdc: str
    kind: str  # M medico, C chirurgico
    weight: float  # 2022 relative weight
    threshold: int  # regional length-of-stay threshold (days)


DRGS: tuple[Drg, ...] = (
    Drg("012", "Malattie degenerative del sistema nervoso", "01", "M", 0.98, 30),
    Drg("014", "Emorragia intracranica o infarto cerebrale", "01", "M", 1.26, 31),
    Drg("524", "Ischemia cerebrale transitoria", "01", "M", 0.72, 16),
    Drg("088", "Malattia polmonare cronica ostruttiva", "04", "M", 0.87, 25),
    Drg("089", "Polmonite semplice e pleurite, età > 17 anni con CC", "04", "M", 1.10, 30),
    Drg("090", "Polmonite semplice e pleurite, età > 17 anni senza CC", "04", "M", 0.78, 23),
    Drg("775", "Bronchite e asma, età < 18 anni senza CC", "04", "M", 0.52, 8),
    Drg("121", "Malattie cardiovascolari con IMA e complicanze maggiori, dimessi vivi", "05", "M", 1.43, 32),
    Drg("122", "Malattie cardiovascolari con IMA senza complicanze maggiori, dimessi vivi", "05", "M", 1.02, 22),
    Drg("125", "Malattie cardiovascolari eccetto IMA, con cateterismo cardiaco e diagnosi non complicata", "05", "M", 0.80, 10),
    Drg("127", "Insufficienza cardiaca e shock", "05", "M", 1.03, 27),
    Drg("558", "Interventi sul sistema cardiovascolare per via percutanea con stent medicato senza diagnosi cardiovascolare maggiore", "05", "C", 1.93, 12),
    Drg("162", "Interventi per ernia inguinale e femorale, età > 17 anni senza CC", "06", "C", 0.60, 6),
    Drg("167", "Appendicectomia con diagnosi principale non complicata senza CC", "06", "C", 0.78, 8),
    Drg("183", "Esofagite, gastroenterite e miscellanea di malattie dell'apparato digerente, età > 17 anni senza CC", "06", "M", 0.62, 15),
    Drg("184", "Esofagite, gastroenterite e miscellanea di malattie dell'apparato digerente, età < 18 anni", "06", "M", 0.40, 8),
    Drg("494", "Colecistectomia laparoscopica senza esplorazione del dotto biliare comune senza CC", "07", "C", 0.83, 10),
    Drg("210", "Interventi su anca e femore eccetto articolazioni maggiori, età > 17 anni con CC", "08", "C", 1.83, 34),
    Drg("544", "Sostituzione di articolazioni maggiori o reimpianto degli arti inferiori", "08", "C", 1.99, 22),
    Drg("298", "Disturbi della nutrizione e miscellanea di disturbi del metabolismo, età < 18 anni", "10", "M", 0.50, 8),
    Drg("316", "Insufficienza renale", "11", "M", 1.12, 28),
    Drg("320", "Infezioni del rene e delle vie urinarie, età > 17 anni con CC", "11", "M", 0.89, 25),
    Drg("371", "Parto cesareo senza CC", "14", "C", 0.75, 10),
    Drg("373", "Parto vaginale senza diagnosi complicanti", "14", "M", 0.46, 7),
    Drg("391", "Neonato normale", "15", "M", 0.16, 7),
    Drg("395", "Anomalie dei globuli rossi, età > 17 anni", "16", "M", 0.72, 16),
    Drg("409", "Radioterapia", "17", "M", 0.92, 15),
    Drg("410", "Chemioterapia non associata a diagnosi secondaria di leucemia acuta", "17", "M", 0.79, 8),
    Drg("576", "Setticemia senza ventilazione meccanica ≥ 96 ore, età > 17 anni", "18", "M", 1.51, 34),
    Drg("430", "Psicosi", "19", "M", 0.97, 39),
)
DRG = {d.code: d for d in DRGS}
WEIGHT_YEARS = (2022, 2023, 2024, 2025)
EURO_PER_WEIGHT = 3_350.0  # regional base tariff for a DRG of weight 1.0


def drg_weight(drg: Drg, year: int) -> float:
    """The relative weight of a DRG in a year. The 2023 table loaded in March is still the 2022
    one (the doubt the Evidence raises on dwh.dim_drg.drg_weight); 2025 reuses 2024's."""
    if year in (2022, 2023):
        return drg.weight
    bump = 1 + ((int(drg.code) * 7) % 9 - 4) / 100  # -4% .. +4%, fixed per DRG
    return round(drg.weight * bump, 4)


@dataclass(frozen=True)
class Case:
    """A kind of hospital stay: where, which DRG and codes, how long, for whom."""

    name: str
    ward: str  # discharging ward code
    regime: str  # '1' ordinario, '2' day hospital
    drg: str
    dx: tuple[str, ...]  # principal diagnosis choices (ICD-9-CM without the dot)
    proc: tuple[str, ...] = ()  # procedures, principal first
    los: tuple[int, int] = (2, 8)  # nights (RO) or accesses (DH)
    ages: tuple[int, int] = (18, 99)
    female_only: bool = False
    weight: int = 10
    urgent: float = 0.6  # share arriving through the emergency department
    icu: float = 0.0  # share passing through intensive care
    died: float = 0.0  # share dying in hospital
    drugs: tuple[str, ...] = ()  # drug keys for prescriptions
    panel: tuple[str, ...] = ("HB", "WBC", "PLT", "CREA", "NA", "K", "GLU", "PCR")


CASES: tuple[Case, ...] = (
    Case("polmonite CC", "02601", "1", "089", ("486", "4821"), los=(5, 16), ages=(60, 99), weight=14, urgent=0.9, icu=0.05, died=0.05, drugs=("CEFTRIAXONE", "PIPTAZ", "ENOXAPARINA", "PARACETAMOLO")),
    Case("polmonite", "02601", "1", "090", ("486",), los=(4, 10), ages=(18, 80), weight=6, urgent=0.85, drugs=("AMOXCLAV", "LEVOFLOXACINA", "PARACETAMOLO")),
    Case("BPCO", "02601", "1", "088", ("49121",), los=(5, 12), ages=(55, 95), weight=6, urgent=0.85, drugs=("DESAMETASONE", "SALBUTAMOLO", "ENOXAPARINA")),
    Case("sepsi", "02601", "1", "576", ("0389",), los=(8, 22), ages=(50, 99), weight=4, urgent=1.0, icu=0.4, died=0.15, drugs=("PIPTAZ", "PARACETAMOLO", "ENOXAPARINA")),
    Case("insufficienza renale", "02601", "1", "316", ("5849",), los=(5, 14), ages=(55, 99), weight=4, urgent=0.8, drugs=("FUROSEMIDE", "PANTOPRAZOLO")),
    Case("IVU", "02601", "1", "320", ("5990",), los=(4, 10), ages=(60, 99), weight=4, urgent=0.8, drugs=("CEFTRIAXONE", "PARACETAMOLO")),
    Case("gastroenterite", "05101", "1", "183", ("5589",), los=(1, 4), ages=(18, 90), weight=5, urgent=1.0, drugs=("ONDANSETRON", "PANTOPRAZOLO")),
    Case("TIA", "05101", "1", "524", ("4359",), los=(1, 4), ages=(45, 95), weight=3, urgent=1.0, drugs=("ASA", "ATORVASTATINA")),
    Case("scompenso", "02101", "1", "127", ("4280",), los=(7, 20), ages=(75, 99), weight=8, urgent=0.9, died=0.08, drugs=("FUROSEMIDE", "BISOPROLOLO", "ENOXAPARINA", "RAMIPRIL")),
    Case("demenza", "02101", "1", "012", ("3310",), los=(8, 24), ages=(75, 99), weight=3, urgent=0.7, drugs=("PARACETAMOLO", "ENOXAPARINA")),
    Case("polmonite anziano", "02101", "1", "089", ("486", "5070"), los=(8, 22), ages=(78, 99), weight=4, urgent=0.95, died=0.1, drugs=("CEFTRIAXONE", "ENOXAPARINA")),
    Case("scompenso cardiologico", "00801", "1", "127", ("4280", "42833"), los=(4, 12), ages=(55, 95), weight=5, urgent=0.9, died=0.04, drugs=("FUROSEMIDE", "BISOPROLOLO", "RAMIPRIL")),
    Case("IMA complicato", "00801", "1", "121", ("41071", "41041"), los=(6, 14), ages=(50, 95), weight=3, urgent=1.0, icu=0.2, drugs=("ASA", "ENOXAPARINA", "ATORVASTATINA", "BISOPROLOLO", "MORFINA")),
    Case("IMA", "00801", "1", "122", ("41071", "41041"), los=(3, 8), ages=(45, 90), weight=4, urgent=1.0, drugs=("ASA", "ATORVASTATINA", "BISOPROLOLO")),
    Case("coronarografia", "00801", "1", "125", ("41401",), ("8856", "3722"), los=(1, 3), ages=(45, 85), weight=3, urgent=0.2, drugs=("ASA", "ATORVASTATINA")),
    Case("PTCA stent", "00801", "1", "558", ("41401", "4111"), ("0066", "3607", "0045"), los=(2, 5), ages=(45, 88), weight=4, urgent=0.4, drugs=("ASA", "ENOXAPARINA", "ATORVASTATINA")),
    Case("ictus", "03201", "1", "014", ("43491", "431"), los=(6, 18), ages=(55, 99), weight=5, urgent=1.0, icu=0.1, died=0.1, drugs=("ASA", "ENOXAPARINA", "ATORVASTATINA")),
    Case("TIA neurologia", "03201", "1", "524", ("4359",), los=(2, 6), ages=(45, 95), weight=2, urgent=1.0, drugs=("ASA", "ATORVASTATINA")),
    Case("colecistectomia", "00901", "1", "494", ("57410", "57420"), ("5123",), los=(1, 4), ages=(25, 85), weight=5, urgent=0.2, drugs=("CEFAZOLINA", "PARACETAMOLO", "ENOXAPARINA")),
    Case("appendicite", "00901", "1", "167", ("5409",), ("4701",), los=(2, 5), ages=(8, 60), weight=3, urgent=1.0, drugs=("CEFAZOLINA", "PARACETAMOLO")),
    Case("ernia inguinale", "00901", "2", "162", ("55090",), ("5303",), los=(1, 1), ages=(25, 85), weight=4, urgent=0.0, drugs=("PARACETAMOLO",)),
    Case("protesi ginocchio", "03601", "1", "544", ("71536",), ("8154",), los=(4, 9), ages=(55, 88), weight=4, urgent=0.0, drugs=("CEFAZOLINA", "ENOXAPARINA", "PARACETAMOLO", "MORFINA")),
    Case("frattura femore", "03601", "1", "210", ("82008", "82021"), ("7935",), los=(6, 16), ages=(70, 99), weight=5, urgent=1.0, icu=0.1, died=0.04, drugs=("ENOXAPARINA", "PARACETAMOLO", "MORFINA")),
    Case("parto vaginale", "03701", "1", "373", ("650",), ("7359",), los=(2, 3), ages=(18, 44), female_only=True, weight=7, urgent=0.9, drugs=("PARACETAMOLO",)),
    Case("parto cesareo", "03701", "1", "371", ("6542", "66971"), ("741",), los=(3, 5), ages=(20, 45), female_only=True, weight=4, urgent=0.4, drugs=("CEFAZOLINA", "ENOXAPARINA", "PARACETAMOLO")),
    Case("asma pediatrico", "03901", "1", "775", ("49392", "46619"), los=(1, 5), ages=(1, 17), weight=4, urgent=1.0, drugs=("SALBUTAMOLO", "DESAMETASONE")),
    Case("gastroenterite pediatrica", "03901", "1", "184", ("0088", "5589"), los=(1, 4), ages=(0, 17), weight=3, urgent=1.0, drugs=("ONDANSETRON", "PARACETAMOLO")),
    Case("DH pediatrico", "03901", "2", "298", ("7834", "2639"), los=(1, 3), ages=(2, 17), weight=3, urgent=0.0, panel=("HB", "GLU", "CREA", "NA", "K")),
    Case("DH anemia", "02601", "2", "395", ("2809", "2859"), los=(2, 4), ages=(30, 95), weight=3, urgent=0.0, drugs=("FERRO",), panel=("HB", "PLT", "WBC", "CREA")),
    Case("psicosi TSO", "04001", "1", "430", ("2959", "2954"), los=(7, 15), ages=(18, 65), weight=2, urgent=1.0, drugs=("ALOPERIDOLO",)),
)
CASE = {c.name: c for c in CASES}
ONCO_DH = Case("chemioterapia DH", "06401", "2", "410", ("V5811",), ("9925",), los=(3, 6), ages=(35, 90), urgent=0.0, drugs=("CHEMO",), panel=("HB", "WBC", "PLT", "CREA"))
ONCO_RO = Case("chemioterapia RO", "06401", "1", "410", ("V5811",), ("9925",), los=(2, 4), ages=(35, 90), urgent=0.0, drugs=("CHEMO", "ONDANSETRON"), panel=("HB", "WBC", "PLT", "CREA", "K"))
RADIO_RO = Case("radioterapia RO", "06401", "1", "409", ("V5801",), ("9229",), los=(3, 6), ages=(35, 90), urgent=0.0, drugs=("ONDANSETRON",), panel=("HB", "WBC", "CREA"))
NEWBORN = Case("neonato", "06201", "1", "391", ("V3000",), los=(2, 4), ages=(0, 0), urgent=0.0, panel=())
CANCERS = ("1749", "1629", "1539", "1853", "2030")
SECONDARY = {  # chronic condition -> ICD-9-CM code used as a secondary diagnosis
    "diabete": "25000",
    "ipertensione": "4019",
    "fibrillazione": "42731",
    "irc": "5853",
    "dislipidemia": "2724",
    "bpco": "496",
    "fumo": "3051",
}


@dataclass(frozen=True)
class Test:
    code: str
    name: str
    loinc: str | None
    sector: str
    unit: str | None
    low: float | None
    high: float | None
    crit_low: float | None = None
    crit_high: float | None = None
    decimals: int = 1


TESTS: tuple[Test, ...] = (
    Test("HB", "Emoglobina", "718-7", "ematologia", "g/dL", 12.0, 16.0, 7.0, 20.0),
    Test("WBC", "Leucociti", "6690-2", "ematologia", "10*3/uL", 4.0, 10.0, 1.0, 30.0),
    Test("PLT", "Piastrine", "777-3", "ematologia", "10*3/uL", 150.0, 400.0, 20.0, 1000.0, 0),
    Test("CREA", "Creatinina", "2160-0", "chimica clinica", "mg/dL", 0.6, 1.2, None, 5.0, 2),
    Test("NA", "Sodio", "2951-2", "chimica clinica", "mmol/L", 136.0, 145.0, 120.0, 160.0, 0),
    Test("K", "Potassio", "2823-3", "chimica clinica", "mmol/L", 3.5, 5.1, 2.8, 6.2),
    Test("GLU", "Glucosio", "2345-7", "chimica clinica", "mg/dL", 70.0, 100.0, 40.0, 500.0, 0),
    Test("PCR", "Proteina C reattiva", "1988-5", "chimica clinica", "mg/L", 0.0, 5.0),
    Test("HBA1C", "Emoglobina glicata", "59261-8", "chimica clinica", "mmol/mol", 20.0, 42.0, None, None, 0),
    Test("TNI", "Troponina I ad alta sensibilità", "89579-7", "chimica clinica", "ng/L", 0.0, 34.0, None, None, 0),
    Test("INR", "Tempo di protrombina (INR)", "6301-6", "coagulazione", "{INR}", 0.8, 1.2, None, 5.0, 2),
    Test("HCV", "Anticorpi anti-HCV", "16128-1", "sierologia", None, None, None),
    Test("URINOC", "Urinocoltura", None, "microbiologia", None, None, None),
    Test("EMOC", "Emocoltura", None, "microbiologia", None, None, None),
)
TEST = {t.code: t for t in TESTS}


@dataclass(frozen=True)
class Drug:
    key: str
    name: str
    ingredient: str | None
    atc: str | None
    price: float | None
    high_cost: bool
    dose: float
    unit: str
    route: str
    frequency: str


DRUGS: tuple[Drug, ...] = (
    Drug("ENOXAPARINA", "Enoxaparina 4000 UI siringa", "enoxaparina sodica", "B01AB05", 3.10, False, 4000, "UI", "SC", "1D"),
    Drug("WARFARIN", "Warfarin 5 mg compresse", "warfarin sodico", "B01AA03", 0.12, False, 5, "mg", "OS", "1D"),
    Drug("ASA", "Acido acetilsalicilico 100 mg compresse", "acido acetilsalicilico", "B01AC06", 0.05, False, 100, "mg", "OS", "1D"),
    Drug("APIXABAN", "Apixaban 5 mg compresse", "apixaban", "B01AF02", 1.35, False, 5, "mg", "OS", "2D"),
    Drug("CEFTRIAXONE", "Ceftriaxone 2 g polvere per soluzione", "ceftriaxone", "J01DD04", 4.80, False, 2, "g", "EV", "1D"),
    Drug("AMOXCLAV", "Amoxicillina e acido clavulanico 875/125 mg", "amoxicillina e inibitori enzimatici", "J01CR02", 0.45, False, 1, "cpr", "OS", "2D"),
    Drug("PIPTAZ", "Piperacillina e tazobactam 4,5 g", "piperacillina e tazobactam", "J01CR05", 9.70, False, 4.5, "g", "EV", "Q8H"),
    Drug("LEVOFLOXACINA", "Levofloxacina 500 mg compresse", "levofloxacina", "J01MA12", 0.60, False, 500, "mg", "OS", "1D"),
    Drug("CEFAZOLINA", "Cefazolina 2 g polvere per soluzione", "cefazolina", "J01DB04", 2.90, False, 2, "g", "EV", "UNA"),
    Drug("FUROSEMIDE", "Furosemide 20 mg fiale", "furosemide", "C03CA01", 0.35, False, 20, "mg", "EV", "2D"),
    Drug("BISOPROLOLO", "Bisoprololo 2,5 mg compresse", "bisoprololo", "C07AB07", 0.08, False, 2.5, "mg", "OS", "1D"),
    Drug("RAMIPRIL", "Ramipril 5 mg compresse", "ramipril", "C09AA05", 0.07, False, 5, "mg", "OS", "1D"),
    Drug("ATORVASTATINA", "Atorvastatina 40 mg compresse", "atorvastatina", "C10AA05", 0.11, False, 40, "mg", "OS", "1D"),
    Drug("PANTOPRAZOLO", "Pantoprazolo 40 mg compresse", "pantoprazolo", "A02BC02", 0.09, False, 40, "mg", "OS", "1D"),
    Drug("ONDANSETRON", "Ondansetron 4 mg fiale", "ondansetron", "A04AA01", 1.20, False, 4, "mg", "EV", "AB"),
    Drug("INSULINA", "Insulina glargine 100 UI/mL penna", "insulina glargine", "A10AE04", 9.80, False, 12, "UI", "SC", "1D"),
    Drug("METFORMINA", "Metformina 1000 mg compresse", "metformina", "A10BA02", 0.06, False, 1000, "mg", "OS", "2D"),
    Drug("PARACETAMOLO", "Paracetamolo 1000 mg soluzione per infusione", "paracetamolo", "N02BE01", 1.10, False, 1000, "mg", "EV", "Q8H"),
    Drug("MORFINA", "Morfina cloridrato 10 mg fiale", "morfina", "N02AA01", 0.95, False, 5, "mg", "SC", "AB"),
    Drug("DESAMETASONE", "Desametasone 4 mg fiale", "desametasone", "H02AB02", 0.70, False, 4, "mg", "EV", "1D"),
    Drug("SALBUTAMOLO", "Salbutamolo 100 mcg spray", "salbutamolo", "R03AC02", 3.20, False, 200, "mcg", "INAL", "3D"),
    Drug("ALOPERIDOLO", "Aloperidolo 5 mg fiale", "aloperidolo", "N05AD01", 0.60, False, 5, "mg", "IM", "2D"),
    Drug("FERRO", "Ferro carbossimaltosio 500 mg", "ferro carbossimaltosio", "B03AC01", 98.00, False, 500, "mg", "EV", "UNA"),
    Drug("PEMBROLIZUMAB", "Pembrolizumab 25 mg/mL concentrato", "pembrolizumab", "L01FF02", 2780.00, True, 200, "mg", "EV", "UNA"),
    Drug("TRASTUZUMAB", "Trastuzumab 150 mg polvere", "trastuzumab", "L01FD01", 520.00, True, 420, "mg", "EV", "UNA"),
    Drug("BEVACIZUMAB", "Bevacizumab 25 mg/mL concentrato", "bevacizumab", "L01FG01", 330.00, True, 400, "mg", "EV", "UNA"),
    Drug("CARBOPLATINO", "Carboplatino 10 mg/mL concentrato", "carboplatino", "L01XA02", 18.00, False, 450, "mg", "EV", "UNA"),
    Drug("PACLITAXEL", "Paclitaxel 6 mg/mL concentrato", "paclitaxel", "L01CD01", 35.00, False, 300, "mg", "EV", "UNA"),
    # Home therapies are prescribed with a generic drug and never counted in pharmacy use.
    Drug("DOMICILIARE", "Farmaco domiciliare del paziente", None, None, None, False, 1, "dose", "OS", "1D"),
)
DRUG = {d.key: d for d in DRUGS}
CHEMO = ("PEMBROLIZUMAB", "TRASTUZUMAB", "BEVACIZUMAB", "CARBOPLATINO", "PACLITAXEL")
SCHEDULE = {  # frequency -> planned hours of the day
    "1D": (8,),
    "2D": (8, 20),
    "3D": (8, 14, 20),
    "Q8H": (6, 14, 22),
    "Q6H": (0, 6, 12, 18),
}

FIRST_NAMES = {
    "1": ("Marco", "Luca", "Giuseppe", "Giovanni", "Antonio", "Francesco", "Alessandro",
          "Andrea", "Matteo", "Roberto", "Stefano", "Paolo", "Salvatore", "Lorenzo", "Davide"),
    "2": ("Maria", "Anna", "Giulia", "Francesca", "Chiara", "Sara", "Laura", "Paola",
          "Elena", "Giovanna", "Rosa", "Angela", "Martina", "Alessia", "Lucia"),
}
LAST_NAMES = ("Rossi", "Russo", "Ferrari", "Esposito", "Bianchi", "Romano", "Colombo",
              "Ricci", "Marino", "Greco", "Bruno", "Gallo", "Conti", "De Luca", "Mancini",
              "Costa", "Giordano", "Rizzo", "Lombardi", "Moretti", "Barbieri", "Fontana",
              "Santoro", "Mariani", "Rinaldi", "Caruso", "Ferrara", "Galli", "Martini", "Leone")
MUNICIPALITIES = ("097042", "097048", "097021", "097067", "097009", "013075", "015146",
                  "097083", "097056", "016024")
CITIZENSHIPS = (("100", 88), ("235", 4), ("201", 3), ("436", 2), ("243", 1), ("314", 1), ("323", 1))
COMPLAINTS = {
    "trauma": "Trauma dopo caduta accidentale, dolore all'arto",
    "dolore toracico": "Dolore toracico oppressivo insorto a riposo",
    "dispnea": "Dispnea ingravescente da alcuni giorni",
    "febbre": "Febbre elevata e malessere generale",
    "dolore addominale": "Dolore addominale in fossa iliaca destra",
    "neurologico": "Deficit di forza all'emisoma, disturbo della parola",
    "gastro": "Vomito e diarrea da 48 ore",
    "altro": "Malessere, richiesta di valutazione",
    "gravidanza": "Contrazioni regolari, gravidanza a termine",
    "psichiatrico": "Agitazione psicomotoria, accompagnato dalle forze dell'ordine",
}
CASE_COMPLAINT = {
    "008": "dolore toracico", "050": "dolore toracico", "026": "dispnea", "021": "dispnea",
    "032": "neurologico", "036": "trauma", "009": "dolore addominale", "037": "gravidanza",
    "039": "febbre", "051": "gastro", "040": "psichiatrico",
}
MONTHS = ("gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto",
          "settembre", "ottobre", "novembre", "dicembre")
DAYS = ("lunedì", "martedì", "mercoledì", "giovedì", "venerdì", "sabato", "domenica")


# fmt: on


# ============================================================================================
# Generation


def ts(value: datetime) -> str:
    return value.strftime(TS)


def minutes(later: datetime, earlier: datetime) -> int:
    return int((later - earlier).total_seconds() // 60)


def age_on(birth: date, day: date) -> int:
    return day.year - birth.year - ((day.month, day.day) < (birth.month, birth.day))


def easter(year: int) -> date:
    """Gregorian Easter Sunday (anonymous Gregorian algorithm)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = b // 4, b % 4
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    j = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 19 * j) // 433
    month = (h + j - 7 * m + 90) // 25
    return date(year, month, (h + j - 7 * m + 33 * month + 19) % 32)


def holidays(year: int) -> set[date]:
    fixed = ((1, 1), (1, 6), (4, 25), (5, 1), (6, 2), (8, 15), (11, 1), (12, 8), (12, 25), (12, 26))
    return {date(year, m, d) for m, d in fixed} | {easter(year) + timedelta(days=1)}


def date_key(day: date) -> int:
    return day.year * 10000 + day.month * 100 + day.day


@dataclass
class Patient:
    patient_id: int
    sex: str
    birth: date
    conditions: tuple[str, ...]
    oncology: bool = False
    death: date | None = None


@dataclass
class Visit:
    """An emergency-department visit, as the dwh schema needs it."""

    visit_id: int
    episode_id: int
    patient: Patient
    arrival: datetime
    unit: str
    triage: str
    triage_ts: datetime
    first_visit: datetime | None
    obi: bool
    decision: datetime
    outcome: str
    outcome_ts: datetime
    admission_id: int | None = None


@dataclass
class Stay:
    """An admission, as the coding, the lab, the pharmacy and the dwh schema need it."""

    admission_id: int
    episode_id: int
    patient: Patient
    case: Case
    start: datetime
    discharge: datetime | None  # None: still open on DATA_DATE
    admitting: Ward
    discharging: Ward
    admission_type: str
    mode: str | None
    accesses: int | None
    dx: str  # principal diagnosis


@dataclass
class Warehouse:
    """All rows, per table, in insertion order."""

    rows: dict[str, list[tuple[object, ...]]] = field(default_factory=dict)

    def add(self, table: str, *values: object) -> int:
        bucket = self.rows.setdefault(table, [])
        bucket.append(values)
        return len(bucket)

    def next_id(self, table: str) -> int:
        return len(self.rows.get(table, ())) + 1


class Generator:
    def __init__(self, seed: int = SEED) -> None:
        self.rng = random.Random(seed)
        self.w = Warehouse()
        self.patients: list[Patient] = []
        self.stays: dict[int, Stay] = {}  # admission_id -> stay
        self.visits: list[Visit] = []

    # -- small helpers -----------------------------------------------------------------------

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, weighted: Sequence[tuple[str, float]]) -> str:
        return self.rng.choices([k for k, _ in weighted], [w for _, w in weighted])[0]

    def at(self, day: date, hour_from: int, hour_to: int) -> datetime:
        minute = self.rng.randrange(hour_from * 60, hour_to * 60)
        return datetime(day.year, day.month, day.day) + timedelta(minutes=minute)

    def arrival_time(self, day: date) -> datetime:
        # More arrivals in the day than at night, as in any emergency department.
        hours = list(range(24))
        weights = [1, 1, 1, 1, 1, 1, 2, 3, 6, 8, 9, 9, 8, 7, 7, 7, 7, 6, 6, 5, 4, 3, 2, 1]
        hour = self.rng.choices(hours, weights)[0]
        return datetime(day.year, day.month, day.day, hour, self.rng.randrange(60))

    # -- people ------------------------------------------------------------------------------

    def new_patient(self, birth: date | None = None, sex: str | None = None) -> Patient:
        rng = self.rng
        pid = len(self.patients) + 1
        if sex is None:
            sex = "9" if rng.random() < 0.01 else rng.choice("12")
        if birth is None:
            band = self.pick((("child", 13), ("adult", 37), ("old", 50)))
            low, high = {"child": (0, 17), "adult": (18, 64), "old": (65, 96)}[band]
            age = rng.randint(low, high)
            birth = date(2023, 7, 1) - timedelta(days=age * 365 + rng.randrange(365))
        age = age_on(birth, date(2024, 1, 1))
        conditions: list[str] = []
        for name, (min_age, p) in {
            "ipertensione": (40, 0.45),
            "diabete": (35, 0.2),
            "dislipidemia": (40, 0.25),
            "fibrillazione": (60, 0.15),
            "irc": (60, 0.12),
            "bpco": (55, 0.1),
            "fumo": (16, 0.2),
        }.items():
            if age >= min_age and rng.random() < p:
                conditions.append(name)
        patient = Patient(pid, sex, birth, tuple(conditions))
        self.patients.append(patient)
        return patient

    # -- episodes ----------------------------------------------------------------------------

    def episode(self, patient: Patient, kind: str, start: datetime) -> int:
        return self.w.add("clinical.episode", patient.patient_id, kind, ts(start), None)

    def close_episode(self, episode_id: int, kind: str, end: datetime | None) -> None:
        row = self.w.rows["clinical.episode"][episode_id - 1]
        self.w.rows["clinical.episode"][episode_id - 1] = (
            row[0],
            kind,
            row[2],
            ts(end) if end else None,
        )

    def ed_visit(self, patient: Patient, arrival: datetime, case: Case | None) -> Visit | None:
        """One emergency-department visit. With a case, it ends in an admission (outcome 3)."""
        rng = self.rng
        age = age_on(patient.birth, arrival.date())
        if age <= 14:
            unit = "PED"
        elif (case is not None and case.ward == "03701") or (
            case is None and patient.sex == "2" and 15 <= age <= 50 and rng.random() < 0.08
        ):
            unit = "OST"
        else:
            unit = "GEN"
        if case is not None:
            triage = self.pick((("1", 8), ("2", 40), ("3", 40), ("4", 12)))
            outcome = "3"
        else:
            triage = self.pick(
                (("1", 0.5), ("2", 6), ("3", 20), ("4", 60), ("5", 14))
                if unit == "PED"
                else (("1", 1.5), ("2", 10), ("3", 24), ("4", 50), ("5", 14.5))
            )
            outcome = self.pick(
                (
                    ("1", 72),
                    ("2", 9),
                    ("4", 2.5),
                    ("5", 0.3 if triage == "1" else 0),
                    ("6", 2),
                    ("7", 7 if triage in "45" else 1),
                    ("8", 2),
                )
            )
        triage_ts = arrival + timedelta(minutes=rng.randint(1, 12))
        median = {"1": 2, "2": 9, "3": 32, "4": 65, "5": 90}[triage]
        wait = max(0, round(rng.lognormvariate(math.log(median), 0.6)))
        first_visit: datetime | None = triage_ts + timedelta(minutes=wait)
        if rng.random() < 0.012:  # hand-typed times: the visit before the triage
            first_visit = triage_ts - timedelta(minutes=rng.randint(2, 15))
        if outcome == "7":
            first_visit = None
        obi = outcome in ("1", "3") and rng.random() < 0.08
        seen = first_visit or triage_ts
        work = rng.randint(40, 300) if triage != "5" else rng.randint(15, 90)
        if obi:
            work += rng.randint(6 * 60, 30 * 60)
        decision = seen + timedelta(minutes=work)
        boarding = 0
        if outcome == "3":
            boarding = round(rng.lognormvariate(math.log(90), 0.9))
        outcome_ts = decision + timedelta(minutes=boarding)
        if outcome == "7":
            outcome_ts = triage_ts + timedelta(minutes=rng.randint(30, 240))
            decision = outcome_ts
        if outcome_ts > DATA_END:
            return None
        complaint_key = (
            CASE_COMPLAINT.get(WARD[case.ward].discipline, "altro")
            if case
            else (
                rng.choice(("trauma", "trauma", "febbre", "dolore addominale", "altro", "gastro"))
            )
        )
        if unit == "OST" and case is None:
            complaint_key = "altro"
        episode_id = self.episode(patient, "PS", arrival)
        visit_id = self.w.add(
            "adt.ed_visit",
            episode_id,
            patient.patient_id,
            unit,
            self.pick((("AMB", 25 if triage in "12" else 8), ("AUT", 80))),
            ts(arrival),
            COMPLAINTS[complaint_key] if rng.random() < 0.9 else None,
            triage,
            ts(triage_ts),
            ts(first_visit) if first_visit else None,
            int(obi),
            ts(decision),
            outcome,
            ts(outcome_ts),
            None,
        )
        self.close_episode(episode_id, "PS", outcome_ts)
        if outcome == "5":
            patient.death = outcome_ts.date()
        visit = Visit(
            visit_id,
            episode_id,
            patient,
            arrival,
            unit,
            triage,
            triage_ts,
            first_visit,
            obi,
            decision,
            outcome,
            outcome_ts,
        )
        self.visits.append(visit)
        if rng.random() < (0.6 if triage in "123" else 0.2):
            self.lab_request(
                episode_id,
                patient,
                "PS",
                None,
                triage_ts + timedelta(minutes=rng.randint(5, 30)),
                "E" if triage == "1" else "U",
                ("HB", "WBC", "PLT", "CREA", "NA", "K", "GLU", "PCR")
                + (("TNI",) if complaint_key == "dolore toracico" else ()),
                limit=outcome_ts,
            )
        return visit

    def admission(
        self,
        patient: Patient,
        case: Case,
        start: datetime,
        *,
        visit: Visit | None = None,
        admission_type: str | None = None,
        source: str | None = None,
    ) -> datetime | None:
        """One admission (ordinary or day hospital) with its episode, stays, coding, lab tests
        and drugs. Returns the discharge time, None while still open on DATA_DATE."""
        rng = self.rng
        if start > DATA_END:
            raise ValueError(f"admission of patient {patient.patient_id} after DATA_DATE: {start}")
        episode_id = visit.episode_id if visit else self.episode(patient, "RIC", start)
        ward = WARD[case.ward]
        if (
            ward.code == "00801"
            and start.date() < MERGE_DATE - timedelta(days=30)
            and rng.random() < 0.5
        ):
            admitting = WARD["05001"]  # the coronary unit, until the merge
        elif (
            visit is not None
            and case.regime == "1"
            and ward.code in ("02601", "02101", "03201")
            and rng.random() < 0.35
        ):
            admitting = WARD["05101"]  # first a night in emergency medicine
        else:
            admitting = ward
        if admission_type is None:
            if visit is not None:
                admission_type = "3" if case.name == "psicosi TSO" else "2"
            else:
                admission_type = "4" if rng.random() < 0.35 else "1"
        if source is None:
            if visit is not None:
                source = "2"
            elif admission_type == "2":
                source = self.pick((("3", 5), ("4", 2), ("9", 1)))
            else:
                source = self.pick((("1", 70), ("6", 30)))
        accesses: int | None = None
        if case.regime == "1":
            nights = rng.randint(*case.los)
            if rng.random() < 0.05:
                nights = DRG[case.drg].threshold + rng.randint(1, 12)  # beyond the DRG threshold
            elif rng.random() < 0.01:
                nights = 0  # the same-day ordinary admission the Evidence asks to flag
            end_day = start.date() + timedelta(days=nights)
            died = rng.random() < case.died
            discharge = self.at(end_day, 0, 24) if died else self.at(end_day, 9, 13)
            if discharge <= start:
                discharge = start + timedelta(hours=rng.randint(3, 8))
        else:
            accesses = rng.randint(*case.los)
            gap = 21 if case.ward == "06401" else 7
            end_day = start.date() + timedelta(
                days=gap * (accesses - 1) + rng.randint(0, 2) * (accesses > 1)
            )
            discharge = self.at(end_day, 13, 17)
            died = False
        still_open = discharge > DATA_END
        if still_open:
            died = False
        mode: str | None = None
        if not still_open:
            if died:
                mode = "1"
            elif case.regime == "2":
                mode = "2"
            else:
                age = age_on(patient.birth, start.date())
                weights = [("2", 78.0), ("5", 2.0), ("6", 2.5)]
                if age >= 70:
                    weights += [("3", 7.0), ("9", 6.0), ("4", 1.5)]
                if case.ward in ("03601", "03201"):
                    weights += [("8", 14.0)]
                mode = self.pick(weights)
        admission_id = self.w.next_id("adt.admission")
        # Ward stays: admitting ward, maybe intensive care, then the case's ward.
        path: list[tuple[Ward, datetime]] = [(admitting, start)]
        if case.regime == "1":
            span = (discharge - start).total_seconds() / 3600
            moment = start
            if admitting is not ward and span > 30:
                moment = start + timedelta(hours=rng.randint(14, 30))
                path.append((ward, moment))
            if rng.random() < case.icu and span > 72:
                into = moment + timedelta(hours=rng.randint(4, 24))
                back = into + timedelta(hours=rng.randint(8, 72))
                if back < discharge - timedelta(hours=12):
                    path += [(WARD["04901"], into), (ward, back)]
            elif admitting is not ward and len(path) == 1:
                pass  # too short a stay to move: discharged from the admitting ward
        path = [(w, t) for w, t in path if t < min(discharge, DATA_END)] or path[:1]
        discharging = path[-1][0]
        self.w.add(
            "adt.admission",
            episode_id,
            patient.patient_id,
            case.regime,
            admission_type,
            source,
            ts(start),
            start.date().isoformat(),
            admitting.ward_id,
            None if still_open else ts(discharge),
            None if still_open else discharge.date().isoformat(),
            None if still_open else discharging.ward_id,
            mode,
            accesses,
        )
        for seq, (stay_ward, since) in enumerate(path, start=1):
            until = path[seq][1] if seq < len(path) else (None if still_open else discharge)
            if seq > 1:
                self.w.add(
                    "adt.transfer",
                    admission_id,
                    path[seq - 2][0].ward_id,
                    stay_ward.ward_id,
                    ts(since),
                )
            self.w.add(
                "adt.ward_stay",
                admission_id,
                seq,
                stay_ward.ward_id,
                ts(since),
                ts(until) if until else None,
            )
        if visit is not None:
            old = self.w.rows["adt.ed_visit"][visit.visit_id - 1]
            self.w.rows["adt.ed_visit"][visit.visit_id - 1] = (*old[:-1], admission_id)
            visit.admission_id = admission_id
        self.close_episode(episode_id, "RIC", None if still_open else discharge)
        if died:
            patient.death = discharge.date()
        stay = Stay(
            admission_id,
            episode_id,
            patient,
            case,
            start,
            None if still_open else discharge,
            admitting,
            discharging,
            admission_type,
            mode,
            accesses,
            rng.choice(case.dx),
        )
        self.stays[admission_id] = stay
        if not still_open:
            self.code_stay(stay)
        self.stay_labs(stay)
        self.stay_drugs(stay)
        return None if still_open else discharge

    def code_stay(self, stay: Stay) -> None:
        """Diagnoses, interventions, DRG and SDO of a closed admission."""
        rng = self.rng
        case, patient, start, episode_id = stay.case, stay.patient, stay.start, stay.episode_id
        discharge = stay.discharge
        assert discharge is not None
        principal = stay.dx
        codes = [principal]
        if case.ward == "06401":
            codes.append(rng.choice(CANCERS))
        for condition in patient.conditions:
            if len(codes) < 6 and rng.random() < 0.7:
                codes.append(SECONDARY[condition])
        for rank, code in enumerate(dict.fromkeys(codes), start=1):
            self.w.add("clinical.diagnosis", episode_id, rank, code)
        for rank, proc in enumerate(case.proc, start=1):
            day = start.date() + timedelta(
                days=min(1 if case.regime == "1" else 0, (discharge.date() - start.date()).days)
            )
            self.w.add(
                "clinical.intervention",
                episode_id,
                rank,
                proc,
                day.isoformat(),
                f"OP{rng.randrange(10_000, 99_999)}",
            )
        drg = DRG[case.drg]
        self.w.add(
            "clinical.drg",
            episode_id,
            drg.code,
            drg.description,
            drg.mdc,
            drg.kind,
            drg.threshold,
            "24",
            (discharge.date() + timedelta(days=rng.randint(1, 4))).isoformat(),
        )
        # SDO: closed by the discharging ward within 3 working days, sent by the 15th of the
        # next month; December 2024's are closed but not yet sent on DATA_DATE.
        closed = discharge.date() + timedelta(days=rng.randint(0, 4))
        month = date(discharge.year + discharge.month // 12, discharge.month % 12 + 1, 1)
        sent = month.replace(day=rng.randint(10, 15))
        if closed > DATA_DATE:
            status, closed_value, transmission, reject = "APERTA", None, None, None
        elif sent > DATA_DATE:
            status, closed_value, transmission, reject = "CHIUSA", closed.isoformat(), None, None
        elif month.year == 2024 and month.month == 12 and rng.random() < 0.04:
            status, closed_value, transmission = (
                "SCARTATA",
                closed.isoformat(),
                month.strftime("%Y-%m"),
            )
            reject = rng.choice(("E012", "E027", "E101"))
        else:
            status, closed_value, transmission, reject = (
                "INVIATA",
                closed.isoformat(),
                month.strftime("%Y-%m"),
                None,
            )
        self.w.add(
            "clinical.sdo",
            stay.admission_id,
            episode_id,
            status,
            closed_value,
            transmission,
            reject,
        )

    # -- laboratory --------------------------------------------------------------------------

    def lab_request(
        self,
        episode_id: int,
        patient: Patient,
        origin: str,
        ward: Ward | None,
        when: datetime,
        priority: str,
        panel: Sequence[str],
        *,
        limit: datetime | None = None,
    ) -> None:
        rng = self.rng
        if when > DATA_END or not panel:
            return
        request_id = self.w.add(
            "lab.request",
            episode_id,
            patient.patient_id,
            origin,
            ward.ward_id if ward else None,
            ts(when),
            priority,
        )
        tests = list(panel)
        if len(tests) > 3:  # blood count and potassium, and one or two more of the panel
            core = [t for t in tests if t in ("HB", "K")]
            rest = [t for t in tests if t not in core]
            tests = core + rng.sample(rest, min(len(rest), 3 - len(core) + rng.randint(0, 1)))
        if "diabete" in patient.conditions and rng.random() < 0.3:
            tests.append("HBA1C")
        if "fibrillazione" in patient.conditions and rng.random() < 0.4:
            tests.append("INR")
        if origin == "AMB" and rng.random() < 0.2:
            tests.append("HCV")
        if origin == "RIC" and rng.random() < 0.08:
            tests.append(rng.choice(("URINOC", "EMOC")))
        age = age_on(patient.birth, when.date())
        for code in tests:
            self.lab_result(request_id, patient, TEST[code], when, priority, age)

    def lab_result(
        self,
        request_id: int,
        patient: Patient,
        test: Test,
        requested: datetime,
        priority: str,
        age: int,
    ) -> None:
        rng = self.rng
        turnaround = {"E": (10, 35), "U": (25, 70), "R": (120, 600), "P": (60, 360)}[priority]
        if test.sector == "microbiologia":
            turnaround = (24 * 60, 72 * 60)
        validated: datetime | None = requested + timedelta(minutes=rng.randint(*turnaround))
        status = self.pick((("F", 96), ("C", 1.5), ("X", 0.5), ("P", 2)))
        if validated is not None and validated > DATA_END:
            status, validated = "P", None
        if status == "P":
            validated = None
        low, high = test.low, test.high
        if test.code == "HB":
            low, high = (13.0, 17.0) if patient.sex == "1" else (12.0, 16.0)
            if age < 14:
                low, high = 11.0, 14.5
        if test.code == "CREA":
            low, high = (0.7, 1.3) if patient.sex == "1" else (0.5, 1.1)
            if age < 14:
                low, high = 0.2, 0.7
        value: float | None = None
        text: str | None
        comparator: str | None = None
        flag: str | None
        if test.code == "HCV":
            positive = rng.random() < 0.03
            text, flag = ("Positivo", "A") if positive else ("Negativo", None)
        elif test.sector == "microbiologia":
            if status == "P":
                text, flag = "Coltura in corso", None
            elif rng.random() < 0.3:
                text, flag = "Positiva: Escherichia coli > 100.000 UFC/mL", "A"
            else:
                text, flag = "Negativa", None
        else:
            assert low is not None and high is not None
            mid, spread = (low + high) / 2, (high - low) / 2
            skew = 0.0
            if test.code in ("GLU", "HBA1C") and "diabete" in patient.conditions:
                skew = 1.6 if test.code == "GLU" else 2.8
            if test.code == "CREA" and "irc" in patient.conditions:
                skew = 3.0
            if test.code in ("PCR", "WBC") and rng.random() < 0.35:
                skew = 2.5
            if test.code == "INR" and "fibrillazione" in patient.conditions:
                skew = 5.0
            if test.code == "TNI" and rng.random() < 0.3:
                skew = 6.0
            value = mid + spread * (skew + rng.gauss(0, 0.75))
            if test.code == "K" and rng.random() < 0.03:
                value = rng.choice((2.5, 2.6, 6.4, 6.7))  # critical potassium
            value = max(value, 0.0)
            value = round(value, test.decimals)
            if test.code == "PCR" and value < 0.5:
                value, comparator = 0.5, "<"
            text = (f"<{value}" if comparator else f"{value}").replace(".", ",")
            if test.decimals == 0:
                value = float(int(value))
                text = f"<{int(value)}" if comparator else f"{int(value)}"
            if test.code == "K" and rng.random() < 0.01:
                value, text, comparator = None, "campione emolizzato", None
            if value is None:
                flag = None
            elif test.crit_low is not None and value < test.crit_low:
                flag = "LL"
            elif test.crit_high is not None and value > test.crit_high:
                flag = "HH"
            elif value < low:
                flag = "L"
            elif value > high:
                flag = "H"
            else:
                flag = "N"
        self.w.add(
            "lab.result",
            request_id,
            patient.patient_id,
            test.code,
            test.loinc,
            value,
            text,
            comparator,
            test.unit,
            low,
            high,
            flag,
            status,
            ts(validated) if validated else None,
        )

    def stay_labs(self, stay: Stay) -> None:
        rng = self.rng
        case, patient, start, episode_id = stay.case, stay.patient, stay.start, stay.episode_id
        end = stay.discharge or DATA_END
        ward = stay.admitting
        if case.regime == "2":
            accesses = stay.accesses or 1
            for n in range(min(accesses, 2)):
                when = start + timedelta(
                    days=(21 if case.ward == "06401" else 7) * n, minutes=rng.randint(0, 40)
                )
                if when < end:
                    self.lab_request(
                        episode_id, patient, "RIC", WARD[case.ward], when, "R", case.panel
                    )
            return
        self.lab_request(
            episode_id,
            patient,
            "RIC",
            ward,
            start + timedelta(minutes=rng.randint(20, 120)),
            "U" if stay.admission_type in ("2", "3") else "R",
            case.panel,
        )
        day = start.date() + timedelta(days=2)
        while datetime(day.year, day.month, day.day, 7) < end - timedelta(hours=12):
            if rng.random() < 0.25:
                self.lab_request(
                    episode_id,
                    patient,
                    "RIC",
                    WARD[case.ward],
                    self.at(day, 6, 8),
                    "R",
                    case.panel,
                )
            day += timedelta(days=rng.randint(3, 5))

    # -- pharmacy ----------------------------------------------------------------------------

    def stay_drugs(self, stay: Stay) -> None:
        rng = self.rng
        case, patient, start, discharge = stay.case, stay.patient, stay.start, stay.discharge
        admission_id = stay.admission_id
        end = discharge or DATA_END
        ward = WARD[case.ward]
        keys = rng.sample(case.drugs, min(rng.randint(1, 2), len(case.drugs)))
        if "diabete" in patient.conditions and case.regime == "1":
            keys.append("INSULINA")
        if (
            "fibrillazione" in patient.conditions
            and case.regime == "1"
            and "ENOXAPARINA" not in keys
        ):
            keys.append(rng.choice(("APIXABAN", "WARFARIN")))
        adult = age_on(patient.birth, start.date()) >= 18
        if case.regime == "1" and adult and "ENOXAPARINA" not in keys and rng.random() < 0.4:
            keys.append("ENOXAPARINA")  # thromboprophylaxis of the adult inpatient
        if case.regime == "1" and rng.random() < 0.15:
            keys.append("DOMICILIARE")
        if case.regime == "2" and case.ward == "06401":
            chemo = CHEMO[patient.patient_id % len(CHEMO)]
            for n in range(stay.accesses or 1):
                when = start + timedelta(days=21 * n, hours=1, minutes=rng.randint(0, 50))
                if when < end:
                    self.prescription(
                        admission_id,
                        patient,
                        ward,
                        DRUG[chemo],
                        when,
                        when + timedelta(hours=2),
                        discharge,
                    )
            return
        for key in keys:
            if key == "CHEMO":
                key = CHEMO[patient.patient_id % len(CHEMO)]
            drug = DRUG[key]
            begin = start + timedelta(minutes=rng.randint(30, 240))
            if begin >= end:
                continue
            days = 1 if drug.frequency == "UNA" else rng.randint(1, 3)
            planned_end = begin + timedelta(days=days)
            if discharge is None and drug.frequency not in ("UNA", "AB") and rng.random() < 0.7:
                planned_end = DATA_END + timedelta(days=days)  # still running on DATA_DATE
            self.prescription(admission_id, patient, ward, drug, begin, planned_end, discharge)

    def prescription(
        self,
        admission_id: int,
        patient: Patient,
        ward: Ward,
        drug: Drug,
        begin: datetime,
        planned_end: datetime,
        discharge: datetime | None,
    ) -> None:
        rng = self.rng
        end = min(planned_end, discharge or planned_end)
        status = "TER"
        if discharge is None and planned_end > DATA_END:
            status = "SOS" if rng.random() < 0.1 else "ATT"
        elif rng.random() < 0.03:
            status = "ANN"
        elif rng.random() < 0.1 and end - begin > timedelta(hours=30):
            status = "INT"
            end = begin + (end - begin) / 2
        prescription_id = self.w.add(
            "pharmacy.prescription",
            admission_id,
            patient.patient_id,
            ward.ward_id,
            DRUGS.index(drug) + 1,
            drug.dose,
            drug.unit,
            drug.route,
            drug.frequency,
            ts(begin),
            None if status in ("ATT", "SOS") else ts(end),
            status,
        )
        if status == "ANN":
            return
        until = min(end, DATA_END) if status not in ("ATT", "SOS") else DATA_END
        planned: list[datetime] = []
        if drug.frequency in ("UNA", "CONT"):
            planned = [begin]
        elif drug.frequency == "AB":
            planned = sorted(
                begin + timedelta(hours=rng.randint(1, 40)) for _ in range(rng.randint(0, 2))
            )
        else:
            day = begin.date()
            while datetime(day.year, day.month, day.day) <= until:
                for hour in SCHEDULE[drug.frequency]:
                    moment = datetime(day.year, day.month, day.day, hour)
                    if begin <= moment <= until:
                        planned.append(moment)
                day += timedelta(days=1)
        for moment in planned:
            if moment > until:
                continue
            outcome = self.pick((("S", 92), ("R", 2), ("D", 1.5), ("C", 1), ("M", 1.5), ("P", 2)))
            given: datetime | None = None
            note: str | None = None
            if outcome == "S":
                given = moment + timedelta(minutes=rng.randint(-15, 40))
            elif outcome == "P":
                given = moment + timedelta(minutes=rng.randint(60, 180))
                note = "Posticipata: paziente in diagnostica"
            elif outcome == "R":
                note = "Il paziente rifiuta la terapia"
            elif outcome == "D":
                note = "Paziente fuori reparto per esami"
            elif outcome == "M":
                note = "Farmaco non disponibile in reparto, richiesto alla farmacia"
            if given is not None and given > DATA_END:
                continue
            self.w.add(
                "pharmacy.administration",
                prescription_id,
                ts(moment),
                ts(given) if given else None,
                drug.dose if given else None,
                outcome,
                note,
            )

    # -- patients' histories -----------------------------------------------------------------

    def eligible(self, patient: Patient, day: date) -> list[Case]:
        age = age_on(patient.birth, day)
        return [
            c
            for c in CASES
            if c.ages[0] <= age <= c.ages[1] and (not c.female_only or patient.sex == "2")
        ]

    def history(self, patient: Patient) -> None:
        rng = self.rng
        # Every history is already going on at START (its first visit within about one mean
        # gap), so that the activity is steady over the years instead of growing.
        day = START + timedelta(days=rng.randrange(240))
        repeat = rng.random() < 0.35  # a frail patient comes back within weeks
        while day <= DATA_DATE and patient.death is None:
            end = self.path(patient, day)
            if end is None:
                return
            gap = rng.randint(3, 30) if repeat and rng.random() < 0.5 else rng.randint(45, 420)
            day = end.date() + timedelta(days=gap)

    def path(self, patient: Patient, day: date) -> datetime | None:
        """One care path starting on `day`; returns when it ended (None: past DATA_DATE)."""
        rng = self.rng
        if patient.oncology:
            return self.oncology_course(patient, day)
        kind = self.pick((("ed", 48), ("admission", 34), ("amb", 18)))
        if kind == "amb":
            when = self.at(day, 7, 11)
            episode_id = self.episode(patient, "AMB", when)
            self.lab_request(
                episode_id,
                patient,
                "AMB",
                None,
                when,
                rng.choice("PR"),
                rng.sample(("HB", "WBC", "PLT", "CREA", "NA", "K", "GLU", "PCR"), 3),
            )
            done = when + timedelta(hours=rng.randint(3, 8))
            self.close_episode(episode_id, "AMB", min(done, DATA_END))
            return done
        cases = self.eligible(patient, day)
        if kind == "ed" or not cases:
            visit = self.ed_visit(patient, self.arrival_time(day), None)
            return visit.outcome_ts if visit else None
        case = rng.choices(cases, [c.weight for c in cases])[0]
        if rng.random() < case.urgent:
            visit = self.ed_visit(patient, self.arrival_time(day), case)
            if visit is None:
                return None
            end = self.admission(patient, case, visit.outcome_ts, visit=visit)
        else:
            end = self.admission(patient, case, self.at(day, 7, 10))
        if (
            end is not None
            and case.name in ("parto vaginale", "parto cesareo")
            and patient.death is None
        ):
            mother = self.stays[max(self.stays)]
            born = self.new_patient(
                birth=max(mother.start.date(), end.date() - timedelta(days=rng.randint(1, 3)))
            )
            stay_from = datetime.combine(born.birth, datetime.min.time()) + timedelta(
                hours=rng.randint(1, 22)
            )
            self.admission(born, NEWBORN, stay_from, admission_type="2", source="9")
        if end is not None and case.regime == "2" and rng.random() < 0.06:
            # A day hospital that must go on overnight: closed with mode 7, then an ordinary
            # admission opens the same day from "another regime of the same institute".
            row = self.w.rows["adt.admission"][-1]
            self.w.rows["adt.admission"][-1] = (*row[:-2], "7", row[-1])
            self.stays[max(self.stays)].mode = "7"
            follow = rng.choice([c for c in cases if c.regime == "1"] or [CASE["polmonite"]])
            end = self.admission(
                patient, follow, end + timedelta(minutes=30), admission_type="2", source="5"
            )
        return end

    def oncology_course(self, patient: Patient, day: date) -> datetime | None:
        """Cycles of chemotherapy in day hospital, sometimes given as short ordinary stays every
        three weeks (excluded from 30-day readmissions), and radiotherapy."""
        rng = self.rng
        end: datetime | None = None
        for _ in range(rng.randint(1, 3)):
            if day > DATA_DATE:
                return None
            choice = self.pick((("dh", 60), ("ro", 30), ("radio", 10)))
            if choice == "dh":
                end = self.admission(patient, ONCO_DH, self.at(day, 8, 9))
            elif choice == "ro":
                end = None
                for _ in range(rng.randint(2, 4)):
                    if day > DATA_DATE:
                        return None
                    end = self.admission(patient, ONCO_RO, self.at(day, 7, 9))
                    if end is None:
                        return None
                    day = end.date() + timedelta(days=rng.randint(15, 20))
            else:
                end = self.admission(patient, RADIO_RO, self.at(day, 7, 9))
            if end is None:
                return None
            day = end.date() + timedelta(days=rng.randint(14, 40))
        return end

    # -- the whole warehouse -----------------------------------------------------------------

    def generate(self) -> Warehouse:
        rng = self.rng
        w = self.w
        for ward in WARDS:
            w.add(
                "adt.ward",
                ward.code,
                ward.name,
                ward.discipline,
                "2010-01-01",
                ward.active_to.isoformat() if ward.active_to else None,
            )
        for t in TESTS:
            w.add(
                "lab.test_catalog",
                t.code,
                t.name,
                t.loinc,
                t.sector,
                t.unit,
                t.crit_low,
                t.crit_high,
            )
        for n, d in enumerate(DRUGS, start=1):
            aic = f"0{(n * 7_919_113) % 100_000_000:08d}" if d.atc else None
            w.add("pharmacy.drug", aic, d.name, d.ingredient, d.atc, d.price, int(d.high_cost))
        base = [self.new_patient() for _ in range(PATIENTS)]
        for patient in base:
            patient.oncology = age_on(patient.birth, START) >= 35 and rng.random() < 0.05
        for patient in base:
            self.history(patient)
        for patient in self.patients:
            first = rng.choice(FIRST_NAMES["1" if patient.sex == "1" else "2"])
            w.add(
                "clinical.patient",
                f"PSN{rng.getrandbits(48):012X}",
                rng.choice(LAST_NAMES),
                first,
                patient.sex,
                patient.birth.isoformat(),
                rng.choice(MUNICIPALITIES),
                self.pick([(c, float(n)) for c, n in CITIZENSHIPS]),
                patient.death.isoformat() if patient.death else None,
            )
        self.dwh()
        return w

    def dwh(self) -> None:
        rng = self.rng
        w = self.w
        first, last = CALENDAR
        holiday = set().union(*(holidays(y) for y in range(first.year, last.year + 1)))
        day = first
        while day <= last:
            w.add(
                "dwh.dim_date",
                date_key(day),
                day.isoformat(),
                day.year,
                (day.month - 1) // 3 + 1,
                day.month,
                MONTHS[day.month - 1],
                day.day,
                day.isoweekday(),
                DAYS[day.weekday()],
                int(day.weekday() >= 5),
                int(day in holiday),
            )
            day += timedelta(days=1)
        versions: dict[int, list[tuple[int, date, date | None]]] = {}
        for ward_id, name, beds, valid_from, valid_to in WARD_VERSIONS:
            ward = WARDS[ward_id - 1]
            key = w.add(
                "dwh.dim_ward",
                ward_id,
                ward.code,
                name,
                ward.discipline,
                DISCIPLINES[ward.discipline],
                ward.department,
                beds,
                valid_from.isoformat(),
                valid_to.isoformat() if valid_to else None,
                int(valid_to is None),
            )
            versions.setdefault(ward_id, []).append((key, valid_from, valid_to))

        def ward_key(ward: Ward, on: date) -> int:
            for key, valid_from, valid_to in versions[ward.ward_id]:
                if valid_from <= on and (valid_to is None or on <= valid_to):
                    return key
            raise ValueError(f"dwh.dim_ward: no version of ward {ward.code} on {on}")

        drg_keys: dict[tuple[str, int], int] = {}
        for drg in DRGS:
            for year in WEIGHT_YEARS:
                weight = drg_weight(drg, year)
                drg_keys[(drg.code, year)] = w.add(
                    "dwh.dim_drg",
                    drg.code,
                    drg.description,
                    drg.mdc,
                    drg.kind,
                    year,
                    weight,
                    drg.threshold,
                    round(weight * EURO_PER_WEIGHT, 2),
                )
        keys = list(range(100_001, 100_001 + len(self.patients)))
        rng.shuffle(keys)  # the pseudonymous key reveals nothing of the operational id
        patient_key = {p.patient_id: keys[i] for i, p in enumerate(self.patients)}
        for p in sorted(self.patients, key=lambda p: patient_key[p.patient_id]):
            sex = {"1": "M", "2": "F"}.get(p.sex, "N")
            w.add(
                "dwh.dim_patient",
                patient_key[p.patient_id],
                p.birth.year,
                sex,
                int(p.death is not None),
            )
        flags = readmission_flags(self.stays.values())
        admission_key: dict[int, int] = {}
        closed = sorted(
            (s for s in self.stays.values() if s.discharge is not None),
            key=lambda s: (s.discharge, s.admission_id),
        )
        for stay in closed:
            assert stay.discharge is not None
            start, discharge, case = stay.start, stay.discharge, stay.case
            drg = DRG[case.drg]
            admission_key[stay.admission_id] = w.add(
                "dwh.fact_admission",
                stay.admission_id,
                patient_key[stay.patient.patient_id],
                date_key(start.date()),
                date_key(discharge.date()),
                ward_key(stay.admitting, start.date()),
                ward_key(stay.discharging, discharge.date()),
                drg_keys[(drg.code, discharge.year)],
                case.regime,
                stay.admission_type,
                stay.mode,
                age_on(stay.patient.birth, start.date()),
                (discharge.date() - start.date()).days if case.regime == "1" else None,
                stay.accesses,
                drg_weight(drg, discharge.year),
                int(stay.admission_id in flags),
            )
        for visit in self.visits:
            # Negative waits (times typed by hand) are set to zero by the nightly load.
            wait = None
            if visit.first_visit is not None:
                wait = max(0, minutes(visit.first_visit, visit.triage_ts))
            boarding = minutes(visit.outcome_ts, visit.decision) if visit.outcome == "3" else None
            w.add(
                "dwh.fact_ed_visit",
                visit.visit_id,
                patient_key[visit.patient.patient_id],
                date_key(visit.arrival.date()),
                ts(visit.arrival),
                visit.unit,
                visit.triage,
                wait,
                minutes(visit.outcome_ts, visit.arrival),
                int(visit.obi),
                visit.outcome,
                boarding,
                admission_key.get(visit.admission_id) if visit.admission_id else None,
            )
        # The nightly load: starts at 01:30, ends by 05:00, loads the previous day. One night
        # failed and was run again in the morning.
        day = START
        while day <= DATA_DATE:
            night = day + timedelta(days=1)
            done = datetime(night.year, night.month, night.day, 4, 0) + timedelta(
                minutes=rng.randint(0, 55)
            )
            if day == date(2024, 6, 11):
                w.add("dwh.load_log", ts(done - timedelta(hours=1)), day.isoformat(), "KO", 0)
                done = datetime(night.year, night.month, night.day, 7, 40)
            w.add("dwh.load_log", ts(done), day.isoformat(), "OK", rng.randint(1_800, 4_200))
            day = night


def readmission_flags(stays: Iterable[Stay]) -> set[int]:
    """dwh.fact_admission.readmitted_within_30d, on the index admission: an ordinary admission
    followed by another ordinary admission of the same patient 0-30 days after its discharge.
    Planned chemotherapy (V5811) never counts as the readmission; planned radiotherapy (V5801)
    not from 2024-07-01 (the readmission rules in force since then)."""
    by_patient: dict[int, list[Stay]] = {}
    for stay in stays:
        if stay.case.regime == "1":
            by_patient.setdefault(stay.patient.patient_id, []).append(stay)
    flagged: set[int] = set()
    for ordinary in by_patient.values():
        ordinary.sort(key=lambda s: (s.start, s.admission_id))
        for index, following in pairwise(ordinary):
            if index.discharge is None:
                continue
            gap = (following.start.date() - index.discharge.date()).days
            planned = following.admission_type in ("1", "4")
            excluded = planned and (
                following.dx == "V5811"
                or (following.dx == "V5801" and following.start.date() >= date(2024, 7, 1))
            )
            if 0 <= gap <= 30 and not excluded:
                flagged.add(index.admission_id)
    return flagged


# ============================================================================================
# Writing the files


def _columns(connection: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]


def write(target: Path, rows: dict[str, list[tuple[object, ...]]]) -> dict[str, Path]:
    target.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for schema in SCHEMAS:
        path = target / f"{schema}.sqlite"
        partial = path.with_suffix(".sqlite.partial")
        partial.unlink(missing_ok=True)
        connection = sqlite3.connect(partial)
        try:
            connection.execute("PRAGMA foreign_keys = ON")
            # A fresh file renamed into place once complete: no journal needed.
            connection.execute("PRAGMA journal_mode = OFF")
            connection.execute("PRAGMA synchronous = OFF")
            connection.executescript(DDL[schema])
            tables = [
                r[0]
                for r in connection.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid"
                )
            ]
            with connection:
                for table in tables:
                    data = rows.get(f"{schema}.{table}", [])
                    cols = _columns(connection, table)
                    # Rows without their first column get it numbered in order (the ids
                    # Generator.add returned).
                    if data and len(data[0]) == len(cols) - 1:
                        data = [(n, *row) for n, row in enumerate(data, start=1)]
                    marks = ", ".join("?" * len(cols))
                    connection.executemany(f"INSERT INTO {table} VALUES ({marks})", data)
            problems = connection.execute("PRAGMA foreign_key_check").fetchall()
            if problems:
                raise RuntimeError(f"{path}: foreign keys violated: {problems[:5]}")
        finally:
            connection.close()
        partial.replace(path)
        paths[schema] = path
    return paths


def build(target: Path) -> dict[str, Path]:
    """Write the five schema files under `target` (replacing them); returns schema -> path."""
    return write(target, Generator().generate().rows)


def row_counts(paths: dict[str, Path]) -> dict[str, int]:
    """`schema.table` -> rows, for the files `build` wrote."""
    counts: dict[str, int] = {}
    for schema, path in paths.items():
        connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            names = [
                r[0]
                for r in connection.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                )
            ]
            for name in names:
                (count,) = connection.execute(f'SELECT count(*) FROM "{name}"').fetchone()
                counts[f"{schema}.{name}"] = int(count)
        finally:
            connection.close()
    return counts


def main(argv: Iterable[str] | None = None, out: Callable[[str], None] = print) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    target = Path(args[0]) if args else WORKSPACE / "warehouse"
    paths = build(target)
    counts = row_counts(paths)
    out(
        f"wrote {len(paths)} SQLite files under {target}: {len(counts)} tables, "
        f"{sum(counts.values())} rows"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
