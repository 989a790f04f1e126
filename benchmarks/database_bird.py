"""The read-only SQLite layer on SQL nobody on the team wrote: BIRD's 659 gold queries, each
against an empty copy of its database's schema (../shared/data/bird_dev/schemas.json), through
`check_statement(…, "sqlite")`, `run()` and `explain()`. Every refusal here is a false one:
the gold SQL only reads.

Usage (from the project root):
    .venv/bin/python benchmarks/database_bird.py [--data DIR]
Exit status 0 when nothing was refused, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from thoth.config import DatabaseSettings
from thoth.database import StatementRefused, check_statement, open_database

DEFAULT_DATA = Path("../shared/data/bird_dev")


def _empty_database(path: Path, tables: list[dict[str, object]]) -> None:
    with sqlite3.connect(path) as conn:
        for table in tables:
            columns = table["columns"]
            assert isinstance(columns, list)
            spec = ", ".join(
                '"{}" {}'.format(str(c["name"]).replace('"', '""'), c["type"]) for c in columns
            )
            conn.execute('CREATE TABLE "{}" ({})'.format(str(table["name"]), spec))
    conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    schemas = json.loads((args.data / "schemas.json").read_text(encoding="utf-8"))
    questions = json.loads((args.data / "questions.json").read_text(encoding="utf-8"))
    outcomes: Counter[tuple[str, str]] = Counter()
    refused: list[str] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for schema in schemas:
            name = str(schema["name"])
            _empty_database(root / f"{name}.sqlite", schema["tables"])
            settings = DatabaseSettings(dialect="sqlite", files={"main": f"{name}.sqlite"})
            with open_database(settings, root) as db:
                for question in (q for q in questions if q["db_id"] == name):
                    sql = str(question["sql"])
                    verdict = check_statement(sql, "sqlite")
                    outcomes[("check_statement", "ok" if verdict.ok else "refused")] += 1
                    if not verdict.ok:
                        refused.append(f"check_statement: {verdict.summary()} | {sql}")
                    for method in ("run", "explain"):
                        try:
                            if method == "run":
                                db.run(sql, limit=10)
                            else:
                                db.explain(sql)
                            outcomes[(method, "ok")] += 1
                        except StatementRefused as exc:
                            outcomes[(method, exc.code)] += 1
                            refused.append(f"{method}: {exc.code} {exc.reason} | {sql}")
    seconds = time.perf_counter() - started
    for (step, outcome), count in sorted(outcomes.items()):
        print(f"{step:16} {outcome:20} {count}")
    print(f"{len(questions)} queries in {seconds:.1f} s")
    for line in refused[:20]:
        print("REFUSED", line)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
