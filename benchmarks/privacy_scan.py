"""The content scan of the pseudonymiser (thoth.privacy) measured: leaks on the near-miss
corpus, false positives on ordinary cells, and its cost per cell.

- **Near-miss corpus** (tests/privacy/near_miss.py): identities in the forms real data holds
  them, each sent once as the cells of a row under harmless-sounding columns and once as free
  text. Leaks must be 0.
- **Generated near-miss corpus** (tests/privacy/generated.py): the forms the normalisation
  rules produce (separators at every position, spelled-out e-mails, phone prefixes and
  extensions, name variants derived from the registry, splits over 2 and 3 cells), each sent
  as text, Markdown row, tab-separated line and row cells, per kind: forms that left anything
  of themselves readable must be 0; and the generated ordinary values (amounts, dates, years,
  references, rows of figures) changed must be 0.
- **False positives**: every cell of the demo warehouse (examples/clinical-dwh, built into a
  temporary folder by its own tool) and the sample values of the BIRD databases of
  ../shared/data/bird_dev, each row scanned as if every column were harmless (the scan runs
  whatever the column is called). A cell the scan changed in a column whose reviewed kind (demo:
  schema/*.yaml) or name (BIRD: thoth.privacy.classify) says identity is a hit; in any other
  column it is a false positive, listed with its column so it can be judged.
- **Cost**: microseconds per cell of `protect_rows` with the scan, on the demo's rows.

Usage:
    .venv/bin/python benchmarks/privacy_scan.py [--data ../shared/data] [--show 8] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench_common import header_line, machine_facts

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.privacy.generated import (  # noqa: E402
    TUNING,
    VALIDATION,
    Seeds,
    changes,
    leaks,
    negatives,
    positives,
)
from tests.privacy.near_miss import CORPUS, REGISTRY, readable  # noqa: E402

from thoth.markup import markdown_table  # noqa: E402
from thoth.privacy import Entity, PlaceholderPseudonymizer, Registry, classify  # noqa: E402

DEMO = ROOT / "examples" / "clinical-dwh"


@dataclass
class Tally:
    cells: int = 0
    hits: int = 0  # changed cells in identity columns
    false_positives: int = 0  # changed cells in any other column
    by_column: Counter[str] = field(default_factory=Counter)
    examples: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.false_positives / self.cells if self.cells else 0.0


def corpus_leaks() -> dict[str, int]:
    leaks = {"cases": len(CORPUS), "row_leaks": 0, "text_leaks": 0}
    for case in CORPUS:
        p = PlaceholderPseudonymizer(REGISTRY, min_name_length=4)
        names = ["importo", "data", "categoria"][: len(case.cells)]
        [row] = p.protect_rows(names, [list(case.cells)])
        sent = json.dumps(row, ensure_ascii=False)
        leaks["row_leaks"] += any(readable(sent, s) for s in case.secrets)
        text = p.protect("Dati: " + " ".join(str(v) for v in case.cells))
        leaks["text_leaks"] += any(readable(text, s) for s in case.secrets)
    return leaks


def generated(seeds: Seeds) -> dict[str, Any]:
    """The generated corpus: per kind, forms and forms that leaked (with a few examples);
    ordinary values and those changed."""
    by_kind: dict[str, dict[str, Any]] = {}
    for form in positives(seeds):
        row = by_kind.setdefault(form.kind, {"forms": 0, "leaked": 0, "examples": []})
        row["forms"] += 1
        found = leaks(form, seeds)
        if found:
            row["leaked"] += 1
            if len(row["examples"]) < 3:
                row["examples"].append({"cells": form.cells, "rule": form.rule, "sent": found})
    ordinary = negatives(seeds)
    changed = [c for form in ordinary for c in changes(form, seeds)]
    return {
        "kinds": by_kind,
        "ordinary_values": len(ordinary),
        "ordinary_changed": len(changed),
        "changed_examples": [repr(c) for c in changed[:5]],
    }


def scan_table(
    tally: Tally,
    table: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    identity: set[str],
    show: int,
) -> None:
    # Every column harmless, by name and by review: only the scan acts.
    p = PlaceholderPseudonymizer(Registry([]), min_name_length=4, columns={"*": "code"})
    reviewed = dict.fromkeys(columns, "code")
    for row in rows:
        [out] = p.protect_rows(columns, [list(row)], reviewed)
        for column, before, after in zip(columns, row, out, strict=True):
            if before is None:
                continue
            tally.cells += 1
            if after == before:
                continue
            if column in identity:
                tally.hits += 1
                continue
            tally.false_positives += 1
            tally.by_column[f"{table}.{column}"] += 1
            if len(tally.examples) < show:
                tally.examples.append((f"{table}.{column}", str(before), str(after)))


def demo_warehouse(show: int) -> tuple[Tally, list[tuple[list[str], list[Any]]]]:
    tally = Tally()
    batches: list[tuple[list[str], list[Any]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, str(DEMO / "tools" / "build_warehouse.py"), tmp],
            check=True,
            capture_output=True,
        )
        for path in sorted(Path(tmp).glob("*.sqlite")):
            schema = path.stem
            conn = sqlite3.connect(path)
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            for table in tables:
                described = _described(schema, table)
                cursor = conn.execute(f'SELECT * FROM "{table}"')
                columns = [d[0] for d in cursor.description]
                rows = cursor.fetchall()
                identity = {c for c in columns if described.get(c) in ("identity", "free_text")}
                scan_table(tally, f"{schema}.{table}", columns, rows, identity, show)
                batches.append((columns, rows))
            conn.close()
    return tally, batches


def _described(schema: str, table: str) -> dict[str, str]:
    path = DEMO / "schema" / f"{schema}.{table}.yaml"
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text("utf-8")) or {}
    columns = data.get("columns") or {}
    return {name: str((spec or {}).get("kind")) for name, spec in columns.items()}


def bird(data: Path, show: int) -> dict[str, Tally]:
    schemas = json.loads((data / "bird_dev" / "schemas.json").read_text("utf-8"))
    found: dict[str, Tally] = {}
    for db in schemas:
        tally = Tally()
        for table in db["tables"]:
            for column in table["columns"]:
                name = column["name"]
                identity = {name} if classify(name, {}) == "identity" else set()
                values = [[v] for v in column.get("sample_values") or []]
                scan_table(tally, table["name"], [name], values, identity, show)
        found[db["name"]] = tally
    return found


def cost(batches: list[tuple[list[str], list[Any]]]) -> float:
    """Microseconds per cell of protect_rows on the demo's rows (every column passing)."""
    p = PlaceholderPseudonymizer(REGISTRY, min_name_length=4)
    cells = 0
    start = time.perf_counter()
    for columns, rows in batches:
        p.protect_rows(columns, rows[:2000], dict.fromkeys(columns, "code"))
        cells += len(columns) * len(rows[:2000])
    return (time.perf_counter() - start) / max(cells, 1) * 1e6


