"""What both dialects of `tht analytics refresh` share (thoth.analytics.refresh): the steps,
their codes, the error naming the step, the report, the rules on data dates, scrub rules and
the views file, and the `plan` step and the data date reads both make the same way."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from thoth.analytics.datadate import NotADataDate, data_date_of, parse_data_date
from thoth.analytics.refresh_plan import ViewPlan, read_plan, reserved_relations
from thoth.analytics.store import AnalyticsError, AnalyticsStore
from thoth.config import AnalyticsRefreshSettings, AnalyticsSettings
from thoth.database import Dialect, QueryResult
from thoth.errors import Problem, ThothError

STEPS: Final = (
    "lock",
    "source",
    "plan",
    "data_date",
    "copy",
    "views",
    "grant",
    "check",
    "swap",
    "prune",
)

# Stable codes (docs/analytics.md, "Refreshing the store").
REFRESH_RUNNING: Final = "refresh_running"
SOURCE_UNREACHABLE: Final = "refresh_source_unreachable"
BACKUP_UNREADABLE: Final = "refresh_backup_unreadable"
VIEWS_INVALID: Final = "refresh_views_invalid"
SCRUB_UNKNOWN: Final = "refresh_scrub_unknown_column"
DATA_DATE_OLDER: Final = "refresh_data_date_older"
DATA_DATE_INVALID: Final = "refresh_data_date_invalid"
COPY_FAILED: Final = "refresh_copy_failed"
CHECK_FAILED: Final = "refresh_check_failed"
STORE_UNAVAILABLE: Final = "refresh_store_unavailable"
SWAP_FAILED: Final = "refresh_swap_failed"
PRUNE_FAILED: Final = "refresh_prune_failed"
NO_PREVIOUS: Final = "rollback_no_previous"


class RefreshError(ThothError):
    """A refresh (or a rollback) that stopped at `step`; before `swap`, the served copy is
    untouched."""

    code = "refresh_failed"

    def __init__(
        self,
        message: str,
        *,
        code: str,
        step: str,
        problems: list[Problem] | None = None,
    ) -> None:
        kept = "" if step == "prune" else " The served copy is untouched."
        end = "" if message.endswith(".") else "."
        super().__init__(
            f"analytics refresh, step {step}: {message}{end}{kept}",
            code=code,
            problems=problems or [],
        )
        self.step = step
        self.exit_code = 4 if code in (REFRESH_RUNNING, NO_PREVIOUS) else 1


@dataclass
class StepTime:
    name: str
    seconds: float
    detail: str = ""


@dataclass
class RefreshReport:
    dialect: str
    served: str  # the schema or file now served
    data_date: str
    previous_data_date: str | None
    tables: dict[str, int] = field(default_factory=dict)  # copied table -> rows
    columns: dict[str, list[str]] = field(default_factory=dict)  # copied table -> columns
    scrubbed: list[str] = field(default_factory=list)  # rules on a column a view reads
    scrub_unread: list[str] = field(default_factory=list)  # rules on a column no view reads
    views: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)  # catalog query ids that passed
    previous: list[str] = field(default_factory=list)  # the copies kept for rollback
    dropped: list[str] = field(default_factory=list)  # previous copies pruned
    steps: list[StepTime] = field(default_factory=list)
    forced: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, **asdict(self)}


@dataclass
class RollbackReport:
    dialect: str
    served: str
    restored: str  # the previous copy now served
    set_aside: str  # the copy that was served, kept under this name
    data_date: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, **asdict(self)}


class Steps:
    """Times each step and names it in every failure: a ThothError raised inside becomes a
    RefreshError of that step (its code kept); any other error is not caught here."""

    def __init__(self, report: RefreshReport, foreign: tuple[type[Exception], ...] = ()) -> None:
        self.report = report
        # The engines' and the file system's own errors: said with the step that met them.
        self.foreign: tuple[type[Exception], ...] = (OSError, sqlite3.Error, *foreign)

    @contextmanager
    def step(self, name: str, code: str = "refresh_failed") -> Iterator[StepTime]:
        started = time.perf_counter()
        timing = StepTime(name, 0.0)
        try:
            yield timing
        except RefreshError:
            raise
        except ThothError as exc:
            raise RefreshError(
                exc.message_text(),
                code=exc.code if exc.code not in ("error", "invalid") else code,
                step=name,
                problems=exc.problems if exc.problems_given else None,
            ) from exc
        except self.foreign as exc:
            detail = " ".join(str(exc).split())
            raise RefreshError(
                f"{type(exc).__name__}: {detail} -> fix what it names, then refresh again",
                code=code,
                step=name,
            ) from exc
        timing.seconds = round(time.perf_counter() - started, 3)
        self.report.steps.append(timing)


# -- helpers shared by both dialects ----------------------------------------------------------


def stamp() -> str:
    """A sortable name part for previous copies: UTC to the microsecond."""
    return datetime.now(UTC).strftime("%Y%m%d%H%M%S%f")


def instant(text: str) -> datetime:
    """A data date as a comparable UTC instant (a date is its midnight; naive is UTC)."""
    when = parse_data_date(text)
    if not isinstance(when, datetime):
        when = datetime(when.year, when.month, when.day)
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def iso_data_date(value: object, what: str) -> str:
    """The source's data date as ISO text (what the copy records), or RefreshError."""
    try:
        when = parse_data_date(value)
    except NotADataDate as exc:
        raise RefreshError(
            f"{what}: {exc} -> it must return one date or timestamp",
            code=DATA_DATE_INVALID,
            step="source",
        ) from exc
    if isinstance(when, datetime) and when.tzinfo is not None:
        when = when.astimezone(UTC)
    return when.isoformat()


