"""The stages of a question→SQL session, by semantic name and in workflow order.

Names are what the ledger stores and what code compares. The display codes (F1…F8) are for
people only: renumbering the workflow on screen must never change the meaning of a ledger.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from thoth.errors import ThothError

STAGES: Final[tuple[str, ...]] = (
    "clarification",
    "memory",
    "rewriting",
    "schema_linking",
    "synthesis",
    "cte",
    "final_sql",
    "memory_promotion",
)

DISPLAY_CODES: Final[Mapping[str, str]] = MappingProxyType(
    {stage: f"F{n}" for n, stage in enumerate(STAGES, start=1)}
)

# The Evidence search purpose each stage uses (seed §11). `memory` searches memories, not
# Evidence, and `synthesis` only assembles what earlier stages approved: neither searches
# Evidence, so neither may hold an Evidence receipt.
STAGE_PURPOSE: Final[Mapping[str, str | None]] = MappingProxyType(
    {
        "clarification": "disambiguation",
        "memory": None,
        "rewriting": "rewriting",
        "schema_linking": "schema_linking",
        "synthesis": None,
        "cte": "sql_generation",
        "final_sql": "sql_generation",
        "memory_promotion": None,
    }
)

# Seed §11: the stages that consult Evidence, in workflow order, with their purpose.
CONSULTING_STAGES: Final[Mapping[str, str]] = MappingProxyType(
    {stage: purpose for stage, purpose in STAGE_PURPOSE.items() if purpose is not None}
)

_INDEX: Final[Mapping[str, int]] = MappingProxyType({s: i for i, s in enumerate(STAGES)})


def unknown_stage_message(name: str) -> str:
    return f"unknown stage {name!r}; expected one of {', '.join(STAGES)}"


def stage_index(name: str) -> int:
    """Position of a stage in the workflow (clarification is 0). Unknown names are refused:
    comparing a misspelt stage by position would silently misjudge what a rollback covers."""
    try:
        return _INDEX[name]
    except KeyError:
        raise ThothError(
            unknown_stage_message(name) + " (display codes like F1 are not stage names)"
        ) from None
