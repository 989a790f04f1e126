"""Quarters asked and quarters covered: "Q2 2023" in a question, "three months ended July 1,
2023" in a filing.

A filing never writes "Q2": it writes the end of the period it reports ("For the quarterly
period ended July 1, 2023", "Three Months Ended | July 1, 2023 | June 25, 2022"). So the
relevance check cannot look for "Q2" among a document's words: it reads, at sync, the quarters
a document covers (`covered_quarters`, stored on its fragments as `periods`), and compares them
with the quarters a question asks (`asked_quarters`) or states in the filing's own words
(`stated_quarters`: "three months ended July 1, 2023", whose words a filing of April holds too).

A period end becomes the calendar quarter of the middle of the three months it closes: July 1,
2023 (a 52/53-week year: Apple) and July 30, 2023 (NVIDIA, whose fiscal year ends in January)
both close three months centred in May–June: Q2 2023, as the filings' own readers name them;
September 30, 2023 is Q3 2023. Six and nine months ended (year to date) are not quarters: a
half year reports no figure of the quarter it spans, so it covers none. Fiscal quarter names
("Q2 fiscal 2024") are not mapped: a question naming a fiscal year is read as calendar
quarters, and misses visibly (`nothing_found`) rather than guessing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import date, timedelta
from typing import Final

Quarter = tuple[int, int]  # (year, quarter 1-4)

_MONTHS: Final = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan", "gennaio"),
            ("february", "feb", "febbraio"),
            ("march", "mar", "marzo"),
            ("april", "apr", "aprile"),
            ("may", "maggio"),
            ("june", "jun", "giugno"),
            ("july", "jul", "luglio"),
            ("august", "aug", "agosto"),
            ("september", "sep", "sept", "settembre"),
            ("october", "oct", "ottobre"),
            ("november", "nov", "novembre"),
            ("december", "dec", "dicembre"),
        ),
        start=1,
    )
    for name in names
}
_MONTH: Final = "|".join(sorted(_MONTHS, key=len, reverse=True))
# A year or a month's name, in English or Italian: what dates a column header.
_DATED: Final = re.compile(rf"\b(?:(?:19|20)\d\d|{_MONTH})\b", re.IGNORECASE)
# "July 1, 2023" / "1 luglio 2023" / "1° luglio 2023" / "30 giugno 2023"
_DATE: Final = re.compile(
    rf"(?:(?P<m1>{_MONTH})\.?\s+(?P<d1>\d{{1,2}}),?\s+(?P<y1>(?:19|20)\d\d))"
    rf"|(?:(?P<d2>\d{{1,2}})[°º]?\s+(?P<m2>{_MONTH})\s+(?P<y2>(?:19|20)\d\d))",
    re.IGNORECASE,
)
# What opens the end of a three-month period.
_SPANS: Final = (
    re.compile(r"\b(?:three|3)[-\s]+months?\s+ended\b", re.I),
    re.compile(r"\bquarter(?:ly\s+period)?\s+end(?:ed|ing)\b", re.I),
    re.compile(r"\b(?:tre\s+mesi|trimestre)\s+(?:chius[oi]|terminat[oi])\s+(?:al|il)\b", re.I),
)
# What opens the end of a longer period within a year: read in questions only (below).
_YEAR_TO_DATE: Final = (
    re.compile(r"\b(?:six|nine|6|9)[-\s]+months?\s+ended\b", re.I),
    re.compile(r"\b(?:sei|nove)\s+mesi\s+(?:chius[oi]|terminat[oi])\s+(?:al|il)\b", re.I),
    re.compile(r"\bsemestre\s+(?:chius[oi]|terminat[oi])\s+(?:al|il)\b", re.I),
)
# Six and nine months ended (year to date) are not read in documents: a half year that spans
# a quarter reports no figure *of* that quarter ("six months ended March 26, 2022" is no Q4 2021).
# The dates an opening closes: the ones right after it, joined only by separators ("Ended |
# July 1, 2023 | June 25, 2022", "ended July 1, 2023 and June 25, 2022"). A date after other
# words ("Six Months Ended ...", "as of December 25, 2021") belongs to something else.
_JOIN: Final = re.compile(r"(?:[\s|:;,]|\band\b|\be\b)*", re.IGNORECASE)
_MAX_DATES: Final = 4

_ORDINALS: Final = {
    "first": 1,
    "1st": 1,
    "primo": 1,
    "second": 2,
    "2nd": 2,
    "secondo": 2,
    "third": 3,
    "3rd": 3,
    "terzo": 3,
    "fourth": 4,
    "4th": 4,
    "quarto": 4,
    # Italian writes ordinals with a degree sign or a masculine ordinal indicator: "3° trimestre"
    **{f"{n}{sign}": n for n in range(1, 5) for sign in ("°", "º")},
}
_ORDINAL: Final = "|".join(_ORDINALS)
_YEAR: Final = r"(?:19|20)\d\d"
_ASKED: Final = (
    # Q2 2023, Q2'23, Q2-2023, Q2 FY2023 (read as calendar), 2023 Q2, Q2
    re.compile(
        rf"\bQ(?P<q>[1-4])(?:\s*(?:FY\s*)?['’-]?\s*(?P<y>{_YEAR}|\d\d)\b)?"
        rf"|\b(?P<y2>{_YEAR})\s*[-/]?\s*Q(?P<q2>[1-4])\b",
        re.I,
    ),
    # second quarter (of) (fiscal) 2023 / secondo trimestre (del) 2023
    re.compile(
        rf"\b(?P<o>{_ORDINAL})\s+(?:fiscal\s+)?(?:quarter|trimestre)"
        rf"(?:\s+(?:of|del|dell'|di)?\s*(?:fiscal\s+)?(?:year\s+)?(?P<oy>{_YEAR}))?",
        re.I,
    ),
)


def _when(m: re.Match[str]) -> date | None:
    month = _MONTHS[(m["m1"] or m["m2"]).lower()]
    day = int(m["d1"] or m["d2"])
    year = int(m["y1"] or m["y2"])
    try:
        return date(year, month, day)
    except ValueError:
        return None


def dated(text: str) -> bool:
    """Whether `text` names a year or a month ("December 25,", "2021", "30 giugno")."""
    return _DATED.search(text) is not None


def quarter_of(end: date, months: int = 3) -> list[Quarter]:
    """The calendar quarters a period of `months` ending on `end` covers, each by the middle
    of one of its three-month parts (a 52/53-week quarter ending July 1 is Q2)."""
    out: list[Quarter] = []
    for k in range(months // 3):
        middle = end - timedelta(days=45 + 91 * k)
        quarter = (middle.year, (middle.month - 1) // 3 + 1)
        if quarter not in out:
            out.append(quarter)
    return out


def _period_ends(
    text: str, openings: Iterable[re.Pattern[str]]
) -> Iterator[tuple[re.Match[str], re.Match[str], date]]:
    """Each (opening, date match, date) of the period ends that `openings` introduce: the
    dates right after an opening, joined only by separators."""
    for pattern in openings:
        for opening in pattern.finditer(text):
            at = opening.end()
            for _ in range(_MAX_DATES):
                joined = _JOIN.match(text, at)  # always matches, maybe empty
                m = _DATE.match(text, joined.end() if joined else at)
                if m is None:
                    break
                end = _when(m)
                if end is not None:
                    yield opening, m, end
                at = m.end()


def covered_quarters(text: str) -> set[Quarter]:
    """The quarters a text reports on: every three-month period end it states ("three months
    ended July 1, 2023 and June 25, 2022", "quarterly period ended", "trimestre chiuso al 30
    giugno 2023"), read as calendar quarters."""
    return {q for _, _, end in _period_ends(text, _SPANS) for q in quarter_of(end)}


def stated_quarters(question: str) -> list[tuple[str, Quarter]]:
    """The period ends a question states in a filing's own words, each with the calendar
    quarter it closes: ("three months ended July 1, 2023", (2023, 2)). Year to date ("nine
    months ended September 30, 2023") asks about the quarter its period closes, which the same
    filing reports. An exact date is never read through a fiscal calendar, unlike "Q2 2023"."""
    out: list[tuple[str, Quarter]] = []
    for opening, m, end in _period_ends(question, (*_SPANS, *_YEAR_TO_DATE)):
        phrase = f"{opening[0]} {m[0]}"
        out.append((" ".join(phrase.split()), quarter_of(end)[0]))
    return list(dict.fromkeys(out))


def asked_quarters(question: str) -> list[tuple[int | None, int]]:
    """The quarters a question names: (year or None, quarter). "Q2 2023", "2023 Q2", "Q2'23",
    "second quarter of 2023", "terzo trimestre 2023"; a quarter without a year takes the
    question's only year when it names exactly one."""
    years = {int(y) for y in re.findall(rf"\b({_YEAR})\b", question)}
    only = next(iter(years)) if len(years) == 1 else None
    out: list[tuple[int | None, int]] = []
    for m in _ASKED[0].finditer(question):
        q = int(m["q"] or m["q2"])
        raw = m["y"] or m["y2"]
        year = (2000 + int(raw) if len(raw) == 2 else int(raw)) if raw else only
        out.append((year, q))
    for m in _ASKED[1].finditer(question):
        q = _ORDINALS[m["o"].lower()]
        out.append((int(m["oy"]) if m["oy"] else only, q))
    return list(dict.fromkeys(out))


# The words that name a period without a date: "quarter", "trimestre", "nine months",
# "year to date" (read with the openings, the dates and the asked quarters above).
_PERIOD_WORDS: Final = re.compile(
    r"\b(?:(?:three|six|nine|twelve|tre|sei|nove|dodici)[-\s]+(?:months?|mesi)"
    r"(?:\s+(?:ended|ending|chius[oi]|terminat[oi]))?"
    r"|quarter(?:ly|s)?|trimestr(?:e|i|ale|ali)|semestr(?:e|i|ale|ali)"
    r"|year[-\s]to[-\s]date|da\s+inizio\s+anno|fiscal\s+(?:year|quarter))\b",
    re.IGNORECASE,
)


def without_periods(text: str) -> str:
    """`text` with its period phrases (`period_phrases`) blanked out."""
    for phrase in period_phrases(text):
        text = text.replace(phrase, " ", 1)
    return text


def period_phrases(text: str) -> list[str]:
    """The phrases of a text that name a period: "Q3 2023", "third quarter", "three months
    ended", "September 30, 2023", "nove mesi", "year to date". They say when, never what."""
    patterns = (*_ASKED, *_SPANS, *_YEAR_TO_DATE, _DATE, _PERIOD_WORDS)
    spans = sorted((m.start(), -m.end()) for pattern in patterns for m in pattern.finditer(text))
    phrases: list[str] = []
    reached = 0
    for start, end in spans:  # left to right, the longest of those starting together
        if start >= reached:
            phrases.append(text[start:-end])
            reached = -end
    return phrases


def label(quarter: Quarter) -> str:
    """How a quarter is stored on a fragment: "2023-Q2"."""
    return f"{quarter[0]}-Q{quarter[1]}"


def parse_label(text: str) -> Quarter | None:
    m = re.fullmatch(r"(\d{4})-Q([1-4])", text)
    return (int(m[1]), int(m[2])) if m else None


def is_quarter_term(word: str) -> bool:
    """A question's token that names a quarter ("Q2", "2023Q2"): checked against the
    documents' periods, never against their words (a filing never writes "Q2")."""
    return bool(re.fullmatch(r"Q[1-4]|(?:19|20)\d\dQ[1-4]", word, re.IGNORECASE))


def fiscal_quarter(year: int, quarter: int, year_end_month: int) -> Quarter:
    """The calendar quarter of fiscal quarter `quarter` of fiscal year `year`, for a fiscal
    year ending in month `year_end_month` and named by the calendar year it ends in (Apple's
    fiscal 2023 ends in September 2023: its Q2 is January-March 2023, calendar Q1)."""
    start = (year - 1) * 12 + year_end_month  # months since year 0, 0-based: the first month
    middle = start + 3 * (quarter - 1) + 1
    return (middle // 12, middle % 12 // 3 + 1)


def covers(
    asked: list[tuple[int | None, int]],
    periods: set[Quarter],
    fiscal_year_ends: Iterable[int] = (),
) -> bool:
    """Whether documents covering `periods` report on a quarter asked: as a calendar quarter,
    or as a fiscal quarter of an entity whose fiscal year ends in one of `fiscal_year_ends`
    (a quarter without a year: that quarter of any year)."""
    ends = sorted({e for e in fiscal_year_ends if e != 12})
    for year, quarter in asked:
        if year is not None:
            wanted = {(year, quarter), *(fiscal_quarter(year, quarter, e) for e in ends)}
            if wanted & periods:
                return True
            continue
        numbers = {quarter, *(fiscal_quarter(2000, quarter, e)[1] for e in ends)}
        if any(p[1] in numbers for p in periods):
            return True
    return False


def asks_a_quarter(question: str) -> bool:
    """Whether a question asks about a quarter: named ("Q3 2024", "terzo trimestre") or by the
    end of its three months ("three months ended July 1, 2023")."""
    return bool(asked_quarters(question) or stated_quarters(question))


# A quarter named without its number ("in the quarter", "nel trimestre").
_SOME_QUARTER: Final = re.compile(r"\b(?:quarter(?:ly|s)?|trimestr(?:e|i|ale|ali))\b", re.I)
# A span longer than a quarter: a half year, nine months, the year to date.
_LONGER: Final = re.compile(
    r"\b(?:six|nine|twelve|sei|nove|dodici)[-\s]+(?:months?|mesi)"
    r"|\bsemestr(?:e|i|ale|ali)\b|\byear[-\s]to[-\s]date\b|\bYTD\b|\bda\s+inizio\s+anno\b",
    re.IGNORECASE,
)

# A month of a year ("in July 2023"): a time inside one quarter, not a year.
_MONTH_YEAR: Final = re.compile(rf"\b(?:{_MONTH})\.?\s+{_YEAR}\b", re.IGNORECASE)


def span_without_quarter(text: str) -> str | None:
    """The period a text states when it states one but no quarter: a span longer than three
    months as written ("nine months", "semestre"), else its years ("Nel 2024 il tasso ...
    5,9%" -> "2024"; "as of the end of 2022, ... in 2023" -> "2022, 2023"). None when it names
    a quarter, in any form, a date or a month (a balance at a quarter's end is that quarter's),
    and when it states no period: a figure that says nothing of its period is not said to be
    another's."""
    if asked_quarters(text) or covered_quarters(text) or _SOME_QUARTER.search(text):
        return None
    if _DATE.search(text) or _MONTH_YEAR.search(text):
        return None
    longer = _LONGER.search(text)
    if longer:
        return longer[0]
    years = list(dict.fromkeys(re.findall(rf"\b{_YEAR}\b", text)))
    return ", ".join(years) if years else None
