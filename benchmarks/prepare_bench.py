"""Benchmark `tht evidence prepare` with the rule-based restructurer.

Builds a fresh Git workspace holding N generated Italian Markdown sources (deterministic for a
given seed), then times three scenarios, each in its own child process of this same Python so
that the peak memory of one run is not inflated by the previous one:

1. cold        - no curated unit yet: every source is restructured; the result is committed;
2. no-op       - nothing changed: prepare must write nothing (report.noop, clean worktree);
3. incremental - 10 sources edited: only those are restructured.

Usage:
    .venv/bin/python benchmarks/prepare_bench.py [--sources N] [--seed S] [--json] [--keep DIR]

Exit status 0 when every check passes and the no-op target (< 2 s) is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

NOOP_TARGET_S = 2.0
INCREMENTAL_EDITS = 10
MIN_BYTES = 1000
MAX_BYTES = 4096
RSS_METHOD = (
    "peak RSS = resource.getrusage(RUSAGE_SELF).ru_maxrss of a fresh child process per "
    "scenario (interpreter + imports included; git subprocesses excluded)"
)

# Git identity for the benchmark repository only: never read or touch the user's config.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Thoth Bench",
    "GIT_AUTHOR_EMAIL": "bench@thoth.invalid",
    "GIT_COMMITTER_NAME": "Thoth Bench",
    "GIT_COMMITTER_EMAIL": "bench@thoth.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def bench_env() -> dict[str, str]:
    return {**os.environ, **GIT_ENV}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=True,
        env=bench_env(),
    )
    return done.stdout


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)


def git_status(root: Path) -> str:
    return git(root, "status", "--porcelain", "--untracked-files=all")


# -- vocabulary -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Col:
    name: str
    label: str  # Italian description, lower case


@dataclass(frozen=True)
class Table:
    name: str  # schema.table
    alias: str
    label: str  # plural Italian noun, lower case
    area: str
    dates: tuple[Col, ...]
    cats: tuple[Col, ...]
    nums: tuple[Col, ...]

    def col(self, c: Col) -> str:
        return f"{self.name}.{c.name}"


TABLES: tuple[Table, ...] = (
    Table(
        "adt.admission",
        "a",
        "ricoveri",
        "ricoveri",
        (Col("admission_date", "data di ammissione"), Col("discharge_date", "data di dimissione")),
        (
            Col("care_regime", "regime di ricovero"),
            Col("admission_type", "tipo di ricovero"),
            Col("discharge_mode", "modalità di dimissione"),
            Col("admission_source", "provenienza del ricovero"),
        ),
        (Col("dh_access_count", "numero di accessi DH"),),
    ),
    Table(
        "adt.ed_visit",
        "v",
        "accessi in pronto soccorso",
        "pronto soccorso",
        (
            Col("arrival_ts", "ora di arrivo"),
            Col("triage_ts", "ora del triage"),
            Col("first_visit_ts", "ora della prima visita"),
        ),
        (
            Col("triage_code", "codice di triage"),
            Col("outcome_code", "esito dell'accesso"),
            Col("arrival_mode", "modalità di arrivo"),
        ),
        (Col("wait_minutes", "attesa in minuti"),),
    ),
    Table(
        "adt.ward_stay",
        "s",
        "permanenze in reparto",
        "reparti",
        (Col("start_ts", "inizio della permanenza"), Col("end_ts", "fine della permanenza")),
        (Col("stay_type", "tipo di permanenza"),),
        (Col("bed_days", "giornate di degenza"),),
    ),
    Table(
        "adt.transfer",
        "t",
        "trasferimenti interni",
        "trasferimenti",
        (Col("request_ts", "ora della richiesta"), Col("transfer_ts", "ora del trasferimento")),
        (Col("transfer_reason", "motivo del trasferimento"),),
        (Col("distance_m", "distanza tra i reparti"),),
    ),
    Table(
        "clinical.patient",
        "p",
        "pazienti",
        "anagrafica",
        (Col("birth_date", "data di nascita"), Col("registration_date", "data di registrazione")),
        (Col("sex_code", "sesso"), Col("citizenship_code", "cittadinanza")),
        (Col("household_size", "componenti del nucleo familiare"),),
    ),
    Table(
        "clinical.diagnosis",
        "d",
        "diagnosi",
        "diagnosi",
        (Col("diagnosis_date", "data della diagnosi"), Col("coded_date", "data di codifica")),
        (Col("present_on_admission", "presenza all'ammissione"),),
        (Col("diagnosis_rank", "posizione della diagnosi"),),
    ),
    Table(
        "clinical.procedure",
        "pc",
        "interventi",
        "sale operatorie",
        (Col("start_ts", "inizio dell'intervento"), Col("end_ts", "fine dell'intervento")),
        (Col("procedure_setting", "luogo dell'intervento"),),
        (Col("duration_minutes", "durata in minuti"),),
    ),
    Table(
        "lab.request",
        "rq",
        "richieste di laboratorio",
        "laboratorio",
        (Col("request_ts", "ora della richiesta"), Col("collection_ts", "ora del prelievo")),
        (Col("priority_code", "priorità della richiesta"), Col("request_status", "stato")),
        (Col("test_count", "numero di esami"),),
    ),
    Table(
        "lab.result",
        "r",
        "risultati di laboratorio",
        "laboratorio",
        (Col("sampled_ts", "ora del campione"), Col("validated_ts", "ora di validazione")),
        (Col("abnormal_flag", "flag di anomalia"), Col("status", "stato del risultato")),
        (Col("value_num", "valore numerico"),),
    ),
    Table(
        "pharmacy.prescription",
        "rx",
        "prescrizioni",
        "farmacia",
        (Col("start_ts", "inizio della terapia"), Col("end_ts", "fine della terapia")),
        (
            Col("status_code", "stato della prescrizione"),
            Col("route_code", "via di somministrazione"),
        ),
        (Col("daily_dose", "dose giornaliera"),),
    ),
    Table(
        "pharmacy.administration",
        "ad",
        "somministrazioni",
        "farmacia",
        (Col("planned_ts", "ora pianificata"), Col("administered_ts", "ora di somministrazione")),
        (Col("outcome_code", "esito della somministrazione"),),
        (Col("dose_given", "dose somministrata"),),
    ),
    Table(
        "rad.exam",
        "x",
        "esami di radiologia",
        "radiologia",
        (Col("scheduled_ts", "ora prenotata"), Col("performed_ts", "ora di esecuzione")),
        (Col("modality_code", "modalità diagnostica"), Col("priority_code", "classe di priorità")),
        (Col("dose_mgy", "dose erogata"),),
    ),
    Table(
        "amb.appointment",
        "ap",
        "prestazioni ambulatoriali",
        "specialistica",
        (Col("booking_date", "data di prenotazione"), Col("service_date", "data di erogazione")),
        (
            Col("priority_class", "classe di priorità"),
            Col("channel_code", "canale di prenotazione"),
        ),
        (Col("waiting_days", "giorni di attesa"),),
    ),
    Table(
        "dwh.fact_admission",
        "f",
        "ricoveri del DWH",
        "cruscotto",
        (Col("admission_date", "data di ammissione"), Col("discharge_date", "data di dimissione")),
        (Col("drg_type", "tipo di DRG"), Col("care_regime", "regime di ricovero")),
        (Col("drg_weight", "peso DRG"), Col("los_days", "degenza in giorni")),
    ),
)

CODES: dict[str, tuple[tuple[str, str], ...]] = {
    "adt.admission.care_regime": (("1", "Ricovero ordinario"), ("2", "Day hospital")),
    "adt.admission.admission_type": (
        ("1", "Ricovero programmato, non urgente"),
        ("2", "Ricovero urgente"),
        ("3", "Trattamento sanitario obbligatorio (TSO)"),
        ("4", "Ricovero programmato con preospedalizzazione"),
    ),
    "adt.admission.discharge_mode": (
        ("1", "Deceduto"),
        ("2", "Dimissione ordinaria al domicilio"),
        ("3", "Dimissione presso RSA"),
        ("4", "Dimissione al domicilio con ADI"),
        ("5", "Dimissione volontaria"),
        ("6", "Trasferimento ad altro istituto per acuti"),
    ),
    "adt.admission.admission_source": (
        ("1", "Senza proposta medica"),
        ("2", "Proposta del medico di medicina generale"),
        ("3", "Trasferimento da altro istituto"),
        ("4", "Pronto soccorso"),
        ("5", "Proposta di medico specialista"),
    ),
    "adt.ed_visit.triage_code": (
        ("1", "Emergenza"),
        ("2", "Urgenza"),
        ("3", "Urgenza differibile"),
        ("4", "Urgenza minore"),
        ("5", "Non urgenza"),
    ),
    "adt.ed_visit.outcome_code": (
        ("1", "Dimissione a domicilio"),
        ("2", "Invio a struttura ambulatoriale"),
        ("3", "Ricovero in reparto"),
        ("4", "Trasferimento ad altro istituto"),
        ("5", "Deceduto in pronto soccorso"),
        ("6", "Rifiuto del ricovero"),
        ("7", "Abbandono prima della visita"),
    ),
    "adt.ed_visit.arrival_mode": (
        ("A", "Ambulanza 118"),
        ("P", "Mezzo proprio"),
        ("E", "Elisoccorso"),
        ("F", "Forze dell'ordine"),
    ),
    "adt.ward_stay.stay_type": (
        ("O", "Permanenza ordinaria"),
        ("A", "Appoggio in altro reparto"),
        ("T", "Terapia intensiva"),
    ),
    "adt.transfer.transfer_reason": (
        ("C", "Motivi clinici"),
        ("L", "Mancanza di posti letto"),
        ("I", "Isolamento"),
        ("R", "Rientro nel reparto di competenza"),
    ),
    "clinical.patient.sex_code": (("1", "Maschio"), ("2", "Femmina"), ("9", "Non dichiarato")),
    "clinical.patient.citizenship_code": (
        ("IT", "Italiana"),
        ("UE", "Unione europea"),
        ("EX", "Extra UE"),
        ("ND", "Non dichiarata"),
    ),
    "clinical.diagnosis.present_on_admission": (
        ("S", "Presente all'ammissione"),
        ("N", "Insorta durante il ricovero"),
        ("X", "Non determinabile"),
    ),
    "clinical.procedure.procedure_setting": (
        ("S", "Sala operatoria"),
        ("E", "Sala endoscopica"),
        ("R", "Radiologia interventistica"),
        ("L", "Letto del paziente"),
    ),
    "lab.request.priority_code": (("R", "Routine"), ("U", "Urgente"), ("E", "Emergenza")),
    "lab.request.request_status": (
        ("I", "Inserita"),
        ("A", "Accettata"),
        ("C", "Campione raccolto"),
        ("R", "Refertata"),
        ("X", "Annullata"),
    ),
    "lab.result.abnormal_flag": (
        ("N", "Normale"),
        ("L", "Sotto il range"),
        ("H", "Sopra il range"),
        ("LL", "Critico basso"),
        ("HH", "Critico alto"),
    ),
    "lab.result.status": (("P", "Preliminare"), ("F", "Finale"), ("C", "Corretto")),
    "pharmacy.prescription.status_code": (
        ("ATT", "Attiva"),
        ("SOS", "Sospesa"),
        ("TER", "Terminata"),
        ("ANN", "Annullata"),
    ),
    "pharmacy.prescription.route_code": (
        ("OS", "Orale"),
        ("EV", "Endovenosa"),
        ("IM", "Intramuscolare"),
        ("SC", "Sottocutanea"),
        ("TOP", "Topica"),
    ),
    "pharmacy.administration.outcome_code": (
        ("S", "Somministrata"),
        ("R", "Rifiutata dal paziente"),
        ("N", "Non somministrata"),
        ("P", "Posticipata"),
    ),
    "rad.exam.modality_code": (
        ("CT", "Tomografia computerizzata"),
        ("MR", "Risonanza magnetica"),
        ("US", "Ecografia"),
        ("CR", "Radiologia convenzionale"),
        ("MG", "Mammografia"),
    ),
    "rad.exam.priority_code": (
        ("U", "Urgente"),
        ("B", "Breve"),
        ("D", "Differibile"),
        ("P", "Programmata"),
    ),
    "amb.appointment.priority_class": (
        ("U", "Urgente, entro 72 ore"),
        ("B", "Breve, entro 10 giorni"),
        ("D", "Differibile, entro 30 o 60 giorni"),
        ("P", "Programmata, entro 120 giorni"),
    ),
    "amb.appointment.channel_code": (
        ("CUP", "Sportello CUP"),
        ("WEB", "Portale online"),
        ("TEL", "Call center regionale"),
        ("FAR", "Farmacia convenzionata"),
    ),
    "dwh.fact_admission.drg_type": (("M", "DRG medico"), ("C", "DRG chirurgico")),
    "dwh.fact_admission.care_regime": (("1", "Ricovero ordinario"), ("2", "Day hospital")),
}

PRESIDI = (
    "Cremona",
    "Lodi",
    "Mantova",
    "Pavia",
    "Vigevano",
    "Voghera",
    "Crema",
    "Legnano",
    "Magenta",
    "Rho",
    "Saronno",
    "Varese",
    "Busto Arsizio",
    "Gallarate",
    "Como",
    "Lecco",
    "Sondrio",
    "Bergamo",
    "Treviglio",
    "Seriate",
    "Brescia",
    "Chiari",
    "Desenzano",
    "Monza",
)
MONTHS = (
    "gennaio",
    "febbraio",
    "marzo",
    "aprile",
    "maggio",
    "giugno",
    "luglio",
    "agosto",
    "settembre",
    "ottobre",
    "novembre",
    "dicembre",
)
YEARS = tuple(range(2018, 2026))
TEAMS = (
    "il team DWH clinico",
    "il controllo di gestione",
    "l'ufficio qualità",
    "la direzione sanitaria",
    "il servizio informativo aziendale",
    "i referenti di reparto",
)
GLOSSARY_TERMS: tuple[tuple[str, str, str], ...] = (
    (
        "Ricovero",
        "periodo di assistenza ospedaliera dall'accettazione alla dimissione, una riga di "
        "`adt.admission`",
        "ospedalizzazione, admission",
    ),
    (
        "Ricovero ordinario",
        "ricovero con almeno un pernottamento, con `adt.admission.care_regime` uguale a 1",
        "degenza ordinaria, RO",
    ),
    (
        "Day hospital",
        "ricovero programmato in accessi diurni senza pernottamento, con "
        "`adt.admission.care_regime` uguale a 2",
        "DH, ricovero diurno",
    ),
    (
        "Degenza",
        "durata del ricovero ordinario in giorni, differenza tra "
        "`adt.admission.discharge_date` e `adt.admission.admission_date`",
        "durata della degenza, LOS",
    ),
    (
        "Accesso in pronto soccorso",
        "arrivo di un paziente in PS registrato in `adt.ed_visit` dal triage all'esito",
        "accesso PS, passaggio in PS",
    ),
    (
        "Codice di triage",
        "priorità clinica assegnata all'arrivo, in `adt.ed_visit.triage_code` su cinque livelli",
        "codice colore, priorità di accesso",
    ),
    (
        "Tempo di attesa",
        "minuti tra il triage e la prima visita medica, da `adt.ed_visit.triage_ts` a "
        "`adt.ed_visit.first_visit_ts`",
        "attesa alla visita, waiting time",
    ),
    (
        "Permanenza",
        "intervallo passato dal paziente in un reparto durante il ricovero, una riga di "
        "`adt.ward_stay`",
        "soggiorno in reparto, ward stay",
    ),
    (
        "Trasferimento interno",
        "spostamento del paziente tra reparti senza chiudere il ricovero, una riga di "
        "`adt.transfer`",
        "passaggio di reparto",
    ),
    (
        "Diagnosi principale",
        "la diagnosi che ha assorbito più risorse, con `clinical.diagnosis.diagnosis_rank` "
        "uguale a 1",
        "diagnosi primaria",
    ),
    (
        "Intervento chirurgico",
        "procedura eseguita in sala, una riga di `clinical.procedure`",
        "intervento, procedura operatoria",
    ),
    (
        "Richiesta di laboratorio",
        "ordine di uno o più esami inviato dal reparto, una riga di `lab.request`",
        "richiesta esami, order",
    ),
    (
        "Valore critico",
        "risultato oltre le soglie di panico, con flag LL o HH in `lab.result.abnormal_flag`",
        "valore di panico, critical value",
    ),
    (
        "Prescrizione",
        "ordine di terapia farmacologica, una riga di `pharmacy.prescription`",
        "terapia prescritta, ordine di terapia",
    ),
    (
        "Somministrazione",
        "dose effettivamente data al paziente, una riga di `pharmacy.administration`",
        "dose somministrata",
    ),
    (
        "Esame radiologico",
        "prestazione di diagnostica per immagini, una riga di `rad.exam`",
        "esame di imaging, indagine radiologica",
    ),
    (
        "Classe di priorità",
        "urgenza della prestazione ambulatoriale indicata dal prescrittore, in "
        "`amb.appointment.priority_class`",
        "priorità RAO, classe U B D P",
    ),
    (
        "Tempo di attesa ambulatoriale",
        "giorni tra prenotazione ed erogazione, in `amb.appointment.waiting_days`",
        "attesa per la prestazione",
    ),
    (
        "Peso DRG",
        "peso relativo del gruppo DRG del ricovero, in `dwh.fact_admission.drg_weight`",
        "peso relativo, case mix",
    ),
    (
        "Riammissione",
        "nuovo ricovero ordinario dello stesso paziente entro 30 giorni dalla dimissione",
        "riospedalizzazione, ricovero ripetuto",
    ),
    (
        "Cittadinanza",
        "nazionalità dichiarata dal paziente, in `clinical.patient.citizenship_code`",
        "nazionalità",
    ),
    (
        "Presidio",
        "stabilimento ospedaliero dell'azienda in cui avviene l'evento",
        "stabilimento, sede",
    ),
)
AUTHORITIES = (
    ("salute.gov.it", "portale/documentazione"),
    ("regione.lombardia.it", "wps/portal/istituzionale"),
    ("agenas.gov.it", "flussi-informativi"),
    ("aifa.gov.it", "documents"),
    ("wiki.dwh-clinico.example.it", "spaces/DWH/pages"),
)
FLOWS = ("SDO", "EMUR", "File F", "SPA", "CEDAP", "FAR", "SIAD", "DM consumi", "NSIS", "PNE")


# -- source generation ----------------------------------------------------------------------


def ascii_slug(text: str) -> str:
    raw = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    out = "".join(ch if ch.isalnum() else "-" for ch in raw)
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")


@dataclass
class Ctx:
    rng: random.Random
    table: Table
    presidio: str
    year: int

    def qualifier(self) -> str:
        choice = self.rng.randrange(6)
        if choice == 0:
            return f" ({self.presidio})"
        if choice == 1:
            return f" dal {self.year}"
        if choice == 2:
            return f" a {self.rng.choice(PRESIDI)}"
        if choice == 3:
            return f" – revisione {self.rng.randint(2, 9)}"
        return ""


def _sentence(ctx: Ctx) -> str:
    rng, t = ctx.rng, ctx.table
    date, cat, num = rng.choice(t.dates), rng.choice(t.cats), rng.choice(t.nums)
    templates = (
        f"Nel presidio di {ctx.presidio} le righe di `{t.name}` ({t.label}) si contano dal "
        f"{ctx.year}, escludendo quelle con `{t.col(cat)}` non valorizzato.",
        f"Il campo `{t.col(date)}` ({date.label}) è registrato dal gestionale all'inserimento "
        "e viene corretto dal caricamento notturno.",
        f"Per i report direzionali si usa `{t.col(cat)}` così come arriva dal flusso, senza "
        "transcodifiche locali.",
        f"Il campo `{t.col(num)}` ({num.label}) è nullo finché l'evento non si è concluso e "
        "non va trattato come zero nelle medie.",
        f"Le righe annullate restano in `{t.name}` con il valore originale di "
        f"`{t.col(date)}` e si escludono filtrando su `{t.col(cat)}`.",
        f"{rng.choice(TEAMS).capitalize()} ha concordato di attribuire le righe di "
        f"`{t.name}` al mese di `{t.col(date)}` ({date.label}), non a quello di chiusura "
        "della pratica.",
        f"Dal {rng.choice(MONTHS)} {ctx.year} il caricamento di `{t.name}` avviene ogni "
        "notte alle 2:00 e i dati del giorno sono disponibili dalle 7:00.",
        f"Nei confronti tra presidi il valore di {num.label} si rapporta al numero di {t.label} "
        "dello stesso periodo.",
    )
    sentence = rng.choice(templates)
    roll = rng.random()
    if roll < 0.06:
        sentence += f" Non è chiaro se la regola valga anche per {rng.choice(PRESIDI)}."
    elif roll < 0.09:
        sentence += f" La prassi è in contrasto con il disciplinare {rng.choice(FLOWS)}."
    return sentence


def _paragraph(ctx: Ctx, sentences: int) -> str:
    return " ".join(_sentence(ctx) for _ in range(sentences))


def section_domain(ctx: Ctx) -> str:
    rng, t = ctx.rng, ctx.table
    activity = rng.choice(
        (
            "Regole di conteggio",
            "Attribuzione",
            "Storicizzazione",
            "Caricamento notturno",
            "Casi particolari",
            "Esclusioni",
            "Qualità del dato",
            "Convenzioni di reporting",
        )
    )
    title = f"{activity} per {t.label}{ctx.qualifier()}"
    paragraphs = "\n\n".join(_paragraph(ctx, rng.randint(2, 3)) for _ in range(rng.randint(1, 3)))
    return f"## {title}\n\n{paragraphs}\n"


def section_glossary(ctx: Ctx) -> str:
    rng = ctx.rng
    title = rng.choice(("Termini", "Definizioni", "Vocabolario", "Termini ricorrenti"))
    lines = []
    for term, definition, synonyms in rng.sample(GLOSSARY_TERMS, rng.randint(3, 6)):
        name = term if rng.random() < 0.5 else f"{term} ({rng.choice(PRESIDI)})"
        extra = f" Sinonimi: {synonyms}." if rng.random() < 0.8 else ""
        if rng.random() < 0.2:
            lines.append(f"- **{name}** — {definition}.{extra}")
        else:
            lines.append(f"**{name}**: {definition}.{extra}")
    return f"## {title} – {ctx.table.area}{ctx.qualifier()}\n\n" + "\n\n".join(lines) + "\n"


def section_enum(ctx: Ctx) -> str:
    rng, t = ctx.rng, ctx.table
    cat = rng.choice(t.cats)
    codes = CODES[t.col(cat)]
    rows = "\n".join(f"| {code} | {meaning} |" for code, meaning in codes)
    header = rng.choice(("| Codice | Significato |", "| Valore | Descrizione |"))
    note = _paragraph(ctx, 1)
    return (
        f"## {cat.label[0].upper()}{cat.label[1:]}{ctx.qualifier()}\n\n"
        f"Colonna: `{t.col(cat)}`\n\n{header}\n|---|---|\n{rows}\n\n{note}\n"
    )


def _formula(ctx: Ctx) -> tuple[str, str, list[str]]:
    """(concept, SQL expression, backticked columns used)."""
    rng, t = ctx.rng, ctx.table
    a = t.alias
    d1, d2 = t.dates[0], t.dates[1] if len(t.dates) > 1 else t.dates[0]
    cat, num = rng.choice(t.cats), rng.choice(t.nums)
    code, meaning = rng.choice(CODES[t.col(cat)])
    kind = rng.randrange(6)
    if kind == 0 and d1 != d2:
        if d1.name.endswith("_ts"):
            sql = f"extract(epoch FROM ({a}.{d2.name} - {a}.{d1.name})) / 60"
            return f"Minuti tra {d1.label} e {d2.label}", sql, [t.col(d1), t.col(d2)]
        sql = f"({a}.{d2.name} - {a}.{d1.name})"
        return f"Giorni tra {d1.label} e {d2.label}", sql, [t.col(d1), t.col(d2)]
    if kind == 1:
        sql = f"CASE WHEN {a}.{cat.name} = '{code}' THEN 1 ELSE 0 END"
        return f"Indicatore {meaning.lower()}", sql, [t.col(cat)]
    if kind == 2:
        sql = (
            f"round(100.0 * count(*) FILTER (WHERE {a}.{cat.name} = '{code}') "
            "/ NULLIF(count(*), 0), 1)"
        )
        return f"Percentuale di {t.label} con {cat.label} {meaning.lower()}", sql, [t.col(cat)]
    if kind == 3:
        lo, hi = sorted(rng.sample(range(5, 200), 2))
        sql = (
            f"CASE WHEN {a}.{num.name} < {lo} THEN 'bassa' WHEN {a}.{num.name} < {hi} "
            "THEN 'media' ELSE 'alta' END"
        )
        return f"Fascia di {num.label}", sql, [t.col(num)]
    if kind == 4:
        sql = f"date_part('year', age({a}.{d1.name}, p.birth_date))"
        return (
            f"Età del paziente ({d1.label})",
            sql,
            [t.col(d1), "clinical.patient.birth_date"],
        )
    sql = f"COALESCE({a}.{num.name}, 0) * {rng.randint(2, 12)}"
    return f"Valore ponderato di {num.label}", sql, [t.col(num)]


def section_formula(ctx: Ctx) -> str:
    rng = ctx.rng
    concept, sql, columns = _formula(ctx)
    cols = " e ".join(f"`{c}`" for c in columns)
    prose = f"Si calcola a partire da {cols}. {_sentence(ctx)}"
    concept_line = ""
    title = f"{concept}{ctx.qualifier()}"
    if rng.random() < 0.25:
        concept_line = f"Concetto: {concept}\n\n"
        title = f"Formula {rng.randint(1, 99)} – {ctx.table.area} {ctx.presidio}"
    return f"## {title}\n\n{concept_line}{prose}\n\n```sql\n{sql}\n```\n"


def section_example(ctx: Ctx) -> str:
    rng, t = ctx.rng, ctx.table
    a = t.alias
    date = rng.choice(t.dates)
    cat = rng.choice(t.cats)
    group = rng.choice(t.cats)
    code, meaning = rng.choice(CODES[t.col(cat)])
    year = rng.choice(YEARS)
    shape = rng.randrange(3)
    if shape == 0:
        question = (
            f"Qual è il numero di {t.label} con {cat.label} «{meaning.lower()}» nel {year}, "
            f"per {group.label}?"
        )
        title = f"{t.label[0].upper()}{t.label[1:]} {meaning.lower()} per {group.label}"
        select = f"SELECT {a}.{group.name},\n       count(*) AS totale"
        tail = f"GROUP BY {a}.{group.name}\nORDER BY totale DESC;"
    elif shape == 1:
        question = f"Come varia ogni mese del {year} il numero di {t.label} del presidio?"
        title = f"Andamento mensile – {t.label} {year}"
        select = f"SELECT date_trunc('month', {a}.{date.name}) AS mese,\n       count(*) AS totale"
        tail = f"GROUP BY date_trunc('month', {a}.{date.name})\nORDER BY mese;"
    else:
        num = rng.choice(t.nums)
        question = (
            f"Qual è il valore medio di {num.label} per {t.label} nel {year}, per {group.label}?"
        )
        title = f"Valore medio di {num.label} per {group.label}"
        select = f"SELECT {a}.{group.name},\n       round(avg({a}.{num.name})::numeric, 1) AS media"
        tail = f"GROUP BY {a}.{group.name}\nORDER BY media DESC;"
    sql = (
        f"{select}\nFROM {t.name} {a}\nWHERE {a}.{cat.name} = '{code}'\n"
        f"  AND {a}.{date.name} >= DATE '{year}-01-01'\n"
        f"  AND {a}.{date.name} < DATE '{year + 1}-01-01'\n{tail}"
    )
    interpretation = (
        f"righe di `{t.name}` con `{t.col(cat)}` uguale a {code} e `{t.col(date)}` nel {year}."
    )
    return (
        f"## {title}{ctx.qualifier()}\n\nDomanda: {question}\nInterpretazione: {interpretation}\n\n"
        f"```sql\n{sql}\n```\n"
    )


def section_mapping(ctx: Ctx) -> str:
    rng, t = ctx.rng, ctx.table
    if rng.random() < 0.4:  # "Tabelle:" / "Colonne:" lines: one mapping for the section
        cols = ", ".join(f"`{t.col(c)}`" for c in rng.sample([*t.dates, *t.cats, *t.nums], 3))
        title = f"{t.label[0].upper()}{t.label[1:]} nel presidio di {ctx.presidio}"
        return (
            f"## {title}{ctx.qualifier()}\n\nTabelle: `{t.name}`\nColonne: {cols}\n\n"
            f"{_paragraph(ctx, rng.randint(1, 2))}\n"
        )
    rows = []
    for cat in t.cats:
        for _, meaning in rng.sample(CODES[t.col(cat)], min(2, len(CODES[t.col(cat)]))):
            concept = f"{t.label[0].upper()}{t.label[1:]} – {meaning.lower()}"
            if rng.random() < 0.5:
                concept += f" ({rng.choice(PRESIDI)})"
            cols = f"`{t.col(cat)}`, `{t.col(rng.choice(t.dates))}`"
            rows.append(f"| {concept} | `{t.name}` | {cols} |")
    body = "\n".join(rows)
    return (
        f"## Mapping {t.area}{ctx.qualifier()}\n\n| Concetto | Tabelle | Colonne |\n"
        f"|---|---|---|\n{body}\n\n{_sentence(ctx)}\n"
    )


def section_normalization(ctx: Ctx) -> str:
    rng, t = ctx.rng, ctx.table
    cat, date = rng.choice(t.cats), rng.choice(t.dates)
    rules = [
        f"Portare `{t.col(cat)}` in maiuscolo e togliere gli spazi iniziali e finali.",
        f"Ricondurre a un solo codice i valori storici di `{t.col(cat)}` usati prima del "
        f"{ctx.year}.",
        f"Convertire `{t.col(date)}` al fuso Europe/Rome prima di confrontarla con altri flussi.",
        f"Scartare le righe di `{t.name}` con `{t.col(date)}` ({date.label}) successivo al "
        "caricamento.",
        f"Completare con zeri a sinistra i codici numerici di `{t.col(cat)}`.",
        f"Sostituire i valori sentinella 9999 di `{t.col(rng.choice(t.nums))}` con NULL.",
    ]
    chosen = rng.sample(rules, rng.randint(2, 5))
    bullets = "\n".join(f"- {r}" for r in chosen)
    return f"## Normalizzazione {cat.label}{ctx.qualifier()}\n\n{bullets}\n"


def section_links(ctx: Ctx) -> str:
    rng = ctx.rng
    bullets = []
    for _ in range(rng.randint(2, 4)):
        flow = rng.choice(FLOWS)
        year = rng.choice(YEARS)
        host, path = rng.choice(AUTHORITIES)
        label = f"Disciplinare tecnico {flow} {year}"
        url = f"https://www.{host}/{path}/{ascii_slug(flow)}-{year}-{rng.randint(100, 9999)}"
        desc = rng.choice(
            (
                f"tracciato e regole di compilazione del flusso {flow}",
                f"specifiche di invio valide dal {rng.choice(MONTHS)} {year}",
                f"controlli di qualità applicati dalla Regione ai {ctx.table.label}",
            )
        )
        bullets.append(f"- [{label}]({url}) — {desc}")
    return f"## Riferimenti {ctx.table.area}{ctx.qualifier()}\n\n" + "\n".join(bullets) + "\n"


Section = Callable[[Ctx], str]
ALL_SECTIONS: tuple[Section, ...] = (
    section_glossary,
    section_domain,
    section_enum,
    section_example,
    section_mapping,
    section_normalization,
    section_formula,
    section_links,
)
# (folder, file-title prefix, primary section, weight)
FOLDERS: tuple[tuple[str, str, Section, int], ...] = (
    ("00-glossario", "Glossario", section_glossary, 14),
    ("10-domini-clinici", "Regole di dominio", section_domain, 20),
    ("20-enum", "Codifiche", section_enum, 16),
    ("30-esempi-nlq", "Esempi di domande", section_example, 16),
    ("40-mapping", "Mapping", section_mapping, 10),
    ("50-normalizzazione", "Normalizzazione", section_normalization, 6),
    ("60-formule", "Formule", section_formula, 12),
    ("70-riferimenti", "Riferimenti", section_links, 6),
)


def make_source(rng: random.Random, index: int) -> tuple[str, str]:
    """(path under evidence/source/, Markdown text) of one generated source."""
    folder, prefix, primary, _ = rng.choices(FOLDERS, weights=[f[3] for f in FOLDERS])[0]
    table = rng.choice(TABLES)
    ctx = Ctx(rng, table, rng.choice(PRESIDI), rng.choice(YEARS))
    title = f"{prefix} – {table.area} ({ctx.presidio}, {ctx.year})"
    stem = ascii_slug(f"{prefix} {table.area} {ctx.presidio}")
    if folder == "00-glossario" and not stem.startswith("glossario"):
        stem = f"glossario-{stem}"
    rel = f"{folder}/{stem}-{index:04d}.md"
    team = rng.choice(TEAMS)
    intro = (
        f"Note per il presidio di {ctx.presidio}, aggiornate a {rng.choice(MONTHS)} "
        f"{ctx.year} e condivise con {team}. {_sentence(ctx)}"
    )
    text = f"# {title}\n\n{intro}\n"
    target = rng.randint(MIN_BYTES, MAX_BYTES - 300)
    while len(text.encode("utf-8")) < target:
        ctx.table = table if rng.random() < 0.7 else rng.choice(TABLES)
        make = primary if rng.random() < 0.6 else rng.choice(ALL_SECTIONS)
        section = make(ctx)
        size = len(text.encode("utf-8"))
        if size >= MIN_BYTES and size + len(section.encode("utf-8")) + 1 > MAX_BYTES:
            break
        text += "\n" + section
    return rel, text


def edit_source(rng: random.Random, text: str, n: int) -> str:
    """A curator's edit: reword the intro (one unit updated) and add a section (one created)."""
    head, sep, rest = text.partition("\n\n")
    intro, sep2, tail = rest.partition("\n")
    day, month = rng.randint(1, 28), rng.randint(1, 12)
    intro += f" Revisione del {day:02d}/{month:02d}/2025."
    added = (
        f"\n## Aggiornamento {n} del {day:02d}/{month:02d}/2025\n\n"
        "Dal prossimo caricamento i dati del presidio vengono ricalcolati con le regole "
        "approvate dal comitato di dicembre; le serie storiche restano invariate.\n"
    )
    return f"{head}{sep}{intro}{sep2}{tail}" + added


