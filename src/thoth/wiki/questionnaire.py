"""The domain expert's questionnaire (seed 004): a Markdown file, not a tool.

A curator who does not master a topic publishes the page at once with its caveat (the floor
carries the caveat to whoever asks) and writes a questionnaire for the expert with the proposed
wording already in it: a busy expert corrects a text, where a blank sheet gets monosyllables.
The file lives outside every indexed folder, so a rejected wording can never become an answer;
and it says it is a questionnaire (`knowledge: false` and a marker block), so it is not indexed
even if someone moves it into the wiki (thoth.knowledge.ingest).

When it comes back, the expert's declared confidence decides, for the one caveat it is about:
high -> the caveat is removed; medium -> the caveat is replaced by the expert's more precise
wording; low or blank -> the page does not change. With high or medium, the expert's corrections
of the wording are applied too. The change is written to the page in the working tree, for the
curator to review (`git diff`) and commit: Thoth never commits.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import yaml
from markdown_it import MarkdownIt

from thoth.config import Settings, SourceSettings
from thoth.documents.sources import SourceFile, selects
from thoth.errors import Problem, ProblemsError
from thoth.gitrepo import repo_top, require_clean
from thoth.markup import raw_front_matter, split_front_matter
from thoth.wiki.pages import LIST_ITEM, MARKDOWN_SUFFIXES, heading_key, parse_page

MARKER: Final = "thoth-questionnaire"  # the info string of the block that holds the metadata
WORDING: Final = "text wording"
CAVEAT: Final = "text caveat"
FENCE: Final = "~~~~"  # not ``` : a page's own code blocks stay inside the wording block
DEFAULT_DIR: Final = "questionnaires"

Confidence = Literal["high", "medium", "low"]
# The words an expert may write, in the languages the questionnaire is written in.
CONFIDENCE_WORDS: Final[dict[str, Confidence]] = {
    "high": "high", "alta": "high", "alto": "high",
    "medium": "medium", "media": "medium", "medio": "medium",
    "low": "low", "bassa": "low", "basso": "low",
}  # fmt: skip
_CONFIDENCE_LINE: Final = re.compile(
    r"^\s*\**(?:confidence|confidenza|sicurezza)\**\s*:\s*(?P<word>.*?)\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_HEADING: Final = re.compile(r"^(?P<hashes>#{1,6})[ \t]+(?P<text>.*?)[ \t#]*$")

_TEXTS: Final[dict[str, dict[str, str]]] = {
    "it": {
        "title": "Questionario per l'esperto: {title}",
        "intro": (
            "La pagina `{page}` è già pubblicata con l'avvertenza qui sotto. Le chiediamo di "
            "correggere il testo proposto e di dirci quanto è sicuro. Scriva solo dentro i "
            "blocchi delimitati da `~~~~` e sulla riga «Confidenza:»; il resto del file serve a "
            "Thoth per ritrovare la pagina."
        ),
        "wording": "## Il testo proposto",
        "wording_help": "Corregga il testo dentro il blocco; se è giusto, lo lasci com'è.",
        "caveat": "## L'avvertenza con cui la pagina è pubblicata",
        "precise": "## Un'avvertenza più precisa",
        "precise_help": (
            "Se la sua sicurezza è media, riscriva l'avvertenza dentro il blocco perché dica "
            "esattamente che cosa resta incerto."
        ),
        "confidence": "## La sua sicurezza",
        "confidence_help": (
            "Scriva una parola dopo i due punti: **alta** (l'avvertenza può cadere), **media** "
            "(l'avvertenza resta, più precisa), **bassa** (la pagina resta com'è). Vuota vale "
            "bassa."
        ),
        "line": "Confidenza:",
    },
    "en": {
        "title": "Questionnaire for the domain expert: {title}",
        "intro": (
            "The page `{page}` is already published with the caveat below. Please correct the "
            "proposed wording and tell us how sure you are. Write only inside the blocks fenced "
            'by `~~~~` and on the "Confidence:" line; the rest of the file lets Thoth find '
            "the page again."
        ),
        "wording": "## The proposed wording",
        "wording_help": "Correct the text inside the block; leave it as it is if it is right.",
        "caveat": "## The caveat the page is published with",
        "precise": "## A more precise caveat",
        "precise_help": (
            "If your confidence is medium, rewrite the caveat inside the block so that it says "
            "exactly what remains uncertain."
        ),
        "confidence": "## Your confidence",
        "confidence_help": (
            "Write one word after the colon: **high** (the caveat can go), **medium** (the "
            "caveat stays, more precise), **low** (the page stays as it is). Blank counts as "
            "low."
        ),
        "line": "Confidence:",
    },
}


_MARKER_LINE: Final = re.compile(
    r"^[ \t]*(?:~{3,}|`{3,})[ \t]*thoth-questionnaire[ \t]*$", re.MULTILINE
)


def is_questionnaire(text: str) -> bool:
    """Whether a Markdown text is a questionnaire (it holds the block Thoth writes in one):
    never knowledge, wherever it is moved."""
    return _MARKER_LINE.search(text) is not None


class QuestionnaireError(ProblemsError):
    """A questionnaire that cannot be written or applied; each problem carries its code."""

    code = "questionnaire_invalid"


@dataclass(frozen=True)
class WikiPageFile:
    """A wiki page in the working tree, with the source that declares it."""

    path: Path  # absolute
    rel: str  # POSIX, relative to the repository root
    source: SourceSettings
    text: str
    title: str
    caveats: tuple[str, ...]
    front_matter_caveats: tuple[str, ...]
    sha256: str


@dataclass(frozen=True)
class Written:
    file: Path
    page: WikiPageFile
    caveat: str


@dataclass(frozen=True)
class Applied:
    page: Path
    confidence: Confidence
    outcome: Literal["caveat_removed", "caveat_rewritten", "unchanged"]
    wording_changed: bool
    caveat: str
    new_caveat: str | None


# -- the page -----------------------------------------------------------------------------


def read_page(ws_root: Path, settings: Settings, page: str) -> WikiPageFile:
    """The wiki page at `page` (a path relative to the workspace, or absolute), parsed as the
    sync parses it, with the wiki source that declares it."""
    path = (ws_root / page).resolve()
    if not path.is_file() or path.suffix.lower() not in MARKDOWN_SUFFIXES:
        raise _refused(
            page,
            f"{page} is not a Markdown file",
            "questionnaire_page_missing",
            "give the path of a wiki page, e.g. wiki/mercati/giappone.md",
        )
    top = repo_top(path.parent).resolve()
    rel = path.relative_to(top).as_posix()
    for source in settings.sources:
        if source.kind != "wiki" or not selects(source, rel):
            continue
        if repo_top((ws_root / source.repo).resolve()).resolve() != top:
            continue
        data = path.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        parsed = parse_page(SourceFile(source, rel, data, sha, "working-tree"), settings)
        declared = _front_matter_caveats(data.decode("utf-8"))
        return WikiPageFile(
            path, rel, source, data.decode("utf-8"), parsed.title, parsed.caveats, declared, sha
        )
    raise _refused(
        page,
        f'{page} is not declared by a `kind = "wiki"` source',
        "questionnaire_page_missing",
        "a questionnaire is about a curated wiki page: check the wiki source's globs",
    )


def _front_matter_caveats(text: str) -> tuple[str, ...]:
    fields = split_front_matter(text, "page").fields or {}
    value = fields.get("caveats") or []
    items = [value] if isinstance(value, str) else value
    return tuple(" ".join(str(i).split()) for i in items if isinstance(i, str))


# -- writing --------------------------------------------------------------------------------


def write_questionnaire(
    ws_root: Path,
    settings: Settings,
    page: str,
    *,
    caveat: int | None = None,
    out_dir: str = DEFAULT_DIR,
) -> Written:
    """Write the questionnaire of one caveat of `page` under `out_dir` (outside every indexed
    folder); the page itself is not touched: it stays published with its caveat."""
    found = read_page(ws_root, settings, page)
    chosen = _choose(found, caveat, page)
    out = (ws_root / out_dir).resolve()
    name = Path(found.rel).stem + ".questionnaire.md"
    target = out / name
    _outside_sources(ws_root, settings, target)
    language = "it" if settings.language == "it" else "en"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(found, chosen, language), encoding="utf-8")
    return Written(target, found, chosen)


def _choose(found: WikiPageFile, caveat: int | None, page: str) -> str:
    if not found.caveats:
        raise _refused(
            page,
            "the page has no caveat",
            "questionnaire_no_caveat",
            "a questionnaire asks about the caveat a page is published with: add it "
            "(front matter `caveats:` or a caveat section), then write the questionnaire",
        )
    if caveat is None:
        if len(found.caveats) == 1:
            return found.caveats[0]
        listed = "; ".join(f"{i}. {c[:60]}" for i, c in enumerate(found.caveats, 1))
        raise _refused(
            page,
            f"the page has {len(found.caveats)} caveats: {listed}",
            "questionnaire_caveat_ambiguous",
            "choose one with --caveat N",
        )
    if not 1 <= caveat <= len(found.caveats):
        raise _refused(
            page,
            f"caveat {caveat} does not exist (the page has {len(found.caveats)})",
            "questionnaire_caveat_ambiguous",
            f"use --caveat 1 to {len(found.caveats)}",
        )
    return found.caveats[caveat - 1]


def _outside_sources(ws_root: Path, settings: Settings, target: Path) -> None:
    for source in settings.sources:
        top = repo_top((ws_root / source.repo).resolve()).resolve()
        if target.is_relative_to(top) and selects(source, target.relative_to(top).as_posix()):
            raise _refused(
                str(target),
                f"{target} would be read by source {source.name!r}",
                "questionnaire_indexed",
                "write it outside every indexed folder (--out DIR)",
            )


def render(page: WikiPageFile, caveat: str, language: str) -> str:
    t = _TEXTS[language]
    meta = yaml.safe_dump(
        {
            "page": page.rel,
            "source": page.source.name,
            "page_sha256": page.sha256,
            "caveat": caveat,
        },
        allow_unicode=True,
        sort_keys=False,
        width=1000,
    )
    front = yaml.safe_dump(
        {"title": t["title"].format(title=page.title), "knowledge": False},
        allow_unicode=True,
        sort_keys=False,
        width=1000,
    )
    wording = _wording(page, caveat)
    return (
        f"---\n{front}---\n\n# {t['title'].format(title=page.title)}\n\n"
        f"{t['intro'].format(page=page.rel)}\n\n"
        f"{FENCE}{MARKER}\n{meta}{FENCE}\n\n"
        f"{t['wording']}\n\n{t['wording_help']}\n\n{FENCE}{WORDING}\n{wording}\n{FENCE}\n\n"
        f"{t['caveat']}\n\n> {caveat}\n\n"
        f"{t['precise']}\n\n{t['precise_help']}\n\n{FENCE}{CAVEAT}\n{caveat}\n{FENCE}\n\n"
        f"{t['confidence']}\n\n{t['confidence_help']}\n\n{t['line']}\n"
    )


def _wording(page: WikiPageFile, caveat: str) -> str:
    """The page's body without the caveat section that holds `caveat`: what the expert corrects."""
    body = _body(page.text)
    span = _caveat_section(body, page.source, caveat)
    if span is not None:
        body = body[: span[0]] + body[span[1] :]
    return body.strip("\n")


