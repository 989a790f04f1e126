"""`tht analytics check | calibrate | grant-sql | metrics-page | refresh | rollback`: the
analytics store (level 3).

Exit codes: check 0 every entry passes, 1 problems (each names the file and the field),
4 the store cannot be opened or no [analytics]; calibrate 0 done, 1 bad set or embedder
down; metrics-page 0 written, 1 a figure failed (nothing written); refresh 0 swapped in, 1 a
step failed (the served copy untouched), 4 another refresh running or no [analytics.refresh];
rollback 0 done, 4 no previous copy."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.markup import escape
from rich.table import Table

from thoth.cli import exitcodes
from thoth.cli.common import JsonOpt, emit_json, errors, out
from thoth.errors import ThothError
from thoth.workspace import Workspace

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]
DEFAULT_SET = Path("analytics/calibration.yaml")


def register(app: typer.Typer) -> None:
    analytics_app = typer.Typer(no_args_is_help=True, help="The analytics store (level 3).")
    app.add_typer(analytics_app, name="analytics")
    analytics_app.command("check")(check_cmd)
    analytics_app.command("calibrate")(calibrate_cmd)
    analytics_app.command("grant-sql")(grant_sql_cmd)
    analytics_app.command("metrics-page")(metrics_page_cmd)
    analytics_app.command("refresh")(refresh_cmd)
    analytics_app.command("rollback")(rollback_cmd)


def check_cmd(
    revision: Annotated[
        str | None,
        typer.Option("--revision", help="Check this commit's catalog (default: the files)."),
    ] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Check every catalog entry against the store. Exit 0 valid, 1 problems, 4 no store."""
    from thoth.analytics.catalog import load_catalog_at, load_catalog_files
    from thoth.analytics.check import (
        check_catalog,
        data_date_problems,
        labels_problems,
        query_label_problems,
    )
    from thoth.gitrepo import resolve_revision
    from thoth.runtime import open_analytics_store
    from thoth.runtime import require_analytics as _require

    with errors(as_json):
        ws = Workspace.open(workspace)
        settings = _require(ws)
        catalog = (
            load_catalog_files(ws.root, settings.catalog)
            if revision is None
            else load_catalog_at(ws.root, settings.catalog, resolve_revision(ws.root, revision))
        )
        store = open_analytics_store(ws)
        with store.database() as db:
            report = check_catalog(
                catalog,
                db,
                settings.store().schema_names,
                max_enum_values=settings.max_enum_values,
            )
        report.problems += (
            data_date_problems(store)
            + labels_problems(store)
            + query_label_problems(catalog, ws.settings.answers.labels)
        )
    if as_json:
        emit_json({"catalog": settings.catalog, "revision": catalog.revision, **report.as_dict()})
    else:
        for problem in report.problems:
            out.print(escape(problem.render()), highlight=False)
        for warning in report.warnings:
            out.print(f"[yellow]warning[/] {escape(warning.render())}", highlight=False)
        out.print(
            f"{len(report.queries)} of {report.files} catalog files pass"
            + ("." if report.ok else f"; {len(report.problems)} problem(s).")
        )
    raise typer.Exit(exitcodes.OK if report.ok else exitcodes.FAILED)


def load_labelled(path: Path) -> list[tuple[str, str | None, bool]]:
    """A YAML list of {question, query (id or null), figure (true: a figure no query
    computes)}."""
    from thoth.markup import load_yaml

    try:
        data = load_yaml(path.read_text("utf-8"))
    except OSError as exc:
        raise ThothError(f"{path}: cannot read the calibration set ({exc}) -> pass --set") from exc
    except yaml.YAMLError as exc:
        raise ThothError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(data, list) or not data:
        raise ThothError(f"{path}: expected a list of {{question, query, figure}} entries")
    labelled = []
    for index, entry in enumerate(data):
        where = f"{path}: entry {index}"
        if not isinstance(entry, dict) or set(entry) - {"question", "query", "figure"}:
            raise ThothError(f"{where}: expected a mapping of question, query, figure")
        question, query, figure = entry.get("question"), entry.get("query"), entry.get("figure")
        if not isinstance(question, str) or not question.strip():
            raise ThothError(f"{where}: `question` must be a non-empty string")
        if query is not None and not isinstance(query, str):
            raise ThothError(f"{where}: `query` must be a catalog id or null")
        if figure is not None and not isinstance(figure, bool):
            raise ThothError(f"{where}: `figure` must be true or false")
        labelled.append((question.strip(), query, bool(figure)))
    return labelled


