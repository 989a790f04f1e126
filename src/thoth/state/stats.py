"""What the administrator sees of the answers served (`tht answers stats`, `tht verify`, the
service log): per day and per calling system, the answers by status, the failures by code,
the answers served with less than the whole engine (context dropped for the budget, a
degraded search), the values the model got masked, and what readers reported. Read from the
answer log and the feedback, so every process of `tht serve` and every `tht ask` is counted
once. `alerts` turns the rates above `[answers.alerts]` into warnings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from thoth.config import AlertSettings, Settings
from thoth.state.answers import LoggedAnswer
from thoth.state.feedback import Feedback
from thoth.state.store import StateStore

# The caller of an answer asked outside `tht serve` (the CLI, Python): the log records none.
LOCAL_CALLER = "(local)"
# Reports that say an answer was not right (a "good" one does not).
COMPLAINTS = ("wrong", "incomplete", "over_masked")


@dataclass
class Tally:
    day: str  # UTC date, ISO ("" for a window of several days)
    caller: str
    answers: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)  # error code -> answers
    context_dropped: int = 0  # answers whose context lost fragments or documents to the budget
    degraded: int = 0  # answers served by a search that did without part of the engine
    masked_answers: int = 0  # answers whose figures reached the model with values masked
    masked_values: int = 0  # the values masked, in all
    feedback: Counter[str] = field(default_factory=Counter)  # kind -> reports

    def rate(self, status: str) -> float:
        return self.statuses[status] / self.answers if self.answers else 0.0

    def share(self, count: int) -> float:
        return count / self.answers if self.answers else 0.0

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
            "masked_answers": self.masked_answers,
            "masked_values": self.masked_values,
            "feedback": dict(sorted(self.feedback.items())),
        }


def tally(
    answers: Iterable[LoggedAnswer], feedback: Iterable[Feedback] = (), *, by_day: bool = True
) -> list[Tally]:
    """One tally per (day, caller) that has answers or reports, in day then caller order;
    with `by_day` False, one per caller over everything given (day "")."""
    tallies: dict[tuple[str, str], Tally] = {}

    def of(when: Any, caller: str | None) -> Tally:
        key = (when.date().isoformat() if by_day else "", caller or LOCAL_CALLER)
        return tallies.setdefault(key, Tally(*key))

    for logged in answers:
        t = of(logged.created_at, logged.caller)
        t.answers += 1
        t.statuses[logged.status] += 1
        if logged.status == "failed":
            t.failed[logged.error_code or "unknown"] += 1
        t.context_dropped += logged.context_dropped
        t.degraded += logged.degraded
        t.masked_answers += logged.masked_values > 0
        t.masked_values += logged.masked_values
    for report in feedback:
        of(report.created_at, report.caller).feedback[report.kind] += 1
    return [tallies[k] for k in sorted(tallies)]


@dataclass(frozen=True)
class Alert:
    """A rate above its threshold for one caller over the alert window."""

    caller: str
    rate: str  # the setting's name: failed_rate, nothing_found_rate, ...
    value: float
    threshold: float
    answers: int

    def message(self) -> str:
        return (
            f"caller {self.caller}: {self.rate} {self.value:.1%} over {self.answers} answers is "
            f"above the threshold {self.threshold:.1%}"
        )


def alerts(tallies: Iterable[Tally], settings: AlertSettings) -> list[Alert]:
    """The rates of each tally (one per caller over the window) above their thresholds;
    a caller with fewer than `min_answers` answers raises none (a rate of 1 in 2 says
    nothing)."""
    found: list[Alert] = []
    for t in tallies:
        if t.answers < settings.min_answers:
            continue
        rates = {
            "failed_rate": t.rate("failed"),
            "nothing_found_rate": t.rate("nothing_found"),
            "context_dropped_rate": t.share(t.context_dropped),
            "degraded_rate": t.share(t.degraded),
            "masked_rate": t.share(t.masked_answers),
            "complaint_rate": t.share(sum(t.feedback[k] for k in COMPLAINTS)),
        }
        for name, value in rates.items():
            threshold = getattr(settings, name)
            if threshold is not None and value > threshold:
                found.append(Alert(t.caller, name, value, threshold, t.answers))
    return found


def window_start(days: int, now: datetime | None = None) -> datetime:
    """Midnight (UTC) of the first of the last `days` days, today included."""
    today = (now or datetime.now(UTC)).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - timedelta(days=days - 1)


def current_alerts(state: StateStore, settings: Settings) -> list[Alert]:
    """The alerts of `[answers.alerts]` over its window, one tally per caller."""
    config = settings.answers.alerts
    since = window_start(config.window_days)
    name = settings.workspace
    tallies = tally(
        state.answers_since(name, since), state.list_feedback(name, since=since), by_day=False
    )
    return alerts(tallies, config)
