"""Secrets are found in what will be indexed, in every format (issue 46, point 1).

The corpus is generated from rules, not listed: every secret kind (a label and its value) is
written in every wrapping a format offers (sentences, labels, emphasis and links on the label
or the value, a keyword or a value split by markup, headings, list items, tables with the
value beside or below its label, definition lists, headers and footers), and every XLSX
layout (value beside or below its label, across merged cells, with an empty column between,
in the label's own cell). Each generated file must be refused, each finding naming the file,
the place (page, sheet, section, line or cell) and never the value.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import pytest

from tests.documents.test_documents import build_pdf
from tests.knowledge.test_ingest import settings, snapshot_of
from thoth.documents.sources import SourceSnapshot
from thoth.errors import Problem
from thoth.knowledge.ingest import credential_problems, prepare_document

Style = Literal["plain", "bold", "italic", "code", "link"]
Run = tuple[str, Style]


@dataclass(frozen=True)
class Secret:
    name: str
    label: str  # how a person names it in a document
    value: str
    sentence: str  # "{label} ... {value}" as prose, with {value} left to fill


# The kinds of secret a document carries: passwords in Italian and English, an API key, a token.
SECRETS = (
    Secret("password", "Password", "Segreta2024!", "La password del database è {value}"),
    Secret("pwd", "Password del database", "Pr0d-Dwh77", "The database password is {value}"),
    Secret("parola_chiave", "Parola chiave", "Girasole77x", "La parola chiave è {value}"),
    Secret("api_key", "API key", "a8F3kLq0Zx7Yb2MpQ4rT", "La API key del meteo è {value}"),
    Secret("token", "Access token", "t0k3nQ9wE2rT5yU8iO1p", "The access token is {value}"),
)


@dataclass(frozen=True)
class Wrapped:
    """One way of writing a secret: a block of runs, or a table of cells."""

    block: Literal["paragraph", "heading", "list", "table", "definition", "header", "footer"]
    runs: tuple[Run, ...] = ()
    cells: tuple[tuple[tuple[Run, ...], ...], ...] = ()


def _runs(*runs: Run) -> tuple[Run, ...]:
    return runs


def _plain(text: str) -> tuple[Run, ...]:
    return ((text, "plain"),)


def _inline(s: Secret) -> dict[str, tuple[Run, ...]]:
    """Every way a line can wrap a label and its value in markup."""
    label, value = s.label, s.value
    cut = len(label) // 2
    return {
        "sentence": _plain(s.sentence.format(value=value)),
        "label_colon": _plain(f"{label}: {value}"),
        "bold_label": _runs((f"{label}:", "bold"), (f" {value}", "plain")),
        "bold_label_outside_colon": _runs((label, "bold"), (f": {value}", "plain")),
        "bold_value": _runs((f"{label}: ", "plain"), (value, "bold")),
        "italic_line": _runs((f"{label}: {value}", "italic")),
        "code_value": _runs((f"{label}: ", "plain"), (value, "code")),
        "link_label": _runs((label, "link"), (f": {value}", "plain")),
        "split_label": _runs(
            (label[:cut], "plain"), (label[cut:], "bold"), (f": {value}", "plain")
        ),
        "split_value": _runs((f"{label}: {value[:4]}", "plain"), (value[4:], "bold")),
    }


def _table(*rows: Sequence[str | tuple[Run, ...]]) -> tuple[tuple[tuple[Run, ...], ...], ...]:
    return tuple(
        tuple(cell if isinstance(cell, tuple) else _plain(cell) for cell in row) for row in rows
    )


def wrappings(s: Secret) -> dict[str, Wrapped]:
    out = {name: Wrapped("paragraph", runs) for name, runs in _inline(s).items()}
    out["heading"] = Wrapped("heading", _plain(f"{s.label}: {s.value}"))
    out["bold_heading"] = Wrapped(
        "heading", _runs((f"{s.label}:", "bold"), (f" {s.value}", "plain"))
    )
    out["list_item"] = Wrapped("list", _runs((f"{s.label}:", "bold"), (f" {s.value}", "plain")))
    out["table_beside"] = Wrapped(
        "table", cells=_table(("Campo", "Valore"), ("Utente", "etl"), (s.label, s.value))
    )
    out["table_beside_colon"] = Wrapped(
        "table", cells=_table(("Campo", "Valore"), ("Utente", "etl"), (f"{s.label}:", s.value))
    )
    out["table_bold_label"] = Wrapped(
        "table",
        cells=_table(("Campo", "Valore"), ("Utente", "etl"), (((s.label, "bold"),), s.value)),
    )
    out["table_below"] = Wrapped(
        "table", cells=_table(("Accesso", "Dettaglio"), ("Utente", s.label), ("etl", s.value))
    )
    out["definition"] = Wrapped("definition", cells=_table((s.label, s.value)))
    out["header"] = Wrapped("header", _plain(f"{s.label}: {s.value}"))
    out["footer"] = Wrapped("footer", _runs((f"{s.label}:", "bold"), (f" {s.value}", "plain")))
    return out


INTRO = "Scheda di accesso al sistema di reportistica, aggiornata dal gruppo dati."
OUTRO = "Per ogni dubbio scrivere al gruppo dati."


# --------------------------------------------------------------------------------------------
# Renderers: one file per (secret, wrapping, format); None when the format has no such form


def _md_runs(runs: Sequence[Run]) -> str:
    marks = {"plain": "{}", "bold": "**{}**", "italic": "_{}_", "code": "`{}`"}
    return "".join(
        f"[{text}](https://intranet.example.org/accessi)"
        if style == "link"
        else marks[style].format(text)
        for text, style in runs
    )


def markdown(w: Wrapped) -> str | None:
    body = markdown_body(w)
    return None if body is None else f"# Accessi\n\n{INTRO}\n\n{body}\n\n{OUTRO}\n"


def markdown_body(w: Wrapped) -> str | None:
    if w.block in ("definition", "header", "footer"):
        return None
    if w.block == "table":
        rows = [f"| {' | '.join(_md_runs(c) for c in row)} |" for row in w.cells]
        body = "\n".join([rows[0], "|---|---|", *rows[1:]])
    elif w.block == "heading":
        body = f"## {_md_runs(w.runs)}"
    elif w.block == "list":
        body = f"- Utente: etl\n- {_md_runs(w.runs)}"
    else:
        body = _md_runs(w.runs)
    return body


def _html_runs(runs: Sequence[Run]) -> str:
    tags = {"bold": "b", "italic": "em", "code": "code"}
    out = []
    for text, style in runs:
        if style == "plain":
            out.append(text)
        elif style == "link":
            out.append(f'<a href="https://intranet.example.org/accessi">{text}</a>')
        else:
            out.append(f"<{tags[style]}>{text}</{tags[style]}>")
    return "".join(out)


def html(w: Wrapped) -> str | None:
    body = html_body(w)
    if body is None:
        return None
    return (
        "<!doctype html>\n<html><head><title>Accessi</title></head>\n<body>\n<h1>Accessi</h1>\n"
        f"<p>{INTRO}</p>\n{body}\n<p>{OUTRO}</p>\n</body></html>\n"
    )


def html_body(w: Wrapped) -> str | None:
    if w.block in ("header", "footer"):
        return None
    if w.block == "table":
        rows = "".join(
            "<tr>" + "".join(f"<td>{_html_runs(c)}</td>" for c in row) + "</tr>\n"
            for row in w.cells
        )
        body = f"<table>\n{rows}</table>"
    elif w.block == "definition":
        [[label, value]] = w.cells
        body = (
            f"<dl>\n<dt>Utente</dt>\n<dd>etl</dd>\n<dt>{_html_runs(label)}</dt>\n"
            f"<dd>{_html_runs(value)}</dd>\n</dl>"
        )
    elif w.block == "heading":
        body = f"<h2>{_html_runs(w.runs)}</h2>"
    elif w.block == "list":
        body = f"<ul>\n<li>Utente: etl</li>\n<li>{_html_runs(w.runs)}</li>\n</ul>"
    else:
        body = f"<p>{_html_runs(w.runs)}</p>"
    return body


def docx_file(w: Wrapped) -> bytes | None:
    return None if w.block == "definition" else docx_of([w])


def docx_of(wrapped: Sequence[Wrapped]) -> bytes:
    """A DOCX holding each wrapping in turn (definitions, which Word has not, left out)."""
    import docx

    document = docx.Document()
    document.add_heading("Accessi", level=1)
    document.add_paragraph(INTRO)

    def fill(paragraph: object, runs: Sequence[Run]) -> None:
        for text, style in runs:
            run = paragraph.add_run(text)  # type: ignore[attr-defined]
            run.bold = style == "bold"
            run.italic = style == "italic"
            run.underline = style == "link"
            if style == "code":
                run.font.name = "Courier New"

    for w in wrapped:
        if w.block == "table":
            table = document.add_table(rows=len(w.cells), cols=len(w.cells[0]))
            for row, cells in zip(table.rows, w.cells, strict=True):
                for cell, runs in zip(row.cells, cells, strict=True):
                    fill(cell.paragraphs[0], runs)
        elif w.block == "heading":
            fill(document.add_heading("", level=2), w.runs)
        elif w.block == "list":
            document.add_paragraph("Utente: etl", style="List Bullet")
            fill(document.add_paragraph("", style="List Bullet"), w.runs)
        elif w.block in ("header", "footer"):
            section = document.sections[0]
            part = section.header if w.block == "header" else section.footer
            fill(part.add_paragraph(), w.runs)
        elif w.block == "paragraph":
            fill(document.add_paragraph(), w.runs)
        document.add_paragraph(OUTRO)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pdf_file(w: Wrapped) -> bytes | None:
    """A PDF has no markup left: its text is what a reader sees, in lines, and tables drawn as
    ruled grids."""
    if w.block in ("header", "footer", "definition"):
        return None
    lines: list[tuple[float, float, str]] = [(72.0, 740.0, "Accessi"), (72.0, 712.0, INTRO)]
    rules: list[tuple[float, float, float, float]] = []
    y = 680.0
    if w.block == "table":
        xs, height = (72.0, 250.0, 430.0), 20.0
        ys = [y - height * i for i in range(len(w.cells) + 1)]
        rules += [(x, ys[-1], x, ys[0]) for x in xs]
        rules += [(xs[0], row_y, xs[-1], row_y) for row_y in ys]
        for row, top in zip(w.cells, ys, strict=False):
            for x, runs in zip(xs, row, strict=False):
                lines.append((x + 4, top - 14, "".join(text for text, _ in runs)))
        y = ys[-1] - 20
    else:
        lines.append((72.0, y, "".join(text for text, _ in w.runs)))
        y -= 14
    lines.append((72.0, y - 24, OUTRO))
    return build_pdf([lines], [rules])


FORMATS: dict[str, Callable[[Wrapped], str | bytes | None]] = {
    "md": markdown,
    "html": html,
    "docx": docx_file,
    "pdf": pdf_file,
}


# --------------------------------------------------------------------------------------------
# XLSX: where the label and the value sit on the sheet


@dataclass(frozen=True)
class Layout:
    cells: dict[str, str]  # coordinate -> text; "{label}" and "{value}" filled in
    merged: tuple[str, ...] = ()


LAYOUTS = {
    "beside": Layout({"A1": "Sistema", "B1": "DWH", "A2": "Utente", "B2": "etl", "A3": "{label}", "B3": "{value}"}),
    "beside_colon": Layout({"A1": "Sistema", "B1": "DWH", "A2": "Utente", "B2": "etl", "A3": "{label}:", "B3": "{value}"}),
    "below": Layout({"A1": "Sistema", "B1": "Utente", "C1": "Note", "A2": "DWH", "B2": "etl", "C2": "{label}", "C3": "{value}"}),
    "below_with_gap": Layout({"A1": "Sistema", "B1": "DWH", "A3": "{label}", "A5": "{value}", "B5": "in uso"}),
    "merged_label": Layout(
        {"A1": "Sistema", "B1": "ambiente", "C1": "DWH", "A2": "{label}", "C2": "{value}"},
        merged=("A2:B2",),
    ),
    "merged_label_down": Layout(
        {"A1": "Sistema", "B1": "DWH", "A2": "{label}", "B2": "{value}", "B3": "scade a giugno"},
        merged=("A2:A3",),
    ),
    "empty_column_between": Layout(
        {"A1": "Sistema", "B1": "ambiente", "C1": "DWH", "A2": "Utente", "B2": "prod", "C2": "etl", "A3": "{label}", "C3": "{value}"}
    ),
    "two_empty_columns_between": Layout(
        {"A1": "Sistema", "B1": "DWH", "A2": "{label}", "D2": "{value}", "C1": "prod", "D1": "x"}
    ),
    "same_cell": Layout({"A1": "Sistema", "B1": "DWH", "A2": "Nota", "B2": "{label}: {value}"}),
    "header_column": Layout({"A1": "Utente", "B1": "{label}", "A2": "etl", "B2": "{value}"}),
}  # fmt: skip


def xlsx_file(layout: Layout, s: Secret) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Accessi"
    for coordinate, text in layout.cells.items():
        sheet[coordinate] = text.format(label=s.label, value=s.value)
    for span in layout.merged:
        sheet.merge_cells(span)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


# --------------------------------------------------------------------------------------------
# The corpus, generated


def corpus() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {}
    for s in SECRETS:
        for wname, wrapped in wrappings(s).items():
            for suffix, render in FORMATS.items():
                content = render(wrapped)
                if content is not None:
                    files[f"docs/{s.name}/{wname}.{suffix}"] = content
        for lname, layout in LAYOUTS.items():
            files[f"docs/{s.name}/{lname}.xlsx"] = xlsx_file(layout, s)
    return files


CORPUS = corpus()


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> SourceSnapshot:
    return snapshot_of(tmp_path_factory.mktemp("corpus"), CORPUS)


def _problems(snapshot: SourceSnapshot, path: str) -> list[Problem]:
    file = next(f for f in snapshot.files if f.path == path)
    return credential_problems(file, prepare_document(file, settings(snapshot.source)))


def test_the_corpus_covers_every_format_and_wrapping() -> None:
    suffixes = {path.rsplit(".", 1)[1] for path in CORPUS}
    assert suffixes == {"md", "html", "docx", "pdf", "xlsx"}
    assert len(CORPUS) >= 5 * 50


@pytest.mark.parametrize("path", sorted(CORPUS))
def test_every_generated_secret_is_refused_naming_the_place(
    snapshot: SourceSnapshot, path: str
) -> None:
    problems = _problems(snapshot, path)
    assert problems, f"{path}: the secret was not found"
    secret = next(s for s in SECRETS if f"/{s.name}/" in path)
    for problem in problems:
        assert (problem.where, problem.code) == (f"docs:{path}", "credential")
        rendered = problem.render()
        assert secret.value not in rendered and secret.value[4:] not in rendered
        if path.endswith(".pdf"):
            assert "page 1" in problem.message
        elif path.endswith(".xlsx"):
            assert "sheet 'Accessi', cell " in problem.message
        else:
            assert (
                "line " in problem.message
                or "header" in problem.message
                or "footer" in problem.message
            )


# --------------------------------------------------------------------------------------------
# Not secrets: the word "pass" (and password words) without a label-value shape, generated


# Names and phrases that hold "pass" without naming a password.
PASS_NAMES = ("Xbox Game Pass", "Season Pass", "boarding pass", "Pass-through", "EU Pass")
PROSE = (
    "Revenue from content and services, comprising first- and third-party content, {name} "
    "and other subscriptions, cloud gaming, third-party disc royalties, advertising, and "
    "other cloud services, net of returns."
)


def negatives() -> dict[str, str | bytes]:
    """Prose wrapped at every width (so the name falls at a line's start, middle and end,
    as a PDF's layout puts it), and tables where the name heads a column of amounts or
    labels a row of amounts — in every format."""
    import textwrap

    files: dict[str, str | bytes] = {}
    for n, name in enumerate(PASS_NAMES):
        prose = PROSE.format(name=name)
        for width in range(24, 80, 8):
            lines = textwrap.wrap(prose, width)
            wrapped = Wrapped("paragraph", _plain("\n".join(lines)))
            files[f"neg/{n}/prose_{width}.md"] = "# Revenue\n\n" + "\n".join(lines) + "\n"
            files[f"neg/{n}/prose_{width}.pdf"] = build_pdf(
                [[(72.0, 740.0 - 14 * i, line) for i, line in enumerate(lines)]]
            )
            files[f"neg/{n}/prose_{width}.docx"] = docx_of([wrapped])
        tables = {
            "column": (("Quarter", name, "Total"), ("Q1", "1,234", "(56)"), ("Q2", "987", "4.5%")),
            "row": (("Line item", "2023"), (name, "3,100"), ("Other", "$ 1,200")),
            "results": (("Test", "Result"), ("Pass", "1,234"), ("Fail", "56")),
        }
        for tname, rows in tables.items():
            w = Wrapped("table", cells=_table(*rows))
            files[f"neg/{n}/{tname}.md"] = markdown(w) or ""
            files[f"neg/{n}/{tname}.html"] = html(w) or ""
            files[f"neg/{n}/{tname}.docx"] = docx_of([w])
            files[f"neg/{n}/{tname}.pdf"] = pdf_file(w) or b""
            cells = {
                f"{'ABC'[c]}{r + 1}": text
                for r, row in enumerate(rows)
                for c, text in enumerate(row)
            }
            files[f"neg/{n}/{tname}.xlsx"] = xlsx_file(Layout(cells), SECRETS[0])
    return files


NEGATIVES = negatives()


@pytest.fixture(scope="module")
def negative_snapshot(tmp_path_factory: pytest.TempPathFactory) -> SourceSnapshot:
    return snapshot_of(tmp_path_factory.mktemp("negatives"), NEGATIVES, include=["neg/**"])


@pytest.mark.parametrize("path", sorted(NEGATIVES))
def test_pass_without_a_label_value_shape_is_not_a_secret(
    negative_snapshot: SourceSnapshot, path: str
) -> None:
    assert _problems(negative_snapshot, path) == []
