"""Routing of a text question: where to look (seed 004). Whether a question is one for the
analytics store is decided before, by the catalog (thoth.analytics: the first fork). A text
question is compared with a few curated example questions per channel, with the same
mechanism as search (dense embeddings, query mode on both sides): the closest channel wins if
it clears a threshold calibrated on labelled questions and leads the runner-up by a calibrated
margin; below the threshold, or with a lead within the margin, every channel is searched (when
uncertain, widen instead of emptying). When the embedder does not answer, the channels'
keywords decide instead, and only channels that have documents compete.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
import yaml

from thoth.config import ChannelSettings
from thoth.embed.base import Embedder, EmbedderError, Vectors
from thoth.errors import ConfigError, ThothError
from thoth.folding import fold
from thoth.index.bm25 import Bm25Encoder
from thoth.markup import load_yaml

RouteKind = Literal["text"]  # numbers are decided before (thoth.analytics, the first fork)
# "tied": the closest channels by similarity within the margin, searched together.
ChannelSource = Literal["request", "similarity", "keywords", "tied", "all"]


@dataclass(frozen=True)
class Route:
    """Where a question goes: one `channel`, the `tied` channels together (channel_source
    "tied"), or every channel (channel None, nothing tied by similarity)."""

    kind: RouteKind = "text"
    channel: str | None = None
    channel_source: ChannelSource = "all"
    scores: dict[str, float] = field(default_factory=dict)  # channel -> best example cosine
    threshold: float = 0.0
    keyword_matches: dict[str, list[str]] = field(default_factory=dict)  # fallback only
    # Channels tied at the top: equal keyword matches in the fallback (every channel is then
    # searched), or by similarity the closest and every channel within `margin` of it (those
    # are searched together).
    tied: tuple[str, ...] = ()
    margin: float = 0.0
    embedder_error: str | None = None  # why the keywords decided instead of similarity

    @property
    def searched(self) -> str | list[str] | None:
        """The channel condition of the search: one channel, the tied ones, or None (all)."""
        if self.channel is not None:
            return self.channel
        return list(self.tied) if self.channel_source == "tied" else None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["scores"] = {k: round(v, 4) for k, v in self.scores.items()}
        data["tied"] = list(self.tied)
        return data


class ChannelRouter:
    def __init__(
        self,
        channels: Sequence[ChannelSettings],
        embedder: Embedder,
        threshold: float,
        *,
        margin: float = 0.0,
        language: str = "it",
    ) -> None:
        self._embedder = embedder
        self.threshold = threshold
        self.margin = margin
        # BM25's own analyser (stopwords, stemmer) turns keywords and questions into stems, so
        # "ricoveri" matches the keyword "ricovero".
        self._stems = Bm25Encoder(language, 1.0)
        self._examples: dict[str, Vectors] = {}
        self._fingerprint: str | None = None  # of the texts `_examples` were computed from
        self.channels: tuple[ChannelSettings, ...] = ()
        self.set_channels(channels)

    def set_channels(self, channels: Sequence[ChannelSettings]) -> None:
        """Replace the channels; their examples are embedded again only if their texts changed."""
        self.channels = tuple(channels)

    def fingerprint(self) -> str:
        """Of the embedder identity and every channel's example texts: what the example vectors
        depend on."""
        framed = json.dumps(
            [self._embedder.identity, [[c.name, list(c.examples)] for c in self.channels]],
            ensure_ascii=True,
        )
        return hashlib.sha256(framed.encode("ascii")).hexdigest()

    def _example_vectors(self) -> dict[str, Vectors]:
        fingerprint = self.fingerprint()
        if fingerprint != self._fingerprint:
            # Built aside and swapped in whole: a failure half-way leaves nothing half-cached.
            fresh = {
                c.name: np.vstack([self._embedder.embed_query(text) for text in c.examples])
                for c in self.channels
            }
            self._examples, self._fingerprint = fresh, fingerprint
        return self._examples

    def scores(self, question: str, *, query_vector: Vectors | None = None) -> dict[str, float]:
        """Channel -> highest cosine between the question and the channel's examples.

        One embedding call for the question (none when `query_vector` is given); raises
        EmbedderError when the embedder does not answer."""
        examples = self._example_vectors()
        if not examples:
            return {}
        vector = self._embedder.embed_query(question) if query_vector is None else query_vector
        row = np.asarray(vector, dtype=np.float32).reshape(-1)
        # Rows are unit length (finish_vectors), so the dot product is the cosine.
        return {name: float(np.max(matrix @ row)) for name, matrix in examples.items()}

    def route(
        self,
        question: str,
        *,
        channels_with_documents: Collection[str],
        query_vector: Vectors | None = None,
    ) -> Route:
        """By similarity (the channels within the margin of the closest together); by keywords
        when the embedder fails. Only channels with documents
        can win: routing to an empty channel would empty the answer instead of widening."""
        if not self.channels:
            return Route(threshold=self.threshold)
        try:
            scores = self.scores(question, query_vector=query_vector)
        except EmbedderError as exc:
            return self.route_by_keywords(
                question, channels_with_documents=channels_with_documents, reason=str(exc)
            )
        competing = [(s, name) for name, s in scores.items() if name in channels_with_documents]
        if competing:
            # Highest score first; equal scores by name, so the same question routes the same.
            best_score, best = min(competing, key=lambda p: (-p[0], p[1]))
            # A runner-up within the margin: the closest channel is no evidence of where the
            # answer is (the demo's "bed manager" question led the wrong channel by 0.01).
            close = sorted(n for s, n in competing if n != best and best_score - s < self.margin)
            if best_score >= self.threshold and close:
                return Route(
                    channel_source="tied",
                    scores=scores,
                    threshold=self.threshold,
                    tied=tuple(sorted([best, *close])),
                    margin=self.margin,
                )
            if best_score >= self.threshold:
                return Route(
                    channel=best,
                    channel_source="similarity",
                    scores=scores,
                    threshold=self.threshold,
                    margin=self.margin,
                )
        return Route(
            channel_source="all", scores=scores, threshold=self.threshold, margin=self.margin
        )

    def route_by_keywords(
        self, question: str, *, channels_with_documents: Collection[str], reason: str
    ) -> Route:
        """The fallback: the channel whose keywords the question holds most; a tie or no match
        searches every channel."""
        asked = set(self._stems.query(fold(question)).indices)
        matches: dict[str, list[str]] = {}
        for channel in self.channels:
            if channel.name not in channels_with_documents:
                continue
            hits = []
            for keyword in channel.keywords:
                stems = set(self._stems.query(fold(keyword)).indices)
                if stems and stems <= asked:
                    hits.append(keyword)
            if hits:
                matches[channel.name] = hits
        if not matches:
            return Route(threshold=self.threshold, embedder_error=reason)
        top = max(len(h) for h in matches.values())
        leaders = tuple(sorted(name for name, h in matches.items() if len(h) == top))
        if len(leaders) > 1:
            return Route(
                keyword_matches=matches,
                tied=leaders,
                threshold=self.threshold,
                embedder_error=reason,
            )
        return Route(
            channel=leaders[0],
            channel_source="keywords",
            keyword_matches=matches,
            threshold=self.threshold,
            embedder_error=reason,
        )


# -- calibration ---------------------------------------------------------------------------


@dataclass
class Calibration:
    """Score distributions of a labelled question set and the threshold they suggest.

    `in_domain`: best score of in-domain questions whose closest channel is the expected one;
    `out_of_domain`: best score of out-of-domain questions. In-domain questions whose closest
    channel is another one are `misrouted` (no threshold fixes them: their examples do)."""

    in_domain: list[float]
    out_of_domain: list[float]
    threshold: float
    accuracy: float
    per_question: list[dict[str, Any]]
    separated: bool = False  # every in-domain score above every out-of-domain one
    misrouted: list[dict[str, Any]] = field(default_factory=list)
    # Leave-one-out: the share of new wordings of the in-domain questions routed right.
    expected_routed: Estimate | None = None
    # The lead over the runner-up a route needs (`suggest_margin`), and how many in-domain
    # questions routed right lead by less (searched in every channel instead).
    margin: float = 0.0
    widened: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "threshold": round(self.threshold, 4),
            "margin": round(self.margin, 4),
            "widened": self.widened,
            "accuracy": round(self.accuracy, 4),
            "separated": self.separated,
            "expected_routed": None
            if self.expected_routed is None
            else self.expected_routed.as_dict(),
            "in_domain": distribution(self.in_domain),
            "out_of_domain": distribution(self.out_of_domain),
            "misrouted": self.misrouted,
            "per_question": self.per_question,
        }


def distribution(values: Sequence[float]) -> dict[str, Any]:
    """n, min, p10, p50, p90, max (None when empty)."""
    if not values:
        return {"n": 0, "min": None, "p10": None, "p50": None, "p90": None, "max": None}
    ordered = sorted(values)
    quantiles = np.quantile(np.asarray(ordered, dtype=np.float64), [0.1, 0.5, 0.9])
    return {
        "n": len(ordered),
        "min": round(ordered[0], 4),
        "p10": round(float(quantiles[0]), 4),
        "p50": round(float(quantiles[1]), 4),
        "p90": round(float(quantiles[2]), 4),
        "max": round(ordered[-1], 4),
    }


# Two-sided 95 % Student t quantiles (df 1..30; beyond, the normal's 1.96): the one-sided
# 97.5 % bound of a prediction interval.
_T975: Final = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip

# Fewer positives than this give no spread to estimate a new one from.
MIN_POSITIVES: Final = 3


def prediction_floor(values: Sequence[float]) -> float:
    """The score a new question of the same kind reaches with 97.5 % confidence (the lower
    bound of a prediction interval from the values' mean and spread): where a threshold must
    sit to hold for questions the calibration set did not contain, when nothing on the other
    side pushes it up. Never above the lowest value itself (a bound, not a cut through the
    set). A lowest value under the bound keeps the cut just under it and no lower: on the
    demo's catalog a cut one predictive standard deviation under it computed a wrong number
    (benchmarks/README.md, analytics_heldout.py), and no wrong number weighs more than a
    miss."""
    n = len(values)
    if n < MIN_POSITIVES:
        raise ThothError(
            f"a threshold that holds for new questions needs at least {MIN_POSITIVES} "
            f"positive questions to measure their spread; the set has {n}"
        )
    arr = np.asarray(values, dtype=np.float64)
    t = _T975[n - 2] if n - 1 <= len(_T975) else 1.96
    bound = float(arr.mean() - t * arr.std(ddof=1) * np.sqrt(1 + 1 / n))
    return min(bound, float(arr.min()) - 0.001)


@dataclass(frozen=True)
class Estimate:
    """Leave-one-out: each positive question left out, the cut set from the others, and
    whether it would still be accepted. The share estimates what new wordings of the same
    questions would get; `of` counts every positive of the set, right or not."""

    accepted: int
    of: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": "leave-one-out",
            "accepted": self.accepted,
            "of": self.of,
            "share": round(self.accepted / self.of, 4) if self.of else None,
        }


def leave_one_out(
    positives: Sequence[float | None], cut: Callable[[Sequence[float]], float]
) -> Estimate:
    """`positives`: every positive question's score (None: never accepted, whatever the cut:
    routed elsewhere or refused by a gate); `cut`: the calibration's own rule, given the
    other positives' scores."""
    accepted = 0
    for i, score in enumerate(positives):
        if score is None:
            continue
        others = [s for j, s in enumerate(positives) if j != i and s is not None]
        try:
            accepted += score >= cut(others)
        except ThothError:
            continue  # too few others to set a cut: not counted as accepted
    return Estimate(accepted, len(positives))


