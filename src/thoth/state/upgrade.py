"""Bringing a database to the head schema revision when the store opens it.

One write transaction per opening, holding the upgrade lock (PostgreSQL: an advisory lock;
SQLite: the write lock of BEGIN IMMEDIATE), so concurrent openers queue and the later ones
find the work done. What it finds decides what happens:

- `alembic_version` present: a revision this Thoth knows is upgraded to head; one it does not
  know was written by a newer Thoth, and the database is refused, untouched.
- `state_meta` without `alembic_version`: a database made before migrations (schema version 1,
  tables by `create_all`). Its tables are compared with each released shape; the matching one
  is stamped with its revision, then upgraded. No match: refused, untouched.
- neither, and no table of ours: a new database, created by running every migration.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Final

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection

from thoth.state.core import StateError
from thoth.state.migrations import alembic_config
from thoth.state.schema import HEAD_REVISION, SCHEMA_VERSION

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory

# Serialises upgrades across processes opening the same PostgreSQL database at once.
PG_UPGRADE_LOCK: Final = 0x7406_5354_4154_4531

PRE_MIGRATIONS_VERSION: Final = "1"

# The tables each release before migrations created, column by column (frozen: these are
# history, not the current schema). A pre-migration database is stamped at the revision whose
# shape it has exactly: 0001 = efcec13, 0002 = b946f0a, 0003 = 9374572 up to migrations.
_STORE_0001: Final[dict[str, tuple[str, ...]]] = {
    "state_meta": ("key", "value"),
    "revision_activations": ("id", "workspace", "revision", "activated_by", "activated_at"),
    "generations": (
        "id",
        "workspace",
        "revision",
        "status",
        "config",
        "counts",
        "created_at",
        "activated_at",
    ),
    "builds": (
        "id",
        "workspace",
        "revision",
        "generation",
        "started_at",
        "finished_at",
        "duration_s",
        "outcome",
        "counts",
        "message",
    ),
}
_SYNC_RUNS_0002: Final = (
    "id",
    "workspace",
    "status",
    "started_at",
    "finished_at",
    "run_by",
    "host",
    "pid",
    "full_rebuild",
    "pipeline_version",
    "revisions",
    "generation",
    "counts",
    "changes",
    "message",
)
_ANSWER_LOG_0002: Final = (
    "id",
    "workspace",
    "created_at",
    "question",
    "request",
    "status",
    "answer",
    "error_code",
)
# (revision, tables and columns, check constraints of sync_runs that must exist)
LEGACY_SHAPES: Final[tuple[tuple[str, dict[str, tuple[str, ...]], tuple[str, ...]], ...]] = (
    ("0001", _STORE_0001, ()),
    (
        "0002",
        {**_STORE_0001, "sync_runs": _SYNC_RUNS_0002, "answer_log": _ANSWER_LOG_0002},
        (),
    ),
    (
        "0003",
        {
            **_STORE_0001,
            "sync_runs": (*_SYNC_RUNS_0002, "kind"),
            "answer_log": _ANSWER_LOG_0002,
        },
        ("ck_sync_runs_kind",),
    ),
)
_OURS: Final = frozenset(name for _, shape, _ in LEGACY_SHAPES for name in shape)


@cache
def _script() -> ScriptDirectory:
    from alembic.script import ScriptDirectory  # Alembic loads only when a database needs it

    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    """The newest schema revision this Thoth ships."""
    head = _script().get_current_head()
    if head is None:  # pragma: no cover - the package ships its migrations
        raise StateError("thoth.state.migrations: no migration found -> reinstall Thoth")
    return head


def known_revisions() -> list[str]:
    """Every schema revision this Thoth ships, oldest first."""
    return [s.revision for s in reversed(list(_script().walk_revisions()))]


def upgrade_to_head(conn: Connection, shown: str) -> None:
    """Bring the database of `conn` (inside its write transaction) to the head revision."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_UPGRADE_LOCK})
    tables = set(inspect(conn).get_table_names())
    stamp: str | None = None
    if "alembic_version" in tables:
        found = [str(v) for v in conn.scalars(text("SELECT version_num FROM alembic_version"))]
        if found != [HEAD_REVISION]:
            _refuse_unknown(found, shown)
        _check_state_meta(conn, shown)
        if found == [HEAD_REVISION]:
            return
    elif "state_meta" in tables:
        stamp = _pre_migration_revision(conn, tables, shown)
    else:
        ours = sorted(tables & _OURS)
        if ours:
            raise StateError(
                f"state store {shown}: the database has table(s) {', '.join(ours)} of a Thoth "
                "state store but neither state_meta nor alembic_version, so its schema cannot "
                "be identified; nothing was changed -> point [state].url to a new database, or "
                "restore this one from a backup"
            )
    _migrate(conn, shown, stamp)


