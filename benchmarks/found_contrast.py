"""Does the quoted passage say an unmatched word's meaning in other words, or lack it? A probe.

The distinctive-words rule (thoth.answer.relevance) refuses an answer when the question's
distinctive words the quoted fragments do not hold carry at least UNMATCHED_SHARE of its
meaning. Just under that share sit both unanswerable questions whose subject noun no passage
holds and answerable ones whose verb the passage paraphrases. This probe measures a contrastive
test that could tell them apart: for each unmatched word w, how the quoted passage P's cosine to
the question Q changes when w leaves it (Q\\w, the very text `meaning_shares` embeds):

    contrast = cos(P, Q) - cos(P, Q\\w)      > 0: P carries w's meaning (paraphrase)
                                             < 0: P is closer without w (P lacks it)

P is the answer's first fragment (`rank1`) or the fragment closest to Q (`closest`); both also
centred on the mean vector of every passage of the generation (`rank1_c`, `closest_c`), which
takes out what removing a word does to every passage alike (e5 vectors share a large common
component); or the sentence of the first quoted fragments closest to Q (`sentence`, embedded as
a passage: one word weighs more in a sentence than in a fragment). The control: each word's
`rate` (its contrast over the question's own move without it: 1 for a passage that is the
question), beside the same rate of the distinctive terms the passage holds as written (`held`).
For each measure and share floor it counts what the rule "an unmatched word whose
share is at least the floor and that the passage lacks refuses the answer" would change on each
set: unanswerable questions now `found` it would refuse (gained), answerable ones answered it
would refuse (lost). Product path as in found_demo.py (`open_answer_service`, labels public and
internal); passage vectors read from the answer's generation; one query embedding per unmatched
word of each question and one call embedding the sentences (the cost, timed; the embedder's
cache makes a second run's sentence calls free).

Usage (from the project root, after `tht demo --keep /tmp/demo`):
    .venv/bin/python benchmarks/found_contrast.py /tmp/demo [--set NAME] [--json]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from rich.console import Console
from rich.table import Table

import found_demo
from bench_common import emit
from thoth.answer.relevance import _without
from thoth.embed.base import Embedder
from thoth.index.reader import open_generation
from thoth.runtime import open_answer_service, open_runtime
from thoth.workspace import Workspace

MEASURES = ("rank1", "closest", "rank1_c", "closest_c", "sentence")
# The sentences read for `sentence`: those of the first fragments quoted, at most this many.
SENTENCE_FRAGMENTS = 3
MAX_SENTENCES = 60
_SENTENCE = re.compile(r"(?<=[.;!?])\s+|\n+")
FLOORS = (0.10, 0.15, 0.20)


def contrast(
    passage: npt.ArrayLike,
    whole: npt.ArrayLike,
    rest: npt.ArrayLike,
    centroid: npt.ArrayLike | None = None,
) -> float:
    """cos(P, Q) - cos(P, Q\\w) for unit vectors; with `centroid`, P less the mean passage (what
    the word's leaving does to every passage alike is taken out)."""
    p = np.asarray(passage, dtype=np.float64)
    if centroid is not None:
        p = p - np.asarray(centroid, dtype=np.float64)
    return float(p @ (np.asarray(whole, dtype=np.float64) - np.asarray(rest, dtype=np.float64)))


def follow_rate(passage: npt.ArrayLike, whole: npt.ArrayLike, rest: npt.ArrayLike) -> float | None:
    """The contrast over the question's own move without the word (1 - cos(Q, Q\\w)): how
    much of the word's move the passage follows (the question itself: 1). None: no move."""
    w = np.asarray(whole, dtype=np.float64)
    move = 1.0 - float(w @ np.asarray(rest, dtype=np.float64))
    if move <= 1e-9:
        return None
    return contrast(passage, whole, rest) / move


def rule_effect(
    rows: Sequence[dict[str, Any]], measure: str, floor: float
) -> dict[str, dict[str, int]]:
    """Per set, what refusing an answer with an unmatched word of share >= `floor` that the
    passage lacks by `measure` (< 0) changes: unanswerable `found` ones refused (gained),
    answerable answered ones refused (lost). Questions refused already change nothing."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        counts = out.setdefault(str(r["set"]), {"gained": 0, "lost": 0})
        if r["status"] == "nothing_found":
            continue
        if any(w["share"] >= floor and w[measure] < 0 for w in r["words"]):
            counts["gained" if r["kind"] == "unanswerable" else "lost"] += 1
    return out


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _rest(embedder: Embedder, question: str, word: str) -> npt.NDArray[np.float64]:
    """The question without `word`, embedded as `meaning_shares` embeds it."""
    return np.asarray(embedder.embed_queries([_without(question, word)])[0], dtype=np.float64)


Generation = tuple[dict[str, npt.NDArray[np.float64]], npt.NDArray[np.float64], dict[str, str]]


def _read(store: Any) -> Generation:
    """Every point's vector, their mean, and every point's text."""
    vectors: dict[str, npt.NDArray[np.float64]] = {}
    texts: dict[str, str] = {}
    for rec in store.scroll():
        vectors[rec.id] = np.asarray(rec.dense, dtype=np.float64)
        texts[rec.id] = str(rec.payload.get("text") or "")
    return vectors, np.mean(np.stack(list(vectors.values())), axis=0), texts


def sentences(texts: Sequence[str]) -> list[str]:
    """The sentences of `texts` (split after . ; ! ? and at line ends), longer than 15
    characters (headings and table cells aside), at most MAX_SENTENCES."""
    out = [s.strip() for t in texts for s in _SENTENCE.split(t) if len(s.strip()) > 15]
    return out[:MAX_SENTENCES]


def run(root: Path, sets: dict[str, dict[str, list[found_demo.Case]]]) -> dict[str, Any]:
    service = open_answer_service(root)
    rt = open_runtime(Workspace.open(root))
    generations: dict[str, Generation] = {}
    rows: list[dict[str, Any]] = []
    embed_seconds: list[float] = []
    passage_seconds: list[float] = []  # the sentences of a question's first fragments
    try:
        for set_name, kinds in sets.items():
            for kind, cases in kinds.items():
                for question, _fact in cases:
                    answer = service.ask(question, labels=found_demo.LABELS)
                    diagnostics = answer.diagnostics
                    relevance = diagnostics.get("relevance") or {}
                    lacking = [
                        t
                        for t in relevance.get("terms", [])
                        if "share" in t and not t.get("matched", True)
                    ]
                    fragments = diagnostics.get("fragments") or []
                    words: list[dict[str, Any]] = []
                    held: list[dict[str, Any]] = []
                    gen_id = diagnostics.get("generation")
                    if lacking and fragments and gen_id:
                        if gen_id not in generations:
                            gen = rt.state.get_generation(gen_id)
                            assert gen is not None, gen_id
                            store = open_generation(rt.backend, gen)
                            try:
                                generations[gen_id] = _read(store)
                            finally:
                                store.close()
                        vectors, centroid, texts = generations[gen_id]
                        first = vectors[fragments[0]["id"]]
                        closest = vectors[
                            max(fragments, key=lambda f: f.get("similarity") or -1.0)["id"]
                        ]
                        whole = np.asarray(rt.embedder.embed_query(question)[0])
                        # The sentence closest to the question, of the first fragments quoted:
                        # a word's meaning weighs more in a sentence than in a whole fragment.
                        said = sentences([texts[f["id"]] for f in fragments[:SENTENCE_FRAGMENTS]])
                        start = time.perf_counter()
                        # No sentence (a table's cells): the first fragment stands for one.
                        rows_s = (
                            np.asarray(rt.embedder.embed_passages(said), dtype=np.float64)
                            if said
                            else first[None, :]
                        )
                        passage_seconds.append(time.perf_counter() - start)
                        for term in lacking:
                            start = time.perf_counter()
                            rest = _rest(rt.embedder, question, term["text"])
                            embed_seconds.append(time.perf_counter() - start)
                            words.append(
                                {
                                    "word": term["text"],
                                    "kind": term["kind"],
                                    "share": term["share"],
                                    "rate": _rounded(follow_rate(first, whole, rest)),
                                    "rank1": round(contrast(first, whole, rest), 5),
                                    "closest": round(contrast(closest, whole, rest), 5),
                                    "rank1_c": round(contrast(first, whole, rest, centroid), 5),
                                    "closest_c": round(contrast(closest, whole, rest, centroid), 5),
                                    "sentence": round(
                                        contrast(
                                            rows_s[int(np.argmax(rows_s @ whole))], whole, rest
                                        ),
                                        5,
                                    ),
                                }
                            )
                        # The control: the follow rate of the distinctive terms the quoted
                        # fragments hold as written (what a word the passage carries would show).
                        held = [
                            {
                                "word": t["text"],
                                "rate": _rounded(
                                    follow_rate(
                                        first, whole, _rest(rt.embedder, question, t["text"])
                                    )
                                ),
                            }
                            for t in relevance.get("terms", [])
                            if t.get("weight") and t.get("matched")
                        ]
                    rows.append(
                        {
                            "set": set_name,
                            "kind": kind,
                            "question": question,
                            "status": answer.status,
                            "verdict": relevance.get("verdict"),
                            "words": words,
                            "held": held,
                        }
                    )
    finally:
        service.close()
        rt.close()
    effects = {
        f"{measure}@{floor:.2f}": rule_effect(rows, measure, floor)
        for measure in MEASURES
        for floor in FLOORS
    }
    cost = {
        "embeddings": len(embed_seconds),
        "median_ms": round(1000 * float(np.median(embed_seconds)), 1) if embed_seconds else None,
        "sentence_calls": len(passage_seconds),
        "sentence_median_ms": round(1000 * float(np.median(passage_seconds)), 1)
        if passage_seconds
        else None,
    }
    return {"effects": effects, "cost": cost, "rows": rows}


def report(result: dict[str, Any]) -> None:
    console = Console()
    effects = result["effects"]
    names = list(next(iter(effects.values())))
    table = Table("measure @ share floor", *(f"{n}: gained / lost" for n in names))
    table.columns[0].no_wrap = True
    for rule, per in effects.items():
        table.add_row(rule, *(f"+{per[n]['gained']} / -{per[n]['lost']}" for n in names))
    console.print(table)
    cost = result["cost"]
    console.print(
        f"{cost['embeddings']} extra query embeddings (one per unmatched word), median "
        f"{cost['median_ms']} ms each; {cost['sentence_calls']} calls embedding sentences "
        f"(`sentence`), median {cost['sentence_median_ms']} ms each"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", type=Path, help="a demo workspace (tht demo --keep DIR)")
    parser.add_argument("--questions", type=Path, default=found_demo.QUESTIONS)
    parser.add_argument("--set", choices=list(found_demo.SETS), help="only this set")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sets = found_demo.load(args.questions)
    if args.set:
        sets = {args.set: sets[args.set]}
    else:
        sets = {name: cases for name, cases in sets.items() if name not in found_demo.SEALED}
    return emit(run(args.workspace, sets), args.json, report)


if __name__ == "__main__":
    sys.exit(main())
