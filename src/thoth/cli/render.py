"""Human-readable reports (Rich). JSON output is built elsewhere from the same reports."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from thoth.errors import Problem
from thoth.evidence.prepare import PrepareReport
from thoth.evidence.validate import ValidationReport


def problems(console: Console, summary: str, found: Sequence[Problem]) -> None:
    console.print(f"[bold red]{escape(summary)}[/]", highlight=False)
    for p in found:
        loc = escape(p.where + (f" [{p.field}]" if p.field else ""))
        line = f"  [red]✗[/] [bold]{loc}[/]: {escape(p.message)}"
        if p.hint:
            line += f"\n      [dim]→ {escape(p.hint)}[/]"
        console.print(line, highlight=False, soft_wrap=True)


def prepare_report(console: Console, report: PrepareReport) -> None:
    if report.noop:
        console.print(
            f"Nothing to do: {len(report.sources)} sources unchanged, worktree untouched."
        )
        return
    table = Table(title=f"prepare ({report.restructurer})", show_lines=False)
    table.add_column("source", overflow="fold")
    table.add_column("status")
    for col in ("new", "updated", "kept", "candidates", "orphaned"):
        table.add_column(col, justify="right")
    for s in report.sources:
        if s.status == "unchanged":
            continue
        status = s.status + (f" (from {s.renamed_from})" if s.renamed_from else "")
        table.add_row(
            s.source,
            status,
            str(len(s.created)),
            str(len(s.updated)),
            str(len(s.kept)),
            str(len(s.retirement_candidates)),
            str(len(s.orphaned)),
        )
    console.print(table)
    unchanged = sum(1 for s in report.sources if s.status == "unchanged")
    console.print(
        f"{len(report.written)} files written, {len(report.deleted)} removed, "
        f"{unchanged} sources unchanged. Nothing was committed: review with "
        "`git diff` / `git status`."
    )
    if report.review_items:
        n = sum(len(v) for v in report.review_items.values())
        console.print(
            f"[yellow]{n} review items on {len(report.review_items)} units[/] block "
            "publication until a curator resolves them."
        )


def validation_report(console: Console, report: ValidationReport) -> None:
    kinds = ", ".join(f"{k} {n}" for k, n in report.by_kind.items()) or "none"
    console.print(f"[bold]{report.units} units[/] ({kinds})")
    if report.problems:
        problems(
            console, f"{len(report.problems)} problem(s): the corpus is invalid", report.problems
        )
    if report.doubts:
        console.print(
            f"[yellow]Review items ({sum(len(d.review_items) for d in report.doubts)}"
            f" on {len(report.doubts)} units):[/]"
        )
        for d in report.doubts:
            for item in d.review_items:
                where = escape(f" [{item.field}]") if item.field else ""
                console.print(
                    f"  [yellow]?[/] [bold]{d.id}[/]{where} {item.code}: {escape(item.message)}",
                    highlight=False,
                    soft_wrap=True,
                )
    for label, entries in (
        ("Orphans", report.orphans),
        ("Retirement candidates", report.retirement_candidates),
    ):
        if entries:
            console.print(f"[yellow]{label}:[/]")
            for e in entries:
                console.print(
                    f"  [yellow]![/] {e.id} (source {e.source}) -> `tht evidence "
                    f"resolve {e.id} --retire` or `--source <path>`",
                    highlight=False,
                )
    verdict = {
        "valid": "[green]valid[/]: publishable",
        "valid_with_doubts": "[yellow]valid with doubts[/]: not publishable until the blockers "
        "above are resolved",
        "invalid": "[red]invalid[/]: not publishable",
    }[report.outcome]
    console.print(f"Outcome: {verdict}")
