"""`tht privacy names`: measure where `[privacy] min_name_length` belongs.

It reads the registry `[privacy]` names (file and/or query, whether or not `pseudonymise` is
on) and counts, name length by name length, how often the names occur in sample text files:
short names that match a lot in text that mentions no entity are noise, and the threshold goes
above them. It never rewrites thoth.toml.

Exit codes: 0 done; 1 a sample that cannot be read, or no registry; 4 no or bad workspace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from thoth.cli.common import JsonOpt, emit_json, errors, out
from thoth.errors import ConfigError, ThothError
from thoth.workspace import Workspace

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]


def register(app: typer.Typer) -> None:
    privacy_app = typer.Typer(no_args_is_help=True, help="Pseudonymisation ([privacy]).")
    app.add_typer(privacy_app, name="privacy")
    privacy_app.command("names")(names_cmd)


def names_cmd(
    sample: Annotated[
        list[Path],
        typer.Option(
            "--sample",
            help="A UTF-8 text file of the kind sent to models (repeat the option).",
        ),
    ],
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Count the registry's names in sample text, by name length, to choose min_name_length."""
    from thoth.privacy.names import length_profile
    from thoth.runtime import open_registry

    with errors(as_json):
        ws = Workspace.open(workspace)
        registry = open_registry(ws)
        if not len(registry):
            raise ConfigError(
                "[privacy]: no registry names (set registry or registry_sql) -> there is "
                "nothing to measure"
            )
        texts = []
        for path in sample:
            try:
                texts.append(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise ThothError(f"{path}: cannot read the sample ({exc})") from exc
        rows = length_profile(registry, texts)
    configured = ws.settings.privacy.min_name_length
    if as_json:
        emit_json(
            {
                "ok": True,
                "names": len(registry),
                "samples": [str(p) for p in sample],
                "configured_min_name_length": configured,
                "lengths": [r.as_dict() for r in rows],
            }
        )
        return
    table = Table("length", "names", "matched", "matches", "most matched")
    for r in rows:
        mark = " (not searched)" if r.length < configured else ""
        table.add_row(
            f"{r.length}{mark}",
            str(r.names),
            str(r.matched),
            str(r.matches),
            escape(", ".join(f"{n} ×{c}" for n, c in r.examples)),
        )
    out.print(table)
    out.print(
        escape(
            f"Configured min_name_length: {configured}. Set it above the lengths whose "
            "matches are not mentions of the entity (list markers, acronyms, common words)."
        ),
        highlight=False,
    )
