"""Schema linking: the tables and columns a question needs, proposed from the schema index.

`SchemaLinker.propose(question, concepts, evidence)` ranks the columns of the active
generation for the question (hybrid dense + BM25 over the schema_column records, fused by
`thoth.index.fusion.fuse`), lifts the columns of the tables that match the question as a whole
(the schema_table records) and those that the Evidence units found by the stage name, then adds the
join columns that connect the proposed tables (declared primary and foreign keys, through at
most one bridge table). A proposal is a candidate list for the reviewer, never a decision.

A generation with no schema records is `schema_not_synced`; any other failure to read is the
reader's `Unreadable`, with its stable code: schema linking never answers "no table" for a
fault.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from thoth.database import quote_ident
from thoth.index.base import Hit
from thoth.index.reader import SCHEMA_NOT_SYNCED, GenerationReader, Readable, Unreadable
from thoth.index.records import (
    RECORD_SCHEMA_COLUMN,
    RECORD_SCHEMA_TABLE,
    SchemaColumnPayload,
    SchemaTablePayload,
    parse_payload,
)
from thoth.schema.catalog import norm

DEFAULT_PROPOSAL_COLUMNS: Final = 20  # columns the stage proposes, join columns aside
CANDIDATE_COLUMNS: Final = 60  # columns ranked (recall@k is measured over them)
CANDIDATE_TABLES: Final = 20
_RRF_K: Final = 60
# How much a table's own match and an Evidence unit naming a column weigh against the
# column's own match (each a reciprocal rank, like RRF).
TABLE_WEIGHT: Final = 1.0
EVIDENCE_WEIGHT: Final = 1.0
EVIDENCE_K: Final = 60  # the reciprocal rank's constant for Evidence units
EVIDENCE_UNITS: Final = 10  # the best units of the stage's search that lift their columns


@dataclass(frozen=True)
class EvidenceHint:
    """An Evidence unit the stage's search found, as schema linking uses it."""

    evidence_id: str
    rank: int  # 1-based
    tables: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProposedColumn:
    qualified: str  # schema.table.column
    table: str  # schema.table
    name: str
    type: str
    description: str
    values: str
    samples: tuple[str, ...]
    privacy_kind: str
    primary_key: bool
    references: tuple[str, ...]
    score: float
    evidence_ids: tuple[str, ...] = ()
    join: bool = False  # proposed to connect tables, not for its own match


@dataclass(frozen=True)
class ProposedTable:
    qualified: str
    description: str
    table_kind: str
    primary_key: tuple[str, ...]
    score: float
    evidence_ids: tuple[str, ...] = ()
    bridge: bool = False  # proposed only to connect two proposed tables


@dataclass(frozen=True)
class Join:
    left: str  # schema.table.column
    right: str


@dataclass(frozen=True)
class SchemaProposal:
    generation: str
    size: int
    columns: tuple[ProposedColumn, ...]  # every ranked candidate, best first
    tables: tuple[ProposedTable, ...]  # the proposed tables, best first (bridges last)
    joins: tuple[Join, ...] = ()
    join_details: tuple[ProposedColumn, ...] = field(default=())

    @property
    def join_columns(self) -> tuple[str, ...]:
        return tuple(c.qualified for c in self.join_details)

    def ranked_columns(self, k: int) -> tuple[ProposedColumn, ...]:
        return self.columns[:k]

    def proposed(self) -> tuple[ProposedColumn, ...]:
        """What the stage shows: the `size` best columns, then the join columns."""
        top = self.columns[: self.size]
        seen = {c.qualified for c in top}
        return top + tuple(c for c in self.join_details if c.qualified not in seen)

    def all_columns(self) -> tuple[str, ...]:
        return tuple(c.qualified for c in self.proposed())

    def as_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "size": self.size,
            "tables": [asdict(t) for t in self.tables],
            "columns": [asdict(c) for c in self.proposed()],
            "joins": [asdict(j) for j in self.joins],
        }


@dataclass
class _Schema:
    """The schema_table records of one generation, read once."""

    tables: dict[str, SchemaTablePayload]  # normalised name -> payload
    # normalised table -> [(other table, own columns, other's columns)], both directions
    edges: dict[str, list[tuple[str, tuple[str, ...], tuple[str, ...]]]]


