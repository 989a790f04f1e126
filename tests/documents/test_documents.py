"""Level 1 documents: extraction of every format from real files, and chunking invariants.

Every file is generated here, in tmp_path: DOCX and XLSX with python-docx and openpyxl, and PDF
by hand. pypdf cannot write page text, and a hand-written PDF keeps the exact positions of each
line under the test's control (which is what table detection and page packing depend on)
without adding a PDF-writing library only for tests.
"""

from __future__ import annotations

import csv
import io
import math
import re
import zipfile
from collections.abc import Sequence
from datetime import datetime
from itertools import pairwise
from pathlib import Path

import docx
import openpyxl
import pypdf
import pytest

from thoth.documents import (
    Block,
    Chunk,
    ChunkingError,
    ChunkLimits,
    Document,
    ExtractionError,
    QaMarkers,
    chunk,
    chunk_stats,
    extract,
)
from thoth.errors import ThothError

DR = QaMarkers.prefixes(["D:", "Domanda:"], ["R:", "Risposta:"])
LIMITS = ChunkLimits()

# --------------------------------------------------------------------------------------------
# File builders

Line = tuple[float, float, str]  # x, y (from the bottom of the page), text


def _pdf_string(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return escaped.encode("cp1252")  # WinAnsiEncoding, as declared for the font


Rule = tuple[float, float, float, float]  # a stroked line from (x0, y0) to (x1, y1)


def build_pdf(
    pages: Sequence[Sequence[Line]], rules: Sequence[Sequence[Rule]] | None = None
) -> bytes:
    """A minimal valid PDF: one Helvetica font, each line drawn at its position, and on each
    page the stroked rules given for it (table borders)."""
    bodies: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(len(pages)))
        + b"] /Count %d >>" % len(pages),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for i, lines in enumerate(pages):
        stream = b"".join(
            b"BT /F1 10 Tf %.1f %.1f Td (" % (x, y) + _pdf_string(text) + b") Tj ET\n"
            for x, y, text in lines
        )
        stream += b"".join(
            b"0.5 w %.1f %.1f m %.1f %.1f l S\n" % (x0, y0, x1, y1)
            for x0, y0, x1, y1 in (rules[i] if rules else ())
        )
        bodies.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * i)
        )
        bodies.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets: list[int] = []
    for number, body in enumerate(bodies, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(bodies) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(bodies) + 1,
        xref,
    )
    return bytes(out)


def text_lines(lines: Sequence[str], top: float = 740, step: float = 14) -> list[Line]:
    """Lines of one paragraph block, one under the other."""
    return [(72, top - i * step, line) for i, line in enumerate(lines)]


def paragraphs_page(paragraphs: Sequence[Sequence[str]], top: float = 760) -> list[Line]:
    """Paragraphs separated by a vertical gap (which layout extraction keeps as a blank line)."""
    out: list[Line] = []
    y = top
    for para in paragraphs:
        out += text_lines(para, y)
        y -= 14 * len(para) + 24
    return out


def write(path: Path, data: bytes | str) -> Path:
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def kinds(document: Document) -> list[str]:
    return [block.kind for block in document.blocks]


def table_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("|")]


# --------------------------------------------------------------------------------------------
# Extraction, format by format


MARKDOWN = """---
title: metadati del wiki, non contenuto
---
# Mercato giapponese

Il vino italiano in Giappone cresce **lentamente**.

## Quote

- Giappone: 12%
- Corea: 4%
  - di cui spumanti: 1%

| Mercato | Quota | Crescita |
|---|---|---|
| Giappone | 12% | 3,5% |
| Corea | 4% | 2,1% \\| stimata |

## Note

> Dati 2024, fonte interna.
"""


def test_markdown_keeps_structure_in_order(tmp_path: Path) -> None:
    doc = extract(write(tmp_path / "mercato.md", MARKDOWN))
    assert doc.format == "markdown"
    assert doc.title == "Mercato giapponese"
    assert kinds(doc) == [
        "heading",
        "paragraph",
        "heading",
        "list",
        "table",
        "heading",
        "paragraph",
    ]
    assert "metadati" not in doc.text, "front matter is metadata, not content"
    paragraph, listing, table = doc.blocks[1], doc.blocks[3], doc.blocks[4]
    assert paragraph.text == "Il vino italiano in Giappone cresce **lentamente**."
    assert paragraph.heading_path == ("Mercato giapponese",)
    assert listing.text.splitlines()[-1] == "  - di cui spumanti: 1%"
    assert table.heading_path == ("Mercato giapponese", "Quote")
    assert table.header == ("Mercato", "Quota", "Crescita")
    assert table.rows == (("Giappone", "12%", "3,5%"), ("Corea", "4%", "2,1% | stimata"))
    assert table.text.splitlines()[1] == "| --- | --- | --- |"
    assert "2,1% \\| stimata" in table.text, "a pipe inside a cell is escaped"
    assert doc.blocks[-1].heading_path == ("Mercato giapponese", "Note")
    assert all(block.page is None for block in doc.blocks)


def test_plain_text_paragraphs_and_lists(tmp_path: Path) -> None:
    text = "Primo paragrafo,\nsu due righe.\r\n\r\n- voce uno\n- voce due\n\n\nUltimo."
    doc = extract(write(tmp_path / "note.txt", text))
    assert doc.title == "note"
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("paragraph", "Primo paragrafo,\nsu due righe."),
        ("list", "- voce uno\n- voce due"),
        ("paragraph", "Ultimo."),
    ]


