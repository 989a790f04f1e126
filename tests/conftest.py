"""Shared fixtures: real Git workspaces in temporary directories (no mocks of our storage)."""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import NoReturn

import psycopg
import pytest
from psycopg import sql

from tests.pgvector import PgvectorServer, start_pgvector_server
from thoth.evidence.layout import init_workspace
from thoth.workspace import Workspace

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commits in test repositories need an author; never touch the user's git config."""
    for var, value in {
        "GIT_AUTHOR_NAME": "Thoth Tests",
        "GIT_AUTHOR_EMAIL": "tests@thoth.invalid",
        "GIT_COMMITTER_NAME": "Thoth Tests",
        "GIT_COMMITTER_EMAIL": "tests@thoth.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }.items():
        monkeypatch.setenv(var, value)


def skip_unless_ci(reason: str, why_ci_runs_it: str) -> NoReturn:
    """Skip on a user's machine that lacks what the test needs, with `reason`; under CI
    (CI set) fail instead: CI has it, so the test must run there."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: {why_ci_runs_it})")
    pytest.skip(reason)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def commit_all(root: Path, message: str = "test commit") -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)


def status(root: Path) -> str:
    return git(root, "status", "--porcelain", "--untracked-files=all")


class WorkspaceFactory:
    """Builds a committed Git workspace with the given sources (paths under evidence/source/)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.count = 0

    def __call__(self, sources: Mapping[str, str | bytes] | None = None) -> Workspace:
        self.count += 1
        root = self.base / f"ws{self.count}"
        init_workspace(root, name=f"ws{self.count}")
        git(root, "init", "-q", "-b", "main")
        for rel, content in (sources or {}).items():
            write_source(root, rel, content)
        commit_all(root, "sources")
        return Workspace.open(root)


def write_source(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / "evidence" / "source" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture
def make_workspace(tmp_path: Path) -> Callable[..., Workspace]:
    return WorkspaceFactory(tmp_path)


GLOSSARY = """# Glossario dei ricoveri

## Termini

**Ricovero**: permanenza del paziente in reparto con almeno un pernottamento. Sinonimi: degenza, ospedalizzazione.
**Day hospital**: ricovero diurno senza pernottamento, registrato in `adt.admission`.
"""

FORMULA = """# Formule

## Fascia pediatrica

Per fascia pediatrica si intendono i pazienti con età inferiore a 18 anni alla data di ricovero,
calcolata da `clinical.patient.birth_date` e `adt.admission.admission_date`.

```sql
CASE WHEN date_part('year', age(a.admission_date, p.birth_date)) < 18 THEN 'pediatrica' ELSE 'adulta' END
```
"""

ENUM = """# Esiti

## Esito della dimissione

Colonna: `clinical.episode.discharge_status`

| Codice | Significato |
|---|---|
| D | dimesso a domicilio |
| T | trasferito ad altro istituto |
| X | deceduto |
"""


# ---------------------------------------------------------------------- PostgreSQL

PG_HOST = "127.0.0.1"
PG_PORT = 5432
PG_USERS = ("postgres", "root")
WS = "ws"  # the workspace name of the state-store tests


@pytest.fixture(scope="session")
def pg_user() -> str:
    """A user that can create databases on the local server, or skip (fail under CI)."""
    errors: list[str] = []
    for user in PG_USERS:
        try:
            with psycopg.connect(
                host=PG_HOST, port=PG_PORT, user=user, dbname="test", connect_timeout=3
            ) as conn:
                can_create = conn.execute(
                    "SELECT rolcreatedb OR rolsuper FROM pg_roles WHERE rolname = current_user"
                ).fetchone()
            if can_create and can_create[0]:
                return user
            errors.append(f"user {user} may not create databases")
        except psycopg.Error as exc:
            errors.append(f"user {user}: {str(exc).strip().splitlines()[0]}")
    skip_unless_ci(
        f"PostgreSQL not reachable at {PG_HOST}:{PG_PORT}: {'; '.join(errors)}",
        "the PostgreSQL tests must run",
    )


@pytest.fixture
def pg_url(pg_user: str) -> Iterator[str]:
    """A fresh, empty schema in database `test` for one test, dropped afterwards.

    A schema rather than a database: CREATE DATABASE costs ~0.5 s per test, a schema ~10 ms.
    The URL's search_path puts every table the store creates in that schema only.
    """
    schema = f"thoth_state_{secrets.token_hex(6)}"
    with psycopg.connect(
        host=PG_HOST, port=PG_PORT, user=pg_user, dbname="test", autocommit=True
    ) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        yield (
            f"postgresql+psycopg://{pg_user}@{PG_HOST}:{PG_PORT}/test"
            f"?options=-csearch_path%3D{schema}"
        )
    finally:
        with psycopg.connect(
            host=PG_HOST, port=PG_PORT, user=pg_user, dbname="test", autocommit=True
        ) as admin:
            # A failed test may leave a connection idle in a transaction: give up rather
            # than hang, the schema name is unique anyway.
            admin.execute("SET lock_timeout = '10s'")
            admin.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


# ---------------------------------------------------------------------- markers


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`postgres` and `pgvector` are derived, never written by hand: a test that asks for `pg_user` or
    `pg_url`, or is the "postgresql" half of a parametrised database URL, is marked, so
    `-m postgres` selects what needs the server."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        names = getattr(item, "fixturenames", ())
        if "postgresql" in params.values() or {"pg_user", "pg_url"} & set(names):
            item.add_marker(pytest.mark.postgres)
        if "postgres" in params.values() or "pgvector_server" in names:
            item.add_marker(pytest.mark.pgvector)


# ---------------------------------------------------------------------- pgvector


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[PgvectorServer]:
    """PostgreSQL with pgvector (tests/pgvector.py): skip when none, fail under CI."""
    yield from start_pgvector_server()


@pytest.fixture
def pgvector_url(pgvector_server: PgvectorServer) -> str:
    return pgvector_server.url


@pytest.fixture
def pgvector_schema(pgvector_server: PgvectorServer) -> Iterator[str]:
    """A fresh schema name for one test's index, dropped afterwards."""
    schema = pgvector_server.new_schema()
    yield schema
    pgvector_server.drop_schema(schema)
