"""The one fusion function every adapter and the answer path use (thoth.index.fusion.fuse)."""

from pathlib import Path

import pytest

from thoth.config import IndexSettings
from thoth.index.base import RRF_K, Fusion, Hit, IndexRecord
from thoth.index.bm25 import Bm25Encoder
from thoth.index.edge import EdgeStore
from thoth.index.fusion import fuse, fusion_from


def hits(*pairs: tuple[str, float]) -> list[Hit]:
    return [Hit(i, s, {"key": i}) for i, s in pairs]


DENSE = hits(("a", 0.9), ("b", 0.8), ("c", 0.7))
SPARSE = hits(("b", 12.0), ("d", 9.0), ("a", 3.0))


EQUAL_RRF = Fusion("rrf", RRF_K)  # Qdrant's RRF: k = 60, every branch weight 1


def ids(fused: list[Hit]) -> list[str]:
    return [h.id for h in fused]


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = fuse([DENSE, SPARSE], 10, Fusion("rrf", k=RRF_K))
    score = {h.id: h.score for h in fused}
    assert score["b"] == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert score["a"] == pytest.approx(1 / (RRF_K + 1) + 1 / (RRF_K + 3))
    assert score["d"] == pytest.approx(1 / (RRF_K + 2))
    assert ids(fused) == ["b", "a", "d", "c"]  # d is 2nd in its branch, c only 3rd


def test_ties_are_broken_by_id_whatever_the_branch_order() -> None:
    # mirror-image ranks: x is 1st + 2nd, y is 2nd + 1st -> equal RRF scores
    one = hits(("y", 1.0), ("x", 0.5))
    two = hits(("x", 1.0), ("y", 0.5))
    for fusion in (EQUAL_RRF, Fusion("dbsf")):
        assert ids(fuse([one, two], 2, fusion)) == ["x", "y"]
        assert ids(fuse([two, one], 2, fusion)) == ["x", "y"]
    # equal scores inside a branch: ranked by id, not by the order the engine returned
    same = hits(("q", 1.0), ("p", 1.0))
    assert ids(fuse([same], 2, EQUAL_RRF)) == ["p", "q"]


def test_weights_move_the_ranking() -> None:
    dense = hits(("a", 0.9), ("b", 0.1))
    sparse = hits(("b", 5.0), ("a", 1.0))
    assert ids(fuse([dense, sparse], 2, Fusion("rrf", 60, (2.0, 1.0))))[0] == "a"
    assert ids(fuse([dense, sparse], 2, Fusion("rrf", 60, (1.0, 2.0))))[0] == "b"
    assert ids(fuse([dense, sparse], 2, Fusion("dbsf", 60, (1.0, 0.0))))[0] == "a"
    # a zero weight silences a branch, but its hits are still candidates
    assert set(ids(fuse([dense, hits(("z", 3.0))], 3, Fusion("rrf", 60, (1.0, 0.0))))) == {
        "a",
        "b",
        "z",
    }


def test_n_branches_and_an_empty_branch() -> None:
    third = hits(("c", 2.0), ("e", 1.0))
    three = fuse([DENSE, SPARSE, third], 10, EQUAL_RRF)
    # c gains a 1st rank from the third branch: 1/(k+3) + 1/(k+1), a's very score; id decides
    assert ids(three)[:3] == ["b", "a", "c"]
    assert three[1].score == three[2].score
    for fusion in (EQUAL_RRF, Fusion("dbsf")):
        assert ids(fuse([DENSE, []], 10, fusion)) == ids(fuse([DENSE], 10, fusion))
        assert ids(fuse([DENSE, []], 10, fusion)) == ["a", "b", "c"]
        assert fuse([[], []], 10, fusion) == []
    assert ids(fuse([DENSE, []], 10)) == ["a", "b", "c"]  # the defaults: one weight per branch
    with pytest.raises(ValueError, match="2 fusion weights for 3 branches"):
        fuse([DENSE, SPARSE, third], 10, Fusion("rrf", 60, (1.0, 1.0)))


def test_dbsf_normalises_each_branch_by_its_own_distribution() -> None:
    # BM25 scores are ~10x the cosine ones: raw sums would let BM25 decide alone
    dense = hits(("a", 0.95), ("b", 0.50), ("c", 0.49), ("d", 0.48))
    sparse = hits(("b", 20.0), ("a", 19.5), ("c", 2.0), ("d", 1.0))
    fused = fuse([dense, sparse], 4, Fusion("dbsf"))
    assert ids(fused)[0] == "a"
    assert all(0.0 <= h.score <= 2.0 for h in fused)
    # one hit (sigma 0): 0.5, not a division by zero
    assert fuse([hits(("a", 3.0))], 1, Fusion("dbsf"))[0].score == 0.5


def test_limit_payload_and_validation() -> None:
    fused = fuse([DENSE, SPARSE], 2, EQUAL_RRF)
    assert len(fused) == 2 and fused[0].payload == {"key": fused[0].id}
    with pytest.raises(ValueError, match="unknown fusion method"):
        Fusion("sum")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be"):
        Fusion("rrf", 0)
    with pytest.raises(ValueError, match="weights must be"):
        Fusion("rrf", 60, (-1.0, 1.0))


def test_edge_query_hybrid_is_fuse_of_its_branches(tmp_path: Path) -> None:
    bm = Bm25Encoder("it", avg_len=5.0)
    texts = {
        "a": ("ricovero ordinario in reparto", [1.0, 0.0, 0.0]),
        "b": ("ricovero del paziente pediatrico", [0.6, 0.8, 0.0]),
        "c": ("dimissione del paziente", [0.0, 0.6, 0.8]),
        "d": ("triage in pronto soccorso", [0.0, 0.0, 1.0]),
    }
    store = EdgeStore.create(tmp_path / "s", 3)
    store.upsert(
        [
            IndexRecord(f"00000000-0000-0000-0000-00000000000{n}", v, bm.document(t), {"k": k})
            for n, (k, (t, v)) in enumerate(texts.items(), start=1)
        ]
    )
    dense, sparse = [0.2, 0.9, 0.4], bm.query("ricovero paziente")
    for fusion in (None, Fusion("rrf", 5, (0.3, 1.0)), Fusion("dbsf", 60, (1.0, 0.4))):
        expected = fuse(
            [store.query_dense(dense, {}, 10), store.query_sparse(sparse, {}, 10)], 3, fusion
        )
        got = store.query_hybrid(dense, sparse, {}, 3, 10, fusion)
        assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in expected]
    store.close()


def test_no_fusion_given_means_the_configured_defaults() -> None:
    for branches in ([DENSE, SPARSE], [DENSE, SPARSE, SPARSE[:1]]):
        configured = fusion_from(IndexSettings(), len(branches) - 1)
        assert fuse(branches, 10) == fuse(branches, 10, configured)