# -- reading it back --------------------------------------------------------------------------


@dataclass(frozen=True)
class Returned:
    meta: dict[str, Any]
    wording: str
    caveat: str
    confidence: Confidence


def parse_returned(text: str, where: str) -> Returned:
    """The expert's answers, or every reason the file cannot be read, each with its code."""
    tokens = MarkdownIt("commonmark").parse(text)
    lines = text.split("\n")
    fences = [t for t in tokens if t.type == "fence" and t.map is not None]
    blocks: dict[str, list[str]] = {}
    for token in fences:
        assert token.map is not None
        last = token.map[1] - 1
        closed = last > token.map[0] and lines[last].strip().startswith(token.markup)
        # An unclosed fence runs to the end of the file: not the block Thoth wrote.
        blocks.setdefault(token.info.strip() if closed else "(unclosed)", []).append(token.content)
    inside = {n for t in fences if t.map is not None for n in range(t.map[0], t.map[1])}
    problems: list[Problem] = []
    for info, what in (
        (MARKER, "the block Thoth wrote"),
        (WORDING, "the wording block"),
        (CAVEAT, "the caveat block"),
    ):
        if len(blocks.get(info, [])) != 1:
            problems.append(
                Problem(
                    where,
                    f"{what} (`{FENCE}{info}`) is missing, repeated or no longer closed",
                    code="questionnaire_invalid",
                    hint="restore it as the questionnaire had it, or write a new questionnaire",
                )
            )
    answers = [
        m.group("word")
        for m in _CONFIDENCE_LINE.finditer(text)
        if text.count("\n", 0, m.start()) not in inside  # a line inside a block is no answer
    ]
    word = ""
    if len(answers) != 1:
        problems.append(
            Problem(
                where,
                f"{len(answers)} confidence lines, expected one",
                code="questionnaire_invalid",
                hint='keep the one "Confidence:" line and write one word after it',
            )
        )
    else:
        word = answers[0].strip().strip("*_").strip().casefold()
        if word and word not in CONFIDENCE_WORDS:
            problems.append(
                Problem(
                    where,
                    f"unknown confidence {answers[0].strip()[:40]!r}",
                    code="questionnaire_confidence_unknown",
                    hint="write high, medium or low (alta, media, bassa)",
                )
            )
    meta: dict[str, Any] = {}
    if len(blocks.get(MARKER, [])) == 1:
        try:
            loaded = yaml.safe_load(blocks[MARKER][0])
        except yaml.YAMLError:
            loaded = None
        if not isinstance(loaded, dict) or not {"page", "page_sha256", "caveat"} <= set(loaded):
            problems.append(
                Problem(
                    where,
                    "the block Thoth wrote was edited",
                    code="questionnaire_invalid",
                    hint="restore it, or write a new questionnaire",
                )
            )
        else:
            meta = loaded
    if problems:
        raise QuestionnaireError(f"questionnaire {where} cannot be applied", problems)
    return Returned(
        meta,
        blocks[WORDING][0].strip("\n"),
        " ".join(blocks[CAVEAT][0].split()),
        CONFIDENCE_WORDS.get(word, "low"),
    )


