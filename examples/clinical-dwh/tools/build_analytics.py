"""Build the demo's analytics store: warehouse/analytics.sqlite, attached as schema `analytics`.

The seed's third level is a read-only copy refreshed every night, read only through VIEWS that
hold the business definitions once ("ricovero indice", "abbandono", "valore critico", "costo di
un farmaco ad alto costo"). This tool is that nightly refresh for the demo: it reads the
synthetic warehouse written by tools/build_warehouse.py (the five schema files, attached
read-only) and writes one SQLite file with

- base tables in Italian (`ricovero`, `accesso_ps`, `esame`, `somministrazione`, `reparto`,
  `giornate_degenza`, `giornate_letto`, `caricamento`), copied or aggregated from the
  warehouse's rows: never read by a catalog query;
- views `v_*`, the only readable surface of the catalog (analytics/queries/*.yaml): the store is
  opened views-only by Thoth;
- `v_data_date`, the date the data are current to, from the load log (the last nightly load
  that ended OK).

Deterministic: the warehouse is, and every copy is ordered. Standard library only.

    python tools/build_analytics.py [WAREHOUSE_DIR] [TARGET_FILE]
    # default: warehouse/ next to thoth.toml, warehouse/analytics.sqlite

The warehouse must be built first (python tools/build_warehouse.py).
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parents[1]
WAREHOUSE_SCHEMAS = ("adt", "clinical", "lab", "pharmacy", "dwh")

# -- base tables: what the nightly refresh copies (never read by a catalog query) ------------

TABLES = """
CREATE TABLE reparto (
    id_reparto INTEGER PRIMARY KEY,
    codice TEXT NOT NULL UNIQUE,
    nome TEXT NOT NULL,
    disciplina TEXT NOT NULL,
    dipartimento TEXT NOT NULL,
    attivo_fino_al DATE
);
CREATE TABLE ricovero (
    id_ricovero INTEGER PRIMARY KEY,
    codice_paziente TEXT NOT NULL,
    data_ammissione DATE NOT NULL,
    data_dimissione DATE NOT NULL,
    id_reparto_dimissione INTEGER NOT NULL REFERENCES reparto (id_reparto),
    regime TEXT NOT NULL CHECK (regime IN ('ordinario', 'day hospital')),
    tipo_ricovero TEXT NOT NULL,
    modalita_dimissione TEXT NOT NULL,
    codice_modalita_dimissione TEXT NOT NULL,
    eta INTEGER NOT NULL,
    degenza_giorni INTEGER,
    accessi_dh INTEGER,
    drg TEXT NOT NULL,
    drg_descrizione TEXT NOT NULL,
    tipo_drg TEXT NOT NULL CHECK (tipo_drg IN ('medico', 'chirurgico')),
    peso_drg REAL NOT NULL,
    soglia_degenza_drg INTEGER NOT NULL,
    tariffa_euro REAL NOT NULL,
    riammesso_30_giorni INTEGER NOT NULL CHECK (riammesso_30_giorni IN (0, 1))
);
CREATE TABLE accesso_ps (
    id_accesso INTEGER PRIMARY KEY,
    data_arrivo DATE NOT NULL,
    ora_arrivo INTEGER NOT NULL,
    struttura TEXT NOT NULL,
    codice_triage TEXT NOT NULL,
    ordine_triage INTEGER NOT NULL,
    attesa_minuti INTEGER,
    permanenza_minuti INTEGER NOT NULL,
    obi INTEGER NOT NULL CHECK (obi IN (0, 1)),
    codice_esito TEXT NOT NULL,
    esito TEXT NOT NULL,
    boarding_minuti INTEGER
);
CREATE TABLE esame (
    id_risultato INTEGER PRIMARY KEY,
    data_richiesta DATE NOT NULL,
    esame TEXT NOT NULL,
    settore TEXT NOT NULL,
    provenienza TEXT NOT NULL,
    priorita TEXT NOT NULL,
    valore REAL,
    flag_anomalia TEXT,
    stato TEXT NOT NULL
);
CREATE TABLE somministrazione (
    id_somministrazione INTEGER PRIMARY KEY,
    data_somministrazione DATE NOT NULL,
    id_reparto INTEGER NOT NULL REFERENCES reparto (id_reparto),
    farmaco TEXT NOT NULL,
    principio_attivo TEXT,
    atc TEXT,
    alto_costo INTEGER NOT NULL CHECK (alto_costo IN (0, 1)),
    prezzo_unitario_euro REAL
);
CREATE TABLE giornate_degenza (
    id_reparto INTEGER NOT NULL REFERENCES reparto (id_reparto),
    anno INTEGER NOT NULL,
    mese INTEGER NOT NULL,
    giornate INTEGER NOT NULL,
    PRIMARY KEY (id_reparto, anno, mese)
);
CREATE TABLE giornate_letto (
    id_reparto INTEGER NOT NULL REFERENCES reparto (id_reparto),
    anno INTEGER NOT NULL,
    mese INTEGER NOT NULL,
    giornate INTEGER NOT NULL,
    PRIMARY KEY (id_reparto, anno, mese)
);
CREATE TABLE caricamento (
    id_caricamento INTEGER PRIMARY KEY,
    terminato_il TIMESTAMP NOT NULL,
    data_dato DATE NOT NULL,
    esito TEXT NOT NULL CHECK (esito IN ('OK', 'KO')),
    righe INTEGER NOT NULL
);
"""

# Codes of the warehouse turned into the words a question uses (schema/*.yaml values).
TRIAGE = (("1", "rosso"), ("2", "arancione"), ("3", "azzurro"), ("4", "verde"), ("5", "bianco"))
ED_UNITS = (("GEN", "PS generale"), ("PED", "PS pediatrico"), ("OST", "PS ostetrico-ginecologico"))
ED_OUTCOMES = (
    ("1", "dimissione a domicilio"),
    ("2", "dimissione a strutture ambulatoriali"),
    ("3", "ricovero"),
    ("4", "trasferimento ad altro istituto"),
    ("5", "decesso in pronto soccorso"),
    ("6", "rifiuto del ricovero"),
    ("7", "abbandono prima della visita"),
    ("8", "abbandono durante gli accertamenti"),
    ("9", "giunto cadavere"),
)
ADMISSION_TYPES = (
    ("1", "programmato"),
    ("2", "urgente"),
    ("3", "TSO"),
    ("4", "programmato con preospedalizzazione"),
)
DISCHARGE_MODES = (
    ("1", "decesso"),
    ("2", "domicilio"),
    ("3", "RSA"),
    ("4", "ospedalizzazione domiciliare"),
    ("5", "dimissione volontaria"),
    ("6", "trasferimento ad altro istituto per acuti"),
    ("7", "trasferimento ad altro regime"),
    ("8", "trasferimento in riabilitazione"),
    ("9", "assistenza domiciliare integrata"),
)
ORIGINS = (("RIC", "ricovero"), ("PS", "pronto soccorso"), ("AMB", "ambulatorio"))
PRIORITIES = (("R", "routine"), ("U", "urgente"), ("E", "emergenza"), ("P", "programmata"))


def _case(column: str, pairs: Iterable[tuple[str, str]]) -> str:
    whens = " ".join(f"WHEN '{code}' THEN '{word}'" for code, word in pairs)
    return f"CASE {column} {whens} END"


def _order(column: str, pairs: Iterable[tuple[str, str]]) -> str:
    whens = " ".join(f"WHEN '{code}' THEN {n}" for n, (code, _) in enumerate(pairs, start=1))
    return f"CASE {column} {whens} END"


def _key_date(column: str) -> str:
    """A dwh date key (20240131) as an ISO date."""
    return f"printf('%04d-%02d-%02d', {column} / 10000, ({column} / 100) % 100, {column} % 100)"


COPIES = (
    # The current wards, with their operational names (adt.ward) and department (dim_ward).
    """INSERT INTO reparto
    SELECT w.ward_id, w.ward_code, w.ward_name, dw.discipline_name, dw.department_name,
           w.active_to
    FROM adt.ward w
    JOIN dwh.dim_ward dw ON dw.ward_id = w.ward_id
     AND dw.ward_key = (SELECT max(ward_key) FROM dwh.dim_ward x WHERE x.ward_id = w.ward_id)
    ORDER BY w.ward_id""",
    # Closed admissions, attributed to the discharging ward (the dashboard's rule).
    f"""INSERT INTO ricovero
    SELECT f.admission_id, p.fiscal_code_pseudo,
           {_key_date("f.admission_date_key")}, {_key_date("f.discharge_date_key")},
           dw.ward_id,
           CASE f.care_regime WHEN '1' THEN 'ordinario' ELSE 'day hospital' END,
           {_case("f.admission_type", ADMISSION_TYPES)},
           {_case("f.discharge_mode", DISCHARGE_MODES)}, f.discharge_mode,
           f.age_at_admission, f.los_days, f.dh_access_count,
           d.drg_code, d.drg_description,
           CASE d.drg_type WHEN 'C' THEN 'chirurgico' ELSE 'medico' END,
           f.drg_weight, d.los_threshold_days, d.tariff_eur,
           f.readmitted_within_30d
    FROM dwh.fact_admission f
    JOIN dwh.dim_ward dw ON dw.ward_key = f.discharging_ward_key
    JOIN dwh.dim_drg d ON d.drg_key = f.drg_key
    JOIN adt.admission a ON a.admission_id = f.admission_id
    JOIN clinical.patient p ON p.patient_id = a.patient_id
    ORDER BY f.admission_id""",
    f"""INSERT INTO accesso_ps
    SELECT f.ed_visit_id, date(f.arrival_ts), CAST(strftime('%H', f.arrival_ts) AS INTEGER),
           {_case("f.ed_unit_code", ED_UNITS)},
           {_case("f.triage_code", TRIAGE)}, {_order("f.triage_code", TRIAGE)},
           f.wait_minutes, f.stay_minutes, f.obi_flag,
           f.outcome_code, {_case("f.outcome_code", ED_OUTCOMES)}, f.boarding_minutes
    FROM dwh.fact_ed_visit f
    ORDER BY f.ed_visit_id""",
    f"""INSERT INTO esame
    SELECT r.result_id, date(q.request_ts), t.test_name, t.sector,
           {_case("q.origin_code", ORIGINS)}, {_case("q.priority_code", PRIORITIES)},
           r.value_num, r.abnormal_flag, r.status
    FROM lab.result r
    JOIN lab.request q ON q.request_id = r.request_id
    JOIN lab.test_catalog t ON t.test_code = r.test_code
    ORDER BY r.result_id""",
    # Doses actually given (outcome S): the pharmacy's consumption, not the prescriptions.
    """INSERT INTO somministrazione
    SELECT a.administration_id, date(a.administered_ts), p.prescribing_ward_id,
           d.drug_name, d.active_ingredient, d.atc_code, d.high_cost_flag, d.unit_price_eur
    FROM pharmacy.administration a
    JOIN pharmacy.prescription p ON p.prescription_id = a.prescription_id
    JOIN pharmacy.drug d ON d.drug_id = p.drug_id
    WHERE a.outcome_code = 'S'
    ORDER BY a.administration_id""",
    # Bed-days of ordinary admissions per ward and month: each night spent in the ward counts
    # (from the start of the stay, to its end or, still in the ward, to the data date).
    """INSERT INTO giornate_degenza
    SELECT s.ward_id, c.year_num, c.month_num, count(*)
    FROM adt.ward_stay s
    JOIN adt.admission a ON a.admission_id = s.admission_id AND a.care_regime = '1'
    JOIN dwh.dim_date c
      ON c.calendar_date >= date(s.start_ts)
     AND c.calendar_date < coalesce(date(s.end_ts),
                                    (SELECT max(data_date) FROM dwh.load_log WHERE status = 'OK'))
    GROUP BY s.ward_id, c.year_num, c.month_num
    ORDER BY s.ward_id, c.year_num, c.month_num""",
    # Available bed-days: the beds of the ward version valid on each day of the data period.
    """INSERT INTO giornate_letto
    SELECT w.ward_id, c.year_num, c.month_num, sum(w.bed_count)
    FROM dwh.dim_ward w
    JOIN dwh.dim_date c
      ON c.calendar_date >= w.valid_from
     AND (w.valid_to IS NULL OR c.calendar_date <= w.valid_to)
    WHERE c.calendar_date >= (SELECT min(data_date) FROM dwh.load_log)
      AND c.calendar_date <= (SELECT max(data_date) FROM dwh.load_log WHERE status = 'OK')
    GROUP BY w.ward_id, c.year_num, c.month_num
    ORDER BY w.ward_id, c.year_num, c.month_num""",
    """INSERT INTO caricamento
    SELECT load_id, loaded_at, data_date, status, rows_loaded FROM dwh.load_log ORDER BY load_id""",
)

# -- views: the catalog's only readable surface ------------------------------------------------

VIEWS = """
CREATE VIEW v_data_date AS
SELECT max(data_dato) AS data_date FROM caricamento WHERE esito = 'OK';