def calibrate(router: ChannelRouter, labelled: Sequence[tuple[str, str | None]]) -> Calibration:
    """Score every labelled question (expected channel, or None for out of domain) and pick
    the threshold: the midpoint of the gap between the two distributions when they are
    separated, else the value with the best accuracy (in domain: routed to the expected
    channel; out of domain: every channel searched). Raises EmbedderError when the embedder
    does not answer: a calibration without embeddings means nothing."""
    names = [c.name for c in router.channels]
    if not names:
        raise ConfigError("no [[channels]] declared in thoth.toml: there is nothing to calibrate")
    for index, (_, expected) in enumerate(labelled):
        if expected is not None and expected not in names:
            raise ThothError(
                f"calibration entry {index}: channel {expected!r} is not declared "
                f"(declared: {', '.join(names)}) -> fix the entry or declare the channel"
            )
    if not any(e is not None for _, e in labelled) or not any(e is None for _, e in labelled):
        raise ThothError(
            "calibration needs in-domain questions (with a channel) and out-of-domain "
            "questions (channel null): add the missing kind to the labelled set"
        )
    rows: list[dict[str, Any]] = []
    for question, expected in labelled:
        scores = router.scores(question)
        ranked = sorted(scores.values(), reverse=True)
        best_score, best = min((-s, n) for n, s in scores.items())
        rows.append(
            {
                "question": question,
                "expected": expected,
                "closest": best,
                "score": round(-best_score, 4),
                # How far the closest channel is ahead of the next one.
                "lead": round(ranked[0] - ranked[1], 4) if len(ranked) > 1 else None,
                "_score": -best_score,
            }
        )
    in_domain = [
        r["_score"] for r in rows if r["expected"] is not None and r["closest"] == r["expected"]
    ]
    out_domain = [r["_score"] for r in rows if r["expected"] is None]
    threshold, separated = _channel_threshold(rows)
    # How new wordings of the in-domain questions would route: each left out in turn, the
    # threshold set from the others, and routed to its channel or not.
    estimate = Estimate(
        sum(
            row["closest"] == row["expected"]
            and row["_score"] >= _channel_threshold(rows[:i] + rows[i + 1 :])[0]
            for i, row in enumerate(rows)
            if row["expected"] is not None
        ),
        sum(r["expected"] is not None for r in rows),
    )
    correct = 0
    for row in rows:
        routed = row["closest"] if row["_score"] >= threshold else None
        row["routed"] = routed
        row["correct"] = routed == row["expected"]
        correct += row["correct"]
    misrouted = [
        {k: row[k] for k in ("question", "expected", "closest", "score")}
        for row in rows
        if row["expected"] is not None and row["closest"] != row["expected"]
    ]
    leads = [
        float(r["lead"])
        for r in rows
        if r["expected"] is not None and r["closest"] == r["expected"] and r["lead"] is not None
    ]
    margin = suggest_margin(leads)
    for row in rows:
        del row["_score"]
    return Calibration(
        in_domain=in_domain,
        out_of_domain=out_domain,
        threshold=threshold,
        accuracy=correct / len(rows),
        per_question=rows,
        separated=separated,
        misrouted=misrouted,
        expected_routed=estimate,
        margin=margin,
        widened=sum(lead < margin for lead in leads),
    )


