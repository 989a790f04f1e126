"""The pieces of a multi-host deployment, started as real processes on this machine: one
PostgreSQL database of its own for state and queue, `tht serve` hosts on fixed ports (a killed
host restarts on its own port, as a process manager would restart it), `tht agent worker`
processes, and a model server whose replies depend only on the conversation it is sent, so
two workers interleaving their turns get the same replies as one would."""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from tests.conftest import PG_HOST, PG_PORT
from tests.fake_llm import FakeLLMServer, RecordedRequest, Reply, ToolCallScript
from tests.service.conftest import THT, base_env, wait_healthy

# The wiki page every agent job reads, and the answer that cites it (no figure: the figure
# check has nothing to hold against it).
AGENT_PAGE = "ricoveri-urgenti.md"
AGENT_ANSWER = f"I ricoveri urgenti sono descritti nella pagina del reparto ({AGENT_PAGE})."
GATE_S = 180.0  # below [llm].timeout_seconds of the test's workspace


class AgentModel(FakeLLMServer):
    """A model that reads the page first and answers once it has read it: the reply is decided
    by the conversation sent, never by the order requests arrive in. While `gate` is clear,
    every call waits (up to GATE_S): a job stays running, so the next is left to another
    worker."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()

    def _record(self, request: RecordedRequest) -> tuple[int, Reply | None]:
        n, _ = super()._record(request)
        self.gate.wait(GATE_S)
        messages = request.body.get("messages", []) if isinstance(request.body, dict) else []
        if any(isinstance(m, dict) and m.get("role") == "tool" for m in messages):
            return n, Reply(text=AGENT_ANSWER)
        return n, Reply(tool_calls=(ToolCallScript("wiki_read", {"path": AGENT_PAGE}),))

    def calls_about(self, question: str) -> int:
        """How many model calls carried `question` (each job's question is unique)."""
        return sum(question in r.raw.decode("utf-8") for r in self.requests)


def create_database(user: str, prefix: str) -> str:
    """A new, empty database named `<prefix>_<random>`; its name."""
    name = f"{prefix}_{secrets.token_hex(5)}"
    with psycopg.connect(
        host=PG_HOST, port=PG_PORT, user=user, dbname="test", autocommit=True
    ) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return name


def drop_database(user: str, name: str) -> None:
    with psycopg.connect(
        host=PG_HOST, port=PG_PORT, user=user, dbname="test", autocommit=True
    ) as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def database_url(user: str, name: str) -> str:
    return f"postgresql+psycopg://{user}@{PG_HOST}:{PG_PORT}/{name}"


class Host:
    """One `tht serve` on a fixed port; `start()` again after `kill()` is its restart."""

    def __init__(self, root: Path, port: int, log: Path, env: dict[str, str]) -> None:
        self.root, self.port, self.log, self.env = root, port, log, env
        self.url = f"http://127.0.0.1:{port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> float:
        """Start, and wait until it serves; the seconds it took."""
        began = time.monotonic()
        self.spawn()
        self.wait_ready()
        return time.monotonic() - began

    def spawn(self) -> None:
        self.starts += 1
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [*THT, "serve", "--port", str(self.port), "-w", str(self.root)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**base_env(), "PYTHONUNBUFFERED": "1", **self.env},
            )

    def wait_ready(self) -> None:
        """Until /v1/health answers: uvicorn listens once the engine is open (lifespan)."""
        assert self.process is not None
        wait_healthy(self.process, self.url, self.log, poll_s=0.05)

    def kill(self) -> None:
        """SIGKILL: no shutdown handler runs, in-flight requests are cut."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def rss_kib(self) -> int:
        """The resident memory of the serving process."""
        assert self.process is not None
        return rss_kib(self.process.pid)


def rss_kib(pid: int) -> int:
    """The resident memory of process `pid` (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS line for process {pid}")


class AgentWorker:
    """One `tht agent worker --id NAME --json`; `stop()` (SIGTERM) returns how many jobs it ran."""

    def __init__(self, root: Path, name: str, log: Path, env: dict[str, str]) -> None:
        self.name = name
        self.log = log
        self._err = log.open("wb")
        self.process = subprocess.Popen(
            [*THT, "agent", "worker", "--id", name, "--json", "-w", str(root)],
            stdout=subprocess.PIPE,
            stderr=self._err,
            env={**base_env(), "PYTHONUNBUFFERED": "1", **env},
        )

    def stop(self) -> dict[str, Any]:
        self.process.send_signal(signal.SIGTERM)
        try:
            out, _ = self.process.communicate(timeout=60)
        finally:
            self._err.close()
        assert self.process.returncode == 0, self.log.read_text()
        return dict(json.loads(out))

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._err.close()


def tht_started(root: Path, env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    """One `tht ... --json` command started in its own process, in `root`."""
    return subprocess.Popen(
        [*THT, *args, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**base_env(), **env},
        cwd=root,
    )


def tht_result(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    """The JSON of a command started by `tht_started` (exit 0 required)."""
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, (process.args, out, err)
    return dict(json.loads(out))


def tht(root: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    """One `tht ... --json` command run to its end; its JSON."""
    return tht_result(tht_started(root, env, *args))


def poll(condition: Any, seconds: float, what: str) -> None:
    """Wait until `condition()` is true (a readiness poll, not a sleep)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not true after {seconds}s")
