"""What the administrator sees of the answers served (`tht answers stats`): per day and per
calling system, the answers by status, the failures by code, and the answers that were served
with less than the whole engine (context dropped for the budget, a degraded search). Read from
the answer log, so every process of `tht serve` and every `tht ask` is counted once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from thoth.state import LoggedAnswer

# The caller of an answer asked outside `tht serve` (the CLI, Python): the log records none.
LOCAL_CALLER = "(local)"


@dataclass
class Tally:
    day: str  # UTC date, ISO
    caller: str
    answers: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)  # error code -> answers
    context_dropped: int = 0  # answers whose context lost fragments or documents to the budget
    degraded: int = 0  # answers served by a search that did without part of the engine

    def rate(self, status: str) -> float:
        return self.statuses[status] / self.answers if self.answers else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "day": self.day,
            "caller": self.caller,
            "answers": self.answers,
            "statuses": dict(sorted(self.statuses.items())),
            "nothing_found_rate": round(self.rate("nothing_found"), 4),
            "failed_rate": round(self.rate("failed"), 4),
            "failed_by_code": dict(sorted(self.failed.items())),
            "context_dropped": self.context_dropped,
            "degraded": self.degraded,
        }


def tally(answers: Iterable[LoggedAnswer]) -> list[Tally]:
    """One tally per (day, caller) that has answers, in day then caller order."""
    tallies: dict[tuple[str, str], Tally] = {}
    for logged in answers:
        key = (logged.created_at.date().isoformat(), logged.caller or LOCAL_CALLER)
        t = tallies.setdefault(key, Tally(*key))
        t.answers += 1
        t.statuses[logged.status] += 1
        if logged.status == "failed":
            t.failed[logged.error_code or "unknown"] += 1
        dropped = logged.answer.get("dropped") or {}
        if dropped.get("fragments") or dropped.get("documents"):
            t.context_dropped += 1
        if logged.answer.get("degraded"):
            t.degraded += 1
    return [tallies[k] for k in sorted(tallies)]