def suggest_margin(leads: Sequence[float]) -> float:
    """The lead over the runner-up a route needs: one spread (standard deviation) of the
    leads of the in-domain questions routed right. A new wording's lead scatters about as
    theirs do, so a lead within one spread of nothing says little about the channel; a
    misrouted question is one whose lead fell below zero, almost always by less than that
    (the demo's own labelled set: spread 0.028, its one misrouted question -0.001). Fewer
    than MIN_POSITIVES leads have no spread: 0 (route on the threshold alone)."""
    if len(leads) < MIN_POSITIVES:
        return 0.0
    return float(np.std(np.asarray(leads, dtype=np.float64), ddof=1))


def _channel_threshold(rows: list[dict[str, Any]]) -> tuple[float, bool]:
    """The midpoint of the gap when in-domain and out-of-domain scores are separated, else
    the best accuracy (see calibrate)."""
    in_domain = [
        r["_score"] for r in rows if r["expected"] is not None and r["closest"] == r["expected"]
    ]
    out_domain = [r["_score"] for r in rows if r["expected"] is None]
    if in_domain and out_domain and min(in_domain) > max(out_domain):
        return (min(in_domain) + max(out_domain)) / 2, True
    return _best_accuracy_threshold(rows), False


def _best_accuracy_threshold(rows: list[dict[str, Any]]) -> float:
    """The candidate cut (midpoints between observed scores, and just outside them) with the
    best accuracy; among equals the one in the widest gap, then the lowest."""
    values = sorted({r["_score"] for r in rows})
    cuts: list[tuple[float, float]] = [(values[0] - 0.01, 0.0), (values[-1] + 0.01, 0.0)]
    cuts += [((a + b) / 2, b - a) for a, b in itertools.pairwise(values)]

    def accuracy(cut: float) -> int:
        return sum((r["closest"] if r["_score"] >= cut else None) == r["expected"] for r in rows)

    best = min(cuts, key=lambda c: (-accuracy(c[0]), -c[1], c[0]))[0]
    return max(-1.0, min(1.0, best))


