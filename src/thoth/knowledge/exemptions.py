"""Reviewed exemptions from the secret refusal: `secret-exemptions.yaml` at the workspace root.

A finding of the secret scanner that a curator has judged not to be a secret (a product
called "Game Pass" in a table, a sample key in a manual) is exempted by one committed entry:
the file (`source:path`), the finding's kind and the digest of the text it was made on
(`thoth.secrets.secret_digest`) — never the text itself — with who reviewed it and why. The
sync refuses every other finding and lists the exempted ones in its report; an entry that
matches nothing is reported too, so a stale exemption is seen and removed.

The file must be committed as it is: an exemption written and not committed is refused, so
every exemption in force is in the workspace's history (who added it, when, reviewed by whom).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from thoth.errors import ProblemsError
from thoth.gitrepo import require_clean
from thoth.reviewed_yaml import read_list

EXEMPTIONS_FILE = "secret-exemptions.yaml"
_DIGEST = re.compile(r"^[0-9a-f]{16}$")


class SecretExemption(BaseModel):
    """One reviewed entry: a finding that is not a secret."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str = Field(min_length=3, pattern=r"^[^:\s][^:]*:.+$")  # doc id, e.g. docs:a/b.pdf
    kind: str = Field(min_length=3)  # the finding's kind, as the refusal names it
    digest: str = Field(pattern=_DIGEST.pattern)
    reviewed_by: str = Field(min_length=2)
    reason: str = Field(min_length=10)


@dataclass(frozen=True)
class SecretExemptions:
    entries: tuple[SecretExemption, ...] = ()

    def match(self, doc_id: str, kind: str, digest: str) -> SecretExemption | None:
        for entry in self.entries:
            if (entry.file, entry.kind, entry.digest) == (doc_id, kind, digest):
                return entry
        return None


NO_EXEMPTIONS = SecretExemptions()


def entry_yaml(doc_id: str, kind: str, digest: str) -> str:
    """The entry a curator adds to exempt one finding, as one YAML line (flow style)."""
    return (
        f"- {{file: {_quote(doc_id)}, kind: {_quote(kind)}, digest: '{digest}', "
        'reviewed_by: "<your name>", reason: "<why this is not a secret>"}'
    )


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def load_exemptions(root: Path) -> SecretExemptions:
    """The workspace's reviewed exemptions; none when the file does not exist. A file that does
    not parse, an invalid entry or a file not committed as it is raises, naming the entry."""
    path = root / EXEMPTIONS_FILE
    if not path.is_file():
        return NO_EXEMPTIONS
    entries, _data, problems = read_list(
        root,
        EXEMPTIONS_FILE,
        SecretExemption,
        setting="secret_exemptions",
        what="secret exemptions",
        example=entry_yaml("docs:docs/report.pdf", "password in a table cell", "0" * 16),
    )
    if problems:
        raise ProblemsError(
            f"{EXEMPTIONS_FILE}: {len(problems)} invalid entr(ies); nothing was indexed -> fix "
            "them (docs/secrets.md, 'Exempting a finding')",
            problems,
        )
    _check_committed(root)
    return SecretExemptions(tuple(entries))


def _check_committed(root: Path) -> None:
    """Only a reviewed, committed exemption counts: the file must equal its committed version."""
    require_clean(
        root,
        EXEMPTIONS_FILE,
        why="an exemption counts only once it is reviewed and committed, so nothing was indexed",
    )
