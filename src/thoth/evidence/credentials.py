"""Credential detection: nothing that looks like a secret may enter the corpus."""

from __future__ import annotations

import re

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "password assignment",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|passwort|parola[ _]chiave)\b\s*[:=]\s*['\"]?[^\s'\"]{3,}"
        ),
    ),
    (
        "secret or token assignment",
        re.compile(
            r"(?i)\b(?:api[_-]?key|apikey|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token|"
            r"token|client[_-]?secret)\b\s*[:=]\s*['\"]?[A-Za-z0-9_\-./+=]{8,}"
        ),
    ),
    (
        "connection string with a password",
        re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s@/]+@[^\s]+"),
    ),
    ("bearer token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9_\-.=]{16,}")),
    ("private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("AWS access key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("OpenAI/Anthropic-style API key", re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_\-]{20,}")),
    ("GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
)


def find_credentials(text: str) -> list[tuple[int, str]]:
    """(line number, kind) for every line that looks like it carries a secret."""
    hits: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for kind, pattern in _PATTERNS:
            if pattern.search(line):
                hits.append((number, kind))
                break
    return hits
