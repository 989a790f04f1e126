"""`tht analytics calibrate` on a workspace: the working tree's catalog, served with the
values its store holds and the committed glossary's synonyms, decided question by question as
the answer path decides (thoth.analytics.decide) with no threshold, then cut
(thoth.analytics.routing.calibrate)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from thoth.analytics.branch import serve
from thoth.analytics.catalog import load_catalog_files
from thoth.analytics.decide import Decision, decide
from thoth.analytics.extract import Matcher
from thoth.analytics.glossary import glossary_synonyms
from thoth.analytics.routing import OfflineRouter, QueryCalibration, calibrate
from thoth.analytics.store import AnalyticsStore
from thoth.embed.base import Embedder, EmbedderError
from thoth.errors import ThothError


def calibrate_catalog(
    root: Path,
    store: AnalyticsStore,
    embedder: Embedder,
    language: str,
    labelled: Sequence[tuple[str, str | None, bool]],
) -> QueryCalibration:
    """The workspace at `root` (its store and embedder opened by the caller). Raises
    ThothError when the embedder does not answer or the set cannot calibrate."""
    catalog = load_catalog_files(root, store.settings.catalog)
    served = serve(catalog, store, glossary_synonyms(root, "HEAD"))
    vocab = served.vocabulary(Matcher(language))
    try:
        router = OfflineRouter(embedder)

        def decide_one(question: str) -> Decision:
            scores = router.scores(question, served.queries)
            return decide(question, served.queries, scores, served.choices, vocab, -math.inf, 0.0)

        return calibrate(labelled, served.queries, decide_one)
    except EmbedderError as exc:
        raise ThothError(
            f"the embedder did not answer ({exc}) -> calibration needs embeddings"
        ) from exc
