"""When a routine is due: `at` in a zone (with its clock changes) and `every` from the epoch."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from thoth.config import RoutineSettings, ScheduleSettings
from thoth.schedule.timing import Timing


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def at(time: str, zone: str = "Europe/Rome") -> Timing:
    return Timing.of(RoutineSettings(name="r", routine="docs_sync", at=time), zone)


def every(interval: str) -> Timing:
    return Timing.of(RoutineSettings(name="r", routine="docs_sync", every=interval), "UTC")


def test_a_daily_time_is_the_local_time_of_each_day() -> None:
    rome = at("02:30")
    # winter: Rome is UTC+1
    assert rome.latest(utc("2026-01-10T12:00")) == utc("2026-01-10T01:30")
    assert rome.latest(utc("2026-01-10T01:00")) == utc("2026-01-09T01:30")
    assert rome.next(utc("2026-01-10T01:30")) == utc("2026-01-11T01:30")
    # summer: UTC+2
    assert rome.latest(utc("2026-07-10T12:00")) == utc("2026-07-10T00:30")


def test_a_time_the_clock_change_skips_runs_an_hour_later_and_a_repeated_one_once() -> None:
    rome = at("02:30")
    # 2026-03-29: 02:00 -> 03:00 in Rome; 02:30 does not exist, it runs at 03:30 CEST
    assert rome.latest(utc("2026-03-29T12:00")) == utc("2026-03-29T01:30")
    # 2026-10-25: 03:00 -> 02:00; 02:30 happens twice, the first (CEST) counts
    assert rome.latest(utc("2026-10-25T12:00")) == utc("2026-10-25T00:30")
    assert rome.next(utc("2026-10-25T00:30")) == utc("2026-10-26T01:30")


def test_an_interval_counts_from_the_epoch_whoever_computes_it() -> None:
    six = every("6h")
    assert six.latest(utc("2026-05-01T13:59")) == utc("2026-05-01T12:00")
    assert six.next(utc("2026-05-01T13:59")) == utc("2026-05-01T18:00")
    assert every("15m").latest(utc("2026-05-01T13:59:59")) == utc("2026-05-01T13:45")
    assert every("1d").latest(utc("2026-05-01T13:59")) == utc("2026-05-01T00:00")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"at": "02:30", "every": "1h"}, "exactly one of at"),
        ({}, "exactly one of at"),
        ({"at": "24:00"}, "pattern"),
        ({"at": "2:30"}, "pattern"),
        ({"every": "0h"}, "pattern"),
        ({"every": "1w"}, "pattern"),
        ({"every": "1h", "routine": "reindex"}, "docs_sync"),
    ],
)
def test_a_routine_without_one_exact_time_is_refused(fields: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        RoutineSettings.model_validate({"name": "r", "routine": "docs_sync", **fields})


def test_an_unknown_zone_and_two_routines_of_one_name_are_refused() -> None:
    with pytest.raises(ValidationError, match="unknown time zone 'Europe/Atlantis'"):
        ScheduleSettings(timezone="Europe/Atlantis")
    one = {"name": "nightly", "routine": "docs_sync", "at": "02:30"}
    with pytest.raises(ValidationError, match="names must be unique: nightly"):
        ScheduleSettings.model_validate({"routines": [one, one]})
