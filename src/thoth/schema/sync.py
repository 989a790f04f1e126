"""`tht schema sync`: the session database's schema, as schema_table and schema_column
records of the workspace's index generation.

One run: take the workspace's build lock (a `sync_runs` row of kind `schema`), read the
reviewed descriptions, introspect the database read-only (samples only where privacy allows),
compare each table's content hash with the active generation's, and build the next generation
with the one builder: every record of another kind and every unchanged table is carried, only
new and changed tables are embedded, dropped tables are left out. The new generation is
activated by compare-and-swap only once it is fully written and verified, so a dropped table
disappears at the same instant its replacement snapshot appears, never before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Protocol

from thoth.config import DatabaseSettings
from thoth.database import ColumnInfo, SchemaSnapshot
from thoth.embed.base import Embedder
from thoth.errors import PreconditionError
from thoth.gitrepo import default_run_by
from thoth.index.base import IndexRecord
from thoth.index.bm25 import Bm25Encoder, average_length
from thoth.index.build import (
    GenerationBuilder,
    Keep,
    Progress,
    RunLock,
    SyncOutcome,
    closing_row,
    embed_passages,
)
from thoth.index.generations import IndexBackend
from thoth.index.reader import open_generation
from thoth.index.records import (
    GENERATION_INDEXES,
    SCHEMA_KINDS,
    SchemaColumnPayload,
    SchemaTablePayload,
    parse_payload,
)
from thoth.schema.descriptions import TableDescription, load_descriptions
from thoth.schema.records import TableRecords, column_kind, may_sample, record_id, table_records
from thoth.state import Generation, StateStore
from thoth.workspace import Workspace, generation_revision

SCHEMA_PIPELINE_VERSION: Final = 1
# Payload fields that say nothing about the column itself (a column whose other fields are
# equal did not change, even when its table's hash did).
_BOOKKEEPING: Final = frozenset({"content_sha256", "bm25_avg_len", "text"})


class Introspecting(Protocol):
    """What the sync needs of the read-only database (thoth.database.ReadOnlyDatabase)."""

    def introspect(
        self, *, sample_values: int, may_sample: Callable[[str, str, ColumnInfo], bool]
    ) -> SchemaSnapshot: ...


def require_database(ws: Workspace) -> DatabaseSettings:
    settings = ws.settings.database
    if settings is None:
        raise PreconditionError(
            f"{ws.root / 'thoth.toml'}: no [database] section -> declare the database the "
            "sessions ask about (docs/database.md)"
        )
    return settings


@dataclass
class SchemaSyncReport:
    """What one schema sync read and built; every change is listed by name."""

    run_id: int
    workspace: str
    dialect: str
    run_by: str
    full: bool
    outcome: SyncOutcome = "failed"
    generation: str | None = None
    previous_generation: str | None = None
    tables_created: list[str] = field(default_factory=list)
    tables_changed: list[str] = field(default_factory=list)
    tables_dropped: list[str] = field(default_factory=list)
    columns_created: list[str] = field(default_factory=list)
    columns_changed: list[str] = field(default_factory=list)
    columns_dropped: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    dropped_generations: list[str] = field(default_factory=list)
    abandoned_generation: str | None = None
    # After a failure: which generation serves; empty when the run did not fail.
    after_failure: str = ""
    duration_s: float = 0.0
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def changes(self) -> dict[str, Any]:
        return {
            "tables_created": self.tables_created,
            "tables_changed": self.tables_changed,
            "tables_dropped": self.tables_dropped,
            "columns_created": self.columns_created,
            "columns_changed": self.columns_changed,
            "columns_dropped": self.columns_dropped,
            "warnings": self.warnings,
        }


@dataclass
class _Held:
    """What the active generation holds of one table."""

    sha: str
    avg_len: float
    columns: dict[str, dict[str, Any]] = field(default_factory=dict)  # column -> payload


class SchemaSync:
    """One `tht schema sync`: `SchemaSync(...).run(full=...)`."""

    def __init__(
        self,
        ws: Workspace,
        state: StateStore,
        backend: IndexBackend,
        embedder: Embedder,
        database: Introspecting,
        progress: Progress | None = None,
    ) -> None:
        self.ws = ws
        self.settings = require_database(ws)
        self.name = ws.settings.workspace
        self.state = state
        self.backend = backend
        self.embedder = embedder
        self.database = database
        self.progress = progress or (lambda _phase, _done, _total: None)
        self.report: SchemaSyncReport | None = None
        self._builder = GenerationBuilder(state, backend, self.name, embedder, self.progress)

    def run(self, full: bool = False, run_by: str | None = None) -> SchemaSyncReport:
        started = time.perf_counter()
        who = run_by or default_run_by(self.ws.root)
        lock = RunLock(
            self.state,
            self.name,
            kind="schema",
            run_by=who,
            full=full,
            pipeline_version=SCHEMA_PIPELINE_VERSION,
        )
        with lock:
            report = SchemaSyncReport(
                run_id=lock.run_id,
                workspace=self.name,
                dialect=self.settings.dialect,
                run_by=who,
                full=full,
            )
            self.report = report
            lock.closing = lambda failure: closing_row(
                report, failure, started, {"database": self.settings.dialect}
            )
            self._sync(report)
        return report

    # ------------------------------------------------------------------ steps

    def _sync(self, report: SchemaSyncReport) -> None:
        self._builder.discard_crashed()
        described = load_descriptions(self.ws.root, self.settings.descriptions)
        snapshot = self.database.introspect(
            sample_values=self.settings.sample_values,
            may_sample=lambda schema, table, col: may_sample(
                column_kind(
                    self.settings,
                    schema,
                    table,
                    col,
                    _column(described, schema, table, col.name),
                )
            ),
        )
        report.warnings += _unused_descriptions(snapshot, described)
        if not snapshot.tables:
            raise PreconditionError(
                f"database ({self.settings.dialect}, schemas "
                f"{', '.join(self.settings.schema_names)}): no table or view found -> check "
                "[database] in thoth.toml (and, on PostgreSQL, the role's USAGE and SELECT "
                "grants); nothing was synced"
            )
        active = self.state.active_generation(self.name)
        report.previous_generation = active.id if active else None
        held = self._held(active) if active else {}
        kept_avg = next(iter({h.avg_len for h in held.values()}), None)
        # Every table's records (the BM25 average length is stamped when they are written),
        # then those to embed: new and changed tables, or all of them with --full.
        draft = [
            table_records(self.name, self.settings, t, described.get((t.schema, t.name)), 1.0)
            for t in snapshot.tables
        ]
        records = [r for r in draft if _changed(r, held, report.full)]
        texts = [p.text for r in draft for p in r.payloads]
        avg = kept_avg if (kept_avg is not None and not report.full) else average_length(texts)
        self._record_changes(report, draft, held)
        unchanged = {r.table for r in draft} - {r.table for r in records}
        report.counts = {
            "tables": len(draft),
            "columns": sum(len(r.columns) for r in draft),
            "tables_embedded": len(records),
            "tables_carried": len(unchanged),
            "records_embedded": sum(len(r.payloads) for r in records),
        }
        if active is not None and not records and not report.tables_dropped:
            report.outcome = "unchanged"
            report.generation = active.id
            report.message = f"the schema did not change: generation {active.id} stays active"
            return
        self._build(report, active, records, unchanged, avg)

    def _held(self, active: Generation) -> dict[str, _Held]:
        held: dict[str, _Held] = {}
        store = open_generation(self.backend, active)
        try:
            for rec in store.scroll({"record_kind": list(SCHEMA_KINDS)}):
                payload = parse_payload(rec.payload, rec.id)
                assert isinstance(payload, SchemaTablePayload | SchemaColumnPayload)
                entry = held.setdefault(
                    payload.table, _Held(payload.content_sha256, payload.bm25_avg_len)
                )
                if isinstance(payload, SchemaColumnPayload):
                    entry.columns[payload.column] = payload.to_payload()
        finally:
            store.close()
        return held

    def _record_changes(
        self, report: SchemaSyncReport, draft: Sequence[TableRecords], held: Mapping[str, _Held]
    ) -> None:
        now = {r.table for r in draft}
        report.tables_dropped = sorted(set(held) - now)
        for table in report.tables_dropped:
            report.columns_dropped += sorted(held[table].columns)
        for r in draft:
            old = held.get(r.table)
            if old is None:
                report.tables_created.append(r.table)
                report.columns_created += list(r.columns)
                continue
            if old.sha == r.content_sha256:
                continue
            report.tables_changed.append(r.table)
            new = {
                p.column: p.to_payload() for p in r.payloads if isinstance(p, SchemaColumnPayload)
            }
            report.columns_created += [c for c in new if c not in old.columns]
            report.columns_dropped += [c for c in old.columns if c not in new]
            report.columns_changed += [
                c for c in new if c in old.columns and _differs(new[c], old.columns[c])
            ]

    def _build(
        self,
        report: SchemaSyncReport,
        active: Generation | None,
        records: Sequence[TableRecords],
        unchanged: set[str],
        avg: float,
    ) -> None:
        payloads = [p.model_copy(update={"bm25_avg_len": avg}) for r in records for p in r.payloads]
        bm25 = Bm25Encoder(self.ws.settings.language, avg)
        vectors = embed_passages(self.embedder, [p.text for p in payloads], self.progress)
        config: dict[str, Any] = {
            **(active.config if active else {}),
            "schema": {
                "pipeline_version": SCHEMA_PIPELINE_VERSION,
                "dialect": self.settings.dialect,
                "bm25": bm25.config(),
                "sync_run": report.run_id,
            },
        }
        config.setdefault("bm25", bm25.config())
        build = self._builder.begin(
            generation_revision(self.ws, self.state, active),
            config,
            source=active.id if active else None,
            payload_indexes=GENERATION_INDEXES,
        )
        report.generation = build.gen_id
        try:
            with build:
                build.carry(_keep(unchanged))
                build.write(
                    [
                        IndexRecord(
                            id=record_id(p),
                            dense=[float(x) for x in vec],
                            sparse=bm25.document(p.text),
                            payload=p.to_payload(),
                        )
                        for p, vec in zip(payloads, vectors, strict=True)
                    ]
                )
                verified = build.verify()
                report.counts["records_total"] = sum(
                    verified.kinds.get(kind, 0) for kind in SCHEMA_KINDS
                )
                report.counts["records_other_kinds"] = (
                    verified.total - report.counts["records_total"]
                )
                build.seal()
                build.mark_candidate(report.counts)
                build.activate()
        except BaseException:
            if build.abandoned:
                report.generation = None
                report.abandoned_generation = build.gen_id
            raise
        report.outcome = "activated"
        report.message = f"generation {build.gen_id} is active"
        report.dropped_generations = build.retain(self.ws.settings.index.retain)


def _changed(r: TableRecords, held: Mapping[str, _Held], full: bool) -> bool:
    old = held.get(r.table)
    return full or old is None or old.sha != r.content_sha256


def _keep(unchanged: set[str]) -> Keep:
    """Records of other kinds, and the schema records of unchanged tables, as they are."""

    def keep(rec: IndexRecord) -> IndexRecord | None:
        if rec.payload.get("record_kind") in SCHEMA_KINDS:
            return rec if rec.payload.get("table") in unchanged else None
        return rec

    return keep


def _differs(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    keys = (set(new) | set(old)) - _BOOKKEEPING
    return any(new.get(k) != old.get(k) for k in keys)


def _column(
    described: Mapping[tuple[str, str], TableDescription], schema: str, table: str, column: str
) -> Any:
    desc = described.get((schema, table))
    return desc.columns.get(column) if desc else None


def _unused_descriptions(
    snapshot: SchemaSnapshot, described: Mapping[tuple[str, str], TableDescription]
) -> list[str]:
    """Descriptions of tables or columns the database does not have: a reviewer's file that
    describes nothing is worth knowing about (a renamed table, a typo)."""
    warnings: list[str] = []
    for (schema, table), desc in sorted(described.items()):
        info = snapshot.table(schema, table)
        if info is None:
            warnings.append(f"{desc.file}: describes {schema}.{table}, which the database lacks")
            continue
        names = {c.name for c in info.columns}
        for col in sorted(set(desc.columns) - names):
            warnings.append(f"{desc.file}: column {col} is not a column of {schema}.{table}")
    return warnings
