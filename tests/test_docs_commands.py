"""Every `tht ...` command the README and docs/ show exists, with every flag they give it
(issue 25: nothing in the docs refers to a command or flag that does not exist). Commands are
read from code spans and code blocks; each is resolved in the CLI's own command tree, and its
`--help` runs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from thoth.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_SPAN = re.compile(r"`([^`\n]*\btht [^`\n]*)`")
_FENCE = re.compile(r"^```.*?$(.*?)^```", re.S | re.M)
# Where one command of a shell line ends: a pipe, a sequence, a substitution, a comment.
_END = re.compile(r"\s(?:\||&&|;|#|\))|\$\(|\)$")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])\b")


@dataclass(frozen=True)
class Mention:
    where: str  # file:line
    text: str  # the command as written, from `tht` to its end


def mentions() -> list[Mention]:
    found: list[Mention] = []
    for path in DOCS:
        text = path.read_text("utf-8")
        rel = path.relative_to(ROOT)
        fenced = [(m.start(1), m.group(1)) for m in _FENCE.finditer(text)]
        chunks = [(m.start(1), m.group(1)) for m in _SPAN.finditer(_blank(text, fenced))]
        for offset, chunk in fenced + chunks:
            for m in re.finditer(r"(?<![\w./-])tht (?=[a-z-])", chunk):
                rest = chunk[m.start() :].split("\n", 1)[0]
                end = _END.search(rest)
                line = text.count("\n", 0, offset + m.start()) + 1
                found.append(Mention(f"{rel}:{line}", rest[: end.start()] if end else rest))
    return found


def _blank(text: str, fenced: list[tuple[int, str]]) -> str:
    """`text` with its code blocks blanked out (same length), so spans are not read twice."""
    chars = list(text)
    for start, body in fenced:
        chars[start : start + len(body)] = re.sub(r"[^\n]", " ", body)
    return "".join(chars)


@cache
def _tree() -> Any:
    return typer.main.get_command(app)


def resolve(words: list[str]) -> tuple[list[str], Any]:
    """The longest command path of `words` in the CLI tree, and its command (Typer's groups
    are Click-like, not Click subclasses: a group is what has `commands`)."""
    command: Any = _tree()
    path: list[str] = []
    for word in words:
        if word not in getattr(command, "commands", {}):
            # a group whose first argument may be its default command's (`tht wiki
            # questionnaire PAGE` is `... questionnaire write PAGE`)
            default = getattr(command, "default_command", None)
            if default is not None and not word.startswith("-"):
                command = command.commands[default]
            break
        command = command.commands[word]
        path.append(word)
    return path, command


def flags_of(command: Any) -> set[str]:
    return {
        opt for p in command.params for opt in (*p.opts, *p.secondary_opts) if opt.startswith("-")
    } | {"--help"}


MENTIONS = mentions()


def test_the_docs_show_many_commands() -> None:
    assert len(MENTIONS) > 150  # the reader below reads what the docs hold


def commands_in(mention: Mention) -> list[tuple[list[str], Any, list[str]]]:
    """(path, command, words after the path) of each command a mention writes: the README's
    tables write siblings as alternatives, `tht session new "<q>" \\| consult ID ...`."""
    first, *alternatives = mention.text.split("\\|")
    words = [w.rstrip(":,.") for w in first.split()[1:]]
    path, command = resolve(words)
    found = [(path, command, words[len(path) :])]
    for alternative in alternatives:
        more = alternative.split()
        sibling_path, sibling = resolve([*path[:-1], *more])
        if sibling_path[: len(path) - 1] == path[:-1] and len(sibling_path) >= len(path):
            found.append((sibling_path, sibling, more[len(sibling_path) - len(path) + 1 :]))
    return found


@pytest.mark.parametrize("mention", MENTIONS, ids=[m.where for m in MENTIONS])
def test_every_command_and_flag_the_docs_give_exists(mention: Mention) -> None:
    if mention.text.split()[1] in ("--version", "--help"):
        return  # the program's own options
    for path, command, rest in commands_in(mention):
        assert path, f"{mention.where}: `{mention.text}` names no command of tht"
        nxt = rest[0] if rest else None
        if hasattr(command, "commands"):
            # a group named alone (`tht agent`) is fine; a word after it must be a subcommand
            assert nxt is None or not re.fullmatch(r"[a-z][a-z-]*", nxt), (
                f"{mention.where}: `{mention.text}`: tht {' '.join(path)} has no command "
                f"{nxt!r} (it has {', '.join(sorted(command.commands))})"
            )
        unknown = sorted(set(_FLAG.findall(" ".join(rest))) - flags_of(command))
        assert not unknown, (
            f"{mention.where}: `{mention.text}`: tht {' '.join(path)} has no option "
            f"{', '.join(unknown)}"
        )


def test_each_documented_command_s_help_runs() -> None:
    paths = {tuple(path) for m in MENTIONS for path, _, _ in commands_in(m)}
    runner = CliRunner()
    for path in sorted(p for p in paths if p):
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
