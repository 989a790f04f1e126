"""PDF extraction: the product's extractor now ("after") against the one at a Git ref ("before").

The "before" extractor is the product's own `src/` at `--before-ref` (default `main`), exported
from Git into a temporary directory and run in a child Python with that `src/` on its path:
both sides run the same measuring code below on the same files, each with its own product.

Files: the demo PDF of `examples/` (every `*.pdf` found there) and the SEC 10-Q filings of
`../shared/data/sec10q/docs/*.pdf` (or the directory given), read in place, never copied into
the repository; when the directory is absent the filings are skipped with a message saying so.

Per side and file: pages; pages with text kept (pages not reported as having no text); tables
recognised (table blocks, each carrying its header); table rows; loose figure rows (paragraph
lines ending in two or more figures: table rows that reached the chunks without a header);
headings; chunks (`chunk(document, "blocks")`, default limits); chunks with a heading path;
furniture lines removed (running headers/footers and page numbers; 0 where the extractor does
not remove any); the title; extraction seconds (wall time, chunking excluded: on a shared
machine the seconds move with the load, compare the two sides of one run).

Usage (from the project root):
    .venv/bin/python benchmarks/pdf_extraction.py [SEC10Q_DIR] [--before-ref REF] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from io import BytesIO
from pathlib import Path
from typing import Any

DEFAULT_SEC = Path("../shared/data/sec10q")
_FIGURE = r"[(\-−–]?[$€£]?\s?\d[\d.,]*%?\)?%?"
_LOOSE_ROW = re.compile(rf"\S.*\s{_FIGURE}\s+{_FIGURE}\s*$")
COLUMNS = (
    "pages",
    "pages_with_text",
    "tables",
    "table_rows",
    "loose_figure_rows",
    "headings",
    "chunks",
    "chunks_with_heading_path",
    "furniture_lines",
    "seconds",
)


def measure(path: Path) -> dict[str, Any]:
    """One file through the `thoth.documents` found on the path (this side's product)."""
    from thoth.documents import chunk, extract

    start = time.perf_counter()
    document = extract(path)
    seconds = time.perf_counter() - start
    chunks = chunk(document, "blocks")
    tables = [b for b in document.blocks if b.kind == "table"]
    pages = document.page_count or 0
    return {
        "file": path.name,
        "title": document.title,
        "pages": pages,
        "pages_with_text": pages - len(document.empty_pages),
        "tables": len(tables),
        "table_rows": sum(len(b.rows) for b in tables),
        "loose_figure_rows": sum(
            1
            for b in document.blocks
            if b.kind != "table"
            for line in b.text.split("\n")
            if _LOOSE_ROW.match(line)
        ),
        "headings": sum(1 for b in document.blocks if b.kind == "heading"),
        "chunks": len(chunks),
        "chunks_with_heading_path": sum(1 for c in chunks if c.heading_path),
        "furniture_lines": int(getattr(document, "furniture_lines", 0)),
        "seconds": round(seconds, 2),
    }


def before(ref: str, files: Sequence[Path]) -> list[dict[str, Any]]:
    """The measures of the product at `ref`, from a child Python with its `src/` on the path."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, "src"], check=True, capture_output=True
    ).stdout
    with tempfile.TemporaryDirectory(prefix="pdf_before_") as tmp:
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "src")}
        done = subprocess.run(
            [sys.executable, __file__, "--measure", *map(str, files)],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sec_dir", nargs="?", type=Path, default=DEFAULT_SEC)
    parser.add_argument("--before-ref", default="main", help="Git ref of the 'before' product")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--measure", nargs="+", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from bench_common import machine_facts

    files = sorted(Path("examples").rglob("*.pdf"))
    skipped: list[str] = []
    sec_docs = args.sec_dir / "docs"
    if sec_docs.is_dir():
        files += sorted(sec_docs.glob("*.pdf"))
    else:
        skipped.append(f"{sec_docs}: not found, SEC 10-Q filings skipped")
        print(f"note: {skipped[-1]}", file=sys.stderr)
    sides = {
        f"before ({args.before_ref})": before(args.before_ref, files),
        "after": [measure(path) for path in files],
    }
    rows = [
        {"side": side, **row}
        for index in range(len(files))
        for side, measured in sides.items()
        for row in [measured[index]]
    ]
    totals = [
        {"side": side, "file": "TOTAL"}
        | {c: round(sum(r[c] for r in measured), 2) for c in COLUMNS}
        for side, measured in sides.items()
    ]
    return {"machine": machine_facts(), "skipped": skipped, "rows": rows, "totals": totals}


def print_report(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from bench_common import header_line

    console = Console()
    console.print(header_line(result["machine"]))
    for note in result["skipped"]:
        console.print(f"skipped: {note}")
    table = Table(title="PDF extraction: before vs after")
    for column in ("file", "side", *COLUMNS, "title"):
        table.add_column(column, justify="left" if column in ("file", "side", "title") else "right")
    for row in [*result["rows"], *result["totals"]]:
        table.add_row(
            row["file"], row["side"], *(str(row[c]) for c in COLUMNS), row.get("title", "")
        )
    console.print(table)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.measure:
        print(json.dumps([measure(path) for path in args.measure]))
        return 0
    from bench_common import emit

    return emit(run(args), args.json, print_report)


if __name__ == "__main__":
    raise SystemExit(main())
