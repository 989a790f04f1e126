"""What every command shares: consoles, common options, error rendering and exit codes."""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from thoth.cli import render
from thoth.errors import ThothError, file_access_error

out = Console()
err = Console(stderr=True)

WorkspaceArg = Annotated[Path, typer.Argument(help="Workspace root (holds thoth.toml).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def error_dict(exc: ThothError) -> dict[str, Any]:
    """The JSON body of a failed command: the message, the stable code and never-empty
    problems. Callers may add fields (a run id, what serves now)."""
    return {
        "ok": False,
        "error": exc.message_text(),
        "code": exc.code,
        "problems": [p.as_dict() for p in exc.problems],
    }


def report_error(
    exc: ThothError, as_json: bool, extra: dict[str, Any] | None = None, notes: Sequence[str] = ()
) -> int:
    """The one mapping of an error to output: JSON on stdout (with `extra` fields), or the
    message (the summary and every problem, when the error lists them) and `notes` on stderr.
    Returns the exit code of the error's class (cli/exitcodes.py, the README's table)."""
    if as_json:
        emit_json({**error_dict(exc), **(extra or {})})
    else:
        if exc.problems_given:
            render.problems(err, exc.message_text(), exc.problems)
        else:
            err.print(f"[bold red]error:[/] {escape(exc.problems[0].render())}", highlight=False)
        for note in notes:
            err.print(f"  {escape(note)}", highlight=False)
    return exc.exit_code


def as_thoth_error(exc: ThothError | OSError) -> ThothError:
    """An operating-system failure that no layer below turned into a ThothError (a permission
    denied, a file where a directory belongs) is reported like one: with its path and code
    `file_access`, never as a traceback."""
    return exc if isinstance(exc, ThothError) else file_access_error(exc)


@contextmanager
def errors(as_json: bool) -> Iterator[None]:
    """Turn any Thoth error, and any operating-system error naming a path, into a readable
    message (or JSON) and its exit code."""
    try:
        yield
    except (ThothError, OSError) as exc:
        raise typer.Exit(report_error(as_thoth_error(exc), as_json)) from exc


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


class PlainProgress:
    """Progress off a terminal (a log, CI, a pipe): one line on stderr per phase every
    `every` seconds at most, with done/total, the elapsed time and an estimate of what is
    left, the line of a phase's last step always; and the whole run's duration at the end."""

    def __init__(self, label: str, every: float = 5.0, clock: Callable[[], float] = time.monotonic):
        self.label = label
        self.every = every
        self.clock = clock
        self.started = clock()
        self._first: dict[str, float] = {}
        self._last: dict[str, float] = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        name, _, detail = phase.partition(" ")
        now = self.clock()
        first = self._first.setdefault(name, now)
        finished = total > 0 and done >= total
        if not finished and now - self._last.get(name, -math.inf) < self.every:
            return
        self._last[name] = now
        elapsed = now - first
        line = f"[{self.label}] {name} {done}/{total or '?'}"
        if total > 0:
            line += f" ({100 * done // total}%)"
        line += f", {_clock(elapsed)} elapsed"
        if 0 < done < total:
            line += f", about {_clock(elapsed / done * (total - done))} left"
        if detail:
            line += f" — {detail}"
        print(line, file=sys.stderr, flush=True)

    def close(self, failed: bool = False) -> None:
        said = "stopped after" if failed else "done in"
        print(
            f"[{self.label}] {said} {_clock(self.clock() - self.started)}",
            file=sys.stderr,
            flush=True,
        )


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


@contextmanager
def phase_bars(
    enabled: bool, label: str = "progress"
) -> Iterator[Callable[[str, int, int], None] | None]:
    """One bar per phase (prepare, extract, embed, index) on stderr, fed with (phase, done,
    total); None when disabled. A phase may name what it works on after a space ("extract
    manuali:docs/report.pdf"): the phase's one bar then shows it, so extracting many files
    does not stack a bar per file. Off a terminal, PlainProgress lines instead; either way
    the run's duration is said at the end."""
    if not enabled:
        yield None
        return
    if not err.is_terminal:
        plain = PlainProgress(label)
        try:
            yield plain
        except BaseException:
            plain.close(failed=True)  # never "done" for a run that failed
            raise
        plain.close()
        return
    started = time.monotonic()
    bar = Progress(
        TextColumn("[bold]{task.fields[phase]}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[detail]}"),
        console=err,
        transient=True,
    )
    tasks: dict[str, Any] = {}

    def tick(phase: str, done: int, total: int) -> None:
        name, _, detail = phase.partition(" ")
        if name not in tasks:
            tasks[name] = bar.add_task("", total=total, phase=name, detail=escape(detail))
        bar.update(tasks[name], completed=done, total=total, detail=escape(detail))

    with bar:
        yield tick
    err.print(f"[dim]{escape(label)}: done in {_clock(time.monotonic() - started)}[/]")
