"""`tht eval run`, `tht eval add-from-answer`, `tht verify`: measuring the answer engine and
checking the data it serves."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import typer
from rich.markup import escape
from rich.table import Table

from thoth.cli import exitcodes
from thoth.cli.common import JsonOpt, emit_json, err, errors, out
from thoth.config import IndexSettings
from thoth.workspace import Workspace

if TYPE_CHECKING:
    from thoth.evaluation.answers import AnswerEvalReport
    from thoth.evaluation.fusion import TuneReport
    from thoth.knowledge.verify import VerifyReport

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]

# thoth.evaluation.answers.DEFAULT_K, not imported here (it loads the answer engine, and
# `tht --help` must not). A test keeps them equal.
DEFAULT_K: Final = 5


def register(app: typer.Typer) -> None:
    eval_app = typer.Typer(no_args_is_help=True, help="Measure the answer engine.")
    app.add_typer(eval_app, name="eval")
    eval_app.command("run")(eval_run_cmd)
    eval_app.command("add-from-answer")(add_from_answer_cmd)
    eval_app.command("tune-fusion")(tune_fusion_cmd)
    app.command("verify")(verify_cmd)


def eval_run_cmd(
    file: Annotated[
        Path | None,
        typer.Option("--file", help="Evaluation file (default: [answers].evaluation)."),
    ] = None,
    k: Annotated[int, typer.Option("--k", min=1, help="Sources judged at retrieval level.")] = (
        DEFAULT_K
    ),
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Ask every reference question; judge retrieval and answer separately.

    Exit 0 all pass, 1 any case fails."""
    from thoth.evaluation.answers import load_answer_cases
    from thoth.runtime import evaluate_answers

    with errors(as_json):
        ws = Workspace.open(workspace)
        rel = file or Path(ws.settings.answers.evaluation)
        cases = load_answer_cases(ws.root / rel, str(rel))
        report = evaluate_answers(ws, cases, k)
    if as_json:
        emit_json(report.as_dict())
    else:
        _render_eval(report)
    raise typer.Exit(exitcodes.OK if report.passed else exitcodes.FAILED)


def _render_eval(report: AnswerEvalReport) -> None:
    table = Table(title=f"Answer evaluation (retrieval judged on the top {report.k} sources)")
    for col in ("case", "status", "retrieval", "answer", "what failed"):
        table.add_column(col)
    for c in report.cases:
        why = [
            *(f"missing document {d}" for d in c.missing_documents),
            *(f"leaked {d}" for d in c.leaked_documents),
            *(["expected nothing found"] if c.expected_nothing_found else []),
            *(f"missing fact {f!r}" for f in c.missing_facts),
            *(f"leaked fact {f!r}" for f in c.leaked_facts),
            *(f"caveat not reported {v!r}" for v in c.missing_caveats),
            *(f"{n} stated without its caveat" for n in c.unreliable_stated),
            *c.numeric_problems,
            *([c.error or ""] if c.verdict == "failed" else []),
        ]
        table.add_row(
            c.id,
            c.status,
            "[green]ok[/]" if c.retrieval_passed else "[red]miss[/]",
            "[green]ok[/]" if c.answer_passed else "[red]fail[/]",
            escape("; ".join(why)),
        )
    out.print(table)
    s = report.summary()
    out.print(
        f"{s['passed']}/{s['cases']} passed — retrieval {s['retrieval_passed']}/{s['cases']}, "
        f"answer {s['answer_passed']}/{s['cases']}, errors {s['errors']}. "
        "A retrieval miss points at the corpus or routing; an answer failure with retrieval ok "
        "points at the curation (caveats) or the answerer."
    )


