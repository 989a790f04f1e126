"""`tht verify`, the analytics part: the served catalog (activated revision) still matches the
store. A view a query reads, or an enum's `values_from` view, that is gone (dropped or renamed
by a refresh) would turn every answer of that query into a failure: named here first."""

from __future__ import annotations

from dataclasses import dataclass

from thoth.analytics.catalog import Catalog
from thoth.analytics.check import data_date_problems, labels_problems, relations
from thoth.analytics.store import AnalyticsError, AnalyticsStore
from thoth.database import DatabaseUnavailable, StatementRefused


@dataclass(frozen=True)
class CatalogFinding:
    code: str
    where: str
    message: str
    hint: str = ""


def catalog_findings(catalog: Catalog, store: AnalyticsStore) -> list[CatalogFinding]:
    findings = [
        CatalogFinding("catalog_invalid", p.where, p.render(), "`tht analytics check`")
        for p in catalog.problems
    ]
    try:
        with store.database() as db:
            snapshot = db.introspect(sample_values=0, may_sample=lambda *_: False)
    except (DatabaseUnavailable, StatementRefused, AnalyticsError) as exc:
        return [*findings, CatalogFinding("analytics_store_unavailable", "[analytics]", str(exc))]
    # The data date, exactly as an answer reads it: same connection, role and path.
    findings += [
        CatalogFinding(p.code, f"thoth.toml [{p.field}]", p.message, p.hint or "")
        for p in data_date_problems(store) + labels_problems(store)
    ]
    views = {(t.schema, t.name) for t in snapshot.tables if t.kind == "view"}
    for entry in catalog.entries:
        read, _ = relations(entry.query.sql, store.settings.dialect)
        names = [(s, n, "sql") for s, n in read if s is not None]
        for name, p in entry.query.parameters.items():
            if p.values_from:
                schema, view, _ = p.values_from.split(".")
                names.append((schema, view, f"parameters.{name}.values_from"))
        for schema, name, field in names:
            if (schema, name) not in views:
                findings.append(
                    CatalogFinding(
                        "catalog_view_missing",
                        f"{entry.path} [{field}]",
                        f"query {entry.query.id} reads {schema}.{name}, which is not a view of "
                        "the store any more: every answer of this query would fail",
                        "restore the view, or fix the query and activate the revision",
                    )
                )
    return findings
