"""The answer steps on their own: scope (one condition, labels fail closed), curated weight and
verbatim floor. The composition is tested through KnowledgeSearch in test_answer_retrieval."""

from __future__ import annotations

import pytest

from tests.knowledge_index import settings
from thoth.answer.ranking import curated_weight, verbatim_floor
from thoth.answer.request import SearchRequestError
from thoth.answer.scope import allowed_labels, check_names, scope
from thoth.index.base import Hit, Match


def hit(hid: str, score: float, kind: str) -> Hit:
    return Hit(hid, score, {"record_kind": kind})


def test_scope_excludes_every_label_not_allowed_including_ones_only_the_generation_holds() -> None:
    s = settings(labels=["public", "internal"], default_labels=["public"])
    request = {"year": 2022}
    got = scope(s, request, allowed_labels(s, request), present=["public", "retired-label"])
    assert got.where["labels"] == Match(any_of=("public",), none_of=("internal", "retired-label"))
    assert got.where["year"] == 2022 and got.readable["year"] == 2022
    assert got.where["record_kind"] == ["document", "wiki", "evidence"]
    routed = got.with_channel("clinica")
    assert routed.where["channel"] == "clinica" and "channel" not in got.where
    assert got.with_channel(None) is got


def test_an_empty_or_unknown_name_is_refused_not_an_open_scope() -> None:
    s = settings()
    with pytest.raises(SearchRequestError, match="empty list"):
        check_names(s, {"labels": []})
    with pytest.raises(SearchRequestError, match="unknown source 'intranet'"):
        check_names(s, {"source": "intranet"})


def test_curated_weight_lifts_curated_hits_and_breaks_ties_by_id() -> None:
    hits = [hit("d1", 1.0, "document"), hit("w1", 0.8, "wiki"), hit("d0", 1.0, "document")]
    assert [h.id for h in curated_weight(hits, 0.0)] == ["d0", "d1", "w1"]
    lifted = curated_weight(hits, 0.5)
    assert [h.id for h in lifted] == ["w1", "d0", "d1"]
    assert lifted[0].score == pytest.approx(1.2)


def test_verbatim_floor_brings_documents_in_place_of_the_lowest_curated_hits() -> None:
    ranked = [hit("w1", 3, "wiki"), hit("e1", 2, "evidence"), hit("w2", 1, "wiki")]
    deeper_calls: list[int] = []

    def deeper() -> list[Hit]:
        deeper_calls.append(1)
        return [hit("d1", 0.5, "document"), hit("d2", 0.4, "document")]

    top, added = verbatim_floor(ranked, top_k=3, floor=1, deeper=deeper)
    assert [h.id for h in top] == ["w1", "e1", "d1"] and added == {"d1"}
    assert deeper_calls == [1], "asked deeper only because the fused list had no document"
    top, added = verbatim_floor([*ranked, hit("d9", 0.1, "document")], 3, 1, deeper)
    assert [h.id for h in top] == ["w1", "e1", "d9"] and deeper_calls == [1]
    top, added = verbatim_floor(ranked, top_k=3, floor=0, deeper=deeper)
    assert [h.id for h in top] == ["w1", "e1", "w2"] and added == set()