def refuse_older(new: str, served: str | None, force: bool) -> None:
    """A clock that jumped back (or a stale backup) would serve older data under a newer
    refresh: refused unless forced."""
    if served is None or force:
        return
    if instant(new) < instant(served):
        raise RefreshError(
            f"the source's data date {new} is older than the served copy's {served} (a clock "
            "that jumped back, or an old backup) -> check the source; `tht analytics refresh "
            "--force` serves it anyway",
            code=DATA_DATE_OLDER,
            step="data_date",
        )


def scrub_targets(
    refresh_cfg: AnalyticsRefreshSettings,
    schema: str,
    source: Mapping[str, Mapping[str, str]],
) -> dict[str, set[str]]:
    """table -> scrubbed columns; a rule naming another schema, a table or a column the source
    lacks is refused (a typo would leave a secret in the copy)."""
    targets: dict[str, set[str]] = {}
    for rule in refresh_cfg.scrub:
        rule_schema, table, column = rule.split(".")
        if rule_schema != schema or table not in source or column not in source[table]:
            where = (
                f"schema {rule_schema} is not the source's ({schema})"
                if rule_schema != schema
                else f"the source has no table {table}"
                if table not in source
                else f"{schema}.{table} has no column {column}"
            )
            raise RefreshError(
                f"[analytics.refresh] scrub {rule!r}: {where} -> fix the rule; nothing is "
                "copied while a scrub rule names nothing",
                code=SCRUB_UNKNOWN,
                step="plan",
            )
        targets.setdefault(table, set()).add(column)
    return targets


def unread_rules(rules: Sequence[str], plan: ViewPlan) -> tuple[list[str], list[str]]:
    """The scrub rules split into those on a column a view reads (they scrub the copy) and
    those on a column no view reads: kept, for a view that reads it later is scrubbed from its
    first refresh, but reported, for they scrub nothing now — a rule on "note" beside a view
    that reads "notes" would otherwise look like protection (docs/analytics.md)."""
    read: list[str] = []
    unread: list[str] = []
    for rule in rules:
        _, table, column = rule.split(".")
        (read if column in plan.tables.get(table, ()) else unread).append(rule)
    return read, unread


def views_text(root: Path, refresh_cfg: AnalyticsRefreshSettings) -> str:
    path = root / refresh_cfg.views
    try:
        return path.read_text("utf-8")
    except OSError as exc:
        raise RefreshError(
            f"[analytics.refresh] views: cannot read {path} ({exc.strerror or exc}) -> write "
            "the store's views there, one CREATE VIEW each",
            code=VIEWS_INVALID,
            step="plan",
        ) from exc


def check_failed(problems: list[Problem], where: str) -> RefreshError:
    shown = "; ".join(p.render() for p in problems[:3])
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return RefreshError(
        f"{len(problems)} problem(s) on the new copy {where}: {shown}{more} -> fix the views "
        "file or the catalog, then refresh again",
        code=CHECK_FAILED,
        step="check",
        problems=problems,
    )


def plan_copy(
    root: Path,
    refresh_cfg: AnalyticsRefreshSettings,
    dialect: Dialect,
    schema: str,
    columns: Mapping[str, Mapping[str, str]],
    report: RefreshReport,
) -> tuple[ViewPlan, dict[str, set[str]]]:
    """The `plan` step: the views file read against the source's `columns` (in `schema`) and
    the scrub rules checked; the plan and table -> scrubbed columns."""
    plan = read_plan(
        views_text(root, refresh_cfg),
        refresh_cfg.views,
        dialect,
        columns,
        reserved_relations(refresh_cfg.data_date_view),
    )
    scrub = scrub_targets(refresh_cfg, schema, columns)
    report.scrubbed, report.scrub_unread = unread_rules(refresh_cfg.scrub, plan)
    report.views = list(plan.views)
    return plan, scrub


def queried_data_date(names: Sequence[str], rows: Sequence[Any], what: str) -> str:
    """The data date `source_data_date_sql` returned (`names`, `rows`: at most two rows) as ISO
    text, or RefreshError naming `what`."""
    result = QueryResult(columns=tuple(names), rows=tuple(rows), truncated=False, duration_ms=0.0)
    try:
        return iso_data_date(data_date_of(result), what)
    except NotADataDate as exc:
        raise RefreshError(f"{what}: {exc}", code=DATA_DATE_INVALID, step="source") from exc


def served_data_date(
    settings: AnalyticsSettings, root: Path, environ: Mapping[str, str] | None = None
) -> str | None:
    """The served copy's data date, read as answers read it; None when it cannot be read (a
    broken served copy is what a refresh repairs)."""
    store = AnalyticsStore(settings, root, environ=environ)
    try:
        return store.data_date()
    except AnalyticsError:
        return None
    finally:
        store.close()
