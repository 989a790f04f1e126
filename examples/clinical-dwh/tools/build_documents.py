"""Build the binary documents of the demo workspace (PDF, DOCX, XLSX) under `documents/`.

The text documents (Markdown, HTML, plain text) are written by hand and committed as they are;
the binary ones are generated here, so that their content can be reviewed in a diff of this file.

Deterministic: the same bytes on every run. The PDF is written by hand (no timestamps, no random
document id); DOCX and XLSX are Zip packages whose entry timestamps and `docProps/core.xml` dates
are pinned after python-docx and openpyxl have written them. (The Zip entries are deflated by
zlib: a Python built against another zlib, such as zlib-ng, may write different but equally
valid bytes, which `--check` reports as out of date.)

    python tools/build_documents.py          # (re)write the files
    python tools/build_documents.py --check  # exit 1 if a committed file is out of date

Requires python-docx and openpyxl (both installed with Thoth). Spreadsheet cells hold values,
never formulas: Thoth reads the values a spreadsheet application stored, and openpyxl stores
none for a formula it writes.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import textwrap
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import docx
import openpyxl
from docx.document import Document as DocxDocument
from docx.enum.text import WD_BREAK
from docx.shared import Pt
from openpyxl.styles import Font

WORKSPACE = Path(__file__).resolve().parents[1]
DOCUMENTS = WORKSPACE / "documents"
FIXED_DATE = datetime(2024, 11, 18, 9, 0, 0)
FIXED_W3CDTF = "2024-11-18T09:00:00Z"
ENTITY = "Azienda Ospedaliera di Valdora"

# ============================================================================================
# PDF: a minimal hand-written writer (Helvetica and Helvetica-Bold, WinAnsiEncoding)

PAGE_WIDTH, PAGE_HEIGHT = 595.0, 842.0  # A4 in points
MARGIN_LEFT, MARGIN_TOP, MARGIN_BOTTOM = 72.0, 780.0, 60.0
WRAP_CHARS = 86  # about 430 pt of Helvetica 10 pt: inside the 451 pt text width
LEADING = 14.0
PARAGRAPH_GAP = 12.0  # the vertical gap layout extraction turns into a blank line


@dataclass(frozen=True)
class Text:
    """One line of text drawn at (x, y), y from the bottom of the page."""

    x: float
    y: float
    text: str
    bold: bool = False
    size: float = 10.0


def _pdf_string(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return escaped.encode("cp1252")  # WinAnsiEncoding, as declared for both fonts


def _pdf_literal(text: str) -> bytes:
    return b"(" + _pdf_string(text) + b")"


def build_pdf(pages: Sequence[Sequence[Text]], title: str, author: str) -> bytes:
    """A valid PDF 1.4 file: each line drawn with one `Tj` at its position; an Info
    dictionary with title and author only (no dates, so the bytes never change)."""
    count = len(pages)
    first_page = 6  # objects 1-5: catalog, pages, two fonts, info
    bodies: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % (first_page + 2 * i) for i in range(count))
        + b"] /Count %d >>" % count,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>",
        b"<< /Title " + _pdf_literal(title) + b" /Author " + _pdf_literal(author) + b" >>",
    ]
    for index, lines in enumerate(pages):
        stream = b"".join(
            b"BT /%s %.1f Tf %.1f %.1f Td "
            % (b"F2" if line.bold else b"F1", line.size, line.x, line.y)
            + _pdf_literal(line.text)
            + b" Tj ET\n"
            for line in lines
        )
        bodies.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] " % (PAGE_WIDTH, PAGE_HEIGHT)
            + b"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents %d 0 R >>"
            % (first_page + 2 * index + 1)
        )
        bodies.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: list[int] = []
    for number, body in enumerate(bodies, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(bodies) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 5 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(bodies) + 1,
        xref,
    )
    return bytes(out)


class PageComposer:
    """Flows headings, paragraphs and column tables down A4 pages, top to bottom."""

    def __init__(self, footer: str) -> None:
        self.footer = footer
        self.pages: list[list[Text]] = [[]]
        self.y = MARGIN_TOP

    def _room(self, height: float) -> None:
        if self.y - height < MARGIN_BOTTOM:
            self.new_page()

    def new_page(self) -> None:
        self.pages.append([])
        self.y = MARGIN_TOP

    def title(self, text: str, size: float = 16.0) -> None:
        self._room(size + PARAGRAPH_GAP)
        self.pages[-1].append(Text(MARGIN_LEFT, self.y, text, bold=True, size=size))
        self.y -= size + 8 + PARAGRAPH_GAP

    def heading(self, text: str) -> None:
        self._room(2 * LEADING + PARAGRAPH_GAP)  # never a heading alone at the page bottom
        self.pages[-1].append(Text(MARGIN_LEFT, self.y, text, bold=True, size=11.0))
        self.y -= LEADING + PARAGRAPH_GAP

    def paragraph(self, text: str) -> None:
        lines = textwrap.wrap(text, WRAP_CHARS)
        self._room(LEADING * len(lines))
        for line in lines:
            self.pages[-1].append(Text(MARGIN_LEFT, self.y, line))
            self.y -= LEADING
        self.y -= PARAGRAPH_GAP

    def table(
        self, columns: Sequence[float], header: Sequence[str], rows: Sequence[Sequence[str]]
    ) -> None:
        """Cells drawn at fixed column positions: the layout-table detector reads them back."""
        self._room(LEADING * (len(rows) + 1))
        for index, cells in enumerate([header, *rows]):
            for x, cell in zip(columns, cells, strict=True):
                self.pages[-1].append(Text(x, self.y, cell, bold=index == 0))
            self.y -= LEADING
        self.y -= PARAGRAPH_GAP

    def finish(self) -> list[list[Text]]:
        total = len(self.pages)
        for number, page in enumerate(self.pages, start=1):
            page.append(Text(MARGIN_LEFT, 40, f"{self.footer} — pag. {number}/{total}", size=8.0))
        return self.pages


def manuale_tempi_attesa_pdf() -> bytes:
    c = PageComposer("Manuale dei tempi di attesa in pronto soccorso, edizione 2024")
    c.title("Manuale dei tempi di attesa in pronto soccorso")
    c.paragraph(f"Edizione 2024. Direzione sanitaria, {ENTITY}.")
    c.heading("1. Scopo e ambito di applicazione")
    c.paragraph(
        "Il manuale stabilisce i tempi massimi di attesa tra il triage e l'inizio della prima "
        "visita medica per ciascun codice di priorità, e gli obiettivi di permanenza in pronto "
        "soccorso. Si applica dal 1 febbraio 2024 ai tre punti di pronto soccorso dell'Azienda: "
        "PS generale, PS pediatrico e PS ostetrico-ginecologico. Sostituisce l'edizione 2021, "
        "che usava ancora i tempi del triage a quattro colori."
    )
    c.heading("2. Definizioni")
    c.paragraph(
        "Tempo di attesa: minuti tra l'orario di triage e l'inizio della prima visita medica. "
        "Gli accessi che abbandonano il pronto soccorso prima della visita non hanno un tempo "
        "di attesa e sono monitorati con un indicatore a parte."
    )
    c.paragraph(
        "Tempo di permanenza: tempo totale dall'arrivo in pronto soccorso all'esito "
        "dell'accesso (dimissione, ricovero, trasferimento). La permanenza in osservazione "
        "breve intensiva (OBI) è conteggiata a parte e non concorre all'obiettivo di permanenza."
    )
    c.paragraph(
        "Rivalutazione: ripetizione del triage durante l'attesa. Il codice può essere "
        "modificato, ma gli indicatori di questo manuale usano sempre il codice assegnato al "
        "primo triage."
    )
    c.heading("3. Responsabilità")
    c.paragraph(
        "L'infermiere di triage assegna il codice di priorità entro 5 minuti dall'arrivo e lo "
        "rivaluta se l'attesa supera il tempo massimo del codice. Il medico di turno prende in "
        "carico i pazienti nell'ordine dei codici e, a parità di codice, nell'ordine di arrivo. "
        "Il coordinatore infermieristico verifica ogni mattina gli accessi del giorno "
        "precedente visitati oltre il tempo massimo e ne annota la causa nel registro di turno."
    )
    c.new_page()
    c.heading("4. Tempi massimi di attesa per codice di triage")
    c.paragraph(
        "La tabella riporta, per ciascun codice, il tempo massimo di attesa alla visita, la "
        "quota minima di accessi che deve essere visitata entro quel tempo (obiettivo) e il "
        "risultato misurato nel 2023 sugli accessi del PS generale."
    )
    c.table(
        [72, 122, 190, 310, 405, 470],
        ["Codice", "Colore", "Priorità", "Attesa max (min)", "Obiettivo", "Risultato 2023"],
        [
            ["1", "Rosso", "Emergenza", "0", "100%", "100%"],
            ["2", "Arancione", "Urgenza", "15", "90%", "78,4%"],
            ["3", "Azzurro", "Urgenza differibile", "60", "85%", "81,2%"],
            ["4", "Verde", "Urgenza minore", "120", "85%", "88,9%"],
            ["5", "Bianco", "Non urgenza", "240", "90%", "95,3%"],
        ],
    )
    c.paragraph(
        "Il codice 1 richiede l'accesso immediato alla sala emergenza: l'attesa massima di "
        "0 minuti indica che la visita inizia insieme al triage. Nel 2023 l'unico codice "
        "rimasto sotto l'obiettivo di oltre 10 punti è stato l'arancione."
    )
    c.paragraph(
        "Per il PS pediatrico valgono gli stessi tempi massimi; il triage pediatrico usa però "
        "scale del dolore specifiche per l'età del bambino."
    )
    c.new_page()
    c.heading("5. Permanenza in pronto soccorso")
    c.paragraph(
        "Obiettivo aziendale: almeno il 90% degli accessi deve concludersi entro 6 ore "
        "dall'arrivo, e nessun accesso deve superare le 8 ore di permanenza, esclusa l'OBI. "
        "Oltre le 8 ore il coordinatore segnala il caso al bed manager."
    )
    c.heading("6. Percorsi brevi (fast track)")
    c.paragraph(
        "I codici 4 e 5 con problemi oculistici, otorinolaringoiatrici, dermatologici o "
        "ortopedici minori possono essere inviati dal triage direttamente all'ambulatorio "
        "specialistico. Il fast track ortopedico è attivo dalle 8 alle 20 nei giorni feriali. "
        "Gli accessi inviati in fast track restano accessi di pronto soccorso ai fini del flusso "
        "EMUR: la loro attesa si chiude con l'inizio della visita specialistica."
    )
    c.heading("7. Indicatori di monitoraggio")
    c.paragraph(
        "Gli indicatori sono calcolati ogni mese dal data warehouse clinico e inviati alla "
        "Direzione sanitaria entro il 10 del mese successivo."
    )
    c.table(
        [72, 330, 430],
        ["Indicatore", "Soglia", "Risultato 2023"],
        [
            ["Abbandoni prima della visita", "4%", "3,2%"],
            ["Accessi con permanenza oltre 6 ore", "10%", "12,7%"],
            ["Accessi con permanenza oltre 8 ore, esclusa OBI", "0%", "4,1%"],
            ["Ritorni in PS entro 72 ore", "5%", "4,6%"],
        ],
    )
    c.paragraph(
        "La soglia di attenzione per gli abbandoni prima della visita è fissata al 4% degli "
        "accessi del mese: oltre la soglia il coordinatore analizza le fasce orarie con più "
        "abbandoni e propone una correzione dei turni."
    )
    c.new_page()
    c.heading("8. Sovraffollamento")
    c.paragraph(
        "Le misure da adottare in caso di sovraffollamento e di pazienti in attesa di posto "
        "letto (boarding) sono descritte nel piano aziendale per il sovraffollamento del pronto "
        "soccorso, edizione 2024, a cui questo manuale rimanda."
    )
    c.heading("9. Revisione")
    c.paragraph(
        "Il manuale è rivisto ogni anno entro il 31 gennaio sulla base dei risultati dell'anno "
        "precedente. L'edizione 2024 è stata approvata dal Direttore sanitario il 22 gennaio "
        "2024."
    )
    return build_pdf(
        c.finish(),
        title="Manuale dei tempi di attesa in pronto soccorso 2024",
        author=f"Direzione sanitaria, {ENTITY}",
    )


# ============================================================================================
# Zip packages (DOCX, XLSX): pinned timestamps


_CORE_DATES = re.compile(
    rb"(<dcterms:(created|modified)[^>]*>)[^<]*(</dcterms:(?:created|modified)>)"
)


def pinned_zip(data: bytes) -> bytes:
    """Rewrite a DOCX/XLSX package with fixed entry timestamps and fixed core dates."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            content = source.read(info.filename)
            if info.filename == "docProps/core.xml":
                content = _CORE_DATES.sub(
                    lambda m: m.group(1) + FIXED_W3CDTF.encode() + m.group(3), content
                )
            entry = zipfile.ZipInfo(info.filename, date_time=FIXED_DATE.timetuple()[:6])
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o600 << 16
            target.writestr(entry, content)
    return out.getvalue()


