"""`tht analytics refresh`: the analytics store rebuilt from its source, checked, then swapped in.

Named steps, in order: `lock` (one refresh at a time), `source` (open it, read its columns and
its data date), `plan` (the views file: which tables and columns to copy; the scrub rules name
real columns), `data_date` (not older than the served copy's, unless forced), `copy` (into a
staging schema or file, scrubbed columns replaced while copying), `views` (the views file, then
the data date table and its view), `grant` (PostgreSQL: the store's read-only role), `check`
(every catalog query and the data date query on the new copy, as answers run them), `swap`
(atomic: a schema rename in one transaction, or os.replace of the file; the served copy kept as
the newest previous one), `prune` (previous copies beyond `keep`). A failure at any step before
`swap` leaves the served copy untouched and raises RefreshError naming the step.

The one entry point a scheduler calls: `refresh(ws, catalog)`; `rollback(ws)` puts the newest
previous copy back."""

from __future__ import annotations

from collections.abc import Mapping

from thoth.analytics.catalog import Catalog, load_catalog_at, load_catalog_files
from thoth.analytics.refresh_postgres import PostgresRefresh
from thoth.analytics.refresh_sqlite import SqliteRefresh
from thoth.analytics.refresh_steps import (
    BACKUP_UNREADABLE,
    CHECK_FAILED,
    COPY_FAILED,
    DATA_DATE_INVALID,
    DATA_DATE_OLDER,
    NO_PREVIOUS,
    PRUNE_FAILED,
    REFRESH_RUNNING,
    SCRUB_UNKNOWN,
    SOURCE_UNREACHABLE,
    STEPS,
    STORE_UNAVAILABLE,
    SWAP_FAILED,
    VIEWS_INVALID,
    RefreshError,
    RefreshReport,
    RollbackReport,
    StepTime,
)
from thoth.config import AnalyticsRefreshSettings, AnalyticsSettings
from thoth.errors import ConfigError
from thoth.workspace import Workspace

__all__ = [
    "BACKUP_UNREADABLE",
    "CHECK_FAILED",
    "COPY_FAILED",
    "DATA_DATE_INVALID",
    "DATA_DATE_OLDER",
    "NO_PREVIOUS",
    "PRUNE_FAILED",
    "REFRESH_RUNNING",
    "SCRUB_UNKNOWN",
    "SOURCE_UNREACHABLE",
    "STEPS",
    "STORE_UNAVAILABLE",
    "SWAP_FAILED",
    "VIEWS_INVALID",
    "RefreshError",
    "RefreshReport",
    "RollbackReport",
    "StepTime",
    "refresh",
    "refresh_settings",
    "rollback",
    "served_catalog",
]


def refresh_settings(ws: Workspace) -> tuple[AnalyticsSettings, AnalyticsRefreshSettings]:
    analytics = ws.settings.analytics
    if analytics is None or analytics.refresh is None:
        raise ConfigError(
            f"{ws.root}/thoth.toml declares no [analytics.refresh] -> declare the store's "
            'source there (docs/analytics.md, "Refreshing the store")'
        )
    return analytics, analytics.refresh


def served_catalog(ws: Workspace, active_revision: str | None) -> Catalog:
    """The catalog answers serve (the activated revision), or the working tree's when no
    revision is activated yet: every query of it is run on the new copy before the swap."""
    settings, _ = refresh_settings(ws)
    if active_revision is None:
        return load_catalog_files(ws.root, settings.catalog)
    return load_catalog_at(ws.root, settings.catalog, active_revision)


def refresh(
    ws: Workspace,
    catalog: Catalog,
    *,
    force: bool = False,
    environ: Mapping[str, str] | None = None,
) -> RefreshReport:
    """Rebuild the store from `[analytics.refresh]`, check `catalog` on it, swap it in.
    RefreshError (coded, naming the step) on any failure; the served copy is untouched unless
    the report came back. `force`: accept a data date older than the served one."""
    settings, refresh_cfg = refresh_settings(ws)
    if settings.dialect == "sqlite":
        return SqliteRefresh(ws.root, settings, refresh_cfg).run(catalog, force=force)
    return PostgresRefresh(ws.root, settings, refresh_cfg, environ).run(catalog, force=force)


def rollback(ws: Workspace, *, environ: Mapping[str, str] | None = None) -> RollbackReport:
    """Serve the newest previous copy again; the copy served until now is set aside (kept,
    never dropped here). RefreshError `rollback_no_previous` when there is none."""
    settings, refresh_cfg = refresh_settings(ws)
    if settings.dialect == "sqlite":
        return SqliteRefresh(ws.root, settings, refresh_cfg).rollback()
    return PostgresRefresh(ws.root, settings, refresh_cfg, environ).rollback()
