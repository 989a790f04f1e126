"""`tht <area> <verb>`: command names follow the design documents."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from thoth.cli import agent as agent_cli
from thoth.cli import analytics as analytics_cli
from thoth.cli import ask, exitcodes, memory, privacy, publish, render, session
from thoth.cli import channels as channels_cli
from thoth.cli import docs as docs_cli
from thoth.cli import evaluate as evaluate_cli
from thoth.cli import index as index_cli
from thoth.cli import mcp as mcp_cli
from thoth.cli import schedule as schedule_cli
from thoth.cli import schema as schema_cli
from thoth.cli import service as service_cli
from thoth.cli import state as state_cli
from thoth.cli import wiki as wiki_cli
from thoth.cli.common import JsonOpt, WorkspaceArg, emit_json, err, errors, out, progress_bar
from thoth.errors import Problem
from thoth.workspace import Workspace

# Markdown, not Rich markup: help texts name settings as `[privacy]` or `[llm]`, which Rich
# markup would take for style tags and drop; Markdown also reflows a docstring's paragraphs.
app = typer.Typer(
    no_args_is_help=True, add_completion=False, help=__doc__, rich_markup_mode="markdown"
)


def _version(shown: bool) -> None:
    if shown:
        from importlib.metadata import version

        typer.echo(f"tht (thoth) {version('thoth')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        help="Print the installed version and exit.",
    ),
) -> None:
    """Thoth's commands (`tht <area> <verb>`)."""


evidence_app = typer.Typer(no_args_is_help=True, help="Author and check Evidence Units.")
app.add_typer(evidence_app, name="evidence")
publish.register(app, evidence_app)
session.register(app, evidence_app)
memory.register(app)
ask.register(app)
channels_cli.register(app)
docs_cli.register(app)
evaluate_cli.register(app)
index_cli.register(app)
schema_cli.register(app)
analytics_cli.register(app)
privacy.register(app)
service_cli.register(app)
agent_cli.register(app)
mcp_cli.register(app)
state_cli.register(app)
schedule_cli.register(app)
wiki_cli.register(app)