def _docx_bytes(document: DocxDocument, title: str) -> bytes:
    props = document.core_properties
    props.title = title
    props.author = ENTITY
    props.last_modified_by = ENTITY
    props.comments = ""
    props.revision = 1
    props.created = FIXED_DATE
    props.modified = FIXED_DATE
    buffer = io.BytesIO()
    document.save(buffer)
    return pinned_zip(buffer.getvalue())


def _docx_table(
    document: DocxDocument, header: Sequence[str], rows: Sequence[Sequence[str]]
) -> None:
    table = document.add_table(rows=1, cols=len(header))
    table.style = "Table Grid"
    for cell, text in zip(table.rows[0].cells, header, strict=True):
        cell.text = text
        for run in cell.paragraphs[0].runs:
            run.bold = True
    for row in rows:
        cells = table.add_row().cells
        for cell, text in zip(cells, row, strict=True):
            cell.text = text


# ============================================================================================
# DOCX: procedura di codifica SDO


def procedura_codifica_sdo_docx() -> bytes:
    d = docx.Document()
    d.styles["Normal"].font.name = "Calibri"
    d.styles["Normal"].font.size = Pt(11)
    d.add_heading("Procedura di codifica della scheda di dimissione ospedaliera (SDO)", level=0)
    d.add_paragraph(
        f"Procedura PR-SDO-03, revisione 4 del 15 marzo 2024. Ufficio SDO e Direzione medica "
        f"di presidio, {ENTITY}. Sostituisce la revisione 3 del 2021."
    )
    d.add_heading("1. Scopo", level=1)
    d.add_paragraph(
        "La procedura descrive come il medico del reparto di dimissione compila e chiude la SDO "
        "di ogni ricovero, ordinario o in day hospital, e come l'Ufficio SDO la controlla prima "
        "dell'invio mensile alla Regione. Diagnosi e interventi si codificano con la "
        "classificazione ICD-9-CM, versione italiana 2007, l'unica ammessa dal flusso regionale."
    )
    d.add_heading("2. Responsabilità", level=1)
    d.add_paragraph(
        "Il medico del reparto di dimissione è responsabile della codifica clinica: diagnosi "
        "principale, diagnosi secondarie, interventi e procedure. L'Ufficio SDO verifica la "
        "completezza e la coerenza formale, gestisce gli scarti regionali e non modifica mai "
        "un codice clinico senza il parere del medico che ha chiuso la scheda."
    )
    d.add_heading("3. Scelta della diagnosi principale", level=1)
    d.add_paragraph(
        "La diagnosi principale è la condizione che ha assorbito la maggiore quantità di "
        "risorse durante il ricovero. Va identificata alla fine del ricovero, come principale "
        "responsabile del bisogno di trattamento, e non coincide necessariamente con il motivo "
        "dell'accesso in pronto soccorso né con la diagnosi di ammissione."
    )
    d.add_paragraph(
        "Quando due condizioni soddisfano in ugual misura il criterio, si sceglie quella che ha "
        "motivato l'intervento chirurgico più impegnativo. I sintomi non si usano come diagnosi "
        "principale se è stata accertata la malattia che li ha causati.",
    )
    d.add_heading("4. Diagnosi secondarie", level=1)
    d.add_paragraph(
        "Si riportano fino a cinque diagnosi secondarie: le condizioni presenti all'ammissione "
        "o insorte durante il ricovero che hanno influenzato il trattamento o la durata della "
        "degenza. Le condizioni pregresse senza effetto sul ricovero non si codificano."
    )
    d.add_heading("5. Interventi e procedure", level=1)
    d.add_paragraph(
        "L'intervento principale è quello eseguito per la diagnosi principale; gli altri "
        "interventi e le procedure diagnostiche invasive seguono in ordine di importanza, fino "
        "a sei codici in tutto. Per ogni intervento si riportano la data e il codice fiscale "
        "del primo operatore."
    )
    d.add_heading("6. Controlli prima dell'invio", level=1)
    for item in (
        "coerenza tra sesso ed età del paziente e codici di diagnosi;",
        "presenza della data dell'intervento per ogni codice di intervento;",
        "degenza oltre la soglia del DRG motivata nella lettera di dimissione;",
        "modalità di dimissione valorizzata e coerente con l'esito del ricovero.",
    ):
        d.add_paragraph(item, style="List Bullet")
    d.add_heading("7. Scadenze del flusso SDO", level=1)
    d.add_paragraph("Le scadenze si contano dalla data di dimissione del ricovero.")
    _docx_table(
        d,
        ["Attività", "Responsabile", "Scadenza"],
        [
            [
                "Chiusura della SDO",
                "Medico del reparto di dimissione",
                "3 giorni lavorativi dalla dimissione",
            ],
            ["Controllo di completezza", "Ufficio SDO", "entro il 5 del mese successivo"],
            ["Invio del flusso alla Regione", "Ufficio SDO", "entro il 15 del mese successivo"],
            [
                "Correzione degli scarti regionali",
                "Ufficio SDO con il reparto",
                "entro 20 giorni dal ritorno degli scarti",
            ],
            [
                "Caricamento nel DWH clinico",
                "Team DWH",
                "con il caricamento notturno successivo all'invio",
            ],
        ],
    )
    d.add_heading("8. Riferimenti", level=1)
    d.add_paragraph(
        "Disciplinare regionale del flusso SDO in vigore; linee guida ministeriali per la "
        "codifica delle informazioni cliniche della SDO; grouper CMS versione 24 adottato dalla "
        "Regione per l'attribuzione del DRG."
    )
    return _docx_bytes(d, "Procedura di codifica SDO")