# -- child: one measured prepare run --------------------------------------------------------


def child_main(root: Path, profile: Path | None) -> int:
    from thoth.errors import ThothError
    from thoth.evidence.prepare import prepare
    from thoth.evidence.restructure.rules import RuleBasedRestructurer
    from thoth.workspace import Workspace

    ws = Workspace.open(root)
    restructurer = RuleBasedRestructurer()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    profiler = cProfile.Profile() if profile else None
    try:
        if profiler:
            profiler.enable()
        start, cpu_start = time.perf_counter(), time.process_time()
        report = prepare(ws, restructurer)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    except ThothError as exc:
        print(f"prepare failed: {str(exc)[:4000]}", file=sys.stderr)
        return 2
    finally:
        if profiler:
            profiler.disable()
    if profiler and profile:
        profiler.dump_stats(str(profile))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    counts = report.counts()
    out = {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_kib": peak,
        "rss_before_kib": rss_before,
        "sources_total": len(report.sources),
        "sources_processed": sum(n for s, n in counts.items() if s != "unchanged"),
        "counts": counts,
        "units_written": sum(1 for p in report.written if p.startswith("curated/")),
        "units_created": sum(len(s.created) for s in report.sources),
        "units_updated": sum(len(s.updated) for s in report.sources),
        "units_kept": sum(len(s.kept) for s in report.sources),
        "files_written": len(report.written),
        "files_deleted": len(report.deleted),
        "units_with_review_items": len(report.review_items),
        "noop": report.noop,
    }
    print(json.dumps(out))
    return 0