CREATE VIEW v_reparti AS
SELECT nome AS reparto, codice AS codice_reparto, disciplina, dipartimento,
       CASE WHEN attivo_fino_al IS NULL THEN 1 ELSE 0 END AS attivo
FROM reparto;

-- One row per closed admission; the year and month are those of the discharge.
CREATE VIEW v_ricoveri AS
SELECT r.id_ricovero,
       r.codice_paziente,
       CAST(strftime('%Y', r.data_dimissione) AS INTEGER) AS anno,
       CAST(strftime('%m', r.data_dimissione) AS INTEGER) AS mese,
       r.data_ammissione, r.data_dimissione,
       p.nome AS reparto, p.dipartimento,
       r.regime, r.tipo_ricovero, r.modalita_dimissione, r.eta,
       r.degenza_giorni, r.accessi_dh,
       r.drg, r.drg_descrizione, r.tipo_drg, r.peso_drg, r.soglia_degenza_drg, r.tariffa_euro,
       CASE WHEN r.regime = 'ordinario' AND r.degenza_giorni > r.soglia_degenza_drg
            THEN 1 ELSE 0 END AS oltre_soglia
FROM ricovero r
JOIN reparto p ON p.id_reparto = r.id_reparto_dimissione;

-- The index admissions of the 30-day readmission indicator (regole-riammissioni-30-giorni-2024):
-- ordinary admissions, excluding deaths, transfers to another acute hospital, self-discharges,
-- deliveries and healthy newborns; attributed to the discharging ward and year.
CREATE VIEW v_riammissioni AS
SELECT CAST(strftime('%Y', r.data_dimissione) AS INTEGER) AS anno,
       CAST(strftime('%m', r.data_dimissione) AS INTEGER) AS mese,
       p.nome AS reparto, p.dipartimento,
       r.riammesso_30_giorni AS riammesso