class SchemaLinker:
    """Schema linking over the active generation, through the one reader."""

    def __init__(self, reader: GenerationReader) -> None:
        self.reader = reader
        self._schemas: dict[str, _Schema] = {}

    def close(self) -> None:
        self.reader.close()

    def __enter__(self) -> SchemaLinker:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def propose(
        self,
        question: str,
        concepts: Sequence[str] = (),
        evidence: Sequence[EvidenceHint] = (),
        size: int = DEFAULT_PROPOSAL_COLUMNS,
    ) -> SchemaProposal:
        readable = self.reader.active()
        with self.reader.guard():
            schema = self._schema(readable)
            text = "\n".join([question, *concepts])
            vectors = self.reader.vectors(readable, text, degrade=False)
            assert vectors.dense is not None  # degrade=False: a failure raised
            column_hits = readable.store.query_hybrid(
                vectors.dense,
                vectors.sparse,
                {"record_kind": RECORD_SCHEMA_COLUMN},
                CANDIDATE_COLUMNS,
                max(CANDIDATE_COLUMNS, 100),
            )
            table_hits = readable.store.query_hybrid(
                vectors.dense,
                vectors.sparse,
                {"record_kind": RECORD_SCHEMA_TABLE},
                CANDIDATE_TABLES,
                max(CANDIDATE_TABLES, 100),
            )
            columns = _columns(column_hits)
            units = sorted(evidence, key=lambda h: h.rank)[:EVIDENCE_UNITS]
            unit_rank = {h.evidence_id: n for n, h in enumerate(units, start=1)}
            ev_columns, ev_tables = _evidence_ranks(units)
            missing = [c for c in ev_columns if c not in columns]
            if missing:
                columns.update(self._fetch(readable, missing, schema))
            ranked = _rank(columns, _table_ranks(table_hits), ev_columns, ev_tables, unit_rank)
            tables, joins, join_cols = _connect(ranked[:size], schema)
            extra = [c for c in join_cols if c not in columns]
            if extra:
                columns.update(self._fetch(readable, extra, schema))
        details = tuple(
            _proposed(columns[c], 0.0, ev_columns.get(c, ()), join=True) for c in join_cols
        )
        return SchemaProposal(
            generation=readable.id,
            size=size,
            columns=tuple(ranked),
            tables=tuple(
                _table(schema.tables[t], score, ev_tables.get(t, ()), bridge)
                for t, score, bridge in tables
            ),
            joins=joins,
            join_details=details,
        )

    # -------------------------------------------------------------- reading

    def _schema(self, readable: Readable) -> _Schema:
        cached = self._schemas.get(readable.id)
        if cached is not None:
            return cached
        tables: dict[str, SchemaTablePayload] = {}
        for rec in readable.store.scroll({"record_kind": RECORD_SCHEMA_TABLE}):
            payload = parse_payload(rec.payload, rec.id)
            if isinstance(payload, SchemaTablePayload):
                tables[norm(payload.table)] = payload
        if not tables:
            raise Unreadable(
                SCHEMA_NOT_SYNCED,
                f"the active generation {readable.id} holds no database schema -> run "
                "`tht schema sync`",
                readable.id,
            )
        edges: dict[str, list[tuple[str, tuple[str, ...], tuple[str, ...]]]] = {}
        for name, t in tables.items():
            for fk in t.foreign_keys:
                ref = norm(str(fk["ref_table"]))
                if ref not in tables:
                    continue
                own = tuple(str(c) for c in fk["columns"])
                other = tuple(str(c) for c in fk["ref_columns"])
                edges.setdefault(name, []).append((ref, own, other))
                edges.setdefault(ref, []).append((name, other, own))
        self._schemas = {readable.id: _Schema(tables, edges)}
        return self._schemas[readable.id]

    def _fetch(
        self, readable: Readable, names: Iterable[str], schema: _Schema
    ) -> dict[str, SchemaColumnPayload]:
        """Column records by normalised name (names the index lacks are left out)."""
        wanted = set(names)
        tables = sorted({schema.tables[t].table for t in _tables_of(wanted) if t in schema.tables})
        if not tables:
            return {}
        found: dict[str, SchemaColumnPayload] = {}
        for rec in readable.store.scroll({"record_kind": RECORD_SCHEMA_COLUMN, "table": tables}):
            payload = parse_payload(rec.payload, rec.id)
            if isinstance(payload, SchemaColumnPayload) and norm(payload.column) in wanted:
                found[norm(payload.column)] = payload
        return found


# ------------------------------------------------------------------ ranking


def _columns(hits: Sequence[Hit]) -> dict[str, SchemaColumnPayload]:
    out: dict[str, SchemaColumnPayload] = {}
    for hit in hits:
        payload = parse_payload(hit.payload, hit.id)
        if isinstance(payload, SchemaColumnPayload):
            out[norm(payload.column)] = payload
    return out