def calibrate_cmd(
    labelled_set: Annotated[
        Path | None,
        typer.Option("--set", help=f"Labelled questions (YAML). Default: {DEFAULT_SET}."),
    ] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Score labelled questions against the catalog and suggest the routing threshold."""
    from thoth.analytics.calibration import calibrate_catalog
    from thoth.analytics.routing import WRONG_NUMBER_COST
    from thoth.runtime import open_analytics_store, open_embedder
    from thoth.runtime import require_analytics as _require

    with errors(as_json):
        ws = Workspace.open(workspace)
        settings = _require(ws)
        path = labelled_set or ws.root / DEFAULT_SET
        labelled = load_labelled(path)
        store = open_analytics_store(ws)
        try:
            result = calibrate_catalog(
                ws.root, store, open_embedder(ws), ws.settings.language, labelled
            )
        finally:
            store.close()
    data: dict[str, Any] = {
        "ok": True,
        "set": str(path),
        "configured_threshold": settings.threshold,
        "configured_uncovered_threshold": settings.uncovered_threshold,
        **result.as_dict(),
    }
    if as_json:
        emit_json(data)
        return
    table = Table(title="routing score of the decision (similarity, measure, values, words)")
    for col in ("questions", "n", "min", "p10", "p50", "p90", "max"):
        table.add_column(col)
    for label, key in (
        ("covered (closest query right)", "covered"),
        # Two views of the uncovered questions, not a part of a whole: the best score among
        # the queries no gate refused, and every figure question's best similarity.
        ("not covered, a query eligible", "not_covered"),
        ("not covered asking a figure", "uncovered_figures"),
    ):
        d = data[key]
        table.add_row(
            label,
            *(
                str(d[k]) if d[k] is not None else "-"
                for k in ("n", "min", "p10", "p50", "p90", "max")
            ),
        )
    out.print(table)
    verdict = (
        "separated"
        if result.separated
        else f"overlapping: lowest cost, a wrong number weighing {WRONG_NUMBER_COST}"
    )
    out.print(
        f"Suggested threshold: [bold]{result.threshold:.3f}[/] ({verdict}), accuracy "
        f"{result.accuracy:.0%} on {len(result.per_question)} questions. Configured: "
        f"{settings.threshold:.3f}."
    )
    computed, wrong = result.expected_computed, result.expected_wrong
    out.print(
        f"Expected on new wordings (leave-one-out): {computed.accepted} of {computed.of} "
        f"covered questions computed"
        + (f" ({computed.accepted / computed.of:.0%})" if computed.of else "")
        + f"; {wrong.accepted} of {wrong.of} uncovered ones computed (wrong numbers)."
    )
    for warning in result.warnings:
        out.print(f"[yellow]warning[/] {escape(warning)}", highlight=False)
    if result.uncovered_threshold is not None:
        out.print(
            f"Suggested uncovered_threshold: [bold]{result.uncovered_threshold:.3f}[/] "
            "(figures no query computes vs text questions)."
        )
    for row in result.wrong_query:
        refused = row["refused"].get(row["expected"])
        why = f"refused: {refused}" if refused else "improve its examples"
        out.print(
            f"  decision wrong: {escape(row['question'])!r} expected {row['expected']}, "
            f"chose {row['closest']} ({row['score']}) -> {escape(why)}",
            highlight=False,
        )
    thin = sorted(
        (r for r in result.per_question if r["margin"] is not None and r["margin"] < 0.01),
        key=lambda r: r["margin"],
    )
    for row in thin:
        out.print(
            f"  margin {row['margin']:+.4f}: {escape(row['question'])!r} "
            f"({row['expected'] or 'no query'})",
            highlight=False,
        )
    out.print(
        escape(f"Set `threshold = {result.threshold:.3f}` under [analytics] in thoth.toml."),
        highlight=False,
    )


def grant_sql_cmd(
    role: Annotated[str, typer.Option("--role", help="The role to create.")] = "thoth_analytics",
    database: Annotated[str, typer.Option("--database", help="The database.")] = "warehouse",
    workspace: WsOpt = Path("."),
) -> None:
    """Print the SQL a DBA runs: a role that sees only the views of [analytics] schemas."""
    from thoth.analytics.grants import grant_sql
    from thoth.runtime import require_analytics as _require

    with errors(False):
        settings = _require(Workspace.open(workspace))
        if settings.dialect != "postgresql":
            raise ThothError(
                "grant-sql is for a PostgreSQL store; a SQLite store is confined by Thoth's "
                "views-only authorizer (docs/analytics.md)"
            )
    typer.echo(grant_sql(role, settings.schemas, database), nl=False)


def metrics_page_cmd(workspace: WsOpt = Path("."), as_json: JsonOpt = False) -> None:
    """Regenerate the metrics page (figures with data date) into the wiki; never indexed."""
    from thoth.analytics.metrics import metrics_page
    from thoth.answer.wording import wording_for
    from thoth.runtime import make_analytics, open_runtime
    from thoth.runtime import require_analytics as _require

    with errors(as_json):
        ws = Workspace.open(workspace)
        settings = _require(ws)
        with open_runtime(ws) as rt:
            service = make_analytics(rt)
            try:
                page = metrics_page(
                    service,
                    settings,
                    ws.root,
                    wording_for(ws.settings.language),
                    ws.settings.language,
                )
            finally:
                service.close()
    if as_json:
        emit_json(
            {
                "ok": True,
                "path": str(page.path.relative_to(ws.root)),
                "figures": [c.provenance() for c in page.figures],
            }
        )
        return
    out.print(
        f"Wrote {page.path.relative_to(ws.root)} ({len(page.figures)} figures, "
        "`knowledge: false`: docs sync never indexes it). Commit it for the curators."
    )


def refresh_cmd(
    force: Annotated[
        bool,
        typer.Option("--force", help="Serve a data date older than the served copy's."),
    ] = False,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Rebuild the store from its source, check every catalog query on it, swap it in.
    Exit 0 swapped, 1 a step failed (served copy untouched), 4 another refresh running."""
    from thoth.analytics.refresh import RefreshError, refresh, served_catalog
    from thoth.cli.common import report_error
    from thoth.runtime import open_state

    with errors(as_json):
        ws = Workspace.open(workspace)
        state = open_state(ws)
        try:
            revision = state.active_revision(ws.settings.workspace)
        finally:
            state.close()
        catalog = served_catalog(ws, revision)
        try:
            report = refresh(ws, catalog, force=force)
        except RefreshError as exc:
            raise typer.Exit(report_error(exc, as_json, extra={"step": exc.step})) from exc
    if as_json:
        emit_json({"catalog_revision": catalog.revision, **report.as_dict()})
        return
    for step in report.steps:
        detail = f" ({step.detail})" if step.detail else ""
        out.print(f"  {step.name:<10} {step.seconds:8.3f} s{escape(detail)}", highlight=False)
    rows = sum(report.tables.values())
    out.print(
        f"Refreshed {report.served}: {len(report.tables)} tables, {rows} rows, "
        f"{len(report.checked)} catalog queries checked; data date {report.data_date} "
        f"(was {report.previous_data_date or 'none'}). Previous copies kept: "
        f"{', '.join(report.previous) or 'none'}.",
        highlight=False,
    )
    if report.scrub_unread:
        out.print(
            f"[yellow]Scrub rules on a column no view reads (kept; they scrub nothing in this "
            f"copy): {escape(', '.join(report.scrub_unread))}[/] -> check each names the "
            "column you meant; a view that reads it later is scrubbed.",
            highlight=False,
        )


def rollback_cmd(workspace: WsOpt = Path("."), as_json: JsonOpt = False) -> None:
    """Serve the newest previous copy again (the current one is set aside, not dropped).
    Exit 0 done, 4 no previous copy."""
    from thoth.analytics.refresh import RefreshError, rollback
    from thoth.cli.common import report_error

    with errors(as_json):
        ws = Workspace.open(workspace)
        try:
            report = rollback(ws)
        except RefreshError as exc:
            raise typer.Exit(report_error(exc, as_json, extra={"step": exc.step})) from exc
    if as_json:
        emit_json(report.as_dict())
        return
    out.print(
        f"Rolled back {report.served} to {report.restored} (data date {report.data_date}); "
        f"the copy served until now is kept as {report.set_aside}.",
        highlight=False,
    )