FROM ricovero r
JOIN reparto p ON p.id_reparto = r.id_reparto_dimissione
WHERE r.regime = 'ordinario'
  AND r.codice_modalita_dimissione NOT IN ('1', '5', '6')
  AND r.drg NOT IN ('371', '373', '391');

CREATE VIEW v_accessi_ps AS
SELECT id_accesso,
       CAST(strftime('%Y', data_arrivo) AS INTEGER) AS anno,
       CAST(strftime('%m', data_arrivo) AS INTEGER) AS mese,
       CASE CAST(strftime('%m', data_arrivo) AS INTEGER)
            WHEN 1 THEN 'gennaio' WHEN 2 THEN 'febbraio' WHEN 3 THEN 'marzo'
            WHEN 4 THEN 'aprile' WHEN 5 THEN 'maggio' WHEN 6 THEN 'giugno'
            WHEN 7 THEN 'luglio' WHEN 8 THEN 'agosto' WHEN 9 THEN 'settembre'
            WHEN 10 THEN 'ottobre' WHEN 11 THEN 'novembre' WHEN 12 THEN 'dicembre'
       END AS mese_nome,
       data_arrivo, ora_arrivo, struttura, codice_triage, ordine_triage,
       attesa_minuti, permanenza_minuti, obi, esito, boarding_minuti,
       CASE WHEN codice_esito IN ('7', '8') THEN 1 ELSE 0 END AS abbandono,
       CASE WHEN codice_esito = '7' THEN 1 ELSE 0 END AS abbandono_prima_visita,
       CASE WHEN codice_esito = '3' THEN 1 ELSE 0 END AS ricoverato
