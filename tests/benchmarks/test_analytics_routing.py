"""The pure parts of benchmarks/analytics_routing.py: reading an answer and scoring it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from analytics_routing import observe, score, summarise

COVERED: dict[str, Any] = {
    "id": "c",
    "kind": "covered",
    "expect": {
        "query": "degenza-media-per-reparto",
        "parameters": {"anno": 2023, "reparto": "Geriatria"},
        "first_row": {"reparto": "Geriatria", "degenza_media_giorni": 15.3},
    },
}


def computed(query: str, parameters: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    return {
        "status": "computed",
        "text": "...",
        "provenance": {"query_id": query, "parameters": parameters},
        "figures": {"columns": list(row), "rows": [list(row.values())]},
    }


def test_a_covered_question_scores_routing_parameters_and_values_apart() -> None:
    right = computed(
        "degenza-media-per-reparto",
        {"anno": 2023, "reparto": "Geriatria"},
        {"reparto": "Geriatria", "degenza_media_giorni": 15.3, "ricoveri": 10},
    )
    assert score(COVERED, observe(right)) == {
        "routing": True,
        "parameters": True,
        "values": True,
        "facts": None,
    }
    wrong_year = computed(
        "degenza-media-per-reparto",
        {"anno": 2024, "reparto": "Geriatria"},
        {"reparto": "Geriatria", "degenza_media_giorni": 12.0},
    )
    assert score(COVERED, observe(wrong_year))["parameters"] is False
    assert score(COVERED, observe(wrong_year))["values"] is False
    other = computed("ricoveri-per-reparto", {"anno": 2023}, {"reparto": "Geriatria"})
    assert score(COVERED, observe(other))["routing"] is False


def test_text_and_refusals_are_routes_of_their_own() -> None:
    text_case: dict[str, Any] = {"id": "t", "kind": "text", "expect": {"facts": ["15 minuti"]}}
    found = {"status": "found", "text": "Codice 2: visita entro 15  Minuti."}
    assert score(text_case, observe(found)) == {
        "routing": True,
        "parameters": None,
        "values": None,
        "facts": True,
    }
    refused = {"status": "not_searched", "text": "Questa è una domanda numerica."}
    assert score(text_case, observe(refused))["routing"] is False
    asked = {"status": "needs_parameter", "needs_parameter": {"query_id": "q", "missing": ["anno"]}}
    need: dict[str, Any] = {
        "id": "n",
        "kind": "needs_parameter",
        "expect": {"query": "q", "missing": "anno"},
    }
    assert score(need, observe(asked))["routing"] is True
    results = [
        {"kind": "text", "score": score(text_case, observe(found))},
        {"kind": "needs_parameter", "score": score(need, observe(refused))},
    ]
    table = summarise(results)
    assert table["all"]["routing"] == {"hits": 1, "of": 2, "rate": 0.5}
    assert table["text"]["facts"] == {"hits": 1, "of": 1, "rate": 1.0}