# ============================================================================================
# DOCX: FAQ per gli analisti del DWH (D:/R: markers, one answer across a page break)


def faq_analisti_docx() -> bytes:
    d = docx.Document()
    d.add_heading("FAQ per gli analisti del DWH clinico", level=0)
    d.add_paragraph(
        "Domande frequenti raccolte dal team DWH tra gennaio e ottobre 2024. Le risposte "
        "valgono per il DWH clinico di produzione; per i dati di test chiedere al team."
    )

    def pair(question: str, *answer: str, page_break_after: int | None = None) -> None:
        d.add_paragraph(f"D: {question}")
        for index, text in enumerate(answer):
            paragraph = d.add_paragraph(f"R: {text}" if index == 0 else text)
            if page_break_after == index:
                # Word moves the rest of the answer to the next page: the pair must stay whole.
                paragraph.add_run().add_break(WD_BREAK.PAGE)

    d.add_heading("Accesso e permessi", level=1)
    pair(
        "Come si richiede l'accesso in lettura al DWH clinico?",
        "Si compila il modulo RA-DWH, lo si fa firmare dal direttore della propria struttura "
        "e lo si invia al team DWH tramite il service desk. L'abilitazione al ruolo di sola "
        "lettura dwh_reader arriva entro 5 giorni lavorativi dalla richiesta completa.",
    )
    pair(
        "Posso estrarre dati a livello di singolo paziente?",
        "Sì, ma solo in forma pseudonimizzata: nello schema dwh il paziente è identificato da "
        "dwh.dim_patient.patient_key, che non è il codice fiscale né il numero nosologico. I "
        "dati identificativi si ottengono solo con un'autorizzazione scritta del responsabile "
        "della protezione dei dati (DPO), per un progetto e un periodo definiti.",
        "La chiave pseudonima viene rigenerata ogni anno il 1 gennaio: le estrazioni di anni "
        "diversi non si possono collegare tra loro per paziente. Chi ha bisogno di seguire gli "
        "stessi pazienti su più anni deve chiedere un'estrazione longitudinale al team DWH, "
        "che la prepara con una chiave di progetto dedicata.",
        page_break_after=0,
    )
    pair(
        "Le query pesanti possono girare in orario di lavoro?",
        "Tra le 8 e le 18 le query del ruolo dwh_reader che durano più di 15 minuti vengono "
        "interrotte automaticamente. Per elaborazioni lunghe si chiede un'estrazione "
        "programmata, che il team DWH esegue di notte dopo il caricamento.",
    )
    d.add_heading("Aggiornamento dei dati", level=1)
    pair(
        "A che ora sono disponibili i dati del giorno precedente?",
        "Il caricamento notturno parte alle 01:30 e termina di norma entro le 05:00. Il "
        "cruscotto direzionale viene aggiornato alle 06:30; se il caricamento è in ritardo, il "
        "cruscotto mostra in alto la data dell'ultimo aggiornamento riuscito.",
    )
    pair(
        "Per quanto tempo sono conservati i dati di dettaglio?",
        "I dati di dettaglio degli schemi operativi restano nel DWH per 10 anni dalla chiusura "
        "dell'episodio; le tabelle aggregate del cruscotto sono conservate senza limite.",
    )
    pair(
        "Dove trovo il dizionario dei dati?",
        "Nella sezione Dizionario del portale DWH: per ogni tabella elenca colonne, tipi, "
        "descrizioni e regole di caricamento, ed è aggiornato a ogni rilascio.",
    )
    d.add_heading("Qualità e riconciliazione", level=1)
    pair(
        "Perché il numero di ricoveri del cruscotto non coincide con il flusso SDO inviato?",
        "Il cruscotto conta i ricoveri per data di dimissione appena vengono chiusi in ADT, "
        "anche se la SDO non è ancora stata chiusa dal medico; il flusso SDO contiene solo le "
        "schede chiuse e validate. A mese consolidato la differenza resta sotto il 2%.",
    )
    pair(
        "Come si segnala un errore nei dati?",
        "Con un ticket sul service desk nella categoria DWH clinico, qualità dati, indicando "
        "tabella, periodo e un esempio. Il team DWH prende in carico la segnalazione entro 2 "
        "giorni lavorativi.",
    )
    pair(
        "Perché gli accessi del PS ostetrico non compaiono nel cruscotto del pronto soccorso?",
        "Il cruscotto del pronto soccorso generale esclude il PS ostetrico-ginecologico, che ha "
        "una pagina dedicata. Gli accessi ostetrici restano comunque nel flusso EMUR e nella "
        "tabella adt.ed_visit.",
    )
    return _docx_bytes(d, "FAQ per gli analisti del DWH")


