"""What each routine does: the same work as the command a person would run, through the same
code (`tht docs sync` with its lock and run record, `tht analytics metrics-page`, `tht eval
run`, `tht analytics refresh`), and `poll`, which fetches each source's upstream and syncs when
one moved.

A routine returns what it did (a JSON object, kept in the run's `result`) or raises a
`ThothError`, whose code and message the run records as its failure.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from thoth.errors import ThothError
from thoth.state import StateStore
from thoth.state.schedule import ScheduleRun
from thoth.workspace import Workspace

FETCH_TIMEOUT_S: Final = 120


class RoutineFailed(ThothError):
    """A routine ran and reported a failure of what it checks (an evaluation that failed)."""

    code = "routine_failed"


class PollFailed(ThothError):
    """A source's upstream could not be fetched or read: nothing was synced."""

    code = "poll_failed"


@dataclass(frozen=True)
class RoutineContext:
    """What a routine runs with: the workspace, the state store, the run it is, who it says
    started it (the sync run's `run_by`) and whether it rebuilds everything."""

    ws: Workspace
    state: StateStore
    run: ScheduleRun
    run_by: str
    full: bool


Routine = Callable[[RoutineContext], dict[str, Any]]


def docs_sync(ctx: RoutineContext) -> dict[str, Any]:
    """`tht docs sync`: its run lock, its run record (which names each source's commit)."""
    from thoth.knowledge.sync import DocsSync
    from thoth.runtime import open_runtime

    with open_runtime(ctx.ws) as rt:
        report = DocsSync(rt.ws, rt.state, rt.backend, rt.embedder).run(
            full=ctx.full, run_by=ctx.run_by
        )
    return {
        "sync_run": report.run_id,
        "revisions": dict(report.revisions),
        "counts": dict(report.counts),
    }


def poll(ctx: RoutineContext) -> dict[str, Any]:
    """Fetch each source's upstream; sync when one is not at the commit the last succeeded
    sync read (or none ever succeeded), else record that nothing moved."""
    served = _last_synced(ctx)
    moved: dict[str, str] = {}
    for source in ctx.ws.settings.sources:
        repo = (ctx.ws.root / source.repo).resolve()
        head = _upstream_head(repo, source.name)
        if served.get(source.name) != head:
            moved[source.name] = head
    if not moved:
        return {"moved": {}, "sync_run": None}
    return {"moved": moved, **docs_sync(ctx)}


def metrics_page(ctx: RoutineContext) -> dict[str, Any]:
    """`tht analytics metrics-page`: the figures with their data date, into the wiki."""
    from thoth.analytics.metrics import metrics_page as write_page
    from thoth.answer.wording import wording_for
    from thoth.runtime import make_analytics, open_runtime, require_analytics

    settings = require_analytics(ctx.ws)
    with open_runtime(ctx.ws) as rt:
        service = make_analytics(rt)
        try:
            page = write_page(
                service,
                settings,
                ctx.ws.root,
                wording_for(ctx.ws.settings.language),
                ctx.ws.settings.language,
            )
        finally:
            service.close()
    return {"path": str(page.path.relative_to(ctx.ws.root)), "figures": len(page.figures)}


def eval_run(ctx: RoutineContext) -> dict[str, Any]:
    """`tht eval run` on `[answers].evaluation`: a failing case fails the run."""
    from thoth.evaluation.answers import DEFAULT_K, load_answer_cases
    from thoth.runtime import evaluate_answers

    rel = ctx.ws.settings.answers.evaluation
    cases = load_answer_cases(ctx.ws.root / rel, rel)
    report = evaluate_answers(ctx.ws, cases, DEFAULT_K)
    summary = report.summary()
    if not report.passed:
        raise RoutineFailed(
            f"evaluation {rel}: {summary['passed']} of {summary['cases']} case(s) passed "
            f"({summary['failed_at_retrieval']} at retrieval, {summary['failed_at_answer']} "
            f"at answer, {summary['errors']} errors) -> `tht eval run` shows each case"
        )
    return {"evaluation": rel, "summary": summary}


def analytics_refresh(ctx: RoutineContext) -> dict[str, Any]:
    """`tht analytics refresh`: the store rebuilt from its source, every query of the served
    catalog checked on the new copy, swapped in (a failure leaves the served copy as it was
    and is recorded with its code, naming the step)."""
    from thoth.analytics.refresh import refresh, served_catalog

    revision = ctx.state.active_revision(ctx.ws.settings.workspace)
    report = refresh(ctx.ws, served_catalog(ctx.ws, revision))
    return {
        "served": report.served,
        "data_date": report.data_date,
        "previous_data_date": report.previous_data_date,
        "tables": dict(report.tables),
        "checked": len(report.checked),
        "previous": list(report.previous),
    }


BUILTIN: Final[Mapping[str, Routine]] = {
    "docs_sync": docs_sync,
    "poll": poll,
    "metrics_page": metrics_page,
    "eval_run": eval_run,
    "analytics_refresh": analytics_refresh,
}


def _last_synced(ctx: RoutineContext) -> dict[str, Any]:
    """Each source's commit as the last succeeded docs sync read it."""
    for run in ctx.state.list_sync_runs(ctx.ws.settings.workspace, limit=50):
        if run.status == "succeeded" and run.kind == "docs":
            return dict(run.revisions)
    return {}


def _upstream_head(repo: Path, source: str) -> str:
    """The commit the source's branch follows after a fetch; HEAD when it follows none."""
    upstream = _git(repo, source, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}")
    if upstream is None:
        head = _git(repo, source, "rev-parse", "--verify", "HEAD^{commit}")
        if head is None:
            raise PollFailed(f"source {source!r} ({repo}): no commit -> commit its files first")
        return head
    if _git(repo, source, "fetch", "--quiet") is None:
        raise PollFailed(
            f"source {source!r} ({repo}): fetching {upstream} failed; nothing was synced -> "
            "check that the remote is reachable (`git fetch` in the source's repository)"
        )
    head = _git(repo, source, "rev-parse", "--verify", "@{u}^{commit}")
    if head is None:
        raise PollFailed(
            f"source {source!r} ({repo}): {upstream} does not exist after fetching -> fix the "
            "tracking branch (`git branch --set-upstream-to`)"
        )
    return head


def _git(repo: Path, source: str, *args: str) -> str | None:
    """git's output, or None when it exits non-zero (the caller says what that means)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            timeout=FETCH_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PollFailed(f"source {source!r} ({repo}): git {args[0]} failed: {exc}") from exc
    return done.stdout.strip() if done.returncode == 0 else None