def test_html_blocks_lists_and_tables_in_order(tmp_path: Path) -> None:
    html = """<!doctype html><html><head><title>Bando export</title>
    <style>p { color: red }</style><script>var x = "<p>not text</p>";</script></head>
    <body><nav>Menu</nav>
    <h1>Bando</h1><p>Contributo a fondo <b>perduto</b><br>per le PMI &amp; reti.</p>
    <ul><li>Requisito A</li><li>Requisito B<ol><li>sotto uno</li><li>sotto due</li></ol>
    nota finale</li></ul>
    <h2>Importi</h2>
    <table><caption>Massimali</caption><thead><tr><th>Voce</th><th>Importo</th></tr></thead>
    <tbody><tr><td>Fiere</td><td>10.000 €</td></tr><tr><td>Consulenza</td><td>5.000 €</td></tr>
    </tbody></table>
    <div>Testo finale <span>in un div</span></div></body></html>"""
    doc = extract(write(tmp_path / "bando.html", html))
    assert doc.title == "Bando export"
    assert "not text" not in doc.text and "color" not in doc.text
    assert "Menu" not in doc.text  # <nav> is page chrome
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", "Bando"),
        ("paragraph", "Contributo a fondo perduto\nper le PMI & reti."),
        ("list", "- Requisito A\n- Requisito B\n  1. sotto uno\n  2. sotto due\n  nota finale"),
        ("heading", "Importi"),
        ("paragraph", "Massimali"),
        (
            "table",
            "| Voce | Importo |\n| --- | --- |\n| Fiere | 10.000 € |\n| Consulenza | 5.000 € |",
        ),
        ("paragraph", "Testo finale in un div"),
    ]
    assert doc.blocks[5].heading_path == ("Bando", "Importi")


def test_html_page_chrome_goes_and_article_headers_stay(tmp_path: Path) -> None:
    """Landmarks as HTML and ARIA define them: a page-level <header> or <footer> (banner,
    contentinfo), <aside> (complementary), and any element whose role is a navigation,
    banner, contentinfo, complementary or search landmark are page chrome; a <header> or
    <footer> inside an <article>, <main> or <section> belongs to that content."""
    html = """<html><head><title>Tariffe</title></head><body>
    <header><a href="/">Consorzio</a><ul><li><a href="/chi">Chi siamo</a></li></ul></header>
    <div role="navigation"><a href="/">Home</a> &gt; Servizi</div>
    <main><article><header><h1>Tariffe 2025</h1><p>Aggiornate a gennaio.</p></header>
    <table><tr><th>Codice</th><th>Euro</th></tr><tr><td>A|B</td><td>1.200</td></tr></table>
    <footer>Fonte: delibera 12/2024.</footer></article>
    <aside><h3>Articoli correlati</h3><ul><li>Bando fiere</li></ul></aside>
    <form role="search"><label>Cerca nel sito</label></form></main>
    <footer><p>© 2025 Consorzio</p><ul><li>Privacy</li></ul></footer></body></html>"""
    doc = extract(write(tmp_path / "tariffe.html", html))
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", "Tariffe 2025"),
        ("paragraph", "Aggiornate a gennaio."),
        ("table", "| Codice | Euro |\n| --- | --- |\n| A\\|B | 1.200 |"),
        ("paragraph", "Fonte: delibera 12/2024."),
    ]
    assert doc.blocks[2].rows == (("A|B", "1.200"),)


def _report_pdf() -> bytes:
    page1 = [
        (72, 740, "Relazione sul mercato giapponese"),
        (72, 710, "Il vino italiano cresce in Giappone, con una quota stabile."),
        (72, 696, "La seconda riga del paragrafo continua qui."),
        (72, 650, "Mercato"), (220, 650, "Quota"), (320, 650, "Crescita"),
        (72, 636, "Giappone"), (220, 636, "12%"), (320, 636, "3,5%"),
        (72, 622, "Corea"), (220, 622, "4%"), (320, 622, "2,1%"),
        (72, 608, "Cina"), (220, 608, "7%"), (320, 608, "1,0%"),
        (72, 570, "Testo dopo la tabella: è la fine della pagina."),
    ]  # fmt: skip
    page2 = text_lines(["Seconda pagina: conclusioni.", "Il mercato resta interessante."])
    return build_pdf([page1, page2])


def test_pdf_text_and_simple_table_with_page_numbers(tmp_path: Path) -> None:
    doc = extract(write(tmp_path / "relazione.pdf", _report_pdf()))
    assert doc.format == "pdf" and doc.page_count == 2 and doc.empty_pages == ()
    assert [(b.kind, b.page) for b in doc.blocks] == [
        ("paragraph", 1),
        ("paragraph", 1),
        ("table", 1),
        ("paragraph", 1),
        ("paragraph", 2),
    ]
    assert doc.blocks[0].text == "Relazione sul mercato giapponese"
    table = doc.blocks[2]
    assert table.header == ("Mercato", "Quota", "Crescita")
    assert table.rows == (
        ("Giappone", "12%", "3,5%"),
        ("Corea", "4%", "2,1%"),
        ("Cina", "7%", "1,0%"),
    )
    assert doc.blocks[3].text == "Testo dopo la tabella: è la fine della pagina."
    assert doc.blocks[4].text == "Seconda pagina: conclusioni.\nIl mercato resta interessante."


def test_pdf_prose_is_not_taken_for_a_table(tmp_path: Path) -> None:
    # Irregular double spaces (as in justified text) do not line up in columns.
    prose = [
        "Il  mercato giapponese del vino importato resta  concentrato",
        "sui rossi  strutturati, mentre i bianchi  crescono nelle",
        "grandi città; gli  spumanti seguono  una dinamica propria",
        "legata alle  festività e  ai consumi fuori casa.",
    ]
    # Aligned columns without figures (an option list) are a layout, not a table of data.
    options = [
        (72, 740, "-c, --check"), (220, 740, "controlla solo la sintassi"),
        (72, 726, "-o, --output"), (220, 726, "file di uscita"),
        (72, 712, "-h, --help"), (220, 712, "mostra questo aiuto"),
    ]  # fmt: skip
    doc = extract(write(tmp_path / "prosa.pdf", build_pdf([text_lines(prose), options])))
    assert kinds(doc) == ["paragraph", "paragraph"]
    assert "concentrato\nsui rossi strutturati" in doc.blocks[0].text
    assert doc.blocks[1].text.split("\n")[0] == "-c, --check controlla solo la sintassi"


