"""`tht memory promote|save-one|decline|search|choose|summary|reconcile|migrate`, and the
curator's `list|retire|merge|verify|import`: the memory commands (seed 2), each with `--json`
for agents.

The memory index lives on the configured `[index]` backend (thoth.workflow.stores opens it);
`migrate` copies a local Qdrant Edge shard of an earlier release into the server collection.

Exit codes: 0 done (a search with no proposal included); 1 refused, incomplete (save-one that
needs `tht memory reconcile`), index or embedder unavailable, or reconcile left problems; 2
wrong arguments; 4 nothing to migrate (not the server backend, or no local shard).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from thoth.cli import exitcodes
from thoth.cli.common import JsonOpt, emit_json, errors, out
from thoth.errors import PreconditionError
from thoth.workspace import Workspace

if TYPE_CHECKING:
    from thoth.workflow.stores import MemoryStores

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]
SessionOpt = Annotated[str, typer.Option("--session", help="Session id (s-YYYYMMDD-HHMMSS-…).")]
SeqOpt = Annotated[int, typer.Option("--seq", help="Seq of the concept_clarified decision.")]
RationaleOpt = Annotated[str, typer.Option("--rationale", help="Why, for the ledger (optional).")]


def register(app: typer.Typer) -> None:
    memory_app = typer.Typer(
        no_args_is_help=True, help="Promote, search and reconcile reviewed memories."
    )
    app.add_typer(memory_app, name="memory")
    memory_app.command("promote")(promote_cmd)
    memory_app.command("save-one")(save_one_cmd)
    memory_app.command("decline")(decline_cmd)
    memory_app.command("search")(search_cmd)
    memory_app.command("choose")(choose_cmd)
    memory_app.command("summary")(summary_cmd)
    memory_app.command("reconcile")(reconcile_cmd)
    memory_app.command("migrate")(migrate_cmd)
    memory_app.command("list")(list_cmd)
    memory_app.command("retire")(retire_cmd)
    memory_app.command("merge")(merge_cmd)
    memory_app.command("verify")(verify_cmd)
    memory_app.command("import")(import_cmd)


@contextmanager
def _stores(root: Path) -> Iterator[MemoryStores]:
    """The workspace's memory stores; the embedder is loaded only by commands that embed."""
    from thoth.workflow.stores import MemoryStores

    with MemoryStores(Workspace.open(root)) as stores:
        yield stores