@app.command("init")
def init_cmd(
    root: Annotated[Path, typer.Argument(help="Directory to create the workspace in.")],
    name: Annotated[str | None, typer.Option(help="Workspace name.")] = None,
    language: Annotated[
        str | None,
        typer.Option(
            help="Language of the workspace: answer wording and BM25 stemming (it, en, ...). "
            "Default: your locale's (LC_ALL, LC_MESSAGES, LANG), else it; said either way."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a workspace: thoth.toml and the evidence/ layout, in the language given or your
    locale's; then say the next step for what the folder holds."""
    import os

    from thoth.evidence.layout import init_workspace
    from thoth.gitrepo import init_repository

    chosen, why = _init_language(language, os.environ)
    with errors(as_json):
        created = init_workspace(root, name, chosen)
    repo = init_repository(root)
    steps = _next_steps(root)
    if as_json:
        emit_json(
            {
                "ok": True,
                "created": [str(p) for p in created],
                "language": chosen,
                "language_from": why,
                "git": repo.as_dict(),
                "next": steps,
            }
        )
        return
    said = {
        "option": "",
        "default": " (the default: your locale names none; pass --language en or another "
        "to choose)",
    }.get(why, f" (from your {why}; pass --language to choose another)")
    out.print(
        f"Created workspace in [bold]{root}[/] ({len(created)} files), language {chosen}{said}.",
        highlight=False,
    )
    if repo.state == "created":
        under_git = (
            f"Ran `git init` there: review and commit the workspace in Git ({repo.repository}); "
            "nothing is committed for you."
        )
    elif repo.state == "existing":
        under_git = (
            f"Inside the Git repository {repo.repository}: review and commit the workspace "
            "there; nothing is committed for you."
        )
    else:
        under_git = (
            f"The workspace is not under Git ({repo.reason}) -> {repo.hint}; Thoth relies on "
            "Git to review the Evidence Units, glossary and catalog."
        )
    out.print(under_git, markup=False, highlight=False)
    for step in steps:
        out.print(f"  - {step}", markup=False, highlight=False)


# The workspace languages with their own answer wording; another locale is said, not taken.
_WORDED = ("it", "en")


def _init_language(given: str | None, environ: Mapping[str, str]) -> tuple[str, str]:
    """The language and where it came from: the option, the locale (as POSIX reads it:
    LC_ALL, then LC_MESSAGES, then LANG), else the default, Italian."""
    if given:
        return given, "option"
    for key in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(key, "")
        code = value.split(".")[0].split("_")[0].lower()
        if code in _WORDED:
            return code, f"locale {key}={value}"
        if value and code not in ("c", "posix"):
            break  # a locale in another language: not taken, the default is said
    return "it", "default"


def _next_steps(root: Path) -> list[str]:
    """What to do next, for what the folder already holds: documents, a database, or
    nothing yet."""
    from thoth.documents.extract import SUPPORTED_SUFFIXES

    files = [p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]
    files = [p for p in files if ".thoth" not in p.parts and "evidence" not in p.parts]
    databases = [p for p in files if p.suffix.lower() in (".sqlite", ".sqlite3", ".db")]
    documents = [p for p in files if p.suffix.lower() in SUPPORTED_SUFFIXES]
    documents = [p for p in documents if p.name not in ("thoth.toml", "README.md")]
    documents = [p for p in documents if "answers" not in p.relative_to(root).parts]
    steps: list[str] = []
    if documents:
        n = len(documents)
        steps.append(
            f"{n} document{'s' if n != 1 else ''} found here: declare them as a source in "
            "thoth.toml (a [[channels]] and a [[sources]] entry, see README 'From documents "
            "to a grounded answer'), commit, then `tht docs sync` and `tht ask`"
        )
    if databases:
        steps.append(
            f"a database found here ({databases[0].name}): declare it under [database] in "
            "thoth.toml (docs/database.md), then `tht schema sync`"
        )
    if not steps:
        steps.append(
            "documents to ask about: put them in a folder, declare it as a [[sources]] entry, "
            "commit, then `tht docs sync` and `tht ask` (README 'From documents to a grounded "
            "answer')"
        )
        steps.append(
            f"notes to curate into Evidence Units: put them in {root}/evidence/source/, "
            f"commit, then `tht evidence prepare {root}`"
        )
    return steps


@evidence_app.command("prepare")
def prepare_cmd(
    root: WorkspaceArg,
    upgrade: Annotated[
        bool,
        typer.Option(
            help="Reprocess every source after a pipeline upgrade (clean repository only)."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Turn changed sources into curated units and update the manifest, all or nothing."""
    from thoth.evidence.prepare import prepare
    from thoth.evidence.restructure import make_restructurer
    from thoth.runtime import open_pseudonymizer

    with errors(as_json):
        ws = Workspace.open(root)
        restructurer = make_restructurer(ws.settings, open_pseudonymizer(ws))
        with progress_bar(err, "prepare", not as_json and err.is_terminal) as tick:
            report = prepare(ws, restructurer, upgrade=upgrade, progress=tick)
    if as_json:
        emit_json({"ok": True, **report.as_dict()})
    else:
        render.prepare_report(out, report)


@evidence_app.command("validate")
def schema_problems(ws: Workspace) -> list[Problem]:
    """The units' table and column names the schema index lacks (SchemaUnreadable, with the
    reader's code, when there is no schema index to check against)."""
    from thoth.evidence.corpus import load_corpus
    from thoth.runtime import open_runtime
    from thoth.schema.catalog import unit_problems
    from thoth.workflow.sql import read_catalog

    files, _ = load_corpus(ws.evidence)  # structural problems are validate's own
    with open_runtime(ws) as rt:
        catalog = read_catalog(rt, "tht evidence validate --schema")
    return unit_problems(catalog, files)


@evidence_app.command("validate")
def validate_cmd(
    root: WorkspaceArg,
    schema: Annotated[
        bool,
        typer.Option(
            "--schema",
            help="Also check every table and column the units name against the schema index "
            "(`tht schema sync` first).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check the whole corpus. Exit 0 publishable, 3 valid with doubts, 1 invalid."""
    from thoth.evidence.validate import validate_workspace

    with errors(as_json):
        ws = Workspace.open(root)
        report = validate_workspace(ws)
        if schema:
            report.problems += schema_problems(ws)
    if as_json:
        emit_json(report.as_dict())
    else:
        render.validation_report(out, report)
    code = {
        "valid": exitcodes.OK,
        "valid_with_doubts": exitcodes.NOT_PUBLISHABLE,
        "invalid": exitcodes.FAILED,
    }[report.outcome]
    raise typer.Exit(code)


@evidence_app.command("resolve")
def resolve_cmd(
    unit_id: Annotated[str, typer.Argument(help="The unit, e.g. evidence:fascia-pediatrica.")],
    retire: Annotated[
        bool, typer.Option("--retire", help="Remove the unit from the corpus.")
    ] = False,
    source: Annotated[
        str | None,
        typer.Option("--source", help="Relink the unit to this source (path under evidence/)."),
    ] = None,
    workspace: Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")] = Path(
        "."
    ),
    as_json: JsonOpt = False,
) -> None:
    """Settle an orphan or a retirement candidate (--retire or --source, not both)."""
    from thoth.evidence.resolve import resolve

    with errors(as_json):
        result = resolve(Workspace.open(workspace), unit_id, retire=retire, source=source)
    if as_json:
        emit_json(
            {
                "ok": True,
                "id": result.unit_id,
                "action": result.action,
                "written": result.written,
                "deleted": result.deleted,
            }
        )
    else:
        out.print(
            f"{result.unit_id}: {result.action}. Review the change with `git diff`, then commit it."
        )


@evidence_app.command("import-formulas")
def import_formulas_cmd(
    root: WorkspaceArg,
    folder: Annotated[
        Path | None, typer.Option("--from", help="Legacy folder (default: <workspace>/formulas).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy legacy formulas/*.sql.md into evidence/source/ for the next prepare."""
    from thoth.evidence.migrate import import_formulas

    with errors(as_json):
        result = import_formulas(Workspace.open(root), folder)
    if as_json:
        emit_json({"ok": True, "copied": result.copied, "unchanged": result.unchanged})
    else:
        out.print(
            f"Copied {len(result.copied)} legacy formulas ({len(result.unchanged)} "
            "already there). Commit them, then run `tht evidence prepare`."
        )


@app.command("demo")
def demo_cmd(
    keep: Annotated[
        Path | None,
        typer.Option(help="Build the demo workspace here instead of a temporary directory."),
    ] = None,
) -> None:
    """Run the embedded demo end to end on the bundled clinical workspace."""
    from thoth.cli.demo import run_demo

    with errors(False):
        run_demo(out, keep)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
