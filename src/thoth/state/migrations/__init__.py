"""Alembic migrations of the state database, shipped with the package.

`versions/` holds one file per schema revision, plain Alembic ops written by hand (no
autogenerate at run time); `env.py` runs them on the connection the store passes in
`config.attributes["connection"]` (see thoth.state.upgrade), or, for a developer's
`alembic -c src/thoth/state/migrations/alembic.ini ...`, on `-x url=...`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final, NoReturn

from sqlalchemy.engine import Connection

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR: Final = Path(__file__).resolve().parent


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic configuration for the shipped scripts, bound to `connection` if given."""
    from alembic.config import Config  # imported when needed: Alembic is slow to import

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def forward_only(revision: str) -> NoReturn:
    """The downgrade of every revision: Thoth's state migrations only go forward."""
    from alembic.util import CommandError

    raise CommandError(
        f"state migration {revision} cannot be undone: Thoth never downgrades a state "
        "database -> restore the copy taken before the upgrade, or point [state].url to a new "
        "database"
    )