def _migrate(conn: Connection, shown: str, stamp: str | None) -> None:
    """Stamp a pre-migration database at `stamp` (if given), then run the migrations to head."""
    from alembic import command
    from alembic.util import CommandError

    config = alembic_config(conn)
    try:
        if stamp is not None:
            command.stamp(config, stamp)
        command.upgrade(config, "head")
    except CommandError as exc:  # Alembic could not plan it: nothing ran
        raise StateError(
            f"state store {shown}: upgrading the schema to {head_revision()} failed ({exc}); "
            "nothing was changed -> report it with this message"
        ) from exc


def _refuse_unknown(found: list[str], shown: str) -> None:
    known = known_revisions()
    unknown = [v for v in found if v not in known]
    if not found or unknown:
        what = f"revision {', '.join(unknown)}" if found else "no revision (alembic_version empty)"
        raise StateError(
            f"state store {shown}: the database is at schema {what}, which this Thoth does not "
            f"know (it knows {known[0]} to {known[-1]}): a newer Thoth has upgraded it; "
            "nothing was changed -> upgrade Thoth on this machine to the release the other "
            "machines run (a database is never downgraded)",
            code="state_newer",
        )


def _check_state_meta(conn: Connection, shown: str) -> None:
    value = _schema_version(conn)
    if value not in (PRE_MIGRATIONS_VERSION, str(SCHEMA_VERSION)):
        raise StateError(
            f"state store {shown}: table state_meta says schema version {value}, this Thoth "
            f"uses {SCHEMA_VERSION}; nothing was changed -> upgrade Thoth to the release that "
            "wrote it, or point [state].url to a new database",
            code="state_newer",
        )


def _schema_version(conn: Connection) -> str | None:
    found = conn.scalar(text("SELECT value FROM state_meta WHERE key = 'schema_version'"))
    return None if found is None else str(found)


def _pre_migration_revision(conn: Connection, tables: set[str], shown: str) -> str:
    """The revision whose shape a database made before migrations has exactly."""
    value = _schema_version(conn)
    if value != PRE_MIGRATIONS_VERSION:
        raise StateError(
            f"state store {shown}: table state_meta says schema version {value} but the "
            "database has no alembic_version table; this Thoth knows such a database only at "
            f"version {PRE_MIGRATIONS_VERSION}; nothing was changed -> upgrade Thoth to the "
            "release that wrote it, or point [state].url to a new database"
        )
    inspector = inspect(conn)
    found = {
        name: {c["name"] for c in inspector.get_columns(name)} for name in sorted(tables & _OURS)
    }
    checks = (
        {c["name"] for c in inspector.get_check_constraints("sync_runs")}
        if "sync_runs" in found
        else set()
    )
    for revision, shape, required_checks in LEGACY_SHAPES:
        same = found == {name: set(columns) for name, columns in shape.items()}
        if same and checks.issuperset(required_checks):
            return revision
    _, latest, _ = LEGACY_SHAPES[-1]
    differences = [f"table {name} missing" for name in sorted(set(latest) - set(found))]
    for name in sorted(set(latest) & set(found)):
        missing = sorted(set(latest[name]) - found[name])
        extra = sorted(found[name] - set(latest[name]))
        if missing:
            differences.append(f"{name} lacks {', '.join(missing)}")
        if extra:
            differences.append(f"{name} has unknown {', '.join(extra)}")
    if not differences:
        differences.append("sync_runs lacks the check constraint ck_sync_runs_kind")
    raise StateError(
        f"state store {shown}: schema version {PRE_MIGRATIONS_VERSION} (before migrations), "
        "but its tables match none of the released shapes (compared with the last one: "
        f"{'; '.join(differences)}); nothing was changed -> restore it from a backup, or "
        "point [state].url to a new database"
    )
