"""The secret scanner (thoth.secrets) measured: recall and false positives on its test corpus,
false positives on real text nobody on the team wrote, and speed.

Compares three scanners:
- `detect-secrets` alone, as its command line runs it (`detect-secrets scan` on a file: every
  plugin, default filters, no baseline, no verification);
- Thoth's own rules alone (`find_secrets` without the detect-secrets plugins);
- Thoth's combined scanner (`find_secrets`), the one prepare, validate and docs sync run.

Real text (../shared/data, see its README): the SQuAD-it contexts (Italian Wikipedia), the
TAT-QA paragraphs and tables (English financial reports; tables rendered as the Markdown tables
Thoth's extraction produces) and the text of the SEC 10-Q PDFs extracted with
thoth.documents; then the demo workspace's files (examples/) and, with --units, Evidence unit
files. Speed: milliseconds per MB of text for `find_secrets`, on all of it.

A fourth scanner is measured to explain a choice: detect-secrets' high-entropy plugins with
eager search (unquoted words too), which Thoth does not use.

Usage:
    .venv/bin/python benchmarks/secrets_scan.py [--data ../shared/data] [--units DIR] [--json]
        [--show 5]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import yaml

import thoth.secrets as secrets
from bench_common import header_line, machine_facts
from thoth.documents.extract import extract
from thoth.markup import markdown_table

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "secrets_corpus.yaml"

Scanner = Callable[[str], set[int]]  # text -> flagged line numbers


def detect_secrets_alone(text: str) -> set[int]:
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import default_settings

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "text.txt"
        path.write_text(text, encoding="utf-8")
        with default_settings():
            return {s.line_number for s in scan_file(str(path))}


def thoth_combined(text: str) -> set[int]:
    return {f.line for f in secrets.find_secrets(text)}


def thoth_rules_alone(text: str) -> set[int]:
    with without_plugins():
        return thoth_combined(text)


@contextmanager
def without_plugins() -> Iterator[None]:
    with mock.patch.object(secrets, "_plugin_kind", lambda _line: None):
        yield


def high_entropy_eager(text: str) -> set[int]:
    """detect-secrets' Base64 and Hex high-entropy plugins at their default limits, searching
    unquoted words too (`enable_eager_search`, as `detect-secrets scan --string` does): what
    they would flag if Thoth used them on prose."""
    from detect_secrets.plugins.high_entropy_strings import (
        Base64HighEntropyString,
        HexHighEntropyString,
    )

    plugins = (Base64HighEntropyString(), HexHighEntropyString())
    # With eager search the plugins return every candidate; the limit is applied here, as
    # detect-secrets applies it to quoted strings.
    return {
        number
        for number, line in enumerate(text.split("\n"), start=1)
        for plugin in plugins
        for found in plugin.analyze_line(filename="t.txt", line=line, enable_eager_search=True)
        if plugin.calculate_shannon_entropy(found.secret_value or "") > plugin.entropy_limit
    }


# Lines where a rule could misfire: the words the rules start from.
TRIGGER = re.compile(
    r"(?i)passw|pwd|parola chiave|secret|segret|token|api.?key|chiave|credenzial|credential|"
    r"authori[sz]ation|bearer|://"
)


SCANNERS: dict[str, Scanner] = {
    "detect-secrets alone": detect_secrets_alone,
    "Thoth rules alone": thoth_rules_alone,
    "Thoth combined": thoth_combined,
    "high-entropy plugins, eager": high_entropy_eager,
}


def corpus_scores(scanner: Scanner) -> dict[str, Any]:
    cases = yaml.safe_load(CORPUS.read_text("utf-8"))
    positives, negatives = cases["positives"], cases["negatives"]
    missed = [c["name"] for c in positives if not set(c["lines"]) <= scanner(c["text"])]
    flagged = [c["name"] for c in negatives if scanner(c["text"])]
    return {
        "recall": f"{len(positives) - len(missed)}/{len(positives)}",
        "false_positives": f"{len(flagged)}/{len(negatives)}",
        "missed": missed,
        "flagged": flagged,
    }


def real_texts(data: Path, units: Path | None) -> dict[str, list[str]]:
    with gzip.open(data / "squad_it" / "squad_it_dev_half.json.gz") as raw:
        squad = json.loads(raw.read())
    tatqa = json.loads((data / "tatqa" / "tatqa_dataset_dev.json").read_text("utf-8"))
    texts = {
        "SQuAD-it contexts": [p["context"] for a in squad["data"] for p in a["paragraphs"]],
        "TAT-QA paragraphs": [p["text"] for c in tatqa for p in c["paragraphs"]],
        "TAT-QA tables": [
            markdown_table(c["table"]["table"][0], c["table"]["table"][1:]) for c in tatqa
        ],
    }
    examples = Path(__file__).resolve().parents[1] / "examples"
    texts["demo workspace (examples/)"] = [
        path.read_text("utf-8")
        for path in sorted(examples.rglob("*"))
        if path.is_file() and path.suffix in (".md", ".txt", ".csv", ".yaml", ".toml", ".html")
    ]
    if units is not None:
        texts["Evidence unit files"] = [p.read_text("utf-8") for p in sorted(units.rglob("*.md"))]
    pdfs = sorted((data / "sec10q" / "docs").glob("*.pdf"))
    if pdfs:
        texts["SEC 10-Q PDFs (pages)"] = [
            block.text for pdf in pdfs for block in extract(pdf).blocks
        ]
    return texts


def real_scores(texts: list[str], scanner: Scanner, show: int) -> dict[str, Any]:
    flagged: list[str] = []
    for text in texts:
        lines = text.split("\n")
        flagged += [lines[n - 1][:140] for n in sorted(scanner(text)) if n <= len(lines)]
    return {
        "texts": len(texts),
        "lines": sum(t.count("\n") + 1 for t in texts),
        "trigger_lines": sum(bool(TRIGGER.search(line)) for t in texts for line in t.split("\n")),
        "flagged_lines": len(flagged),
        "examples": flagged[:show],
    }


def speed(texts: list[str]) -> dict[str, float]:
    size = sum(len(t.encode("utf-8")) for t in texts) / 1_000_000
    started = time.perf_counter()
    for text in texts:
        secrets.find_secrets(text)
    elapsed = time.perf_counter() - started
    return {
        "mb": round(size, 2),
        "seconds": round(elapsed, 2),
        "ms_per_mb": round(elapsed * 1000 / size),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument(
        "--units",
        type=Path,
        help="also scan the unit files under this folder (e.g. evidence/curated of a workspace "
        "kept by `tht demo --keep DIR`)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--show", type=int, default=5, help="flagged lines shown per corpus")
    args = parser.parse_args()

    result: dict[str, Any] = {"corpus": {}, "real": {}, "speed": {}}
    for name, scanner in SCANNERS.items():
        result["corpus"][name] = corpus_scores(scanner)
    texts = real_texts(args.data, args.units)
    for corpus, items in texts.items():
        result["real"][corpus] = {
            name: real_scores(items, scanner, args.show)
            for name, scanner in SCANNERS.items()
            # detect-secrets alone writes a file per text: one file per corpus is enough.
            if name != "detect-secrets alone"
        }
        whole = "\n\n".join(items)
        flagged = detect_secrets_alone(whole)
        lines = whole.split("\n")
        result["real"][corpus]["detect-secrets alone"] = {
            "texts": len(items),
            "lines": len(lines),
            "trigger_lines": sum(bool(TRIGGER.search(line)) for line in lines),
            "flagged_lines": len(flagged),
            "examples": [lines[n - 1][:140] for n in sorted(flagged)[: args.show]],
        }
    result["speed"] = speed([t for items in texts.values() for t in items])
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    print(header_line(machine_facts()))
    for name, scores in result["corpus"].items():
        print(
            f"corpus  {name:28} recall {scores['recall']:>6}  false positives "
            f"{scores['false_positives']:>6}  missed {scores['missed']}  "
            f"flagged {scores['flagged']}"
        )
    for corpus, by_scanner in result["real"].items():
        for name, scores in by_scanner.items():
            print(
                f"{corpus:22} {name:28} {scores['flagged_lines']:>5} flagged of "
                f"{scores['lines']} lines ({scores['trigger_lines']} with a trigger word, "
                f"{scores['texts']} texts)"
            )
            for example in scores["examples"]:
                print(f"      {example!r}")
    s = result["speed"]
    print(f"speed   find_secrets: {s['ms_per_mb']} ms/MB ({s['mb']} MB in {s['seconds']} s)")


if __name__ == "__main__":
    main()
