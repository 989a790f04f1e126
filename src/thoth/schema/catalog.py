"""The schema snapshot of the active generation as names: what a decision, an Evidence unit
or a query may name. Unknown names are refused with the closest existing names as the hint.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from thoth.errors import Problem
from thoth.evidence.corpus import UnitFile
from thoth.evidence.model import schema_names
from thoth.index.reader import SCHEMA_NOT_SYNCED, GenerationReader, Unreadable
from thoth.index.records import (
    SCHEMA_KINDS,
    SchemaColumnPayload,
    SchemaTablePayload,
    parse_payload,
)

_CLOSEST: Final = 3


def norm(name: str) -> str:
    """A schema name compared as SQL compares it: case and quotes aside."""
    return name.replace('"', "").lower().strip()


@dataclass
class SchemaCatalog:
    generation: str
    tables: dict[str, SchemaTablePayload] = field(default_factory=dict)  # norm -> table
    columns: dict[str, SchemaColumnPayload] = field(default_factory=dict)  # norm -> column

    @classmethod
    def read(cls, reader: GenerationReader) -> SchemaCatalog:
        """The catalog of the active generation (Unreadable `schema_not_synced` when it
        holds no schema; the reader's own codes for any other failure)."""
        readable = reader.active()
        catalog = cls(readable.id)
        with reader.guard():
            for rec in readable.store.scroll({"record_kind": list(SCHEMA_KINDS)}):
                payload = parse_payload(rec.payload, rec.id)
                if isinstance(payload, SchemaTablePayload):
                    catalog.tables[norm(payload.table)] = payload
                elif isinstance(payload, SchemaColumnPayload):
                    catalog.columns[norm(payload.column)] = payload
        if not catalog.tables:
            raise Unreadable(
                SCHEMA_NOT_SYNCED,
                f"the active generation {readable.id} holds no database schema -> run "
                "`tht schema sync`",
                readable.id,
            )
        return catalog

    def table(self, name: str) -> SchemaTablePayload | None:
        return self.tables.get(norm(name))

    def column(self, name: str) -> SchemaColumnPayload | None:
        return self.columns.get(norm(name))

    def unknown_table(self, name: str) -> str | None:
        """None when `name` is a table or view, else why not and the closest names."""
        if self.table(name) is not None:
            return None
        return f"no table or view {name} in the schema{self._closest(name, self.tables)}"

    def unknown_column(self, name: str) -> str | None:
        if self.column(name) is not None:
            return None
        table = norm(name).rsplit(".", 1)[0] if name.count(".") >= 1 else ""
        if table and table in self.tables:
            owned = {k: v for k, v in self.columns.items() if k.rsplit(".", 1)[0] == table}
            return (
                f"{self.tables[table].table} has no column {name.rsplit('.', 1)[-1]}"
                f"{self._closest(name, owned)}"
            )
        return f"no column {name} in the schema{self._closest(name, self.columns)}"

    def _closest(self, name: str, pool: dict[str, SchemaTablePayload] | dict[str, Any]) -> str:
        shown = {
            k: (v.table if isinstance(v, SchemaTablePayload) else v.column) for k, v in pool.items()
        }
        close = difflib.get_close_matches(norm(name), list(shown), n=_CLOSEST, cutoff=0.5)
        if not close:
            return " (none is close: `tht schema show` lists them)"
        return f" (closest: {', '.join(shown[c] for c in close)})"


def unit_problems(catalog: SchemaCatalog, files: Sequence[UnitFile]) -> list[Problem]:
    """Every table and column an Evidence unit names that the schema snapshot lacks: a unit
    about a renamed or dropped column would mislead schema linking and the SQL it feeds."""
    problems: list[Problem] = []
    for f in files:
        tables, columns = schema_names(f.unit)
        for table in tables:
            why = catalog.unknown_table(table)
            if why is not None:
                problems.append(
                    Problem(f"evidence/{f.rel}", why, field="tables", code="unknown_name")
                )
        for column in columns:
            why = catalog.unknown_column(column)
            if why is not None:
                problems.append(
                    Problem(f"evidence/{f.rel}", why, field="columns", code="unknown_name")
                )
    return problems