def test_pdf_page_without_text_is_reported(tmp_path: Path) -> None:
    pdf = build_pdf([text_lines(["Pagina con testo."]), [], text_lines(["Terza pagina."])])
    doc = extract(write(tmp_path / "scansione.pdf", pdf))
    assert doc.empty_pages == (2,)
    assert doc.notes == ("page 2 has no text layer (a scanned image?): run OCR",)


def test_pdf_encrypted_with_empty_password_is_read(tmp_path: Path) -> None:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(_report_pdf())))
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    doc = extract(write(tmp_path / "protetto.pdf", buffer.getvalue()))
    assert doc.blocks[0].text == "Relazione sul mercato giapponese"


def _docx_file(path: Path) -> Path:
    document = docx.Document()
    document.add_heading("Piano export 2025", level=0)
    document.add_heading("Obiettivi", level=1)
    document.add_paragraph("Aumentare le vendite in Asia del 10%.")
    document.add_paragraph("Giappone", style="List Bullet")
    document.add_paragraph("Corea", style="List Bullet")
    document.add_heading("Budget", level=2)
    table = document.add_table(rows=3, cols=2)
    for row, values in zip(
        table.rows, [("Voce", "Euro"), ("Fiere", "10.000"), ("Viaggi", "4.500")], strict=True
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_paragraph("Prima fase", style="List Number")
    document.add_paragraph("Seconda fase", style="List Number")
    document.add_paragraph("Chiusura del piano.")
    document.save(str(path))
    return path


def test_docx_headings_lists_tables_in_document_order(tmp_path: Path) -> None:
    doc = extract(_docx_file(tmp_path / "piano.docx"))
    assert doc.title == "Piano export 2025"
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", "Piano export 2025"),
        ("heading", "Obiettivi"),
        ("paragraph", "Aumentare le vendite in Asia del 10%."),
        ("list", "- Giappone\n- Corea"),
        ("heading", "Budget"),
        ("table", "| Voce | Euro |\n| --- | --- |\n| Fiere | 10.000 |\n| Viaggi | 4.500 |"),
        ("list", "1. Prima fase\n2. Seconda fase"),
        ("paragraph", "Chiusura del piano."),
    ]
    assert doc.blocks[2].heading_path == ("Obiettivi",)
    assert doc.blocks[5].heading_path == ("Obiettivi", "Budget")


def _store_cached_value(path: Path, cell: str, value: str) -> None:
    """openpyxl writes formulas without their computed value; Excel stores both. Add it."""
    with zipfile.ZipFile(path) as source:
        entries = {name: source.read(name) for name in source.namelist()}
    sheet = entries["xl/worksheets/sheet1.xml"].decode()
    pattern = rf'(<c r="{cell}"[^>]*>\s*<f>[^<]*</f>)\s*<v\s*(?:/>|>\s*</v>)'
    sheet, count = re.subn(pattern, rf"\1<v>{value}</v>", sheet)
    assert count == 1
    entries["xl/worksheets/sheet1.xml"] = sheet.encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for name, data in entries.items():
            target.writestr(name, data)


def _xlsx_file(path: Path, formula_value: str | None = "6") -> Path:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Vendite"
    sheet["A1"] = "Vendite per mercato, 2024"  # a caption above the table
    rows: list[list[str | float | datetime | None]] = [
        ["", "Mercato", "Quota", "Data", "Totale"],
        ["", "Giappone", 0.035, datetime(2024, 3, 1), "=2*3"],
        ["", None, None, None, None],  # an empty row inside the table
        ["", "Corea", 0.12, datetime(2024, 3, 2, 15, 30), 7.0],
    ]
    for r, row in enumerate(rows, start=3):
        for c, value in enumerate(row, start=1):
            if value not in ("", None):
                sheet.cell(row=r, column=c, value=value)
    sheet["C4"].number_format = "0.0%"
    sheet["C6"].number_format = "0%"
    workbook.create_sheet("Vuoto")
    other = workbook.create_sheet("Mercati")
    other.append(["Paese", "Canale"])
    other.append(["Giappone", "Horeca"])
    workbook.save(path)
    if formula_value is not None:
        _store_cached_value(path, "E4", formula_value)
    return path


def test_xlsx_sheets_become_markdown_tables_of_values(tmp_path: Path) -> None:
    doc = extract(_xlsx_file(tmp_path / "vendite.xlsx"))
    assert [(b.kind, b.heading_path) for b in doc.blocks] == [
        ("heading", ("Vendite",)),
        ("paragraph", ("Vendite",)),
        ("table", ("Vendite",)),
        ("heading", ("Mercati",)),
        ("table", ("Mercati",)),
    ]
    assert doc.blocks[1].text == "Vendite per mercato, 2024"
    table = doc.blocks[2]
    assert table.header == ("Mercato", "Quota", "Data", "Totale"), "empty column A trimmed"
    assert table.rows == (
        ("Giappone", "3.5%", "2024-03-01", "6"),  # the stored value, never the formula
        ("Corea", "12%", "2024-03-02 15:30:00", "7"),
    ), "empty row dropped, percentages as shown in the sheet"
    assert doc.notes == ("sheet 'Vuoto' is empty",)


def test_xlsx_formula_without_stored_value_is_an_error(tmp_path: Path) -> None:
    path = _xlsx_file(tmp_path / "calcolo.xlsx", formula_value=None)
    with pytest.raises(ExtractionError) as info:
        extract(path)
    message = str(info.value)
    assert "calcolo.xlsx" in message and "sheet 'Vendite'" in message and "E4" in message


def test_csv_dialect_is_sniffed(tmp_path: Path) -> None:
    text = '\ufeffMercato;Nota;Quota\nGiappone;"rossi; bianchi";12\nCorea;spumanti;4\n'
    doc = extract(write(tmp_path / "quote.csv", text))
    assert kinds(doc) == ["table"]
    assert doc.blocks[0].header == ("Mercato", "Nota", "Quota")
    assert doc.blocks[0].rows == (("Giappone", "rossi; bianchi", "12"), ("Corea", "spumanti", "4"))