FROM accesso_ps;

-- Validated results only (final or corrected); critical = beyond the critical thresholds.
CREATE VIEW v_esami AS
SELECT CAST(strftime('%Y', data_richiesta) AS INTEGER) AS anno,
       CAST(strftime('%m', data_richiesta) AS INTEGER) AS mese,
       esame, settore, provenienza, priorita, valore,
       CASE WHEN flag_anomalia IN ('LL', 'HH') THEN 1 ELSE 0 END AS critico,
       CASE WHEN flag_anomalia IN ('L', 'H', 'LL', 'HH', 'A') THEN 1 ELSE 0 END AS fuori_norma
FROM esame
WHERE stato IN ('F', 'C');

-- Doses given, valued at the unit price (one unit per dose); home drugs have no price.
CREATE VIEW v_consumi_farmaci AS
SELECT CAST(strftime('%Y', s.data_somministrazione) AS INTEGER) AS anno,
       CAST(strftime('%m', s.data_somministrazione) AS INTEGER) AS mese,
       p.nome AS reparto, s.farmaco, s.principio_attivo, s.atc, s.alto_costo,
       s.prezzo_unitario_euro AS costo_euro
FROM somministrazione s
JOIN reparto p ON p.id_reparto = s.id_reparto
WHERE s.prezzo_unitario_euro IS NOT NULL;