def add_from_answer_cmd(
    answer_id: Annotated[str, typer.Argument(help="A logged answer id (`tht answers log`).")],
    file: Annotated[
        Path | None,
        typer.Option("--file", help="Evaluation file (default: [answers].evaluation)."),
    ] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Turn a logged (bad) answer into a ready evaluation entry appended to the file."""
    from thoth.evaluation.answers import append_case, case_from_answer
    from thoth.runtime import open_state

    with errors(as_json):
        ws = Workspace.open(workspace)
        rel = file or Path(ws.settings.answers.evaluation)
        with open_state(ws) as state:
            logged = state.get_answer(answer_id)
        sources = [str(s["doc_id"]) for s in logged.answer.get("sources") or []]
        entry = case_from_answer(
            answer_id, logged.question, logged.request, sources, str(logged.answer.get("text"))
        )
        append_case(ws.root / rel, str(rel), answer_id, entry)
    if as_json:
        emit_json({"ok": True, "file": str(rel), "id": f"from-{answer_id}", "entry": entry})
    else:
        out.print(
            f"Appended case [bold]from-{answer_id}[/] to {rel}. Review its expected documents "
            "and write the facts the right answer must contain, then `tht eval run`."
        )


def tune_fusion_cmd(
    file: Annotated[
        Path | None,
        typer.Option("--file", help="Evaluation file (default: [answers].evaluation)."),
    ] = None,
    k: Annotated[int, typer.Option("--k", min=1, help="Sources judged at retrieval level.")] = (
        DEFAULT_K
    ),
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report only: never write thoth.toml.")
    ] = False,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Tune [index] fusion on the evaluation file's retrieval cases, keeping the baseline.

    Writes the best candidate to thoth.toml only with strictly more cases whose first source
    is expected and none lost at --k or 10. Exit 0 written (or a gain with --dry-run),
    1 refused: the baseline stays."""
    from dataclasses import replace

    from thoth.evaluation.answers import load_answer_cases
    from thoth.evaluation.fusion import (
        FusionSetting,
        RetrievalSearcher,
        evidence_gate,
        save_first_baseline,
        tune,
        write_fusion,
    )
    from thoth.runtime import knowledge_search, open_runtime, state_dir

    with errors(as_json):
        ws = Workspace.open(workspace)
        rel = file or Path(ws.settings.answers.evaluation)
        cases = load_answer_cases(ws.root / rel, str(rel))
        with open_runtime(ws) as rt:

            def searcher(index: IndexSettings) -> RetrievalSearcher:
                tuned = replace(ws, settings=ws.settings.model_copy(update={"index": index}))
                return RetrievalSearcher(knowledge_search(tuned, rt))

            def gate(setting: FusionSetting) -> str:
                # A candidate must keep the Evidence evaluation gate of what is published.
                index = setting.applied(ws.settings.index)
                tuned = replace(
                    rt, ws=replace(ws, settings=ws.settings.model_copy(update={"index": index}))
                )
                search = tuned.search()
                try:
                    active = rt.state.active_generation(ws.settings.workspace)
                    return evidence_gate(search, ws.root, active)
                finally:
                    search.close()

            report = tune(searcher, ws.settings.index, cases, k, gate)
        report.first_baseline = save_first_baseline(report, state_dir(ws))
        if report.gain and report.best is not None and not dry_run:
            write_fusion(ws.root, report.best.setting)
            report.written = True
    if as_json:
        emit_json(report.as_dict())
    else:
        _render_tune(report, dry_run)
    raise typer.Exit(exitcodes.OK if report.gain else exitcodes.FAILED)


def _render_tune(report: TuneReport, dry_run: bool) -> None:
    from thoth.evaluation.fusion import DEPTH

    table = Table(
        title=f"Fusion on {len(report.cases)} retrieval case(s) (best rank of an expected "
        "document among the sources)"
    )
    for col in ("fusion", "hit@1", f"hit@{report.k}", f"hit@{DEPTH}", "MRR"):
        table.add_column(col)
    rows = report.candidates or [report.baseline]
    for m in rows:
        mark = " (baseline)" if m.setting == report.baseline.setting else ""
        mark += " (best)" if report.best is not None and m is report.best else ""
        table.add_row(
            escape(m.setting.label() + mark),
            str(m.hits(1)),
            str(m.hits(report.k)),
            str(m.hits(DEPTH)),
            f"{m.mrr:.3f}",
        )
    out.print(table)
    if report.skipped:
        out.print(f"Not measured (no expected documents): {', '.join(report.skipped)}.")
    if report.written:
        out.print(
            f"[green]Written[/] to thoth.toml [index]: {escape(report.reason)}. Commit "
            "thoth.toml; `tht eval run` measures the answers with it."
        )
    elif report.gain:
        out.print(f"Gain found (--dry-run: nothing written): {escape(report.reason)}.")
    else:
        out.print(f"[yellow]Refused[/]: {escape(report.reason)}. thoth.toml is unchanged.")


def verify_cmd(workspace: WsOpt = Path("."), as_json: JsonOpt = False) -> None:
    """Check the data: filters with documents, labels in the vocabulary, wiki references, and
    the served analytics catalog against the store (views gone).

    Exit 0 no errors, 1 errors (warnings do not fail)."""
    with errors(as_json):
        ws = Workspace.open(workspace)
        report = _verify_with_index(ws)
        _verify_catalog(ws, report)
        _verify_rates(ws, report)
        _verify_schedule(ws, report)
    if as_json:
        emit_json(report.as_dict())
    else:
        _render_verify(report)
    raise typer.Exit(exitcodes.OK if report.ok else exitcodes.FAILED)


def _verify_catalog(ws: Workspace, report: VerifyReport) -> None:
    """The served analytics catalog against the store (views gone, entries broken)."""
    from thoth.analytics.catalog import load_catalog_at
    from thoth.analytics.store import AnalyticsStore
    from thoth.analytics.verify import catalog_findings
    from thoth.runtime import open_state

    settings = ws.settings.analytics
    if settings is None:
        return
    with open_state(ws) as state:
        revision = state.active_revision(ws.settings.workspace)
    if revision is None:
        report.add(
            "warning",
            "no_active_revision",
            "[analytics]",
            "no catalog is served yet",
            "`tht workspace activate`",
        )
        return
    catalog = load_catalog_at(ws.root, settings.catalog, revision)
    store = AnalyticsStore(settings, ws.root)
    for f in catalog_findings(catalog, store):
        report.add("error", f.code, f.where, f.message, f.hint)


def _verify_rates(ws: Workspace, report: VerifyReport) -> None:
    """The rates of the answers served above `[answers.alerts]`: warnings, never errors (the
    data is not wrong; the engine is serving worse than it should)."""
    from thoth.runtime import open_state
    from thoth.state.stats import current_alerts

    with open_state(ws) as state:
        found = current_alerts(state, ws.settings)
    days = ws.settings.answers.alerts.window_days
    for alert in found:
        report.add(
            "warning",
            f"answers_{alert.rate}",
            f"answers of the last {days} day(s)",
            alert.message(),
            "`tht answers stats` shows them by day; `tht answers log` lists them "
            f"([answers.alerts] {alert.rate} sets the threshold)",
        )


def _verify_schedule(ws: Workspace, report: VerifyReport) -> None:
    """A routine of `[schedule]` that is late or whose last run failed: a warning (what was
    served is not wrong; it is not being kept current)."""
    from thoth.runtime import open_state
    from thoth.schedule.scheduler import Scheduler

    if not ws.settings.schedule.routines:
        return
    with open_state(ws) as state:
        statuses = Scheduler(ws, state).status()
    for status in statuses:
        for code, message in status.warnings():
            report.add(
                "warning",
                code,
                f"[schedule] routine {status.name}",
                message,
                "`tht schedule list` shows every routine; docs/operations.md says what to do",
            )


def _verify_with_index(ws: Workspace) -> VerifyReport:
    from thoth.index.base import IndexUnavailable
    from thoth.index.reader import Unreadable, open_generation
    from thoth.knowledge.verify import VERIFIED_KINDS, verify
    from thoth.runtime import make_backend, open_state

    state = open_state(ws)
    backend = make_backend(ws)
    try:
        active = state.active_generation(ws.settings.workspace)
        if active is None:
            return verify(ws)
        try:
            store = open_generation(backend, active)
        except Unreadable as exc:
            report = verify(ws)
            report.add("error", exc.code, f"generation {active.id}", str(exc))
            return report
        except IndexUnavailable as exc:
            report = verify(ws)
            report.add("error", "index_unavailable", f"generation {active.id}", str(exc))
            return report
        try:
            # Only what verify checks: schema records are many and carry no labels.
            return verify(ws, store.scroll({"record_kind": list(VERIFIED_KINDS)}))
        finally:
            store.close()
    finally:
        backend.close()
        state.close()


def _render_verify(report: VerifyReport) -> None:
    for f in report.findings:
        color = "red" if f.level == "error" else "yellow"
        text = f"{f.where}: {f.message}" + (f" -> {f.hint}" if f.hint else "")
        (out if f.level == "warning" else err).print(
            f"[{color}]{f.level}[/] \\[{f.code}] {escape(text)}", highlight=False
        )
    indexed = (
        "no active generation"
        if report.indexed_records is None
        else f"{report.indexed_records} indexed records checked"
    )
    errors_n = sum(f.level == "error" for f in report.findings)
    out.print(
        f"{report.documents} documents, {report.pages} wiki pages, {indexed}: "
        f"{errors_n} error(s), {len(report.findings) - errors_n} warning(s)."
    )
