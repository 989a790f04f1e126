"""What every command shares: consoles, common options, error rendering and exit codes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from thoth.cli import render
from thoth.errors import ProblemsError, ThothError

out = Console()
err = Console(stderr=True)

WorkspaceArg = Annotated[Path, typer.Argument(help="Workspace root (holds thoth.toml).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


@contextmanager
def errors(as_json: bool) -> Iterator[None]:
    """Turn Thoth errors into a readable message (or JSON) and a meaningful exit code."""
    try:
        yield
    except ProblemsError as exc:
        if as_json:
            emit_json(
                {"ok": False, "error": exc.summary, "problems": [p.as_dict() for p in exc.problems]}
            )
        else:
            render.problems(err, exc.summary, exc.problems)
        raise typer.Exit(exc.exit_code) from exc
    except ThothError as exc:
        if as_json:
            emit_json({"ok": False, "error": str(exc)})
        else:
            err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(exc.exit_code) from exc


@contextmanager
def progress_bar(
    console: Console, label: str, enabled: bool = True
) -> Iterator[Callable[[str, int, int], None]]:
    """A Rich bar fed with (description, done, total); silent when disabled."""
    if not enabled:
        yield lambda _desc, _done, _total: None
        return
    with Progress(
        TextColumn(f"[bold]{label}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("", total=None)

        def tick(desc: str, done: int, total: int) -> None:
            bar.update(task, description=desc, completed=done, total=total)

        yield tick
