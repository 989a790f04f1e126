"""A real `tht serve` (uvicorn) in a child process on a free port of 127.0.0.1, for tests that
reach the service the way a caller does: over TCP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

SRC = Path(__file__).resolve().parents[2] / "src"
START_TIMEOUT_S = 90.0


def tht_command(*args: str) -> list[str]:
    """The `tht` console script `pip install` made, next to this interpreter."""
    return [str(Path(sys.executable).with_name("tht")), *args]


def tht_env() -> dict[str, str]:
    """This checkout's sources first, whatever the venv was installed from."""
    return {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def add_caller(root: Path, name: str, labels: str) -> str:
    """`tht service add-caller` as an administrator runs it; returns the key it printed once."""
    done = subprocess.run(
        tht_command("service", "add-caller", name, "--labels", labels, "--json", "-w", str(root)),
        capture_output=True,
        text=True,
        env=tht_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    key: str = json.loads(done.stdout)["key"]
    return key


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class Served:
    url: str
    log: Path  # the server's stdout and stderr

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@contextmanager
def serving(root: Path, log: Path) -> Iterator[Served]:
    """`tht serve -w root` until the block ends; ready once GET /v1/health answers 200."""
    port = free_port()
    served = Served(f"http://127.0.0.1:{port}", log)
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            tht_command("serve", "--host", "127.0.0.1", "--port", str(port), "-w", str(root)),
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=tht_env(),
        )
        try:
            _wait_healthy(proc, served)
            yield served
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)


def _wait_healthy(proc: subprocess.Popen[bytes], served: Served) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"tht serve exited with {proc.returncode}:\n{served.log_text()}")
        try:
            if httpx.get(served.url + "/v1/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"tht serve not healthy after {START_TIMEOUT_S} s:\n{served.log_text()}")
