"""The one way in: `open_database` picks the dialect's read-only database from [database]."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from thoth.config import DatabaseSettings
from thoth.database.base import ReadOnlyDatabase
from thoth.database.sqlite import SqliteDatabase


def open_database(
    settings: DatabaseSettings, root: Path, *, environ: Mapping[str, str] | None = None
) -> ReadOnlyDatabase:
    """Open the declared database read-only. SQLite files are relative to the workspace
    `root`; the PostgreSQL URL is read from `environ` (the process environment by default).
    DatabaseUnavailable when it cannot be opened, naming the setting at fault."""
    if settings.dialect == "sqlite":
        return SqliteDatabase(settings, root)
    from thoth.database.postgres import PostgresDatabase  # psycopg loads only when needed

    return PostgresDatabase(settings, os.environ if environ is None else environ)