# --------------------------------------------------------------------------------------------
# Extraction errors: each names the file and says what to do


@pytest.mark.parametrize("name", ["nota.txt", "nota.md", "pagina.html", "dati.csv"])
def test_non_utf8_text_is_refused(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / name, "Qualità del servizio\n".encode("latin-1"))
    with pytest.raises(ExtractionError) as info:
        extract(path)
    assert str(path) in str(info.value)
    assert "not valid UTF-8" in str(info.value) and "re-save the file as UTF-8" in str(info.value)
    assert info.value.problems[0].code == "encoding"


@pytest.mark.parametrize(
    "name,data",
    [
        ("rotto.docx", b"PK\x03\x04 not really a zip archive"),
        ("rotto.xlsx", b"\x00\x01 random bytes, not a workbook"),
        ("rotto.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 9 0 R >> trunc"),
        ("vuoto.pdf", b""),
    ],
)
def test_corrupt_files_are_refused_naming_the_file(tmp_path: Path, name: str, data: bytes) -> None:
    path = write(tmp_path / name, data)
    with pytest.raises(ExtractionError) as info:
        extract(path)
    assert str(path) in str(info.value)
    assert info.value.problems[0].hint


def test_truncated_docx_and_xlsx_are_refused(tmp_path: Path) -> None:
    for path in (_docx_file(tmp_path / "a.docx"), _xlsx_file(tmp_path / "b.xlsx")):
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
        with pytest.raises(ExtractionError, match=re.escape(path.name)):
            extract(path)


def test_password_protected_pdf_is_refused(tmp_path: Path) -> None:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(_report_pdf())))
    writer.encrypt(user_password="segreta", owner_password="owner", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    path = write(tmp_path / "riservato.pdf", buffer.getvalue())
    with pytest.raises(ExtractionError) as info:
        extract(path)
    assert str(path) in str(info.value) and "encrypted" in str(info.value)
    assert info.value.problems[0].code == "encrypted"


def test_pdf_without_any_text_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "scansione.pdf", build_pdf([[], []]))
    with pytest.raises(ExtractionError, match="run OCR"):
        extract(path)


@pytest.mark.parametrize("name", ["vecchio.doc", "foglio.xls", "senza_estensione"])
def test_unsupported_extension_is_refused(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / name, b"whatever")
    with pytest.raises(ExtractionError, match="unsupported file type") as info:
        extract(path)
    assert str(path) in str(info.value) and ".docx" in str(info.value)


def test_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ThothError, match=r"manca\.md"):
        extract(tmp_path / "manca.md")


# --------------------------------------------------------------------------------------------
# Heading dialects, declared per source

NUMBERED = """Regolamento del bando

1. Premessa
Il bando finanzia la partecipazione a fiere.

1.1 Beneficiari
- piccole imprese
- medie imprese

1.2.1.
Chi ha sede in regione.
2. Questa frase finisce con un punto.
2 Nessun punto dopo il numero
"""


def headings(document: Document) -> list[tuple[int | None, str]]:
    return [(b.level, b.text) for b in document.blocks if b.kind == "heading"]


@pytest.mark.parametrize("name", ["bando.md", "bando.txt"])
def test_numbered_heading_dialect(tmp_path: Path, name: str) -> None:
    doc = extract(write(tmp_path / name, NUMBERED), heading_dialect="numbered")
    assert headings(doc) == [(1, "1. Premessa"), (2, "1.1 Beneficiari"), (3, "1.2.1.")]
    beneficiaries = next(b for b in doc.blocks if b.kind == "list")
    assert beneficiaries.heading_path == ("1. Premessa", "1.1 Beneficiari")
    sentence_line = next(b for b in doc.blocks if "Questa frase" in b.text)
    assert sentence_line.heading_path == ("1. Premessa", "1.1 Beneficiari", "1.2.1.")
    assert "2 Nessun punto" in sentence_line.text, "one number needs its dot"
    assert doc.title == "bando", "a numbered section is not the document's title"


def test_numbered_dialect_leaves_fenced_code_alone(tmp_path: Path) -> None:
    text = "# Guida\n\n1. Uso\n\n```\n2. dentro il codice\n```\n"
    doc = extract(write(tmp_path / "guida.md", text), heading_dialect="numbered")
    assert headings(doc) == [(1, "Guida"), (1, "1. Uso")]
    assert doc.title == "Guida"
    assert doc.blocks[-1].text == "```\n2. dentro il codice\n```"


def test_markdown_dialect_keeps_numbered_lines_as_lists(tmp_path: Path) -> None:
    doc = extract(write(tmp_path / "lista.md", "1. Premessa\n2. Beneficiari\n"))
    assert kinds(doc) == ["list"]
    plain = extract(write(tmp_path / "lista.txt", NUMBERED))
    assert headings(plain) == []


@pytest.mark.parametrize("name", ["nota.md", "nota.txt"])
def test_bold_heading_dialect(tmp_path: Path, name: str) -> None:
    text = "**Premessa**\nIl bando finanzia le fiere.\n\n__Beneficiari__\n\nLe PMI, **solo** se in regione.\n"
    doc = extract(write(tmp_path / name, text), heading_dialect="bold")
    assert headings(doc) == [(2, "Premessa"), (2, "Beneficiari")]
    assert doc.blocks[-1].text == "Le PMI, **solo** se in regione."
    assert doc.blocks[-1].heading_path == ("Beneficiari",)


# --------------------------------------------------------------------------------------------
# Chunking: blocks


def sentence(n: int, words: int = 12) -> str:
    return f"Frase {n} " + " ".join(f"parola{n}x{i}" for i in range(words)) + "."