def promote_cmd(
    session_arg: Annotated[
        str | None, typer.Argument(metavar="SESSION", help="Session id.")
    ] = None,
    session_opt: Annotated[
        str | None, typer.Option("--session", help="Session id (same as SESSION).")
    ] = None,
    show_preview: Annotated[
        bool, typer.Option("--preview", help="Only list the candidates; change nothing.")
    ] = False,
    deselect: Annotated[
        list[int] | None,
        typer.Option("--deselect", help="Seq of a candidate to decline instead (repeatable)."),
    ] = None,
    edit: Annotated[
        list[str] | None,
        typer.Option("--edit", help="SEQ=WORDING: promote a candidate with new wording."),
    ] = None,
    near_duplicates: Annotated[
        bool,
        typer.Option(
            "--near-duplicates/--no-near-duplicates",
            help="Look up similar memories of other sessions (needs the index and embedder).",
        ),
    ] = True,
    limit: Annotated[int, typer.Option(help="Candidates to show with --preview, at most 5.")] = 5,
    rationale: RationaleOpt = "",
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """F8 as one checklist: the candidates, all preselected, confirmed in one command
    (`--deselect SEQ` declines one, `--edit SEQ=WORDING` rewords one). `--preview` only lists."""
    from thoth.memory.checklist import ChecklistRequest, confirm
    from thoth.memory.promotion import preview

    session = session_arg or session_opt
    if session is None or (session_arg and session_opt and session_arg != session_opt):
        raise typer.BadParameter(
            "name the session once: SESSION or --session", param_hint="SESSION"
        )
    edits = _edits(edit or [])
    with errors(as_json), _stores(workspace) as st:
        if not show_preview:
            result = confirm(
                st.session(session),
                ChecklistRequest(deselect=tuple(deselect or ()), edits=edits, rationale=rationale),
                registry=st.registry,
                index=st.index,
                embedder=st.embedder,
            )
        else:
            shown = preview(
                st.session(session),
                st.registry,
                limit,
                index=st.index if near_duplicates else None,
                embedder=st.embedder if near_duplicates else None,
            )
    if not show_preview:
        if as_json:
            emit_json(result.model_dump())
            return
        if not result.outcomes:
            out.print("No concept left to promote or decline.")
        for o in result.outcomes:
            if o.action == "declined":
                out.print(f"[x] seq {o.seq}: declined{'' if o.created else ' (already)'}")
            else:
                edited = f" (edited as seq {o.promoted_seq})" if o.promoted_seq else ""
                again = "" if o.created else " (already)"
                out.print(f"[✓] seq {o.seq}: promoted as [bold]{o.memory_id}[/]{edited}{again}")
        if result.remaining:
            out.print(f"{result.remaining} more candidate(s): run the command again.")
        state = "ready to finalize" if result.finalize_ready else "not ready to finalize"
        out.print(f"Session {session} is {state}.")
        return
    if as_json:
        emit_json(shown.as_dict())
        return
    if shown.candidates:
        table = Table(title=f"memory candidates of {session} (all selected)")
        for col in ("seq", "subject", "detail", "near duplicates"):
            table.add_column(col)
        for c in shown.candidates:
            near = ", ".join(f"{n.memory_id} ({n.similarity:.2f})" for n in c.near_duplicates)
            table.add_row(str(c.seq), escape(c.subject), escape(c.detail), near)
        out.print(table)
        out.print(
            f"Confirm with `tht memory promote {session}` (--deselect SEQ, --edit SEQ=WORDING)."
        )
    else:
        out.print("No concept left to promote or decline.")
    if shown.remaining:
        out.print(f"{shown.remaining} more candidate(s) after these: decide these, then preview.")
    state = "ready to finalize" if shown.finalize_ready else "not ready to finalize"
    out.print(f"Session {session} is {state}.")


def _edits(values: list[str]) -> dict[int, str]:
    edits: dict[int, str] = {}
    for value in values:
        seq, sep, wording = value.partition("=")
        if not sep or not seq.strip().isdigit():
            raise typer.BadParameter(f"{value!r} is not SEQ=WORDING", param_hint="--edit")
        edits[int(seq)] = wording
    return edits


def save_one_cmd(
    session: SessionOpt,
    seq: SeqOpt,
    rationale: RationaleOpt = "",
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """F8: promote one clarified concept (registry, index, then the ledger marker)."""
    from thoth.memory.promotion import save_one

    with errors(as_json), _stores(workspace) as st:
        result = save_one(
            st.session(session),
            seq,
            registry=st.registry,
            index=st.index,
            embedder=st.embedder,
            rationale=rationale,
        )
    if as_json:
        emit_json(result.as_dict())
        return
    verb = "saved as" if result.created else "already saved as"
    out.print(f"Session {session} seq {seq}: {verb} [bold]{result.record.id}[/].")


def decline_cmd(
    session: SessionOpt,
    seq: SeqOpt,
    rationale: RationaleOpt = "",
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """F8: the reviewer does not want this concept as a memory."""
    from thoth.memory.promotion import decline

    with errors(as_json), _stores(workspace) as st:
        result = decline(st.session(session), seq, registry=st.registry, rationale=rationale)
    if as_json:
        emit_json(result.as_dict())
        return
    verb = "declined" if result.created else "was already declined"
    out.print(f"Session {session} seq {seq}: {verb} (marker seq {result.marker.seq}).")


def search_cmd(
    question: Annotated[str, typer.Argument(help="The question of the session.")],
    session: SessionOpt,
    limit: Annotated[int, typer.Option(help="Memories to propose.")] = 5,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """F2: memories of other sessions to propose to the reviewer (nothing is applied)."""
    from thoth.memory.recall import search_memories

    with errors(as_json), _stores(workspace) as st:
        result = search_memories(
            question,
            st.session(session),
            registry=st.registry,
            index=st.index,
            embedder=st.embedder,
            limit=limit,
        )
    if as_json:
        emit_json(result.as_dict())
        return
    if not result.proposals:
        out.print("No memory to propose.")
    for p in result.proposals:
        out.print(
            f"[bold]{p.memory_id}[/] {escape(p.subject)}: {escape(p.detail)} "
            f"(from {p.session_id} seq {p.decision_seq}; score {p.score:.4f})"
        )
    if result.dropped:
        out.print(
            f"[yellow]{len(result.dropped)} index hit(s) not in the registry or not concepts: "
            "run `tht memory reconcile`.[/]"
        )


def choose_cmd(
    session: SessionOpt,
    memory_id: Annotated[str, typer.Option("--memory", help="The memory, e.g. mem-0001.")],
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """F2: apply a proposed memory to the session (a new concept_clarified citing it)."""
    from thoth.memory.recall import choose

    with errors(as_json), _stores(workspace) as st:
        result = choose(st.session(session), memory_id, registry=st.registry)
    if as_json:
        emit_json(result.as_dict())
        return
    verb = "applied as" if result.created else "already applied as"
    out.print(f"{memory_id}: {verb} seq {result.entry.seq} of session {session}.")


def summary_cmd(
    session: SessionOpt,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """The session's memories: approved first, then declined (Markdown, or JSON)."""
    from thoth.memory.projection import summarize

    with errors(as_json), _stores(workspace) as st:
        result = summarize(st.session(session), st.registry)
    if as_json:
        emit_json(result.as_dict())
    else:
        # Raw Markdown, not rendered: it is meant to be pasted or piped as it is.
        sys.stdout.write(result.markdown())


def reconcile_cmd(
    rebuild: Annotated[
        bool,
        typer.Option("--rebuild", help="Delete the memory index and rebuild it from the registry."),
    ] = False,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Repair drift between the registry, the memory index and the ledger markers."""
    from thoth.memory.reconcile import reconcile

    with errors(as_json), _stores(workspace) as st:
        report = reconcile(
            sessions=st.sessions,
            registry=st.registry,
            index=st.index,
            embedder=st.embedder,
            rebuild=rebuild,
        )
    if as_json:
        emit_json(report.as_dict())
    else:
        if not report.repairs and not report.problems:
            out.print("Registry, index and markers agree: nothing to repair.")
        for r in report.repairs:
            where = f" (session {r.session_id} seq {r.seq})" if r.session_id else ""
            out.print(f"{r.action}: {r.memory_id}{where} {escape(r.detail)}")
        for p in report.problems:
            out.print(f"[bold red]problem:[/] {escape(p.render())}")
    raise typer.Exit(exitcodes.OK if report.ok else exitcodes.FAILED)


def migrate_cmd(
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Copy the local memory shard into the shared memory index (`[index] backend = "server"`
    or "postgres"); the local shard is left in place."""
    from thoth.memory.migrate import migrate

    with errors(as_json), _stores(workspace) as st:
        if st.ws.settings.index.backend == "edge":
            raise PreconditionError(
                f'[index] backend is "{st.ws.settings.index.backend}": the memory index is '
                f"already the local shard {st.local_shard().where}; nothing to migrate -> set "
                '[index] backend = "server" (with url or path) or "postgres" (with url) in '
                "thoth.toml first"
            )
        report = migrate(
            registry=st.registry, source=st.local_shard(), target=st.index, embedder=st.embedder
        )
    if as_json:
        emit_json(report.as_dict())
        return
    out.print(
        f"Copied {report.copied} of {report.in_source} memory point(s) from {report.source} "
        f"to {report.target} (vectors kept, nothing re-embedded)."
    )
    if report.skipped:
        out.print(
            f"Not copied (not in the registry, or with other content): {', '.join(report.skipped)}"
        )
    for r in report.repairs:
        out.print(f"{r.action}: {r.memory_id} {escape(r.detail)}")
    out.print(
        f"{report.target} now holds {report.in_target} memory point(s); the registry has "
        f"{report.registry}."
    )
    out.print(f"The local shard {report.source} was left in place: remove it when you wish.")


ByOpt = Annotated[
    str | None, typer.Option("--by", help="Who decides (default: the operating-system user).")
]
WhyOpt = Annotated[str, typer.Option("--why", help="Why, recorded with the decision.")]


def _by(by: str | None) -> str:
    import getpass

    return by or getpass.getuser()


def retire_cmd(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The memory, e.g. mem-0001.")],
    why: WhyOpt,
    by: ByOpt = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Retire a memory: never proposed again; sessions that used it say so."""
    from thoth.memory.curation import RetireRequest, retire

    with errors(as_json), _stores(workspace) as st:
        result = retire(
            RetireRequest(memory_id=memory_id, why=why, by=_by(by)),
            registry=st.registry,
            index=st.index,
        )
    if as_json:
        emit_json(result.model_dump())
        return
    out.print(f"{memory_id} retired by {escape(result.by)}: {escape(result.why)}")


def merge_cmd(
    keep: Annotated[str, typer.Argument(metavar="KEEP", help="The memory to keep.")],
    drop: Annotated[list[str], typer.Argument(metavar="DROP...", help="Memories merged into it.")],
    why: WhyOpt,
    by: ByOpt = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Merge memories that say the same thing into KEEP (which keeps all their provenance)."""
    from thoth.memory.curation import MergeRequest, merge

    with errors(as_json), _stores(workspace) as st:
        result = merge(
            MergeRequest(keep=keep, drop=tuple(drop), why=why, by=_by(by)),
            registry=st.registry,
            index=st.index,
        )
    if as_json:
        emit_json(result.model_dump())
        return
    out.print(f"{', '.join(result.dropped)} merged into {keep} by {escape(result.by)}.")


def list_cmd(
    near_duplicates: Annotated[
        bool,
        typer.Option(
            "--near-duplicates/--no-near-duplicates",
            help="Offer near-duplicate pairs for merging (needs the index and embedder).",
        ),
    ] = True,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Every memory: state, history, provenance, the sessions that used it, and
    near-duplicates to merge."""
    from thoth.memory.curation import listing
    from thoth.memory.promotion import NEAR_DUPLICATE_MIN_COSINE

    with errors(as_json), _stores(workspace) as st:
        result = listing(
            registry=st.registry,
            sessions=st.sessions,
            index=st.index,
            embedder=st.embedder if near_duplicates else None,
            threshold=NEAR_DUPLICATE_MIN_COSINE,
        )
    if as_json:
        emit_json(result.model_dump())
        return
    table = Table(title="memories")
    for col in ("id", "state", "subject", "sources", "used in", "history"):
        table.add_column(col)
    for m in result.memories:
        state = f"merged into {m.merged_into}" if m.merged_into else m.state
        sources = ", ".join(f"{s.session_id}#{s.decision_seq}" for s in m.sources)
        used = ", ".join(f"{u.session_id}#{u.seq}" for u in m.used_in)
        history = "; ".join(f"{h.action} {h.at} by {h.by}: {h.why}" for h in m.history)
        table.add_row(m.memory_id, state, escape(m.subject), sources, used, escape(history))
    out.print(table)
    for s in result.merge_suggestions:
        out.print(
            f"near-duplicates ({s.similarity:.2f}): `tht memory merge {s.keep} {s.drop} --why ...`"
        )
    for session in result.unreadable_sessions:
        out.print(f"[yellow]session {session} could not be read: its uses are not listed.[/]")


def verify_cmd(
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Read the whole registry and the memory index: memories by state, and the registry lines
    and index points of older record types they skip (named by type, line and id)."""
    from thoth.memory.legacy import verify_registry

    with errors(as_json), _stores(workspace) as st:
        report = verify_registry(st.registry, st.index)
    if as_json:
        emit_json(report.model_dump())
        return
    out.print(
        f"{report.registry}: {report.memories} memories ({report.active} active, "
        f"{report.retired} retired, {report.merged} merged), {report.curation_lines} "
        "curation line(s)."
    )
    for t in report.skipped:
        lines = ", ".join(str(n) for n in t.lines)
        out.print(f"skipped by type: {t.count} {t.type} line(s) (lines {lines})")
    out.print(f"memory index: {report.index_points} point(s).")
    for i in report.index_skipped:
        ids = ", ".join(i.memory_ids)
        out.print(f"skipped by type in the index: {i.count} {i.type} point(s) ({ids})")


def import_cmd(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A registry.jsonl to bring in.")],
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Bring in a registry of the earlier system: its reusable memories get new ids, are
    indexed and marked in their sessions; the report says what was skipped and why."""
    from thoth.memory.legacy import import_registry
    from thoth.memory.reconcile import reconcile

    with errors(as_json), _stores(workspace) as st:
        report = import_registry(file, registry=st.registry, sessions=st.sessions)
        repaired = reconcile(
            sessions=st.sessions, registry=st.registry, index=st.index, embedder=st.embedder
        )
    if as_json:
        emit_json({**report.model_dump(), "reconcile": repaired.as_dict(), "ok": repaired.ok})
    else:
        for m in report.imported:
            out.print(f"imported line {m.line} {m.old_id} as [bold]{m.memory_id}[/]")
        for s in report.skipped:
            out.print(f"skipped line {s.line} {s.id or ''}: {escape(s.reason)}")
        for p in repaired.problems:
            out.print(f"[bold red]problem:[/] {escape(p.render())}")
    raise typer.Exit(exitcodes.OK if repaired.ok else exitcodes.FAILED)
