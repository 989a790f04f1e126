"""`tht wiki questionnaire PAGE` and `tht wiki questionnaire apply FILE`: the domain expert's
questionnaire for a page published with its caveat (thoth.wiki.questionnaire).

Exit codes: 0 written or applied (a low or blank confidence included: the page stays as it is);
1 the questionnaire cannot be written or applied (its code says why: invalid, unknown
confidence, stale, not found); 4 the page has uncommitted changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from thoth.cli.common import JsonOpt, emit_json, errors, out
from thoth.workspace import Workspace

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]


class _WriteByDefault(TyperGroup):
    """`tht wiki questionnaire PAGE` writes; `tht wiki questionnaire apply FILE` applies: a
    first argument that is no subcommand is the page of `write`."""

    default_command = "write"

    # Typer vendors its own click: its Context and Command types, as TyperGroup declares them.
    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            return self.default_command, self.commands[self.default_command], args
        return super().resolve_command(ctx, args)


def register(app: typer.Typer) -> None:
    wiki_app = typer.Typer(no_args_is_help=True, help="The curated wiki.")
    app.add_typer(wiki_app, name="wiki")
    questionnaire = typer.Typer(
        cls=_WriteByDefault,
        no_args_is_help=True,
        help="A domain expert's questionnaire: `tht wiki questionnaire PAGE` writes it, "
        "`tht wiki questionnaire apply FILE` applies the answers.",
    )
    wiki_app.add_typer(questionnaire, name="questionnaire")
    questionnaire.command("write")(write_cmd)
    questionnaire.command("apply")(apply_cmd)


def write_cmd(
    page: Annotated[str, typer.Argument(help="The wiki page, relative to the workspace.")],
    caveat: Annotated[
        int | None, typer.Option("--caveat", min=1, help="Which caveat (a page with several).")
    ] = None,
    out_dir: Annotated[
        str, typer.Option("--out", help="Folder for the file, outside every indexed folder.")
    ] = "questionnaires",
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Write the questionnaire of one caveat of a page: the proposed wording, the caveat the
    page is published with, a confidence scale. The page keeps serving with its caveat."""
    from thoth.wiki.questionnaire import write_questionnaire

    with errors(as_json):
        ws = Workspace.open(workspace)
        written = write_questionnaire(ws.root, ws.settings, page, caveat=caveat, out_dir=out_dir)
    shown = _shown(ws.root, written.file)
    if as_json:
        emit_json({"ok": True, "file": shown, "page": written.page.rel, "caveat": written.caveat})
        return
    out.print(
        f"Wrote {escape(shown)} for the expert. The page {escape(written.page.rel)} stays "
        "published with its caveat; when the file comes back: "
        f"`tht wiki questionnaire apply {escape(shown)}`."
    )


def apply_cmd(
    file: Annotated[Path, typer.Argument(help="The questionnaire the expert returned.")],
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Apply the expert's answers: high removes the caveat, medium rewrites it as the expert
    did, low or blank leaves the page as it is. The change is left in the working tree for
    review (`git diff`); commit it, then `tht docs sync`."""
    from thoth.wiki.questionnaire import apply_questionnaire

    with errors(as_json):
        ws = Workspace.open(workspace)
        applied = apply_questionnaire(ws.root, ws.settings, file.resolve())
    page = _shown(ws.root, applied.page)
    result: dict[str, Any] = {
        "ok": True,
        "page": page,
        "confidence": applied.confidence,
        "outcome": applied.outcome,
        "wording_changed": applied.wording_changed,
        "caveat": applied.caveat,
        "new_caveat": applied.new_caveat,
    }
    if as_json:
        emit_json(result)
        return
    said = {
        "caveat_removed": "the caveat is removed",
        "caveat_rewritten": "the caveat is rewritten as the expert wrote it",
        "unchanged": "the page stays as it is",
    }[applied.outcome]
    wording = " and the wording corrected" if applied.wording_changed else ""
    out.print(f"Confidence {applied.confidence}: {said}{wording} ({escape(page)}).")
    if applied.outcome != "unchanged":
        out.print("Review it with `git diff`, commit it, then `tht docs sync`.")


def _shown(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