def assert_sizes(chunks: Sequence[Chunk], limits: ChunkLimits = LIMITS) -> None:
    assert chunks
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert limits.floor_chars <= len(c.text) <= limits.max_chars, (len(c.text), c.text[:80])


def test_short_blocks_are_packed_and_no_chunk_is_under_the_floor(tmp_path: Path) -> None:
    # One-line headings with one short sentence each: chunked one block at a time, most chunks
    # would be 20-character headings (the seed's 33% of empty bait).
    sections = [f"## Sezione {n}\n\nBreve nota numero {n} sul mercato." for n in range(40)]
    doc = extract(write(tmp_path / "note.md", "# Note\n\n" + "\n\n".join(sections)))
    chunks = chunk(doc, "blocks")
    assert_sizes(chunks)
    assert len(chunks) < len(doc.blocks) / 4
    assert all(not c.text.rstrip().split("\n")[-1].startswith("#") for c in chunks), (
        "a heading never ends a chunk: it belongs with what follows"
    )
    first_section = next(c for c in chunks if "## Sezione 5\n" in c.text)
    assert "Breve nota numero 5" in first_section.text
    assert chunks[0].heading_path == ("Note",)
    assert sum(c.text.count("Breve nota") for c in chunks) == 40, "nothing lost, nothing doubled"


def test_whole_short_document_is_one_chunk_under_the_floor(tmp_path: Path) -> None:
    doc = extract(write(tmp_path / "breve.md", "# Orari\n\nAperto dalle 9 alle 17."))
    chunks = chunk(doc, "blocks")
    assert [c.text for c in chunks] == ["# Orari\n\nAperto dalle 9 alle 17."]


def test_overlap_repeats_the_previous_short_paragraph(tmp_path: Path) -> None:
    paragraphs = [sentence(n, 20) for n in range(14)]  # ~230 characters each
    doc = extract(write(tmp_path / "lungo.md", "# Analisi\n\n" + "\n\n".join(paragraphs)))
    chunks = chunk(doc, "blocks")
    assert len(chunks) >= 2
    assert_sizes(chunks)
    for previous, current in pairwise(chunks):
        last_paragraph = previous.text.split("\n\n")[-1]
        assert current.text.startswith(last_paragraph + "\n\n")
        assert current.heading_path == ("Analisi",)


def test_no_overlap_when_the_last_paragraph_is_long(tmp_path: Path) -> None:
    paragraphs = [sentence(n, 45) for n in range(8)]  # ~420 characters: above the overlap limit
    doc = extract(write(tmp_path / "lungo.md", "\n\n".join(paragraphs)))
    chunks = chunk(doc, "blocks")
    joined = "\n\n".join(c.text for c in chunks)
    assert joined == "\n\n".join(paragraphs)


def test_long_paragraph_is_split_at_sentences_into_balanced_parts(tmp_path: Path) -> None:
    text = " ".join(sentence(n) for n in range(45))  # ~6,300 characters, one paragraph
    doc = extract(write(tmp_path / "muro.txt", text))
    chunks = chunk(doc, "blocks")
    assert len(chunks) == math.ceil(len(text) / LIMITS.max_chars) == 4
    assert_sizes(chunks)
    assert all(c.text.endswith(".") for c in chunks), "cuts fall at sentence ends"
    assert min(len(c.text) for c in chunks) > 1000, "balanced, no small remainder"


def _table_markdown(rows: int) -> str:
    lines = ["| Mercato | Prodotto | Quota | Crescita |", "|---|---|---|---|"]
    lines += [f"| Mercato {n} | Prodotto {n} | {n % 30}% | {n % 7},5% |" for n in range(rows)]
    return "\n".join(lines)


def test_a_table_that_fits_is_never_split(tmp_path: Path) -> None:
    before = "\n\n".join(sentence(n, 20) for n in range(6))
    table = _table_markdown(25)  # ~1,100 characters
    doc = extract(write(tmp_path / "t.md", f"# Quote\n\n{before}\n\n{table}\n\nFine."))
    table_text = doc.blocks[-2].text
    chunks = chunk(doc, "blocks")
    assert_sizes(chunks)
    holding = [c for c in chunks if "| Mercato 0 |" in c.text]
    assert len(holding) == 1 and table_text in holding[0].text
    assert holding[0].kind == "table"
    assert sum(len(re.findall(r"\| Mercato \d+ \|", c.text)) for c in chunks) == 25


def test_a_long_table_is_split_by_rows_repeating_the_header(tmp_path: Path) -> None:
    doc = extract(write(tmp_path / "t.md", "## Tabella quote\n\n" + _table_markdown(150)))
    header = doc.blocks[-1].text.split("\n")[:2]
    chunks = chunk(doc, "blocks")
    assert len(chunks) > 3
    assert_sizes(chunks)
    seen: list[str] = []
    for c in chunks:
        rows = table_lines(c.text)
        assert rows[:2] == header, "every part starts its table with the header row"
        assert len(rows) - 2 > 10, "never a handful of rows per chunk"
        assert c.kind == "table" and c.heading_path == ("Tabella quote",)
        seen += rows[2:]
    assert seen == _table_markdown(150).split("\n")[2:], "all rows, in order, once"


# --------------------------------------------------------------------------------------------
# Chunking: PDF pages, Q&A, spreadsheets


def test_pdf_chunks_never_straddle_pages(tmp_path: Path) -> None:
    pages = []
    for page in (1, 2, 3):
        paragraphs = [
            [
                f"P{page} paragrafo {n} riga {i}: testo del rapporto annuale sul mercato."
                for i in range(3)
            ]
            for n in range(10)
        ]
        pages.append(paragraphs_page(paragraphs))
    doc = extract(write(tmp_path / "rapporto.pdf", build_pdf(pages)))
    chunks = chunk(doc, "blocks")
    assert {c.page for c in chunks} == {1, 2, 3}
    assert len(chunks) > 3, "each page needs more than one chunk"
    assert_sizes(chunks)
    for c in chunks:
        markers = set(re.findall(r"P(\d) paragrafo", c.text))
        assert markers == {str(c.page)}, f"chunk {c.ordinal} mixes pages {markers}"
    assert [c.page for c in chunks] == sorted(c.page or 0 for c in chunks)


