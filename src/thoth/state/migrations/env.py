"""Alembic environment: runs the migrations on the store's connection (or on `-x url=...`)."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from thoth.state.core import create_state_engine
from thoth.state.schema import metadata


def _run(connection: Connection, *, for_developer: bool) -> None:
    # target_metadata only serves a developer's `alembic revision --autogenerate` draft; the
    # store runs the migrations without it (they do not depend on schema.py, and names are
    # wrapped in op.f() so its naming convention could not rewrite them anyway).
    context.configure(connection=connection, target_metadata=metadata if for_developer else None)
    # Inside the store's transaction (it holds the upgrade lock) this neither begins nor
    # commits: the whole upgrade commits or rolls back as one.
    with context.begin_transaction():
        context.run_migrations()


def _main() -> None:
    given = context.config.attributes.get("connection")
    if isinstance(given, Connection):
        _run(given, for_developer=False)
        return
    url = context.get_x_argument(as_dictionary=True).get("url")
    if not url:
        raise SystemExit(
            "thoth state migrations: no database -> pass -x url=sqlite:///path/state.sqlite "
            "(or a postgresql+psycopg:// URL); Thoth upgrades a database itself when it opens it"
        )
    if context.is_offline_mode():
        context.configure(url=url, literal_binds=True, target_metadata=metadata)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_state_engine(url)
    try:
        with engine.connect() as connection:
            _run(connection, for_developer=True)
    finally:
        engine.dispose()


_main()