def apply_questionnaire(ws_root: Path, settings: Settings, file: Path) -> Applied:
    """Apply a returned questionnaire to its page in the working tree (see the module)."""
    where = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _refused(
            where, "not UTF-8 text", "questionnaire_invalid", "save it as UTF-8"
        ) from exc
    returned = parse_returned(text, where)
    meta = returned.meta
    page = read_page(ws_root, settings, _workspace_path(ws_root, str(meta["page"]), file))
    if page.sha256 != meta["page_sha256"]:
        raise _refused(
            where,
            f"the page {page.rel} changed since the questionnaire was written",
            "questionnaire_stale",
            "write a new questionnaire for the page as it is now",
        )
    caveat = " ".join(str(meta["caveat"]).split())
    if caveat not in page.caveats:
        raise _refused(
            where,
            f"the page {page.rel} no longer has the caveat",
            "questionnaire_stale",
            "write a new questionnaire for the page as it is now",
        )
    if returned.confidence == "low":
        return Applied(page.path, "low", "unchanged", False, caveat, None)
    if returned.confidence == "medium" and (not returned.caveat or returned.caveat == caveat):
        raise _refused(
            where,
            "confidence medium, but the caveat block was not rewritten",
            "questionnaire_caveat_unchanged",
            "rewrite the caveat more precisely, or answer high or low",
        )
    require_clean(
        page.path.parent,
        page.path.name,
        why="the questionnaire's change must be reviewable on its own",
    )
    new_caveat = returned.caveat if returned.confidence == "medium" else None
    updated, wording_changed = _rewrite(page, caveat, new_caveat, returned.wording, where)
    _check_page(page, updated, settings)
    page.path.write_text(updated, encoding="utf-8")
    outcome: Literal["caveat_removed", "caveat_rewritten"] = (
        "caveat_rewritten" if new_caveat else "caveat_removed"
    )
    return Applied(page.path, returned.confidence, outcome, wording_changed, caveat, new_caveat)


