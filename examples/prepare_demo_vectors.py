"""Prepare examples/demo-vectors.sqlite.gz: the vectors of every passage `tht demo` embeds.

Runs the demo once without prepared vectors (on a copy of examples/ that lacks the file), then
writes the kept workspace's embedding cache, compacted, as the new file. Run it after changing
the demo's sources, documents or wiki (tests/cli/test_demo.py fails while the file misses a
passage the demo embeds):

    .venv/bin/python examples/prepare_demo_vectors.py
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import sqlite3
import sys
import tempfile
from contextlib import closing
from pathlib import Path

from rich.console import Console

from thoth.cli.demo import DEMO_NAME, PREPARED_VECTORS, run_demo
from thoth.embed import CACHE_FILE
from thoth.runtime import STATE_DIR

EXAMPLES = Path(__file__).resolve().parent


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="thoth-demo-vectors-") as tmp:
        examples = Path(tmp) / "examples"
        shutil.copytree(EXAMPLES / DEMO_NAME, examples / DEMO_NAME)
        os.environ["THOTH_EXAMPLES"] = str(examples)
        target = run_demo(Console(file=io.StringIO(), width=120), Path(tmp) / "demo")
        compact = Path(tmp) / "compact.sqlite"
        with closing(sqlite3.connect(target / STATE_DIR / "cache" / CACHE_FILE)) as db:
            db.execute("VACUUM INTO ?", (str(compact),))
            (count,) = db.execute("SELECT count(*) FROM vectors").fetchone()
        out = EXAMPLES / PREPARED_VECTORS
        # mtime 0: the same vectors give the same bytes, so Git sees no change
        with (
            compact.open("rb") as src,
            open(out, "wb") as raw,
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as dst,
        ):
            shutil.copyfileobj(src, dst)
    print(f"{out}: {count} passage vectors, {out.stat().st_size:,} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