@dataclass
class RelevanceCalibration:
    """Where the relevance floor (`answers.min_similarity`) belongs: the closest fragment's
    dense similarity for in-domain questions vs out-of-domain ones."""

    in_domain: list[float]
    out_of_domain: list[float]
    threshold: float
    separated: bool
    accuracy: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "in_domain": distribution(self.in_domain),
            "out_of_domain": distribution(self.out_of_domain),
            "threshold": round(self.threshold, 4),
            "separated": self.separated,
            "accuracy": round(self.accuracy, 4),
        }


def split_threshold(positives: Sequence[float], negatives: Sequence[float]) -> RelevanceCalibration:
    """The cut with positives at or above and negatives below: the midpoint of the gap when the
    two are separated, else the cut with the best accuracy (the lowest among equals: when in
    doubt, widen)."""
    if not positives or not negatives:
        raise ThothError("a threshold needs in-domain and out-of-domain questions")
    separated = min(positives) > max(negatives)
    if separated:
        threshold = (min(positives) + max(negatives)) / 2
    else:
        values = sorted({*positives, *negatives})
        cuts = [values[0] - 0.01] + [(a + b) / 2 for a, b in itertools.pairwise(values)]
        threshold = max(
            cuts,
            key=lambda cut: (
                sum(v >= cut for v in positives) + sum(v < cut for v in negatives),
                -cut,
            ),
        )
    right = sum(v >= threshold for v in positives) + sum(v < threshold for v in negatives)
    return RelevanceCalibration(
        list(positives),
        list(negatives),
        threshold,
        separated,
        right / (len(positives) + len(negatives)),
    )


