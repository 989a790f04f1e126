"""The one SQL checker: what Thoth accepts in a formula (one harmless expression) and in a
query it stores or will run (one read-only SELECT). Evidence units use it today; database
sessions and the analytics catalog run their SQL through it too.

The dialect is PostgreSQL, read by PostgreSQL's own parser (pglast)."""

from thoth.sqlcheck.checker import (
    SqlReason,
    SqlVerdict,
    bounded,
    check_expression,
    check_read_only_query,
    too_deep,
)

__all__ = [
    "SqlReason",
    "SqlVerdict",
    "bounded",
    "check_expression",
    "check_read_only_query",
    "too_deep",
]