def test_pdf_page_shorter_than_the_floor_keeps_its_own_chunk(tmp_path: Path) -> None:
    long_page = paragraphs_page([[sentence(n, 8)] for n in range(6)])
    doc = extract(write(tmp_path / "r.pdf", build_pdf([text_lines(["Allegato B"]), long_page])))
    chunks = chunk(doc, "blocks")
    assert chunks[0].text == "Allegato B" and chunks[0].page == 1
    assert all(c.page == 2 for c in chunks[1:])
    assert chunk_stats(chunks)["under_floor"] == 1, "visible in the report"


QA_PAGE_1 = [
    "FAQ bando export 2025",
    "D: Qual è la scadenza per presentare la domanda?",
    "R: La scadenza è il 30 giugno 2025 alle ore 12, tramite il portale regionale.",
    "D: Chi può partecipare al bando?",
    "R: Possono partecipare le piccole e medie imprese con sede operativa",
]
QA_PAGE_2 = [
    "in regione, iscritte al registro delle imprese da almeno due anni.",
    "D: Quali spese sono ammissibili?",
    "R: Fiere internazionali, consulenze per l'export e traduzioni dei materiali.",
]


def test_qa_one_chunk_per_pair_across_a_page_break(tmp_path: Path) -> None:
    pdf = build_pdf([text_lines(QA_PAGE_1), text_lines(QA_PAGE_2)])
    doc = extract(write(tmp_path / "faq.pdf", pdf))
    chunks = chunk(doc, "qa", qa_markers=DR)
    assert [c.kind for c in chunks] == ["qa", "qa", "qa"]
    assert [c.page for c in chunks] == [1, 1, 2], "a pair cites the page of its question"
    assert chunks[0].text.startswith("FAQ bando export 2025\n\nD: Qual è la scadenza")
    assert chunks[1].text == (
        "D: Chi può partecipare al bando?\n"
        "R: Possono partecipare le piccole e medie imprese con sede operativa\n"
        "in regione, iscritte al registro delle imprese da almeno due anni."
    )
    assert chunks[2].text.startswith("D: Quali spese")


def test_qa_markers_by_prefix_and_by_regex(tmp_path: Path) -> None:
    md = "# FAQ\n\n## Bandi\n\nDomanda: Serve la firma digitale?\nRisposta: Sì, del legale rappresentante.\n\nDomanda: Si può delegare?\nRisposta: Sì, con procura."
    doc = extract(write(tmp_path / "faq.md", md))
    chunks = chunk(doc, "qa", qa_markers=DR)
    assert [c.text.split("\n")[0] for c in chunks] == [
        "Domanda: Serve la firma digitale?",
        "Domanda: Si può delegare?",
    ]
    assert chunks[1].heading_path == ("FAQ", "Bandi")
    numbered = "Q1. Orari?\nA1. Dalle 9 alle 17.\n\nQ2. Sede?\nA2. Milano, via Roma 1."
    doc = extract(write(tmp_path / "faq.txt", numbered))
    markers = QaMarkers.regex(r"Q\d+\.", r"A\d+\.")
    assert [c.text for c in chunk(doc, "qa", qa_markers=markers)] == [
        "Q1. Orari?\nA1. Dalle 9 alle 17.",
        "Q2. Sede?\nA2. Milano, via Roma 1.",
    ]


def test_qa_long_answer_is_split_repeating_the_question(tmp_path: Path) -> None:
    answer = " ".join(sentence(n) for n in range(30))  # ~4,200 characters
    doc = extract(write(tmp_path / "faq.md", f"D: Come si rendiconta?\n\nR: {answer}"))
    chunks = chunk(doc, "qa", qa_markers=DR)
    assert len(chunks) == 3
    assert all(c.text.startswith("D: Come si rendiconta?\n") for c in chunks)
    assert_sizes(chunks)
    assert chunks[1].text.split("\n", 1)[1] in answer, "parts of the answer, in order"


def test_qa_question_without_answer_is_an_error(tmp_path: Path) -> None:
    doc = extract(write(tmp_path / "faq.md", "D: Prima?\n\nR: Sì.\n\nD: Seconda, senza risposta?"))
    with pytest.raises(ChunkingError) as info:
        chunk(doc, "qa", qa_markers=DR)
    assert "faq.md" in str(info.value) and "question without an answer" in str(info.value)


@pytest.mark.parametrize("strategy", ["qa", "spreadsheet"])
def test_declared_strategy_without_markers_fails_with_zero_chunks(
    tmp_path: Path, strategy: str
) -> None:
    doc = extract(write(tmp_path / "relazione.md", "# Relazione\n\n" + sentence(1, 40)))
    produced: list[Chunk] | None = None
    with pytest.raises(ChunkingError) as info:
        produced = chunk(doc, strategy, qa_markers=DR)  # type: ignore[arg-type]
    assert produced is None
    message = str(info.value)
    assert f"strategy '{strategy}' produced 0 chunks for relazione.md" in message
    assert str(doc.path) in message and info.value.problems[0].field == f"strategy={strategy}"


def test_qa_strategy_without_declared_markers_is_an_error(tmp_path: Path) -> None:
    doc = extract(write(tmp_path / "faq.md", "D: Prima?\n\nR: Sì."))
    with pytest.raises(ChunkingError, match="declare the markers"):
        chunk(doc, "qa")


