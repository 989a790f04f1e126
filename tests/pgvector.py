"""A PostgreSQL server with pgvector for the tests: the one `THOTH_TEST_PGVECTOR_URL` names, or
a throw-away one started from the `pgserver` wheel (PostgreSQL 16 + pgvector 0.6.2) in a
temporary directory, once per test session. Without either the tests skip, saying why; under CI
(CI set) they fail instead.

Each test gets its own schema (`pgvector_url` + `pgvector_schema`), dropped afterwards."""

from __future__ import annotations

import os
import secrets
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
from psycopg import sql

from thoth.index.postgres import libpq_url

ENV = "THOTH_TEST_PGVECTOR_URL"


@dataclass(frozen=True)
class PgvectorServer:
    url: str

    def new_schema(self, prefix: str = "pgindex") -> str:
        return f"{prefix}_{secrets.token_hex(5)}"

    def drop_schema(self, schema: str) -> None:
        with psycopg.connect(libpq_url(self.url), autocommit=True) as admin:
            admin.execute("SET lock_timeout = '10s'")
            admin.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


def start_pgvector_server() -> Iterator[PgvectorServer]:
    from tests.conftest import skip_unless_ci

    url = os.environ.get(ENV)
    if url:
        yield PgvectorServer(url)
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset in containers
            import pgserver
    except ImportError as exc:
        skip_unless_ci(
            f"no PostgreSQL with pgvector: {ENV} is unset and pgserver is not installed ({exc})",
            "pip install -e '.[dev]' installs pgserver",
        )
    pgdata = tempfile.mkdtemp(prefix="thoth-pgvector-")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pgserver.get_server(pgdata, cleanup_mode="delete")  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - any failure to start is the skip's reason
        skip_unless_ci(
            f"no PostgreSQL with pgvector: {ENV} is unset and pgserver could not start one "
            f"({type(exc).__name__}: {exc})",
            "pgserver starts one on the CI machine",
        )
    try:
        yield PgvectorServer(server.get_uri())
    finally:
        server.cleanup()