# -- parent ---------------------------------------------------------------------------------


@dataclass
class Run:
    scenario: str
    wall_s: float
    cpu_s: float
    peak_rss_mib: float
    rss_before_mib: float
    sources_total: int
    sources_processed: int
    units_written: int
    units_created: int
    units_updated: int
    files_written: int
    files_deleted: int
    units_with_review_items: int
    noop: bool
    counts: dict[str, int] = field(default_factory=dict)
    checks: dict[str, bool] = field(default_factory=dict)


def run_child(root: Path, scenario: str, profile_dir: Path | None) -> Run:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(root)]
    if profile_dir:
        cmd += ["--child-profile", str(profile_dir / f"{scenario}.prof")]
    done = subprocess.run(cmd, capture_output=True, text=True, env=bench_env(), check=False)
    if done.returncode != 0:
        raise SystemExit(f"{scenario}: child failed ({done.returncode}):\n{done.stderr}")
    raw: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return Run(
        scenario=scenario,
        wall_s=float(raw["wall_s"]),
        cpu_s=float(raw["cpu_s"]),
        peak_rss_mib=int(raw["peak_rss_kib"]) / 1024,
        rss_before_mib=int(raw["rss_before_kib"]) / 1024,
        sources_total=int(raw["sources_total"]),
        sources_processed=int(raw["sources_processed"]),
        units_written=int(raw["units_written"]),
        units_created=int(raw["units_created"]),
        units_updated=int(raw["units_updated"]),
        files_written=int(raw["files_written"]),
        files_deleted=int(raw["files_deleted"]),
        units_with_review_items=int(raw["units_with_review_items"]),
        noop=bool(raw["noop"]),
        counts={str(k): int(v) for k, v in raw["counts"].items()},
    )


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """(size, mtime_ns, inode) of every file under evidence/: detects rewrites git can't see."""
    out: dict[str, tuple[int, int, int]] = {}
    for path in sorted((root / "evidence").rglob("*")):
        if path.is_file():
            st = path.stat()
            out[path.relative_to(root).as_posix()] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return out


