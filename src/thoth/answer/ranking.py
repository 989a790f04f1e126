"""What happens to the fused candidates before they are served: the curated weight and the
verbatim floor. Pure functions of hits; the floor's deeper query stays under the same scope."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from thoth.index.base import Hit, deterministic_top
from thoth.index.records import CURATED_KINDS, RECORD_DOCUMENT


def kind_of(hit: Hit) -> str:
    return str(hit.payload.get("record_kind", ""))


def curated_weight(hits: Sequence[Hit], weight: float) -> list[Hit]:
    """Curated hits get `score * (1 + weight)`; sorted by (score desc, id) so ties always
    break the same way."""
    if weight:
        hits = [
            Hit(h.id, h.score * (1 + weight), h.payload) if kind_of(h) in CURATED_KINDS else h
            for h in hits
        ]
    return deterministic_top(list(hits), len(hits))


def verbatim_floor(
    ranked: list[Hit], top_k: int, floor: int, deeper: Callable[[], list[Hit]]
) -> tuple[list[Hit], set[str]]:
    """The served list: the top `top_k` of `ranked`, with at least `floor` raw document chunks
    when the scope holds them (the seed's verbatim floor: curated text never crowds out every
    source). `deeper` returns more document candidates under the same scope; it is called only
    when `ranked` has too few. Returns the list and the ids the floor added."""
    top = ranked[:top_k]
    floor = min(floor, top_k)
    missing = floor - sum(kind_of(h) == RECORD_DOCUMENT for h in top)
    if missing <= 0:
        return top, set()
    taken = {h.id for h in top}
    pool = [h for h in ranked if kind_of(h) == RECORD_DOCUMENT and h.id not in taken]
    if len(pool) < missing:
        seen = taken | {h.id for h in pool}
        pool += [h for h in deeper() if h.id not in seen]
    added = pool[:missing]
    return _make_room(top, len(added), top_k) + added, {h.id for h in added}


def _make_room(top: list[Hit], needed: int, top_k: int) -> list[Hit]:
    """`top` with room for `needed` floor chunks: free slots first, then the lowest-ranked
    curated hits leave."""
    drop = max(0, len(top) + needed - top_k)
    kept = list(top)
    for index in range(len(kept) - 1, -1, -1):
        if drop == 0:
            break
        if kind_of(kept[index]) in CURATED_KINDS:
            del kept[index]
            drop -= 1
    return kept
