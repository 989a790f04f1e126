"""The session database's schema in the index: `tht schema sync` (introspection, reviewed
descriptions, privacy-aware samples, records built by the one builder) and schema linking
(tables, columns and join columns proposed for a question)."""

from thoth.schema.descriptions import DescriptionsInvalid, load_descriptions
from thoth.schema.linking import (
    DEFAULT_PROPOSAL_COLUMNS,
    EvidenceHint,
    Join,
    ProposedColumn,
    ProposedTable,
    SchemaLinker,
    SchemaProposal,
)
from thoth.schema.sync import SchemaSync, SchemaSyncReport, require_database

__all__ = [
    "DEFAULT_PROPOSAL_COLUMNS",
    "DescriptionsInvalid",
    "EvidenceHint",
    "Join",
    "ProposedColumn",
    "ProposedTable",
    "SchemaLinker",
    "SchemaProposal",
    "SchemaSync",
    "SchemaSyncReport",
    "load_descriptions",
    "require_database",
]
