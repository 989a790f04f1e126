"""The one mechanical normalisation: applied to sources before restructuring and to every
supporting excerpt before it is looked up in its source. It never interprets meaning."""

from __future__ import annotations

import re
import unicodedata

_INVISIBLE = dict.fromkeys(map(ord, "\ufeff\u200b\u200c\u200d\u2060"), None)
# Unicode spaces other than the plain one (NBSP, thin spaces, ideographic space ...).
_ODD_SPACES = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_INNER_RUN = re.compile(r"(?<=\S) {2,}")
_BULLET = re.compile(r"^( *)[*+] (?=\S)")


def normalize_text(text: str) -> str:
    """NFC, `\\n` line ends, no invisible characters, tabs as four spaces, one space between
    words (leading indentation kept), no trailing spaces, `-` as the only bullet, at most one
    blank line in a row, no outer blank space. Idempotent by construction."""
    # Invisible characters go first: removing one can bring a letter and its accent together.
    text = unicodedata.normalize("NFC", text.translate(_INVISIBLE))
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")
    text = _ODD_SPACES.sub(" ", text)
    out: list[str] = []
    for raw in text.split("\n"):
        line = _BULLET.sub(r"\1- ", _INNER_RUN.sub(" ", raw.rstrip()))
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    return unicodedata.normalize("NFC", "\n".join(out).strip())


def excerpt_in_source(excerpt: str, normalized_source: str) -> bool:
    """True when the excerpt, normalised the same way, occurs verbatim in the source."""
    needle = normalize_text(excerpt)
    return bool(needle) and needle in normalized_source
