"""`tht demo` / `make demo`: the embedded default end to end on the bundled clinical workspace:
copy it into a fresh Git repository, import legacy formulas, prepare, validate, and show the
review items and the diff a curator would review."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from rich.console import Console
from rich.panel import Panel

from thoth.cli import render
from thoth.cli.common import progress_bar
from thoth.errors import PreconditionError
from thoth.evidence.migrate import import_formulas
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.evidence.validate import validate_workspace
from thoth.gitrepo import diff_summary
from thoth.workspace import Workspace

DEMO_NAME = "clinical-dwh"


def demo_source() -> Path:
    """The bundled workspace: $THOTH_EXAMPLES, else examples/ of the source checkout."""
    base = Path(os.environ.get("THOTH_EXAMPLES", Path(__file__).resolve().parents[2] / "examples"))
    path = base / DEMO_NAME
    if not (path / "thoth.toml").is_file():
        raise PreconditionError(
            f"{path}: demo workspace not found -> run from a source checkout or set "
            "THOTH_EXAMPLES to the folder that holds clinical-dwh/"
        )
    return path


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "-c",
            "user.name=Thoth demo",
            "-c",
            "user.email=demo@thoth.invalid",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise PreconditionError(f"{root}: `git {' '.join(args)}` failed: {done.stderr.strip()}")
    return done.stdout


def run_demo(console: Console, keep: Path | None = None) -> Path:
    origin = demo_source()
    target = keep if keep is not None else Path(tempfile.mkdtemp(prefix="thoth-demo-")) / DEMO_NAME
    if target.exists() and any(target.iterdir()):
        raise PreconditionError(f"{target} exists and is not empty -> choose another --keep path")
    shutil.copytree(origin, target, dirs_exist_ok=True)
    git(target, "init", "-q", "-b", "main")
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "Demo workspace: sources only")
    console.print(
        Panel.fit(
            f"Demo workspace: [bold]{target}[/]\n"
            "An Italian clinical data warehouse: loose notes under "
            "evidence/source/, legacy formulas under formulas/.",
            title="Thoth demo",
        )
    )

    ws = Workspace.open(target)
    console.rule("1. import legacy formulas")
    imported = import_formulas(ws)
    console.print(
        f"{len(imported.copied)} legacy formulas copied to evidence/source/legacy-formulas/"
    )
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "Import legacy formulas as sources")

    console.rule("2. tht evidence prepare (rule-based restructurer, offline)")
    with progress_bar(console, "prepare") as tick:
        report = prepare(ws, RuleBasedRestructurer(), progress=tick)
    render.prepare_report(console, report)

    console.rule("3. what the curator reviews in Git")
    summary = diff_summary(target, "evidence")
    lines = summary.splitlines()
    by_kind: dict[str, int] = {}
    for line in lines:
        parts = line[3:].split("/")
        if len(parts) > 2 and parts[1] == "curated":
            by_kind[parts[2]] = by_kind.get(parts[2], 0) + 1
    console.print(
        f"{len(lines)} new or changed paths under evidence/: "
        + ", ".join(f"{k} {n}" for k, n in sorted(by_kind.items()))
    )
    sample = next((p for p in sorted(report.written) if p.startswith("curated/formula/")), None)
    if sample:
        console.print(Panel((ws.evidence / sample).read_text("utf-8"), title=sample, expand=False))

    console.rule("4. tht evidence validate")
    validation = validate_workspace(ws)
    render.validation_report(console, validation)
    console.print(
        f"\nNext steps for a curator: edit the units under {target}/evidence/curated/, "
        "resolve the review items, run `tht evidence validate`, commit."
    )
    return target
