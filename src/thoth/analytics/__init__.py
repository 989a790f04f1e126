"""Level 3: numbers are computed, not retrieved (seed 004). Reviewed catalog queries on the
views of a read-only analytics store; the first fork (text or numbers) chooses a query and its
parameters, by similarity offline or with one function call of a model; every number carries
its query, parameters and data date."""

from thoth.analytics.branch import AnalyticsService, ServedCatalog
from thoth.analytics.catalog import (
    Catalog,
    CatalogEntry,
    CatalogQuery,
    CatalogUnreadable,
    Parameter,
    load_catalog_at,
    load_catalog_files,
)
from thoth.analytics.check import CheckReport, check_catalog
from thoth.analytics.routing import (
    FALLBACK_TOOL,
    Choice,
    ModelRouter,
    OfflineRouter,
    QueryCalibration,
    calibrate,
    tool_specs,
)
from thoth.analytics.store import AnalyticsError, AnalyticsStore, Computation

__all__ = [
    "FALLBACK_TOOL",
    "AnalyticsError",
    "AnalyticsService",
    "AnalyticsStore",
    "Catalog",
    "CatalogEntry",
    "CatalogQuery",
    "CatalogUnreadable",
    "CheckReport",
    "Choice",
    "Computation",
    "ModelRouter",
    "OfflineRouter",
    "Parameter",
    "QueryCalibration",
    "ServedCatalog",
    "calibrate",
    "check_catalog",
    "load_catalog_at",
    "load_catalog_files",
    "tool_specs",
]