CREATE VIEW v_occupazione_letti AS
SELECT l.anno, l.mese, p.nome AS reparto, p.dipartimento,
       coalesce(d.giornate, 0) AS giornate_degenza, l.giornate AS giornate_letto
FROM giornate_letto l
JOIN reparto p ON p.id_reparto = l.id_reparto
LEFT JOIN giornate_degenza d
  ON d.id_reparto = l.id_reparto AND d.anno = l.anno AND d.mese = l.mese;
"""


def build(warehouse: Path, target: Path) -> Path:
    """Write `target` (replacing it) from the five schema files under `warehouse`."""
    missing = [s for s in WAREHOUSE_SCHEMAS if not (warehouse / f"{s}.sqlite").is_file()]
    if missing:
        raise FileNotFoundError(
            f"{warehouse}: no {', '.join(f'{s}.sqlite' for s in missing)} -> build the "
            "warehouse first: python tools/build_warehouse.py"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    connection = sqlite3.connect(partial.resolve().as_uri(), uri=True)
    try:
        connection.execute("PRAGMA journal_mode = OFF")  # a fresh file renamed when complete
        connection.execute("PRAGMA synchronous = OFF")
        for schema in WAREHOUSE_SCHEMAS:
            uri = f"{(warehouse / f'{schema}.sqlite').resolve().as_uri()}?mode=ro"
            connection.execute("ATTACH DATABASE ? AS " + schema, (uri,))
        connection.executescript(TABLES)
        with connection:
            for statement in COPIES:
                connection.execute(statement)
        connection.executescript(VIEWS)
        for schema in WAREHOUSE_SCHEMAS:
            connection.execute(f"DETACH DATABASE {schema}")
        connection.execute("VACUUM")
    finally:
        connection.close()
    partial.replace(target)
    return target


def row_counts(path: Path) -> dict[str, int]:
    """Table or view name -> rows, for the file `build` wrote."""
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        names = [
            r[0]
            for r in connection.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name"
            )
        ]
        return {
            name: int(connection.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0])
            for name in names
        }
    finally:
        connection.close()


def main(argv: Iterable[str] | None = None, out: Callable[[str], None] = print) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    warehouse = Path(args[0]) if args else WORKSPACE / "warehouse"
    target = Path(args[1]) if len(args) > 1 else warehouse / "analytics.sqlite"
    path = build(warehouse, target)
    counts = row_counts(path)
    tables = {k: v for k, v in counts.items() if not k.startswith("v_")}
    out(
        f"wrote {path}: {len(tables)} tables ({sum(tables.values())} rows), "
        f"{len(counts) - len(tables)} views"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
