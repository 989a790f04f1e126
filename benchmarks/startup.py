"""Start-up time of `tht`: `tht --help`, `tht verify` and `tht ask` against a bare `python -c pass`.

Each command runs `--runs` times in a fresh interpreter after one warm-up run (the OS file
cache and Python's bytecode cache warm: the children run without PYTHONDONTWRITEBYTECODE, so
the warm-up writes the `.pyc` files an installed package has). The median wall time and the
median CPU time of the child (user + system) are reported, with the load average, because
other jobs may share the CPUs. `tht verify` and `tht ask` run on the demo workspace
(examples/clinical-dwh copied into a temporary Git repository and indexed with `tht docs sync`,
as benchmarks/ask_latency.py does), or on `--workspace DIR` (for example one kept by
`tht demo --keep DIR`), which is used as it is.

`--importtime` adds, per command, the packages that take the most import time (Python's
`-X importtime`, self time summed per top-level package, one run).

`--baseline-src DIR` measures another version of Thoth's sources too (for example `git
archive main src | tar -x -C /tmp/base`, then `--baseline-src /tmp/base/src`): each command
runs alternately with DIR and with these sources on PYTHONPATH, so that both sides see the
same load; the rows of the baseline are labelled `(baseline)`.

Target: under 1.5 s for the commands that embed nothing (`--help`, `verify`); `ask` embeds
its question and is reported for comparison. Exit 1 when a target is missed.

Usage:
    .venv/bin/python benchmarks/startup.py [--runs 5] [--workspace DIR] [--importtime]
        [--baseline-src DIR] [--json]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_common import emit, header_line, loadavg, machine_facts

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "clinical-dwh"
TARGET_S = 1.5
QUESTION = "Qual è il tempo massimo di attesa per un codice verde?"
THT = "from thoth.cli.main import main; main()"  # what the `tht` console script runs


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=b@b.invalid", *args],
        check=True,
        capture_output=True,
    )


def demo_workspace(tmp: Path) -> Path:
    """The demo workspace, committed and indexed (the bundled embedder: a minute or two)."""
    from thoth.knowledge.sync import DocsSync
    from thoth.runtime import open_runtime
    from thoth.workspace import Workspace

    root = tmp / "clinical-dwh"
    shutil.copytree(DEMO, root)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "bench")
    ws = Workspace.open(root)
    with open_runtime(ws) as rt:
        DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="bench")
    return root


def commands(ws: Path) -> dict[str, list[str]]:
    """Label -> argv; `expect_ok` commands must exit 0."""
    tht = [sys.executable, "-c", THT]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "tht --help": [*tht, "--help"],
        "tht verify": [*tht, "verify", "-w", str(ws)],
        "tht ask": [*tht, "ask", QUESTION, "-w", str(ws), "--label", "public", "--json"],
    }


# The children's environment: bytecode written and read, as for an installed package.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
SRC = ROOT / "src"


def env_for(src: Path) -> dict[str, str]:
    """ENV with `src` first on PYTHONPATH: the Thoth sources a child imports."""
    rest = [p for p in ENV.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**ENV, "PYTHONPATH": os.pathsep.join([str(src), *rest])}


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_once(argv: Sequence[str], env: dict[str, str] = ENV) -> tuple[float, float]:
    """Wall and CPU seconds of one run; a failing command stops the benchmark."""
    cpu0 = _child_cpu()
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} ... exited {done.returncode}:\n{done.stderr}")
    return wall, _child_cpu() - cpu0


def import_breakdown(
    argv: Sequence[str], top: int = 6, env: dict[str, str] = ENV
) -> dict[str, float]:
    """Seconds of import time per top-level package (self times summed), the `top` largest."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    per_package: Counter[str] = Counter()
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if m:
            per_package[m.group(2).split(".")[0]] += int(m.group(1))
    total = sum(per_package.values())
    result = {name: round(us / 1e6, 3) for name, us in per_package.most_common(top)}
    return {"total": round(total / 1e6, 3), **result}


def _row(label: str, samples: list[tuple[float, float]]) -> dict[str, Any]:
    wall = statistics.median(s[0] for s in samples)
    embeds_nothing = label in ("tht --help", "tht verify")
    return {
        "median_wall_s": round(wall, 3),
        "median_cpu_s": round(statistics.median(s[1] for s in samples), 3),
        "min_wall_s": round(min(s[0] for s in samples), 3),
        "target_s": TARGET_S if embeds_nothing else None,
        "meets_target": wall < TARGET_S if embeds_nothing else None,
    }


def run(
    runs: int, workspace: Path | None, importtime: bool, baseline: Path | None = None
) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="thoth-startup-bench-"))
    sides = {"": env_for(SRC)}
    if baseline is not None:
        sides[" (baseline)"] = env_for(baseline.resolve())
    try:
        ws = workspace.resolve() if workspace else demo_workspace(tmp)
        load_before = loadavg()
        rows: dict[str, Any] = {}
        for label, argv in commands(ws).items():
            samples: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            for env in sides.values():
                time_once(argv, env)  # warm-up: caches, bytecode
            for i in range(runs):
                # Alternating sides, and which goes first: both see the same load.
                order = list(sides.items()) if i % 2 == 0 else list(reversed(sides.items()))
                for side, env in order:
                    samples[side].append(time_once(argv, env))
            for side, env in sides.items():
                if side and label == "python -c pass":
                    continue  # the same interpreter on both sides
                rows[label + side] = _row(label, samples[side])
                if importtime and label != "python -c pass":
                    rows[label + side]["imports_s"] = import_breakdown(argv, env=env)
        base = rows["python -c pass"]["median_wall_s"]
        for row in rows.values():
            row["over_bare_python_s"] = round(row["median_wall_s"] - base, 3)
        return {
            "machine": machine_facts(),
            "runs": runs,
            "workspace": "given" if workspace else "demo (examples/clinical-dwh, synced)",
            "loadavg_before_after": [load_before, loadavg()],
            "commands": rows,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def report(result: dict[str, Any]) -> None:
    print(header_line(result["machine"]))
    before, after = result["loadavg_before_after"]
    print(
        f"{result['runs']} warm runs per command, workspace: {result['workspace']}; "
        f"load avg before {before}, after {after}"
    )
    print(f"{'command':29}{'wall p50':>10}{'cpu p50':>10}{'min':>8}{'+python':>9}  target")
    for label, row in result["commands"].items():
        target = (
            "-"
            if row["target_s"] is None
            else f"< {row['target_s']} s {'PASS' if row['meets_target'] else 'FAIL'}"
        )
        print(
            f"{label:29}{row['median_wall_s']:>9.3f}s{row['median_cpu_s']:>9.3f}s"
            f"{row['min_wall_s']:>7.3f}s{row['over_bare_python_s']:>8.3f}s  {target}"
        )
    for label, row in result["commands"].items():
        if "imports_s" in row:
            parts = ", ".join(f"{k} {v}" for k, v in row["imports_s"].items())
            print(f"imports of {label} (s): {parts}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per command (median)")
    parser.add_argument(
        "--workspace", type=Path, help="an indexed workspace to use instead of the demo"
    )
    parser.add_argument("--importtime", action="store_true", help="import time per package")
    parser.add_argument(
        "--baseline-src",
        type=Path,
        help="another version's src directory, measured alternately with this one",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.runs, args.workspace, args.importtime, args.baseline_src)
    result["baseline_src"] = str(args.baseline_src) if args.baseline_src else None
    emit(result, args.json, report)
    missed = [
        r
        for label, r in result["commands"].items()
        if r["meets_target"] is False and not label.endswith("(baseline)")
    ]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
