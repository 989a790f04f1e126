"""What reading a sealed generation through a verified private copy costs.

Since issue 14 no reader opens a sealed Qdrant Edge shard where it lies (the engine writes into
any shard it opens): `EdgeBackend.open` copies the shard to `$TMPDIR/thoth-readers/`, hashing
every file against the SHA-256 sealed by the builder, then opens the copy. This script builds
generations of N points (dense dimension 384, as multilingual-e5-small, plus a BM25 vector and
a payload of ~600 bytes) with the real builder, and times, over `--repeat` runs each:

  in place  - `EdgeStore.open` on the sealed directory (what readers did before; it writes);
  verified  - `EdgeBackend.open` with the sealed fingerprint (copy + hash + open);
  close     - closing the verified store (removes the copy).

Usage:
    .venv/bin/python benchmarks/open_generation.py [--points 1000,10000,50000] [--repeat 5]
        [--json]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_common import emit, header_line, machine_facts
from thoth.index.base import IndexRecord, SparseVec
from thoth.index.edge import EdgeStore
from thoth.index.generations import EdgeBackend

DIM = 384


def _records(n: int, rng: random.Random) -> list[IndexRecord]:
    out = []
    for i in range(n):
        dense = [rng.uniform(-1, 1) for _ in range(DIM)]
        sparse = SparseVec(indices=sorted(rng.sample(range(50_000), 40)), values=[1.0] * 40)
        payload = {"record_kind": "document", "text": "x" * 600, "labels": ["internal"]}
        out.append(
            IndexRecord(id=str(uuid.UUID(int=i + 1)), dense=dense, sparse=sparse, payload=payload)
        )
    return out


def _median_ms(samples: Sequence[float]) -> float:
    return round(statistics.median(samples) * 1000, 1)


def run(points: Sequence[int], repeat: int) -> dict[str, Any]:
    rng = random.Random(14)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        backend = EdgeBackend(Path(tmp))
        for n in points:
            gen = f"g{n}"
            store = backend.create(gen, DIM)
            records = _records(n, rng)
            for start in range(0, n, 512):
                store.upsert(records[start : start + 512])
            sealed = backend.seal(gen, store)
            size = sum(s for s, _ in sealed["files"].values())
            in_place, verified, closing = [], [], []
            for _ in range(repeat):
                started = time.perf_counter()
                opened = backend.open(gen, sealed)
                verified.append(time.perf_counter() - started)
                assert opened.count() == n
                started = time.perf_counter()
                opened.close()
                closing.append(time.perf_counter() - started)
            scratch = Path(tmp) / f"{gen}-in-place"
            for _ in range(repeat):
                # A throw-away copy: opening in place writes into it.
                shutil.copytree(Path(tmp) / gen, scratch)
                started = time.perf_counter()
                raw = EdgeStore.open(scratch)
                in_place.append(time.perf_counter() - started)
                raw.close()
                shutil.rmtree(scratch)
            rows.append(
                {
                    "points": n,
                    "shard_mib": round(size / 2**20, 1),
                    "files": len(sealed["files"]),
                    "in_place_ms": _median_ms(in_place),
                    "verified_ms": _median_ms(verified),
                    "close_ms": _median_ms(closing),
                    "ratio": round(statistics.median(verified) / statistics.median(in_place), 1),
                }
            )
    return {"machine": machine_facts(), "repeat": repeat, "rows": rows}


def report(result: dict[str, Any]) -> None:
    print(header_line(result["machine"]))
    print(f"medians of {result['repeat']} runs")
    cols = ("points", "shard_mib", "files", "in_place_ms", "verified_ms", "close_ms", "ratio")
    print(" | ".join(f"{c:>11}" for c in cols))
    for row in result["rows"]:
        print(" | ".join(f"{row[c]!s:>11}" for c in cols))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", default="1000,10000,50000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    points = [int(p) for p in args.points.split(",")]
    return emit(run(points, args.repeat), args.json, report)


if __name__ == "__main__":
    raise SystemExit(main())