def machine_facts() -> dict[str, Any]:
    mem_kib = 0
    load = os.getloadavg()
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    except OSError:
        pass
    return {
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "cpus": os.cpu_count(),
        "mem_total_gib": round(mem_kib / 1024 / 1024, 1),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "git": git(Path.cwd(), "--version").strip().removeprefix("git version "),
        "loadavg_1_5_15": [round(x, 2) for x in load],
    }


def generate(root: Path, sources: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    sizes: list[int] = []
    for i in range(sources):
        rel, text = make_source(rng, i)
        path = root / "evidence" / "source" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        sizes.append(len(text.encode("utf-8")))
    return {
        "files": len(sizes),
        "bytes_total": sum(sizes),
        "bytes_min": min(sizes, default=0),
        "bytes_median": int(statistics.median(sizes)) if sizes else 0,
        "bytes_max": max(sizes, default=0),
    }


def benchmark(root: Path, n_sources: int, seed: int, profile_dir: Path | None) -> dict[str, Any]:
    from thoth.evidence.layout import init_workspace

    load_before = [round(x, 2) for x in os.getloadavg()]
    init_workspace(root, name="prepare-bench")
    git(root, "init", "-q", "-b", "main")
    gen_start = time.perf_counter()
    corpus = generate(root, n_sources, seed)
    corpus["generate_s"] = round(time.perf_counter() - gen_start, 2)
    commit_all(root, "bench: generated sources")

    runs: list[Run] = []
    cold = run_child(root, "cold", profile_dir)
    cold.checks["all sources processed"] = cold.sources_processed == n_sources
    cold.checks["units written"] = cold.units_written > 0
    runs.append(cold)
    commit_all(root, "bench: cold prepare")
    corpus["units_total"] = sum(1 for p in (root / "evidence" / "curated").rglob("*.md"))

    before = snapshot(root)
    noop = run_child(root, "no-op", profile_dir)
    noop.checks["report.noop"] = noop.noop
    noop.checks["git status --porcelain empty"] = git_status(root) == ""
    noop.checks["no file touched"] = snapshot(root) == before
    noop.checks[f"wall < {NOOP_TARGET_S:g} s"] = noop.wall_s < NOOP_TARGET_S
    runs.append(noop)

    rng = random.Random(seed + 1)
    paths = sorted(p for p in (root / "evidence" / "source").rglob("*.md"))
    edited = rng.sample(paths, min(INCREMENTAL_EDITS, len(paths)))
    for n, path in enumerate(edited, start=1):
        path.write_text(edit_source(rng, path.read_text("utf-8"), n), encoding="utf-8")
    inc = run_child(root, "incremental", profile_dir)
    inc.checks[f"{len(edited)} sources processed"] = inc.sources_processed == len(edited)
    inc.checks["only edited sources changed"] = inc.counts.get("changed", 0) == len(edited)
    runs.append(inc)
    commit_all(root, "bench: incremental prepare")

    return {
        "machine": {**machine_facts(), "loadavg_1_5_15_before": load_before},
        "rss_method": RSS_METHOD,
        "seed": seed,
        "corpus": corpus,
        "target": {
            "name": f"no-op < {NOOP_TARGET_S:g} s",
            "wall_s": round(noop.wall_s, 3),
            "pass": noop.wall_s < NOOP_TARGET_S,
        },
        "scenarios": [asdict(r) for r in runs],
        "ok": all(ok for r in runs for ok in r.checks.values()),
    }


def print_table(result: dict[str, Any], workspace: str | None) -> None:
    from rich.console import Console
    from rich.table import Table as RichTable

    console = Console(highlight=False, width=110)
    m = result["machine"]
    c = result["corpus"]
    target = result["target"]
    verdict = "PASS" if target["pass"] else "FAIL"
    console.print(
        f"machine: {m['os']}, {m['cpus']} CPUs, {m['mem_total_gib']} GiB RAM, "
        f"Python {m['python']}, git {m['git']}"
    )
    console.print(
        "load avg 1/5/15 min: "
        + " ".join(map(str, m["loadavg_1_5_15_before"]))
        + " before, "
        + " ".join(map(str, m["loadavg_1_5_15"]))
        + " after (shared CPUs: compare cpu s with wall s)"
    )
    console.print(
        f"corpus: {c['files']} sources (seed {result['seed']}), "
        f"{c['bytes_total'] / 1024 / 1024:.2f} MiB, "
        f"{c['bytes_min']}/{c['bytes_median']}/{c['bytes_max']} B min/median/max, "
        f"{c['units_total']} units after cold prepare"
    )
    console.print(f"target: {target['name']}: {verdict} ({target['wall_s']:.2f} s)")
    table = RichTable(title="tht evidence prepare (rules)")
    table.add_column("scenario")
    table.add_column("sources", justify="right")
    table.add_column("units", justify="right")
    table.add_column("wall s", justify="right")
    table.add_column("cpu s", justify="right")
    table.add_column("peak RSS MiB", justify="right")
    table.add_column("checks")
    for run in result["scenarios"]:
        checks = run["checks"]
        failed = [name for name, ok in checks.items() if not ok]
        table.add_row(
            run["scenario"],
            f"{run['sources_processed']}/{run['sources_total']}",
            str(run["units_written"]),
            f"{run['wall_s']:.2f}",
            f"{run['cpu_s']:.2f}",
            f"{run['peak_rss_mib']:.1f}",
            "ok" if not failed else "FAIL: " + "; ".join(failed),
        )
    console.print(table)
    cold, noop, inc = result["scenarios"]
    console.print(
        "sources = processed/total; units = curated unit files written; "
        "cpu s = time.process_time() of the child"
    )
    console.print(
        f"incremental: {inc['units_created']} units created, {inc['units_updated']} updated, "
        f"{inc['units_written'] - inc['units_created'] - inc['units_updated']} unchanged but "
        "rewritten (new source hash in provenance)"
    )
    console.print(
        "memory: resource.getrusage(RUSAGE_SELF).ru_maxrss of a fresh child process per "
        f"scenario;\n        interpreter + imports included ({cold['rss_before_mib']:.1f} MiB "
        "before prepare), git subprocesses excluded"
    )
    console.print(
        "no-op checks: "
        + ", ".join(f"{k} {'ok' if v else 'FAIL'}" for k, v in noop["checks"].items())
    )
    if workspace:
        console.print(f"workspace kept at {workspace}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sources", type=int, default=1000, help="sources to generate")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the generator")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--keep", type=Path, help="build the workspace in DIR and keep it")
    parser.add_argument(
        "--profile", type=Path, help="write a cProfile dump per scenario into DIR (slower)"
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-profile", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sources < 1:
        parser.error("--sources must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child_main(args.child, args.child_profile)
    profile_dir: Path | None = args.profile
    if profile_dir:
        profile_dir = profile_dir.resolve()
        profile_dir.mkdir(parents=True, exist_ok=True)
    if args.keep:
        root = Path(args.keep).resolve()
        if root.exists() and any(root.iterdir()):
            raise SystemExit(f"--keep {root}: the directory exists and is not empty")
        result = benchmark(root, args.sources, args.seed, profile_dir)
        kept: str | None = str(root)
    else:
        with tempfile.TemporaryDirectory(prefix="thoth-prepare-bench-") as tmp:
            result = benchmark(Path(tmp) / "ws", args.sources, args.seed, profile_dir)
        kept = None
    result["workspace"] = kept
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print_table(result, kept)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