def text_cost() -> tuple[int, float, float]:
    """protect() of an answer context (about 8 fragments of the demo's documents, 6,800
    characters) with a synthetic registry of 2,000 names: (names, build ms, p50 ms)."""
    rng = random.Random(7)
    first = [
        "Mario",
        "Luca",
        "Giulia",
        "Anna",
        "Marco",
        "Paolo",
        "Sara",
        "Elena",
        "Nicolò",
        "Francesca",
        "Giorgio",
    ]
    last = [
        "Rossi",
        "Bianchi",
        "Verdi",
        "Esposito",
        "Romano",
        "Colombo",
        "Ricci",
        "Marino",
        "Greco",
        "Bruno",
    ]
    entities = [
        Entity("PERSONA", str(i), f"{rng.choice(first)} {rng.choice(last)}{i}") for i in range(1500)
    ] + [Entity("AZIENDA", f"a{i}", f"Impresa {rng.choice(last)} {i} Srl") for i in range(500)]
    start = time.perf_counter()
    p = PlaceholderPseudonymizer(Registry(entities), min_name_length=4)
    built = (time.perf_counter() - start) * 1000
    docs = sorted((DEMO / "documents").rglob("*.md"))
    text = "\n\n".join(d.read_text("utf-8") for d in docs)[:6800]
    runs = []
    for _ in range(30):
        start = time.perf_counter()
        p.protect(text)
        runs.append((time.perf_counter() - start) * 1000)
    return len(entities), built, statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--show", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    leaks = corpus_leaks()
    rules = {"tuning": generated(TUNING), "validation": generated(VALIDATION)}
    demo, batches = demo_warehouse(args.show)
    birds = bird(args.data, args.show) if (args.data / "bird_dev").is_dir() else {}
    micro = cost(batches)
    names, built, context_ms = text_cost()
    if args.json:
        out = {
            "corpus": leaks,
            "generated": rules,
            "demo": vars(demo) | {"rate": demo.rate},
            "bird": {k: vars(v) | {"rate": v.rate} for k, v in birds.items()},
            "us_per_cell": micro,
            "protect_context": {"names": names, "build_ms": built, "p50_ms": context_ms},
        }
        print(json.dumps(out, default=str, indent=2))
        return
    print(header_line(machine_facts()))
    print(
        f"\nNear-miss corpus: {leaks['cases']} forms; leaks as row cells {leaks['row_leaks']}, "
        f"as free text {leaks['text_leaks']}\n"
    )
    print(
        "Generated near-miss corpus (tests/privacy/generated.py), forms that leaked: tuning "
        "(the rules were fixed on it) and validation (other codes, names and draws, run once "
        "they held)\n"
    )
    tuning, validation = rules["tuning"]["kinds"], rules["validation"]["kinds"]
    table = [
        [k, str(tuning[k]["forms"]), str(tuning[k]["leaked"]), str(validation[k]["forms"]),
         str(validation[k]["leaked"])]
        for k in tuning
    ]  # fmt: skip
    table.append(
        ["all"]
        + [str(sum(v[f] for v in kinds.values())) for kinds in (tuning, validation)
           for f in ("forms", "leaked")]
    )  # fmt: skip
    print(markdown_table(["kind", "tuning forms", "leaked", "validation forms", "leaked"], table))
    for label, result in rules.items():
        for kind, row in result["kinds"].items():
            for example in row["examples"]:
                print(f"- {label} {kind} leak: {example}")
    for label, result in rules.items():
        print(
            f"\nGenerated ordinary values, {label}: {result['ordinary_values']}; changed "
            f"(text, row, Markdown, tabs sendings) {result['ordinary_changed']}"
            + "".join(f"\n- {e}" for e in result["changed_examples"])
        )
    print()
    rows = [["demo warehouse (all tables)", *_figures(demo)]]
    rows += [[f"BIRD {name} (sample values)", *_figures(t)] for name, t in birds.items()]
    print(
        markdown_table(
            ["data", "cells scanned", "identity hits", "false positives", "rate", "columns"], rows
        )
    )
    print(f"\nScan cost: {micro:.1f} µs per cell (protect_rows, every column passing)")
    print(
        f"protect() of a 6,800-character answer context, {names:,} registry names: "
        f"p50 {context_ms:.2f} ms (pseudonymiser built in {built:.0f} ms, once per process)\n"
    )
    for label, tally in [("demo", demo), *birds.items()]:
        for where, before, after in tally.examples:
            print(f"- {label} {where}: {before!r} -> {after!r}")


def _figures(t: Tally) -> list[str]:
    top = ", ".join(f"{c} ×{n}" for c, n in t.by_column.most_common(3))
    return [str(t.cells), str(t.hits), str(t.false_positives), f"{t.rate:.4%}", top]


if __name__ == "__main__":
    main()
