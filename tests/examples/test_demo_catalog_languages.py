"""The demo's catalog follows docs/analytics.md, "Write for the words users use": every name
its catalog gives a ward or a triage colour (the store's Italian value, its Italian and
English synonyms) computes with that value, in an Italian question and in an English one.
Questions generated from the catalog's own names, decided by the product's decision at the
demo's configured threshold, on the demo's store."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import NamedTuple

import pytest
import yaml

from tests.conftest import EXAMPLES
from thoth.analytics.branch import ServedCatalog, serve
from thoth.analytics.catalog import load_catalog_files
from thoth.analytics.decide import Vocabulary, decide
from thoth.analytics.extract import Matcher
from thoth.analytics.routing import OfflineRouter
from thoth.cli.demo import build_analytics, build_warehouse
from thoth.runtime import open_analytics_store, open_embedder
from thoth.workspace import Workspace


class Demo(NamedTuple):
    ws: Workspace
    served: ServedCatalog
    router: OfflineRouter
    vocab: Vocabulary


# (query, parameter, Italian frame, English frame): {name} is a name of the value, {code} a
# triage colour said with its word.
FRAMES = (
    (
        "degenza-media-per-reparto",
        "reparto",
        "Degenza media di {name} nel 2023",
        "Average length of stay in {name} in 2023",
    ),
    (
        "accessi-ps-per-triage",
        "codice_triage",
        "Quanti accessi in {code} al pronto soccorso nel 2024?",
        "How many {code} visits to the emergency department in 2024?",
    ),
)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    root = tmp_path_factory.mktemp("demo-catalog") / "ws"
    shutil.copytree(EXAMPLES / "clinical-dwh", root)
    build_warehouse(root)
    build_analytics(root)
    ws = Workspace.open(root)
    store = open_analytics_store(ws)
    served = serve(load_catalog_files(root, store.settings.catalog), store, {})
    yield Demo(
        ws,
        served,
        OfflineRouter(open_embedder(ws)),
        served.vocabulary(Matcher(ws.settings.language)),
    )


def _cases() -> list[tuple[str, str, str, str]]:
    cases = []
    for query, param, italian, english in FRAMES:
        spec = yaml.safe_load(
            (EXAMPLES / f"clinical-dwh/analytics/queries/{query}.yaml").read_text()
        )
        synonyms: dict[str, list[str]] = spec["parameters"][param]["synonyms"]
        for value, names in synonyms.items():
            for name in (value, *names):
                for frame in (italian, english):
                    # "codice 1" is said whole; a colour with its word ("codice rosso", "red code")
                    code = name if name.startswith("codice") else None
                    said = code or (f"codice {name}" if frame is italian else f"{name} code")
                    cases.append((query, param, value, frame.format(name=name, code=said)))
    return cases


@pytest.mark.parametrize(("query", "param", "value", "question"), _cases())
def test_every_name_of_a_value_computes_with_it_in_both_languages(
    demo: Demo, query: str, param: str, value: str, question: str
) -> None:
    ws, served, router, vocab = demo
    settings = ws.settings.analytics
    assert settings is not None
    scores = router.scores(question, served.queries)
    decision = decide(
        question,
        served.queries,
        scores,
        served.choices,
        vocab,
        settings.threshold,
        settings.tie_margin,
    )
    assert decision.query_id == query, (decision.outcome, decision.reason)
    assert decision.extraction is not None
    assert decision.extraction.values[param] == value
