"""Alembic environment: runs the migrations on the store's connection (or on `-x url=...`)."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from thoth.state.core import create_state_engine
from thoth.state.schema import metadata


def _run(connection: Connection) -> None:
    # target_metadata only serves a developer's `alembic revision --autogenerate` draft;
    # Thoth never autogenerates when it opens a database.
    context.configure(connection=connection, target_metadata=metadata)
    # Inside the store's transaction (it holds the upgrade lock) this neither begins nor
    # commits: the whole upgrade commits or rolls back as one.
    with context.begin_transaction():
        context.run_migrations()


def _main() -> None:
    given = context.config.attributes.get("connection")
    if isinstance(given, Connection):
        _run(given)
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
            _run(connection)
    finally:
        engine.dispose()


_main()