# ============================================================================================
# XLSX: indicatori trimestrali di attività 2024


def indicatori_xlsx() -> bytes:
    wb = openpyxl.Workbook()
    bold = Font(bold=True)

    quarters = wb.active
    assert quarters is not None
    quarters.title = "Ricoveri per trimestre"
    quarters.append(
        [
            "Indicatori trimestrali dei ricoveri, anno 2024 (fonte: dwh.fact_admission, "
            "estrazione del 15 gennaio 2025)"
        ]
    )
    quarters.append([])
    header = [
        "Trimestre",
        "Ricoveri ordinari",
        "Ricoveri in day hospital",
        "Degenza media RO (giorni)",
        "Peso medio DRG",
        "Riammissioni a 30 giorni",
        "Ricoveri da pronto soccorso",
    ]
    quarters.append(header)
    rows: list[tuple[str, int, int, float, float, float, int]] = [
        ("1° trimestre 2024", 6412, 1873, 7.4, 1.18, 0.061, 2951),
        ("2° trimestre 2024", 6288, 1920, 7.1, 1.16, 0.058, 2804),
        ("3° trimestre 2024", 5731, 1402, 6.9, 1.15, 0.055, 2690),
        ("4° trimestre 2024", 6190, 1868, 7.3, 1.19, 0.060, 2877),
        ("Anno 2024", 24621, 7063, 7.2, 1.17, 0.059, 11322),
    ]
    for row in rows:
        quarters.append(list(row))
    for cell in quarters[3]:
        cell.font = bold
    for (rate,) in quarters.iter_rows(min_row=4, min_col=6, max_col=6):
        rate.number_format = "0.0%"

    wards = wb.create_sheet("Reparti 2024")
    wards.append(["Ricoveri ordinari e degenza per reparto di dimissione, anno 2024"])
    wards.append(
        [
            "Reparto",
            "Codice reparto",
            "Ricoveri ordinari",
            "Degenza media (giorni)",
            "Ricoveri oltre soglia DRG",
        ]
    )
    for ward in (
        ("Medicina generale", "02601", 6120, 9.8, 0.072),
        ("Chirurgia generale", "00901", 3240, 5.6, 0.031),
        ("Ortopedia e traumatologia", "03601", 2876, 6.3, 0.044),
        ("Cardiologia-UTIC", "00801", 2652, 5.2, 0.029),
        ("Neurologia", "03201", 1904, 9.4, 0.059),
        ("Geriatria", "02101", 1688, 12.1, 0.095),
        ("Ostetricia e ginecologia", "03701", 3587, 3.4, 0.008),
        ("Pediatria", "03901", 1210, 3.9, 0.012),
        ("Altri reparti", "", 1344, 8.5, 0.037),
        ("Totale", "", 24621, 7.2, 0.045),
    ):
        wards.append(list(ward))
    for cell in wards[2]:
        cell.font = bold
    for (rate,) in wards.iter_rows(min_row=3, min_col=5, max_col=5):
        rate.number_format = "0.0%"

    props = wb.properties
    props.title = "Indicatori trimestrali di attività 2024"
    props.creator = f"Controllo di gestione, {ENTITY}"
    props.lastModifiedBy = props.creator
    props.created = FIXED_DATE
    props.modified = FIXED_DATE
    buffer = io.BytesIO()
    wb.save(buffer)
    return pinned_zip(buffer.getvalue())


# ============================================================================================

BUILDERS: dict[str, Callable[[], bytes]] = {
    "pronto-soccorso/manuale-tempi-attesa-ps-2024.pdf": manuale_tempi_attesa_pdf,
    "ricoveri/procedura-codifica-sdo-2024.docx": procedura_codifica_sdo_docx,
    "faq/faq-analisti-dwh.docx": faq_analisti_docx,
    "indicatori/indicatori-trimestrali-attivita-2024.xlsx": indicatori_xlsx,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="only check the files are current")
    args = parser.parse_args(argv)
    stale: list[str] = []
    for relative, build in BUILDERS.items():
        path = DOCUMENTS / relative
        data = build()
        current = path.read_bytes() if path.is_file() else None
        if current == data:
            continue
        if args.check:
            stale.append(relative)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(f"wrote documents/{relative} ({len(data)} bytes)")
    if stale:
        print("out of date (run tools/build_documents.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
