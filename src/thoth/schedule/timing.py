"""When a routine is due: the instants of `at` (a time of day in a time zone) and `every` (an
interval counted from 1970-01-01T00:00Z), as UTC instants every host computes alike.

A run is keyed by its due instant, so the instants must not depend on when or where they are
computed: `every` is anchored at the epoch, not at the scheduler's start, and `at` is the
wall-clock time of each local day converted with the zone's rules. A time that a clock change
skips (02:30 when clocks go 02:00 -> 03:00) is the instant an hour later; a time it repeats is
its first occurrence (fold 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final
from zoneinfo import ZoneInfo

from thoth.config import RoutineSettings

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_UNITS: Final = {"m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Timing:
    """A routine's rule: `at` in `zone`, or `every` seconds."""

    zone: ZoneInfo
    at: time | None
    every_s: int | None

    @classmethod
    def of(cls, routine: RoutineSettings, zone: str) -> Timing:
        if routine.at is not None:
            hours, minutes = routine.at.split(":")
            return cls(ZoneInfo(zone), time(int(hours), int(minutes)), None)
        assert routine.every is not None  # the settings require one of the two
        return cls(ZoneInfo(zone), None, int(routine.every[:-1]) * _UNITS[routine.every[-1]])

    def latest(self, now: datetime) -> datetime:
        """The latest due instant at or before `now` (UTC)."""
        if self.every_s is not None:
            elapsed = int((now - EPOCH).total_seconds())
            return EPOCH + timedelta(seconds=elapsed - elapsed % self.every_s)
        day = now.astimezone(self.zone).date()
        for back in range(0, 3):  # today's, else yesterday's (a skipped time may move it)
            moment = self._on(day - timedelta(days=back))
            if moment <= now:
                return moment
        raise AssertionError("a daily time is due within two days")  # pragma: no cover

    def next(self, now: datetime) -> datetime:
        """The first due instant after `now` (UTC)."""
        if self.every_s is not None:
            return self.latest(now) + timedelta(seconds=self.every_s)
        day = now.astimezone(self.zone).date()
        for ahead in range(0, 3):
            moment = self._on(day + timedelta(days=ahead))
            if moment > now:
                return moment
        raise AssertionError("a daily time is due within two days")  # pragma: no cover

    def _on(self, day: date) -> datetime:
        """`at` on the local `day`, as a UTC instant (normalised through UTC, so a skipped
        local time lands on the instant after the change)."""
        assert self.at is not None
        local = datetime.combine(day, self.at, tzinfo=self.zone)
        return local.astimezone(UTC)