def _table_ranks(hits: Sequence[Hit]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for hit in hits:
        payload = parse_payload(hit.payload, hit.id)
        if isinstance(payload, SchemaTablePayload):
            ranks.setdefault(norm(payload.table), len(ranks) + 1)
    return ranks


def _evidence_ranks(
    evidence: Sequence[EvidenceHint],
) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Normalised column and table names -> the evidence ids naming them, best unit first
    (`evidence` comes best first)."""
    columns: dict[str, list[str]] = {}
    tables: dict[str, list[str]] = {}
    for hint in evidence:
        for c in hint.columns:
            columns.setdefault(norm(c), []).append(hint.evidence_id)
            tables.setdefault(norm(c).rsplit(".", 1)[0], []).append(hint.evidence_id)
        for t in hint.tables:
            tables.setdefault(norm(t), []).append(hint.evidence_id)
    return (
        {k: tuple(dict.fromkeys(v)) for k, v in columns.items()},
        {k: tuple(dict.fromkeys(v)) for k, v in tables.items()},
    )


def _rank(
    columns: Mapping[str, SchemaColumnPayload],
    table_ranks: Mapping[str, int],
    ev_columns: Mapping[str, tuple[str, ...]],
    ev_tables: Mapping[str, tuple[str, ...]],
    unit_rank: Mapping[str, int],
) -> list[ProposedColumn]:
    """Every candidate column scored: its own match, its table's match, and the Evidence that
    names it (each a reciprocal rank)."""
    own = {name: n for n, name in enumerate(columns, start=1)}
    # A column named by Evidence is lifted by the rank of the best unit naming it: the units
    # the stage's search ranks low are often about something else.
    ev_order = {name: unit_rank[ids[0]] for name, ids in ev_columns.items()}
    ev_table_order = {name: unit_rank[ids[0]] for name, ids in ev_tables.items()}
    scored: list[ProposedColumn] = []
    for name, payload in columns.items():
        table = norm(payload.table)
        score = 1.0 / (_RRF_K + own[name])
        if table in table_ranks:
            score += TABLE_WEIGHT / (_RRF_K + table_ranks[table])
        if name in ev_order:
            score += EVIDENCE_WEIGHT / (EVIDENCE_K + ev_order[name])
        if table in ev_table_order:
            score += 0.5 * EVIDENCE_WEIGHT / (EVIDENCE_K + ev_table_order[table])
        scored.append(_proposed(payload, score, ev_columns.get(name, ())))
    return sorted(scored, key=lambda c: (-c.score, c.qualified))


def _proposed(
    p: SchemaColumnPayload, score: float, evidence_ids: tuple[str, ...], join: bool = False
) -> ProposedColumn:
    return ProposedColumn(
        qualified=p.column,
        table=p.table,
        name=p.name,
        type=p.type,
        description=p.description,
        values=p.values,
        samples=p.samples,
        privacy_kind=p.privacy_kind,
        primary_key=p.primary_key,
        references=p.references,
        score=round(score, 6),
        evidence_ids=evidence_ids,
        join=join,
    )


def _table(
    p: SchemaTablePayload, score: float, evidence_ids: tuple[str, ...], bridge: bool
) -> ProposedTable:
    return ProposedTable(
        qualified=p.table,
        description=p.description,
        table_kind=p.table_kind,
        primary_key=p.primary_key,
        score=round(score, 6),
        evidence_ids=evidence_ids,
        bridge=bridge,
    )


def _tables_of(columns: Iterable[str]) -> set[str]:
    return {c.rsplit(".", 1)[0] for c in columns}


# ------------------------------------------------------------------ joins


def _connect(
    top: Sequence[ProposedColumn], schema: _Schema
) -> tuple[list[tuple[str, float, bool]], tuple[Join, ...], list[str]]:
    """The proposed tables (best first, with their score and whether they only bridge), the
    joins that connect them and the normalised names of the join columns."""
    best: dict[str, float] = {}
    for c in top:
        t = norm(c.table)
        best[t] = max(best.get(t, 0.0), c.score)
    chosen = [t for t in sorted(best, key=lambda t: -best[t]) if t in schema.tables]
    joins: list[Join] = []
    join_cols: list[str] = []
    bridges: list[str] = []

    def link(a: str, own: tuple[str, ...], b: str, other: tuple[str, ...]) -> None:
        for x, y in zip(own, other, strict=False):
            left = f"{schema.tables[a].table}.{quote_ident(x)}"
            right = f"{schema.tables[b].table}.{quote_ident(y)}"
            if Join(left, right) in joins or Join(right, left) in joins:
                continue
            joins.append(Join(left, right))
            for col in (left, right):
                if norm(col) not in join_cols:
                    join_cols.append(norm(col))

    # A spanning tree, best table first: each next table joins the tables already connected
    # through its declared keys to them (or one bridge table), so the proposal carries the
    # joins the query needs, not every bridge between every pair.
    connected: list[str] = chosen[:1]
    for b in chosen[1:]:
        direct = [(a, e) for a in connected for e in schema.edges.get(a, []) if e[0] == b]
        if direct:
            # Every key between b and the tables already joined: which one the query needs
            # (a match's home or away team, say) is the reviewer's choice, not ours.
            for a, (_, own, other) in direct:
                link(a, own, b, other)
            connected.append(b)
            continue
        for a in connected:
            bridged = False
            for mid, own_a, mid_a in schema.edges.get(a, []):
                to_b = [e for e in schema.edges.get(mid, []) if e[0] == b]
                if mid in (a, b) or not to_b:
                    continue
                link(a, own_a, mid, mid_a)
                link(mid, to_b[0][1], b, to_b[0][2])
                if mid not in chosen and mid not in bridges:
                    bridges.append(mid)
                bridged = True
                break
            if bridged:
                connected.append(b)
                break
    tables = [(t, best[t], False) for t in chosen] + [(t, 0.0, True) for t in bridges]
    return tables, tuple(joins), join_cols