def test_spreadsheet_becomes_markdown_table_chunks(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Ordini"
    sheet.append(["Ordine", "Cliente", "Paese", "Importo"])
    for n in range(200):
        sheet.append([f"ORD-{n:04d}", f"Cliente {n}", "Giappone" if n % 2 else "Corea", n * 10])
    small = workbook.create_sheet("Legenda")
    small.append(["Sigla", "Significato"])
    small.append(["ORD", "Ordine confermato"])
    path = tmp_path / "ordini.xlsx"
    workbook.save(path)
    chunks = chunk(extract(path), "spreadsheet")
    assert len(chunks) > 3
    assert_sizes(chunks)
    assert chunks[0].text.startswith("# Ordini\n\n| Ordine | Cliente | Paese | Importo |")
    orders = [c for c in chunks if "ORD-0" in c.text]
    for c in orders:
        assert c.kind == "table" and c.heading_path == ("Ordini",)
        assert table_lines(c.text)[0] == "| Ordine | Cliente | Paese | Importo |"
        assert len(table_lines(c.text)) - 2 >= 20, "never one row per chunk"
    assert sum(c.text.count("| ORD-") for c in orders) == 200
    # A small sheet may share a chunk with the end of another, under its own heading.
    assert (
        "# Legenda\n\n| Sigla | Significato |\n| --- | --- |\n| ORD | Ordine confermato |"
        in chunks[-1].text
    )


def test_csv_spreadsheet_chunks(tmp_path: Path) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["Codice", "Descrizione"])
    writer.writerows([f"C{n}", f"Voce di costo numero {n}"] for n in range(120))
    doc = extract(write(tmp_path / "costi.csv", buffer.getvalue()))
    chunks = chunk(doc, "spreadsheet")
    assert len(chunks) >= 2
    assert_sizes(chunks)
    assert all(table_lines(c.text)[0] == "| Codice | Descrizione |" for c in chunks)


# --------------------------------------------------------------------------------------------
# Statistics


def test_chunk_stats() -> None:
    sizes = [50, 150, 250, 600, 800, 1200, 1500, 1700, 1800, 1900]
    chunks = [Chunk("x" * size, None, (), "text", n) for n, size in enumerate(sizes)]
    stats = chunk_stats(chunks)
    assert stats["count"] == 10
    assert (stats["min"], stats["p50"], stats["p90"], stats["max"]) == (50, 800, 1800, 1900)
    assert stats["under_floor"] == 1 and stats["over_max"] == 1
    assert stats["histogram"] == {
        "0-99": 1,
        "100-199": 1,
        "200-499": 1,
        "500-999": 2,
        "1000-1800": 4,
        "1801+": 1,
    }
    empty = chunk_stats([])
    assert empty["count"] == 0 and sum(empty["histogram"].values()) == 0


def test_chunk_stats_of_a_real_document(tmp_path: Path) -> None:
    doc = extract(_docx_file(tmp_path / "piano.docx"))
    chunks = chunk(doc, "blocks")
    stats = chunk_stats(chunks)
    assert stats["count"] == len(chunks) == 1
    assert stats["min"] == stats["max"] == len(chunks[0].text)


def test_blocks_validate_their_content() -> None:
    with pytest.raises(ValueError):
        Block("paragraph", "   ")
    with pytest.raises(ValueError):
        Block("table", "| a |")
    with pytest.raises(ValueError):
        ChunkLimits(min_chars=50, floor_chars=100)


# --------------------------------------------------------------------------------------------
# Progress of long extractions


def test_extraction_progress_follows_pdf_pages_and_workbook_rows(tmp_path: Path) -> None:
    pages = [paragraphs_page([[f"Pagina {n} del manuale operativo."]]) for n in range(3)]
    pdf = write(tmp_path / "manuale.pdf", build_pdf(pages))
    ticks: list[tuple[int, int]] = []
    extract(pdf, progress=lambda done, total: ticks.append((done, total)))
    assert ticks == [(1, 3), (2, 3), (3, 3)]

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["Codice", "Valore"])
    for n in range(2499):
        sheet.append([f"C{n}", n])
    workbook.save(tmp_path / "righe.xlsx")
    ticks.clear()
    extract(tmp_path / "righe.xlsx", progress=lambda done, total: ticks.append((done, total)))
    assert ticks == [(1000, 2500), (2000, 2500), (2500, 2500)]

    ticks.clear()
    extract(
        write(tmp_path / "nota.md", "# Nota\n\nTesto.\n"),
        progress=lambda d, t: ticks.append((d, t)),
    )
    assert ticks == [(1, 1)]


def test_a_heading_deeper_than_six_levels_is_written_with_six_hashes(tmp_path: Path) -> None:
    """A 10-Q's headings nest eleven deep; Markdown has six levels, and "###########" would
    reach the embedder and the reader as a paragraph of hashes."""
    blocks = (
        Block("heading", "Segment Operating Performance", level=11, heading_path=("S",)),
        Block("paragraph", "Net sales by reportable segment decreased in the quarter."),
    )
    doc = Document(tmp_path / "q.pdf", "pdf", "Q", blocks)
    [only] = chunk(doc, "blocks")
    assert only.text.startswith("###### Segment Operating Performance")
    assert "#######" not in only.text


# --------------------------------------------------------------------------------------------
# Question-and-answer tables (a FAQ published as CSV or as a sheet)

FAQ_CSV = (
    "Categoria;Domanda;Risposta\n"
    "Prenotazioni;Come si prenota una visita?;Con il CUP regionale, al telefono o online.\n"
    "Referti;Quando è pronto il referto?;Entro 5 giorni lavorativi dall'esame.\n"
)


def test_a_faq_table_becomes_one_fragment_per_pair_question_first(tmp_path: Path) -> None:
    doc = extract(write(tmp_path / "faq.csv", FAQ_CSV))
    chunks = chunk(doc, "qa", qa_markers=DR)
    assert [c.text for c in chunks] == [
        "Domanda: Come si prenota una visita?\n"
        "Risposta: Con il CUP regionale, al telefono o online.",
        "Domanda: Quando è pronto il referto?\nRisposta: Entro 5 giorni lavorativi dall'esame.",
    ]
    assert {c.kind for c in chunks} == {"qa"}


