"""Synonyms of enumeration values from the Evidence glossary: a glossary unit whose term (or
one of its synonyms) is a value lends the value its other words ("DH" for "day hospital").
Read from the activated revision, like the catalog."""

from __future__ import annotations

import subprocess
from pathlib import Path

from thoth.evidence.document import parse_unit
from thoth.evidence.model import GlossaryUnit

GLOSSARY_DIR = "evidence/curated/glossary"


def _git(root: Path, *args: str) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
    )
    return done.stdout if done.returncode == 0 else None


def glossary_synonyms(root: Path, revision: str) -> dict[str, list[str]]:
    """Folded word -> the other words of its glossary unit. A unit that cannot be read is
    skipped: synonyms only widen what the question may say, they never decide a number."""
    listed = _git(root, "ls-tree", "--name-only", f"{revision}:{GLOSSARY_DIR}") or ""
    words: dict[str, list[str]] = {}
    for name in listed.splitlines():
        text = _git(root, "show", f"{revision}:{GLOSSARY_DIR}/{name}")
        if text is None:
            continue
        unit = parse_unit(text, f"{GLOSSARY_DIR}/{name}")
        if not isinstance(unit, GlossaryUnit):
            continue
        group = [unit.glossary.term, *unit.glossary.synonyms]
        for word in group:
            others = [w for w in group if w != word]
            words.setdefault(" ".join(word.casefold().split()), []).extend(others)
    return words
