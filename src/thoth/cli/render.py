"""Human-readable reports (Rich). JSON output is built elsewhere from the same reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from thoth.errors import Problem

if TYPE_CHECKING:
    from thoth.evaluation.evidence import EvaluationReport
    from thoth.evidence.prepare import PrepareReport
    from thoth.evidence.validate import ValidationReport
    from thoth.search.outcome import EvidenceSearchOutcome
    from thoth.workflow.publish import PublishReport


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


def render_evaluation(console: Console, report: EvaluationReport) -> None:
    table = Table(
        title=f"evaluation · generation {report.generation} · revision {report.revision[:12]}"
    )
    for col in ("question", "profile", "expected", "fused", "dense", "bm25", "@10"):
        table.add_column(col, overflow="fold")
    for q in report.questions:
        best = min(q.ranks.items(), key=lambda kv: kv[1]["fused"] or 10**6)
        eid, ranks = best
        table.add_row(
            q.id,
            q.profile,
            eid.removeprefix("evidence:"),
            *(str(ranks[b] or "—") for b in ("fused", "dense", "bm25")),
            "[green]✓[/]" if q.hit_at_10 else "[red]✗[/]",
        )
    console.print(table)
    console.print(
        f"hit@5 {report.hit_at_5:.2f} · hit@10 {report.hit_at_10:.2f} · gate "
        f"{'[green]passed[/]' if report.gate_passed else '[red]failed[/]'}"
        + (f" · kinds missed: {report.kinds_missed}" if report.kinds_missed else "")
        + (f" · no results: {', '.join(report.no_results)}" if report.no_results else "")
    )


def render_publish(console: Console, report: PublishReport) -> None:
    console.print(
        f"Revision {report.revision[:12]} -> generation [bold]{report.generation}[/]: "
        f"{report.units} units, {report.fragments} fragments "
        f"(embedded in {report.embed_seconds:.1f}s), {report.carried_forward} records of "
        f"other kinds carried forward, {report.duration_s:.1f}s in all."
    )
    proof = report.upgrade_proof
    if proof is not None:
        verdict = "[green]passed[/]" if proof.passed else "[red]failed[/]"
        console.print(
            f"Upgrade proof (pipeline {proof.from_version} -> {proof.to_version}): {verdict}"
        )
        for k in proof.kinds:
            console.print(
                f"  {k.kind}: {k.count_before} -> {k.count_after} records, "
                f"{len(k.sample_ids)} sampled ids, {k.searches} dense searches"
            )
        for d in proof.differences:
            console.print(f"  [red]differs:[/] {escape(d)}")
    if report.evaluation:
        render_evaluation(console, report.evaluation)
    colour = "green" if report.outcome == "activated" else "red"
    console.print(f"[{colour}]{report.outcome}[/]: {escape(report.message)}")


def render_outcome(console: Console, outcome: EvidenceSearchOutcome) -> None:
    if not outcome.available:
        console.print(f"[red]unavailable[/] ({outcome.code}): {escape(outcome.message or '')}")
        return
    if not outcome.results:
        console.print(f"available, no matching Evidence (generation {outcome.generation}).")
        return
    for r in outcome.results:
        console.print(
            f"[bold]{r.rank}. {escape(r.title)}[/] [dim]{r.evidence_id} · {r.kind} · "
            f"{r.score:.4f}[/]"
        )
        excerpt = " ".join(r.excerpts[0].split()) if r.excerpts else ""
        console.print(
            f"   {escape(excerpt[:240])}{'…' if len(excerpt) > 240 else ''}", highlight=False
        )
        for caveat in r.caveats:
            console.print(f"   [yellow]caveat:[/] {escape(caveat)}", highlight=False)
        console.print(f"   [dim]{escape(r.citation)}[/]", highlight=False)
