"""Level 3 on questions the calibration never saw: a catalog written from docs/analytics.md
alone, calibrated as the docs say, asked held-out wordings of the questions it covers.

Builds the demo's warehouse and analytics store (examples/clinical-dwh, its own tools) in a
temporary folder, replaces the demo's catalog with benchmarks/data/analytics_heldout/queries/
(six queries written from the docs page, never from the demo's catalog), checks it with the
product's check, calibrates it with the product's calibration (`calibrate_catalog`, as `tht
analytics calibrate --set benchmarks/data/analytics_heldout/calibration.yaml` does) and then
decides every question of heldout.yaml (committed before any change to the estimator) with the
product's decision at the suggested threshold (`thoth.analytics.decide`, the bundled
embedder), running the chosen query on the store.

Reported for the calibration set and the held-out set side by side:
- covered: computed by the expected query with the expected parameters (the goal: >= 14/15
  held out), and the calibration's own leave-one-out estimate of that share;
- wrong numbers: a number computed with another query or other parameters, or for a question
  no query covers (the goal: 0).

`--set heldout2` decides heldout2.yaml instead: a second held-out set written before any change
to the decision's gates, once heldout.yaml had been seen. `--set heldout3` decides heldout3.yaml:
a third set written before the next change to the gates, once heldout2.yaml had been seen too.
`--set heldout4` and `--set heldout5` decide sets written by an outsider who read neither the
decision's code nor the earlier sets' questions, before any change; heldout5 is sealed for the
final measurement (not run before it). `--set heldout6` decides a sixth outsider set (helper
"blind6", same rules), also sealed for the final measurement.
`--set dev` decides dev.yaml, the wordings and near-misses written while changing them (tuning).

Usage:
    .venv/bin/python benchmarks/analytics_heldout.py [--json] [--threshold X]
        [--set heldout2|heldout3|heldout4|heldout5|heldout6|dev]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from thoth.analytics.branch import serve
from thoth.analytics.calibration import calibrate_catalog
from thoth.analytics.catalog import load_catalog_files
from thoth.analytics.decide import decide
from thoth.analytics.extract import Matcher
from thoth.analytics.glossary import glossary_synonyms
from thoth.analytics.routing import OfflineRouter
from thoth.cli.demo import build_analytics, build_warehouse, demo_source
from thoth.runtime import open_analytics_store, open_embedder
from thoth.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "analytics_heldout"


def _labelled(path: Path) -> list[tuple[str, str | None, bool]]:
    data = yaml.safe_load(path.read_text("utf-8"))
    return [(e["question"], e.get("query"), bool(e.get("figure"))) for e in data]


def _heldout(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    data = yaml.safe_load((DATA / f"{name}.yaml").read_text("utf-8"))
    return list(data["covered"]), list(data["not_covered"])


def build(target: Path) -> Workspace:
    shutil.copytree(demo_source(), target)
    build_warehouse(target)
    build_analytics(target)
    queries = target / "analytics" / "queries"
    shutil.rmtree(queries)
    shutil.copytree(DATA / "queries", queries)
    # The glossary's synonyms are read from Git (HEAD), as calibration reads them.
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=target, check=True)
    subprocess.run(["git", "add", "-A"], cwd=target, check=True)
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "bench"],
        cwd=target,
        check=True,
    )
    return Workspace.open(target)


def _same(expected: dict[str, Any], got: dict[str, Any]) -> bool:
    return all(str(got.get(k)) == str(v) for k, v in expected.items() if v is not None) and all(
        got.get(k) is None for k, v in expected.items() if v is None
    )


def run(threshold_override: float | None, held_set: str = "heldout") -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="thoth-heldout-") as tmp:
        ws = build(Path(tmp) / "ws")
        store = open_analytics_store(ws)
        try:
            checked = subprocess.run(
                [str(Path(sys.executable).parent / "tht"), "analytics", "check", "--json"],
                cwd=ws.root,
                capture_output=True,
                text=True,
            )
            problems = [] if checked.returncode == 0 else [checked.stdout + checked.stderr]
            embedder = open_embedder(ws)
            calibration = calibrate_catalog(
                ws.root, store, embedder, ws.settings.language, _labelled(DATA / "calibration.yaml")
            )
            threshold = threshold_override or calibration.threshold
            catalog = load_catalog_files(ws.root, store.settings.catalog)
            served = serve(catalog, store, glossary_synonyms(ws.root, "HEAD"))
            vocab = served.vocabulary(Matcher(ws.settings.language))
            router = OfflineRouter(embedder)
            tie = store.settings.tie_margin

            def ask(question: str) -> dict[str, Any]:
                scores = router.scores(question, served.queries)
                d = decide(question, served.queries, scores, served.choices, vocab, threshold, tie)
                seen: dict[str, Any] = {"outcome": d.outcome, "query": d.query_id}
                seen["score"] = round(d.best.score, 4) if d.best else None
                if d.outcome == "compute" and d.query_id and d.extraction:
                    values = d.extraction.values
                    seen["parameters"] = {k: v for k, v in values.items()}
                    seen["rows"] = store.execute(
                        served.queries[d.query_id], values, catalog.revision
                    ).rows[:3]
                else:
                    seen["reason"] = d.reason
                return seen

            covered, uncovered = _heldout(held_set)
            held = []
            for case in covered:
                seen = ask(case["question"])
                right = (
                    seen["outcome"] == "compute"
                    and seen["query"] == case["query"]
                    and _same(case["parameters"], seen.get("parameters") or {})
                )
                wrong = seen["outcome"] == "compute" and not right
                held.append({**case, "seen": seen, "right": right, "wrong_number": wrong})
            negatives = []
            for case in uncovered:
                seen = ask(case["question"])
                negatives.append(
                    {**case, "seen": seen, "wrong_number": seen["outcome"] == "compute"}
                )
            cal_rows = calibration.per_question
        finally:
            store.close()
    cal_covered = [r for r in cal_rows if r["expected"]]
    return {
        "catalog_problems": problems,
        "calibration": {
            "threshold": round(threshold, 4),
            "suggested": round(calibration.threshold, 4),
            "separated": calibration.separated,
            "covered_right": sum(r["correct"] for r in cal_covered),
            "covered": len(cal_covered),
            "estimate": calibration.as_dict().get("expected_computed"),
        },
        "heldout": {
            "set": held_set,
            "covered_right": sum(c["right"] for c in held),
            "covered": len(held),
            "wrong_numbers": sum(c["wrong_number"] for c in held)
            + sum(c["wrong_number"] for c in negatives),
            "not_covered": len(negatives),
            "misses": [
                {"question": c["question"], "expected": c["query"], **c["seen"]}
                for c in held
                if not c["right"]
            ],
            "negatives_computed": [c for c in negatives if c["wrong_number"]],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--threshold", type=float, help="decide at this threshold instead")
    parser.add_argument(
        "--set",
        default="heldout",
        choices=["heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "dev"],
        help="the held-out file of benchmarks/data/analytics_heldout/ (heldout5, heldout6: sealed)",
    )
    args = parser.parse_args()
    result = run(args.threshold, args.set)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
        return
    cal, held = result["calibration"], result["heldout"]
    if result["catalog_problems"]:
        print("catalog problems:", *result["catalog_problems"], sep="\n  ")
    print(
        f"threshold {cal['threshold']} (suggested {cal['suggested']}, "
        f"{'separated' if cal['separated'] else 'overlapping'}); calibration's estimate of new "
        f"wordings computed: {cal['estimate']}"
    )
    print("| set | covered computed right | wrong numbers |")
    print("|---|---|---|")
    print(f"| calibration | {cal['covered_right']}/{cal['covered']} | - |")
    print(
        f"| {held['set']} | {held['covered_right']}/{held['covered']} | {held['wrong_numbers']} "
        f"(of {held['covered']} covered + {held['not_covered']} not covered) |"
    )
    for miss in held["misses"]:
        print(f"  miss: {miss}")
    for neg in held["negatives_computed"]:
        print(f"  WRONG NUMBER: {neg}")


if __name__ == "__main__":
    main()
