"""What the link of a computed answer opens: the reviewed catalog query its figures came from,
as the activated revision holds it, with the parameters and data date the answer used.

The same rules as the passage of a text source (thoth.answer.passage): the query's figures
carry the store's and the query's labels, and a request that may not see them gets
`source_not_allowed` and nothing of the query; a revision other than the activated one is
`revision_not_served` (the catalog moved on, or the link was altered); an unknown query id is
`source_not_found`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, TypeVar
from urllib.parse import urlencode

from thoth.analytics.catalog import CatalogQuery, load_catalog_at
from thoth.answer.passage import RevisionNotServed, SourceNotAllowed, SourceNotFound
from thoth.answer.scope import readable
from thoth.config import AnalyticsSettings
from thoth.errors import Problem

QUERY_LINK_PATH: Final = "/v1/catalog/query"


def figure_labels(settings: AnalyticsSettings, query: CatalogQuery) -> list[str]:
    """The labels a figure of `query` carries: the store's and the query's own."""
    return sorted({*settings.labels, *query.labels})


def query_link(provenance: dict[str, Any], labels: Sequence[str] = ()) -> str:
    """The link of a computed answer's provenance: the query, the revision, what the answer
    bound and read (for the reader to see them beside the query), and the labels the question
    was asked with, so it opens as given."""
    return f"{QUERY_LINK_PATH}?" + urlencode(
        [
            ("query_id", provenance["query_id"]),
            ("revision", provenance["catalog_revision"]),
            ("parameters", json.dumps(provenance.get("parameters") or {}, sort_keys=True)),
            ("data_date", str(provenance.get("data_date") or "")),
            *(("labels", label) for label in labels),
        ]
    )


def query_view(
    root: Path,
    settings: AnalyticsSettings | None,
    active_revision: str | None,
    query_id: str,
    revision: str,
    allowed: Sequence[str],
) -> dict[str, Any]:
    if settings is None:
        raise _refused(
            SourceNotFound,
            "this workspace has no analytics store ([analytics]): no catalog query is served",
            "only a computed answer's provenance names a catalog query: ask in a workspace "
            "with [analytics] configured",
        )
    if active_revision is None or revision != active_revision:
        raise _refused(
            RevisionNotServed,
            f"the catalog is not served at revision {revision[:40]!r}",
            "the catalog moved on since the answer, or the link was altered: ask the question "
            "again",
        )
    query = load_catalog_at(root, settings.catalog, revision).queries.get(query_id)
    if query is None:
        raise _refused(
            SourceNotFound,
            f"no catalog query {query_id[:80]!r} at revision {revision[:12]}",
            "open the link as the answer gave it (its provenance's query_id and catalog_revision)",
        )
    labels = figure_labels(settings, query)
    if not readable(labels, allowed):
        raise _refused(
            SourceNotAllowed,
            f"catalog query {query_id!r} computes figures labelled outside "
            f"{', '.join(allowed)}: nothing of it is shown",
            "open it with the labels the answer was asked with (the link's labels), within "
            "your ceiling",
        )
    return {
        "query_id": query.id,
        "revision": revision,
        "description": query.description,
        "sql": query.sql,
        "parameters": {
            name: {"type": p.type, "description": p.description}
            for name, p in query.parameters.items()
        },
        "columns": {
            name: {"label": c.label, "unit": c.unit, "kind": c.kind}
            for name, c in query.result.columns.items()
        },
        "labels": labels,
    }


E = TypeVar("E", SourceNotFound, SourceNotAllowed, RevisionNotServed)


def _refused(kind: type[E], what: str, hint: str) -> E:
    """A refusal of the link with its code and what to do, as one Problem (the HTTP problem
    and the MCP tool error catalog_query both show the hint)."""
    return kind(what, problems=[Problem("", what, hint=hint, code=kind.code)])