def load_calibration_set(path: Path) -> list[tuple[str, str | None]]:
    """A YAML list of `{question, channel}` (channel null or absent: out of domain), or a
    mapping whose `questions` key holds that list."""
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ThothError(
            f"{path}: cannot read the calibration set ({exc}) -> create it or pass --set"
        ) from exc
    except yaml.YAMLError as exc:
        raise ThothError(f"{path}: not valid YAML ({exc}) -> fix the syntax") from exc
    if isinstance(data, dict) and set(data) == {"questions"}:
        data = data["questions"]
    if data is None or data == []:
        raise ThothError(
            f"{path}: no labelled questions yet -> add in-domain questions with their channel "
            "and out-of-domain ones with `channel: null` (the comments `tht init` wrote there "
            "show the format)"
        )
    if not isinstance(data, list) or not data:
        raise ThothError(
            f"{path}: expected a non-empty list of {{question, channel}} entries "
            "(channel null for out-of-domain questions)"
        )
    labelled: list[tuple[str, str | None]] = []
    for index, entry in enumerate(data):
        where = f"{path}: entry {index}"
        if not isinstance(entry, dict):
            raise ThothError(f"{where}: expected a mapping with `question` and `channel`")
        unknown = sorted(set(entry) - {"question", "channel"})
        if unknown:
            raise ThothError(
                f"{where}: unknown key(s) {', '.join(map(str, unknown))} "
                "(accepted: question, channel)"
            )
        question, channel = entry.get("question"), entry.get("channel")
        if not isinstance(question, str) or not question.strip():
            raise ThothError(f"{where}: `question` must be a non-empty string")
        if channel is not None and not isinstance(channel, str):
            raise ThothError(f"{where}: `channel` must be a channel name or null")
        labelled.append((question.strip(), channel))
    return labelled