def _check_page(page: WikiPageFile, updated: str, settings: Settings) -> None:
    """The rewritten page must still be a valid page, or nothing is written."""
    data = updated.encode("utf-8")
    sha = hashlib.sha256(data).hexdigest()
    parse_page(SourceFile(page.source, page.rel, data, sha, "working-tree"), settings)


def _workspace_path(ws_root: Path, rel: str, file: Path) -> str:
    """The page's path (relative to its repository, as recorded) from the workspace."""
    top = repo_top(ws_root.resolve()).resolve()
    candidate = (top / rel).resolve()
    if not candidate.is_relative_to(top):
        raise _refused(
            str(file),
            f"the page path {rel!r} leaves the repository",
            "questionnaire_invalid",
            "restore the block Thoth wrote",
        )
    return str(candidate)


# -- editing the page ---------------------------------------------------------------------------


def _body(text: str) -> str:
    raw = raw_front_matter(text)
    return text if raw is None else raw.body


def _rewrite(
    page: WikiPageFile, caveat: str, new_caveat: str | None, wording: str, where: str
) -> tuple[str, bool]:
    """The page's text with the caveat removed (new_caveat None) or replaced, and the body's
    wording replaced by the expert's when it changed."""
    text = page.text
    head = text[: len(text) - len(_body(text))]
    body = _body(text)
    if caveat in page.front_matter_caveats:
        head = _edit_front_matter(head, caveat, new_caveat, where)
        span = None
    else:
        span = _caveat_section(body, page.source, caveat)
        if span is None:
            raise _refused(
                where,
                "the caveat was not found in the page's text",
                "questionnaire_unsupported_caveat",
                "edit the page by hand: the caveat's form is not one Thoth rewrites",
            )
    section = body[span[0] : span[1]] if span else ""
    rest = body[: span[0]] + body[span[1] :] if span else body
    wording_changed = wording.strip("\n") != rest.strip("\n")
    if span is not None:
        section = _edit_section(section, caveat, new_caveat, where)
    if wording_changed:
        new_body = (
            wording.strip("\n")
            + "\n"
            + (("\n" + section.strip("\n") + "\n") if section.strip() else "")
        )
    elif span is not None:
        new_body = body[: span[0]] + section + body[span[1] :]
    else:
        new_body = body
    return head + new_body, wording_changed


