"""GET /metrics: the answers served, the failures by code, the readers' reports, the open
knowledge gaps of sessions and the routines of `[schedule]` (late, failed, runs), in the
Prometheus text format (written by prometheus_client, never by hand).

Every figure is counted in SQL from the shared answer log and run tables at scrape time, so
each process of `tht serve` reports the same totals, whichever a scraper reaches; the counters
only grow while the log is kept. Caller "(local)" is the CLI and Python.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector, CollectorRegistry

from thoth.schedule.scheduler import Scheduler
from thoth.session.gaps import GapQueue
from thoth.state import StateStore
from thoth.state.stats import LOCAL_CALLER

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST


class AnswerLogCollector(Collector):
    """The answer log and the feedback of one workspace, read at each collection."""

    def __init__(self, state: StateStore, workspace: str) -> None:
        self._state = state
        self._workspace = workspace

    def collect(self) -> Iterator[Metric]:
        answers = CounterMetricFamily(
            "thoth_answers",
            "Answers served, by calling system and status.",
            labels=["caller", "status"],
        )
        failed = CounterMetricFamily(
            "thoth_answers_failed",
            "Failed answers, by calling system and error code.",
            labels=["caller", "code"],
        )
        dropped = CounterMetricFamily(
            "thoth_answers_context_dropped",
            "Answers whose context lost fragments or documents to the budget.",
            labels=["caller"],
        )
        degraded = CounterMetricFamily(
            "thoth_answers_degraded",
            "Answers served by a search that did without part of the engine.",
            labels=["caller"],
        )
        masked = CounterMetricFamily(
            "thoth_masked_values",
            "Values of computed figures the model received masked.",
            labels=["caller"],
        )
        feedback = CounterMetricFamily(
            "thoth_feedback", "Readers' reports on answers, by kind.", labels=["caller", "kind"]
        )
        by_status: dict[tuple[str, str], int] = {}
        by_code: dict[tuple[str, str], int] = {}
        per_caller: dict[str, list[int]] = {}
        for t in self._state.answer_totals(self._workspace):
            caller = t.caller or LOCAL_CALLER
            by_status[(caller, t.status)] = by_status.get((caller, t.status), 0) + t.answers
            if t.status == "failed":
                key = (caller, t.error_code or "unknown")
                by_code[key] = by_code.get(key, 0) + t.answers
            sums = per_caller.setdefault(caller, [0, 0, 0])
            sums[0] += t.context_dropped
            sums[1] += t.degraded
            sums[2] += t.masked_values
        for (caller, status), n in sorted(by_status.items()):
            answers.add_metric([caller, status], n)
        for (caller, code), n in sorted(by_code.items()):
            failed.add_metric([caller, code], n)
        for caller, (d, g, m) in sorted(per_caller.items()):
            dropped.add_metric([caller], d)
            degraded.add_metric([caller], g)
            masked.add_metric([caller], m)
        for caller, kind, n in sorted(
            (c or LOCAL_CALLER, k, n) for c, k, n in self._state.feedback_totals(self._workspace)
        ):
            feedback.add_metric([caller, kind], n)
        yield from (answers, failed, dropped, degraded, masked, feedback)


class GapCollector(Collector):
    """The curators' queue of knowledge gaps (thoth.session.gaps), read at each collection
    from the session ledgers: open gaps, by stage."""

    def __init__(self, gaps: GapQueue) -> None:
        self._gaps = gaps

    def collect(self) -> Iterator[Metric]:
        open_gaps = GaugeMetricFamily(
            "thoth_knowledge_gaps_open",
            "Knowledge gaps sessions recorded that no curator took yet, by stage.",
            labels=["stage"],
        )
        by_stage: dict[str, int] = {}
        for gap in self._gaps.open_gaps():
            by_stage[gap.stage] = by_stage.get(gap.stage, 0) + 1
        for stage, n in sorted(by_stage.items()):
            open_gaps.add_metric([stage], n)
        yield open_gaps


class ScheduleCollector(Collector):
    """The routines of `[schedule]`, read at each collection from the shared table of runs:
    whether each is late or its last run failed (gauges, 1 or 0), and its runs by status."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def collect(self) -> Iterator[Metric]:
        late = GaugeMetricFamily(
            "thoth_schedule_late",
            "1 when the routine's latest due run has not succeeded within its late_after.",
            labels=["routine"],
        )
        failed = GaugeMetricFamily(
            "thoth_schedule_failed",
            "1 when the routine's last finished run failed.",
            labels=["routine"],
        )
        runs = CounterMetricFamily(
            "thoth_schedule_runs",
            "Runs of the routines, by routine and status.",
            labels=["routine", "status"],
        )
        for status in self._scheduler.status():
            late.add_metric([status.name], int(status.late))
            failed.add_metric([status.name], int(status.failed))
        for routine, state, n in self._scheduler.queue.totals(self._scheduler.name):
            runs.add_metric([routine, state], n)
        yield from (late, failed, runs)


def exposition(
    state: StateStore,
    workspace: str,
    gaps: GapQueue | None = None,
    schedule: Scheduler | None = None,
) -> bytes:
    """The metrics page: one registry per scrape, holding the answer log's collector and,
    given them, the knowledge gaps' and the schedule's."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AnswerLogCollector(state, workspace))
    if gaps is not None:
        registry.register(GapCollector(gaps))
    if schedule is not None:
        registry.register(ScheduleCollector(schedule))
    return generate_latest(registry)