def test_a_faq_row_s_other_columns_are_kept_only_when_declared(tmp_path: Path) -> None:
    """Issue 46, point 5: a FAQ's id and tag columns were embedded and quoted inside every
    answer. Only the question and the answer make the fragment, unless the source declares
    the other columns it keeps (`qa_keep_columns`); a declared column the table lacks stops
    the sync naming it."""
    text = "id;Domanda;Risposta;tag\nF-17;Come si paga la bolletta?;Con il bollettino.;pagamenti\n"
    doc = extract(write(tmp_path / "faq.csv", text))
    [bare] = chunk(doc, "qa", qa_markers=DR)
    assert bare.text == "Domanda: Come si paga la bolletta?\nRisposta: Con il bollettino."
    [kept] = chunk(doc, "qa", qa_markers=DR, qa_keep_columns=("tag",))
    assert kept.text == (
        "Domanda: Come si paga la bolletta?\nRisposta: Con il bollettino.\ntag: pagamenti"
    )
    with pytest.raises(ChunkingError, match="qa_keep_columns names 'Tema'"):
        chunk(doc, "qa", qa_markers=DR, qa_keep_columns=("Tema",))


def test_a_faq_row_is_named_by_its_id_or_its_number(tmp_path: Path) -> None:
    """Issue 46, point 5: a FAQ row is its own source, so each of its chunks names the row —
    the cell of the declared id column, unique and present, or else the row's number in the
    table (the header is row 1, the long row's parts all carry it)."""
    long_answer = " ".join(f"Frase numero {n} della risposta lunga." for n in range(120))
    rows = [
        ("F-17", "Come si paga la bolletta?", "Con il bollettino."),
        ("F-18", "Che cosa copre la polizza?", long_answer),
    ]
    text = "id;Domanda;Risposta\n" + "".join(f"{i};{q};{a}\n" for i, q, a in rows)
    doc = extract(write(tmp_path / "faq.csv", text))
    numbered = chunk(doc, "qa", qa_markers=DR)
    assert len(numbered) > 2 and numbered[0].row == "2"
    assert {c.row for c in numbered[1:]} == {"3"}
    named = chunk(doc, "qa", qa_markers=DR, qa_id_column="ID")  # headers match without case
    assert [c.row for c in named] == ["F-17"] + ["F-18"] * (len(named) - 1)
    assert all("F-1" not in c.text for c in named)  # named, never embedded
    with pytest.raises(ChunkingError, match="qa_id_column names 'Codice'"):
        chunk(doc, "qa", qa_markers=DR, qa_id_column="Codice")
    twice = "id;Domanda;Risposta\nF-1;Uno?;Sì.\nF-1;Due?;No.\n"
    with pytest.raises(ChunkingError, match="rows 2 and 3 of the table have the same id 'F-1'"):
        chunk(extract(write(tmp_path / "twice.csv", twice)), "qa", qa_id_column="id")
    blank = "id;Domanda;Risposta\nF-1;Uno?;Sì.\n;Due?;No.\n"
    with pytest.raises(ChunkingError, match="row 3 of the table has no id"):
        chunk(extract(write(tmp_path / "blank.csv", blank)), "qa", qa_id_column="id")


def test_a_faq_row_of_a_workbook_of_several_sheets_is_named_with_its_sheet(
    tmp_path: Path,
) -> None:
    """Two sheets each have a row 2: the number alone would make them one source."""
    workbook = openpyxl.Workbook()
    first = workbook.active
    assert first is not None
    first.title = "Bollette"
    first.append(["Domanda", "Risposta"])
    first.append(["Come si paga la bolletta?", "Con il bollettino postale."])
    second = workbook.create_sheet("Guasti")
    second.append(["Domanda", "Risposta"])
    second.append(["Come segnalo un guasto?", "Chiamando il numero verde."])
    second.append(["Chi ripara il contatore?", "Il tecnico del gestore."])
    workbook.save(tmp_path / "faq.xlsx")
    chunks = chunk(extract(tmp_path / "faq.xlsx"), "qa", qa_markers=DR)
    assert [c.row for c in chunks] == ["Bollette:2", "Guasti:2", "Guasti:3"]


def test_a_long_faq_answer_is_split_and_never_over_the_maximum(tmp_path: Path) -> None:
    long_answer = " ".join(f"Frase numero {n} della risposta lunga." for n in range(120))
    text = f"Question,Answer\nWhat does the policy cover?,{long_answer}\n"
    doc = extract(write(tmp_path / "faq.csv", text))
    limits = ChunkLimits()
    chunks = chunk(doc, "qa", qa_markers=DR, limits=limits)
    assert len(chunks) > 1
    assert all(len(c.text) <= limits.max_chars for c in chunks)
    assert all(c.text.startswith("Question: What does the policy cover?\n") for c in chunks)


def test_faq_columns_are_declared_when_their_headers_say_nothing(tmp_path: Path) -> None:
    doc = extract(write(tmp_path / "faq.csv", "Tema,Quesito posto,Indicazione\nA,B?,C.\n"))
    with pytest.raises(ChunkingError) as caught:
        chunk(doc, "qa", qa_markers=DR)
    assert "qa_columns" in str(caught.value.problems[0].hint)
    [only] = chunk(doc, "qa", qa_markers=DR, qa_columns=("Quesito posto", "Indicazione"))
    assert only.text == "Quesito posto: B?\nIndicazione: C."
    with pytest.raises(ChunkingError, match="not a header"):
        chunk(doc, "qa", qa_markers=DR, qa_columns=("Domanda", "Indicazione"))


def test_a_faq_row_without_its_answer_is_refused_by_row(tmp_path: Path) -> None:
    doc = extract(write(tmp_path / "faq.csv", "Domanda,Risposta\nA?,Sì.\nB?,\n"))
    with pytest.raises(ChunkingError) as caught:
        chunk(doc, "qa", qa_markers=DR)
    assert "row 3" in str(caught.value.problems[0].message)