def _edit_front_matter(head: str, caveat: str, new_caveat: str | None, where: str) -> str:
    lines = head.split("\n")
    for i, line in enumerate(lines):
        stripped = line.strip()
        candidates = []
        if stripped.startswith("- "):
            candidates.append(stripped[2:])
        if stripped.startswith("caveats:"):
            candidates.append(stripped[len("caveats:") :].strip())
        for raw in candidates:
            try:
                value = yaml.safe_load(raw) if raw else None
            except yaml.YAMLError:
                continue
            if isinstance(value, str) and " ".join(value.split()) == caveat:
                indent = line[: len(line) - len(line.lstrip())]
                if new_caveat is None:
                    if stripped.startswith("caveats:"):
                        lines[i] = indent + "caveats: []"
                    else:
                        del lines[i]
                else:
                    dumped = yaml.safe_dump(new_caveat, allow_unicode=True, width=10_000)
                    scalar = dumped.strip().removesuffix("...").strip()
                    lines[i] = (
                        indent + ("caveats: " if stripped.startswith("caveats:") else "- ") + scalar
                    )
                return "\n".join(lines)
    raise _refused(
        where,
        "the caveat is not one line of the front matter",
        "questionnaire_unsupported_caveat",
        "edit the page by hand: a caveat over several YAML lines is not rewritten",
    )


def _caveat_section(body: str, source: SourceSettings, caveat: str) -> tuple[int, int] | None:
    """(start, end) offsets in `body` of the caveat section that holds `caveat`."""
    wanted = {heading_key(h) for h in source.caveat_headings}
    lines = body.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    i = 0
    while i < len(lines):
        match = _HEADING.match(lines[i])
        if not match or heading_key(match.group("text")) not in wanted:
            i += 1
            continue
        level = len(match.group("hashes"))
        j = i + 1
        while j < len(lines):
            other = _HEADING.match(lines[j])
            if other and len(other.group("hashes")) <= level:
                break
            j += 1
        section = "\n".join(lines[i:j])
        if any(unit == caveat for _, _, unit in _units(section.split("\n")[1:])):
            return offsets[i], min(offsets[j], len(body))
        i = j
    return None


def _units(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line, end line, normalised text) of each list item or paragraph of a section."""
    units: list[tuple[int, int, str]] = []
    start: int | None = None
    for k, line in enumerate([*lines, ""]):
        item = LIST_ITEM.match(line)
        if start is not None and (not line.strip() or item):
            units.append((start, k, _normalised(lines[start:k])))
            start = None
        if line.strip() and start is None:
            start = k
    return units


def _normalised(lines: list[str]) -> str:
    first = LIST_ITEM.match(lines[0])
    if first:
        lines = [first.group("text"), *lines[1:]]
    return " ".join(" ".join(lines).split())


def _edit_section(section: str, caveat: str, new_caveat: str | None, where: str) -> str:
    lines = section.split("\n")
    heading, content = lines[0], lines[1:]
    for start, end, unit in _units(content):
        if unit != caveat:
            continue
        item = LIST_ITEM.match(content[start])
        if new_caveat is None:
            del content[start:end]
            if (
                start < len(content)
                and not content[start].strip()
                and (start == 0 or not content[start - 1].strip())
            ):
                del content[start]
        else:
            prefix = f"{item.group('indent')}{item.group('bullet')} " if item else ""
            content[start:end] = [prefix + new_caveat]
        if not any(line.strip() for line in content):
            return ""  # the section held only this caveat: it goes with it
        return "\n".join([heading, *content])
    raise _refused(
        where,
        "the caveat was not found in its section",
        "questionnaire_unsupported_caveat",
        "edit the page by hand",
    )


def _refused(where: str, message: str, code: str, hint: str) -> QuestionnaireError:
    return QuestionnaireError(message, [Problem(where, message, hint=hint, code=code)], code=code)


__all__ = [
    "Applied",
    "QuestionnaireError",
    "Returned",
    "Written",
    "apply_questionnaire",
    "is_questionnaire",
    "parse_returned",
    "read_page",
    "render",
    "write_questionnaire",
]
