"""PDF extraction: the pdfplumber extractor (`thoth.documents.pdf`) against the old one.

The old extractor (pypdf layout-mode text, table columns guessed from runs of spaces) is no
longer in the product: it is loaded from Git, `src/thoth/documents/extract.py` at `--old-ref`
(default: the last commit that had it), into a throw-away module. Both read the same files:

- the demo PDF of `examples/` (every `*.pdf` found there);
- the SEC 10-Q filings of `../shared/data/sec10q/docs/*.pdf` (or the directory given), read in
  place: they are never copied into the repository. When the directory is absent the filings
  are skipped with a message saying so.

Per extractor and file: pages, pages with text (pages not reported as empty), characters of
block text, tables found, table rows (every one carries its header: that is what a table block
is), loose figure rows (lines of paragraphs ending in two or more figures: table rows that lost
their header), chunks produced by the product's chunker (`chunk(document, "blocks")`, default
limits) and how many of them are table chunks, and extraction seconds (wall time, chunking
excluded).

Usage (from the project root):
    .venv/bin/python benchmarks/pdf_extraction.py [SEC10Q_DIR] [--old-ref REF] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_common import emit, header_line, machine_facts
from thoth.documents import Block, Document, chunk, extract

DEFAULT_SEC = Path("../shared/data/sec10q")
OLD_REF = "7874927e52d60d269d1d34d258c7f8b1faf5495b"  # last commit with the pypdf extractor
_FIGURE = r"[(\-−–]?[$€£]?\s?\d[\d.,]*%?\)?%?"
_LOOSE_ROW = re.compile(rf"\S.*\s{_FIGURE}\s+{_FIGURE}\s*$")


def old_extractor(ref: str) -> Callable[[Path], Document]:
    """`extract` of `src/thoth/documents/extract.py` at `ref`, its results as today's types."""
    source = subprocess.run(
        ["git", "show", f"{ref}:src/thoth/documents/extract.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    folder = Path(tempfile.mkdtemp(prefix="old_extract_"))
    (folder / "old_extract.py").write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("old_extract", folder / "old_extract.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load the old extractor from {ref}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_extract"] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)

    def run(path: Path) -> Document:
        old: Any = module.extract(path)
        blocks = tuple(
            Block(b.kind, b.text, b.page, b.heading_path, b.level, b.header, b.rows)
            for b in old.blocks
        )
        return Document(path, "pdf", old.title, blocks, old.page_count, old.empty_pages, old.notes)

    return run


def measure(name: str, path: Path, read: Callable[[Path], Document]) -> dict[str, Any]:
    start = time.perf_counter()
    document = read(path)
    seconds = time.perf_counter() - start
    chunks = chunk(document, "blocks")
    tables = [b for b in document.blocks if b.kind == "table"]
    loose = sum(
        1
        for b in document.blocks
        if b.kind != "table"
        for line in b.text.split("\n")
        if _LOOSE_ROW.match(line)
    )
    pages = document.page_count or 0
    return {
        "extractor": name,
        "file": path.name,
        "pages": pages,
        "pages_with_text": pages - len(document.empty_pages),
        "chars": sum(len(b.text) for b in document.blocks),
        "tables": len(tables),
        "table_rows_with_header": sum(len(b.rows) for b in tables),
        "loose_figure_rows": loose,
        "chunks": len(chunks),
        "table_chunks": sum(1 for c in chunks if c.kind == "table"),
        "seconds": round(seconds, 2),
    }


COLUMNS = (
    "pages",
    "pages_with_text",
    "chars",
    "tables",
    "table_rows_with_header",
    "loose_figure_rows",
    "chunks",
    "table_chunks",
    "seconds",
)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sec_dir", nargs="?", type=Path, default=DEFAULT_SEC)
    parser.add_argument("--old-ref", default=OLD_REF, help="Git commit of the old extractor")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    files = sorted(Path("examples").rglob("*.pdf"))
    skipped: list[str] = []
    sec_docs = args.sec_dir / "docs"
    if sec_docs.is_dir():
        files += sorted(sec_docs.glob("*.pdf"))
    else:
        skipped.append(f"{sec_docs}: not found, SEC 10-Q filings skipped")
        print(f"note: {skipped[-1]}", file=sys.stderr)
    extractors: list[tuple[str, Callable[[Path], Document]]] = [
        ("old (pypdf layout)", old_extractor(args.old_ref)),
        ("new (pdfplumber)", extract),
    ]
    rows = [measure(name, path, read) for path in files for name, read in extractors]
    totals = []
    for name, _ in extractors:
        mine = [r for r in rows if r["extractor"] == name]
        total: dict[str, Any] = {"extractor": name, "file": "TOTAL"}
        for column in COLUMNS:
            total[column] = round(sum(r[column] for r in mine), 2)
        totals.append(total)
    return {"machine": machine_facts(), "skipped": skipped, "rows": rows, "totals": totals}


def print_report(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(header_line(result["machine"]))
    for note in result["skipped"]:
        console.print(f"skipped: {note}")
    table = Table(title="PDF extraction: old vs new")
    for column in ("file", "extractor", *COLUMNS):
        table.add_column(column, justify="left" if column in ("file", "extractor") else "right")
    for row in [*result["rows"], *result["totals"]]:
        table.add_row(row["file"], row["extractor"], *(str(row[c]) for c in COLUMNS))
    console.print(table)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return emit(run(args), args.json, print_report)


if __name__ == "__main__":
    raise SystemExit(main())
