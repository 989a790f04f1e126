"""Commands that publish and search Evidence: `tht workspace activate`, `tht workspace
preprocess evidence`, `tht evidence activate|search|evaluate|generations`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from thoth.cli import exitcodes, render
from thoth.cli.common import JsonOpt, WorkspaceArg, emit_json, errors, out, phase_bars
from thoth.errors import PreconditionError
from thoth.workspace import Workspace

if TYPE_CHECKING:
    from thoth.runtime import Runtime
    from thoth.workflow.publish import PublishReport

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]
_BINDABLE = ("concepts", "tables", "columns")


def register(app: typer.Typer, evidence_app: typer.Typer) -> None:
    workspace_app = typer.Typer(no_args_is_help=True, help="Activate revisions, build indexes.")
    preprocess_app = typer.Typer(no_args_is_help=True, help="Build index generations.")
    app.add_typer(workspace_app, name="workspace")
    workspace_app.add_typer(preprocess_app, name="preprocess")
    workspace_app.command("activate")(activate_revision_cmd)
    preprocess_app.command("evidence")(preprocess_evidence_cmd)
    evidence_app.command("activate")(activate_generation_cmd)
    evidence_app.command("search")(search_cmd)
    evidence_app.command("evaluate")(evaluate_cmd)
    evidence_app.command("generations")(generations_cmd)


def activate_revision_cmd(
    root: WorkspaceArg,
    revision: Annotated[str, typer.Option(help="Commit to serve (default: HEAD).")] = "HEAD",
    as_json: JsonOpt = False,
) -> None:
    """Activate a reviewed Git revision: the one search must serve from now on."""
    from thoth.gitrepo import dirty_paths, resolve_revision
    from thoth.runtime import open_runtime

    with errors(as_json):
        ws = Workspace.open(root)
        dirty = dirty_paths(ws.root, "evidence", "thoth.toml")
        if revision == "HEAD" and dirty:
            raise PreconditionError(
                f"{ws.root}: uncommitted changes under evidence/ "
                f"({', '.join(dirty[:5])}) -> commit them: only committed "
                "revisions can be activated"
            )
        sha = resolve_revision(ws.root, revision)
        with open_runtime(Workspace.open(root)) as rt:
            previous = rt.state.active_revision(ws.settings.workspace)
            rt.state.activate_revision(ws.settings.workspace, sha, activated_by="tht")
    if as_json:
        emit_json({"ok": True, "revision": sha, "previous": previous})
        return
    out.print(
        f"Revision [bold]{sha[:12]}[/] activated (previous: "
        f"{previous[:12] if previous else 'none'}). Evidence search is unavailable until "
        "`tht workspace preprocess evidence` publishes a generation for it."
    )


def run_preprocess(rt: Runtime, show_progress: bool) -> PublishReport:
    from thoth.workflow.publish import Publisher
    from thoth.workflow.stores import MemoryStores

    # The memory index, so that an Evidence pipeline upgrade proves it came through unchanged.
    with phase_bars(show_progress, "evidence publish") as tick, MemoryStores.for_runtime(rt) as st:
        publisher = Publisher(
            rt.ws,
            rt.state,
            rt.backend,
            rt.embedder,
            retain=rt.ws.settings.index.retain,
            progress=tick,
            memory_index=st.index,
        )
        return publisher.preprocess()


def preprocess_evidence_cmd(root: WorkspaceArg, as_json: JsonOpt = False) -> None:
    """Build, evaluate and (if the gate passes) activate a new Evidence generation."""
    from thoth.runtime import open_runtime

    with errors(as_json), open_runtime(Workspace.open(root)) as rt:
        report = run_preprocess(rt, show_progress=not as_json)
    if as_json:
        emit_json({"ok": report.outcome == "activated", **report.as_dict()})
    else:
        render.render_publish(out, report)
    raise typer.Exit(exitcodes.OK if report.outcome == "activated" else exitcodes.FAILED)


def activate_generation_cmd(
    generation: Annotated[str, typer.Option("--generation", help="Generation id to activate.")],
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Activate an earlier generation (rollback): atomic, no rebuild. Only a generation that
    was active before (retired) qualifies: a candidate never passed its evaluation gate."""
    from thoth.runtime import open_runtime
    from thoth.workflow.publish import Publisher

    with errors(as_json), open_runtime(Workspace.open(workspace)) as rt:
        previous = Publisher(rt.ws, rt.state, rt.backend, rt.embedder).rollback(generation)
        gen = rt.state.get_generation(generation)
        revision = rt.state.active_revision(rt.ws.settings.workspace)
    warning = None
    if gen is not None and gen.revision != revision:
        warning = (
            f"generation {generation} was built from revision {gen.revision[:12]}, but "
            f"{(revision or 'none')[:12]} is activated: search stays unavailable until "
            f"you also run `tht workspace activate --revision {gen.revision[:12]}`"
        )
    if as_json:
        emit_json({"ok": True, "active": generation, "previous": previous, "warning": warning})
        return
    out.print(f"Generation [bold]{generation}[/] is active (previous: {previous}).")
    if warning:
        out.print(f"[yellow]{escape(warning)}[/]")


