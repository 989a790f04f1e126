"""Hostile input, measured through the real CLI in a child process: a YAML alias bomb ("billion
laughs") in a wiki page's title, in a document's front matter and in a legacy formula, and a
text file over its source's size limit. Each must fail within seconds, naming the file, with
the child's peak memory bounded (before the fixes: 11.2 GB and 126 s, 8.4 GB and 127 s, 3.2 GB
and 56 s, and 46,029 fragments for a 50 MB text file).

The child runs under a small wrapper process whose RUSAGE_CHILDREN peak RSS is the `tht`
process tree's alone (git included); an address-space limit stops a regression long before it
can exhaust the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import commit_all
from tests.knowledge.test_sync import FILES, docs_workspace, page, sources_config
from thoth.workspace import Workspace

pytestmark = pytest.mark.slow  # a few child processes of a few seconds each

Make = Callable[..., Workspace]

# Nothing listens there: the syncs below must fail before anything is embedded.
DEAD_EMBEDDER = "http://127.0.0.1:9/v1"
PEAK_RSS_LIMIT_MB = 600
SECONDS_LIMIT = 30.0
# A regression is stopped here rather than by the machine running out of memory.
ADDRESS_SPACE_LIMIT = 6 * 1024**3

_WRAPPER = """
import json, resource, subprocess, sys, time
limit = int(sys.argv[1])
def cap():
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
started = time.monotonic()
try:
    done = subprocess.run(sys.argv[3:], capture_output=True, text=True, timeout=float(sys.argv[2]),
                          preexec_fn=cap)
    code, out, err = done.returncode, done.stdout, done.stderr
except subprocess.TimeoutExpired as exc:
    code, out, err = "timeout", str(exc.stdout or ""), str(exc.stderr or "")
seconds = time.monotonic() - started
peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"code": code, "stdout": out, "stderr": err, "seconds": seconds,
                  "peak_mb": peak_kb / 1024}))
"""


@dataclass
class Run:
    code: int | str
    stdout: str
    stderr: str
    seconds: float
    peak_mb: float

    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.stdout)
        return data


def tht(*args: str) -> Run:
    """`tht ARGS --json` in a child process: its exit code, output, duration and peak RSS."""
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    script = Path(sys.executable).with_name("tht")  # the console script `pip install` made
    command = [str(script), *args, "--json"]
    wrapper = [sys.executable, "-c", _WRAPPER, str(ADDRESS_SPACE_LIMIT), "120", *command]
    done = subprocess.run(wrapper, capture_output=True, text=True, env=env, check=True)
    run = Run(**json.loads(done.stdout))
    print(f"tht {' '.join(args[:2])}: exit {run.code}, {run.seconds:.1f}s, {run.peak_mb:.0f} MB")
    return run


def bomb(levels: int = 9, width: int = 9) -> str:
    """YAML whose last anchor expands into width**levels strings (9**9: 387 million)."""
    lines = ["l0: &l0 [" + ", ".join(['"lol"'] * width) + "]"]
    for n in range(1, levels):
        lines.append(f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * width) + "]")
    return "\n".join(lines)


def assert_refused(run: Run, path: str) -> dict[str, Any]:
    assert run.code == 1, run.stderr[-2000:]
    data = run.json()
    assert data["ok"] is False
    assert path in json.dumps(data), data
    assert "aliases" in json.dumps(data), data
    assert run.seconds < SECONDS_LIMIT
    assert run.peak_mb < PEAK_RSS_LIMIT_MB
    return data


def docs_ws(tmp_path: Path, files: dict[str, str | bytes], extra_sources: str = "") -> Path:
    ws = docs_workspace(tmp_path / "ws", DEAD_EMBEDDER, files={**FILES, **files})
    if extra_sources:
        config = ws.root / "thoth.toml"
        config.write_text(
            config.read_text("utf-8").replace(sources_config(), extra_sources), "utf-8"
        )
        commit_all(ws.root, "limits")
    return ws.root


def test_alias_bomb_in_a_wiki_title_fails_fast(tmp_path: Path) -> None:
    hostile = page().replace("title: Guida ai ricoveri", bomb() + "\ntitle: *l8", 1)
    root = docs_ws(tmp_path, {"wiki/ricoveri.md": hostile})
    run = tht("docs", "sync", "-w", str(root))
    assert_refused(run, "wiki/ricoveri.md")


def test_alias_bomb_in_a_document_front_matter_fails_fast(tmp_path: Path) -> None:
    hostile = f"---\n{bomb()}\ntitle: *l8\n---\n# Ricoveri\n\nTesto del documento.\n"
    root = docs_ws(tmp_path, {"docs/bomba.md": hostile})
    run = tht("docs", "sync", "-w", str(root))
    assert_refused(run, "docs/bomba.md")


def test_alias_bomb_in_a_legacy_formula_fails_fast(make_workspace: Make) -> None:
    formula = (
        f"---\nname: bomba\n{bomb()}\nconcept: *l8\napproved: true\n---\n# Bomba\n\n"
        "Una formula.\n\n```sql\nSELECT 1\n```\n"
    )
    ws = make_workspace({"legacy-formulas/bomba.sql.md": formula})
    run = tht("evidence", "prepare", str(ws.root))
    assert_refused(run, "bomba.sql.md")


def test_a_text_file_over_the_size_limit_fails_fast_without_being_read(tmp_path: Path) -> None:
    """64 MiB of text under a 1 MiB limit: refused from its size in Git; reading it alone
    would hold it in memory several times over."""
    limited = sources_config().replace(
        'include = ["docs/**/*.md", "docs/**/*.pdf"]',
        'include = ["docs/**/*.md", "docs/**/*.pdf", "docs/**/*.txt"]\n'
        "max_document_bytes = 1048576",
    )
    root = docs_ws(tmp_path, {}, limited)
    line = b"Una riga di un registro esportato, ripetuta per riempire un file enorme.\n"
    (root / "docs" / "registro.txt").write_bytes(line * (64 * 1024 * 1024 // len(line)))
    started = time.monotonic()
    commit_all(root, "a huge text file")
    print(f"committing the file took {time.monotonic() - started:.1f}s")
    run = tht("docs", "sync", "-w", str(root))
    assert run.code == 1, run.stderr[-2000:]
    data = run.json()
    assert data["code"] == "document_too_large"
    [problem] = data["problems"]
    assert problem["where"] == "documenti:docs/registro.txt"
    assert "1,048,576 bytes" in problem["message"]
    assert run.seconds < SECONDS_LIMIT
    # Well under the file's own size: it was never read.
    assert run.peak_mb < PEAK_RSS_LIMIT_MB
    assert run.peak_mb * 1024 * 1024 < len(line) * (64 * 1024 * 1024 // len(line)) * 4