def search_cmd(
    question: Annotated[str, typer.Argument(help="The question, as the user asked it.")],
    purpose: Annotated[
        str, typer.Option(help="disambiguation | rewriting | schema_linking | sql_generation")
    ],
    table: Annotated[list[str] | None, typer.Option("--table", help="Context table.")] = None,
    column: Annotated[list[str] | None, typer.Option("--column", help="Context column.")] = None,
    concept: Annotated[list[str] | None, typer.Option("--concept", help="Context concept.")] = None,
    kind: Annotated[list[str] | None, typer.Option("--kind", help="Only these kinds.")] = None,
    binding: Annotated[
        bool,
        typer.Option(
            "--binding", help="Make --table/--column/--concept filters instead of query context."
        ),
    ] = False,
    limit: Annotated[int, typer.Option(help="Units to return.")] = 5,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Search published Evidence. Exit 0 available (even with no results), 1 unavailable."""
    from thoth.runtime import open_runtime
    from thoth.search.outcome import EvidenceSearchContext

    context = EvidenceSearchContext(
        concepts=tuple(concept or ()),
        tables=tuple(table or ()),
        columns=tuple(column or ()),
        kinds=tuple(kind or ()),
        limit=limit,
        binding=frozenset(_BINDABLE) if binding else frozenset(),
    )
    with errors(as_json), open_runtime(Workspace.open(workspace)) as rt:
        search = rt.search()
        try:
            outcome = search.search(question, purpose, context)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from exc
        finally:
            search.close()
    if as_json:
        emit_json(outcome.as_dict())
    else:
        render.render_outcome(out, outcome)
    raise typer.Exit(exitcodes.OK if outcome.available else exitcodes.FAILED)


def evaluate_cmd(
    generation: Annotated[
        str | None,
        typer.Option("--generation", help="Generation to evaluate (default: the active one)."),
    ] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Run evaluation.yaml against a generation. Never modifies the index."""
    from thoth.evaluation.evidence import evaluate, load_evaluation, save_first_baseline
    from thoth.evidence.corpus import load_corpus
    from thoth.evidence.publish import materialize
    from thoth.runtime import open_runtime, state_dir

    with errors(as_json), open_runtime(Workspace.open(workspace)) as rt:
        name = rt.ws.settings.workspace
        gen = (
            rt.state.get_generation(generation) if generation else rt.state.active_generation(name)
        )
        if gen is None or gen.workspace != name:
            raise PreconditionError(
                f"no generation {generation or '(active)'} in workspace "
                f"{name} -> see `tht evidence generations`"
            )
        with materialize(rt.ws.root, gen.revision) as tree:
            questions = load_evaluation(tree / "evidence" / "evaluation.yaml")
            files, _ = load_corpus(tree / "evidence")
        search = rt.search()
        try:
            report = evaluate(search, questions, gen, {f.unit.id: f.unit.kind for f in files})
        finally:
            search.close()
        baseline = save_first_baseline(report, state_dir(rt.ws))
    if as_json:
        emit_json({**report.as_dict(), "baseline_saved": str(baseline) if baseline else None})
    else:
        render.render_evaluation(out, report)
        if baseline:
            out.print(f"First baseline saved to {baseline}.")
    raise typer.Exit(exitcodes.OK if report.gate_passed else exitcodes.FAILED)


def generations_cmd(
    workspace: WsOpt = Path("."),
    cleanup: Annotated[
        bool,
        typer.Option(
            "--cleanup",
            help="First remove what killed builds left: unsealed data, and candidates never "
            "evaluated (marked 'abandoned'). Waits for no build: refused while one runs.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """List index generations and recent builds."""
    from thoth.index.shard import SHARD_FILES
    from thoth.runtime import open_runtime
    from thoth.workflow.publish import Publisher

    with errors(as_json), open_runtime(Workspace.open(workspace)) as rt:
        removed = Publisher(rt.ws, rt.state, rt.backend, rt.embedder).cleanup() if cleanup else None
        name = rt.ws.settings.workspace
        gens = rt.state.list_generations(name)
        builds = rt.state.list_builds(name)
        sealed = set(rt.backend.sealed())
        revision = rt.state.active_revision(name)
    if as_json:
        emit_json(
            {
                "active_revision": revision,
                "cleaned_up": removed,
                "generations": [
                    {
                        "id": g.id,
                        "status": g.status,
                        "revision": g.revision,
                        # the shard fingerprint is for readers, not for people
                        "counts": {k: v for k, v in g.counts.items() if k != SHARD_FILES},
                        "has_data": g.id in sealed,
                    }
                    for g in gens
                ],
                "builds": [
                    {
                        "id": b.id,
                        "generation": b.generation,
                        "revision": b.revision,
                        "outcome": b.outcome,
                        "duration_s": b.duration_s,
                        "message": b.message,
                    }
                    for b in builds
                ],
            }
        )
        return
    if removed is not None:
        out.print(f"Cleaned up: {', '.join(removed) or 'nothing to remove'}.")
    out.print(f"Active revision: {revision[:12] if revision else 'none'}")
    table = Table(title="generations")
    for col in ("id", "status", "revision", "units", "fragments", "data"):
        table.add_column(col)
    for g in gens:
        table.add_row(
            g.id,
            g.status,
            g.revision[:12],
            str(g.counts.get("units", "")),
            str(g.counts.get("fragments", "")),
            "yes" if g.id in sealed else "no",
        )
    out.print(table)
